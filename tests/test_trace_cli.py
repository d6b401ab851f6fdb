"""``descent trace`` and ``descent generate`` through the main CLI (``descent.cli.main``)."""

from __future__ import annotations

import json

import pytest

from descent.cli import main

PARIS = 7042  # " Paris" (GGUF tokenizer.ggml.tokens[7042] == "ĠParis")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_trace_json(capsys):
    code, out, err = run(capsys, "trace", "The capital of France is", "--top", "3", "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert set(data) == {"tokens", "next"}
    assert data["tokens"][0] == {"text": "The", "id": 504}
    assert [t["id"] for t in data["tokens"]] == [504, 3575, 282, 4649, 314]
    assert len(data["next"]) == 3
    assert data["next"][0]["id"] == PARIS and data["next"][0]["text"] == " Paris"
    assert set(data["next"][0]) == {"text", "id", "probability", "logit"}
    # transformers on the same GGUF: logit 17.3713 for " Paris" (tests/test_peer_logits.py)
    assert data["next"][0]["logit"] == pytest.approx(17.3713, abs=1e-3)


def test_trace_text_and_chat(capsys):
    code, out, _ = run(capsys, "trace", "Hi", "--chat", "--top", "2")
    assert code == 0
    assert "  1  <|im_start|>\n" in out and "  359  ␣are\n" in out and "next token (top 2 of 49,152" in out


def test_generate_greedy(capsys):
    code, out, err = run(capsys, "generate", "The capital of France is", "--max-tokens", "3")
    assert code == 0 and err == ""
    assert out.startswith(" Paris")


def test_generate_seeded_repeats(capsys):
    args = ("generate", "Once upon a time", "--max-tokens", "6", "--temperature", "0.9", "--top-p", "0.9")
    _, a, _ = run(capsys, *args, "--seed", "5")
    _, b, _ = run(capsys, *args, "--seed", "5")
    assert a == b and a.strip()


@pytest.mark.parametrize(
    ("argv", "allowed"),
    [
        # Messages come from the declared parameters (descent.params), as in the widgets.
        (["trace", "x", "--top", "0"], "--top must be 1 to 1,000 tokens, got 0"),
        (["trace", "x", "--top", "many"], "--top must be a number, got 'many'"),
        (["trace", ""], "PROMPT must be non-empty"),
        (["generate", "x", "--max-tokens", "0"], "--max-tokens must be 1 to 4,096 tokens"),
        (["generate", "x", "--max-tokens", "5", "--temperature", "9"], "--temperature must be 0 to 5, got 9"),
        (["generate", "x", "--max-tokens", "5", "--temperature", "hot"], "--temperature must be a number"),
        (["generate", "x", "--max-tokens", "5", "--top-k", "0"], "--top-k must be 1 to 49,152"),
        (["generate", "x", "--max-tokens", "5", "--top-p", "1.5"], "--top-p must be 0.01 to 1, got 1.5"),
    ],
)
def test_bad_values_one_line_exit_2(capsys, argv, allowed):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert allowed in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_missing_gguf_is_one_line_exit_2(monkeypatch, capsys):
    # A bad $DESCENT_GGUF used to print "internal error: FileNotFoundError" with exit 1
    # (fresh-user trial); it is a bad value the reader can fix, so: one line, exit 2.
    from descent.cli import main
    from descent.trace import gguf_reader

    gguf_reader.load_model.cache_clear()  # an earlier test's model would answer without the file
    monkeypatch.setenv("DESCENT_GGUF", "/nonexistent/model.gguf")
    assert main(["trace", "hi"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "GGUF file not found: /nonexistent/model.gguf" in err[0] and "DESCENT_GGUF" in err[0]
