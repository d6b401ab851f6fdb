"""Part 0 widgets: ``next_token_guess`` and ``generation_loop``, on real SmolLM2-135M traces.

The numbers come from ``descent/data/traces.json``, written at build time by
:mod:`descent.trace.export` from a NumPy forward pass of SmolLM2-135M-Instruct (Q4_1 GGUF). This
module only reads that file (``importlib.resources`` + ``json``), so it runs in Pyodide. Once the
reader has loaded the same model in the browser, the widgets are ``live`` (:mod:`descent.engine`):
any typed prompt, computed by llama.cpp there, shown by the same views.

* :func:`descent.recorded.trace_data` / :func:`~descent.recorded.prompt_trace`: the loaded file and one prompt's record (the layout
  is documented in :mod:`descent.trace.export`; ``attention_last`` is (L, H, T)).
* :func:`find_guess`: where a reader's guess sits among the top-50 next tokens.
* :func:`prompt_inputs` / :func:`prompt_record`: the prompt every trace widget takes as text (and
  whether it is sent as a chat message); the build's record of it, or the engine's.
* ``next_token_guess``: pick a prompt, type a guess, see the model's real top candidates.
* ``generation_loop``: step through the real greedy continuation, one token per step.

Core rule: standard library and core ``descent`` modules only.
"""

from __future__ import annotations

from descent import engine, recorded, tokenizer
from descent import params as P
from descent.recorded import prompt_ids, prompt_trace, trace_data  # noqa: F401  (re-exported for widgets)
from descent.units import format_int, format_percent, plural, visible_whitespace
from descent.widgets import FieldError, Input, Look, widget
from descent.widgets import views as v

__all__ = [
    "GUESS",
    "GUESS_MAX_CHARS",
    "MAX_STEPS",
    "CHAT",
    "PROMPT",
    "PROMPT_MAX_CHARS",
    "PROMPT_TEXT",
    "SHOWN_CANDIDATES",
    "STEP",
    "context_chips",
    "case_variant",
    "describe_guess",
    "find_guess",
    "guess_spelling",
    "generation_loop",
    "next_token_guess",
    "model_text",
    "pct",
    "prompt_chips",
    "prompt_inputs",
    "prompt_record",
    "source_note",
    "show",
    "step_input",
    "token_chip",
]

#: Longest guess accepted, in characters (a token is rarely longer than a word).
GUESS_MAX_CHARS = 40
#: Candidate rows shown in the bar list (the file holds the top 50).
SHOWN_CANDIDATES = 10
#: Highest step index the step parameter accepts (the longest recorded continuation is shorter).
#: The slider itself ends at the chosen prompt's last step: each result carries a ``limits`` view.
MAX_STEPS = 63
#: The loop widgets' default step: a few tokens in, so the first chosen tokens show in the context.
DEFAULT_STEP = 6

#: One of the prepared prompts the build traced (a page's ``prompt=``).
PROMPT = recorded.PROMPT
#: Longest prompt a reader may type, in characters (with its reply it must fit the browser's model:
#: :data:`descent.engine.CONTEXT_TOKENS`).
PROMPT_MAX_CHARS = 1000
#: The text the model continues: one of the prompts the build traced or, with the model loaded in
#: the browser, any text.
PROMPT_TEXT = P.declare(P.Param(
    "prompt", "Prompt", "text", recorded.prompt_trace("capital")["prompt"], key="model_prompt",
    max_length=PROMPT_MAX_CHARS,
    help=(f"Load the model above to try any text of up to {format_int(engine.PROMPT_MAX_TOKENS)} tokens; until "
          "then, pick one of the prompts recorded when the site was built."),
))
#: Whether the prompt goes in as a chat message (SmolLM2's chat template around it), as a chat app sends it.
CHAT = P.declare(P.Param(
    "chat", "Send it as a chat message", "bool", False, key="model_chat",
    help="Wraps the prompt in the chat template a chat app adds, so the model writes a reply to it.",
))
#: A step of the recorded generation.
STEP = P.declare(P.Param(
    "step", "Step", "int", DEFAULT_STEP, key="trace_step", min=0, max=MAX_STEPS,
    help="Drag the slider, type a step, or use the previous and next buttons below.",
))
#: The reader's guess at the next token.
GUESS = P.declare(P.Param(
    "guess", "Your guess (optional)", "text", "", max_length=GUESS_MAX_CHARS,
    help="One word or symbol. A leading space is added for you when it helps.",
))


