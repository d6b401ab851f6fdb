"""descent.widgets.part2: each widget's compute on real data, with expected values worked from the
shipped file (weights.json, checked against the GGUF by test_weights_export.py) and from the core
modules the widgets must agree with."""

from __future__ import annotations

import math
import re

import pytest
from widget_html import text as _text

from descent import floats, quant
from descent import weights_sample as ws
from descent.widgets import part2, render_static, run
from descent.widgets import views as v


def _stat(markup: str, label: str) -> str:
    m = re.search(r'descent-stat__label">' + re.escape(label) + r'[^<]*</p><p class="descent-stat__value">'
                  r'<span class="descent-stat__number">([^<]+)</span>', markup)
    assert m, f"no stat {label!r}"
    return m.group(1)


def test_zoom_shows_the_real_block():
    # blk.0.attn_q block 0 of row 0 (weights.json): d = 0.1268310546875, m = -0.73046875, code 4 = 15,
    # so weight 4 = 0.1268310546875 * 15 - 0.73046875 = 1.1719970703125.
    d, m, codes = ws.block(0, "attn_q")
    assert (d, m, codes[4]) == (0.1268310546875, -0.73046875, 15)
    res = run("weight_zoom", {"layer": 0, "matrix": "attn_q", "weight": 4})
    assert res["ok"] and _stat(res["html"], "Its value") == "1.172" and _stat(res["html"], "Its code") == "15"
    assert "576 x 576" in _text(res["html"]) and _stat(res["html"], "Bits per weight") == "5"
    # Every code cell is a button that selects its weight.
    sets = [v._parse_set(b) for b in re.findall(r"<button[^>]*data-set[^>]*>", res["html"])]
    assert sets == [{"weight": str(i)} for i in range(32)]


def test_zoom_other_layer_and_matrix_change_the_block():
    a = run("weight_zoom", {"layer": 29, "matrix": "ffn_down", "weight": 0})["html"]
    assert "1536" not in a and "576 x 1,536" in _text(a)
    assert a != run("weight_zoom", {"layer": 28, "matrix": "ffn_down", "weight": 0})["html"]


def test_float_bits_rounds_and_flips():
    res = run("float_bits", {"format": "bf16", "value": "0.1"})
    assert _stat(res["html"], "Stored value") == "0.10009765625"
    # Flipping bit 15 (the sign) of 0x3DCD gives -0.10009765625: that is what the sign cell sets.
    sets = [v._parse_set(b) for b in re.findall(r"<button[^>]*data-set[^>]*>", res["html"])]
    assert len(sets) == 16 and sets[0] == {"value": "-0.10009765625"}
    # A code in: FP16 0x7C00 is infinity (no error stat, since nothing was typed as a number).
    res = run("float_bits", {"format": "fp16", "value": "0x7C00"})
    assert _stat(res["html"], "Stored value") == "infinity" and "Rounding error" not in res["html"]
    # Overflow: 470 in FP8 E4M3.
    res = run("float_bits", {"format": "fp8_e4m3", "value": "470"})
    assert _stat(res["html"], "Rounding error") == "overflow"


def test_float_bits_overflow_keeps_the_sign_and_the_largest_value_is_whole():
    """Found by a reader: -70000 in FP16 read "rounds to infinity" beside a stored "minus infinity",
    and FP16's largest value showed as 65,500. IEEE 754 binary16: the largest finite value is
    (2 - 2^-10) x 2^15 = 65,504, and a negative overflow rounds to minus infinity."""
    text = _text(run("float_bits", {"format": "fp16", "value": "-70000"})["html"])
    assert "beyond FP16's most negative value -65,504: it rounds to minus infinity" in text
    assert "sign bit 1, exponent bits all ones: minus infinity = minus infinity" in text
    assert "largest value 65,504" in text and "65,500" not in text
    text = _text(run("float_bits", {"format": "fp16", "value": "70000"})["html"])
    assert "beyond FP16's largest value 65,504: it rounds to infinity" in text


