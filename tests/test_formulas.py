"""descent.formulas: each sympy expression agrees with the package function it mirrors."""

from __future__ import annotations

import math
import re

import pytest
import sympy as sp

from descent import catalog, formulas
from descent.formulas import FORMULAS, Formula, Sym

#: Checks that take more than a few seconds (decode_step_seconds evaluates sympy on every model x
#: accelerator pair, about 6 s of CPU here; swiglu_ffn expands a sum): marked slow, so `nox -s fast`
#: leaves them out.
SLOW = {"decode_step_seconds", "swiglu_ffn"}


def test_slow_names_are_formulas():
    assert SLOW <= set(FORMULAS)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in FORMULAS])
def test_formula_matches_the_code(name):
    f = FORMULAS[name]
    pairs = f.check()
    assert pairs, f"{name}: the check compared nothing"
    for label, by_formula, by_code in pairs:
        assert math.isclose(by_formula, by_code, rel_tol=1e-12), (name, label, by_formula, by_code)


def test_kv_cache_bytes_by_hand():
    # Llama 3.1 70B (config.json: 80 layers, 8 KV heads, head_dim 128), one token, one sequence, BF16:
    # 2 * 80 * 8 * 128 * 1 * 1 * 2 = 327,680 bytes (320 KiB), worked out by hand.
    m = catalog.model("llama-3.1-70b")
    v = FORMULAS["kv_cache_bytes"].evaluate(L=m.num_layers, K=m.num_kv_heads, d_head=m.head_dim, T=1, B=1, b=2)
    assert v == 327_680


def test_mla_kv_cache_by_hand():
    # DeepSeek-V3 (config.json: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64), BF16:
    # 61 * (512 + 64) * 2 = 70,272 bytes per token: tens of KB, not MB (DeepSeek-V2 paper, table 1).
    m = catalog.model("deepseek-v3")
    v = FORMULAS["kv_cache_bytes_mla"].evaluate(L=m.num_layers, d_c=m.mla.kv_lora_rank,
                                                 d_rope=m.mla.qk_rope_head_dim, T=1, B=1, b=2)
    assert v == 70_272


def test_sliding_window_caps_the_cache():
    # Mistral 7B v0.1: 32 layers, all sliding with W = 4096, K = 8, d_head = 128.
    # At T = 32,768 each layer holds only 4,096 tokens: 2 * 8 * 128 * (0 + 32 * 4096) * 1 * 2 bytes
    # = 536,870,912 bytes = 512 MiB (worked out by hand), not 4 GiB.
    v = FORMULAS["kv_cache_bytes_sliding"].evaluate(L_full=0, L_slide=32, W=4096, K=8, d_head=128, T=32768, B=1, b=2)
    assert v == 536_870_912 == 512 * 2**20


def test_hybrid_cache_by_hand():
    # Qwen3-Next-80B-A3B (config.json: 48 layers, full_attention_interval 4 -> 12 full, 36 linear;
    # K = 2, d_head = 256; linear: 16 key heads, 32 value heads, d_k = d_v = 128, conv 4), one
    # sequence, BF16. Full layers: 2 * 12 * 2 * 256 * T values; linear layers: 36 * (32 * 128 * 128
    # + 3 * (2 * 16 * 128 + 32 * 128)) = 36 * 548,864 = 19,759,104 values at any T.
    args = dict(L_full=12, K=2, d_head=256, L_lin=36, H_v=32, H_k=16, d_k=128, d_v=128, c=4, B=1, b=2, b_s=2)
    f = FORMULAS["kv_cache_bytes_hybrid"]
    assert f.evaluate(T=1, **args) == (12_288 + 19_759_104) * 2
    assert f.evaluate(T=262_144, **args) == (12_288 * 262_144 + 19_759_104) * 2  # 6.48 GB: 6.44 + 0.04
    # the state term does not grow: a million tokens minus one token is only the attention part
    assert f.evaluate(T=1_000_001, **args) - f.evaluate(T=1, **args) == 12_288 * 1_000_000 * 2
    assert "T" not in str(f.expr.args[0].args[1])  # the linear-layer term has no T
    # An FP8 KV cache (b = 1) halves the keys and values only: the state stays BF16 (b_s = 2).
    fp8 = {**args, "b": 1}
    assert f.evaluate(T=4096, **fp8) == 12_288 * 4096 * 1 + 19_759_104 * 2


def test_the_state_keeps_its_own_precision():
    # Qwen3-Next at 4,096 tokens: an FP8 KV cache is 1 byte per key/value, the state 2 bytes per value
    # (vLLM: mamba_cache_dtype "auto" = the model's BF16, not kv_cache_dtype).
    from descent import catalog, transformer
    m = catalog.model("qwen3-next-80b-a3b")
    assert transformer.kv_cache_bytes(m, 4096, 8) == 12_288 * 4096 + 19_759_104 * 2
    assert transformer.kv_cache_bytes(m, 4096, 16) == (12_288 * 4096 + 19_759_104) * 2
    # A model without linear layers: bytes are elements x bits / 8, as before.
    llama = catalog.model("llama-3.1-70b")
    assert transformer.kv_cache_bytes(llama, 1000, 8) == transformer.kv_cache_elements(llama, 1000)
    with pytest.raises(ValueError, match="positive"):
        transformer.kv_cache_bytes(llama, 1000, 0)


