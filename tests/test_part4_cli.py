"""``descent roofline`` and ``descent parallel``: the keys the issue names, values equal to the core's,
one-line errors with exit status 2, and JSON keys that are parameters or quantities."""

from __future__ import annotations

import json

import pytest

from descent import catalog, cli, roofline
from descent import params as P
from descent import quantities as Q
from descent.cli import hardware as hardware_cli


def _run(capsys, *argv):
    rc = cli.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_roofline_json_keys_and_values(capsys):
    rc, out, err = _run(capsys, "roofline", "llama-3.1-70b", "-a", "h200", "--weights", "fp8", "--batch", "1",
                        "--context", "8192", "--json")
    assert rc == 0 and not err
    got = json.loads(out)
    assert {"flops_per_step", "bytes_per_step", "intensity", "ridge_point", "bound", "seconds_per_step"} <= set(got)
    s = roofline.step("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1, "decode")
    assert got["flops_per_step"] == s.flops_per_step and got["bytes_per_step"] == s.bytes_per_step
    # H200 FP8: 1,978.9 TFLOPS / 4.8 TB/s = 412.27 FLOP per byte; decode at batch 1 is memory-bound.
    assert got["ridge_point"] == pytest.approx(412.2708333) and got["bound"] == "memory"


def test_roofline_prefill_is_compute_bound(capsys):
    rc, out, _ = _run(capsys, "roofline", "llama-3.1-70b", "-a", "h200", "--phase", "prefill", "--json")
    assert rc == 0 and json.loads(out)["bound"] == "compute"


def test_parallel_json_keys_and_values(capsys):
    rc, out, err = _run(capsys, "parallel", "llama-3.1-70b", "-a", "h100-sxm", "--weights", "bf16", "--tp", "8",
                        "--pp", "1", "--json")
    assert rc == 0 and not err
    got = json.loads(out)
    assert {"weights_bytes_per_device", "allreduce_bytes_per_layer", "allreduce_seconds_per_layer",
            "bubble_fraction"} <= set(got)
    # 141.1 GB of BF16 weights over 8 GPUs; two all-reduces of 1 x 8,192 x 2 bytes, 2 x 7/8 each.
    assert got["weights_bytes_per_device"] == pytest.approx(70_553_706_496 * 2 / 8)
    assert got["allreduce_bytes_per_layer"] == 2 * 2 * 7 / 8 * 16_384
    wire = catalog.link("nvlink4")  # 450 GB/s each way; NCCL latency 3.6 us + 14 steps x 0.47 us per all-reduce
    assert got["allreduce_seconds_per_layer"] == pytest.approx(
        57_344 / wire.bytes_per_s + 2 * (wire.base_latency_s + 14 * wire.step_latency_s))
    assert got["bubble_fraction"] == 0


def test_parallel_bubble(capsys):
    # A serving pipeline's steady state (descent.step): 8 micro-batches keep 8 stages busy; one leaves
    # 7 of 8 idle, and the printed step time is the one that bubble sets (issue 22).
    got = {}
    for m in (1, 8):
        rc, out, _ = _run(capsys, "parallel", "llama-3.1-70b", "-a", "h100-sxm", "-w", "bf16", "--pp", "8",
                          "--batch", "8", "--microbatches", str(m), "--json")
        assert rc == 0
        got[m] = json.loads(out)
    assert got[8]["bubble_fraction"] == 0 and got[1]["bubble_fraction"] == pytest.approx(7 / 8)
    assert got[8]["split_decode_tokens_per_s"] > got[1]["split_decode_tokens_per_s"]


def test_text_output(capsys):
    rc, out, _ = _run(capsys, "roofline", "gpt-oss-120b", "-a", "b200", "--weights", "mxfp4")
    assert rc == 0 and "memory (intensity below the ridge)" in out and "fp4 dense" in out
    rc, out, _ = _run(capsys, "parallel", "deepseek-v3", "-a", "h200", "--weights", "fp8", "--tp", "8", "--ep", "2",
                      "--batch", "64")
    assert rc == 0 and "16 devices" in out and "all-to-all per MoE layer" in out


@pytest.mark.parametrize("argv, message", [
    (["parallel", "llama-3.1-70b", "--tp", "128"], "tp must divide Llama 3.1 70B's 64 query heads"),
    (["parallel", "llama-3.1-70b", "--ep", "2"], "ep must be 1"),
    (["parallel", "llama-3.1-70b", "--tp", "0"], "Tensor parallel must be 1 to 4,096 devices, got 0"),
    (["parallel", "llama-3.1-70b", "--link", "ethernet"], "Link must be one of"),
    (["roofline", "llama-3.1-70b", "--phase", "training"], "Phase must be one of: decode, prefill"),
    (["roofline", "llama-3.1-70b", "--batch", "0"], "Batch must be 1 to 100,000"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, message):
    rc, out, err = _run(capsys, *argv)
    assert rc == 2 and not out
    assert err.count("\n") == 1 and message in err, err


def test_json_keys_are_parameters_or_quantities():
    names = {p.name for p in P.REGISTRY.values()} | set(Q.QUANTITIES)
    answers = {"bound", "compute_precision", "fits"}
    assert set(hardware_cli.ROOFLINE_KEYS) - names <= answers
    assert set(hardware_cli.PARALLEL_KEYS) - names <= answers
