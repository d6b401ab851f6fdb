"""Part 3's prompt-lookup run, pass by pass, as package data (``descent/data/speculative.json``).

Build side (NumPy, the real model). :mod:`descent.trace.measure` runs prompt-lookup speculative
decoding (:mod:`descent.trace.speculative`) on its copying task and the page prints the totals
(tokens, passes, drafted and accepted tokens). This file keeps the same run round by round, so the
browser's token strip (``widgets.part3_motion.speculative_strip``, no NumPy) can replay it: what
each pass drafted, how many the target accepted, and the token the target added itself.

Layout (format :data:`FORMAT`)::

    {"format", "model", "prompt",                       # prompt: the task as the reader would type it
     "ngram_max", "draft_max",                          # the lookup's settings
     "first": {"id", "text"},                           # the prefill's token (the first pass)
     "rounds": [{"draft": [{"id", "text"}],             # one per later pass: the drafted tokens,
                 "accepted": n,                         #   how many the target accepted,
                 "kept": [{"id", "text"}]}],            #   the tokens the pass added
     "tokens", "passes", "drafted", "accepted",         # the totals the page prints
     "equals_greedy"}                                   # the reply is plain greedy decoding's

``python -m descent.trace.speculative_record [--check]`` writes (or checks) the file;
``tests/test_speculative_record.py`` checks it against a fresh run and against the page's totals.
"""

from __future__ import annotations

import sys
from pathlib import Path

from descent import tokenizer

__all__ = ["DATA_PATH", "FORMAT", "build", "dumps", "main"]

#: Layout version of the file.
FORMAT = 1

#: Where the file goes: the package's data folder.
DATA_PATH = Path(__file__).resolve().parents[1] / "data" / "speculative.json"


def build() -> dict:
    """The record: the run of :func:`descent.trace.measure.compute`'s speculative task (same prompt,
    settings and model), with its rounds."""
    from descent.trace import speculative
    from descent.trace.forward import generate
    from descent.trace.gguf_reader import load_model
    from descent.trace.measure import SETTINGS
    from descent.trace.record import MODEL_NAME, stop_ids

    s = SETTINGS
    model = load_model()
    tok = tokenizer.smollm2()
    ids = tok.encode(tok.apply_chat_template([{"role": "user", "content": s["speculative_prompt"]}]))
    spec = speculative.speculative_greedy(ids, s["speculative_max_tokens"], stop_ids(), model,
                                          s["ngram_max"], s["draft_max"])
    greedy = [st.token for st in generate(ids, s["speculative_max_tokens"], stop_ids=stop_ids(), model=model)]

    def t(i: int) -> dict:
        return {"id": int(i), "text": tok.decode([int(i)])}

    return {
        "format": FORMAT,
        "model": MODEL_NAME,
        "prompt": s["speculative_prompt"],
        "ngram_max": s["ngram_max"],
        "draft_max": s["draft_max"],
        "first": t(spec["tokens"][0]),
        "rounds": [{"draft": [t(i) for i in r["draft"]], "accepted": r["accepted"], "kept": [t(i) for i in r["kept"]]}
                   for r in spec["rounds"]],
        "tokens": len(spec["tokens"]),
        "passes": spec["passes"],
        "drafted": spec["drafted"],
        "accepted": spec["accepted"],
        "equals_greedy": spec["tokens"] == greedy,
    }


def dumps(data: dict) -> str:
    """Deterministic JSON text (:func:`descent.trace.export.dumps`)."""
    from descent.trace.export import dumps as _dumps

    return _dumps(data)


def main(argv: list[str] | None = None) -> int:
    """``python -m descent.trace.speculative_record [--output PATH] [--check]``; exit 1 if ``--check`` finds it stale."""
    from descent.trace.export import data_file_main

    return data_file_main("descent.trace.speculative_record", __doc__, build, dumps, DATA_PATH, argv)


if __name__ == "__main__":
    sys.exit(main())
