"""Number formats for weights and the KV cache: how many bits one stored value costs.

A *precision* here is a storage format. Its cost is **bits per weight (bpw)**, including the
scale factors that block-scaled formats store alongside the values:

    bpw = element_bits + scale_bits / block_size

so MXFP4 (4-bit elements, one 8-bit scale per 32) costs 4.25 bpw, not 4. Weight bytes are then

    bytes = n_params * bpw / 8

Formats and sources:

* FP32, FP16, BF16: IEEE 754-2008 binary32/binary16; bfloat16 (Kalamkar et al. 2019, arXiv:1905.12322).
* FP8 (E4M3/E5M2): Micikevicius et al. 2022, "FP8 Formats for Deep Learning", arXiv:2209.05433.
  Stored with one FP32 scale per tensor, which is negligible (4 bytes per matrix).
* INT8: weight-only or W8A8 with one scale per output channel (LLM.int8(), Dettmers et al. 2022;
  SmoothQuant, Xiao et al. 2023): D scales for a D x F matrix, negligible.
* INT4: group-wise weight-only quantization as in GPTQ (Frantar et al. 2022) and AWQ (Lin et al.
  2023), group size 128 with one FP16 scale per group: 4 + 16/128 = 4.125 bpw (zero points, where
  used, are not counted).
* MXFP4: OCP Microscaling Formats (MX) Specification v1.0, section 5: FP4 E2M1 elements in blocks
  of 32 sharing one E8M0 (8-bit power-of-two) scale: 4 + 8/32 = 4.25 bpw.
* NVFP4: NVIDIA (Blackwell; "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference",
  NVIDIA technical blog, 2025; TensorRT documentation): FP4 E2M1 in blocks of 16 sharing one FP8
  E4M3 scale: 4 + 8/16 = 4.5 bpw, plus one FP32 scale per tensor (negligible, not counted).
* GGUF / llama.cpp block formats (ggml-common.h): ``block_q8_0`` = FP16 scale + 32 int8 = 34 bytes
  per 32 weights = 8.5 bpw; ``block_q4_0`` = FP16 scale + 32 nibbles = 18 bytes per 32 = 4.5 bpw;
  ``block_q4_K`` = 144 bytes per 256-weight super-block = 4.5 bpw; ``block_q6_K`` = 210 bytes per
  256 = 6.5625 bpw.
* Q4_K_M is a *mix*: llama.cpp's quantizer keeps some tensors (half of attn_v and ffn_down, the
  output head) at Q6_K and the rest at Q4_K. Its bpw therefore depends on the model; we use the
  published average for Llama-3.1-8B, 4.8944 bpw, from the table in llama.cpp's
  ``tools/quantize/README.md`` (file size / parameter count, so it includes the embeddings).

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from dataclasses import dataclass

from descent import params as P
from descent.checks import is_real
from descent.units import format_limit, format_number

__all__ = [
    "ELEMENT_BYTES",
    "KV_PRECISIONS",
    "MATMUL_PRECISION",
    "PRECISIONS",
    "Precision",
    "kv_precision",
    "precision",
    "weight_bytes",
]

BITS_PER_BYTE = 8

# Scale-factor widths, bits.
FP32_SCALE_BITS = 32
FP16_SCALE_BITS = 16
E8M0_SCALE_BITS = 8  # OCP MX v1.0, section 5.3: shared scale is an 8-bit exponent
E4M3_SCALE_BITS = 8  # NVFP4 block scale is FP8 E4M3

# Block sizes, values per scale.
MX_BLOCK = 32  # OCP MX v1.0, section 5: k = 32
NVFP4_BLOCK = 16  # NVIDIA NVFP4 micro-block
GGML_Q8_0_BLOCK = 32  # ggml-common.h QK8_0
GGML_Q4_0_BLOCK = 32  # ggml-common.h QK4_0
GGML_K_SUPERBLOCK = 256  # ggml-common.h QK_K
INT4_GROUP = 128  # GPTQ / AWQ default group size
FP8_BLOCK_128 = 128 * 128  # DeepSeek-V3: one FP32 scale per 128 x 128 weight block

# Bytes per GGUF block, ggml-common.h.
GGML_Q8_0_BLOCK_BYTES = 34  # sizeof(ggml_half) + QK8_0 int8
GGML_Q4_0_BLOCK_BYTES = 18  # sizeof(ggml_half) + QK4_0 / 2
GGML_Q4_K_BLOCK_BYTES = 144  # 2 * sizeof(ggml_half) + K_SCALE_SIZE (12) + QK_K / 2
GGML_Q6_K_BLOCK_BYTES = 210  # QK_K/2 + QK_K/4 + QK_K/16 + sizeof(ggml_half)
GGML_Q5_K_BLOCK_BYTES = 176  # 2 * sizeof(ggml_half) + K_SCALE_SIZE (12) + QK_K/8 + QK_K/2

#: Average bpw of a Q4_K_M file of Llama-3.1-8B: llama.cpp tools/quantize/README.md, table
#: "meta-llama/Llama-3.1-8B", row Q4_K_M (4.8944 bits/weight, 4.58 GiB).
Q4_K_M_PUBLISHED_BPW = 4.8944


@dataclass(frozen=True)
class Precision:
    """A storage format for weights or cached keys/values.

    Attributes:
        name: id, e.g. ``"mxfp4"``.
        label: display name, e.g. ``"MXFP4"``.
        bits_per_weight: bits stored per value, block scales included (float, > 0).
        element_bits: bits of one element before scales (16 for BF16, 4 for MXFP4).
        block_size: values sharing one scale, or 0 when scales are negligible (per tensor/channel)
            or the format is a mix of block layouts (Q4_K_M).
        scale_bits: bits of one block scale (0 when ``block_size`` is 0).
        description: what the format is, in one sentence.
        source: where its layout is defined.
    """

    name: str
    label: str
    bits_per_weight: float
    element_bits: int
    block_size: int
    scale_bits: int
    description: str
    source: str

    @property
    def bytes_per_weight(self) -> float:
        """``bits_per_weight / 8``."""
        return self.bits_per_weight / BITS_PER_BYTE


def _blocked(name, label, element_bits, block_size, scale_bits, description, source) -> Precision:
    return Precision(
        name=name,
        label=label,
        bits_per_weight=element_bits + scale_bits / block_size,
        element_bits=element_bits,
        block_size=block_size,
        scale_bits=scale_bits,
        description=description,
        source=source,
    )


def _plain(name, label, bits, description, source) -> Precision:
    return Precision(name, label, float(bits), bits, 0, 0, description, source)


def _ggml(name, label, element_bits, block, block_bytes, description, source) -> Precision:
    bpw = block_bytes * BITS_PER_BYTE / block
    return Precision(
        name, label, bpw, element_bits, block, round(bpw * block) - element_bits * block, description, source
    )


_ALL = [
    _plain(
        "fp32",
        "FP32",
        32,
        "IEEE 754 single precision: 1 sign, 8 exponent, 23 mantissa bits.",
        "IEEE 754-2008 binary32",
    ),
    _plain(
        "bf16",
        "BF16",
        16,
        "bfloat16: FP32's 8-bit exponent with a 7-bit mantissa.",
        "Kalamkar et al. 2019, arXiv:1905.12322",
    ),
    _plain(
        "fp16", "FP16", 16, "IEEE 754 half precision: 5 exponent, 10 mantissa bits.", "IEEE 754-2008 binary16"
    ),
    _plain(
        "fp8",
        "FP8",
        8,
        "FP8 E4M3 with one FP32 scale per tensor (negligible, not counted).",
        "Micikevicius et al. 2022, 'FP8 Formats for Deep Learning', arXiv:2209.05433",
    ),
    _plain(
        "int8",
        "INT8",
        8,
        "8-bit integers with one scale per output channel (negligible, not counted).",
        "Dettmers et al. 2022 (LLM.int8()), arXiv:2208.07339; Xiao et al. 2023 (SmoothQuant)",
    ),
    _blocked(
        "int4",
        "INT4 (g128)",
        4,
        INT4_GROUP,
        FP16_SCALE_BITS,
        "4-bit integers in groups of 128 sharing one FP16 scale (GPTQ/AWQ style; zero points not counted).",
        "Frantar et al. 2022 (GPTQ), arXiv:2210.17323; Lin et al. 2023 (AWQ), arXiv:2306.00978",
    ),
    _blocked(
        "mxfp4",
        "MXFP4",
        4,
        MX_BLOCK,
        E8M0_SCALE_BITS,
        "FP4 E2M1 in blocks of 32 sharing one 8-bit power-of-two (E8M0) scale.",
        "OCP Microscaling Formats (MX) Specification v1.0, section 5",
    ),
    _blocked(
        "nvfp4",
        "NVFP4",
        4,
        NVFP4_BLOCK,
        E4M3_SCALE_BITS,
        "FP4 E2M1 in blocks of 16 sharing one FP8 E4M3 scale, plus one FP32 scale per tensor (negligible).",
        "NVIDIA technical blog 'Introducing NVFP4 for Efficient and Accurate Low-Precision Inference' (2025); TensorRT docs",
    ),
    _ggml(
        "q8_0",
        "GGUF Q8_0",
        8,
        GGML_Q8_0_BLOCK,
        GGML_Q8_0_BLOCK_BYTES,
        "llama.cpp block of 32 int8 values with one FP16 scale: 34 bytes per 32 weights.",
        "ggml-common.h, block_q8_0 (llama.cpp / ggml)",
    ),
    _ggml(
        "q4_0",
        "GGUF Q4_0",
        4,
        GGML_Q4_0_BLOCK,
        GGML_Q4_0_BLOCK_BYTES,
        "llama.cpp block of 32 4-bit values with one FP16 scale: 18 bytes per 32 weights.",
        "ggml-common.h, block_q4_0 (llama.cpp / ggml)",
    ),
    Precision(
        "q4_k_m",
        "GGUF Q4_K_M",
        Q4_K_M_PUBLISHED_BPW,
        4,
        0,
        0,  # a mix: no single block layout
        "llama.cpp mix: Q4_K (144 bytes per 256 weights, 4.5 bpw) for most tensors, Q6_K (6.5625 bpw) "
        "for half of attn_v/ffn_down and the output head; published average for Llama-3.1-8B.",
        "llama.cpp tools/quantize/README.md, Llama-3.1-8B table (4.8944 bpw); ggml-common.h block_q4_K, block_q6_K",
    ),
    Precision(
        "q5_k_m",
        "GGUF Q5_K_M",
        GGML_Q5_K_BLOCK_BYTES * BITS_PER_BYTE / GGML_K_SUPERBLOCK,
        5,
        0,
        0,  # a mix: no single block layout
        "llama.cpp mix: Q5_K (176 bytes per 256 weights, 5.5 bpw) for most tensors, Q6_K for half of "
        "attn_v/ffn_down and the output head (the mix is computed per tensor by descent.weights).",
        "llama.cpp src/llama-quant.cpp llama_tensor_get_type; ggml-common.h block_q5_K, block_q6_K",
    ),
    _ggml(
        "q6_k",
        "GGUF Q6_K",
        6,
        GGML_K_SUPERBLOCK,
        GGML_Q6_K_BLOCK_BYTES,
        "llama.cpp super-block of 256 6-bit values with 8-bit sub-block scales and one FP16 scale: "
        "210 bytes per 256 weights.",
        "ggml-common.h, block_q6_K (llama.cpp / ggml)",
    ),
    _blocked(
        "fp8_b128",
        "FP8, 128x128 blocks",
        8,
        FP8_BLOCK_128,
        FP32_SCALE_BITS,
        "FP8 E4M3 with one FP32 scale per 128 x 128 block of a matrix, as DeepSeek-V3 ships its weights.",
        "DeepSeek-V3 README_WEIGHTS.md (weight_block_size [128, 128], weight_scale_inv float32); "
        "DeepSeek-V3 Technical Report, arXiv:2412.19437, section 3.3.2",
    ),
]

#: Weight precisions by name: fp32 bf16 fp16 fp8 int8 int4 mxfp4 nvfp4 q8_0 q4_0 q4_k_m q5_k_m q6_k fp8_b128.
PRECISIONS: dict[str, Precision] = {p.name: p for p in _ALL}

#: Precisions a KV cache may be stored in. BF16/FP16 are the engines' defaults (llama.cpp F16, vLLM
#: and SGLang the model's own dtype: ``catalog.measurements.ENGINE_KV_DEFAULT``); FP8 is vLLM's
#: ``kv_cache_dtype="fp8"`` and TensorRT-LLM's FP8 KV cache; INT8 and INT4 are per-token/group
#: quantized caches (e.g. KIVI, Liu et al. 2024, arXiv:2402.02750); q8_0 and q4_0 are llama.cpp's
#: ``--cache-type-k/v`` options. Block formats (MXFP4, NVFP4, Q4_K_M) are weight formats only here.
KV_PRECISIONS: dict[str, Precision] = {
    n: PRECISIONS[n] for n in ("fp32", "bf16", "fp16", "fp8", "int8", "q8_0", "q4_0", "int4")
}

#: The precision a weight format's matmuls run in, where the chip has a dense peak for it: FP8
#: weights multiply in FP8 (vLLM's and TensorRT-LLM's FP8 GEMMs, 128 x 128 block scales included)
#: and MXFP4/NVFP4 in FP4 (Blackwell's FP4 tensor cores); every other format is weight-only (INT,
#: the GGUF k-quants: dequantized to 16 bits before each multiply, as llama.cpp's and vLLM's
#: kernels do) or 16/32-bit, and runs at the 16-bit peak. THE rule: descent.step.compute_precision
#: applies it against the chip's peaks (catalog ``Accelerator.peak``).
MATMUL_PRECISION: dict[str, str] = {"fp8": "fp8", "fp8_b128": "fp8", "mxfp4": "fp4", "nvfp4": "fp4"}

#: Bytes per element of the formats a tensor core multiplies (Part 4's tiles): FP32 4, BF16/FP16 2,
#: FP8 1, FP4 half a byte (two values per byte).
ELEMENT_BYTES: dict[str, float] = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "fp4": 0.5}

#: The weight choice that stores each group as its publisher released it (descent.weights).
RELEASED = "released"


def _precision_choices(table: dict[str, Precision], released: bool) -> list[tuple[str, str]]:
    out = [(RELEASED, "As released (each group as published)")] if released else []
    for n, p in table.items():
        mix = released and p.block_size == 0 and p.name.startswith("q")  # a GGUF mix: bits vary by tensor
        out.append((n, f"{p.label} ({'mix, ' if mix else ''}{format_number(p.bits_per_weight, 4, trim=True)} bits)"))
    return out


_WEIGHT_CHOICES = _precision_choices(PRECISIONS, released=True)
_KV_CHOICES = _precision_choices(KV_PRECISIONS, released=False)
P.provide("weights", lambda: _WEIGHT_CHOICES)
P.provide("kv", lambda: _KV_CHOICES)
P.provide("element", lambda: [(n, f"{n.upper()} ({format_limit(b)} byte{'' if b == 1 else 's'})")
                              for n, b in ELEMENT_BYTES.items()])

# The block formats' stated bpw, checked at import so a typo in a constant cannot ship.
assert PRECISIONS["q4_0"].bits_per_weight == 4.5 and PRECISIONS["q8_0"].bits_per_weight == 8.5
assert PRECISIONS["mxfp4"].bits_per_weight == 4.25 and PRECISIONS["nvfp4"].bits_per_weight == 4.5
assert GGML_Q4_K_BLOCK_BYTES * BITS_PER_BYTE / GGML_K_SUPERBLOCK == 4.5
assert GGML_Q6_K_BLOCK_BYTES * BITS_PER_BYTE / GGML_K_SUPERBLOCK == 6.5625


def precision(name: str | Precision) -> Precision:
    """The weight precision called ``name`` (a Precision passes through).

    Raises:
        ValueError: unknown name; the message lists the allowed names.
    """
    if isinstance(name, Precision):
        return name
    try:
        return PRECISIONS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown weight precision {name!r}; allowed: {', '.join(PRECISIONS)}") from None


_precision = precision  # weight_bytes's argument is called `precision`


def kv_precision(name: str | Precision) -> Precision:
    """The KV-cache precision called ``name`` (a Precision passes through if it is a KV precision).

    Raises:
        ValueError: not one of ``KV_PRECISIONS``; the message lists the allowed names.
    """
    key = name.name if isinstance(name, Precision) else name
    try:
        return KV_PRECISIONS[key]
    except (KeyError, TypeError):
        raise ValueError(f"unknown KV-cache precision {key!r}; allowed: {', '.join(KV_PRECISIONS)}") from None


def weight_bytes(n_params: float, precision: str | Precision) -> float:
    """Bytes to store ``n_params`` values in a precision: ``n_params * bits_per_weight / 8``.

    Args:
        n_params: number of values (parameters or cached elements), >= 0.
        precision: a name in ``PRECISIONS`` or a ``Precision``.

    Returns:
        bytes (float: block formats give fractional bytes for counts that are not whole blocks).

    Raises:
        ValueError: ``n_params`` negative or not a finite number; unknown precision.
    """
    if (
        not is_real(n_params)
        or not n_params >= 0
        or n_params == float("inf")
    ):
        raise ValueError(f"n_params must be a number of values >= 0, got {n_params!r}")
    p = _precision(precision)
    return n_params * p.bits_per_weight / BITS_PER_BYTE