def show(text: str) -> str:
    """A token's text with its whitespace made visible (:func:`descent.units.visible_whitespace`):
    ``" Paris"`` -> ``"␣Paris"``, ``"\n"`` -> ``"↵"``."""
    return visible_whitespace(text)


def pct(p: float) -> str:
    """A probability (0..1) as a percentage with 3 significant figures: ``"77.3%"``."""
    return format_percent(p, trim=False)


def find_guess(guess: str, candidates: list[dict]) -> int | None:
    """Index (0-based rank) of ``guess`` among ``candidates`` (``[{"text", ...}]``), or None.

    A guess matches a token spelled exactly like it, or like it with the leading space most word
    tokens carry ("Paris" finds " Paris"), whichever ranks higher. Case counts: "paris" does not
    find " Paris" (another token; :func:`case_variant` finds it for a hint). An empty guess
    matches nothing; an all-whitespace guess matches only itself.
    """
    if not guess:
        return None
    texts = [c["text"] for c in candidates]
    if not guess.strip():  # a space or a line break is a token too: exact match only
        return texts.index(guess) if guess in texts else None
    keys = {guess, " " + guess.lstrip()}
    for i, t in enumerate(texts):  # most probable first: the better-ranked spelling wins
        if t in keys:
            return i
    return None


def case_variant(guess: str, candidates: list[dict]) -> int | None:
    """Rank of the best candidate spelled like ``guess`` but for case and surrounding spaces
    (" Paris" for "paris"), or None: the hint that case and the leading space make another token."""
    folded = guess.strip().casefold()
    if not folded:
        return None
    for i, c in enumerate(candidates):
        if c["text"].strip().casefold() == folded:
            return i
    return None


def guess_spelling(guess: str, candidates: list[dict]) -> str:
    """The text the guess stands for as the model's next token: of the guess as typed and the
    guess with a leading space, the better-ranked one among ``candidates``; when neither is there,
    with a leading space if the guess starts with a letter or digit and the model's top pick starts
    with a space (the next word follows a space here), else as typed."""
    if not guess.strip():
        return guess
    spaced = " " + guess.lstrip()
    for c in candidates:  # most probable first
        if c["text"] in (guess, spaced):
            return c["text"]
    top = candidates[0]["text"] if candidates else ""
    return spaced if top[:1] == " " and guess[:1].isalnum() else guess


def describe_guess(guess: str, candidates: list[dict], top: int) -> tuple[str, str, int | None]:
    """(stat value, note, rank) for a non-empty guess: which token(s) the guess became with
    SmolLM2's tokenizer, whether that is one of the model's tokens, and where it ranks.

    Case and the leading space matter: "paris" is not " Paris" (the note names the candidate that
    differs only so, :func:`case_variant`). A guess that is several tokens is ranked by its first
    piece, the only one the model picks at this step.
    """
    spelling = guess_spelling(guess, candidates)
    pieces = tokenizer.smollm2().tokens_of(spelling)
    texts = [c["text"] for c in candidates]
    if not pieces:  # a control character without a vocabulary entry: the tokenizer drops it
        return "no token", f"'{show(guess)}' has no token in the model's vocabulary: the tokenizer drops it.", None
    if spelling == guess:
        became = f"'{show(guess)}'"
    else:
        became = f"'{show(guess)}' becomes '{show(spelling)}' (with the leading space a word carries after another word) and"
    if len(pieces) == 1:
        tok, tid = pieces[0]
        note = f"{became} is one token of the model's vocabulary, id {format_int(tid)}."
    else:
        tok = pieces[0][0]
        split = " + ".join(f"'{show(t)}'" for t, _ in pieces)
        note = (
            f"{became} is not one token of the model's vocabulary: it splits into {split}, so the model "
            f"would write it in {plural(len(pieces), 'step')}. It is ranked by its first piece, '{show(tok)}', "
            f"the only one chosen at this step."
        )
    rank = texts.index(tok) if tok in texts else None
    if rank is not None:
        note += f" Probability {pct(candidates[rank]['probability'])}."
    near = case_variant(guess, candidates)
    if near is not None and near != rank:
        note += (
            f" The model's list has '{show(texts[near])}' at #{near + 1}: case and the leading space "
            f"make that a different token."
        )
    if rank is None:
        return f"not in the top {top}", note, None
    return f"#{rank + 1}" + (" (first piece)" if len(pieces) > 1 else ""), note, rank


