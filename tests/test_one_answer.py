"""One question, one answer (issue 22): the views of the one step model agree.

Every speed, size and price the site prints is a view of ``descent.step`` for one
``descent.scenario.Scenario``. These tests ask the same question of every view and require one
answer:

1. the six disagreements the issue found, each at the issue's own inputs;
2. properties over every catalog model and chip (and a few weight choices on chips that cover the
   FP4, FP8 and no-FP8 compute paths): a lone request's TTFT, the time between tokens, the weights
   and KV cache at one device, the price of a token;
3. every widget number labelled ``data-quantity="NAME"`` is that quantity at the widget's inputs;
4. a quantity printed on two pages at the same inputs prints the same text;
5. the import graph has no circle, and ``descent.params`` is a leaf.

Equality is exact (``==``) where the views share one code path (the same ``StepModel.step``
floats), and ``pytest.approx(rel=1e-12)`` only where one view takes a reciprocal of another's
number (``1 / (1 / x)`` need not round back to ``x``); each comparison says which.
"""

from __future__ import annotations

import ast
import collections
import functools
import html
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descent import (
    catalog,
    cli,
    dials,
    economics,
    hardware,
    memory,
    numerics,
    parallel,
    roofline,
    serving,
    step,
)
from descent import params as P
from descent import quantities as Q
from descent import weights as W
from descent import widgets as widget_runtime
from descent.scenario import Scenario
from descent.units import BYTE_UNITS

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "descent"

MODELS = list(catalog.models())
CHIPS = list(catalog.accelerators())

#: Chips that cover the three compute paths of ``step.compute_precision`` (checked below):
#: H100 SXM has FP8 but no FP4, B200 has FP4, A100 80 GB has neither (16-bit only).
CHIPS_FEW = ("h100-sxm", "b200", "a100-sxm-80gb")
#: Weight choices besides ``released``: a uniform FP8 format (the issue's fp8_b128), a uniform FP4
#: format (NVFP4) and a GGUF mix whose tensors have different types (Q4_K_M).
WEIGHTS_FEW = ("fp8_b128", "nvfp4", "q4_k_m")


def _cases() -> list[tuple[str, str]]:
    """(chip, weights): every chip as released, and the few weight choices on the few chips."""
    return [(a, "released") for a in CHIPS] + [(a, w) for a in CHIPS_FEW for w in WEIGHTS_FEW]


def _tokens(model: str, want: int = 8192) -> int:
    """``want`` tokens, or the model's whole context if that is shorter (SmolLM2: 8,192)."""
    return min(want, catalog.resolve_model(model).max_context)


def test_the_few_chips_cover_every_compute_path():
    # step.compute_precision: FP8 weights in FP8 where the chip has an FP8 peak, NVFP4 in FP4 where
    # it has an FP4 peak, else the 16-bit peak (catalog accelerators.toml peaks).
    m = "llama-3.1-70b"
    got = {a: (step.compute_precision(m, a, "fp8_b128"), step.compute_precision(m, a, "nvfp4")) for a in CHIPS_FEW}
    assert got == {"h100-sxm": ("fp8", "bf16"), "b200": ("fp8", "fp4"), "a100-sxm-80gb": ("bf16", "bf16")}
    # A GGUF mix is weight-only: dequantized, the matmuls run at the 16-bit peak.
    assert step.compute_precision(m, "b200", "q4_k_m") == "bf16"


# =============================================================================================
# 1. The six disagreements of the issue, at the inputs
# =============================================================================================


def test_a_time_to_first_token_is_one_number():
    """Llama 3.1 70B, one H100 SXM, weights FP8 in 128x128 blocks, an 8,192-token prompt: Part 3
    said 1.24 s (serving sent fp8_b128 to the BF16 peak) and Part 5's dials 620 ms (FP8 peak)."""
    m, a, w, prompt = "llama-3.1-70b", "h100-sxm", "fp8_b128", 8192
    pre = serving.prefill(serving.server(m, a, w), prompt)
    part3 = pre.seconds
    part5 = dials.server_dials(m, a, w, context=prompt, batch=1, tp=1).ttft_s
    hw = hardware.prefill_time(m, a, w, prompt_tokens=prompt).seconds
    roof = roofline.step(m, a, w, context=prompt, batch=1, phase="prefill").seconds_per_step
    q_part3 = Q.get("prefill_s")(model=m, accelerator=a, weights=w, prompt_tokens=prompt)
    q_part5 = Q.get("ttft_s")(model=m, accelerator=a, weights=w, context=prompt, tp=1)
    # Exact: every one is StepModel.step(prefill_spans=[(0, 8192)]) of the same scenario.
    assert part3 == part5 == hw == roof == q_part3 == q_part5
    # The one compute-precision rule (step.compute_precision; numerics.MATMUL_PRECISION maps
    # fp8_b128 to fp8); the serving and hardware modules no longer carry their own.
    assert step.compute_precision(m, a, w) == "fp8"
    for module in (serving, hardware):
        assert getattr(module, "compute_precision", step.compute_precision) is step.compute_precision
    # A prompt of 8,192 tokens is compute-bound: its FLOPs over H100 SXM's dense FP8 peak
    # (catalog: 1,978.9 TFLOP/s), exactly as step.StepModel divides them.
    assert pre.bound == "compute"
    assert part3 == pre.flops / catalog.resolve_accelerator(a).peak("fp8")
    # 1.2267e15 FLOP / 1.9789e15 FLOP/s = 0.620 s: Part 5's answer was the right one.
    assert part3 == pytest.approx(0.6199, abs=5e-5)
    # And the two pages print it alike.
    assert Q.get("prefill_s").format(q_part3) == Q.get("ttft_s").format(q_part5) == "620 ms"


