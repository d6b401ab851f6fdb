"""The command line as a careless user meets it: unknown flags, ids in the wrong case, --json errors,
--version, huge sizes in sane units, tokens that are only part of a character."""

from __future__ import annotations

import json

from descent import cli, tokenizer


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_unknown_flag_is_named_with_a_suggestion(capsys):
    code, out, err = run(capsys, "size", "--acelerator", "h200")
    assert code == 2 and out == ""
    assert err.strip() == "descent size: error: unknown flag '--acelerator' (did you mean --accelerator?)"
    code, _, err = run(capsys, "size", "--acc", "h200")  # an abbreviation argparse accepts is fine
    assert code == 0


def test_ids_are_case_insensitive_and_typos_get_a_suggestion(capsys):
    code, out, _ = run(capsys, "size", "Llama-3.1-70B", "-a", "H200", "--json")
    data = json.loads(out)
    assert code == 0 and (data["model"], data["accelerator"]) == ("llama-3.1-70b", "h200")
    code, _, err = run(capsys, "size", "-a", "h2000")
    assert code == 2 and "(did you mean 'h200'?)" in err


def test_errors_are_json_under_json(capsys):
    code, out, err = run(capsys, "size", "-c", "0", "--json")
    assert code == 2 and err == ""
    assert json.loads(out) == {"error": "descent size: error: argument --context/-c: Context must be 1 to "
                                        "20,000,000 tokens, got 0", "exit_status": 2}


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("descent ")


def test_huge_sizes_use_a_unit_that_fits(capsys):
    # Llama 3.1 405B, 10,000,000 tokens x 1,000 sequences of BF16 KV cache: 516,096 bytes per token
    # (126 layers x 8 KV heads x 128 x 2 x 2 bytes) x 1e10 tokens = 5.16e15 bytes: "5.16 PB", not
    # "5,160,000 GB".
    code, out, _ = run(capsys, "size", "llama-3.1-405b", "-a", "h200", "-c", "10000000", "-b", "1000")
    line = next(ln for ln in out.splitlines() if ln.startswith("KV cache"))
    assert code == 0 and line.split()[2:4] == ["5.16", "PB"] and "4.58 PiB" in line
    # The H200's "141 GB" is what the vendor writes; the bytes are 141 GiB = 151 GB.
    acc = next(ln for ln in out.splitlines() if ln.startswith("accelerator"))
    assert 'sold as "141 GB" = 151 GB = 141 GiB' in acc
    # Each decode step reads those 5.16 PB and the BF16 weights (about 405e9 parameters x 2 bytes) at
    # the H200's 4.8 TB/s (NVIDIA's datasheet): about 18 minutes a step. Under one token a second the
    # rate is written as the time one token takes, never "0.0" or "9.3e-04".
    ceiling = next(ln for ln in out.splitlines() if ln.startswith("decode ceiling"))
    step_s = (5.16e15 + 810e9) / 4.8e12
    minutes = float(ceiling.split("one token every ")[1].split()[0])
    assert ceiling.split("one token every ")[1].split()[1] == "min" and abs(minutes - step_s / 60) < 0.1
    assert "e-0" not in ceiling and "e+0" not in ceiling, ceiling


def test_partial_characters_show_as_bytes():
    # 日 is E6 97 A5 in UTF-8; SmolLM2's vocabulary splits it over two tokens, neither of them text.
    tok = tokenizer.smollm2()
    shown = [tok.display(i) for i in tok.encode("日")]
    assert "".join(shown) == "<0xE6><0x97><0xA5>" and "\ufffd" not in "".join(shown)
    assert tok.display(tok.encode(" Paris")[0]) == " Paris"