def test_chunked_attention_uses_the_window_formula():
    # Llama 4 Scout: 48 layers, every 4th full (12), 36 chunked with chunk W = 8,192; K = 8, d_head 128.
    # At T = 32,768: 2 * 8 * 128 * (12 * 32,768 + 36 * 8,192) bytes * 2 = 2,818,572,288 bytes.
    v = FORMULAS["kv_cache_bytes_sliding"].evaluate(L_full=12, L_slide=36, W=8192, K=8, d_head=128, T=32_768,
                                                    B=1, b=2)
    assert v == 2_818_572_288


def test_weight_bytes_and_decode_by_hand():
    # MXFP4: 4.25 bits per weight (OCP MX v1.0: 4-bit elements + one 8-bit scale per 32);
    # 1e9 weights * 4.25 / 8 = 531,250,000 bytes.
    assert FORMULAS["weight_bytes"].evaluate(N=10**9, bits=4.25) == 531_250_000
    # 3.35e12 bytes/s over 72.2e9 bytes per step = 46.4 tokens/s (H100 SXM, Llama 3.1 70B FP8)
    assert FORMULAS["decode_tokens_per_s"].evaluate(BW=3.35e12, S_step=72.2e9) == pytest.approx(46.3989, rel=1e-5)


def test_latex_comes_from_sympy_in_written_order():
    assert FORMULAS["kv_cache_bytes"].latex() == r"M_{\text{KV}} = 2 L K d_{\text{head}} T B b"
    assert FORMULAS["kv_cache_bytes_mla"].latex() == r"M_{\text{KV}} = L \left(d_c + d_h^{R}\right) T B b"
    assert FORMULAS["weight_bytes"].latex() == r"M_{\text{W}} = \frac{N \beta}{8}"
    assert FORMULAS["decode_tokens_per_s"].latex() == r"R_{\text{decode}} = \frac{\mathrm{BW}}{S_{\text{step}}}"


def test_every_formula_is_documented():
    for f in FORMULAS.values():
        assert f.title and f.source and f.symbols
        for s in f.symbols:
            assert s.meaning and s.unit, (f.name, s.symbol)


def test_symbols_read_as_prose_with_linked_sources():
    # Issue 13: "$L$ (count)" read as a tag. Each meaning is a noun phrase with its article, each
    # unit either reads as words ("in bytes") or is a count the meaning names; every source links.
    for f in FORMULAS.values():
        for s in f.symbols:
            assert re.match(r"(the|a|an|one|component|how) ", s.prose().split(" is ", 1)[1]), (f.name, s.meaning)
            assert s.unit in formulas.UNIT_PROSE or s.unit in formulas.UNIT_SILENT, (f.name, s.unit)
        if not f.source.startswith("Definition"):  # a definition (break-even) cites no paper
            assert re.search(r"\]\(https://", f.source_markdown()), f"{f.name}: the source is not a link"
        assert "(count)" not in f.where() and "(values)" not in f.where()
    # A meaning written without its article gets one.
    assert Sym(sp.Symbol("d"), "d", "head dimension", "values").prose() == "$d$ is the head dimension"
    assert "[arXiv:2205.14135](https://arxiv.org/abs/2205.14135)" in Formula(
        "x", "t", Sym(sp.Symbol("y"), "y", "y", "count"), sp.Symbol("d"), (), "Dao et al., arXiv:2205.14135").source_markdown()
    where = FORMULAS["kv_cache_bytes"].where()
    assert where.startswith("$L$ is the number of layers; $K$ is the number of key/value heads")
    assert where.endswith("; and $b$ is the size of one stored number (two for BF16, one for FP8), in bytes")


def test_compact_form_first_expanded_form_folded():
    from descent.site.hooks import formula_markdown

    md = formula_markdown("attention_output", {})
    compact, full = FORMULAS["attention_output"].compact, FORMULAS["attention_output"].latex()
    assert md.index(compact) < md.index('??? info "Written out in full') < md.index(full)
    # A formula without a textbook form shows the sympy one, unfolded.
    md = formula_markdown("kv_cache_bytes", {})
    assert FORMULAS["kv_cache_bytes"].latex() in md and "???" not in md


def test_evaluate_rejects_unknown_and_missing_symbols():
    with pytest.raises(ValueError, match=r"takes B, K, L, T, b, d_head; unknown: X; missing: b"):
        FORMULAS["kv_cache_bytes"].evaluate(L=1, K=1, d_head=1, T=1, B=1, X=2)
    with pytest.raises(ValueError, match="unknown formula 'nope'; allowed: kv_cache_bytes"):
        formulas.formula("nope")


def test_registering_undeclared_symbols_fails():
    x, y = sp.symbols("x y")
    f = Formula("t", "t", Sym(sp.Symbol("z"), "z", "z", "1"), x * y, (Sym(x, "x", "x", "1"),), "s")
    with pytest.raises(ValueError, match=r"symbols \['x', 'y'\] but declared \['x'\]"):
        formulas._register(f)