def _cli_json(capsys, argv: list[str]) -> dict:
    assert cli.main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_b_weights_at_one_device_are_the_sizings(capsys):
    """Llama 3.1 70B at Q4_K_M: 42.5 GB in "Size it yourself" (descent size) and 43.2 GB in "Server
    dials" (descent parallel --tp 1), one of them by a single bits-per-weight for every tensor."""
    m, a, w = "llama-3.1-70b", "h100-sxm", "q4_k_m"
    size = memory.size(m, a, w).weights_bytes
    plan = parallel.plan(m, a, w, tp=1)
    fp = step.footprint(Scenario(model=m, accelerator=a, weights=w))
    by_group = sum(W.bytes_by_group(catalog.resolve_model(m), w).values())
    # Exact: every view sums weights.bytes_by_group (whole bytes, far below 2**53).
    assert size == plan.weights_bytes == plan.weights_bytes_per_device == fp.weights_bytes == by_group
    # llama.cpp's Q4_K_M mix gives each tensor its own GGUF type (weights.bytes_by_group): the
    # issue's 42.5 GB. The other answer, 43.2 GB, was one bits-per-weight for all 70.55e9 weights
    # (numerics.weight_bytes, now used only by formulas.py's check of the page's formula).
    assert size == 42_512_531_456
    assert Q.get("weights_bytes").format(size, "GB") == "42.5 GB"
    one_rate = numerics.weight_bytes(70_553_706_496, w)
    assert Q.get("weights_bytes").format(one_rate, "GB") == "43.2 GB" and size != one_rate
    # The command line: `descent size --json` and `descent parallel --tp 1 --json` say the same.
    sized = _cli_json(capsys, ["size", m, "-a", a, "-w", w, "--json"])
    split = _cli_json(capsys, ["parallel", m, "-a", a, "-w", w, "--tp", "1", "--json"])
    assert sized["weights_bytes"] == split["weights_bytes_per_device"] == size
    assert sized["kv_cache_bytes"] == split["kv_bytes_per_device"] == fp.kv_bytes


def test_c_one_link_one_speed():
    """PCIe 5.0 x16 was 64 GB/s in Part 4's table and 63 GB/s in Part 3's (typed twice)."""
    from descent.site.shortcodes import resolve

    pcie = catalog.link("pcie5")
    # PCI-SIG PCIe 5.0 base specification: 32 GT/s per lane x 16 lanes, 128b/130b, one direction.
    assert pcie.bytes_per_s == pytest.approx(32e9 * 16 * 128 / 130 / 8, rel=1e-15)
    # Part 3's KV-transfer path carries the catalog row itself.
    moved = {x.id: x for x, _, _ in serving.kv_transfer("llama-3.1-70b", "h200", "bf16", 8192)}
    assert moved["pcie5"] is pcie or moved["pcie5"].bytes_per_s == pcie.bytes_per_s
    # The quantity and both pages' tables print one text.
    text = Q.get("link_bandwidth").format(Q.get("link_bandwidth")(link="pcie5"))
    assert text == "63 GB/s"
    part4 = resolve("<!-- descent:table links -->", "part-4-hardware.md")
    part3 = resolve("<!-- descent:table kv_transfer_table -->", "part-3-serving-software.md")
    for table in (part4, part3):
        rows = [r for r in table.splitlines() if r.startswith(f"| {pcie.label} |")]
        assert len(rows) == 1 and rows[0].split(" | ")[1] == text, rows


@pytest.mark.parametrize("extra", [{}, {"weights": "fp8"}, {"weights": "bf16"}, {"weights": "bf16", "kv": "fp8"}],
                         ids=["defaults", "fp8", "bf16", "bf16-kv-fp8"])
