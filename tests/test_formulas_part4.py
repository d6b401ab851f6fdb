"""Part 4's formulas (descent.formulas), symbolically: each sympy expression simplifies to the rule the
page states, and evaluates to what the package computes. (tests/test_formulas.py also runs every
formula's own check over catalog rows.)"""

from __future__ import annotations

import sympy as sp

from descent import attention_io, step, tiling
from descent.formulas import FORMULAS


def _sym(formula, name):
    return next(s.symbol for s in FORMULAS[formula].symbols if s.symbol.name == name)


def test_allreduce_bytes_is_2_p_minus_1_over_p_times_the_message():
    f = FORMULAS["allreduce_bytes"]
    p, s = _sym("allreduce_bytes", "p"), _sym("allreduce_bytes", "S_msg")
    assert sp.simplify(f.expr - 2 * (p - 1) / p * s) == 0
    for devices in (1, 2, 8, 72):
        for message in (16_384, 10**6):
            got = f.expr.subs({p: devices, s: message})
            assert got == sp.Rational(2 * (devices - 1), devices) * message
            assert float(got) == step.ring_allreduce_bytes(message, devices)
    # As p grows each device sends nearly twice the message, never more.
    assert sp.limit(f.expr, p, sp.oo) == 2 * s


def test_tile_intensity_simplifies_to_tile_over_bytes():
    f = FORMULAS["tile_intensity"]
    t, k, b = (_sym("tile_intensity", n) for n in ("t", "K_dim", "b"))
    assert sp.simplify(f.expr - t / b) == 0  # K cancels
    assert f.expr.subs({t: 64, k: 1024, b: 2}) == 32 == tiling.tile_intensity(64, 2)


def test_pipeline_bubble():
    f = FORMULAS["pipeline_bubble"]
    p, m = _sym("pipeline_bubble", "p"), _sym("pipeline_bubble", "m")
    # A serving pipeline's steady state (descent.step): max(0, p - m) / p.
    assert f.expr.subs({p: 8, m: 1}) == sp.Rational(7, 8) and step.pipeline_bubble(8, 1) == 7 / 8
    assert f.expr.subs({p: 8, m: 2}) == sp.Rational(3, 4) and step.pipeline_bubble(8, 2) == 3 / 4
    assert f.expr.subs({p: 8, m: 8}) == 0 == step.pipeline_bubble(8, 8)  # every stage busy
    assert f.expr.subs({p: 8, m: 64}) == 0 == step.pipeline_bubble(8, 64)


def test_attention_formulas_against_the_code():
    naive, flash = FORMULAS["attention_naive_bytes"], FORMULAS["attention_flash_bytes"]
    n, d, b = (_sym("attention_naive_bytes", x) for x in ("N_seq", "d", "b"))
    assert sp.expand(naive.expr) == sp.expand(4 * n * d * b + 4 * n**2 * b)
    sram = attention_io.sram_elements("h100-sxm", 2)
    _br, bc = attention_io.flash_block_sizes(64, sram)
    nf, df, bcf, bf = (_sym("attention_flash_bytes", x) for x in ("N_seq", "d", "B_c", "b"))
    assert flash.expr.subs({nf: 2048, df: 64, bcf: bc, bf: 2}) == attention_io.flash_elements(2048, 64, sram) * 2
