"""Part 3's widgets (descent.widgets.part3): each shows what descent.serving computes for its inputs."""

from __future__ import annotations

import pytest
from widget_html import stat, text

from descent import serving
from descent.units import format_number, format_percent, format_time
from descent.widgets import get, names, render_static, run

PART3 = ["batching", "break_even", "kv_transfer", "paged_kv", "prefill_decode", "prefix_cache", "speculative"]


def html(name, **inputs):
    res = run(name, inputs)
    assert res["ok"], res
    return res["html"]


def test_registered_with_defaults_from_the_running_example():
    assert set(PART3) <= set(names())
    assert get("batching").defaults()["model"] == "llama-3.1-70b"
    assert get("batching").defaults()["batch"] == 32
    for name in PART3:
        assert render_static(name).startswith('<div class="descent-widget"')


def test_prefill_decode_matches_the_step_model():
    s = serving.server("llama-3.1-8b", "rtx-5090", "fp8", "bf16")
    out = html("prefill_decode", model="llama-3.1-8b", accelerator="rtx-5090", prompt_tokens=2000, output_tokens=64)
    assert stat(out, "Time to first token") == format_time(serving.prefill(s, 2000).seconds)
    off = html("prefill_decode", model="llama-3.1-8b", accelerator="rtx-5090", prompt_tokens=2000, output_tokens=64,
               kv_cache=False)
    # Without the cache the reply takes much longer: every pass re-reads the whole text.
    total_on = serving.prefill(s, 2000).seconds + sum(serving.decode_step(s, 1, 2000 + i).seconds for i in range(63))
    assert stat(out, "Whole reply") == format_time(total_on)
    assert "grows with the square" in text(off)


def test_batching_shows_both_policies_on_one_trace():
    out = html("batching", policy="static", requests=80, batch=16, seed=2)
    kw = dict(model="llama-3.1-70b", accelerator="h200", weights="fp8", kv="bf16", requests=80, rate=4.0,
              prompt_mean=1000, output_mean=250, batch=16, chunk=0, seed=2)
    m = serving.metrics(serving.run(policy="static", **kw))
    assert stat(out, "Throughput") == format_number(m.throughput_tokens_per_s, 3)
    assert stat(out, "Slot use") == format_percent(m.slot_utilization)
    t = text(out)
    assert "The same 80 requests both ways" in t and "continuous" in t
    assert out.count('<th scope="row">') >= 16 + 2  # 16 slot rows in the grid, 2 policy rows
    assert "is-waste" in out  # static batching holds finished requests' slots


@pytest.mark.parametrize("policy", ["static", "continuous"])
def test_batching_lanes_draw_each_run_of_equal_bins_as_one_bar(policy):
    from descent.widgets import part3

    sim = serving.run(policy=policy, model="llama-3.1-70b", accelerator="h200", weights="fp8", kv="bf16",
                      requests=80, rate=4.0, prompt_mean=1000, output_mean=250, batch=16, chunk=0, seed=2)
    grid = part3.lanes(sim)
    start = min(r.arrival for r in sim.trace)
    width = (max(t[-1] for t in sim.token_times) - start) / part3.LANE_BINS
    for slot, row in enumerate(grid["cells"]):
        # Each bin, expanded from the bars, holds what the simulation's occupancy says at its middle.
        bins = [c for c in row for _ in range(c.get("span", 1))]
        assert len(bins) == part3.LANE_BINS
        for b, c in enumerate(bins):
            t = start + (b + 0.5) * width
            o = next((o for o in sim.occupancy if o.slot == slot and o.admitted <= t < o.released), None)
            want = ("is-free" if o is None else "is-prefill" if t < o.first_token
                    else "is-decode" if t < o.finished else "is-waste")
            assert c["cls"] == want, (slot, b)
            assert o is None or f"request {o.request} " in c["title"]
        # Neighbouring bars differ (equal runs were merged), and a bar names the times it covers.
        assert all((a["cls"], a["title"].split(": ")[1]) != (b["cls"], b["title"].split(": ")[1])
                   for a, b in zip(row, row[1:], strict=False))
        assert row[0]["title"].startswith(f"slot {slot + 1}, 0 s to ")
    assert sum(map(len, grid["cells"])) < part3.LANE_ROWS * part3.LANE_BINS / 2  # far fewer cells than bins


def test_paged_kv_grid_and_shares():
    out = html("paged_kv", allocator="contiguous", block_size=32, reserve_tokens=256, seed=1)
    got = serving.allocate(serving.backlog(1, 256), 4096, "contiguous", 32, 256)
    assert stat(out, "Pool holding tokens") == format_percent(got.token_share)
    assert out.count('class="descent-cell ') >= 4096 // 32
    # A block size that does not divide the pool: the pool is rounded down to whole blocks.
    odd = html("paged_kv", block_size=12)
    assert "341 blocks of 12 tokens" in text(odd)