def token_chip(t: dict, cls: str = "", title: str = "") -> dict:
    """A chip view item for a token record ``{"text", "id"}``; control tokens get ``is-special``."""
    special = t["text"].startswith("<|") and t["text"].endswith("|>")
    classes = " ".join(c for c in (cls, "is-special" if special else "") if c)
    return v.chip(t["text"], t["id"], classes, title)


def context_chips(p: dict, step: int) -> list[dict]:
    """Chips of the context the model reads at ``step``: the prompt, then the tokens chosen before it."""
    chosen = [s["token"] for s in p["generation"]["steps"][:step]]
    return [token_chip(t) for t in p["tokens"]] + [token_chip(t, "is-new", "generated") for t in chosen]


def prompt_inputs(default: str) -> list[Input]:
    """The prompt box and the chat toggle every trace widget starts with (Part 0 and Part 1's loop
    widgets), filled with the prepared prompt ``default`` (an id of :func:`descent.recorded.prompt_ids`)."""
    rec = prompt_trace(default)
    return [Input(PROMPT_TEXT.but(default=rec["prompt"]), "text"), Input(CHAT.but(default=rec["chat"]), "toggle")]


def model_text(prompt: str, chat: bool) -> str:
    """The text the model reads: ``prompt`` itself, or SmolLM2's chat template around it as a user turn
    (the same rule as the build's traces, :func:`descent.trace.record.prompt_text`)."""
    return tokenizer.apply_chat_template([{"role": "user", "content": prompt}]) if chat else prompt


def step_input(default: int) -> Input:
    """The step slider of the loop widgets, with the previous/next buttons. It accepts 0 to
    :data:`MAX_STEPS`; the control's own end is the chosen prompt's last step (a ``limits`` view
    in every result, applied to the pre-rendered form and, in the browser, on each result)."""
    return Input(STEP.but(default=default), "range")


#: What a widget says when, without the model, the prompt is not one the build traced.
NOT_RECORDED = (
    "Without the model loaded, only the prompts recorded when the site was built have results: pick "
    "one of them (the buttons under the results), or load the model to try your own text"
)


def prompt_record(prompt: str, chat: bool = False) -> dict:
    """The build's trace of a prepared prompt (:func:`descent.recorded.find_prompt`) for a widget.

    Raises:
        FieldError: (field ``prompt``) the build did not trace this text, sent this way.
    """
    rec = recorded.find_prompt(prompt, chat)
    if rec is None:
        raise FieldError("prompt", NOT_RECORDED)
    return rec


def prompt_chips(prompt: str, chat: bool) -> dict:
    """The prompts the build traced, as buttons that put one in the prompt box (the current one marked)."""
    items = [
        v.chip(recorded.PROMPT_LABELS.get(p["id"], p["id"]), None,
               "is-selected" if (p["prompt"], p["chat"]) == (prompt, chat) else "",
               f"use the prompt: {p['prompt']}", set={"prompt": p["prompt"], "chat": p["chat"]})
        for p in trace_data()["prompts"]
    ]
    return v.chips(items, caption="Prompts recorded when the site was built:", tokens=False)


def source_note(live) -> dict:
    """Where the numbers shown come from: the build's NumPy forward pass, or the engine in the browser just now."""
    if live is None:
        return v.note(
            "These numbers were computed when the site was built, by a NumPy forward pass of the model. "
            "Load the model above to compute any prompt in your browser."
        )
    return v.note(
        "Computed just now in your browser by llama.cpp, from the same model file the site was built "
        "with. Its arithmetic rounds differently from the build's, so the last digits can differ."
    )


# ---------------------------------------------------------------------------------------------
# next_token_guess
# ---------------------------------------------------------------------------------------------


