"""Part 1 widgets on tokens: ``tokenizer``, ``sampling`` and ``autoregression``.

* ``tokenizer``: live byte-level BPE with SmolLM2's real vocabulary and merges
  (:mod:`descent.tokenizer`), token chips classed by :func:`token_class`.
* ``sampling``: temperature, top-k and top-p (:func:`descent.sampling.distribution`) applied to the
  real top-50 next-token logits of a prompt (from ``traces.json``, see :mod:`descent.widgets.part0`,
  or from the model in the reader's browser), with a seeded draw (:func:`descent.sampling.sample`).
* ``autoregression``: the real continuation step by step (greedy, or with the model loaded in the
  browser drawn with the reader's temperature, top-k, top-p and seed), with the tokens the layers
  must process at each step with and without a KV cache (:func:`loop_work`).

Sources: Sennrich et al. 2016, "Neural Machine Translation of Rare Words with Subword Units",
sec. 3.2 (BPE); Holtzman et al. 2020, sec. 3.1 (top-p); Fan et al. 2018, sec. 5.4 (top-k); Pope
et al. 2022, "Efficiently Scaling Transformer Inference", sec. 2 (the KV cache turns each decode
step into the work of one new token).

Core rule: standard library and core ``descent`` modules only.
"""

from __future__ import annotations

from descent import engine, recorded, sampling, tokenizer
from descent import params as P
from descent.recorded import trace_data
from descent.units import format_int, plural
from descent.widgets import FieldError, Input, Look, widget
from descent.widgets import views as v
from descent.widgets.part0 import (
    _step_views,
    loop_record,
    model_text,
    pct,
    prompt_chips,
    prompt_inputs,
    prompt_record,
    show,
    source_note,
    step_input,
)

__all__ = [
    "DEFAULT_TEXT",
    "TEXT_MAX_CHARS",
    "TOKEN_CLASSES",
    "autoregression",
    "classify",
    "loop_work",
    "sampling_widget",
    "token_class",
    "tokenizer_widget",
]

#: The tokenizer widget's default text: common words, a long rare word, a number and an emoji.
DEFAULT_TEXT = "Tokenizers split unbelievably rare words, the year 2024, and emoji like 🙂 differently."
#: Longest text the tokenizer widget accepts, in characters (keeps one worker call quick).
TEXT_MAX_CHARS = 2000
#: The underline colour of each token class in light and dark themes (descent.css), for the caption.
CLASS_COLOURS = {
    "word": "blue",
    "subword": "orange",
    "punctuation": "purple",
    "space": "grey",
    "digit": "green",
    "special": "dashed",
}
#: Token classes and what they mean (the chip's class is ``tok-<name>``).
TOKEN_CLASSES = {
    "word": "a whole word",
    "subword": "part of a word",
    "punctuation": "punctuation or a symbol",
    "space": "whitespace only",
    "digit": "a digit",
    "special": "a control token",
}
#: Candidate rows the sampling widget lists (of the 50 in the file).
SAMPLING_ROWS = 20
#: Largest seed the sampling widget accepts.
MAX_SEED = 1_000_000
#: Candidates the recorded trace keeps per step, so the most top-k can keep.
SAMPLING_TOP = 50

#: The sampling settings of the sampling and autoregression widgets (top-k up to the 50 candidates
#: the traces keep; the seed up to a million, enough to try and short to type).
TEMPERATURE = P.TEMPERATURE.but(max=2.0, help="0 always takes the top token; above 1 flattens the odds.")
TOP_K = P.TOP_K.but(max=SAMPLING_TOP, unit="tokens", help="Keep only this many of the most likely tokens.")
TOP_P = P.TOP_P.but(min=0.05, step=0.05, help="Keep the fewest tokens whose probabilities add up to this.")
SEED = P.SEED.but(default=1, max=MAX_SEED, help="The same seed and settings always draw the same token.")
#: What the autoregression widget says when asked to draw a reply without the model.
NOT_RECORDED_SAMPLED = (
    "The site recorded only the greedy reply (temperature 0) when it was built: choose 0, or load the "
    "model above to draw a reply at this temperature in your browser"
)

#: The tokenizer's text.
TEXT = P.declare(P.Param(
    "text", "Text", "text", DEFAULT_TEXT, key="tokenizer_text", max_length=TEXT_MAX_CHARS,
    help="Spaces are shown as ␣ and line breaks as ↵ inside the chips.",
))


