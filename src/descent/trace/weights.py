"""The real SmolLM2 GGUF as stored: tensor names, shapes, block types, raw Q4_1 blocks; and the small
sample of real weights the browser widgets of Part 2 use (``descent/data/weights.json``).

Build side (NumPy; the file's header read by :func:`descent.trace.gguf_reader.open_reader`, its tensor
data memory-mapped). Everything here reads the file's bytes, not the dequantized cache of
:mod:`descent.trace.gguf_reader`, so the blocks are the ones on disk.

Shapes: GGUF lists a matrix's dimensions innermost first (``ne0`` = columns = inputs); here every
shape is written the PyTorch way, ``(rows, columns)`` = (outputs, inputs): ``blk.0.ffn_gate.weight``
is (1536, 576).

A Q4_1 block (ggml-common.h ``block_q4_1``, 20 bytes): FP16 ``d``, FP16 ``m``, then 16 bytes whose
low nibbles are codes 0..15 and high nibbles codes 16..31; weight ``i`` is ``d * q[i] + m``.

``python -m descent.trace.weights [--check]`` writes (or checks) the data file; the test
``tests/test_weights_export.py`` checks the committed file equals a fresh export.

Layout of ``weights.json`` (format :data:`FORMAT`)::

    {"format", "model", "file", "sha256", "layers": L,
     "file_types": {TYPE: {"tensors", "weights", "bytes"}}, "total": {"tensors", "weights", "bytes"},
     "layer_tensors": [{"name", "shape": [rows, cols], "type", "weights", "bytes"}],   # layer 0
     "other_tensors": [...],                                                          # outside the layers
     "matrices": ["attn_q", ...],
     "blocks": {MATRIX: [[d, m, "32 hex digits"], ...]},     # block 0 of row 0, one per layer (L,)
     "sample": {"tensor", "row", "blocks": [[d, m, "hex"], ...]}}   # one whole row, block by block
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from descent.trace.gguf_reader import file_sha256, gguf_path, open_reader

#: Bump when the layout above changes.
FORMAT = 1
#: The seven matrices of a layer, in the order a token meets them.
MATRICES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
#: The row shipped for the quantization widgets: row 0 of layer 15's ffn_down (1,536 weights; one of
#: them, at column 705, is about 9.5 standard deviations out: a natural outlier).
SAMPLE_TENSOR = "blk.15.ffn_down.weight"
SAMPLE_ROW = 0
#: Where the file lives inside the package.
DATA_PATH = Path(__file__).resolve().parents[1] / "data" / "weights.json"
#: Bytes of one Q4_1 block and weights per block (ggml-common.h).
Q4_1_BYTES, Q4_1_BLOCK = 20, 32


def reader(path: str | None = None):
    """The SmolLM2 file opened for reading, memory-mapped, once per process
    (:func:`descent.trace.gguf_reader.open_reader`: the fields and tensors of ``gguf.GGUFReader``).

    Raises:
        GGUFError: the file is empty, damaged or not a GGUF (naming the file and the fix).
    """
    return open_reader(Path(path) if path else gguf_path())


def tensor_info(t) -> dict:
    """``{"name", "shape": [rows, cols] (or [n]), "type", "weights", "bytes"}`` of a reader tensor."""
    shape = [int(x) for x in reversed(t.shape.tolist())]
    return {"name": t.name, "shape": shape, "type": t.tensor_type.name, "weights": int(t.n_elements),
            "bytes": int(t.n_bytes)}


def tensors(path: str | None = None) -> list[dict]:
    """Every tensor of the file, in file order (:func:`tensor_info`)."""
    return [tensor_info(t) for t in reader(path).tensors]


def _tensor(name: str, path: str | None = None):
    for t in reader(path).tensors:
        if t.name == name:
            return t
    raise ValueError(f"the GGUF has no tensor {name!r}")


def q4_1_block(name: str, row: int, block: int, path: str | None = None) -> tuple[float, float, list[int]]:
    """The raw Q4_1 block ``block`` of row ``row`` of tensor ``name``: ``(d, m, codes)`` with
    ``codes`` the 32 four-bit integers in weight order.

    Raises:
        ValueError: unknown tensor, a tensor that is not Q4_1, or a row/block outside it.
    """
    t = _tensor(name, path)
    if t.tensor_type.name != "Q4_1":
        raise ValueError(f"{name} is {t.tensor_type.name}, not Q4_1")
    data = np.asarray(t.data)  # (rows, bytes per row), uint8
    blocks_per_row = data.shape[1] // Q4_1_BYTES
    if not (0 <= row < data.shape[0] and 0 <= block < blocks_per_row):
        raise ValueError(f"{name}: row must be 0..{data.shape[0] - 1} and block 0..{blocks_per_row - 1}")
    raw = data[row, block * Q4_1_BYTES:(block + 1) * Q4_1_BYTES]
    d, m = (float(x) for x in raw[:4].view(np.float16))
    qs = raw[4:]
    codes = [int(b) & 0x0F for b in qs] + [int(b) >> 4 for b in qs]
    return d, m, codes


def _pack(d: float, m: float, codes: list[int]) -> list:
    return [d, m, "".join(format(c, "x") for c in codes)]


def summary(path: str | None = None) -> dict:
    """Tensors, weights and bytes of the file by block type, and in total."""
    by: dict[str, dict] = {}
    for t in tensors(path):
        row = by.setdefault(t["type"], {"tensors": 0, "weights": 0, "bytes": 0})
        row["tensors"] += 1
        row["weights"] += t["weights"]
        row["bytes"] += t["bytes"]
    total = {k: sum(r[k] for r in by.values()) for k in ("tensors", "weights", "bytes")}
    return {"file_types": dict(sorted(by.items())), "total": total}


def file_facts(path: str | None = None) -> dict:
    """:func:`summary` with what the page prints beside it: each block type's ``share`` of the file's
    weights and its ``bits_per_weight`` (8 x bytes / weights), the file's average ``bits_per_weight``
    in ``total``, and its ``layers`` (``llama.block_count``). Not part of ``weights.json``."""
    s = summary(path)
    total = s["total"]
    return {
        "file_types": {t: {**r, "share": r["weights"] / total["weights"], "bits_per_weight": 8 * r["bytes"] / r["weights"]}
                       for t, r in s["file_types"].items()},
        "total": {**total, "bits_per_weight": 8 * total["bytes"] / total["weights"]},
        "layers": int(reader(path).fields["llama.block_count"].contents()),
    }


def build(path: str | None = None) -> dict:
    """The export (module docstring)."""
    r = reader(path)
    n_layers = int(r.fields["llama.block_count"].contents())
    all_t = tensors(path)
    layer0 = [t for t in all_t if t["name"].startswith("blk.0.")]
    other = [t for t in all_t if not t["name"].startswith("blk.")]
    blocks = {mat: [_pack(*q4_1_block(f"blk.{i}.{mat}.weight", 0, 0, path)) for i in range(n_layers)]
              for mat in MATRICES}
    sample_t = next(t for t in all_t if t["name"] == SAMPLE_TENSOR)
    n_blocks = sample_t["shape"][1] // Q4_1_BLOCK
    sample = [_pack(*q4_1_block(SAMPLE_TENSOR, SAMPLE_ROW, b, path)) for b in range(n_blocks)]
    return {
        "format": FORMAT,
        "model": str(r.fields["general.name"].contents()),
        "file": Path(path or gguf_path()).name,
        "sha256": file_sha256(Path(path or gguf_path())),
        "layers": n_layers,
        **summary(path),
        "layer_tensors": layer0,
        "other_tensors": other,
        "matrices": list(MATRICES),
        "blocks": blocks,
        "sample": {"tensor": SAMPLE_TENSOR, "row": SAMPLE_ROW, "blocks": sample},
    }


def dumps(data: dict) -> str:
    """Deterministic JSON: sorted keys, no spaces, one trailing newline."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m descent.trace.weights [--output PATH] [--check]``; exit 1 if ``--check`` finds it stale."""
    from descent.trace.export import data_file_main

    return data_file_main("descent.trace.weights", __doc__, build, dumps, DATA_PATH, argv)


if __name__ == "__main__":
    sys.exit(main())
