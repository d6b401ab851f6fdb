"""Hostile input for every CLI command, driven by hypothesis (widgets and catalog: test_hostile.py).

CLI commands are discovered from the parser that ``descent.cli.build_parser()`` returns, so a
command added later is covered without editing this file. The contract (DESIGN.md, "Conventions"):
the CLI exits 0 with finite numbers, or exits 2 with exactly one line on stderr and no traceback;
exit 1 ("internal error") is a bug. A module of its own because ``descent.cli`` is not in the
browser wheel: test_hostile.py, which imports only the core, runs inside Pyodide too.
"""

from __future__ import annotations

import argparse
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile import assert_finite_text, hostile_values

from descent import cli
from descent.catalog import accelerators, models


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("descent.cli.build_parser() has no subcommands")


COMMANDS = _subcommands()

#: Values an argument is likely to take, by what its dest names (catalog ids, precisions).
_DOMAIN = {
    "model": lambda: list(models()),
    "accelerator": lambda: list(accelerators()),
}


def _domain(dest: str) -> list:
    if dest in _DOMAIN:
        return _DOMAIN[dest]()
    from descent.numerics import KV_PRECISIONS, PRECISIONS

    if dest in ("weights", "precision"):
        return list(PRECISIONS)
    if dest == "kv":
        return list(KV_PRECISIONS)
    return ["1", "2", "8", "128", "8192", "128k", "0.5", "1.0", "Hello"]


def _cli_text(v) -> str:
    return v if isinstance(v, str) else json.dumps(v) if not isinstance(v, float) else repr(v)


@st.composite
def argv_for(draw, name: str, parser: argparse.ArgumentParser) -> list[str]:
    """An argv for subcommand ``name``: in "plausible" mode every argument takes a value from
    its domain (so the success path is exercised with finite output), in "hostile" mode any
    argument may take a hostile value, and a stray flag or word may be inserted."""
    hostile = draw(st.sampled_from(["plausible", "hostile"])) == "hostile"
    argv = [name]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            if not action.required and not draw(st.booleans()):
                continue
            if action.required and hostile and draw(st.integers(0, 9)) == 0:
                continue
            argv.append(draw(st.sampled_from(action.option_strings)))
            if action.nargs == 0:
                continue
        pool = [str(c) for c in action.choices] if action.choices else _domain(action.dest)
        if hostile:
            value = draw(st.one_of(st.sampled_from(pool), hostile_values().map(_cli_text)))
        else:
            value = draw(st.sampled_from(pool))
        argv.append(value)
    if hostile and draw(st.integers(0, 4)) == 0:
        argv.insert(draw(st.integers(1, len(argv))), draw(st.sampled_from(["--no-such-flag", "extra", "-"])))
    return argv


@pytest.fixture
def no_model_run(monkeypatch):
    """Replace the real-model entry points (seconds per call) by stubs that check they were
    called with already-validated settings: the CLI's job is to reject bad input before them."""
    try:
        from descent.trace import forward, record
    except ImportError:  # a core-only install: the trace commands are absent anyway
        return

    def fake_trace(prompt, chat=False, top=50, max_new_tokens=24):
        record._check(prompt, chat, top, max_new_tokens)
        nxt = [{"id": i, "text": f"t{i}", "probability": 1.0 / top, "logit": 0.0} for i in range(top)]
        return {
            "tokens": [{"id": 1, "text": prompt[:5]}],
            "next": nxt,
            "model": {"vocab": 49152},
            "entropy_bits": math.log2(top),
        }

    def fake_generate(ids, max_new_tokens, temperature, top_k, top_p, seed, stop_ids=()):
        assert 1 <= max_new_tokens <= forward.MAX_NEW_TOKENS
        assert temperature is None or (math.isfinite(temperature) and temperature >= 0)
        assert top_p is None or 0 < top_p <= 1
        assert top_k is None or top_k >= 1
        yield from ()

    monkeypatch.setattr(record, "trace", fake_trace)
    monkeypatch.setattr(forward, "generate", fake_generate)


def test_cli_commands_are_discovered():
    assert {"size", "models", "accelerators"} <= set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_cli_hostile_arguments(name, data, no_model_run, capsys):
    argv = data.draw(argv_for(name, COMMANDS[name]))
    capsys.readouterr()
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 2), f"{argv!r:.300} exited {code}: {err[-500:]}"
    assert "Traceback" not in err and "Traceback" not in out
    if code == 0:
        assert_finite_text(out, f"descent {argv!r:.200}", tuple(argv))
    elif "--json" in argv:  # errors come back as one JSON object on stdout
        assert err == "" and json.loads(out)["error"].startswith("descent"), f"{argv!r:.300}: {out!r:.500}"
    else:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("descent"), f"{argv!r:.300}: stderr {err!r:.500}"


