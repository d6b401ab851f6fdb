"""Peer test: descent.floats against ml_dtypes (jax-ml/ml_dtypes, an independent C++ implementation)
on every code point of the 8- and 4-bit formats, every 16-bit code, and rounding of float32 values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from descent import floats as F

ml = pytest.importorskip("ml_dtypes")
pytestmark = pytest.mark.peer

PEERS = {
    "fp8_e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
    "fp4_e2m1": "float4_e2m1fn",
    "e8m0": "float8_e8m0fnu",
    "bf16": "bfloat16",
    "fp16": "float16",
}


def _dtype(name):
    return np.float16 if name == "fp16" else getattr(ml, PEERS[name])


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@pytest.mark.parametrize("name", list(PEERS))
def test_every_code_decodes_like_ml_dtypes(name):
    f = F.get(name)
    raw = np.arange(f.codes, dtype=np.uint16 if f.bits == 16 else np.uint8)
    with np.errstate(invalid="ignore"):
        ref = raw.view(_dtype(name)).astype(np.float64)  # (codes,): the peer's value of each bit pattern
    bad = [c for c in range(f.codes) if not _same(f.decode(c), float(ref[c]))]
    assert not bad, f"{name}: codes decoding differently: {bad[:10]}"


@pytest.mark.parametrize("name", list(PEERS))
def test_table_matches_ml_dtypes_finfo(name):
    info, t = ml.finfo(_dtype(name)), F.get(name).table()
    assert t.max == float(info.max) and t.min_normal == float(info.smallest_normal)
    if t.min_subnormal is not None:
        assert t.min_subnormal == float(info.smallest_subnormal)
    if t.epsilon is not None:
        assert t.epsilon == float(info.eps)


@pytest.mark.parametrize("name", list(PEERS))
def test_rounding_float32_values_like_ml_dtypes(name):
    # float32 inputs, so both sides round once; scales from tiny (subnormal) to past the maximum.
    f = F.get(name)
    rng = np.random.default_rng(20261201)
    xs = np.concatenate([rng.standard_normal(4000) * s for s in (1e-6, 1e-3, 0.1, 1, 30, 1000, 1e5)])
    xs = xs.astype(np.float32)
    if name == "e8m0":
        xs = np.abs(xs)
        xs = xs[(xs > 2.0**-127) & (xs < 2.0**127)]  # E8M0 holds no zero, no sign
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is part of what is compared
        ref = xs.astype(_dtype(name)).astype(np.float64)
    bad = [(float(x), float(y)) for x, y in zip(xs, ref, strict=True) if not _same(f.round(float(x)).value, float(y))]
    assert not bad, f"{name}: {len(bad)} values round differently, e.g. {bad[:5]}"
    if name != "e8m0":  # the quantizers' value-only path (FloatFormat.round_value) against the peer too
        bad = [(float(x), float(y)) for x, y in zip(xs, ref, strict=True) if not _same(f.round_value(float(x)), float(y))]
        assert not bad, f"{name}: round_value: {len(bad)} values round differently, e.g. {bad[:5]}"


@pytest.mark.parametrize("name", [n for n in PEERS if n != "e8m0"])
def test_rounding_the_largest_doubles_like_ml_dtypes(name):
    # float64 extremes (issue 24: 1.7976931348623157e308 crashed): ml_dtypes casts float64 directly.
    f = F.get(name)
    xs = np.array([1.7976931348623157e308, -1.7976931348623157e308, 1e308, -1e300, 2.0**1023], dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = xs.astype(_dtype(name)).astype(np.float64)
    for x, y in zip(xs, ref, strict=True):
        assert _same(f.round(float(x)).value, float(y)), (name, x, y)
