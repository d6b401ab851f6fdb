"""descent.floats: formats bit by bit, checked by hand against the specifications.

The peer test against ml_dtypes (every code of the 8- and 4-bit formats) is test_floats_peer.py;
this module imports only the core, so it also runs inside Pyodide.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descent import floats as F


@pytest.mark.parametrize("name,bits,maximum", [
    # IEEE 754 binary16: (2 - 2^-10) * 2^15 = 65,504; binary32: (2 - 2^-23) * 2^127.
    ("fp16", 16, 65504.0), ("fp32", 32, (2 - 2**-23) * 2.0**127),
    # bfloat16: (2 - 2^-7) * 2^127 = 3.3895e38 (Kalamkar et al. 2019, table 1).
    ("bf16", 16, (2 - 2**-7) * 2.0**127),
    # OFP8 table 1: E4M3 max 448 = 1.75 * 2^8 (S.1111.110), E5M2 max 57,344 = 1.75 * 2^15.
    ("fp8_e4m3", 8, 448.0), ("fp8_e5m2", 8, 57344.0),
    # MX v1.0 5.3.3: E2M1 max 6 = 1.5 * 2^2; 5.4.1: E8M0 max 2^127.
    ("fp4_e2m1", 4, 6.0), ("e8m0", 8, 2.0**127),
])
def test_layout_and_largest_value(name, bits, maximum):
    f = F.get(name)
    assert f.bits == bits and f.max == maximum


def test_smallest_values_by_hand():
    # FP16: min normal 2^-14, min subnormal 2^-24; E4M3: 2^-6 and 2^-9; E2M1: 1 and 0.5.
    assert (F.get("fp16").min_normal, F.get("fp16").min_subnormal) == (2.0**-14, 2.0**-24)
    assert (F.get("fp8_e4m3").min_normal, F.get("fp8_e4m3").min_subnormal) == (2.0**-6, 2.0**-9)
    assert (F.get("fp4_e2m1").min_normal, F.get("fp4_e2m1").min_subnormal) == (1.0, 0.5)
    assert F.get("e8m0").min_subnormal is None and F.get("e8m0").min_normal == 2.0**-127


def test_fp4_values_are_the_spec_list():
    # MX v1.0, table 5: E2M1 encodes 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives.
    f = F.get("fp4_e2m1")
    assert [f.decode(c) for c in range(8)] == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    assert [f.decode(c) for c in range(8, 16)] == [-0.0, -0.5, -1, -1.5, -2, -3, -4, -6]


def test_special_codes():
    e4 = F.get("fp8_e4m3")
    assert e4.table().infinity == () and e4.table().nan == ("0 1111 111", "1 1111 111")
    assert math.isnan(e4.decode(0x7F)) and e4.decode(0x7E) == 448
    e5 = F.get("fp8_e5m2")
    assert e5.decode(0x7C) == math.inf and e5.decode(0xFC) == -math.inf and math.isnan(e5.decode(0x7D))
    assert F.get("fp4_e2m1").table().nan == () and F.get("e8m0").table().nan == ("11111111",)
    # FP16 0x3C00 = 1.0, 0x3555 ~ 1/3 (IEEE 754 examples).
    assert F.get("fp16").decode(0x3C00) == 1.0 and F.get("fp16").decode(0x3555) == 0.333251953125


def test_rounding_by_hand():
    # 0.1 in BF16: 0x3DCD = 1.6015625 * 2^-4 = 0.10009765625 (the nearest of 0x3DCC, 0x3DCD).
    r = F.get("bf16").round(0.1)
    assert (r.code, r.value) == (0x3DCD, 0.10009765625)
    # 0.1 in E4M3: 1.625 * 2^-4 = 0.1015625 (0x1D); 470 overflows past 448 + 16 to not-a-number.
    assert F.get("fp8_e4m3").round(0.1).value == 0.1015625
    o = F.get("fp8_e4m3").round(470)
    assert o.overflow and o.kind == "nan"
    # 464 is exactly between 448 and 480: ties to even keeps 448 (mantissa 110).
    assert F.get("fp8_e4m3").round(464).value == 448
    # E5M2 and FP16 overflow to infinity; E2M1 saturates at 6.
    assert F.get("fp16").round(70000).value == math.inf
    assert F.get("fp4_e2m1").round(1e9).value == 6 and F.get("fp4_e2m1").round(1e9).overflow
    # E2M1 ties to even: 0.25 -> 0, 0.75 -> 1, 2.5 -> 2, 5 -> 4.
    assert [F.get("fp4_e2m1").round(x).value for x in (0.25, 0.75, 2.5, 5)] == [0, 1, 2, 4]
    # E8M0: the nearer power of two, a tie going up: 3 -> 4, 2.9 -> 2.
    assert F.get("e8m0").round(3).value == 4 and F.get("e8m0").round(2.9).value == 2


def test_bad_input():
    with pytest.raises(ValueError, match="no sign and no zero"):
        F.get("e8m0").round(-1.0)
    with pytest.raises(ValueError, match="no code for not-a-number"):
        F.get("fp4_e2m1").round(math.nan)
    with pytest.raises(ValueError, match="must be a number"):
        F.get("fp16").round("1")
    with pytest.raises(ValueError, match="unknown float format"):
        F.get("fp7")
    with pytest.raises(ValueError, match="0 to 255"):
        F.get("fp8_e4m3").decode(256)


@pytest.mark.parametrize("text,kind,value", [
    ("0.1", "number", 0.1), (" -3e-5 ", "number", -3e-5), ("1,000", "number", 1000.0),
    ("0x3C00", "code", 0x3C00), ("0b0011 1100 0000 0000", "code", 0x3C00),
])
def test_parse_value(text, kind, value):
    assert F.parse_value("fp16", text) == (kind, value)


@pytest.mark.parametrize("text,msg", [
    ("", "empty"), ("abc", "not a number"), ("0x1FFFF", "does not fit"), ("0b101", "has 16 bits"),
    ("-0x3C", "no sign"), ("0xZZ", "not a code"),
])
def test_parse_value_errors(text, msg):
    with pytest.raises(ValueError, match=msg):
        F.parse_value("fp16", text)


FORMAT_NAMES = [n for n in F.FORMATS if n != "e8m0"]


@settings(deadline=None, max_examples=200)
@given(name=st.sampled_from(FORMAT_NAMES), x=st.floats(-1e6, 1e6, allow_nan=False))
def test_round_is_nearest(name, x):
    # No value of the format lies closer to x than the rounded one (finite, no overflow).
    f = F.get(name)
    r = f.round(x)
    if r.overflow or not math.isfinite(r.value):
        assert abs(x) > f.max
        return
    assert f.decode(r.code) == r.value and r.error == r.value - x
    neighbours = [f.decode(c) for c in ((r.code - 1) % f.codes, (r.code + 1) % f.codes)]
    for n in neighbours:
        if math.isfinite(n):
            assert abs(r.value - x) <= abs(n - x)


@settings(deadline=None, max_examples=200)
@given(name=st.sampled_from(list(F.FORMATS)), data=st.data())
def test_a_stored_value_rounds_to_itself(name, data):
    f = F.get(name)
    code = data.draw(st.integers(0, f.codes - 1))
    x = f.decode(code)
    if math.isfinite(x):
        r = f.round(x)
        assert r.value == x and r.error == 0 and (r.code == code or x == 0)


def test_value_text():
    assert F.value_text(0.1) == "0.1" and F.value_text(-0.0) == "-0" and F.value_text(math.inf) == "infinity"
    assert F.value_text(math.nan) == "not a number"


@pytest.mark.parametrize("name", list(F.FORMATS))
@pytest.mark.parametrize("x", [1.7976931348623157e308, -1.7976931348623157e308, 1e308, 2.0**1023])
def test_the_largest_doubles_round_without_crashing(name, x):
    # Issue 24: the largest double rounded up past binary64 itself (OverflowError). Each format
    # answers by its own rule: IEEE formats overflow to infinity, the FN formats to not-a-number,
    # E2M1 saturates at its largest value; E8M0 overflows to not-a-number and refuses negatives.
    f = F.get(name)
    if name == "e8m0" and x < 0:
        with pytest.raises(ValueError, match="no sign"):
            f.round(x)
        return
    r = f.round(x)
    assert r.overflow
    if name in ("fp8_e4m3", "e8m0"):
        assert math.isnan(r.value)
    elif name == "fp4_e2m1":
        assert r.value == math.copysign(6.0, x)
    else:
        assert r.value == math.copysign(math.inf, x)


def test_nan_count_counts_codes_not_patterns():
    """Issue 23: Part 2's float table counts NaN codes: FP32 2 x (2^23 - 1), FP16 2 x (2^10 - 1),
    BF16 2 x (2^7 - 1); the small formats by decoding every code."""
    from descent.floats import get

    assert [get(n).table().nan_count for n in ("fp32", "fp16", "bf16")] == [16_777_214, 2_046, 254]
    for n in ("fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "e8m0"):
        f = get(n)
        assert f.table().nan_count == sum(f.kind(c) == "nan" for c in range(f.codes))


def test_overflow_above_is_where_rounding_overflows():
    # Issue 23: E4M3's largest is 448 = 1.75 x 2^8; the next step would be 480, so the midpoint is
    # 464, which ties to the even mantissa (110) and rounds to 448; anything above becomes NaN in a
    # non-saturating cast (ml_dtypes). FP16: 65504 + 16 = 65520, a tie to the odd 1111111111, so it
    # overflows to infinity itself.
    from descent.floats import get

    e4m3 = get("fp8_e4m3")
    assert e4m3.table().overflow_above == 464.0
    assert e4m3.round(464.0).value == 448.0 and not e4m3.round(464.0).overflow
    assert e4m3.round(464.5).overflow and math.isnan(e4m3.round(464.5).value)
    fp16 = get("fp16")
    assert fp16.table().overflow_above == 65520.0
    assert fp16.round(65519.0).value == 65504.0 and fp16.round(65520.0).overflow
    assert get("e8m0").table().overflow_above is None