def token_class(text: str, is_special: bool, prev: str, nxt: str) -> str:
    """The class of one token for the chips, from its text and its neighbours' texts.

    ``special`` for control tokens; ``space`` if only whitespace; ``digit`` if digits (after an
    optional leading space); ``punctuation`` if no letter or digit; otherwise ``word`` when it
    starts a word (a leading space, the start of the text, or after a non-letter) and the next
    token does not continue it (next starts with a letter), else ``subword``. A token holding part
    of a multi-byte character (shown as U+FFFD) counts as ``subword``.
    """
    if is_special:
        return "special"
    core = text.strip()
    if not core:
        return "space"
    if core.isdigit():
        return "digit"
    if "\ufffd" in text:
        return "subword"
    if not any(ch.isalnum() for ch in core):
        return "punctuation"
    starts = text[0].isspace() or not prev or not prev[-1].isalpha()
    continued = bool(nxt) and nxt[0].isalpha()
    return "word" if starts and not continued else "subword"


def classify(text: str) -> list[tuple[str, int, str]]:
    """``[(token text, id, class)]`` for ``text`` with SmolLM2's tokenizer (see :func:`token_class`)."""
    tok = tokenizer.smollm2()
    pieces = tok.tokens_of(text)
    out = []
    for k, (t, i) in enumerate(pieces):
        prev = pieces[k - 1][0] if k else ""
        nxt = pieces[k + 1][0] if k + 1 < len(pieces) else ""
        out.append((t, i, token_class(t, i in tok.special.values(), prev, nxt)))
    return out


@widget(
    "tokenizer",
    title="Tokenizer",
    description="Type anything: it is split with SmolLM2's real vocabulary and merge rules, the same "
    "ones the model was trained with. Each chip is one token, with its id underneath.",
    inputs=[
        Input(TEXT, "text", cut=True),
    ],
    tries=[
        ("Type a long, rare word in a sentence.", "It breaks into several pieces, while common words are one token each.",
         {"text": "The cat saw an antidisestablishmentarianism poster."}),
        ("Type a number such as 1234567.", "Every digit is its own token: this model never merges digits.",
         {"text": "1234567"}),
        ("Type a word with and without a space before it, and with a capital.",
         "Each spelling is a different token with a different id.", {"text": "hello hello Hello"}),
        ("Paste a sentence in another language.", "It needs more tokens per character than the English above.",
         {"text": "Der schnelle braune Fuchs springt über den faulen Hund."}),
    ],
)
def tokenizer_widget(text: str) -> list[dict]:
    """Views: counts (tokens, characters, characters per token) and the token chips.

    Args:
        text: 1 to 2,000 characters.

    Returns:
        three stats and a chips view (classes ``tok-word``, ``tok-subword``, ``tok-punctuation``,
        ``tok-space``, ``tok-digit``, ``tok-special``; each chip's title names its class).

    Raises:
        FieldError: empty text (field ``text``).
    """
    if not text:
        raise FieldError("text", "Text is empty: type at least one character")
    pieces = classify(text)
    n_tok, n_chr = len(pieces), len(text)
    counts = {c: sum(1 for p in pieces if p[2] == c) for c in TOKEN_CLASSES}
    legend = "; ".join(f"{CLASS_COLOURS[c]}: {TOKEN_CLASSES[c]} ({n})" for c, n in counts.items() if n)
    return [
        v.stat("Tokens", n_tok),
        v.stat("Characters", n_chr),
        v.stat("Characters per token", v.fmt(n_chr / n_tok) if n_tok else "n/a"),
        v.chips(
            [v.chip(t, i, f"tok-{c}", TOKEN_CLASSES[c]) for t, i, c in pieces],
            caption=f"{plural(n_tok, 'token')}. Underlines: {legend}" if n_tok else "No tokens",
        ),
    ]


# ---------------------------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------------------------