def test_d_time_between_tokens_is_one_over_the_decode_rate(extra):
    """Batch 1,024 at 128 tokens on an H200: itl_s was 144 ms and 1 / decode_tokens_per_s 72 ms."""
    args = {"accelerator": "h200", "context": 128, "batch": 1024, **extra}
    itl = Q.get("itl_s")(**args)
    rate = Q.get("decode_tokens_per_s")(**args)
    # approx: rate is 1 / seconds of the same step, and 1 / (1 / x) may differ from x in the last bit.
    assert itl == pytest.approx(1 / rate, rel=1e-12)
    # The two quantities default alike: both take their weights and KV precision from params.
    defaults = {q: {p.name: p.default for p in Q.get(q).params} for q in ("itl_s", "decode_tokens_per_s")}
    assert {k: defaults["itl_s"][k] for k in ("model", "weights", "kv")} == \
        {k: defaults["decode_tokens_per_s"][k] for k in ("model", "weights", "kv")} == \
        {"model": P.MODEL.default, "weights": P.WEIGHTS.default, "kv": P.KV.default}
    # 1,024 tokens x (2 x 69.5e9 matmul weights, the 70.6e9 less the looked-up embedding, plus
    # attention over 129 positions) = 1.427e14 FLOP: compute-bound, over H200's dense peak in the
    # weights' precision (catalog: 1,978.9 TFLOP/s FP8, 989.4 BF16): 72.1 ms in FP8, 144 ms in BF16.
    # The two numbers were these two, from quantities with different default weights.
    w = args.get("weights", P.WEIGHTS.default)
    c = step.decode(Scenario(accelerator="h200", weights=w, kv=args.get("kv", P.KV.default), context=128, batch=1024))
    assert c.bound == "compute" and itl == c.flops / catalog.resolve_accelerator("h200").peak(c.compute_precision)
    assert itl == pytest.approx({"fp8": 0.0721, "bf16": 0.1442}[w], abs=5e-5)


def test_d_the_core_views_default_alike():
    # With no weights or KV argument, the serving view and the sizing answer the same question.
    m, a = "llama-3.1-70b", "h200"
    itl = serving.decode_step(serving.server(m, a), 1024, 128).seconds
    assert itl == hardware.decode_ceiling(m, a, context=128, batch=1024).step_seconds  # exact: one step
    sized = memory.size(m, a, context=128, batch=1024).decode_tokens_per_s
    assert itl == pytest.approx(1 / sized, rel=1e-12)  # approx: a reciprocal


def test_e_the_printed_bubble_is_the_one_the_time_uses():
    """`descent parallel llama-3.1-70b -a h100-sxm -w bf16 --pp 8 -b 8` printed a 46.7% bubble with 8
    micro-batches (a training flush) and 87.5% with 1, and the same 47.90 ms step for both."""
    m, a, w = "llama-3.1-70b", "h100-sxm", "bf16"
    plans = {mb: parallel.plan(m, a, w, batch=8, pp=8, microbatches=mb) for mb in (1, 2, 4, 8)}
    # A serving engine's steady state (step module docstring): with m micro-batches over p stages,
    # each stage idles max(0, p - m) / p: 7/8 with one, none with eight.
    assert {mb: p.bubble_fraction for mb, p in plans.items()} == {1: 7 / 8, 2: 6 / 8, 4: 4 / 8, 8: 0.0}
    assert all(p.bubble_fraction == p.step.bubble == step.pipeline_bubble(8, mb) for mb, p in plans.items())
    # The bubble moves the clock: eight micro-batches keep every stage busy, so a token comes sooner.
    one, eight = plans[1].decode_step_seconds, plans[8].decode_step_seconds
    assert eight < one
    # Time = max(sum of the micro-batches' stage times, pp x the longest). All micro-batches are
    # alike here, so the longest stage time is (max(memory, compute) + comm) / pp of StepCost's
    # per-path fields (each is pp x one stage's).
    for mb, p in plans.items():
        c = p.step
        stage = (max(c.memory_seconds, c.compute_seconds) + c.comm_seconds) / 8
        busy = mb * stage
        assert c.seconds == pytest.approx(max(busy, 8 * stage), rel=1e-12)  # approx: sums in another order
        assert c.bubble == pytest.approx(1 - busy / c.seconds, abs=1e-12)
    # With eight micro-batches of one sequence each, a sequence waits for the eight in turn: eight
    # stage times of a one-sequence micro-batch, which is the step of batch 1 through the 8 stages.
    single = parallel.plan(m, a, w, batch=1, pp=8, microbatches=1).decode_step_seconds
    assert eight == pytest.approx(single, rel=1e-12)  # approx: 8 additions against one product
    # With one micro-batch the token crosses the 8 stages in turn: the one-device step's reads
    # (weights + 8 sequences' KV cache) plus 8 stage-to-stage sends.
    alone = step.decode(Scenario(model=m, accelerator=a, weights=w, batch=8))
    assert one == pytest.approx(alone.seconds + plans[1].step.comm_seconds, rel=1e-12)
    # The values the issue quotes: 47.9 ms with one micro-batch (unchanged), 42.3 ms with eight.
    assert (round(one * 1e3, 1), round(eight * 1e3, 1)) == (47.9, 42.3)


