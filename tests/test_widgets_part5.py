"""Tests for descent.widgets.part5 (size_it_yourself, decode_across_field, across_field) and the
Part 5 shortcodes in descent.site.values.across_chips.

Expected values are computed in the tests from the catalog and descent.memory.size /
descent.transformer.param_counts (the engine the widget must agree with), or worked out by hand
from the catalog's published numbers where a comment says so.
"""

from __future__ import annotations

import html
import math
import re

import pytest
from widget_html import text as _text

from descent import catalog, numerics, transformer
from descent import params as P
from descent.memory import size
from descent.units import GB, GiB, KiB, format_bytes
from descent.widgets import get, names, part5, render_static, run

#: The runtime allowance at its default (descent.params.RUNTIME: 10%), a fraction.
RUNTIME_ALLOWANCE = P.RUNTIME.default / 100

# Combinations the widget is checked on: a dense model that fits, a MoE model, one that does not
# fit (Llama 3.1 405B in BF16 is ~811 GB, far above one H100's 80 GiB), and a long batch.
COMBOS = [
    dict(model="llama-3.1-70b", weights="fp8", kv="bf16", context=8192, batch=1, accelerator="h200"),
    dict(model="gpt-oss-120b", weights="mxfp4", kv="fp8", context=32768, batch=16, accelerator="b200"),
    dict(model="llama-3.1-405b", weights="bf16", kv="bf16", context=131072, batch=4, accelerator="h100-sxm"),
    dict(model="deepseek-v3", weights="fp8", kv="bf16", context=4096, batch=256, accelerator="mi355x"),
]


def _stat(markup: str, label: str) -> str:
    """The number shown by the stat whose label starts with ``label``."""
    m = re.search(
        r'descent-stat__label">' + re.escape(label) + r'[^<]*</p><p class="descent-stat__value">'
        r'<span class="descent-stat__number">([^<]+)</span>',
        markup,
    )
    assert m, f"no stat {label!r} in {markup[:300]}"
    return m.group(1)


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def test_registered():
    assert {"size_it_yourself", "decode_across_field"} <= set(names())
    w = get("size_it_yourself")
    # Defaults as the brief asks: Llama 3.1 70B, FP8 weights, BF16 KV, 8,192 tokens, batch 1, H200.
    defaults = w.defaults()
    # The "your model" / "your chip" inputs (shown only for model / accelerator "custom").
    assert {k: defaults.pop(k) for k in ("config_json", "memory_gb", "bandwidth_gbs", "tflops")} == {
        "config_json": part5.EXAMPLE_CONFIG, "memory_gb": 24.0, "bandwidth_gbs": 1008.0, "tflops": 165.2}
    assert defaults.pop("pinned") == ""  # no set-up pinned to compare with (tests/test_compare.py)
    assert defaults == {
        "model": "llama-3.1-70b",
        "weights": "fp8",
        "kv": "bf16",
        "context": 8192,
        "batch": 1,
        "accelerator": "h200",
        "runtime_percent": 10.0,
    }
    # Context and batch limits are the engine's own (transformer.MAX_CONTEXT_TOKENS, step.MAX_BATCH).
    assert (w.input("context").min, w.input("context").max, w.input("context").log) == (1, 20_000_000, True)
    assert (w.input("batch").min, w.input("batch").max, w.input("batch").log) == (1, 100_000, True)
    # Every catalog model/accelerator, then "custom" (a pasted config.json, a typed-in chip), and
    # every precision is offered.
    assert [o for o, _ in w.input("model").options] == [*catalog.models(), "custom"]
    assert [o for o, _ in w.input("accelerator").options] == [*catalog.accelerators(), "custom"]
    assert [o for o, _ in w.input("weights").options] == ["released", *numerics.PRECISIONS]
    assert [o for o, _ in w.input("kv").options] == list(numerics.KV_PRECISIONS)


