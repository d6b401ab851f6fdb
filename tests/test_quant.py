"""descent.quant: integer quantization, FP4 with scales per tensor / MX block / NVFP4 block, error
measures. Expected values are worked by hand in the comments; the error bound (|w - w_hat| <= s/2
inside the range) is a property test. Core only, so it runs in Pyodide too."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descent import numerics, quant


def test_symmetric_int4_by_hand():
    # max|w| = 1.4, qmax = 7: s = 0.2; 0.33 / 0.2 = 1.65 -> 2; -1.4 -> -7; 0.05 -> 0 (0.25 rounds to 0).
    q = quant.int_quantize([0.33, -1.4, 0.05], 4)
    assert q.scale == pytest.approx(0.2) and q.codes == [2, -7, 0] and q.zero_point == 0
    assert q.values == pytest.approx([0.4, -1.4, 0.0]) and q.levels == 15


def test_zero_point_int2_by_hand():
    # range [0, 3] (0 included), 2 bits: s = 3 / 3 = 1, z = 0; 2.6 -> 3, 1.2 -> 1.
    q = quant.int_quantize([2.6, 1.2, 3.0], 2, symmetric=False)
    assert (q.scale, q.zero_point, q.codes) == (1.0, 0, [3, 1, 3])
    # range [-1, 3]: s = 4/3, z = round(0.75) = 1; -1 -> round(-0.75) + 1 = 0 -> -4/3.
    q = quant.int_quantize([-1.0, 3.0], 2, symmetric=False)
    assert q.zero_point == 1 and q.codes == [0, 3] and q.values == pytest.approx([-4 / 3, 8 / 3])


weights = st.lists(st.floats(-100, 100, allow_nan=False, allow_subnormal=False), min_size=1, max_size=64)


@settings(deadline=None, max_examples=150)
@given(w=weights, bits=st.sampled_from([2, 3, 4, 8]), symmetric=st.booleans())
def test_error_is_at_most_half_a_step(w, bits, symmetric):
    q = quant.int_quantize(w, bits, symmetric)
    assert len(q.codes) == len(w) and len(set(q.codes)) <= q.levels
    for x, y in zip(w, q.values, strict=True):
        assert abs(x - y) <= q.scale / 2 * (1 + 1e-9) + 1e-12


def test_more_bits_less_error_on_a_bell():
    # Not true for every list (the 2- and 4-bit grids are not nested: [28, 65] rounds better at 2
    # bits), but on a bell-shaped sample each extra bit roughly halves the RMSE (about 6 dB of SQNR).
    import random

    rng = random.Random(7)
    w = [rng.gauss(0, 1) for _ in range(2000)]
    e = [quant.error_stats(w, quant.int_quantize(w, b).values) for b in (2, 3, 4, 8)]
    assert e[0].rmse > e[1].rmse > e[2].rmse > e[3].rmse
    assert e[3].sqnr_db - e[2].sqnr_db == pytest.approx(6.02 * 4, abs=3)


def test_mx_scale_by_hand():
    # max 0.35: floor(log2 0.35) = -2, minus emax 2 -> 2^-4 (OCP MX v1.0 section 6.3).
    assert quant.mx_scale(0.35) == 2.0**-4
    assert quant.mx_scale(6.0) == 1.0 and quant.mx_scale(0.0) == 2.0**-127


def test_mxfp4_block_by_hand():
    # One block [0.35, 0.1, -0.2]: scale 1/16; 0.35*16 = 5.6 -> 6 -> 0.375; 1.6 -> 1.5 -> 0.09375;
    # -3.2 -> -3 -> -0.1875.
    bq = quant.mxfp4([0.35, 0.1, -0.2])
    assert bq.scales == [0.0625] and bq.values == [0.375, 0.09375, -0.1875] and bq.clipped == 0
    # 7.5 / 1 = 7.5 > 7: cut to 6 (the MX scale is 1 for max 7.5).
    assert quant.mxfp4([7.5, 1.0]).clipped == 1


def test_nvfp4_by_hand():
    # Tensor max 6 -> global scale 6 / (6 * 448) = 1/448; block max 6 -> E4M3(448) = 448 -> scale 1.
    bq = quant.nvfp4([6.0, 3.0, -1.5] + [0.0] * 13)
    assert bq.scales == [1.0] and bq.values[:3] == [6.0, 3.0, -1.5]
    assert numerics.PRECISIONS["nvfp4"].block_size == len(bq.values)


def test_block_scales_help_with_an_outlier():
    # Small weights plus one outlier 100x larger: one scale zeroes the small ones; blocks keep them.
    w = [0.01 * ((i % 7) - 3) for i in range(64)]
    w[5] = 3.0
    tensor = quant.error_stats(w, quant.fp4_tensor(w).values).rmse
    mx = quant.error_stats(w, quant.mxfp4(w).values).rmse
    nv = quant.error_stats(w, quant.nvfp4(w).values).rmse
    assert mx < tensor and nv < tensor


def test_error_stats_by_hand():
    # errors 0.1 and -0.1: RMSE 0.1; signal 1 + 1 = 2, noise 0.02: SQNR 10 log10(100) = 20 dB.
    e = quant.error_stats([1.0, -1.0], [1.1, -1.1])
    assert e.rmse == pytest.approx(0.1) and e.sqnr_db == pytest.approx(20.0) and e.max_abs == pytest.approx(0.1)
    assert quant.error_stats([1.0], [1.0]).sqnr_db is None


def test_block_int_groups():
    bq = quant.block_int([1.0, 2.0, 100.0, 200.0], 8, 2)
    assert bq.scales == pytest.approx([2 / 127, 200 / 127])


def test_histogram():
    assert quant.histogram([0.0, 0.5, 1.0, 2.0], 2, 0.0, 1.0) == [1, 2]


@pytest.mark.parametrize("call,msg", [
    (lambda: quant.int_quantize([], 4), "not be empty"),
    (lambda: quant.int_quantize([1.0, math.nan], 4), "finite"),
    (lambda: quant.int_quantize([1.0], 1), "bits must be"),
    (lambda: quant.int_quantize("abc", 4), "list of numbers"),
    (lambda: quant.mxfp4([1.0], block=0), "block must be"),
    (lambda: quant.error_stats([1.0], [1.0, 2.0]), "same length"),
    (lambda: quant.histogram([1.0], 0, 0.0, 1.0), "bins must be"),
])
def test_bad_input(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()
