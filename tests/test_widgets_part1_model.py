"""Part 1 widgets (descent.widgets.part1_model) and the core helpers they run
(descent.transformer.softmax / attend / route / stack_params): values worked out by hand here."""

from __future__ import annotations

import dataclasses
import html
import json
import math
import re
from importlib import resources

import pytest

from descent import catalog, recorded, transformer, widgets
from descent.units import format_count
from descent.widgets import FieldError
from descent.widgets import part1_model as p1


def _text(result: dict) -> str:
    assert result["ok"], result
    return html.unescape(re.sub(r"<[^>]+>", " ", result["html"]))


def _stat(result: dict, label: str) -> tuple[str, str]:
    """(number, note) of the stat whose label starts with ``label``."""
    m = re.search(
        r'descent-stat__label">' + re.escape(label) + r'.*?descent-stat__number">(.*?)</span>'
        r'.*?(?:descent-stat__note">(.*?)</p>|</div>)',
        result["html"],
    )
    assert m, label
    return html.unescape(m.group(1)), html.unescape(m.group(2) or "")


# ---- core helpers ------------------------------------------------------------------------------


def test_softmax_by_hand():
    # softmax([0, ln 3]) = [1/4, 3/4]
    assert transformer.softmax([0.0, math.log(3)]) == pytest.approx([0.25, 0.75], rel=1e-15)
    # huge scores do not overflow (max-subtracted)
    assert transformer.softmax([1000.0, 1000.0]) == [0.5, 0.5]
    with pytest.raises(ValueError, match=r"scores\[1\] must be a finite number"):
        transformer.softmax([0.0, float("nan")])
    with pytest.raises(ValueError, match="at least one"):
        transformer.softmax([])


def test_route_softmax_and_sigmoid_by_hand():
    # logits [1, 3, 2, 0], k = 2: experts 1 and 2; softmax over (3, 2) = (e/(e+1), 1/(e+1)).
    r = transformer.route([1, 3, 2, 0], 2)
    assert [i for i, _ in r] == [1, 2]
    assert [w for _, w in r] == pytest.approx([math.e / (math.e + 1), 1 / (math.e + 1)], rel=1e-15)
    # sigmoid scoring: weights are sigmoid(3), sigmoid(2) divided by their sum.
    s3, s2 = 1 / (1 + math.exp(-3)), 1 / (1 + math.exp(-2))
    rs = transformer.route([1, 3, 2, 0], 2, "sigmoid")
    assert [w for _, w in rs] == pytest.approx([s3 / (s3 + s2), s2 / (s3 + s2)], rel=1e-15)
    # softmax over the chosen k equals a softmax over all E renormalised over the chosen (Mixtral eq. 1)
    full = transformer.softmax([1, 3, 2, 0])
    assert [w for _, w in r] == pytest.approx([full[1] / (full[1] + full[2]), full[2] / (full[1] + full[2])])
    with pytest.raises(ValueError, match="k \\(experts per token\\) must be 1 to 4"):
        transformer.route([1, 3, 2, 0], 5)
    with pytest.raises(ValueError, match="scoring must be one of"):
        transformer.route([1, 2], 1, "relu")
    # without renormalising: the softmax over all four for the chosen two, the sigmoids as they are
    assert [w for _, w in transformer.route([1, 3, 2, 0], 2, normalize=False)] == pytest.approx([full[1], full[2]])
    assert [w for _, w in transformer.route([1, 3, 2, 0], 2, "sigmoid", normalize=False)] == pytest.approx([s3, s2])
    with pytest.raises(ValueError, match="normalize must be true or false"):
        transformer.route([1, 2], 1, "sigmoid", normalize=1)


def test_attend_by_hand():
    # q = (1, 0), keys (1, 0) and (0, 1): scores 1 and 0, divided by sqrt(2); values (1, 2), (3, 4).
    r = transformer.attend([1, 0], [[1, 0], [0, 1]], [[1, 2], [3, 4]])
    w0 = 1 / (1 + math.exp(-1 / math.sqrt(2)))
    assert r["weights"] == pytest.approx([w0, 1 - w0], rel=1e-15)
    assert r["output"] == pytest.approx([w0 * 1 + (1 - w0) * 3, w0 * 2 + (1 - w0) * 4], rel=1e-15)
    with pytest.raises(ValueError, match=r"keys\[1\] must have the query's length 2"):
        transformer.attend([1, 0], [[1, 0], [1]], [[1], [2]])


