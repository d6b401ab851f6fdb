"""Every query position's attention on the running prompt, as package data (``descent/data/attention.json``).

Build side (NumPy, the real model). ``traces.json`` keeps, for each of the site's prompts, only the
last prompt token's attention (the row that picks the next token). Part 1's "any token" fan
(``widgets.part1_model.attention_any``, no NumPy) needs every row: what each token of the running
prompt ("The capital of France is", :data:`descent.replay.PROMPT`) looks at, in every layer and head.

The rows come from feeding the prompt one token at a time through :func:`descent.trace.forward.forward`
with a KV cache: each call's ``attention`` is the newest position's weights over every position so
far, which is row ``t`` of the causal attention matrix (the same arithmetic as a single prefill, in
another order; the last row equals ``traces.json``'s ``attention_last`` to its rounding, a test checks).

The record keeps every layer and head: the running prompt has so few tokens (five) that all
``L x H`` lower triangles are a few thousand numbers. The page ships only the frames of the layer and
head the reader is looking at; the rest travel in the browser's wheel.

Layout (format :data:`FORMAT`; ``T`` prompt tokens, ``L`` layers, ``H`` query heads)::

    {"format", "model", "prompt_id", "prompt",
     "tokens": [{"id", "text"}],                   # (T,)
     "layers", "heads",                            # L, H
     "weights": [[[[w]]]]}                         # (L, H, T, t + 1): row t over positions 0..t

``python -m descent.trace.attention_record [--check]`` writes (or checks) the file;
``tests/test_attention_record.py`` checks it against a fresh run and against ``traces.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["DATA_PATH", "FORMAT", "SIG_DIGITS", "build", "dumps", "main"]

#: Layout version of the file.
FORMAT = 1

#: Significant figures kept per weight (the page shows one decimal of a percent: 0.1% = 1e-3).
SIG_DIGITS = 4

#: Where the file goes: the package's data folder.
DATA_PATH = Path(__file__).resolve().parents[1] / "data" / "attention.json"


def build() -> dict:
    """The record (module docstring): the running prompt fed one token at a time, every row kept."""
    import numpy as np

    from descent import recorded, replay
    from descent.trace.forward import KVCache, forward
    from descent.trace.gguf_reader import load_model
    from descent.trace.record import MODEL_NAME

    p = recorded.prompt_trace(replay.PROMPT)
    ids = [t["id"] for t in p["tokens"]]
    model = load_model()
    cache = KVCache()
    rows = []  # (T, L, H, t + 1)
    for i in ids:
        rows.append(forward(model, [i], cache).attention.astype(np.float64))  # (L, H, t + 1)
    c = model.config

    def r(x: float) -> float:
        return float(f"{x:.{SIG_DIGITS}g}")

    weights = [[[[r(w) for w in rows[t][layer, head]] for t in range(len(ids))] for head in range(c.n_heads)]
               for layer in range(c.n_layers)]
    return {
        "format": FORMAT,
        "model": MODEL_NAME,
        "prompt_id": replay.PROMPT,
        "prompt": p["prompt"],
        "tokens": [{"id": t["id"], "text": t["text"]} for t in p["tokens"]],
        "layers": c.n_layers,
        "heads": c.n_heads,
        "weights": weights,
    }


def dumps(data: dict) -> str:
    """Deterministic JSON text (:func:`descent.trace.export.dumps`)."""
    from descent.trace.export import dumps as _dumps

    return _dumps(data)


def main(argv: list[str] | None = None) -> int:
    """``python -m descent.trace.attention_record [--output PATH] [--check]``; exit 1 if ``--check`` finds it stale."""
    from descent.trace.export import data_file_main

    return data_file_main("descent.trace.attention_record", __doc__, build, dumps, DATA_PATH, argv)


if __name__ == "__main__":
    sys.exit(main())
