"""descent size with a model from its config.json (--config) and a chip from its numbers
(--memory-gb, --bandwidth-gbs, --tflops): same JSON keys as a catalog model on a catalog chip,
bad input one line on stderr and exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from descent import cli, custom
from descent.memory import size

CONFIGS = Path(__file__).parent / "data" / "configs"


def run(capsys, *argv):
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_config_gives_the_catalog_models_numbers(capsys):
    rc, out, err = run(capsys, "size", "--config", CONFIGS / "gpt-oss-120b.json", "-a", "h100-sxm", "-w", "mxfp4",
                       "--context", "32768", "--json")
    assert rc == 0 and err == ""
    got = json.loads(out)
    want = cli.size_json(size("gpt-oss-120b", "h100-sxm", "mxfp4", "bf16", 32768, 1))
    assert set(got) == set(want)  # the same keys
    assert got.pop("model") == "custom" and want.pop("model") == "gpt-oss-120b"
    assert got == want


def test_chip_flags_give_the_same_as_the_record(capsys):
    rc, out, _ = run(capsys, "size", "llama-3.1-8b", "--memory-gb", "24", "--bandwidth-gbs", "1,008", "--tflops",
                     "165.2", "--json")
    assert rc == 0
    got = json.loads(out)
    assert got == cli.size_json(size("llama-3.1-8b", custom.accelerator(24, 1008, 165.2), "released", "bf16", 8192, 1))
    assert got["capacity_bytes"] == 24_000_000_000 and got["memory_bandwidth"] == 1.008e12


def test_both_together_print_a_table(capsys):
    rc, out, _ = run(capsys, "size", "--config", CONFIGS / "qwen3-8b.json", "--memory-gb", "24",
                     "--bandwidth-gbs", "1008")
    assert rc == 0
    assert "Qwen3 from config.json" in out and "your chip (24 GB, 1,008 GB/s)" in out
    assert "as released: BF16" in out  # config.json torch_dtype bfloat16
    assert "no known peak (--tflops not given)" in out and "memory-bound" in out


def test_no_peak_is_null_in_strict_json(capsys):
    rc, out, _ = run(capsys, "size", "--config", CONFIGS / "gpt-oss-20b.json", "--memory-gb", "24",
                     "--bandwidth-gbs", "1008", "--json")
    assert rc == 0
    got = json.loads(out)  # strict: no Infinity
    assert got["peak_flops"] is None and got["decode_compute_tokens_per_s"] is None
    assert got["bound"] == "memory" and got["compute_bound_batch"] is None
    # As released from the file: MXFP4 experts, the rest BF16 (quantization_config).
    assert got["weights"] == "released"
    assert got == {**json.loads(out), "peak_flops": None}


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--config", "no-such-file.json"], "--config no-such-file.json: cannot read it: No such file or directory"),
        (["--config", "."], "cannot read it"),
        (["--config", CONFIGS / "README.md"], "config.json must be valid JSON: Expecting value (line 1, column 1)"),
        (["qwen3-8b", "--config", CONFIGS / "qwen3-8b.json"], "a model id or --config, not both"),
        (["--memory-gb", "24"], "add --bandwidth-gbs"),
        (["--bandwidth-gbs", "24"], "add --memory-gb"),
        (["--tflops", "100"], "add --memory-gb"),
        (["-a", "h200", "--memory-gb", "24", "--bandwidth-gbs", "900"], "-a/--accelerator or --memory-gb"),
        (["--memory-gb", "0", "--bandwidth-gbs", "900"], "Memory must be 0.01 to 100,000 GB, got 0"),
        (["--memory-gb", "24", "--bandwidth-gbs", "fast"], "Memory bandwidth must be a number, got 'fast'"),
        (["--memory-gb", "24", "--bandwidth-gbs", "900", "--tflops", "-1"], "Peak compute must be"),
    ],
)
def test_errors_are_one_line_exit_2(capsys, argv, words):
    rc, out, err = run(capsys, "size", *argv)
    assert rc == 2 and out == ""
    assert words in one_line(err)


def test_bad_config_contents(capsys, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "falcon", "hidden_size": 4096}), encoding="utf-8")
    rc, _, err = run(capsys, "size", "--config", path)
    line = one_line(err)
    assert rc == 2 and '"falcon"' in line and "llama" in line and "gpt_oss" in line
    path.write_bytes(b"\xff\xfe{")
    rc, _, err = run(capsys, "size", "--config", path)
    assert rc == 2 and "cannot read it" in one_line(err)


def test_config_refuses_what_is_not_a_regular_file_before_reading_it(capsys, tmp_path, monkeypatch):
    # Issue 24: /dev/zero was read until MemoryError, a FIFO waited for ever, `--config ""` was
    # ignored and the default model sized. Refused before any byte is read: exit 2, one line.
    import os

    fifo = tmp_path / "config.fifo"
    os.mkfifo(fifo)
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda *a, **k: opened.append(a[0]) or real_open(*a, **k))
    for path, words in [
        ("/dev/zero", "--config /dev/zero: cannot read it: it is a device, not a config.json file"),
        (fifo, f"--config {fifo}: cannot read it: it is a pipe (FIFO), not a config.json file"),
        (tmp_path, f"--config {tmp_path}: cannot read it: it is a directory, not a config.json file"),
        ("", "--config needs the path of a config.json file, got an empty path"),
    ]:
        rc, out, err = run(capsys, "size", "--config", path)
        assert rc == 2 and out == "" and one_line(err) == f"descent: error: {words}"
    rc, out, _ = run(capsys, "size", "--config=", "--json")
    assert rc == 2 and "empty path" in json.loads(out)["error"]
    assert opened == []


def test_config_reads_at_most_the_limit_plus_one_byte(capsys, tmp_path, monkeypatch):
    # A 500 MB file was read whole (1 GB, 5.7 s) before the 50,000-character check. A sparse file of
    # 500 MB costs no disk; the CLI reads MAX_CONFIG_BYTES + 1 bytes of it and stops.
    big = tmp_path / "config.json"
    with open(big, "wb") as f:
        f.truncate(500_000_000)
    sizes = []
    real = cli.os.fdopen

    def spy(fd, *a, **k):
        f = real(fd, *a, **k)
        read = f.read
        f.read = lambda n=-1: sizes.append(n) or read(n)
        return f

    monkeypatch.setattr(cli.os, "fdopen", spy)
    rc, out, err = run(capsys, "size", "--config", big)
    assert rc == 2 and out == ""
    assert one_line(err) == (f"descent: error: --config {big}: the file is larger than 200,000 bytes; "
                             "a config.json must be at most 50,000 characters")
    assert sizes == [cli.MAX_CONFIG_BYTES + 1] and cli.MAX_CONFIG_BYTES == 4 * 50_000
    # A file of exactly the limit is read (and then judged by its contents).
    big.write_bytes(b"{" + b" " * (cli.MAX_CONFIG_BYTES - 2) + b"}")
    rc, _, err = run(capsys, "size", "--config", big)
    assert rc == 2 and "at most 50,000 characters, got 200,000" in one_line(err)