@widget(
    "sampling",
    title="From scores to one token",
    description="The model's real scores for the next token of a prompt. Temperature reshapes the "
    "probabilities, top-k and top-p drop the unlikely tail, and one token is drawn from the rest.",
    inputs=[
        *prompt_inputs("story"),
        Input(TEMPERATURE, "range"),
        Input(TOP_K, "range"),
        Input(TOP_P, "range"),
        Input(SEED, "number"),
    ],
    tries=[
        ("Set the temperature to 0.", "Only the top token is left: the draw is the same whatever the seed.",
         {"temperature": 0.0}),
        ("Raise the temperature to 2.", "The odds flatten and unlikely tokens get a real chance.", {"temperature": 2.0}),
        ("Set top-k to 1.", "Only the top token is left: top-k keeps a fixed count of tokens.", {"top_k": 1}),
        ("Set top-p to 0.9.", "The tail is cut too, but top-p keeps as many tokens as it takes to reach 90% of the "
         "probability.", {"top_p": 0.9}),
        ("Change the seed.", "Another draw from the same odds: a different token now and then, never one that was cut.",
         {"seed": 2}),
    ],
    live=True,
)
def sampling_widget(prompt: str, chat: bool, temperature: float, top_k: int, top_p: float, seed: int,
                    live: engine.Answers | None = None) -> list[dict]:
    """Views: the survivors of temperature/top-k/top-p over the top-50 logits, and a seeded draw.

    Args:
        prompt, chat: as :func:`descent.widgets.part0.next_token_guess`. temperature: 0 to 2.
        top_k: 1 to 50. top_p: 0.05 to 1. seed: 0 to 1,000,000.
        live: the in-browser engine's answers, or ``None`` for the build's trace.

    Returns:
        stats (survivors, the drawn token with its renormalised probability), a bar list of the
        first :data:`SAMPLING_ROWS` candidates (survivors with their renormalised probability,
        dropped tokens greyed), a note on the mass outside the top 50, where the numbers come
        from, and the prepared prompts as buttons. The draw is :func:`descent.sampling.sample`'s
        in both cases: the engine only supplies the probabilities.

    Raises:
        FieldError: as :func:`descent.widgets.part0.next_token_guess`. EngineNeeded: not computed yet.
    """
    p = prompt_record(prompt, chat) if live is None else engine.next_tokens(live, model_text(prompt, chat))
    cands = p["next"]
    logits = [c["logit"] for c in cands]
    survivors = dict(sampling.distribution(logits, temperature, top_k, top_p))
    drawn = sampling.sample(logits, temperature, top_k, top_p, seed=seed)
    rows = []
    for i, c in enumerate(cands[:SAMPLING_ROWS]):
        if i in survivors:
            rows.append(
                v.bar(
                    show(c["text"]),
                    survivors[i],
                    display=pct(survivors[i]),
                    cls="is-selected" if i == drawn else "",
                    note="drawn" if i == drawn else "",
                )
            )
        else:
            rows.append(v.bar(show(c["text"]), 0.0, display="dropped", greyed=True))
    top = len(cands)
    hidden = len(survivors) - sum(1 for i in survivors if i < SAMPLING_ROWS)
    more = f" ({hidden} more below the first {SAMPLING_ROWS})" if hidden else ""
    return [
        v.stat("Tokens left to draw from", len(survivors), note=f"of the top {top}{more}"),
        v.stat("Drawn", show(cands[drawn]["text"]), note=f"chance {pct(survivors[drawn])} after the filters"),
        v.bar_list(rows, caption="Probability of each candidate after temperature, top-k and top-p", max=1.0),
        v.note(
            f"This page works with the model's {top} best candidates only. At temperature 1, all "
            f"the other {format_int(trace_data()['model']['vocab'] - top)} tokens together hold "
            f"{pct(p['rest_probability'])} of the probability; here they are left out before "
            f"the filters run."
        ),
        source_note(live),
        prompt_chips(prompt, chat),
    ]


# ---------------------------------------------------------------------------------------------
# autoregression
# ---------------------------------------------------------------------------------------------


def loop_work(prompt_tokens: int, steps: int) -> list[tuple[int, int, int, int]]:
    """Tokens the layers process at each of ``steps`` generation steps, with and without a KV cache.

    Step 0 reads the whole prompt (``prompt_tokens``). With a KV cache, each later step runs only
    the newest token (the keys and values of the others are kept); without one, step ``n`` re-runs
    all ``prompt_tokens + n`` tokens.

    Returns:
        ``[(with_cache, without_cache, cumulative_with, cumulative_without)]``, one per step (tokens).

    Raises:
        ValueError: prompt_tokens < 1 or steps < 1.
    """
    if prompt_tokens < 1 or steps < 1:
        raise ValueError(f"prompt_tokens and steps must be at least 1, got {prompt_tokens} and {steps}")
    out, cw, cn = [], 0, 0
    for n in range(steps):
        w = prompt_tokens if n == 0 else 1
        nc = prompt_tokens + n
        cw, cn = cw + w, cn + nc
        out.append((w, nc, cw, cn))
    return out