@widget(
    "next_token_guess",
    title="Guess the next token",
    description="Type or pick a prompt and guess the token that comes next. The ranking below is what "
    "SmolLM2-135M, a small open model, computes for that text: recorded when this site was built, or "
    "computed in your browser once you load the model.",
    inputs=[
        *prompt_inputs("capital"),
        Input(GUESS, "text"),
    ],
    tries=[
        ("Guess Paris, then paris.", "Case matters: a capital P and a small p are different tokens with different odds.",
         {"guess": "paris"}),
        ("Pick the prompt with no single answer, Favourite colour.",
         "The probability spreads over many tokens instead of one.",
         {"prompt": recorded.prompt_trace("uncertain")["prompt"]}),
        ("Guess a long or rare word, such as unbelievably.",
         "It is not one token: the model would need several steps to write it.", {"guess": "unbelievably"}),
        ("Load the model above, then type your own sentence.",
         "The ranking is computed in your browser, for any text: a sentence that ends mid-word gets a different list.",
         Look(page="model_in_browser")),
    ],
    live=True,
)
def next_token_guess(prompt: str, chat: bool, guess: str, live: engine.Answers | None = None) -> list[dict]:
    """Views: the prompt as token chips, the guess's rank, the top candidates, the greedy pick.

    Args:
        prompt: the text (1 to 1,000 characters): a prompt the build traced, or any text once the
            model is loaded in the browser. chat: send it as a chat message. guess: 0 to 40 characters.
        live: the in-browser engine's answers (:mod:`descent.engine`), or ``None`` for the build's trace.

    Returns:
        stats (the guess's rank and probability, or "not in the top 50"; the greedy pick), token
        chips of the prompt, a bar list of the top :data:`SHOWN_CANDIDATES` next tokens (the
        guess marked; added as an extra row when it ranks lower), a note on the mass outside
        the top 50, where the numbers come from, and the prepared prompts as buttons.

    Raises:
        FieldError: (field ``prompt``) without the model, a prompt the build did not trace; with
            it, an empty prompt or one too long for the engine.
        EngineNeeded: the engine has not computed this prompt yet.
    """
    p = prompt_record(prompt, chat) if live is None else engine.next_tokens(live, model_text(prompt, chat))
    cands = p["next"]
    top = len(cands)
    rank = None
    out = []
    if not guess:
        out.append(v.stat("Your guess", "none", note="Type a word above to see where it ranks."))
    else:
        value, note, rank = describe_guess(guess, cands, top)
        out.append(v.stat("Your guess", value, note=note))
    first = cands[0]
    out.append(
        v.stat(
            "The model's top pick",
            show(first["text"]),
            note=f"probability {pct(first['probability'])}; greedy decoding takes it.",
        )
    )
    out.append(
        v.chips(
            [token_chip(t) for t in p["tokens"]], caption=f"What the model reads: {plural(len(p['tokens']), 'token')}"
        )
    )
    shown = list(range(min(SHOWN_CANDIDATES, len(cands))))
    if rank is not None and rank not in shown:
        shown.append(rank)
    rows = []
    for i in shown:
        c = cands[i]
        is_guess = i == rank
        rows.append(
            v.bar(
                f"#{i + 1} {show(c['text'])}",
                c["probability"],
                display=pct(c["probability"]),
                cls="is-selected" if is_guess else "",
                note="your guess" if is_guess else "",
            )
        )
    out.append(v.bar_list(rows, caption="The most likely next tokens", max=1.0))
    kept = "The file behind this page keeps" if live is None else "The engine returns"
    out.append(
        v.note(
            f"{kept} the top {top} of the {format_int(trace_data()['model']['vocab'])} tokens; "
            f"all the others together hold {pct(p['rest_probability'])} of the probability."
        )
    )
    out.append(source_note(live))
    out.append(prompt_chips(prompt, chat))
    return out


# ---------------------------------------------------------------------------------------------
# generation_loop
# ---------------------------------------------------------------------------------------------


def loop_record(prompt: str, chat: bool, step: int, live: engine.Answers | None,
                sampling: dict | None = None) -> tuple[dict, bool]:
    """(the continuation shown at ``step``, whether the engine can write more of it): the build's
    greedy trace without the model, else the engine's reply, at least ``step + 1`` tokens long
    (:func:`descent.engine.continuation`; greedy, or drawn with ``sampling``)."""
    if live is None:
        return prompt_record(prompt, chat), False
    p = engine.continuation(live, model_text(prompt, chat), step + 1, sampling=sampling)
    more = p["generation"]["stop_reason"] != "stop_token" and len(p["generation"]["steps"]) <= MAX_STEPS \
        and len(p["tokens"]) + len(p["generation"]["steps"]) < engine.CONTEXT_TOKENS
    return p, more