@pytest.mark.parametrize("combo", COMBOS, ids=lambda c: f"{c['model']}-{c['accelerator']}")
def test_numbers_equal_memory_size(combo):
    s = size(
        combo["model"], combo["accelerator"], combo["weights"], combo["kv"], combo["context"], combo["batch"]
    )
    r = run("size_it_yourself", {k: str(x) for k, x in combo.items()})
    assert r["ok"], r
    out = r["html"]
    # Stats: 3 significant figures of the engine's numbers.
    assert _num(_stat(out, "Decode ceiling per sequence")) == pytest.approx(s.decode_tokens_per_s, rel=5e-3)
    assert _num(_stat(out, "Decode ceiling in total")) == pytest.approx(s.decode_tokens_per_s_total, rel=5e-3)
    assert _num(_stat(out, "Bytes read per decode step")) == pytest.approx(
        s.bytes_per_decode_step / GB, rel=5e-3
    )
    assert _num(_stat(out, "KV cache per token")) == pytest.approx(s.kv_bytes_per_token / KiB, rel=5e-3)
    # The stacked bar: segments in GB, capacity and total in both GB and GiB.
    text = _text(out)
    for nbytes in (s.weights_bytes, s.kv_cache_bytes, s.runtime_bytes):
        assert format_bytes(nbytes, "GB") in text
    summary = (
        f"{format_bytes(s.need_bytes, 'GB')} ({format_bytes(s.need_bytes, 'GiB')}) needed and "
        f"{format_bytes(s.runtime_bytes, 'GB')} ({format_bytes(s.runtime_bytes, 'GiB')}) kept back, of "
        f"{format_bytes(s.capacity_bytes, 'GB')} ({format_bytes(s.capacity_bytes, 'GiB')})"
    )
    assert summary in text
    # Fit statement and the "if it fit" qualifier. A reader found eight numbers in the sentence: it
    # keeps the one its idea needs (by how much; without a fit, also the chips it would take), and
    # the need and what the chip offers are stats of their own.
    banner = re.search(r'<p class="descent-note descent-note--(?:info|warn)">((?:Fits|Does not fit)[^<]*)</p>', out)[1]
    chip = catalog.accelerator(combo["accelerator"]).name
    if s.fits:
        assert banner == f"Fits on one {chip}, with {format_bytes(s.free_bytes, 'GB')} to spare after the runtime allowance."
        assert "if it fit" not in text and "descent-stack--over" not in out
    else:
        assert banner == (f"Does not fit on one {chip}: it needs {format_bytes(-s.free_bytes, 'GB')} more than the "
                          f"chip offers after the runtime allowance. It would take at least {s.accelerators_needed:,} such chips, before what "
                          f"splitting a model across chips costs.")
        assert "over capacity" in text and "Decode ceiling per sequence (if it fit)" in text
    assert _num(_stat(out, "Memory needed")) == pytest.approx(s.need_bytes / GB, rel=5e-3)
    # What the chip offers: its capacity less the default runtime allowance.
    assert _num(_stat(out, "Memory the chip offers")) == pytest.approx(
        s.capacity_bytes * (1 - RUNTIME_ALLOWANCE) / GB, rel=5e-3)


def test_fit_and_chips_needed_by_hand():
    # Llama 3.1 405B, BF16, on one H100 SXM (80 GiB = 85,899,345,920 bytes): weights alone are
    # 2 bytes x params_total; with the KV cache of 4 x 131,072 tokens (126 layers x 8 KV heads x
    # 128 x 2 (K and V) x 2 bytes = 516,096 bytes per token), chips needed = ceil(need / (0.9 x 80 GiB)).
    m = catalog.model("llama-3.1-405b")
    params = transformer.param_counts(m).total
    kv_per_token = 2 * m.num_layers * m.num_kv_heads * m.head_dim * 2
    assert kv_per_token == 516_096
    need = 2 * params + kv_per_token * 131_072 * 4
    usable = 80 * GiB * (1 - RUNTIME_ALLOWANCE)
    chips = math.ceil(need / usable)
    text = _text(run("size_it_yourself", COMBOS[2])["html"])
    assert f"at least {int(chips):,} such chips" in text


