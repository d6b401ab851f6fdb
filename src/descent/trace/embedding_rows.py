"""The embedding rows of the replayed run's tokens, as stored in the shipped GGUF
(``descent/data/embedding_rows.json``).

Build side (``gguf``'s reader, NumPy). Part 5's replay (:mod:`descent.replay`) shows at its stage 2
the row of the embedding table each token of "The capital of France is" picks, and the row of the
token the model chose (" Paris"), which the next step looks up. The whole table is 49,152 rows of
576 numbers; the file keeps, per row, the first :data:`FIRST` stored codes with their block's
scale, the row's length and its bytes in the file, so it stays under a kilobyte.

The tokens are those of the recorded run (:func:`descent.recorded.prompt_trace` of
:data:`descent.replay.PROMPT`: its prompt tokens, then the first generated token), so the rows are
the ones that run looked up. Everything is read from the file's bytes of ``token_embd.weight``
(Q8_0 in the shipped file), not from the dequantized cache of :mod:`descent.trace.gguf_reader`.

A Q8_0 block (ggml-common.h ``block_q8_0``, 34 bytes): FP16 scale ``d``, then 32 signed 8-bit
codes; weight ``i`` is ``d * q[i]``. A row of D = 576 weights is D / 32 = 18 blocks, 612 bytes.

Layout of ``embedding_rows.json`` (format :data:`FORMAT`)::

    {"format", "file", "sha256", "prompt",              # prompt: the recorded prompt's id
     "tensor", "type", "shape": [V, D],                 # V rows (tokens) of D numbers
     "tensor_bytes", "row_bytes",                       # the whole table and one row, as stored
     "block": {"weights", "bytes"},                     # one block of the type
     "first": N,                                        # codes kept per row
     "rows": [{"text", "id", "role",                    # role: "prompt" or "reply"
               "d", "codes": [N ints],                  # block 0's scale, its first N codes
               "norm"}]}                                # sqrt of the sum of the row's D squares

``norm`` is computed in float64 from the dequantized row and rounded to
:data:`descent.trace.export.SIG_DIGITS` significant figures; ``d`` and the codes are the stored
values, exactly. ``python -m descent.trace.embedding_rows [--check]`` writes (or checks) the file;
``tests/test_embedding_rows.py`` checks the committed file equals a fresh export.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from descent import recorded, replay
from descent.trace.export import _round, dumps
from descent.trace.gguf_reader import file_sha256, gguf_path
from descent.trace.weights import _tensor

__all__ = ["DATA_PATH", "FIRST", "FORMAT", "TENSOR", "build", "dumps", "main", "q8_0_row"]

#: Bump when the layout above changes.
FORMAT = 1
#: Stored codes kept per row (the first block's first eight numbers).
FIRST = 8
#: The embedding table's tensor in the GGUF.
TENSOR = "token_embd.weight"
#: Where the file lives inside the package.
DATA_PATH = Path(__file__).resolve().parents[1] / "data" / "embedding_rows.json"
#: Bytes of one Q8_0 block and weights per block (ggml-common.h ``block_q8_0``).
Q8_0_BYTES, Q8_0_BLOCK = 34, 32


def q8_0_row(token_id: int, path: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Row ``token_id`` of the embedding table as stored: ``(d, codes)`` with ``d`` the (B,)
    float16 block scales and ``codes`` the (B, 32) int8 codes, B = D / 32 blocks; weight
    ``32 b + i`` is ``d[b] * codes[b, i]``.

    Raises:
        ValueError: the table is not Q8_0, or ``token_id`` is outside it.
    """
    t = _tensor(TENSOR, path)
    if t.tensor_type.name != "Q8_0":
        raise ValueError(f"{TENSOR} is {t.tensor_type.name}, not Q8_0")
    data = np.asarray(t.data)  # (V, bytes per row), uint8
    if not 0 <= token_id < data.shape[0]:
        raise ValueError(f"token id must be 0 to {data.shape[0] - 1}, got {token_id}")
    blocks = data[token_id].reshape(-1, Q8_0_BYTES)  # (B, 34)
    d = blocks[:, :2].copy().view(np.float16)[:, 0]  # (B,)
    codes = blocks[:, 2:].copy().view(np.int8)  # (B, 32)
    return d, codes


def _tokens() -> list[tuple[dict, str]]:
    tr = recorded.prompt_trace(replay.PROMPT)
    return [(t, "prompt") for t in tr["tokens"]] + [(tr["generation"]["steps"][0]["token"], "reply")]


def build(path: str | None = None) -> dict:
    """The export (module docstring)."""
    t = _tensor(TENSOR, path)
    d_model, vocab = (int(x) for x in t.shape.tolist())  # GGUF lists the innermost dimension first
    rows = []
    for tok, role in _tokens():
        d, codes = q8_0_row(int(tok["id"]), path)
        row = (d.astype(np.float64)[:, None] * codes.astype(np.float64)).ravel()  # (D,)
        rows.append({
            "text": tok["text"], "id": int(tok["id"]), "role": role,
            "d": float(d[0]), "codes": [int(q) for q in codes[0, :FIRST]],
            "norm": _round(float(np.sqrt(np.sum(row * row)))),
        })
    file = Path(path or gguf_path())
    return {
        "format": FORMAT,
        "file": file.name,
        "sha256": file_sha256(file),
        "prompt": replay.PROMPT,
        "tensor": TENSOR,
        "type": t.tensor_type.name,
        "shape": [vocab, d_model],
        "tensor_bytes": int(t.n_bytes),
        "row_bytes": int(t.n_bytes) // vocab,
        "block": {"weights": Q8_0_BLOCK, "bytes": Q8_0_BYTES},
        "first": FIRST,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m descent.trace.embedding_rows [--output PATH] [--check]``; exit 1 if ``--check`` finds it stale."""
    from descent.trace.export import data_file_main

    return data_file_main("descent.trace.embedding_rows", __doc__, build, dumps, DATA_PATH, argv)


if __name__ == "__main__":
    sys.exit(main())