# (f) The build machine's timings (Parts 0, 3 and 4 printed prefill 95.0 / 157 / 97.5 tokens/s and
# decode 9.99 / 10.6 / 7.30 tokens/s) are covered by tests/test_machine_record.py,
# test_parts_0_3_and_4_print_one_prefill_and_one_decode: the three pages' shortcodes resolve to one
# text per timing, the committed record's median rate, and computing them times nothing
# (test_every_timing_on_a_page_comes_from_the_record). Not repeated here.


# =============================================================================================
# 2. Properties over every catalog model and chip
# =============================================================================================


def _fail_report(bad: list[str]) -> str:
    return f"{len(bad)} disagreements:\n" + "\n".join(bad[:40])


@pytest.mark.parametrize("model", MODELS)
def test_a_lone_requests_ttft_is_one_number(model):
    """TTFT of one prompt with the server to itself: serving.prefill (Part 3, the simulator's closed
    form), hardware.prefill_time, the dials at tp=1, the roofline's prefill point and step.prefill."""
    prompt = _tokens(model)
    bad = []
    for a, w in _cases():
        sc = Scenario(model=model, accelerator=a, weights=w, context=prompt, prompt_tokens=prompt)
        got = {
            "step.prefill": step.prefill(sc).seconds,
            "serving.prefill": serving.prefill(serving.server(model, a, w), prompt).seconds,
            "hardware.prefill_time": hardware.prefill_time(model, a, w, prompt_tokens=prompt).seconds,
            "dials tp=1": dials.server_dials(model, a, w, context=prompt, batch=1, tp=1).ttft_s,
            "roofline prefill": roofline.step(model, a, w, context=prompt, batch=1, phase="prefill").seconds_per_step,
        }
        if len(set(got.values())) != 1:  # exact: one StepModel.step(prefill_spans=[(0, prompt)])
            bad.append(f"{model} {a} {w} prompt {prompt}: {got}")
    assert not bad, _fail_report(bad)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("batch", [1, 64])
def test_the_time_between_tokens_is_one_number(model, batch):
    """One decode step: serving.decode_step (Part 3), the decode ceiling (and 1 / its per-sequence
    rate), the roofline's decode point, the dials at tp=1 and step.decode."""
    context = _tokens(model)
    bad = []
    for a, w in _cases():
        itl = serving.decode_step(serving.server(model, a, w), batch, context).seconds
        ceiling = hardware.decode_ceiling(model, a, w, context=context, batch=batch)
        got = {
            "step.decode": step.decode(Scenario(model=model, accelerator=a, weights=w, context=context,
                                                batch=batch)).seconds,
            "decode_ceiling": ceiling.step_seconds,
            "roofline decode": roofline.step(model, a, w, context=context, batch=batch).seconds_per_step,
            "dials tp=1": dials.server_dials(model, a, w, context=context, batch=batch, tp=1).step_s,
        }
        # exact: one StepModel.step(decode_contexts=[context] * batch)
        if set(got.values()) != {itl}:
            bad.append(f"{model} {a} {w} batch {batch}: serving {itl} vs {got}")
        # approx: a reciprocal of the same float
        if ceiling.tokens_per_s_per_sequence != pytest.approx(1 / itl, rel=1e-12):
            bad.append(f"{model} {a} {w} batch {batch}: 1/itl {1 / itl} vs {ceiling.tokens_per_s_per_sequence}")
    assert not bad, _fail_report(bad)