def test_stack_params_default_by_hand():
    # 12 x (4 x 768^2 + 2 x 768 x 3072) = 12 x (2,359,296 + 4,718,592) = 84,934,656
    s = transformer.stack_params(12, 768, 12, 12, 3072, gated=False)
    assert s.total == 84_934_656 == 12 * (4 * 768**2 + 2 * 768 * 3072)
    assert (s.attention, s.ffn) == (12 * 4 * 768**2, 12 * 2 * 768 * 3072)
    # norms are reported apart, not in the total: 2 x 768 per layer
    assert s.norms_per_layer == 1536


def test_stack_params_smollm2_by_hand_and_catalog():
    # SmolLM2-135M: D 576, H 9, K 3, d_head 64, F 1536 gated, 30 layers.
    # attention: 2*576*9*64 + 2*576*3*64 = 663,552 + 221,184 = 884,736 per layer
    # FFN: 3*576*1536 = 2,654,208 per layer
    s = transformer.stack_params(30, 576, 9, 3, 1536, gated=True)
    assert (s.attention_per_layer, s.ffn_per_layer) == (884_736, 2_654_208)
    assert s.total == 30 * (884_736 + 2_654_208)
    # and it agrees with param_counts for every dense, bias-free catalog model
    for m in catalog.models().values():
        if m.moe or m.mla or m.attention_bias or m.attention_out_bias or m.mlp_bias:
            continue
        p = transformer.param_counts(m)
        s = transformer.stack_params(
            m.num_layers,
            m.hidden_size,
            m.num_heads,
            m.num_kv_heads,
            m.intermediate_size,
            True,
            head_dim=m.head_dim,
        )
        assert s.total == p.attention + p.dense_ffn, m.id


def test_stack_params_errors_name_the_field():
    with pytest.raises(ValueError, match="kv_heads must divide heads"):
        transformer.stack_params(12, 768, 12, 5, 3072, False)
    with pytest.raises(ValueError, match="layers must be a whole number"):
        transformer.stack_params(0, 768, 12, 12, 3072, False)


# ---- stack_calculator ---------------------------------------------------------------------------


def test_stack_calculator_default():
    r = widgets.run("stack_calculator", {})
    number, note = _stat(r, "Attention + FFN weights")
    assert number == "84.9 million" and note == "84,934,656 exactly"


def test_stack_calculator_gated_adds_half_the_ffn():
    r = widgets.run("stack_calculator", {"gated": True})
    # 12 x (4 x 768^2 + 3 x 768 x 3072) = 113,246,208
    assert _stat(r, "Attention + FFN weights")[1] == "113,246,208 exactly"


def test_stack_calculator_validation():
    r = widgets.run("stack_calculator", {"kv_heads": 5})
    assert not r["ok"] and r["field"] == "kv_heads" and "must divide the query heads (12)" in r["message"]
    r = widgets.run("stack_calculator", {"heads": 7, "kv_heads": 7})  # 768 / 7 is not whole
    assert not r["ok"] and r["field"] == "heads"
    r = widgets.run("stack_calculator", {"layers": 0})
    assert not r["ok"] and r["field"] == "layers" and "1 to 200" in r["message"]


