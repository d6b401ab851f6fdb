"""The core's own test modules, run again inside Pyodide (Node + the npm package ``pyodide``).

The browser runs the core from the wheel the site ships; this test loads that wheel into
Pyodide the way ``worker.js`` does and runs the core's tests there, so a core function that
behaves differently in Pyodide (a stdlib module missing from ``python_stdlib.zip``, a float
formatting difference, a platform assumption) fails here rather than in a reader's browser.

Which test modules: every ``tests/test_*.py`` whose top-level imports are the standard library,
pytest, hypothesis and core ``descent`` modules (not ``descent.site``, ``descent.trace``,
``descent.formulas``, ``descent.plotting``: the build side). They are chosen by reading their
imports, so new core test modules join automatically.

How they run: Pyodide's core files have neither pytest nor hypothesis, and downloading their
wheels at test time is fragile, so ``tests/pyodide/runner.py`` imports each module and calls
every ``test_*`` function itself, with a small pytest stand-in (``tests/pyodide/shim/``: raises,
approx, parametrize, fixtures, tmp_path, monkeypatch, capsys). Property tests (``@given``) and
tests that start a subprocess are skipped there and counted; they run in CPython.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from descent.site import runtime

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PYODIDE = ROOT / "node_modules" / "pyodide"
NODE = shutil.which("node")
RUNNER = TESTS / "pyodide" / "run_core_tests.mjs"

#: Parts of the package the browser wheel leaves out (descent.site.runtime.BUILD_SIDE): the build
#: side (DESIGN.md, "the core rule") and the command line. Tests importing them stay in CPython.
BUILD_SIDE = ("descent.site", "descent.trace", "descent.formulas", "descent.plotting", "descent.cli")
#: Test modules about the host itself (they build wheels or sites, or start Node), and
#: test_trace_cli, which drives the build-side trace (numpy, the GGUF) through the core's CLI.
#: test_contributing reads docs/contributing.md and test_hfconfig_data reads tests/data/configs,
#: neither of which is in Pyodide's file system (only test modules are copied there).
HOST_ONLY = {"test_contributing", "test_core_in_pyodide", "test_hfconfig_data", "test_pyodide", "test_reproducible",
             "test_trace_cli"}
#: The least number of tests that must pass inside Pyodide (374 on 2026-11-29, with 109 skipped:
#: 78 property tests, 27 + 1 peer tests needing transformers/torch, 2 subprocess, 1 sympy).
#: A drop below it means test modules stopped being picked up.
MIN_PASSED = 300


def _top_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            mod = node.module or ""
            names.add(mod)
            if mod == "descent":  # from descent import trace -> descent.trace
                names |= {f"descent.{a.name}" for a in node.names}
    return names


def _is_core_import(name: str) -> bool:
    top = name.split(".")[0]
    if top == "descent":
        return not name.startswith(BUILD_SIDE)
    return top in sys.stdlib_module_names or top in ("__future__", "pytest", "hypothesis")


def core_test_modules() -> list[str]:
    """Names of the test modules that import only the stdlib, pytest, hypothesis and the core."""
    out = []
    for path in sorted(TESTS.glob("test_*.py")):
        if path.stem not in HOST_ONLY and all(_is_core_import(n) for n in _top_imports(path)):
            out.append(path.stem)
    return out


def test_module_selection():
    mods = core_test_modules()
    # Core modules' tests are in; build-side and peer tests (numpy, transformers, mkdocs) are out.
    for expected in ("test_units", "test_numerics", "test_memory", "test_widgets", "test_catalog_models"):
        assert expected in mods
    for build_side in ("test_trace", "test_formulas", "test_figures", "test_site_build", "test_pyodide",
                       "test_cli", "test_hostile"):
        assert build_side not in mods


_SAMPLE = """
import pytest
from hypothesis import given, strategies as st

@pytest.fixture
def three():
    yield 3

def test_ok(three, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("X_SHIM", "1")
    print("hi")
    assert capsys.readouterr().out == "hi\\n" and three == 3 and tmp_path.is_dir()
    assert 0.1 + 0.2 == pytest.approx(0.3) and [1.0, 2.0] == pytest.approx([1, 2 + 1e-9])
    with pytest.raises(ValueError, match="bad"):
        raise ValueError("a bad value")

@pytest.mark.parametrize(("a", "b"), [(1, 2), (2, 3), pytest.param(3, 5, marks=pytest.mark.slow)])
def test_param(a, b):
    assert b == a + 1

@given(st.integers())
def test_prop(x):
    pass

def test_needs_site(site_dir):
    pass

def test_raises_without_exception():
    with pytest.raises(KeyError):
        pass
"""


def test_runner_counts_pass_fail_skip(tmp_path):
    # The runner itself, in CPython with the same shim: 1 + 2 passes, and 2 failures that a
    # runner which ignored assertions would miss (3 != 5 in the third case; a raises() that
    # saw nothing); @given and an unknown fixture are skipped (counted by hand from _SAMPLE).
    (tmp_path / "test_sample.py").write_text(_SAMPLE)
    (tmp_path / "conftest.py").write_text("")
    code = (
        f"import sys, json; sys.path.insert(0, {str(TESTS / 'pyodide' / 'shim')!r}); "
        f"sys.path.insert(0, {str(TESTS / 'pyodide')!r}); import runner; "
        f"print(json.dumps(runner.run({str(tmp_path)!r}, ['test_sample'])))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["passed"] == 3
    assert len(res["failed"]) == 2
    assert any("test_param[2]" in f for f in res["failed"])
    assert any("DID NOT RAISE" in f for f in res["failed"])
    assert res["skipped"] == {"needs hypothesis (runs in CPython)": 1, "needs fixture 'site_dir'": 1}


@pytest.mark.slow
@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.skipif(
    not (PYODIDE / "pyodide.mjs").is_file(), reason="node_modules/pyodide missing: run npm ci"
)
def test_core_tests_pass_in_pyodide(tmp_path):
    wheel = runtime.build_wheel(ROOT, tmp_path)
    modules = core_test_modules()
    proc = subprocess.run(
        [NODE, str(RUNNER), str(PYODIDE), str(wheel), str(TESTS), json.dumps(modules)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout)
    skipped = sum(res["skipped"].values())
    summary = (
        f"Pyodide (Python {res['python']}): {res['passed']} passed, {len(res['failed'])} failed, "
        f"{skipped} skipped {res['skipped']}, modules {res['modules']}"
    )
    print(summary)
    assert res["errors"] == {}, f"test modules failed to import in Pyodide: {res['errors']}"
    assert res["failed"] == [], summary + "\n\n" + "\n".join(res["failed"])[:8000]
    assert res["numpy_loaded"] is False  # the core never pulls numpy in
    assert res["passed"] >= MIN_PASSED, summary
