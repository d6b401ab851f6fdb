"""`descent simulate batching` and `descent speculative`: output, JSON keys, and one-line errors."""

from __future__ import annotations

import json

import pytest

from descent import cli, params, quantities, serving


def run(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_simulate_batching_json_has_the_issue_keys(capsys):
    rc, out, err = run(capsys, "simulate", "batching", "--policy", "static", "--requests", "60", "--seed", "5", "--json")
    assert rc == 0 and err == ""
    data = json.loads(out)
    assert {"throughput_tokens_per_s", "latency_p50_s", "latency_p99_s", "slot_utilization"} <= set(data)
    # The stated model and chip, and every other key a parameter or a quantity of the one vocabulary.
    assert (data["model"], data["accelerator"]) == ("llama-3.1-70b", "h200")
    assert set(data) <= set(params.REGISTRY) | set(quantities.QUANTITIES) | {"batch", "rate"}
    m = serving.metrics(serving.run("llama-3.1-70b", "h200", "fp8", "bf16", "static", 60, 4.0, 1000, 250, 32, 0, 5))
    assert data["throughput_tokens_per_s"] == m.throughput_tokens_per_s
    assert data["latency_p99_s"] == m.latency_p99_s


def test_simulate_continuous_beats_static_from_the_command_line(capsys):
    got = {}
    for policy in ("static", "continuous"):
        rc, out, _ = run(capsys, "simulate", "batching", "--policy", policy, "--requests", "100", "--seed", "1",
                         "--json")
        got[policy] = json.loads(out)
    assert got["continuous"]["throughput_tokens_per_s"] > got["static"]["throughput_tokens_per_s"]


def test_simulate_batching_text_names_model_and_chip(capsys):
    rc, out, _ = run(capsys, "simulate", "batching", "--requests", "40", "--model", "llama-3.1-8b", "-a", "rtx-5090",
                     "--chunk", "256")
    assert rc == 0
    assert "Llama 3.1 8B" in out and "NVIDIA GeForce RTX 5090" in out and "256 tokens per step" in out
    assert "Throughput" in out and "99th-percentile latency" in out


def test_speculative_json_and_limit(capsys):
    rc, out, _ = run(capsys, "speculative", "--acceptance", "0.8", "--draft-length", "4", "--draft-cost", "0.05",
                     "--json")
    assert rc == 0
    d = json.loads(out)
    assert d["expected_tokens"] == pytest.approx(3.3616)  # (1 - 0.8^5) / 0.2
    assert d["speedup"] == pytest.approx(3.3616 / 1.2)
    rc, out, _ = run(capsys, "speculative", "--acceptance", "1", "--draft-length", "7", "--draft-cost", "0", "--json")
    assert json.loads(out)["expected_tokens"] == 8  # k + 1, not a division by zero
    rc, out, _ = run(capsys, "speculative", "--acceptance", "0.1", "--draft-length", "4", "--draft-cost", "0.5")
    assert "slower than plain decoding" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["simulate", "batching", "--requests", "0"], "Requests must be 1 to 5,000 requests, got 0"),
    (["simulate", "batching", "--policy", "greedy"], "Batching must be one of: static, continuous"),
    (["simulate", "batching", "--requests", "5000", "--output-mean", "10000"], "the simulator stops at"),
    (["simulate", "batching", "--model", "llama-3.1-405b", "-a", "h100-sxm", "-w", "bf16"], "no memory for a KV cache"),
    (["speculative", "--acceptance", "1.5"], "Acceptance rate must be 0 to 1, got 1.5"),
    (["speculative", "--draft-cost", "-0.1"], "Draft cost must be 0 to 10, got -0.1"),
    (["speculative", "--acceptance", "nan"], "Acceptance rate must be a number"),
    (["simulate"], "required"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_commands_shown_on_the_page_run(capsys):
    # Every `descent ...` command Part 3 shows a reader runs and succeeds (its inline code spans).
    import re
    import shlex
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "part-3-serving-software.md").read_text(encoding="utf-8")
    commands = [" ".join(c.split()) for c in re.findall(r"`(descent [^`]+)`", page, flags=re.S)
                if not c.startswith(("descent.", "descent/"))]
    assert len(commands) >= 2, commands
    for c in commands:
        rc, out, err = run(capsys, *shlex.split(c)[1:])
        assert rc == 0 and out and not err, (c, err)