@pytest.mark.parametrize("model", MODELS)
def test_weights_and_kv_cache_at_one_device_are_the_sizings(model):
    """memory.size (descent size), step.footprint and parallel.plan at tp=1 (descent parallel)."""
    context = _tokens(model)
    bad = []
    for a, w in _cases():
        s = memory.size(model, a, w, context=context, batch=4)
        fp = step.footprint(Scenario(model=model, accelerator=a, weights=w, context=context, batch=4))
        plan = parallel.plan(model, a, w, context=context, batch=4, tp=1)
        # exact: each sums weights.bytes_by_group; (total - experts) + experts is exact for
        # whole bytes below 2**53 (every catalog model's weights are)
        weights = {s.weights_bytes, fp.weights_bytes, fp.weights_bytes_per_device, plan.weights_bytes,
                   plan.weights_bytes_per_device}
        # exact: each is step.kv_cache_bytes(model, kv, context, 4), undivided at one device
        kv = {s.kv_cache_bytes, fp.kv_bytes, fp.kv_bytes_per_device, plan.kv_bytes_per_device}
        if len(weights) != 1 or len(kv) != 1:
            bad.append(f"{model} {a} {w}: weights {sorted(weights)} kv {sorted(kv)}")
        # what the model needs: the weights and the KV cache, the sizing's and the footprint's
        if s.need_bytes != pytest.approx(fp.need_bytes, rel=1e-12) or s.usable_bytes != fp.usable_bytes:
            bad.append(f"{model} {a} {w}: need {fp.need_bytes} vs sizing {s.need_bytes}")
    assert not bad, _fail_report(bad)


@pytest.mark.parametrize("model", MODELS)
def test_the_price_of_a_token_is_one_number(model):
    """economics.token_cost (Part 5's cost by batch) and the server dials at tp=1."""
    context = _tokens(model)
    bad = []
    for a, w in _cases():
        for batch in (1, 16):
            cost = economics.token_cost(model, a, w, context=context, batch=batch, price=2.5)
            dial = dials.server_dials(model, a, w, context=context, batch=batch, tp=1, price=2.5)
            # exact: both are economics.usd_per_million_tokens(step.decode(...).tokens_per_s_total, 1, price)
            if (cost.usd_per_million_tokens, cost.tokens_per_s_total) != \
                    (dial.usd_per_million_tokens, dial.tokens_per_s_total):
                bad.append(f"{model} {a} {w} batch {batch}: token_cost {cost} vs dials {dial}")
    assert not bad, _fail_report(bad)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_view_agrees_anywhere(data):
    """The properties above at drawn inputs: any model, chip, weight choice, KV precision, context,
    batch and prompt."""
    model = data.draw(st.sampled_from(MODELS), "model")
    a = data.draw(st.sampled_from(CHIPS), "chip")
    w = data.draw(st.sampled_from(W.scheme_names()), "weights")
    kv = data.draw(st.sampled_from(P.KV.values()), "kv")
    top = min(catalog.resolve_model(model).max_context, 131_072)
    context = data.draw(st.integers(1, top), "context")
    prompt = data.draw(st.integers(1, min(top, 32_768)), "prompt")
    batch = data.draw(st.integers(1, 256), "batch")
    sv = serving.server(model, a, w, kv)
    # exact: one StepModel.step each
    ttft = serving.prefill(sv, prompt).seconds
    assert ttft == hardware.prefill_time(model, a, w, kv, prompt_tokens=prompt).seconds
    assert ttft == dials.server_dials(model, a, w, kv, context=prompt, batch=1, tp=1).ttft_s
    assert ttft == roofline.step(model, a, w, kv, context=prompt, batch=1, phase="prefill").seconds_per_step
    itl = serving.decode_step(sv, batch, context).seconds
    ceiling = hardware.decode_ceiling(model, a, w, kv, context=context, batch=batch)
    assert itl == ceiling.step_seconds == roofline.step(model, a, w, kv, context=context, batch=batch).seconds_per_step
    dial = dials.server_dials(model, a, w, kv, context=context, batch=batch, tp=1)
    assert itl == dial.step_s
    assert ceiling.tokens_per_s_per_sequence == pytest.approx(1 / itl, rel=1e-12)  # approx: a reciprocal
    s = memory.size(model, a, w, kv, context=context, batch=batch)
    cost = economics.token_cost(model, a, w, kv, context=context, batch=batch)
    plan = parallel.plan(model, a, w, kv, context=context, batch=batch, tp=1)
    assert s.weights_bytes == plan.weights_bytes_per_device  # exact: whole bytes
    assert s.kv_cache_bytes == plan.kv_bytes_per_device
    assert cost.usd_per_million_tokens == dial.usd_per_million_tokens  # exact: one rule, one rate


# =============================================================================================
# 3. A widget's labelled number is its quantity at the widget's inputs
# =============================================================================================

#: A stat view that names its quantity (views.render_stat): the number, then an optional unit.
_STAT = re.compile(
    r'<div class="descent-stat[^"]*" data-quantity="(?P<q>[^"]+)"><p class="descent-stat__label">[^<]*</p>'
    r'<p class="descent-stat__value"><span class="descent-stat__number">(?P<num>[^<]*)</span>'
    r'(?: <span class="descent-stat__unit">(?P<unit>[^<]*)</span>)?')