def test_default_render_is_llama_70b_on_h200():
    out = render_static("size_it_yourself")
    assert 'data-widget="size_it_yourself"' in out and 'data-state="static"' in out
    s = size("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1)
    assert s.fits
    assert part5.rate_text(s.decode_tokens_per_s) in _text(out)


@pytest.mark.parametrize(
    "inputs, field, fragment",
    [
        ({"context": "0"}, "context", "Context must be 1 to 20,000,000 tokens, got 0"),
        ({"context": "-3"}, "context", "Context must be 1 to 20,000,000 tokens"),
        ({"context": "20000001"}, "context", "Context must be 1 to 20,000,000 tokens"),
        ({"context": "abc"}, "context", "Context must be a number"),
        ({"batch": "0"}, "batch", "Batch must be 1 to 100,000 sequences"),
        ({"batch": "2.5"}, "batch", "Batch must be a whole number"),
        ({"model": "gpt-5"}, "model", "Model must be one of"),
        ({"accelerator": "tpu-v9"}, "accelerator", "Accelerator must be one of"),
        ({"weights": "fp3"}, "weights", "Weight precision must be one of"),
        ({"kv": "mxfp4"}, "kv", "KV-cache precision must be one of"),
    ],
)
def test_bad_inputs_name_the_field(inputs, field, fragment):
    r = run("size_it_yourself", inputs)
    assert r["ok"] is False
    assert r["field"] == field
    assert fragment in r["message"]


def test_moe_line_for_gpt_oss_not_for_llama():
    m = catalog.model("gpt-oss-120b")
    pc = transformer.param_counts(m)
    text = _text(run("size_it_yourself", {"model": "gpt-oss-120b"})["html"])
    assert "is a mixture of experts" in text
    # 4 of 128 experts per token (config.json of openai/gpt-oss-120b: num_local_experts 128,
    # experts_per_token 4); the share is active / total.
    assert f"only {m.moe.experts_per_token} of them" in text and m.moe.experts_per_token == 4
    assert f"({pc.active / pc.total * 100:.1f}% of the total)" in text
    assert pc.active < pc.total / 10  # gpt-oss-120b runs ~5B of ~117B per token
    for dense in ("llama-3.1-70b", "llama-3.1-8b"):
        assert "mixture of experts" not in _text(run("size_it_yourself", {"model": dense})["html"])
        assert part5.moe_line(dense) is None


def test_moe_expert_share_shown_at_batch():
    # 1 - (1 - k/E)^B for gpt-oss-120b (k=4, E=128) at B=16: 1 - (124/128)^16 = 0.3983 -> "40%".
    share = 1 - (1 - 4 / 128) ** 16
    assert share == pytest.approx(0.3983, abs=1e-4)
    text = _text(run("size_it_yourself", {"model": "gpt-oss-120b", "batch": "16"})["html"])
    assert f"about {share * 100:.0f}% of the experts are touched" in text
    assert "experts are touched" not in _text(run("size_it_yourself", {"model": "gpt-oss-120b"})["html"])

def test_size_it_yourself_says_why_a_step_reads_fewer_weights_than_the_model_holds():
    # Llama 3.1 70B's input embedding is untied (descent.step.read_shares looks up a row per token),
    # so a step reads less than the weights segment shows; SmolLM2's tied table is the output head,
    # read in full, and its note says nothing of the kind.
    why = "the embedding table is looked up, a row per token, not read whole"
    assert not catalog.model("llama-3.1-70b").tie_embeddings and catalog.model("smollm2-135m").tie_embeddings
    assert why in _text(run("size_it_yourself", {"model": "llama-3.1-70b"})["html"])
    assert why not in _text(run("size_it_yourself", {"model": "smollm2-135m"})["html"])


def test_beyond_max_context_note():
    # Llama 3.1 70B's max_position_embeddings is 131,072 (config.json).
    over = _text(run("size_it_yourself", {"context": "200000"})["html"])
    assert "more than Llama 3.1 70B was built for (131,072 tokens)" in over
    assert "was built for" not in _text(run("size_it_yourself", {"context": "131072"})["html"])


def _need_bytes(model: str, weights: str, kv: str, context: int, batch: int, capacity: int) -> float:
    """Weights + KV cache + runtime allowance, computed here from param_counts and the KV element count."""
    m = catalog.model(model)
    w = transformer.param_counts(m).total * numerics.precision(weights).bits_per_weight / 8
    c = transformer.kv_cache_elements(m, context) * batch * numerics.kv_precision(kv).bits_per_weight / 8
    return w + c + RUNTIME_ALLOWANCE * capacity


@pytest.mark.parametrize(
    "model, weights, context",
    [
        ("llama-3.1-70b", "fp8", 8192),
        ("llama-3.1-8b", "bf16", 131072),
        ("deepseek-v3", "fp8", 8192),
        ("gpt-oss-120b", "mxfp4", 8192),
    ],
)
def test_wont_fit_rows_are_chips_below_the_need(model, weights, context):
    rows = part5.across_field(model, weights, "bf16", context, 1)
    assert sorted(s.accelerator for s in rows) == sorted(catalog.accelerators())
    expected = {
        a.id
        for a in catalog.accelerators().values()
        if a.memory_bytes < _need_bytes(model, weights, "bf16", context, 1, a.memory_bytes)
    }
    assert {s.accelerator for s in rows if not s.fits} == expected
    # fastest first
    speeds = [s.decode_tokens_per_s for s in rows]
    assert speeds == sorted(speeds, reverse=True)
    # the widget greys exactly those rows
    out = run("decode_across_field", {"model": model, "weights": weights, "context": str(context)})["html"]
    greyed = re.findall(
        r'<li class="descent-bar descent-bar--greyed[^"]*"><span class="descent-bar__label">([^<]+)<', out
    )
    # ... among the chips that serve on their own (the SRAM machines are named under the bars instead)
    shown = {i for i in expected if catalog.accelerator(i).single_chip_comparable}
    assert {html.unescape(g) for g in greyed} == {catalog.accelerator(i).name for i in shown}
    assert out.count("won&#x27;t fit") == len(shown)


def test_field_known_case_by_hand():
    # Llama 3.1 70B at FP8 needs > 70 GB of weights alone (70.55e9 parameters x 1 byte): it cannot
    # fit in an RTX 5090 (32 GiB) or a Groq chip (230 MB of SRAM), and fits in an H200 (141 GiB).
    fits = {s.accelerator: s.fits for s in part5.across_field("llama-3.1-70b", "fp8")}
    assert fits["rtx-5090"] is False and fits["groq-lpu"] is False and fits["h200"] is True


def test_decode_across_field_bad_input():
    r = run("decode_across_field", {"context": "0"})
    assert (r["ok"], r["field"]) == (False, "context")


# ---------------------------------------------------------------------------------------------
# Shortcodes (descent.site.values.across_chips)
# ---------------------------------------------------------------------------------------------


def _entry(kind: str, name: str):
    from descent.site import shortcodes

    e = shortcodes.registry(kind)[name]
    return lambda **raw: e.func(**e.bind({k: str(x) for k, x in raw.items()}))


def test_table_marks_wont_fit_rows():
    out = _entry("table", "decode_speed_across_field")(model="llama-3.1-70b", weights="fp8")
    lines = [ln for ln in out.strip().splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    # the SRAM machines (Groq, Cerebras) are left out of the table and named under it
    rows = [s for s in part5.across_field("llama-3.1-70b", "fp8")
            if catalog.accelerator(s.accelerator).single_chip_comparable]
    assert len(lines) == len(rows) == len(catalog.accelerators()) - 2
    for ln, s in zip(lines, rows, strict=True):
        assert ln.startswith(f"| {catalog.accelerator(s.accelerator).name} |")
        assert ("won't fit" in ln) is (not s.fits)
        assert part5.rate_text(s.decode_tokens_per_s) in ln


def test_sizing_and_share_values():
    s = size("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 8)
    got = _entry("value", "kv_cache_bytes")(
        model="llama-3.1-70b", accelerator="h200", weights="fp8", kv="bf16", context=8192, batch=8, unit="GiB", sig=3
    )
    # 8 sequences x 8,192 tokens x 327,680 bytes per token (80 layers x 8 KV heads x 128 x 2 x 2 bytes)
    assert s.kv_cache_bytes == 8 * 8192 * 327_680
    assert got == "20 GiB"
    share = _entry("value", "moe_expert_share")(model="gpt-oss-120b", batch=16, routing="uniform", sig=3)
    assert share == "39.8%"  # 1 - (124/128)^16 = 0.39829
    with pytest.raises(ValueError, match="dense"):
        _entry("value", "moe_expert_share")(model="llama-3.1-70b", batch=16, routing="uniform", sig=3)
    n = _entry("value", "chips_that_fit")(model="llama-3.1-70b", weights="fp8", kv="bf16", context=8192, batch=1)
    assert n == str(sum(1 for s in part5.across_field("llama-3.1-70b", "fp8") if s.fits))


def test_kv_formula_entries_equal_the_code():
    """The KV-cache formulas the page shows (sympy) equal descent.transformer, on every catalog row."""
    from descent import formulas
    for name in ("kv_cache_bytes", "kv_cache_bytes_mla", "kv_cache_bytes_sliding", "decode_tokens_per_s"):
        checks = formulas.FORMULAS[name].check()
        assert checks, name
        for label, f_value, pkg_value in checks:
            assert f_value == pytest.approx(pkg_value, rel=1e-12), f"{name}: {label}"
    # By hand: Llama 3.1 70B (L=80, K=8, d_head=128), T=8192, B=1, BF16: 2*80*8*128*8192*2 bytes.
    f = formulas.FORMULAS["kv_cache_bytes"]
    assert f.evaluate(L=80, K=8, d_head=128, T=8192, B=1, b=2) == 2 * 80 * 8 * 128 * 8192 * 2 == 2_684_354_560


def test_more_chips_give_less_than_proportional_speed():
    """Issue 23: with NCCL latency in every all-reduce, four times the chips give less than four times
    the speed, and the eight cost more per token than the two (Part 5's dials bullets and worked
    problem 1 say so; four times is only the bound)."""
    from descent import quantities as Q

    kw = dict(model="llama-3.1-70b", accelerator="h100-sxm", weights="fp8", kv="bf16", context=8192, batch=1)
    two, eight = (Q.get("tokens_per_s_per_user")(**kw, tp=tp) for tp in (2, 8))
    assert two < eight < 3 * two  # Part 5 says: less than three times the speed of two
    price = Q.get("server_usd_per_million_tokens")
    assert price(**kw, tp=2, price=3.0) < price(**kw, tp=8, price=3.0)
    # The page's words: tests/test_page_prose.py (the docs are not there when this runs in Pyodide).