def _step_views(p: dict, step: int, more: bool = False, sampled: bool = False) -> tuple[list[dict], dict]:
    """(views common to both loop widgets, the step record shown); notes the last step if beyond it.

    ``more``: the engine can write further steps on request (the slider then keeps its full range
    and the last step offers "next"); ``sampled``: the tokens were drawn, not the most likely."""
    steps = p["generation"]["steps"]
    last = len(steps) - 1
    # The slider ends at this reply's last step (or at MAX_STEPS while the engine can write more).
    out: list[dict] = [v.limits(step={"max": MAX_STEPS if more else last})]
    if step > last:
        out.append(
            v.note(
                f"This continuation has only {len(steps)} steps (0 to {last}); showing the last one.", "warn"
            )
        )
        step = last
    s = steps[step]
    nav = []
    if step > 0:
        nav.append(
            v.chip("\u2190 previous step", None, "is-nav", f"go to step {step - 1}", set={"step": step - 1})
        )
    if step < last or (more and step < MAX_STEPS):
        nav.append(
            v.chip("next step \u2192", None, "is-nav", f"go to step {step + 1}", set={"step": step + 1})
        )
    out.append(v.chips(nav, caption=f"Step {step} of {last}", tokens=False))
    made = f"the prompt and the {plural(step, 'token')} it has chosen so far" if step else "the prompt alone"
    out.append(
        v.chips(
            context_chips(p, step),
            caption=f"Step {step}: the model reads {plural(s['context_length'], 'token')}, {made}",
        )
    )
    tok = s["token"]
    ending = ""
    if step == last and not more:
        ending = (
            "It is the stop token: the reply ends here."
            if p["generation"]["stop_reason"] == "stop_token"
            else "The page stops here: the length limit set for this prompt."
        )
    out.append(v.stat("Token chosen", show(tok["text"]), note=f"id {tok['id']}. {ending}".strip()))
    out.append(v.stat("Its probability", pct(s["probability"]),
                      note="before the filters; drawn at random" if sampled else "the largest of all: greedy decoding"))
    rows = [
        v.bar(
            show(a["text"]),
            a["probability"],
            display=pct(a["probability"]),
            cls="is-selected" if a["id"] == tok["id"] else "",
            greyed=a["id"] != tok["id"],
        )
        for a in s["alternatives"]
    ]
    out.append(v.bar_list(rows, caption=f"Step {step}: the five most likely tokens", max=1.0))
    return out, s


@widget(
    "generation_loop",
    title="One token at a time",
    description="Step through the model's real reply. At each step it reads everything so far, "
    "picks the most likely token, appends it, and starts again.",
    inputs=[
        *prompt_inputs("story"),
        step_input(DEFAULT_STEP),
    ],
    tries=[
        ("Press next step a few times.", "The token chosen at one step is part of what the model reads at the next.",
         {"step": DEFAULT_STEP + 3}),
        ("Press A chat question under the results.", "Most of what the model reads is the chat template, not the question.",
         {"prompt": recorded.prompt_trace("chat")["prompt"], "chat": recorded.prompt_trace("chat")["chat"]}),
        ("Go to the step where the top token is least sure.", "Greedy decoding takes it anyway: nothing checks the facts.",
         {"step": min(range(len(recorded.prompt_trace("story")["generation"]["steps"])),
                      key=lambda i: recorded.prompt_trace("story")["generation"]["steps"][i]["probability"])}),
        ("Load the model above, tick the chat box and ask your own question.",
         "The reply is written in your browser, one token per step, exactly as here.", Look(page="model_in_browser")),
    ],
    live=True,
)
def generation_loop(prompt: str, chat: bool, step: int, live: engine.Answers | None = None) -> list[dict]:
    """Views for one step of the greedy continuation of a prompt.

    Args:
        prompt, chat: as :func:`next_token_guess`. step: 0 to :data:`MAX_STEPS`; past the last step
            of the reply the last step is shown, with a note saying so.
        live: the in-browser engine's answers, or ``None`` for the build's trace.

    Returns:
        token chips of the context read at that step (generated tokens marked ``is-new``), the
        token chosen and its probability, the top-5 alternatives, where the numbers come from and
        the prepared prompts as buttons.

    Raises:
        FieldError: as :func:`next_token_guess`. EngineNeeded: the engine has not written this far yet.
    """
    p, more = loop_record(prompt, chat, step, live)
    views, _ = _step_views(p, step, more)
    return [*views, source_note(live), prompt_chips(prompt, chat)]
