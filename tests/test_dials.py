"""The server dials (descent.dials), their widget ``server_dials`` and `descent dials`."""

from __future__ import annotations

import json

import pytest

from descent import cli, dials, economics, hardware
from descent import widgets as w
from descent.compare import spare_text
from descent.units import format_bytes
from descent.widgets import part5_dials, views

# Llama 3.1 70B (config.json: 80 layers, D = 8,192, 8 KV heads of 128, untied 128,256 x 8,192
# embedding), FP8 weights (embedding, head and norms kept in BF16, as NVIDIA's FP8 checkpoints keep
# them: descent.weights.KEPT_IN_BF16), BF16 KV cache, 8,192 tokens, one conversation, 8 x H100 SXM (3.35 TB/s,
# 80 GiB = 85,899,345,920 B), NVLink 4 at 450 GB/s each way.
ARGS = ("llama-3.1-70b", "h100-sxm", "fp8", "bf16", 8192, 1, 8)


def test_decode_step_by_hand():
    d = dials.server_dials(*ARGS)
    # Weights: 68,451,041,280 FP8 parameters at 1 B plus 2 x 1,050,673,152 (embedding, head) + 1,318,912
    # (norms) at 2 B = 72,656,371,712 B; read per step: that - 2,101,346,304 (the embedding) + 16,384 (one
    # row at 2 B) = 70,555,041,792 B; KV cache: 80 x 8 x 128 x 2 x 2 B = 327,680 B/token x 8,192 =
    # 2,684,354,560 B; both / 8 devices (KV split min(8, 8) = 8): 9,154,924,544 B / 3.35e12 B/s = 2.73281e-3 s.
    read = 9_154_924_544 / 3.35e12
    # All-reduces: 2 per layer of 1 x 8,192 x 2 B = 16,384 B, ring over 8: 2 x 7/8 x 16,384 = 28,672 B each
    # over 450e9 B/s, plus NCCL's latency (catalog links.toml: 3.6 us + 2 x 7 steps x 0.47 us = 10.18 us):
    # 160 all-reduces x 10.244 us = 1.639 ms.
    each = 28_672 / 450e9 + 3.6e-6 + 14 * 0.47e-6
    comm = 160 * each
    assert d.comm_s == pytest.approx(comm, rel=1e-12)
    assert d.step_s == pytest.approx(read + comm, rel=1e-9)
    assert d.bound == "memory"
    # 1 / (2.73281e-3 + 1.63899e-3 s) = 228.74 tokens/s: at one sequence the latency of 160 small
    # all-reduces is more than a third of the step.
    assert d.tokens_per_s_per_user == pytest.approx(1 / (read + comm), rel=1e-9)
    assert d.tokens_per_s_per_user == pytest.approx(228.74, rel=1e-4)
    assert d.tokens_per_s_total == d.tokens_per_s_per_user
    # 8 x $3 / 3,600 s / 228.74 tokens/s x 1e6 = $29.15 per million.
    assert d.usd_per_million_tokens == pytest.approx(8 * 3 / 3600 / d.tokens_per_s_total * 1e6, rel=1e-12)
    assert d.usd_per_million_tokens == pytest.approx(29.145, rel=1e-4)


def test_ttft_and_memory_by_hand():
    d = dials.server_dials(*ARGS)
    # The prompt's all-reduces: 8,192 x 8,192 x 2 B = 134,217,728 B, ring 2 x 7/8 -> 234,881,024 B each
    # over 450e9 B/s plus 10.18 us of latency, two per layer x 80 = 0.0851 s.
    assert d.prefill_comm_s == pytest.approx(160 * (234_881_024 / 450e9 + 3.6e-6 + 14 * 0.47e-6), rel=1e-12)
    # The prompt is compute-bound: each device does 1/8 of the FLOPs, and the step is that plus the
    # all-reduces (every weight and the KV cache split 8 ways too, so memory stays below compute).
    pre = hardware.prefill_time("llama-3.1-70b", "h100-sxm", "fp8", "bf16", 8192)
    assert pre.bound == "compute"
    assert d.ttft_s == pytest.approx(pre.seconds / 8 + d.prefill_comm_s, rel=1e-12)
    assert d.ttft_s == pytest.approx(0.1627, rel=1e-3)
    # 85,899,345,920 x 0.9 = 77,309,411,328 B usable; weights 72,656,371,712 / 8 = 9,082,046,464 B and
    # KV 2,684,354,560 / 8 = 335,544,320 B per device leave 67,891,820,544 B.
    assert d.free_bytes == pytest.approx(67_891_820_544, abs=1)
    assert d.fits


