"""Real SmolLM2 weights for Part 2's live widgets, read from ``descent/data/weights.json``.

The file is written at build time by :mod:`descent.trace.weights` from the shipped GGUF
(SmolLM2-135M-Instruct, Q4_1): the file's tensor list by type, layer 0's tensors with shapes and
types, the first Q4_1 block of row 0 of each of the seven matrices in every layer (scale ``d``,
minimum ``m``, 32 four-bit codes), and one whole row (layer 15's ffn_down, row 0) block by block.
A Q4_1 weight is ``d * q + m`` (ggml-common.h ``block_q4_1``).

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import functools
import json
from importlib import resources

from descent import params as P

__all__ = ["DATA_FILE", "MATRIX", "MATRIX_LABELS", "block", "data", "layer_tensor", "sample_values"]

#: The recorded weights, in ``descent/data/``.
DATA_FILE = "weights.json"

#: What each matrix of a layer does, for labels.
MATRIX_LABELS = {
    "attn_q": "attention: queries",
    "attn_k": "attention: keys",
    "attn_v": "attention: values",
    "attn_output": "attention: output",
    "ffn_gate": "feed-forward: gate",
    "ffn_up": "feed-forward: up",
    "ffn_down": "feed-forward: down",
}


@functools.lru_cache(maxsize=1)
def data() -> dict:
    """The parsed ``weights.json`` (layout in :mod:`descent.trace.weights`)."""
    return json.loads(resources.files("descent").joinpath("data", DATA_FILE).read_text(encoding="utf-8"))


def block(layer: int, matrix: str) -> tuple[float, float, list[int]]:
    """``(d, m, codes)`` of the first Q4_1 block of row 0 of ``blk.{layer}.{matrix}.weight``.

    Raises:
        ValueError: unknown matrix or a layer outside the model.
    """
    d = data()
    if matrix not in d["blocks"]:
        raise ValueError(f"matrix must be one of {', '.join(d['blocks'])}, got {matrix!r}")
    rows = d["blocks"][matrix]
    if not isinstance(layer, int) or not 0 <= layer < len(rows):
        raise ValueError(f"layer must be 0 to {len(rows) - 1}, got {layer!r}")
    scale, minimum, hexcodes = rows[layer]
    return float(scale), float(minimum), [int(c, 16) for c in hexcodes]


def layer_tensor(matrix: str) -> dict:
    """Layer 0's record of ``matrix`` (``{"name", "shape", "type", "weights", "bytes"}``); every
    layer has the same shapes and types.

    Raises:
        ValueError: unknown matrix.
    """
    for t in data()["layer_tensors"]:
        if t["name"] == f"blk.0.{matrix}.weight":
            return t
    raise ValueError(f"no tensor for matrix {matrix!r}")


@functools.lru_cache(maxsize=1)
def _sample() -> tuple[float, ...]:
    out = []
    for d, m, hexcodes in data()["sample"]["blocks"]:
        out += [d * int(c, 16) + m for c in hexcodes]
    return tuple(out)


def sample_values(n: int | None = None) -> list[float]:
    """The shipped row of real weights (``data()["sample"]``), dequantized: ``n`` first values, or all."""
    vals = _sample()
    return list(vals if n is None else vals[:n])


#: The matrix of a layer a widget shows.
MATRIX = P.declare(P.Param(
    "matrix", "Matrix", "choice", "attn_q", key="weight_matrix",
    choices=list(MATRIX_LABELS.items()),
    help="One of the seven weight matrices in every layer.",
))
