"""Dollars and joules per token (descent.economics), its widgets and `descent cost`."""

from __future__ import annotations

import json

import pytest

from descent import cli, economics
from descent import widgets as w
from descent.memory import size


def test_cost_by_hand():
    # Llama 3.1 70B, FP8 (embedding, head and norms in BF16: descent.weights.KEPT_IN_BF16), one H200,
    # 8,192 tokens, one conversation: a step reads 70.555 GB of weights (test_dials.test_decode_step_by_hand)
    # and 2.684 GB of KV cache, so the memory-bound ceiling is 4.8e12 B/s / 73.239 GB = 65.54 tokens/s
    # (descent.memory.size); at $3 an hour that is 3 / 3,600 / 65.54 x 1e6 = $12.72 per million tokens,
    # and 700 W x 1.56 / 65.54 = 16.7 J per token.
    s = size("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1)
    c = economics.token_cost("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1, price=3.0, pue=1.56)
    assert c.usd_per_million_tokens == pytest.approx(3 / 3600 / s.decode_tokens_per_s_total * 1e6, rel=1e-12)
    assert c.usd_per_million_tokens == pytest.approx(12.715, rel=1e-3)
    assert c.joules_per_token == pytest.approx(700 * 1.56 / s.decode_tokens_per_s_total, rel=1e-12)


def test_max_batch_is_where_the_cache_stops_fitting():
    b = economics.max_batch("llama-3.1-70b", "h200", "fp8", "bf16", 8192)
    # 151.4 GB x 0.9 - 72.66 GB of weights = 63.6 GB of room / 2.684 GB of KV per 8,192-token sequence = 23.7:
    # 23 (24 before the embedding and head were counted at BF16, as the FP8 checkpoints keep them).
    assert b == 23
    assert size("llama-3.1-70b", "h200", "fp8", "bf16", 8192, b).fits
    assert not size("llama-3.1-70b", "h200", "fp8", "bf16", 8192, b + 1).fits
    assert economics.max_batch("llama-3.1-405b", "rtx-5090", "bf16") == 0
    assert economics.cost_by_batch("llama-3.1-405b", "rtx-5090", "bf16") == []


def test_cost_falls_then_flattens_at_the_compute_roof():
    rows = economics.cost_by_batch("llama-3.1-70b", "h200", "fp8", "bf16", 128)
    costs = [r.usd_per_million_tokens for r in rows]
    assert all(a >= b * (1 - 1e-12) for a, b in zip(costs, costs[1:], strict=False))  # never rises
    compute = [r for r in rows if r.bound == "compute"]
    assert compute, "at 128 tokens large batches are compute-bound"
    # Once compute-bound, every token costs the same FLOPs: the price stops falling (within 5%).
    assert compute[-1].usd_per_million_tokens == pytest.approx(compute[0].usd_per_million_tokens, rel=0.05)
    assert rows[-1].batch == economics.max_batch("llama-3.1-70b", "h200", "fp8", "bf16", 128)


def test_prompt_tokens_are_cheaper():
    r1 = economics.input_output_ratio("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1)
    r24 = economics.input_output_ratio("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 24)
    assert r1 > r24 > 1  # batching shares decode's reads, so the gap narrows but stays


def test_bad_price_and_pue_name_the_input():
    with pytest.raises(ValueError, match="Price per accelerator-hour must be 0.01 to 1,000 USD"):
        economics.token_cost("llama-3.1-70b", "h200", price=0.0)
    with pytest.raises(ValueError, match=r"Data-centre overhead \(PUE\) must be 1 to 3"):
        economics.token_cost("llama-3.1-70b", "h200", pue=0.5)


def test_widgets_render_and_refuse_what_cannot_fit():
    out = w.run("price_it_out", {})
    assert out["ok"] and "$12.7" in out["html"] and "batch 23" in out["html"]  # test_cost_by_hand, test_max_batch_...
    out = w.run("price_it_out", {"model": "llama-3.1-405b", "accelerator": "rtx-5090", "weights": "bf16"})
    assert out["ok"] and "nothing to price" in out["html"]
    out = w.run("joules_per_token", {"batch": "8"})
    assert out["ok"] and "A 500-token answer" in out["html"]


def test_cli_cost_keys(capsys):
    assert cli.main(["cost", "llama-3.1-70b", "-a", "h200", "-w", "fp8", "-c", "8192", "-b", "8", "--price", "3",
                     "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"usd_per_million_tokens", "joules_per_token", "max_batch", "fits", "bound"} <= set(out)
    c = economics.token_cost("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 8, 3.0)
    assert out["usd_per_million_tokens"] == c.usd_per_million_tokens and out["max_batch"] == 23  # test_max_batch_...
    assert cli.main(["cost", "--price", "-1"]) == 2