#: Unit words a printed number may carry, with the factor to the quantity's own unit.
_SCALE = {
    **{u: float(f) for u, f in BYTE_UNITS.items()},
    **{f"{p}B/s": f for p, f in (("", 1.0), ("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12), ("P", 1e15))},
    **{f"{p}FLOP/s": f for p, f in (("", 1.0), ("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12), ("P", 1e15))},
    "ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "days": 86400.0,
}
#: Words after a number that do not scale it.
_PLAIN = ("tokens/s", "FLOP/byte", "J", "times", "per million", "of peak", "×", "")

_NUMBER = re.compile(r"(?P<sign>\$?)(?P<int>[0-9][0-9,]*)(?:\.(?P<frac>[0-9]+))?(?P<pct>%?)\s*(?P<rest>.*)")


def _printed(number: str, unit: str | None) -> tuple[float, float]:
    """A printed number read back: ``(value, half a unit in its last printed digit)``, both in the
    quantity's own unit (bytes, seconds, a fraction for a percent). Whole numbers are taken at three
    significant figures at least (``units.DEFAULT_SIG``): "12,300" is 12,300 +- 50."""
    m = _NUMBER.fullmatch(number.strip())
    assert m, f"not a number: {number!r}"
    digits = m["int"].replace(",", "")
    frac = m["frac"] or ""
    value = float(f"{digits}.{frac}" if frac else digits)
    if frac:
        step_ = 10.0 ** -len(frac)
    else:
        step_ = 10.0 ** max(0, len(digits.lstrip("0")) - 3)
    words = " ".join(x for x in (m["rest"].strip(), (unit or "").strip()) if x).replace("×", "").strip()
    scale = 1.0
    if m["pct"]:
        scale = 0.01
    elif words in _SCALE:
        scale = _SCALE[words]
    else:
        assert words in _PLAIN or words.split(" ")[0] in _PLAIN, f"unknown unit {words!r} after {number!r}"
    return value * scale, step_ * scale / 2


@functools.cache
def _rendered(name: str, args: tuple[tuple[str, str], ...]) -> tuple[str, dict]:
    """A widget's pre-rendered HTML at ``args`` (shortcode strings) and the inputs it ran with."""
    w = widget_runtime.get(name)
    values = widget_runtime.coerce(w, dict(args))
    return widget_runtime.render_static(name, **dict(args)), values


def _labels_quantities(fn, seen: set | None = None) -> bool:
    """Whether a widget's compute function (or a widget-package function it calls, followed through
    its module's globals) passes ``quantity=`` to a view. Widgets that never do are not rendered
    here: decode_across_field alone takes 2 to 4 s (memory.size's compute-bound bisection for 22
    chips) and labels nothing. test_vocabulary.test_widget_outputs_name_real_quantities renders
    every widget."""
    import inspect
    import textwrap

    seen = set() if seen is None else seen
    if fn in seen or not getattr(fn, "__module__", "").startswith("descent.widgets"):
        return False
    seen.add(fn)
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if any(k.arg == "quantity" for k in node.keywords):
                return True
            callee = fn.__globals__.get(node.func.id) if isinstance(node.func, ast.Name) else None
            if inspect.isfunction(callee) and _labels_quantities(callee, seen):
                return True
    return False


def _widget_instances() -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    """Every widget that labels a number with a quantity, at its defaults, at every widget shortcode
    of the pages with its arguments, and at a few more inputs that move the step model off the
    running example."""
    from descent.site.shortcodes import find_shortcodes

    names = [n for n in widget_runtime.names() if _labels_quantities(widget_runtime.get(n).compute)]
    out = [(n, ()) for n in names]
    for page in sorted((ROOT / "docs").glob("*.md")):
        for sc in find_shortcodes(page.read_text(encoding="utf-8"), page.name):
            args = tuple(sorted((k, v) for k, v in sc.args.items() if k != "id"))
            if sc.kind == "widget" and sc.name in names and args and (sc.name, args) not in out:
                out.append((sc.name, args))
    out += [
        ("server_dials", (("accelerator", "h100-sxm"), ("tp", "1"), ("weights", "fp8_b128"))),  # issue 22 (a)
        ("server_dials", (("accelerator", "b200"), ("batch", "64"), ("model", "gpt-oss-120b"), ("tp", "2"),
                          ("weights", "nvfp4"))),
        ("prefill_decode", (("accelerator", "a100-sxm-80gb"), ("model", "llama-3.1-8b"), ("prompt_tokens", "8192"),
                            ("weights", "q4_k_m"))),
        ("roofline_explorer", (("accelerator", "b200"), ("batch", "256"), ("context", "2048"), ("weights", "nvfp4"))),
        ("accelerator_landscape", (("accelerator", "mi300x"), ("model", "deepseek-v3"), ("weights", "released"))),
        ("joules_per_token", (("accelerator", "h100-sxm"), ("batch", "32"), ("weights", "q4_k_m"))),
        ("break_even", (("accelerator", "b200"), ("batch", "8"), ("weights", "nvfp4"))),
        ("size_it_yourself", (("accelerator", "h100-sxm"), ("batch", "8"), ("kv", "fp8"), ("model", "qwen3-235b-a22b"),
                              ("weights", "released"))),
    ]
    return out




def _labelled(name: str, args) -> list[tuple[str, str, str | None, dict]]:
    markup, values = _rendered(name, args)
    out = []
    for m in _STAT.finditer(markup):
        q = Q.get(m["q"])
        inputs = {p.name: values[p.name] for p in q.params if p.name in values}
        out.append((m["q"], html.unescape(m["num"]), html.unescape(m["unit"]) if m["unit"] else None, inputs))
    return out


def _check(name: str, quantity: str, number: str, unit: str | None, inputs: dict) -> str | None:
    q = Q.get(quantity)
    want = q(**inputs)
    if q.kind == "text":
        return None if number == str(want) else f"{name}: {quantity} printed {number!r}, is {want!r} at {inputs}"
    got, tol = _printed(number, unit)
    if q.kind == "integer":
        ok = got == want
    else:
        ok = abs(got - want) <= tol * (1 + 1e-9) + 1e-12 * abs(want)
    return None if ok else (f"{name}: {quantity} printed {number!r} {unit or ''} (= {got} +- {tol}), "
                            f"is {want!r} ({q.format(want)}) at {inputs}")


@pytest.mark.parametrize("name,args", _widget_instances(), ids=lambda x: x if isinstance(x, str) else
                         ",".join(f"{k}={v}" for k, v in x) or "defaults")
def test_a_widgets_labelled_numbers_are_its_quantities(name, args):
    bad = []
    for quantity, number, unit, inputs in _labelled(name, args):
        problem = _check(name, quantity, number, unit, inputs)
        if problem:
            bad.append(problem)
    assert not bad, "\n".join(bad)




def test_printed_numbers_read_back():
    assert _printed("4.80 TB/s", None) == (pytest.approx(4.8e12), pytest.approx(5e9))
    assert _printed("12,300", "tokens/s") == (12300.0, 50.0)
    assert _printed("0.539%", "of peak") == (pytest.approx(0.00539), pytest.approx(5e-6))
    assert _printed("$1.36", None) == (pytest.approx(1.36), pytest.approx(0.005))
    assert _printed("715 ms", None) == (pytest.approx(0.715), pytest.approx(5e-4))
    assert _printed("320", "KiB") == (320 * 1024, 512.0)
    assert _printed("2.80×", None) == (pytest.approx(2.8), pytest.approx(0.005))


# =============================================================================================
# 4. A quantity printed on two pages at the same inputs prints the same text
# =============================================================================================


def test_one_quantity_at_one_set_of_inputs_prints_one_text():
    """Every ``<!-- descent:value NAME ... -->`` of the pages that names a quantity or a catalog field,
    grouped by its name and its arguments with every default filled in (so ``context=8192``,
    ``context=8k`` and no ``context`` are one group): each group resolves to one text."""
    from descent.site import shortcodes

    entries = shortcodes.registry("value")
    groups: dict[tuple, list[tuple[str, dict]]] = collections.defaultdict(list)
    for page in sorted((ROOT / "docs").rglob("*.md")):
        rel = page.relative_to(ROOT / "docs").as_posix()
        for sc in shortcodes.find_shortcodes(page.read_text(encoding="utf-8"), rel):
            # Quantities and catalog fields; recordings (trace, GGUF, measurements) are test_machine_record's.
            if sc.kind != "value" or not (sc.name in Q.QUANTITIES or sc.name.endswith("_field")):
                continue
            bound = entries[sc.name].bind(sc.args)
            groups[(sc.name, tuple(sorted((k, repr(v)) for k, v in bound.items())))].append((rel, bound))
    shared = {k: v for k, v in groups.items() if len(v) > 1}
    assert len(shared) >= 10, "fewer quantities printed twice than expected: is the grouping right?"
    bad = []
    for (name, _), where in shared.items():
        texts = {}
        for page, bound in where:
            token = shortcodes._PAGE.set(page)
            try:
                texts.setdefault(entries[name].func(**bound), []).append(page)
            finally:
                shortcodes._PAGE.reset(token)
        if len(texts) > 1:
            bad.append(f"{name} {where[0][1]}: {texts}")
    assert not bad, "\n".join(bad)


# =============================================================================================
# 5. The import graph
# =============================================================================================


def _modules() -> dict[str, Path]:
    out = {}
    for f in SRC.rglob("*.py"):
        parts = list(f.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


@functools.lru_cache(maxsize=1)
def _import_edges() -> dict[str, set[str]]:
    """Module -> the descent modules it imports, at module level or inside functions (as
    ../shared/tools/import-circles counts them): ``from a import b`` reaches ``a.b`` when that is a
    module, else ``a``; a package's ``__init__`` importing its own submodules is not counted (that
    is how a package hands names on)."""
    mods = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, f in mods.items():
        is_pkg = f.name == "__init__.py"
        base = m if is_pkg else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    b = base
                    for _ in range(node.level - 1):
                        b = b.rpartition(".")[0]
                    mod = f"{b}.{node.module}" if node.module else b
                else:
                    mod = node.module or ""
                targets = [f"{mod}.{a.name}" for a in node.names] + [mod]
            else:
                continue
            for t in targets:
                if t == "descent" or t.startswith("descent."):
                    r = resolve(t)
                    if r and r != m and not (is_pkg and r.startswith(m + ".")):
                        edges[m].add(r)
    return edges


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_the_circle_finder_finds_circles():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_counting_imports_inside_functions():
    circles = _circles(_import_edges())
    assert not circles, "import circles (module level and inside functions):\n" + \
        "\n".join(", ".join(c) for c in circles)


def test_params_is_a_leaf():
    # descent.params imports nothing of descent but checks and units, inside functions included.
    assert _import_edges()["descent.params"] <= {"descent.checks", "descent.units", "descent"}
    assert _import_edges()["descent.checks"] <= {"descent"} and _import_edges()["descent"] == set()


# =============================================================================================
# 6. A widget's note and the page's prose print one quantity alike (issue 23, expert review)
# =============================================================================================


def test_prefill_decode_widget_prints_the_ratio_as_the_prose_does():
    """Part 3's prose prints ``prefill_decode_ratio context=1024 sig=3`` ("a factor of ..."); the
    prefill_decode widget (prompt 1,024 by default, so its decode step is at context 1,024, batch 1)
    said "210 times slower per token" at two significant figures. Both now print the quantity's
    own text at three."""
    from descent.site import shortcodes

    page = (ROOT / "docs" / "part-3-serving-software.md").read_text(encoding="utf-8")
    [sc] = [s for s in shortcodes.find_shortcodes(page, "part-3") if s.name == "prefill_decode_ratio"]
    prose = shortcodes.registry("value")[sc.name].func(**shortcodes.registry("value")[sc.name].bind(sc.args))
    markup, values = _rendered("prefill_decode", ())
    assert values["prompt_tokens"] == int(sc.args["context"])
    note = re.search(r"([0-9][0-9,.]*) times slower per token", html.unescape(markup))
    assert note, "the widget no longer prints the ratio"
    assert note[1] == prose
    # And it is the quantity's value at the widget's inputs, not a copy: at another prompt both move.
    markup4k, _ = _rendered("prefill_decode", (("prompt_tokens", "4096"),))
    q = Q.get("prefill_decode_ratio")
    want = q.format(q(prompt_tokens=4096, context=4096, batch=1), sig=3)
    assert f"{want} times slower per token" in html.unescape(markup4k)
    assert want != prose


def test_decode_across_field_counts_the_chips_as_the_prose_does():
    """Part 5's prose: "Of the <count what=accelerators> chips in the catalog, <chips_that_fit> can
    hold this model on their own"; the decode_across_field widget said "12 of 20 chips" because it
    counted only the chips it draws (the on-chip-memory machines are left out of the bars). It now
    counts the whole catalog, as the prose does, at the widget's own inputs."""
    from descent.widgets import part5

    markup, values = _rendered("decode_across_field", ())
    text = html.unescape(markup)
    m = re.search(r"([0-9,]+) of the ([0-9,]+) chips in the catalog hold it on their own", text)
    assert m, "the widget no longer says how many chips hold the model"
    want_fit = Q.get("chips_that_fit")(model=values["model"], weights=values["weights"], kv=part5.FIELD_KV,
                                       context=values["context"], batch=part5.FIELD_BATCH)
    assert int(m[1].replace(",", "")) == want_fit
    assert int(m[2].replace(",", "")) == len(CHIPS)
    # The prose's own inputs are the widget's defaults (Llama 3.1 70B in FP8, one sequence of
    # 8,192 tokens in a BF16 cache), so the page and the widget print one count.
    assert (values["model"], values["weights"], values["context"]) == ("llama-3.1-70b", "fp8", 8192)
    assert (part5.FIELD_KV, part5.FIELD_BATCH, values["context"]) == (P.KV.default, P.BATCH.default, P.CONTEXT.default)
