"""Tests for descent.cli: the `descent` command (size, models, accelerators) and its errors."""

import argparse
import json
import subprocess
import sys

import pytest

from descent import cli
from descent.catalog import accelerators, models
from descent.memory import size

REQUIRED_KEYS = {
    "params_total",
    "params_active",
    "weights_bytes",
    "kv_cache_bytes",
    "need_bytes",
    "usable_bytes",
    "capacity_bytes",
    "fits",
    "bytes_per_step",
    "decode_tokens_per_s",
    "decode_tokens_per_s_total",
}


def run(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_size_json_equals_size(capsys):
    rc, out, err = run(
        capsys, "size", "gpt-oss-120b", "--accelerator", "h100-sxm", "--weights", "mxfp4",
        "--kv", "fp8", "--context", "32768", "--batch", "4", "--json",
    )  # fmt: skip
    assert rc == 0 and err == ""
    data = json.loads(out)
    assert REQUIRED_KEYS <= set(data)
    assert data == cli.size_json(size("gpt-oss-120b", "h100-sxm", "mxfp4", "fp8", 32768, 4))


def test_size_table_shows_gb_and_gib(capsys):
    rc, out, _ = run(capsys, "size", "llama-3.1-8b", "-a", "h100-sxm", "-c", "128k")
    assert rc == 0
    # Capacity 80 GiB = 85.9 GB, printed both ways.
    assert "85.9 GB = 80.0 GiB" in out
    assert "tokens/s per sequence" in out and "128,000 tokens" in out


def test_models_and_accelerators_list_the_catalog(capsys):
    rc, out, _ = run(capsys, "models", "--json")
    assert rc == 0 and [m["id"] for m in json.loads(out)] == list(models())
    rc, out, _ = run(capsys, "accelerators", "--json")
    rows = json.loads(out)
    assert rc == 0 and [a["id"] for a in rows] == list(accelerators())
    assert rows[0]["memory_bytes"] == 85_899_345_920  # h100-sxm, 80 GiB
    rc, out, _ = run(capsys, "accelerators")
    assert rc == 0 and "h100-sxm" in out and "GiB" in out


def one_error_line(err):
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_unknown_model_exits_2_with_one_line_naming_allowed(capsys):
    rc, out, err = run(capsys, "size", "gpt-5", "--accelerator", "h100-sxm")
    assert rc == 2 and out == ""
    line = one_error_line(err)
    assert "Model must be one of:" in line and "got 'gpt-5'" in line
    assert all(mid in line for mid in models())


def test_unknown_accelerator_and_precision(capsys):
    rc, _, err = run(capsys, "size", "llama-3.1-8b", "-a", "a100")
    assert rc == 2 and all(a in one_error_line(err) for a in accelerators())
    rc, _, err = run(capsys, "size", "llama-3.1-8b", "-a", "h200", "--weights", "fp5")
    assert rc == 2 and "Weight precision must be one of: released, fp32, bf16" in one_error_line(err)


@pytest.mark.parametrize("context", ["0", "-3", "20000001", "12x", "1.5"])
def test_bad_context_exits_2(capsys, context):
    rc, out, err = run(capsys, "size", "llama-3.1-8b", "-a", "h200", "--context", context)
    assert rc == 2 and out == ""
    assert "Context must be" in one_error_line(err)


# Issue 15: "1" and 5,000 zeros was `internal error: OverflowError` (int() refuses strings over
# 4,300 digits, and the fallback float was infinity). Every spelling of a huge number is now the
# parameter's own range message, through descent.params (the same path as widgets and shortcodes).
@pytest.mark.parametrize("context", ["1" + "0" * 5000, "1" + "0" * 4300, "1" + "0" * 20, "-" + "9" * 5000,
                                     "1" + "0" * 5000 + "k", "1e5000", "0" * 40 + "1" + "0" * 8])
def test_huge_context_is_one_line_from_the_parameter(capsys, context):
    from descent import params as P

    rc, out, err = run(capsys, "size", "llama-3.1-8b", "-a", "h200", "--context", context)
    assert rc == 2 and out == ""
    line = one_error_line(err)
    assert "Context must be" in line and "internal error" not in line
    assert len(line) < 200  # the value is shortened, not printed whole
    with pytest.raises(P.ParamError, match="^Context must be"):
        P.CONTEXT.parse(context)


@pytest.mark.parametrize(
    "argv",
    [
        ["bogus"],
        [],
        ["size", "llama-3.1-8b", "-a", "h200", "--kv", "q4_k_m"],  # a weight format, not a KV one
        ["size", "llama-3.1-8b", "-a", "h200", "--batch", "0"],
        ["size", "llama-3.1-8b", "-a", "h200", "--frobnicate"],
    ],
)
def test_usage_errors_are_one_line_exit_2(capsys, argv):
    rc, _, err = run(capsys, *argv)
    assert rc == 2
    one_error_line(err)


def test_help_exits_0(capsys):
    rc, out, _ = run(capsys, "--help")
    assert rc == 0 and "size" in out


def test_real_process_has_no_traceback():
    # The console script's code path, in a fresh interpreter: exit status 2, one stderr line.
    p = subprocess.run(
        [sys.executable, "-m", "descent.cli", "size", "nope", "-a", "h200"], capture_output=True, text=True
    )
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.splitlines()) == 1 and "Traceback" not in p.stderr


def test_other_modules_can_add_subcommands(capsys, monkeypatch):
    # build_parser calls trace_cli.add_subcommands(subparsers); a subcommand sets func -> exit code.
    class FakeTraceCli:
        @staticmethod
        def add_subcommands(sub):
            p = sub.add_parser("hello")
            p.set_defaults(func=lambda args: print("hi") or 0)

    monkeypatch.setattr(cli, "trace_cli", FakeTraceCli)
    assert isinstance(cli.build_parser(), argparse.ArgumentParser)
    rc, out, _ = run(capsys, "hello")
    assert rc == 0 and out == "hi\n"