@pytest.mark.parametrize("argv", [[], ["--help"], ["no-such-command"], ["size"], ["size", "--help"], ["size", "x"]])
def test_cli_edges(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    if "--help" in argv:
        assert code == 0 and "usage:" in out
    elif argv == ["size"]:
        # Every size flag has a default: the site's running example, Llama 3.1 70B on one H200.
        assert code == 0 and "Llama 3.1 70B" in out and "H200" in out
    else:
        assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err


#: Values that argparse or a terminal may read as something other than a value: the end-of-flags
#: marker, a lone dash, nothing, another flag, a terminal escape sequence, numbers no flag takes.
FLAG_VALUES = ["--", "-", "", "---", "--json", "-a", "\x1b]0;pwned\x07\x1b[31m", "\u202e1", "1e999", "nan"]


def _base_argv(name: str, parser: argparse.ArgumentParser) -> list[str]:
    """The command with a plausible value for each positional argument (so a flag's value is what fails)."""
    argv = [name]
    for action in parser._actions:
        if not action.option_strings:
            argv.append(str(next(iter(action.choices))) if action.choices else
                        _domain(action.dest)[0] if action.dest in ("model",) else "hi" if action.dest == "prompt"
                        else "q4_k_m" if action.dest == "format" and name == "quant"
                        else "fp8_e4m3" if action.dest == "format" else "1.5" if action.dest == "value"
                        else "batching")
    return argv


FLAG_CASES = [
    (name, action.option_strings[0], value)
    for name, parser in sorted(COMMANDS.items())
    for action in parser._actions
    if action.option_strings and not isinstance(action, (argparse._HelpAction, argparse._VersionAction))
    for value in FLAG_VALUES
]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("name, flag, value", [
    # The value, "--", in the fast run; the other nine on every flag (about 20 s) in the full one.
    pytest.param(n, f, v, id=f"{n} {f}={v!r}", marks=() if v == "--" else pytest.mark.slow)
    for n, f, v in FLAG_CASES
])
def test_every_flag_refuses_a_value_that_is_not_one(name, flag, value, as_json, no_model_run, capsys):
    # `descent size --accelerator=--` handed the command an empty list (Python 3.11's argparse drops
    # the "--" as the end of flags even after "="): "internal error: TypeError: unhashable type:
    # 'list'", exit 1, and not JSON under --json. Every flag of every command, written --flag=VALUE,
    # with a value that is not one it takes: exit 2, one line naming the flag, no control character.
    argv = [*_base_argv(name, COMMANDS[name]), f"{flag}={value}", *(["--json"] if as_json else [])]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 2, f"{argv!r} exited {code}: {err or out}"
    if as_json:
        assert err == "" and len(out.splitlines()) == 1, f"{argv!r}: {out!r}"
        message = json.loads(out)["error"]
    else:
        assert out == "" and len(err.splitlines()) == 1, f"{argv!r}: {err!r}"
        message = err.strip()
    assert message.startswith("descent") and "internal error" not in message
    assert flag in message or flag.lstrip("-") in message, message
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c == "\u202e" for c in message), repr(message)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_flag_followed_by_the_end_of_flags_marker(name, no_model_run, capsys):
    # `--accelerator -- h200`: "--" ends the flags, so --accelerator has no value: exit 2, one line.
    parser = COMMANDS[name]
    for action in parser._actions:
        if not action.option_strings or action.nargs == 0 or isinstance(action, argparse._HelpAction):
            continue
        argv = [*_base_argv(name, parser), action.option_strings[0], "--"]
        code = cli.main(argv)
        out, err = capsys.readouterr()
        assert code == 2 and out == "" and len(err.splitlines()) == 1, f"{argv!r}: {code} {err!r}"
        assert "internal error" not in err


def test_an_unexpected_error_is_json_under_json(monkeypatch, capsys):
    # Exit 1 is a bug, but a script reading --json still gets one JSON object.
    monkeypatch.setattr(cli, "_cmd_models", lambda args: {}["boom"])
    code = cli.main(["models", "--json"])
    out, err = capsys.readouterr()
    assert code == 1 and err == ""
    assert json.loads(out) == {"error": "descent: internal error: KeyError: 'boom'", "exit_status": 1}


def test_an_abbreviated_json_flag_gets_json_errors(capsys):
    # argparse accepts --js for --json: its errors are JSON too.
    code = cli.main(["size", "--accelerator=--", "--js"])
    out, err = capsys.readouterr()
    assert code == 2 and err == "" and "got '--'" in json.loads(out)["error"]