@widget(
    "autoregression",
    title="The loop, and the work it repeats",
    description="Each step appends one token and reads the whole text again. Without a cache the "
    "layers redo every earlier token at each step; with a KV cache the weights process only the new "
    "one, but its attention still reads the cached keys and values of every earlier token.",
    inputs=[
        *prompt_inputs("chat"),
        step_input(10),
        Input(TEMPERATURE.but(default=0.0, help="0 takes the most likely token at every step (the recorded "
                                                "reply); above 0 the model in your browser draws each token."), "range"),
        Input(TOP_K, "range"),
        Input(TOP_P, "range"),
        Input(SEED.but(help="The same seed and settings always write the same reply."), "number"),
    ],
    tries=[
        ("Step forward a few tokens.", "Without a cache the work per step grows with the text; with one it stays at one token.",
         {"step": 13}),
        ("Go to the last step.", "The total without a cache has grown far past the one with it: the gap widens every step.",
         {"step": len(recorded.prompt_trace("chat")["generation"]["steps"]) - 1}),
        ("Load the model above, set the temperature to 0.8, then change the seed and change it back.",
         "Each seed writes its own reply, and the same seed always the same one.", Look(page="model_in_browser")),
    ],
    live=True,
)
def autoregression(prompt: str, chat: bool, step: int, temperature: float, top_k: int, top_p: float, seed: int,
                   live: engine.Answers | None = None) -> list[dict]:
    """Views for one step of the continuation plus the work with and without a KV cache.

    Args:
        prompt, chat: as :func:`descent.widgets.part0.next_token_guess`. step: 0 to
            :data:`~descent.widgets.part0.MAX_STEPS` (past the reply's last step the last one is
            shown, with a note). temperature: 0 (greedy: the recorded reply) to 2; above 0 the
            tokens are drawn by the engine in the browser with top_k (1 to 50), top_p (0.05 to 1)
            and seed (0 to 1,000,000), which have no effect at 0.
        live: the in-browser engine's answers, or ``None`` for the build's trace.

    Returns:
        the views of ``generation_loop`` for that step, then stats of tokens processed this step
        and so far, with and without a KV cache (:func:`loop_work`), the tokens whose keys and
        values this step's attention reads (all of them, cache or not), and a bar list comparing
        the totals.

    Raises:
        FieldError: as :func:`descent.widgets.part0.next_token_guess`; temperature above 0 without
            the model (field ``temperature``: the build recorded only the greedy reply).
        EngineNeeded: the engine has not written this far yet.
    """
    drawn = temperature > 0
    if drawn and live is None:
        raise FieldError("temperature", NOT_RECORDED_SAMPLED)
    settings = {"temperature": temperature, "top_k": top_k, "top_p": top_p, "seed": seed} if drawn else None
    p, more = loop_record(prompt, chat, step, live, settings)
    views, s = _step_views(p, step, more, sampled=drawn)
    n = s["step"]
    w, nc, cw, cn = loop_work(len(p["tokens"]), n + 1)[-1]
    layers = trace_data()["model"]["layers"]
    views += [
        v.stat("This step, with a KV cache", w, "tokens"),
        v.stat("This step, without a cache", nc, "tokens"),
        v.stat(
            "Keys and values its attention reads",
            nc,
            "tokens",
            note=f"in each of the {layers} layers, with the cache too: the cache spares the weights' "
            f"work on old tokens, not the reading of their keys and values",
        ),
        v.bar_list(
            [
                v.bar("With a KV cache", cw, display=plural(cw, "token")),
                v.bar("Without a cache", cn, display=plural(cn, "token")),
            ],
            caption=f"Tokens run through all the layers, steps 0 to {n}",
        ),
    ]
    if drawn:
        views.append(v.note(
            f"Each token was drawn by llama.cpp's sampler in your browser: top-k, then temperature, then "
            f"top-p, with seed {seed}. The probabilities shown are the model's before those filters."
        ))
    return [*views, source_note(live), prompt_chips(prompt, chat)]