@pytest.mark.parametrize("inputs,msg", [
    ({"format": "e8m0", "value": "-2"}, "no sign and no zero"),
    ({"format": "fp4_e2m1", "value": "nan"}, "not-a-number"),
    ({"format": "fp8_e4m3", "value": "0x1FF"}, "does not fit"),
    ({"format": "fp16", "value": "twelve"}, "not a number"),
])
def test_float_bits_errors_name_the_value_field(inputs, msg):
    res = run("float_bits", inputs)
    assert not res["ok"] and res["field"] == "value" and msg in res["message"]


def test_quantize_weights_matches_the_core():
    w = ws.sample_values()
    assert len(w) == 1536  # one row of ffn_down: 1,536 inputs
    for bits in (8, 4, 3, 2):
        for zp in (False, True):
            q = quant.int_quantize(w, bits, symmetric=not zp)
            e = quant.error_stats(w, q.values)
            html = run("quantize_weights", {"bits": bits, "zero_point": zp})["html"]
            assert _stat(html, "RMSE") == v.fmt(e.rmse)
            assert _stat(html, "Levels used") == f"{len(set(q.codes))} of {q.levels}"
    # 4 bits: 1,536 * 4 / 8 = 768 bytes of codes + one 4-byte FP32 scale = 772 bytes.
    assert _stat(run("quantize_weights", {"bits": 4})["html"], "Size of the row") == "772 bytes"


def test_block_scaling_grid_and_numbers():
    r = part2.block_scaling_compute(8.0, 100)
    w = r["weights"]
    amax = max(abs(x) for x in ws.sample_values(256))
    assert w[100] == pytest.approx(math.copysign(8 * amax, w[100]))
    assert r["mxfp4"]["rmse"] == quant.error_stats(w, quant.mxfp4(w).values).rmse
    assert r["nvfp4"]["rmse"] < r["tensor"]["rmse"] and r["mxfp4"]["rmse"] < r["tensor"]["rmse"]
    html = run("block_scaling", {"outlier": 8, "position": 100})["html"]
    assert html.count('<td class="descent-cell is-err') == 3 * 16  # 3 schemes x 16 groups of 16
    # The outlier's group (100 // 16 = 6) is marked in every row.
    assert html.count("(holds the outlier)") == 3 * 2  # in each cell's title and its hidden label


def test_gguf_name_reads_names_and_the_file():
    html = run("gguf_name", {"name": "Llama-3.1-8B.Q4_K_M.gguf"})["html"]
    assert _stat(html, "Bits per weight") == "4.5" and _stat(html, "File average (Llama-3.1-8B)") == "4.894"
    # The shipped file: 96,576,768 bytes for 134,515,008 weights = 5.7437 bits per weight.
    assert "5.74 bits per weight on average" in _text(html)
    assert not run("gguf_name", {"name": "nothing here"})["ok"]


def test_every_part2_widget_prerenders():
    for name in ("weight_zoom", "float_bits", "quantize_weights", "block_scaling", "gguf_name"):
        assert 'data-state="static"' in render_static(name)


def test_histogram_svg_is_plain_markup():
    svg = part2.histogram_svg([0.0, 1.0, 2.0], [0.0, 1.0, 1.0])
    assert svg.startswith("<svg") and "<script" not in svg and "nan" not in svg.lower()
    v.render(v.svg(svg, "alt"))


def test_value_text_of_every_fp8_code_reads_back():
    # The bit cells write value_text(...) into the box; reading it back must give the same code.
    f = floats.get("fp8_e4m3")
    for code in range(256):
        x = f.decode(code)
        if math.isfinite(x):
            kind, y = floats.parse_value(f, floats.value_text(x))
            assert f.round(y).code == code or x == 0


@pytest.mark.parametrize("value", ["-3", "0"])
def test_e8m0_refuses_what_it_cannot_hold_and_says_what_to_enter(value):
    # Found by the hostile-input property inside Pyodide: E8M0 (OCP MX spec v1.0, section 5.4: an
    # exponent with no sign and no zero) given -3 said what it lacked but not what to type instead.
    res = run("float_bits", {"format": "e8m0", "value": value})
    assert res["ok"] is False and res["field"] == "value"
    assert "enter a positive number" in res["message"] and "2^-127 to 2^127" in res["message"]
