"""Quantization of a list of weights: integers with one scale (symmetric or with a zero point),
FP4 with one scale per tensor, per MX block (MXFP4) or per NVFP4 block, and how far the result is
from the original (RMSE, SQNR).

Integer quantization (Jacob et al. 2018, "Quantization and Training of Neural Networks for
Efficient Integer-Arithmetic-Only Inference", arXiv:1712.05877, section 2.1, eq. 1):

* **symmetric** (absmax): ``s = max|w| / (2^(b-1) - 1)``, ``q = round(w / s)`` clipped to
  ``-(2^(b-1) - 1) .. 2^(b-1) - 1``, ``w_hat = s * q``; zero stays exactly zero and the grid is
  the same on both sides (LLM.int8()'s absmax quantization, Dettmers et al. 2022, arXiv:2208.07339,
  section 3.1, uses the same range for 8 bits). It has ``2^b - 1`` levels.
* **zero point** (asymmetric): the range ``[min(w, 0), max(w, 0)]`` is cut into ``2^b - 1`` steps,
  ``s = (hi - lo) / (2^b - 1)``, ``z = round(-lo / s)``, ``q = round(w / s) + z`` clipped to
  ``0 .. 2^b - 1``, ``w_hat = s * (q - z)``; it has ``2^b`` levels and fits a lopsided range.

Either way every weight inside the range is off by at most half a step, ``s / 2`` (the
quantize-dequantize bound the tests check).

FP4 with scales: the element is FP4 E2M1 (values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives),
stored together with a scale that stretches it to the weights:

* **per tensor**: one FP32 scale ``max|w| / 6`` for the whole list;
* **MXFP4** (OCP Microscaling Formats (MX) Specification v1.0, section 6.3): blocks of 32, each
  with a power-of-two scale ``2^(floor(log2(max|block|)) - 2)`` stored as E8M0 (2 is the exponent
  of FP4's largest value, 6 = 1.5 * 2^2); elements ``round(w / scale)`` with saturation at 6, so a
  block's largest value can be clipped by up to a quarter;
* **NVFP4** (NVIDIA, "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference",
  technical blog, 2025): blocks of 16, each with an FP8 E4M3 scale ``max|block| / 6`` expressed
  in units of one FP32 per-tensor scale ``max|w| / (6 * 448)``, so the E4M3 scale uses its whole range.

Bits per weight including the scales: MXFP4 4 + 8/32 = 4.25, NVFP4 4 + 8/16 = 4.5
(:mod:`descent.numerics`, whose constants these are).

Error measures: RMSE ``sqrt(mean((w - w_hat)^2))``; SQNR, the signal-to-quantization-noise
ratio, ``10 log10(sum w^2 / sum (w - w_hat)^2)`` in dB (about 6 dB per bit for a uniform grid:
Bennett 1948; Widrow and Kollar 2008, "Quantization Noise", ch. 5).

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from descent import floats, numerics
from descent.checks import is_int, is_real

__all__ = [
    "BlockQuant",
    "ErrorStats",
    "INT_BITS",
    "IntQuant",
    "block_int",
    "error_stats",
    "fp4_tensor",
    "histogram",
    "int_quantize",
    "mxfp4",
    "nvfp4",
]

#: Integer widths this module quantizes to (2 to 16 bits).
INT_BITS = range(2, 17)

_FP4 = floats.FORMATS["fp4_e2m1"]
_E4M3 = floats.FORMATS["fp8_e4m3"]
#: The largest FP4 E2M1 value (6) and the exponent of it (6 = 1.5 * 2^2): OCP MX v1.0 section 5.3.3.
FP4_MAX = _FP4.max
FP4_EMAX = 2
#: Past this multiple of the scale, saturating at 6 loses more than half of FP4's top step (4 to 6).
FP4_CLIP = 7.0
#: The largest FP8 E4M3 value (448), the range NVFP4's block scales are spread over.
E4M3_MAX = _E4M3.max
#: E8M0's exponent range (MX v1.0, section 5.4.1): scales 2^-127 .. 2^127.
E8M0_EMIN, E8M0_EMAX = -127, 127


@dataclass(frozen=True)
class IntQuant:
    """Integers with one scale: ``codes`` (ints), ``scale`` s (> 0), ``zero_point`` z (0 when
    symmetric), ``values`` the dequantized weights ``s * (q - z)``, ``levels`` how many codes the
    scheme uses (``2^b - 1`` symmetric, ``2^b`` with a zero point), ``bits`` b."""

    codes: list[int]
    scale: float
    zero_point: int
    values: list[float]
    levels: int
    bits: int


@dataclass(frozen=True)
class BlockQuant:
    """Values stored as FP4 elements with one scale per block: ``values`` (dequantized, same length
    as the input), ``scales`` (one decoded scale per block), ``block`` (values per block; the whole
    list for a per-tensor scale), ``clipped`` (how many values lay beyond 7 times their scale and were
    cut to 6 times it: more error than rounding alone would give)."""

    values: list[float]
    scales: list[float]
    block: int
    clipped: int


@dataclass(frozen=True)
class ErrorStats:
    """How far ``w_hat`` is from ``w``: ``rmse``, ``max_abs`` and ``mean_abs`` (the weights'
    units), ``sqnr_db`` (``None`` when the error is exactly zero: no noise to compare with)."""

    rmse: float
    max_abs: float
    mean_abs: float
    sqnr_db: float | None


def _check_values(values: Sequence[float]) -> list[float]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise ValueError(f"values must be a list of numbers, got {type(values).__name__}")
    if not values:
        raise ValueError("values must not be empty")
    if set(map(type, values)) == {float} and all(map(math.isfinite, values)):
        return list(values)  # the usual case, checked without a Python loop; else find the bad item below
    out = []
    for i, v in enumerate(values):
        if not is_real(v) or not math.isfinite(v):
            raise ValueError(f"values must be finite numbers; item {i} is {v!r}")
        out.append(float(v))
    return out


def _check_bits(bits: int) -> int:
    if not is_int(bits) or bits not in INT_BITS:
        raise ValueError(f"bits must be a whole number from {INT_BITS.start} to {INT_BITS.stop - 1}, got {bits!r}")
    return bits


def int_quantize(values: Sequence[float], bits: int, symmetric: bool = True) -> IntQuant:
    """Round ``values`` (N,) to ``bits``-bit integers with one scale (module docstring).

    Args:
        values: finite numbers, at least one.
        bits: 2 to 16.
        symmetric: absmax around zero (True) or a zero point over ``[min, max]`` (False).

    Returns:
        :class:`IntQuant`; an all-zero input gets scale 1 and all-zero codes.

    Raises:
        ValueError: empty or non-finite values, bits outside 2..16.
    """
    w = _check_values(values)
    b = _check_bits(bits)
    if symmetric:
        qmax = (1 << (b - 1)) - 1
        amax = max(abs(x) for x in w)
        s = amax / qmax if amax > 0 else 1.0
        codes = [max(-qmax, min(qmax, round(x / s))) for x in w]
        return IntQuant(codes, s, 0, [s * q for q in codes], 2 * qmax + 1, b)
    qmax = (1 << b) - 1
    lo, hi = min(min(w), 0.0), max(max(w), 0.0)
    s = (hi - lo) / qmax if hi > lo else 1.0
    z = round(-lo / s)
    codes = [max(0, min(qmax, round(x / s) + z)) for x in w]
    return IntQuant(codes, s, z, [s * (q - z) for q in codes], qmax + 1, b)


def block_int(values: Sequence[float], bits: int, block: int, symmetric: bool = True) -> BlockQuant:
    """:func:`int_quantize` on each run of ``block`` values (the last may be shorter), one scale
    each: the group-wise scheme of GPTQ/AWQ and of GGUF's Q4_0 (symmetric) and Q4_1 (zero point).

    Raises:
        ValueError: as :func:`int_quantize`; ``block`` not a whole number >= 1.
    """
    w = _check_values(values)
    if not is_int(block) or block < 1:
        raise ValueError(f"block must be a whole number >= 1, got {block!r}")
    out, scales = [], []
    for i in range(0, len(w), block):
        q = int_quantize(w[i:i + block], bits, symmetric)
        out += q.values
        scales.append(q.scale)
    return BlockQuant(out, scales, block, 0)


def _fp4_elements(w: list[float], scale: float) -> tuple[list[float], int]:
    """FP4 E2M1 elements of ``w / scale`` (saturating at 6), times ``scale``; and how many were
    clipped: ``|w / scale|`` beyond 7, so that saturating at 6 cost more than rounding would have
    (half of the top step, 4 to 6)."""
    vals, clipped = [], 0
    for x in w:
        q = x / scale
        if abs(q) > FP4_CLIP:
            clipped += 1
        vals.append(_FP4.round_value(q) * scale)
    return vals, clipped


def fp4_tensor(values: Sequence[float]) -> BlockQuant:
    """FP4 E2M1 with one FP32 scale ``max|w| / 6`` for the whole list.

    Raises:
        ValueError: empty or non-finite values.
    """
    w = _check_values(values)
    amax = max(abs(x) for x in w)
    s = amax / FP4_MAX if amax > 0 else 1.0
    vals, clipped = _fp4_elements(w, s)
    return BlockQuant(vals, [s], len(w), clipped)


def mx_scale(amax: float) -> float:
    """MXFP4's shared scale for a block whose largest magnitude is ``amax``:
    ``2^(floor(log2(amax)) - 2)``, kept within E8M0's 2^-127..2^127 (OCP MX v1.0, section 6.3);
    ``2^-127`` for an all-zero block."""
    if amax <= 0:
        return math.ldexp(1.0, E8M0_EMIN)
    e = math.frexp(amax)[1] - 1 - FP4_EMAX  # floor(log2(amax)) - emax_elem
    return math.ldexp(1.0, max(E8M0_EMIN, min(E8M0_EMAX, e)))


def mxfp4(values: Sequence[float], block: int = numerics.MX_BLOCK) -> BlockQuant:
    """MXFP4: FP4 E2M1 elements, one E8M0 power-of-two scale per ``block`` (32) values.

    Raises:
        ValueError: empty or non-finite values; ``block`` not >= 1.
    """
    w = _check_values(values)
    if not is_int(block) or block < 1:
        raise ValueError(f"block must be a whole number >= 1, got {block!r}")
    out, scales, clipped = [], [], 0
    for i in range(0, len(w), block):
        part = w[i:i + block]
        s = mx_scale(max(abs(x) for x in part))
        vals, c = _fp4_elements(part, s)
        out += vals
        scales.append(s)
        clipped += c
    return BlockQuant(out, scales, block, clipped)


def nvfp4(values: Sequence[float], block: int = numerics.NVFP4_BLOCK) -> BlockQuant:
    """NVFP4: FP4 E2M1 elements, one FP8 E4M3 scale per ``block`` (16) values, on top of one FP32
    scale ``max|w| / (6 * 448)`` for the whole list. A block whose E4M3 scale rounds to zero is
    stored as zeros. ``scales`` are the decoded scales (E4M3 value times the FP32 scale).

    Raises:
        ValueError: empty or non-finite values; ``block`` not >= 1.
    """
    w = _check_values(values)
    if not is_int(block) or block < 1:
        raise ValueError(f"block must be a whole number >= 1, got {block!r}")
    amax = max(abs(x) for x in w)
    g = amax / (FP4_MAX * E4M3_MAX) if amax > 0 else 1.0
    out, scales, clipped = [], [], 0
    for i in range(0, len(w), block):
        part = w[i:i + block]
        sb = _E4M3.round(max(abs(x) for x in part) / FP4_MAX / g).value  # <= 448: no overflow
        s = sb * g
        if s == 0:
            out += [0.0] * len(part)
        else:
            vals, c = _fp4_elements(part, s)
            out += vals
            clipped += c
        scales.append(s)
    return BlockQuant(out, scales, block, clipped)


def error_stats(original: Sequence[float], approx: Sequence[float]) -> ErrorStats:
    """RMSE, largest and mean absolute error, and SQNR (dB) of ``approx`` against ``original``.

    Raises:
        ValueError: different lengths, empty or non-finite values.
    """
    w, a = _check_values(original), _check_values(approx)
    if len(w) != len(a):
        raise ValueError(f"original and approx must have the same length, got {len(w)} and {len(a)}")
    err2 = math.fsum((x - y) ** 2 for x, y in zip(w, a, strict=True))
    sig2 = math.fsum(x * x for x in w)
    abs_err = [abs(x - y) for x, y in zip(w, a, strict=True)]
    sqnr = None if err2 == 0 else (10 * math.log10(sig2 / err2) if sig2 > 0 else -math.inf)
    if sqnr is not None and not math.isfinite(sqnr):
        sqnr = None
    return ErrorStats(math.sqrt(err2 / len(w)), max(abs_err), math.fsum(abs_err) / len(w), sqnr)


def histogram(values: Sequence[float], bins: int, lo: float, hi: float) -> list[int]:
    """Counts of ``values`` in ``bins`` equal bins over ``[lo, hi]`` (values outside are ignored;
    ``hi`` itself falls in the last bin).

    Raises:
        ValueError: ``bins`` not 1..10,000, ``lo >= hi``, non-finite bounds.
    """
    if not is_int(bins) or not 1 <= bins <= 10_000:
        raise ValueError(f"bins must be a whole number from 1 to 10,000, got {bins!r}")
    if not (is_real(lo) and is_real(hi) and math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"need finite lo < hi, got {lo!r} and {hi!r}")
    counts = [0] * bins
    width = (hi - lo) / bins
    for x in _check_values(values):
        if lo <= x <= hi:
            counts[min(bins - 1, int((x - lo) / width))] += 1
    return counts
