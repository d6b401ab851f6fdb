"""Value and table shortcodes for Part 0 ("The prompt") and Part 1's token sections.

Imported by :mod:`descent.site.values`, so the entries register with the others.
Numbers come from the committed real traces (:mod:`descent.widgets.part0`), SmolLM2's tokenizer
(:mod:`descent.tokenizer`) and the catalog (:mod:`descent.transformer`): the same code the page's
widgets run.

* ``<!-- descent:table token_splits -->``: how SmolLM2 splits the aside's examples
  (:data:`SPLIT_EXAMPLES`), tokens and counts computed here.
* ``<!-- descent:value token_split example=... field=tokens|count -->``: one example's split or count.
* ``<!-- descent:value trace prompt=... field=... -->``: a fact of one prepared prompt's trace (or of
  the traced model: ``field=model`` its name, ``field=file`` the GGUF file it was read from).
* ``<!-- descent:table context_windows kv=bf16 -->``: every catalog model's longest context and its
  KV cache for one sequence at that length.
* ``<!-- descent:table kv_growth model=... kv=bf16 -->``: one model's KV cache at growing contexts.
"""

from __future__ import annotations

from descent import params as P
from descent import tokenizer
from descent.recorded import PROMPT, prompt_trace, trace_data
from descent.site.shortcodes import table, value
from descent.site.values.text import md_table
from descent.units import format_int, format_percent, visible_whitespace

#: The aside's examples: key -> (what it shows, text). Hindi "मुझे चाय पसंद है" and Tamil
#: "எனக்கு தேநீர் பிடிக்கும்" both mean "I like tea".
SPLIT_EXAMPLES: dict[str, tuple[str, str]] = {
    "strawberry": ("a word at the start of the text", "strawberry"),
    "strawberry_space": ("the same word after a space", " strawberry"),
    "strawberry_caps": ("in capitals", " STRAWBERRY"),
    "r_count": ("the question itself", "How many r's are in strawberry?"),
    "n1234": ("a number", "1234"),
    "n1235": ("the next number", "1235"),
    "n2024": ("a year", "2024"),
    "definitely": ("a common word", " definitely"),
    "definately": ("the same word misspelt", " definately"),
    "english": ("an English sentence", "I like tea."),
    "hindi": ("the same sentence in Hindi", "मुझे चाय पसंद है।"),
    "tamil": ("the same sentence in Tamil", "எனக்கு தேநீர் பிடிக்கும்."),
}

#: Fields of ``descent:value trace``.
TRACE_FIELDS = (
    "prompt",
    "prompt_tokens",
    "top_token",
    "top_probability",
    "second_token",
    "second_probability",
    "rest_probability",
    "top",
    "vocab",
    "steps",
    "reply",
    "model",
    "file",
    "stop",
)

def _split(text: str) -> list[tuple[str, int]]:
    return tokenizer.tokens(text)

def _show_split(pieces: list[tuple[str, int]]) -> str:
    """Tokens as inline code, separated by a thin bar; spaces shown as ␣ so they are visible."""
    return " · ".join(f"`{visible_whitespace(t)}`" for t, _ in pieces)

@table("token_splits")
def token_splits() -> str:
    """How SmolLM2's tokenizer splits the examples of :data:`SPLIT_EXAMPLES` (tokens and counts)."""
    rows = []
    for what, text in SPLIT_EXAMPLES.values():
        pieces = _split(text)
        whole, broken = tokenizer.fragments(pieces)
        shown = (
            f"{whole} whole characters or pieces, and {broken} fragments that each hold "
            f"only some of one character's bytes"
            if broken
            else _show_split(pieces)
        )
        rows.append([what, f"`{visible_whitespace(text)}`", shown, len(pieces)])
    return md_table(["example", "text", "tokens", "count"], rows, "lllr")

SPLIT_EXAMPLE = P.declare(P.Param("example", "Split example", "choice", key="split_example",
                                   choices=[(k, k) for k in SPLIT_EXAMPLES], help="a key of SPLIT_EXAMPLES"))

SPLIT_FIELD = P.declare(P.Param("field", "Split field", "choice", key="split_field",
                                choices=[("tokens", "tokens"), ("count", "count")],
                                help="tokens (the split) or count"))

TRACE_FIELD = P.declare(P.Param("field", "Trace field", "choice", key="trace_field",
                                choices=[(f, f) for f in TRACE_FIELDS], help="what to print"))

@value("token_split", SPLIT_EXAMPLE, SPLIT_FIELD)
def token_split(example: str, field: str) -> str:
    """One example's split (as inline code) or its token count."""
    pieces = _split(SPLIT_EXAMPLES[example][1])
    return format_int(len(pieces)) if field == "count" else _show_split(pieces)

@value("trace", PROMPT.but(default=P.REQUIRED), TRACE_FIELD)
def trace_value(prompt: str, field: str) -> str:
    """A fact of one prompt's real trace: its tokens, its top next tokens, the greedy reply."""
    p = prompt_trace(prompt)
    nxt = p["next"]
    if field == "prompt":
        return f"“{p['prompt']}”"
    if field == "prompt_tokens":
        return format_int(len(p["tokens"]))
    if field in ("top_token", "second_token"):
        return f"`{visible_whitespace(nxt[0 if field == 'top_token' else 1]['text'])}`"
    if field in ("top_probability", "second_probability"):
        return format_percent(nxt[0 if field == "top_probability" else 1]["probability"], trim=False)
    if field == "rest_probability":
        return format_percent(p["rest_probability"], trim=False)
    if field == "top":
        return format_int(trace_data()["top"])
    if field == "vocab":
        return format_int(trace_data()["model"]["vocab"])
    if field == "steps":
        return format_int(len(p["generation"]["steps"]))
    if field == "model":
        return trace_data()["model"]["name"]
    if field == "file":
        return f"`{trace_data()['model']['file']}`"
    if field == "stop":  # how the recorded reply ended
        return {"stop_token": "the end-of-reply token", "max_new_tokens": "the length limit set for it"}[
            p["generation"]["stop_reason"]]
    return "“" + " ".join(p["generation"]["text"].split()) + "”"  # reply, line breaks as spaces