def test_stack_calculator_message_lands_under_the_control_moved():
    # Issue 13: with 12 heads, d_model 1,000 broke "heads divide d_model" and the message landed
    # under Query heads. Now it lands under the control the reader touched, in its words, with the
    # nearest allowed values: multiples of lcm(64, 12) = 192 around 1,000 are 960 and 1,152.
    r = widgets.run("stack_calculator", {"d_model": 1000 // 64 * 64 + 64}, touched="d_model")  # 1,024
    assert not r["ok"] and r["field"] == "d_model"
    assert r["message"] == (
        "d_model must be a multiple of the query heads (12) so that each head gets a whole share; "
        "1,024 is not. Nearest allowed: 960 or 1,152."
    )
    # The same broken rule, reached by moving the heads: the message is about the heads.
    r = widgets.run("stack_calculator", {"heads": 7, "kv_heads": 7}, touched="heads")
    assert r["field"] == "heads" and r["message"].startswith("Query heads must divide d_model (768)")
    # 768 = 2^8 x 3; multiples of 7 that divide it: none, so no "nearest" is offered.
    assert "No value of it works" in r["message"]
    r = widgets.run("stack_calculator", {"kv_heads": 5}, touched="kv_heads")
    assert r["message"].endswith("Nearest allowed: 4 or 6.")  # divisors of 12 around 5


def test_stack_calculator_sliders_step_through_valid_values_only():
    # d_model: multiples of 64 (its step) from 64 to 32,768 that 12 divides: multiples of 192,
    # 192 ... 32,640 (170 values). heads: divisors of 768 from 1 to 256 that 12 (the KV heads)
    # divides: 12, 24, 48, 96, 192. kv_heads: divisors of 12: 1, 2, 3, 4, 6, 12.
    allowed = widgets.run("stack_calculator", {})["allowed"]
    assert allowed["d_model"] == list(range(192, 32768 + 1, 192)) and len(allowed["d_model"]) == 170
    assert allowed["heads"] == [12, 24, 48, 96, 192]
    assert allowed["kv_heads"] == [1, 2, 3, 4, 6, 12]
    # Every position of every slider gives a result, never a message (the 34 of 52).
    for name, values in allowed.items():
        for x in values:
            assert widgets.run("stack_calculator", {name: x}, touched=name)["ok"], (name, x)
    # The pre-rendered slider has as many positions, starting at the default's.
    html = widgets.render_static("stack_calculator")
    rng = re.search(r'id="dw-stack_calculator-d_model-range"[^>]*>', html).group(0)
    assert 'min="0"' in rng and 'max="169"' in rng and 'value="3"' in rng  # 768 = 4 x 192
    # With 16 KV heads... the kv lists follow the other inputs.
    assert widgets.run("stack_calculator", {"heads": 16, "kv_heads": 4})["allowed"]["kv_heads"] == [1, 2, 4, 8, 16]


# ---- qkv_example --------------------------------------------------------------------------------


def test_qkv_example_pronoun_by_hand():
    # q = (1,0,1,0); keys: the (0,1,0,0) -> 0, cat (1,0,1,.5) -> 2, slept (0,.5,0,1) -> 0, it (.5,0,.5,0) -> 1.
    # / sqrt(4) = 2: 0, 1, 0, 0.5. softmax: (1, e, 1, e^.5) / (2 + e + e^.5).
    z = 2 + math.e + math.exp(0.5)
    w = [1 / z, math.e / z, 1 / z, math.exp(0.5) / z]
    # output = sum w_t v_t with v = (.1,0,0,.2), (1,0,0,0), (0,1,0,0), (0,0,1,0)
    out = [0.1 * w[0] + w[1], w[2], w[3], 0.2 * w[0]]
    t = _text(widgets.run("qkv_example", {}))
    assert f"{w[1] * 100:.1f}%" in t  # the cat's weight, 42.7%
    # out = [0.4426, 0.1571, 0.2590, 0.0314], shown to two decimals
    assert "[0.44, 0.16, 0.26, 0.03]" in t
    assert [round(x, 2) for x in out] == [0.44, 0.16, 0.26, 0.03]


def test_qkv_example_saturates_without_division():
    # scale 2: scores (0, 8, 0, 4). Undivided: e^8 / (2 + e^8 + e^4) = 98.1%;
    # divided by sqrt(4) = 2: e^4 / (2 + e^4 + e^2) = 85.3% (worked out by hand).
    big = _stat(widgets.run("qkv_example", {"scale": 2, "divide": False}), "Largest weight")[0]
    small = _stat(widgets.run("qkv_example", {"scale": 2, "divide": True}), "Largest weight")[0]
    assert big == f"{math.exp(8) / (2 + math.exp(8) + math.exp(4)) * 100:.1f}" == "98.1"
    assert small == f"{math.exp(4) / (2 + math.exp(4) + math.exp(2)) * 100:.1f}" == "85.3"
    r = widgets.run("qkv_example", {"scale": 9})
    assert not r["ok"] and r["field"] == "scale"


# ---- moe_router ---------------------------------------------------------------------------------


def test_moe_router_offers_exactly_the_catalog_moe_rows():
    # A new MoE row must appear in the router widget (p1.MOE_MODELS lists them, default first).
    assert sorted(p1.MOE_MODELS) == sorted(i for i, m in catalog.models().items() if m.is_moe)


@pytest.mark.parametrize("model", [i for i, m in catalog.models().items() if m.is_moe])
def test_moe_router_counts_equal_param_counts(model):
    p = transformer.param_counts(catalog.model(model))
    r = widgets.run("moe_router", {"model": model})
    assert _stat(r, "Total parameters") == (format_count(p.total), f"{p.total:,}")
    assert _stat(r, "Active per token") == (format_count(p.active), f"{p.active:,}")
    m = catalog.model(model)
    t = _text(r)
    # exactly the model's k experts are coloured as chosen
    assert t.count("chosen") - t.count("not chosen") >= m.moe.experts_per_token
    assert len(re.findall(r'<td class="descent-cell is-used"', r["html"])) == m.moe.experts_per_token
    # the published active count is one of three conventions, to its published precision
    # (gpt-oss, DeepSeek-V3 and Kimi K2 leave the input embedding table out; Mixtral, Qwen3-235B
    # and Llama 4 include it; Qwen3-Next leaves out the embedding table and the output head)
    pub = m.params_active_published
    how, theirs = transformer.published_active_convention(m)
    assert f"The published {format_count(pub)} {how} ({format_count(theirs)} counted that way)" in t
    assert how == PUBLISHED_CONVENTION[model]


# Which way each publisher counts (worked out in tests/test_peer_params.py, ACTIVE_PUBLISHED).
PUBLISHED_CONVENTION = {
    "mixtral-8x7b": "counts the whole embedding table too",
    "qwen3-235b-a22b": "counts the whole embedding table too",  # 22.19B; without it 21.57B: both "22B"
    "llama-4-scout": "counts the whole embedding table too",
    "gpt-oss-20b": "leaves the embedding table out",
    "gpt-oss-120b": "leaves the embedding table out",
    "deepseek-v3": "leaves the embedding table out",
    "kimi-k2": "leaves the embedding table out",
    "qwen3-next-80b-a3b": "leaves out the embedding table and the output head",
}


def test_moe_router_other_k_recomputed_by_hand():
    # Mixtral 8x7B, k = 1 instead of 2: one expert fewer in each of 32 layers;
    # one expert = 3 x 4096 x 14336 = 176,160,768 weights (config.json, gated, no bias).
    m = catalog.model("mixtral-8x7b")
    own = transformer.param_counts(m).active
    r = widgets.run("moe_router", {"model": "mixtral-8x7b", "k": 1})
    assert _stat(r, "Active per token")[1] == f"{own - 32 * 3 * 4096 * 14336:,}"
    assert "recomputed for k = 1" in _text(r)
    r = widgets.run("moe_router", {"model": "mixtral-8x7b", "k": 9})
    assert not r["ok"] and r["field"] == "k" and "0 to 8" in r["message"]
    # Reached by switching the model, the message is under the model and says what to do.
    r = widgets.run("moe_router", {"model": "mixtral-8x7b", "k": 9}, touched="model")
    assert r["field"] == "model" and r["message"].startswith("Mixtral 8x7B has only 8 experts")
    assert r["allowed"]["k"] == list(range(0, 9))


def test_moe_router_weights_and_token_seed():
    logits = p1.router_logits("gpt-oss-120b", " the", 128)
    assert logits == p1.router_logits("gpt-oss-120b", " the", 128)  # deterministic
    assert logits != p1.router_logits("gpt-oss-120b", " Paris", 128)
    chosen = transformer.route(logits, 4)
    t = _text(widgets.run("moe_router", {}))
    for i, w in chosen:
        assert f"Expert {i}" in t and f"weight {w * 100:.1f}%" in t
    a = widgets.run("moe_router", {"token": " Paris"})["html"]
    assert a != widgets.run("moe_router", {})["html"]


def test_moe_router_offers_every_catalog_moe_model():
    assert set(p1.MOE_MODELS) == {i for i, m in catalog.models().items() if m.moe} == set(PUBLISHED_CONVENTION)
    assert p1.MOE_MODELS[0] == "gpt-oss-120b"


def test_moe_router_llama_4_weights_by_the_sigmoid_itself():
    # Llama 4 Scout: top-1 of 16 with a sigmoid that is not renormalised (transformers Llama4Router),
    # so the one chosen expert's weight is sigmoid(its logit), not 100%.
    logits = p1.router_logits("llama-4-scout", " the", 16)
    (i, w), = transformer.route(logits, 1, "sigmoid", normalize=False)
    assert w == pytest.approx(1 / (1 + math.exp(-max(logits))))
    t = _text(widgets.run("moe_router", {"model": "llama-4-scout"}))
    assert f"weight {w * 100:.1f}%" in t and "not rescaled" in t
    # Kimi K2's 384 and Qwen3-Next's 512 experts draw 16 to a row
    html = widgets.run("moe_router", {"model": "qwen3-next-80b-a3b"})["html"]
    assert html.count("<tr") == 512 // 16


def test_moe_router_deepseek_sigmoid_and_shared_expert():
    t = _text(widgets.run("moe_router", {"model": "deepseek-v3"}))
    assert "sigmoid" in t and "shared expert" in t
    e = catalog.model("deepseek-v3")
    other = dataclasses.replace(e, moe=dataclasses.replace(e.moe, experts_per_token=1))
    assert transformer.param_counts(other).active < transformer.param_counts(e).active


# ---- attention_fan ------------------------------------------------------------------------------


def _traces():
    f = resources.files("descent").joinpath("data", recorded.DATA_FILE)
    if not f.is_file():
        pytest.skip("descent/data/traces.json not exported yet")
    return json.loads(f.read_text(encoding="utf-8"))["prompts"]


def test_attention_fan_shows_the_recorded_weights():
    pr = _traces()[0]
    r = widgets.run("attention_fan", {"prompt": pr["id"], "layer": 3, "head": 2})
    row = pr["attention_last"][2][1]
    assert math.fsum(row) == pytest.approx(1, abs=1e-4)  # a softmax row (5 significant digits stored)
    t = _text(r)
    for w in row:
        assert f"{w * 100:.1f}%" in t
    other = widgets.run("attention_fan", {"prompt": pr["id"], "layer": 20, "head": 7})
    assert other["html"] != r["html"]


def test_attention_fan_validation():
    _traces()
    r = widgets.run("attention_fan", {"layer": 31})
    assert not r["ok"] and r["field"] == "layer" and "1 to 30" in r["message"]
    r = widgets.run("attention_fan", {"prompt": "nope"})
    assert not r["ok"] and r["field"] == "prompt"


# ---- embedding_neighbours -----------------------------------------------------------------------


def test_embedding_neighbours_from_the_export():
    data = p1.embedding_data()
    king = next(w for w in data["words"] if w["word"] == "king")
    r = widgets.run("embedding_neighbours", {"word": "king"})
    t = _text(r)
    for n in king["neighbours"]:
        assert f"{n['cosine']:.3f}" in t
    assert _stat(r, "Token id")[0] == f"{king['id']:,}"
    q = data["analogies"][0]
    assert f"ranks {q['rank_all']} among all tokens" in t
    r = widgets.run("embedding_neighbours", {"word": "unicorn"})
    assert not r["ok"] and r["field"] == "word"


def test_render_static_all_part1_widgets():
    for name in ("embedding_neighbours", "stack_calculator", "qkv_example", "moe_router"):
        out = widgets.render_static(name)
        assert f'data-widget="{name}"' in out


def test_field_error_is_a_value_error():
    assert issubclass(FieldError, ValueError)


# ---- RoPE formula vs the trace's rope_angles (float32) ------------------------------------------


def test_rope_formula_angles_match_rope_angles():
    np = pytest.importorskip("numpy")
    sp = pytest.importorskip("sympy")
    from descent import formulas
    from descent.trace import forward

    f = formulas.FORMULAS["rope_pair"]
    d, base = 8, 100000
    cos, sin = forward.rope_angles(np.arange(5), d, float(base))  # (T, d/2) float32
    for m in range(5):
        for n in range(d // 2):
            by = {s.symbol.name: s.symbol for s in f.symbols}
            vals = {"x_even": 1, "x_odd": 0, "m": m, "n": n, "base": base, "d": d}
            val = complex(sp.N(f.expr.subs({by[k]: x for k, x in vals.items()})))
            assert (val.real, val.imag) == pytest.approx((float(cos[m, n]), float(sin[m, n])), abs=1e-6)
