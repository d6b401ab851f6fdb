"""Tests for descent.units: unit constants, formatting with significant figures, parsing."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from descent import units
from descent.units import (
    GB,
    TB_PER_S,
    GiB,
    format_bytes,
    format_count,
    format_int,
    format_number,
    format_percent,
    format_rate,
    format_si,
    format_time,
    parse_bytes,
    parse_count,
    round_sig,
    visible_whitespace,
)


def test_constants_are_decimal_and_binary():
    # IEC 80000-13: GB = 10**9 bytes, GiB = 2**30 = 1,073,741,824 bytes; TB/s = 10**12 bytes/s.
    assert GB == 1_000_000_000
    assert GiB == 1_073_741_824
    assert units.KiB == 1024 and units.MiB == 1024**2 and units.TiB == 1024**4
    assert units.KB == 1000 and units.MB == 1000**2 and units.TB == 1000**4
    assert TB_PER_S == 1e12


def test_h100_capacity_formats_as_80_gib_and_85_9_gb():
    # 80 GiB = 80 * 2**30 = 85,899,345,920 bytes = 85.899... GB -> 3 significant figures "85.9 GB".
    assert format_bytes(85_899_345_920, "GiB") == "80.0 GiB"
    assert format_bytes(85_899_345_920, "GB") == "85.9 GB"


def test_auto_units_pick_the_prefix():
    # 141 GiB = 151,397,597,184 bytes: decimal auto -> 151 GB; binary auto -> 141 GiB.
    assert format_bytes(151_397_597_184) == "151 GB"
    assert format_bytes(151_397_597_184, "auto-binary") == "141 GiB"
    # 999.6 GB rounds to 1,000 GB at 3 figures, so the prefix moves up: 1.00 TB.
    assert format_bytes(999.6e9) == "1.00 TB"
    assert format_bytes(512) == "512 B"
    # A shortfall is negative and keeps its sign.
    assert format_bytes(-3e9) == "-3.00 GB"


def test_format_si_keeps_significant_trailing_zeros():
    # H200 bandwidth 4.8e12 B/s at 3 figures: "4.80 TB/s"; 0.00123 s = 1.23 ms.
    assert format_si(4.8e12, "B/s") == "4.80 TB/s"
    assert format_si(0.00123, "s") == "1.23 ms"
    assert format_si(989.4e12, "FLOP/s") == "989 TFLOP/s"
    assert format_si(0, "B") == "0 B"
    assert format_rate(819e9) == "819 GB/s"
    assert format_si(21e15, "B/s", sig=2) == "21 PB/s"


def test_format_count_words_short_and_exact():
    # Llama 3.1 70B's exact count 70,553,706,496 -> "70.6 billion" in prose and widgets, "70.6B" in a
    # narrow column (short), every digit when exact; SmolLM2's 134,515,008 -> 135 million / 135M.
    assert format_count(70_553_706_496) == "70.6 billion"
    assert format_count(70_553_706_496, "short") == "70.6B"
    assert format_count(70_553_706_496, "exact") == "70,553,706,496"
    assert format_count(134_515_008) == "135 million"
    assert format_count(134_515_008, "short") == "135M"
    assert format_count(1e12) == "1 trillion"
    assert format_count(135) == "135"
    with pytest.raises(ValueError, match="unit must be one of auto, short, exact"):
        format_count(1, "gazillion")


def test_percent_time_and_visible_whitespace():
    # gpt-oss-120b's active share 5.13 / 116.83 = 0.04391 -> "4.39%" (3 figures) or "4.4%" (1 decimal).
    assert format_percent(0.04391) == "4.39%" and format_percent(0.04391, decimals=1) == "4.4%"
    assert format_percent(0.05, trim=False) == "5.00%"
    assert format_time(0.0123) == "12.3 ms" and format_time(90) == "1.50 min" and format_time(0) == "0 s"
    assert format_int(8192) == "8,192"
    with pytest.raises(ValueError, match="needs an int"):
        format_int(True)
    # Every whitespace character is made visible, not only the space.
    assert visible_whitespace(" a\n\tb\r\u00a0") == "\u2423a\u21b5\u21e5b\u240d<U+00A0>"


def test_format_number_is_the_one_number_formatter():
    # Hand-worked at 3 significant figures: 12,345.6 -> 12,300; 0.5 -> 0.500 (zeros show the figures);
    # 9.996 rounds up into a new digit -> 10.0 (not 10.00); 1.5e20 is outside [1e-4, 1e15) -> exponent.
    assert format_number(12_345.6) == "12,300"
    assert format_number(0.5) == "0.500"
    assert format_number(9.996) == "10.0"
    assert format_number(0.000123456) == "0.000123"
    assert format_number(1.5e20) == "1.50e+20"
    assert format_number(-3.5) == "-3.50"
    assert format_number(0) == "0"
    # trim drops the trailing zeros running text does without: 80.0 -> 80, 1.50 -> 1.5, 1.00e-05 -> 1e-05.
    assert format_number(80.0, trim=True) == "80"
    assert format_number(1.5, trim=True) == "1.5"
    assert format_number(1e-5, trim=True) == "1e-05"
    assert format_number(1234, 4, trim=True) == "1,234"
    # The same trim on bytes and SI rates: 80 GiB exactly; 3.35e12 B/s at 4 figures -> 3.35 TB/s.
    assert format_bytes(85_899_345_920, "GiB", trim=True) == "80 GiB"
    assert format_si(3.35e12, "B/s", 4, trim=True) == "3.35 TB/s"
    with pytest.raises(ValueError, match="finite"):
        format_number(math.inf)
    with pytest.raises(ValueError, match="must be a number"):
        format_number(True)


def test_round_sig():
    assert round_sig(151.397, 3) == 151.0
    assert round_sig(0.0012345, 2) == 0.0012
    assert round_sig(0, 3) == 0.0


def test_parse_bytes_and_count():
    assert parse_bytes("80 GiB") == 85_899_345_920
    assert parse_bytes("141GB") == 141_000_000_000
    assert parse_bytes("1,024") == 1024
    assert parse_count("128k") == 128_000
    assert parse_count("1,000,000") == 1_000_000
    assert parse_count("2M") == 2_000_000


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: format_bytes(1, "XB"), "unit must be one of"),
        (lambda: format_bytes(math.nan), "finite"),
        (lambda: format_bytes(1, sig=0), "significant figures"),
        (lambda: format_si(math.inf, "B"), "finite"),
        (lambda: parse_bytes("80 gb"), "size unit must be one of"),
        (lambda: parse_bytes("lots"), "number and a unit"),
        (lambda: parse_count("1.5"), "whole number"),
        (lambda: parse_count("-3"), "whole number"),
    ],
)
def test_errors_name_what_is_allowed(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@given(st.integers(min_value=0, max_value=10**14))
def test_bytes_round_trip_at_full_precision(n):
    # 15 significant figures represent every integer below 1e15 exactly.
    assert parse_bytes(format_bytes(n, "B", sig=15)) == n


@given(st.floats(min_value=1e-9, max_value=1e18, allow_nan=False))
def test_format_si_value_is_close(x):
    # The printed number times its prefix is x to within rounding at 3 significant figures.
    text = format_si(x, "B")
    number, unit = text.split(" ")
    prefix = {
        "n": 1e-9,
        "µ": 1e-6,
        "m": 1e-3,
        "": 1,
        "k": 1e3,
        "M": 1e6,
        "G": 1e9,
        "T": 1e12,
        "P": 1e15,
        "E": 1e18,
    }
    value = float(number.replace(",", "")) * prefix[unit[:-1]]
    assert value == pytest.approx(x, rel=5e-3)


def test_plural_counts_one_in_the_singular():
    # "1 tokens" showed in the CLI and widgets (fresh-user trial); English takes the singular for 1 only.
    from descent.units import plural

    assert plural(1, "token") == "1 token"
    assert plural(0, "token") == "0 tokens"
    assert plural(8192, "token") == "8,192 tokens"
    assert plural(2, "sequence") == "2 sequences"


def test_control_characters_are_made_visible():
    # ESC, BEL, DEL, a C1 control and a bidirectional override act on a terminal or reorder a page:
    # shown as code points, never passed through (issue 24: `descent trace` printed raw ESC and BEL).
    text = "\x1b[31m\x07\x7f\x9b\u202eok"
    assert units.visible_whitespace(text) == "<U+001B>[31m<U+0007><U+007F><U+009B><U+202E>ok"
    assert units.visible_controls(text + "\n\t") == "<U+001B>[31m<U+0007><U+007F><U+009B><U+202E>ok\n\t"
    assert units.visible_controls("日本 ü") == "日本 ü"  # printable text is untouched


def test_format_points():
    # A difference of two shares, in percentage points (the engine check's largest difference).
    assert units.format_points(0.0012, 2) == "0.12 percentage points"
    assert units.format_points(0.011, 2) == f"{units.format_number(100 * 0.011, 2)} percentage points"
    with pytest.raises(ValueError, match="difference"):
        units.format_points(float("nan"))
