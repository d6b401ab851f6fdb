"""GGUF's quantization types, block by block, and the file-name suffixes built from them.

A GGUF tensor is stored as a run of *blocks*. Each block type is a C struct in llama.cpp's
``ggml/src/ggml-common.h``: a few scale fields and the packed codes of ``block_size`` weights.
Its size, and so its bits per weight, follows from the fields:

    bits per weight = 8 * sizeof(block) / block_size

so Q4_0 (one FP16 scale ``d`` and 32 four-bit codes: 2 + 16 = 18 bytes per 32 weights) costs 4.5
bits, not 4. The layouts below are transcribed field by field from that header; the test compares
each block's size with the ``gguf`` package's ``GGML_QUANT_SIZES`` (an independent copy).

Families:

* **legacy** (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): blocks of 32, one FP16 scale ``d``, and for the
  ``_1`` types an FP16 minimum ``m``: ``w = d * q`` (``_0``, q centred) or ``w = d * q + m`` (``_1``).
* **k-quants** (Q2_K .. Q6_K; llama.cpp PR #1684): super-blocks of 256 weights made of 16 or 8
  sub-blocks, whose scales (and minimums) are themselves quantized to 4, 6 or 8 bits against one
  or two FP16 super-block scales: block scaling applied twice.
* **i-quants** (IQ1_S .. IQ4_XS; llama.cpp PRs #4773, #5196, ...): codes that index a fixed
  non-uniform grid (or a lattice of 8-weight patterns) instead of evenly spaced integers; made
  with an *importance matrix* (PR #4861), statistics of each input column's activations gathered
  by running calibration text, so the rounding minimises the error where the activations are large.

A file name such as ``Q4_K_M`` names a *mix* (llama.cpp ``llama_ftype``): the base type for most
tensors and bigger types for a few sensitive ones (S small, M medium, L large). Its average bits
per weight depends on the model; :data:`MIXES` records the averages llama.cpp publishes for
Llama-3.1-8B (``tools/quantize/README.md``, table "meta-llama/Llama-3.1-8B"), which include the
embedding and output tensors.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from descent import params as P

__all__ = [
    "BLOCK_TYPES",
    "BlockType",
    "Field",
    "MIXES",
    "Mix",
    "NameInfo",
    "QUANT_FORMAT",
    "block_type",
    "bytes_for",
    "decode_name",
]

#: Where the layouts come from.
SOURCE = "llama.cpp ggml/src/ggml-common.h (https://github.com/ggml-org/llama.cpp/blob/master/ggml/src/ggml-common.h)"
#: Where the mixes' average bits per weight come from.
MIX_SOURCE = ("llama.cpp tools/quantize/README.md, table 'meta-llama/Llama-3.1-8B' "
              "(https://github.com/ggml-org/llama.cpp/blob/master/tools/quantize/README.md)")
#: Weights per k-quant / i-quant super-block (ggml-common.h ``QK_K``).
QK_K = 256


@dataclass(frozen=True)
class Field:
    """One field of a block struct: ``name`` (as in the C struct), ``count`` entries of ``bits``
    bits each, and what it holds."""

    name: str
    count: int
    bits: int
    meaning: str

    @property
    def total_bits(self) -> int:
        return self.count * self.bits


@dataclass(frozen=True)
class BlockType:
    """A GGUF block type: ``name`` (``"Q4_K"``), ``family`` (legacy, k-quant, i-quant, float, mx),
    ``block_size`` (weights per block), ``fields`` (the struct), ``formula`` (how a weight comes
    back), ``note`` (one sentence)."""

    name: str
    family: str
    block_size: int
    fields: tuple[Field, ...]
    formula: str
    note: str

    @property
    def block_bytes(self) -> int:
        """``sizeof`` the block struct (every field is whole bytes)."""
        bits = sum(f.total_bits for f in self.fields)
        if bits % 8:
            raise ValueError(f"{self.name}: fields add up to {bits} bits, not whole bytes")
        return bits // 8

    @property
    def bits_per_weight(self) -> float:
        """``8 * block_bytes / block_size``: scales and minimums included."""
        return 8 * self.block_bytes / self.block_size

    def layout(self) -> list[dict]:
        """The fields as ``[{"name", "count", "bits", "meaning"}]`` (the CLI's ``layout`` key)."""
        return [{"name": f.name, "count": f.count, "bits": f.bits, "meaning": f.meaning} for f in self.fields]


def _f(name: str, count: int, bits: int, meaning: str) -> Field:
    return Field(name, count, bits, meaning)


_D = _f("d", 1, 16, "FP16 scale")
_M = _f("m", 1, 16, "FP16 minimum (offset)")
_DMIN = _f("dmin", 1, 16, "FP16 super-block scale of the sub-block minimums")
_DSUPER = _f("d", 1, 16, "FP16 super-block scale of the sub-block scales")

_ALL = [
    BlockType("F32", "float", 1, (_f("value", 1, 32, "FP32 weight"),), "w = value", "No quantization."),
    BlockType("F16", "float", 1, (_f("value", 1, 16, "FP16 weight"),), "w = value", "IEEE half precision."),
    BlockType("BF16", "float", 1, (_f("value", 1, 16, "BF16 weight"),), "w = value", "bfloat16."),
    BlockType("Q8_0", "legacy", 32, (_D, _f("qs", 32, 8, "signed 8-bit codes")), "w = d * q",
              "Near-lossless: 8-bit codes with one scale per 32."),
    BlockType("Q4_0", "legacy", 32, (_D, _f("qs", 32, 4, "4-bit codes, 0..15, centred on 8")), "w = d * (q - 8)",
              "4-bit codes with one scale per 32."),
    BlockType("Q4_1", "legacy", 32, (_D, _M, _f("qs", 32, 4, "4-bit codes, 0..15")), "w = d * q + m",
              "4-bit codes with a scale and a minimum per 32: the grid fits lopsided blocks."),
    BlockType("Q5_0", "legacy", 32, (_D, _f("qh", 32, 1, "5th bit of each code"),
                                     _f("qs", 32, 4, "low 4 bits of each code")), "w = d * (q - 16)",
              "5-bit codes with one scale per 32."),
    BlockType("Q5_1", "legacy", 32, (_D, _M, _f("qh", 32, 1, "5th bit of each code"),
                                     _f("qs", 32, 4, "low 4 bits of each code")), "w = d * q + m",
              "5-bit codes with a scale and a minimum per 32."),
    BlockType("Q2_K", "k-quant", QK_K, (_f("scales", 16, 8, "4-bit scale and 4-bit minimum of each sub-block of 16"),
                                        _f("qs", QK_K, 2, "2-bit codes"), _DSUPER, _DMIN),
              "w = d * sc * q - dmin * mn", "16 sub-blocks of 16; their scales and minimums quantized to 4 bits."),
    BlockType("Q3_K", "k-quant", QK_K, (_f("hmask", QK_K, 1, "high bit of each code"),
                                        _f("qs", QK_K, 2, "low 2 bits of each code"),
                                        _f("scales", 16, 6, "6-bit scale of each sub-block of 16"), _DSUPER),
              "w = d * sc * (q - 4)", "16 sub-blocks of 16 with 6-bit scales."),
    BlockType("Q4_K", "k-quant", QK_K, (_DSUPER, _DMIN,
                                        _f("scales", 16, 6, "6-bit scale and 6-bit minimum of each sub-block of 32"),
                                        _f("qs", QK_K, 4, "4-bit codes")),
              "w = d * sc * q - dmin * mn", "8 sub-blocks of 32 with 6-bit scales and minimums."),
    BlockType("Q5_K", "k-quant", QK_K, (_DSUPER, _DMIN,
                                        _f("scales", 16, 6, "6-bit scale and 6-bit minimum of each sub-block of 32"),
                                        _f("qh", QK_K, 1, "5th bit of each code"), _f("qs", QK_K, 4, "low 4 bits")),
              "w = d * sc * q - dmin * mn", "8 sub-blocks of 32 with 6-bit scales and minimums."),
    BlockType("Q6_K", "k-quant", QK_K, (_f("ql", QK_K, 4, "low 4 bits of each code"),
                                        _f("qh", QK_K, 2, "high 2 bits of each code"),
                                        _f("scales", 16, 8, "signed 8-bit scale of each sub-block of 16"), _DSUPER),
              "w = d * sc * (q - 32)", "16 sub-blocks of 16 with 8-bit scales."),
    BlockType("IQ1_S", "i-quant", QK_K, (_D, _f("qs", 32, 8, "low 8 bits of grid indices"),
                                         _f("qh", 8, 16, "high index bits, 3-bit scales, shift signs")),
              "w = d * scale * grid[index]", "Indices into a grid of 8-weight patterns of -1, 0, +1."),
    BlockType("IQ1_M", "i-quant", QK_K, (_f("qs", 32, 8, "low 8 bits of grid indices"),
                                         _f("qh", 16, 8, "high index bits and shift bits"),
                                         _f("scales", 8, 8, "3-bit sub-block scales, the FP16 scale spread over them")),
              "w = d * scale * grid[index]", "Like IQ1_S with finer scales and no separate FP16 field."),
    BlockType("IQ2_XXS", "i-quant", QK_K, (_D, _f("qs", 32, 16, "grid indices, signs and scales")),
              "w = d * scale * grid[index]", "Indices into an E8-lattice grid of 8-weight patterns."),
    BlockType("IQ2_XS", "i-quant", QK_K, (_D, _f("qs", 32, 16, "grid indices and signs"),
                                          _f("scales", 8, 8, "4-bit sub-block scales")),
              "w = d * scale * grid[index]", "IQ2_XXS with explicit sub-block scales."),
    BlockType("IQ2_S", "i-quant", QK_K, (_D, _f("qs", 64, 8, "grid indices and signs"),
                                         _f("qh", 8, 8, "high index bits"), _f("scales", 8, 8, "4-bit sub-block scales")),
              "w = d * scale * grid[index]", "A larger 2-bit grid."),
    BlockType("IQ3_XXS", "i-quant", QK_K, (_D, _f("qs", 96, 8, "grid indices, signs and scales")),
              "w = d * scale * grid[index]", "Indices into a grid of 4-weight patterns."),
    BlockType("IQ3_S", "i-quant", QK_K, (_D, _f("qs", 64, 8, "grid indices"), _f("qh", 8, 8, "high index bits"),
                                         _f("signs", 32, 8, "signs"), _f("scales", 4, 8, "4-bit sub-block scales")),
              "w = d * scale * grid[index]", "A larger 3-bit grid with explicit signs."),
    BlockType("IQ4_NL", "i-quant", 32, (_D, _f("qs", 32, 4, "indices into 16 non-uniform levels")),
              "w = d * kvalues[q]", "Q4_0's layout with 16 unevenly spaced levels instead of a straight grid."),
    BlockType("IQ4_XS", "i-quant", QK_K, (_D, _f("scales_h", 1, 16, "high 2 bits of the 8 sub-block scales"),
                                          _f("scales_l", 8, 4, "low 4 bits of the 8 sub-block scales"),
                                          _f("qs", QK_K, 4, "indices into 16 non-uniform levels")),
              "w = d * (scale - 32) * kvalues[q]", "IQ4_NL's levels in super-blocks with 6-bit sub-block scales."),
    BlockType("MXFP4", "mx", 32, (_f("e", 1, 8, "E8M0 shared scale, a power of two"),
                                  _f("qs", 32, 4, "FP4 E2M1 elements")),
              "w = 2^(e - 127) * fp4(q)", "OCP MXFP4: FP4 elements with one power-of-two scale per 32."),
    BlockType("NVFP4", "mx", 64, (_f("d", 4, 8, "E4M3 scale of each sub-block of 16 (unsigned)"),
                                  _f("qs", 64, 4, "FP4 E2M1 elements")),
              "w = d[i / 16] * fp4(q)", "NVIDIA NVFP4: FP4 elements with an FP8 scale per 16 (ggml packs "
              "four such sub-blocks; the per-tensor FP32 scale is stored apart)."),
]

#: Every block type, by name.
BLOCK_TYPES: dict[str, BlockType] = {b.name: b for b in _ALL}


@dataclass(frozen=True)
class Mix:
    """A file type: ``name`` (``"Q4_K_M"``), ``base`` block type, ``published_bpw`` (Llama-3.1-8B's
    file average from :data:`MIX_SOURCE`, or None when the table has no row), ``note``."""

    name: str
    base: str
    published_bpw: float | None
    note: str


_SML = {"S": "small: almost every tensor at the base type",
        "M": "medium: some sensitive tensors (attn_v, ffn_down, the output matrix) one or two types up",
        "L": "large: more of the sensitive tensors, further up"}

_MIX_LIST = [
    Mix("Q2_K_S", "Q2_K", 2.9697, _SML["S"]),
    Mix("Q2_K", "Q2_K", 3.1593, "the 2-bit k-quant file type; attention and output tensors get bigger types"),
    Mix("Q3_K_S", "Q3_K", 3.6429, _SML["S"]),
    Mix("Q3_K_M", "Q3_K", None, _SML["M"]),
    Mix("Q3_K_L", "Q3_K", 4.2979, _SML["L"]),
    Mix("Q4_K_S", "Q4_K", 4.6672, _SML["S"]),
    Mix("Q4_K_M", "Q4_K", 4.8944, _SML["M"] + " (Q6_K for half of attn_v and ffn_down)"),
    Mix("Q5_K_S", "Q5_K", 5.5704, _SML["S"]),
    Mix("Q5_K_M", "Q5_K", 5.7036, _SML["M"]),
    Mix("Q6_K", "Q6_K", 6.5633, "every matrix Q6_K"),
    Mix("Q8_0", "Q8_0", 8.5008, "every matrix Q8_0"),
    Mix("IQ4_XS", "IQ4_XS", 4.4597, "every matrix IQ4_XS, some sensitive ones higher"),
    Mix("IQ4_NL", "IQ4_NL", 4.6818, "every matrix IQ4_NL, some sensitive ones higher"),
    Mix("F16", "F16", 16.0005, "no quantization"),
]

#: File types with a published average, by name.
MIXES: dict[str, Mix] = {m.name: m for m in _MIX_LIST}

# Checked at import: the four block sizes numerics.py states (ggml-common.h static_asserts).
assert BLOCK_TYPES["Q4_0"].block_bytes == 18 and BLOCK_TYPES["Q8_0"].block_bytes == 34
assert BLOCK_TYPES["Q4_K"].block_bytes == 144 and BLOCK_TYPES["Q6_K"].block_bytes == 210


def block_type(name: str) -> BlockType:
    """The block type called ``name`` (case-insensitive).

    Raises:
        ValueError: unknown name; the message lists the known ones.
    """
    key = name.strip().upper() if isinstance(name, str) else name
    try:
        return BLOCK_TYPES[key]
    except (KeyError, TypeError):
        raise ValueError(f"unknown GGUF block type {name!r}; known: {', '.join(BLOCK_TYPES)}") from None


@dataclass(frozen=True)
class NameInfo:
    """What a quantization name says: ``name`` as found (upper case), ``block`` (the base
    :class:`BlockType`), ``mix`` (S, M, L or ``""``), ``nominal_bits`` (the digit in the name; 16
    or 32 for floats), ``published_bpw`` (a file average from :data:`MIXES`, or None), ``parts``
    ([(piece, meaning)]: the name read piece by piece)."""

    name: str
    block: BlockType
    mix: str
    nominal_bits: int
    published_bpw: float | None
    parts: tuple[tuple[str, str], ...]


#: A quantization name inside any text (a file name such as "model.Q4_K_M.gguf").
_NAME = re.compile(r"(?<![A-Z0-9])(BF16|F16|F32|MXFP4|NVFP4|I?Q[1-8]_(?:K(?:_[SML])?|[01]|NL|XXS|XS|S|M))(?![A-Z0-9])")


def bytes_for(params: int, name: str) -> float:
    """Bytes of ``params`` weights all stored in the block type of quantization name ``name`` (no
    mix): params x bits per weight / 8 (the block's own layout, scales included).

    Raises:
        ValueError: no known name in ``name``.
    """
    return params * decode_name(name).block.bits_per_weight / 8


def decode_name(text: str) -> NameInfo:
    """Read a quantization name (``"Q4_K_M"``, ``"iq4_xs"``, ``"Llama-3-8B.Q5_K_S.gguf"``).

    Raises:
        ValueError: no known name in ``text``; the message lists examples.
    """
    if not isinstance(text, str):
        raise ValueError(f"name must be text, got {type(text).__name__}")
    m = _NAME.search(text.upper().replace("-", "_").replace(".", " "))
    examples = "Q8_0, Q4_0, Q4_1, Q5_K_M, Q4_K_S, IQ4_XS, F16"
    if not m:
        raise ValueError(f"no quantization name found in {text.strip()[:40]!r}; try one of {examples}")
    name = m.group(1)
    mix = ""
    base_name = name
    if re.fullmatch(r"Q\d_K_[SML]", name):
        mix = name[-1]
        base_name = name[:-2]
    if base_name not in BLOCK_TYPES:
        # Names of i-quant file types with no block of their own (IQ3_XS, IQ2_M, IQ3_M) map to a block.
        alias = {"IQ3_XS": "IQ3_XXS", "IQ3_M": "IQ3_S", "IQ2_M": "IQ2_S"}.get(base_name)
        if alias is None:
            raise ValueError(f"{name} is not a GGUF type this page knows; try one of {examples}")
        base_name = alias
    block = BLOCK_TYPES[base_name]
    digits = re.search(r"\d+", name)
    nominal = int(digits.group(0)) if digits else 4
    parts: list[tuple[str, str]] = []
    if block.family == "float":
        parts.append((name, f"{nominal}-bit floating point, no blocks"))
    elif block.family == "mx":
        parts.append((name, "OCP microscaling FP4: 4-bit floats sharing a power-of-two scale per 32"
                      if name == "MXFP4" else "NVIDIA's FP4: 4-bit floats sharing an FP8 E4M3 scale per 16"))
    else:
        lead = "IQ" if name.startswith("IQ") else "Q"
        parts.append((lead + str(nominal), ("i-quant: codes index a non-uniform grid, fitted with an importance "
                                            "matrix; " if lead == "IQ" else "") + f"about {nominal} bits per weight"))
        rest = name[len(lead) + len(str(nominal)) + 1:]
        if rest.startswith("K"):
            parts.append(("K", f"k-quant: super-blocks of {QK_K} weights whose sub-block scales are quantized too"))
        elif rest in ("0", "1"):
            parts.append((rest, "legacy: blocks of 32, one scale" + (" and one minimum" if rest == "1" else "")))
        elif rest:
            parts.append((rest, {"NL": "non-linear: 16 unevenly spaced levels",
                                 "XXS": "extra-extra small", "XS": "extra small", "S": "small",
                                 "M": "medium"}.get(rest, rest)))
        if mix:
            parts.append((mix, _SML[mix]))
    mixrow = MIXES.get(name)
    return NameInfo(name, block, mix, nominal, mixrow.published_bpw if mixrow else None, tuple(parts))


def _quant_choices() -> list[tuple[str, str]]:
    names = list(BLOCK_TYPES) + [n for n in MIXES if n not in BLOCK_TYPES]
    return [(n, n) for n in names]


QUANT_FORMAT = P.declare(P.Param(
    "format", "Quantization type", "choice", "Q4_K", key="quant_format", choices=_quant_choices(),
    help="A GGUF block type (Q4_0, Q4_K, IQ4_XS, MXFP4, ...) or file type (Q4_K_M, ...).",
))