def test_prefix_cache_rejects_a_prefix_as_long_as_the_prompt():
    res = run("prefix_cache", {"prefix_tokens": 3000, "prompt_tokens": 3000})
    assert not res["ok"] and res["field"] == "prefix_tokens" and "shorter than the prompt" in res["message"]


def test_kv_transfer_and_break_even():
    out = html("kv_transfer", model="llama-3.1-70b", accelerator="h200", kv="bf16", context=8192)
    assert stat(out, "KV cache of the sequence") == "2.68 GB"  # 327,680 bytes x 8,192 tokens
    res = run("break_even", {"model": "llama-3.1-405b", "accelerator": "rtx-5090", "weights": "bf16"})
    assert not res["ok"] and res["field"] == "model" and "do not fit" in res["message"]
    out = html("break_even", api_price=100.0)
    assert stat(out, "Break-even utilization").endswith("%")
    cheap = html("break_even", api_price=0.001, api_input_price=0.0)
    assert stat(cheap, "Break-even utilization") == "never"


def test_break_even_bills_the_prompts_too():
    """Issue 23: the API bills the workload's prompts as well as its replies; the break-even compares the
    chip's cost per output token with the API's whole bill per output token."""
    from descent import quantities as Q

    bill = serving.api_bill_per_million_output(1.0, 0.25, 1024, 256)
    assert bill == pytest.approx(1.0 + 0.25 * 4)  # $1 output + 4 prompt tokens per reply token at $0.25
    rate = Q.get("steady_tokens_per_s")()
    assert Q.get("break_even_utilization")() == pytest.approx(serving.break_even_utilization(bill, 3.0, rate))
    assert Q.get("break_even_utilization")(api_input_price=0.0) == pytest.approx(
        serving.break_even_utilization(1.0, 3.0, rate))
    out = html("break_even")
    assert stat(out, "API bill per million output tokens") == "$2.00"
    assert stat(out, "Break-even utilization") == Q.get("break_even_utilization").format(Q.get("break_even_utilization")())


@pytest.mark.parametrize(("a", "k", "c"), [(0.8, 4, 0.05), (1.0, 6, 0.1), (0.1, 8, 0.5)])
def test_speculative_widget(a, k, c):
    out = html("speculative", acceptance=a, draft_length=k, draft_cost=c)
    r = serving.speculative(a, k, c)
    assert stat(out, "Tokens per target pass") == format_number(r.expected_tokens, 3)
    assert stat(out, "Speedup") == format_number(r.speedup, 3) + "×"
    assert ("slows decoding down" in text(out)) == (r.speedup < 1)


@pytest.mark.parametrize("chunk", [1, 3, 5, 50])
def test_batching_refuses_a_tiny_chunk_budget_at_once_under_its_field(chunk, monkeypatch):
    # Issue 24: "Chunked prefill budget" 3 took 2.4 s of CPU (40 s in the browser). Now refused
    # before any step is costed (counted, not timed: a clock measures the machine).
    from descent import step as S

    steps = []
    step = S.StepModel.step
    monkeypatch.setattr(S.StepModel, "step", lambda self, *a, **k: steps.append(1) or step(self, *a, **k))
    out = run("batching", {"chunk": chunk})
    assert steps == []
    assert out["ok"] is False and out["field"] == "chunk"
    assert out["message"].startswith("Chunked prefill budget must be 0 (no chunking) or 51 to 4,096 tokens")
    assert run("batching", {"chunk": 51})["ok"]


@pytest.mark.parametrize(("model", "accelerator", "weights", "fits"), [
    ("llama-3.1-70b", "cerebras-wse-3", "bf16", False), ("llama-3.1-405b", "rtx-5090", "bf16", False),
    ("llama-3.1-8b", "h200", "bf16", True),
])
def test_prefill_decode_says_when_the_model_does_not_fit(model, accelerator, weights, fits):
    # Issue 24: Llama 3.1 70B on one Cerebras WSE-3 gave 301,000 tokens/s silently; Part 5 warned.
    from descent import catalog
    from descent.scenario import Scenario
    from descent.step import footprint

    out = run("prefill_decode", {"model": model, "accelerator": accelerator, "weights": weights})
    assert out["ok"], out
    warned = "does not fit on one " + catalog.accelerator(accelerator).name in out["html"]
    assert warned is not fits
    assert footprint(Scenario(model=model, accelerator=accelerator, weights=weights,
                              context=min(1024 + 256, catalog.model(model).max_context), batch=1)).fits is fits


def test_prefill_decode_prose_and_widget_time_the_same_step():
    """Issue 23: Part 3's prose and the widget beside it time decode at the same context (the prompt's),
    so its time per token, decode rate and prefill/decode factor are one set of numbers."""
    from descent import quantities as Q

    out = html("prefill_decode")
    itl = Q.get("itl_s")
    assert stat(out, "Time per output token") == itl.format(itl(context=1024))
    rate = Q.get("decode_tokens_per_s_total")
    assert stat(out, "Decode speed") == rate.format(rate(context=1024)).removesuffix(" tokens/s")
    # The page's shortcodes at the same context: tests/test_page_prose.py (no docs inside Pyodide).
