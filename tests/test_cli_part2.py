"""`descent float` and `descent quant`: the keys the issue names, with values worked by hand."""

from __future__ import annotations

import json

import pytest

from descent import cli


def _json(capsys, argv):
    assert cli.main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_float_json(capsys):
    # 0.1 in BF16: 0x3DCD = 0 01111011 1001101 = 0.10009765625, error 9.765625e-05.
    out = _json(capsys, ["float", "bf16", "0.1", "--json"])
    assert out["format"] == "bf16" and out["bits"] == "0011110111001101"
    assert out["nearest"] == 0.10009765625 and out["error"] == pytest.approx(9.765625e-05)


def test_float_overflow_and_codes(capsys):
    out = _json(capsys, ["float", "fp8_e4m3", "470", "--json"])
    assert out["nearest"] is None and out["overflow"] and out["kind"] == "nan"
    out = _json(capsys, ["float", "fp16", "0x3C00", "--json"])
    assert out["nearest"] == 1.0 and out["error"] == 0.0
    assert cli.main(["float", "fp4_e2m1", "2.6"]) == 0
    assert "0 10 1" in capsys.readouterr().out  # 2.6 -> 3 = E2M1 0 10 1


def test_quant_json(capsys):
    out = _json(capsys, ["quant", "Q4_K", "--json"])
    assert (out["format"], out["block_size"], out["bits_per_weight"]) == ("Q4_K", 256, 4.5)
    assert [f["name"] for f in out["layout"]] == ["d", "dmin", "scales", "qs"]
    out = _json(capsys, ["quant", "MXFP4", "--json"])
    assert (out["block_size"], out["bits_per_weight"]) == (32, 4.25)


@pytest.mark.parametrize("argv", [["float", "e8m0", "-1"], ["float", "fp9", "1"], ["quant", "Q9"],
                                  ["float", "fp16", "abc"]])
def test_bad_input_is_one_line(argv, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