def test_one_device_is_the_single_chip_ceiling():
    # With tp = 1 there is nothing to all-reduce and the step is descent.hardware's decode ceiling.
    d = dials.server_dials("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 4, 1)
    c = hardware.decode_ceiling("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 4)
    assert d.comm_s == 0 and d.prefill_comm_s == 0
    assert d.tokens_per_s_total == pytest.approx(c.tokens_per_s_total, rel=1e-9)
    assert d.usd_per_million_tokens == pytest.approx(
        economics.token_cost("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 4).usd_per_million_tokens, rel=1e-9)


def test_big_batches_turn_compute_bound_and_big_models_do_not_fit():
    d = dials.server_dials("llama-3.1-70b", "h100-sxm", "fp8", "bf16", 128, 4096, 8)
    assert d.bound == "compute"
    assert d.tokens_per_s_total > 100 * d.tokens_per_s_per_user
    big = dials.server_dials("llama-3.1-405b", "h100-sxm", "bf16", "bf16", 8192, 1, 8)
    # 405B x 2 B / 8 = 101 GB per device > 77.3 GB usable.
    assert not big.fits and big.free_bytes < 0


@pytest.mark.parametrize(("kw", "match"), [
    ({"tp": 200}, "tp must divide Llama 3.1 70B's 64 query heads"),
    ({"tp": 0}, "Tensor parallel must be 1 to 4,096 devices"),
    ({"tp": 2.5}, "Tensor parallel must be a whole number"),
    ({"price": 0}, "Price per accelerator-hour must be"),
    ({"batch": 0}, "Batch must be 1 to"),
    ({"link_id": "smoke"}, "Link must be one of: nvlink5"),
])
def test_bad_inputs_name_the_input(kw, match):
    with pytest.raises(ValueError, match=match):
        dials.server_dials("llama-3.1-70b", "h100-sxm", **kw)


def test_widget_views_and_stream():
    views_ = part5_dials.server_dials("llama-3.1-70b", "h100-sxm", "fp8", 8, 1, 8192, 3.0)
    # The stats that name a quantity (the expected ranges beside two of them name none: widgets.expected).
    stats = {x["quantity"]: x for x in views_ if x["kind"] == "stat" and x["quantity"]}
    assert set(stats) == {"ttft_s", "tokens_per_s_per_user", "tokens_per_s_total",
                          "server_usd_per_million_tokens", "free_bytes_per_device"}
    assert stats["tokens_per_s_per_user"]["value"] == "229"
    (stream,) = [x for x in views_ if x["kind"] == "stream"]
    # The recorded SmolLM2 reply to the chat prompt: 51 steps, the last the stop token.
    assert len(stream["tokens"]) == 50 and stream["tokens"][0] == "The"
    assert stream["rate"] == pytest.approx(228.74, rel=1e-4)  # test_decode_step_by_hand
    html = views.render(stream)
    assert "data-stream=" in html and "The tallest mountain" in html  # the whole reply, without JS
    short = part5_dials.server_dials("llama-3.1-405b", "h100-sxm", "bf16", 8, 1, 8192, 3.0)
    assert short[0]["kind"] == "note" and "does not fit" in short[0]["text"]
    # 405B in BF16 over 8 H100s does not fit (test_big_batches_turn_compute_bound_and_big_models_do_not_fit):
    # the spare-memory stat says by how much, as descent.compare.spare_text words it, not "0 B".
    big = dials.server_dials("llama-3.1-405b", "h100-sxm", "bf16", "bf16", 8192, 1, 8)
    need = format_bytes(-big.free_bytes)
    assert f"would need {need} more than it has after the runtime allowance." in short[0]["text"]
    spare = {x["quantity"]: x for x in short if x["kind"] == "stat" and x["quantity"]}["free_bytes_per_device"]
    assert spare["value"] == spare_text(big.free_bytes, format_bytes) == f"does not fit: needs {need} more"
    fits = stats["free_bytes_per_device"]["value"]
    d70 = dials.server_dials("llama-3.1-70b", "h100-sxm", "fp8", "bf16", 8192, 1, 8)
    assert d70.fits and fits == format_bytes(d70.free_bytes)  # a set-up that fits prints its spare bytes


def test_widget_is_registered_and_renders():
    assert "server_dials" in w.names()
    html = w.render_static("server_dials")
    assert "data-stream" in html and "Time to first token" in html


def test_stream_view_rejects_bad_data():
    with pytest.raises(ValueError, match="stream: rate"):
        views.render(views.stream(["a"], 0.0))
    with pytest.raises(ValueError, match="stream: tokens"):
        views.render({"kind": "stream", "tokens": [], "rate": 1.0})
    with pytest.raises(ValueError, match="stream: delay"):
        views.render(views.stream(["a"], 1.0, float("nan")))


def test_cli_json(capsys):
    assert cli.main(["dials", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["accelerator"] == "h100-sxm" and out["tp"] == 8
    assert out["tokens_per_s_per_user"] == pytest.approx(228.74, rel=1e-4)  # test_decode_step_by_hand
    assert out["free_bytes"] == pytest.approx(67_891_820_544, abs=1)  # test_ttft_and_memory_by_hand
    assert {"ttft_s", "tokens_per_s_total", "usd_per_million_tokens"} <= set(out)
    assert cli.main(["dials", "--tp", "200"]) == 2
    assert "tp must divide Llama 3.1 70B's 64 query heads" in capsys.readouterr().err
