"""The core's own test modules, run again inside Pyodide (Node + the npm package ``pyodide``), by pytest.

The browser runs the core from the wheel the site ships; this test loads that wheel into
Pyodide the way ``worker.js`` does and runs the core's tests there, so a core function that
behaves differently in Pyodide (a stdlib module missing from ``python_stdlib.zip``, a float
formatting difference, a platform assumption) fails here rather than in a reader's browser.

Which test modules: every ``tests/test_*.py`` whose top-level imports are the standard library,
pytest, hypothesis, core ``descent`` modules (not ``descent.site``, ``descent.trace``,
``descent.formulas``, ``descent.plotting``, ``descent.cli``: what the browser wheel leaves out)
and tests/ helpers that import the same (copied along, e.g. widget_html). They are chosen by
reading their imports, so new core test modules join automatically. A test of such a module that
imports the build side inside its body (or through a helper or fixture) is skipped there, with the
module it needs as the reason (``build_side_tests``).

How they run: with the real pytest and hypothesis. Their pure-Python wheels (and their
dependencies') are fetched once from PyPI into ``.cache/pyodide-wheels`` (tests/pyodide/wheels.py),
unpacked into Pyodide next to the descent wheel, and ``pytest.main`` runs the copied test files with
the project's own pytest configuration (pyproject.toml: strict markers, warnings as errors), minus
the tests marked ``peer`` (transformers is not in Pyodide) or ``pyodide`` (they start Node).
Property tests run with hypothesis's default example counts, without wall-clock deadlines, except
test_hostile's hostile-input searches, at a quarter of their depth (``DESCENT_FAST=1``, as ``nox -s
fast`` runs them): this run looks for what differs in Pyodide, and the full searches run in CPython.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from descent.site import runtime

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PYODIDE = ROOT / "node_modules" / "pyodide"
NODE = shutil.which("node")
RUNNER = TESTS / "pyodide" / "run_core_tests.mjs"
WHEEL_CACHE = ROOT / ".cache" / "pyodide-wheels"

#: Parts of the package the browser wheel leaves out (descent.site.runtime.BUILD_SIDE): the build
#: side (DESIGN.md, "the core rule") and the command line. Tests importing them stay in CPython.
BUILD_SIDE = ("descent.site", "descent.trace", "descent.formulas", "descent.plotting", "descent.cli")
#: Test modules about the host itself (they build wheels or sites, or start Node), and
#: test_trace_cli, which drives the build-side trace (numpy, the GGUF) through the core's CLI.
#: test_contributing, test_contributing_recipes and test_hfconfig_data read docs/contributing.md,
#: which is not in Pyodide's file system (the chosen test modules, their tests/ helpers and
#: tests/data are copied there); test_widget_tries applies each hint from the pages' shortcode
#: arguments too, read from docs/ with the build side's shortcode parser; test_widget_recompute and
#: test_bench_tool load tools/ (the bench and its reports), host tools. test_widget_budget times each
#: widget against a CPU budget set for CPython: inside Pyodide under Node on a shared CI machine the
#: clock measures the machine (its 1 s limit is flaky there under load); the browser's own recompute times are
#: the bench's (`nox -s bench`, recompute_ms). test_widget_warm counts a first run's loads in a new
#: interpreter (a process, which Pyodide cannot start); test_pyodide counts them in the snapshot.
HOST_ONLY = {"test_bench_tool", "test_contributing", "test_contributing_recipes", "test_core_in_pyodide",
             "test_design_doc", "test_hfconfig_data", "test_page_prose", "test_pyodide", "test_reproducible",
             "test_trace_cli", "test_widget_budget", "test_widget_recompute", "test_widget_tries",
             "test_widget_warm"}
#: What Pyodide leaves out: transformers (peer tests) and processes (tests that start Node).
PYTEST_ARGS = ["-p", "no:cacheprovider", "-m", "not (peer or pyodide)", "--color=no"]
#: Set in Pyodide's os.environ before the tests run (see the module's docstring).
PYODIDE_ENV = {"DESCENT_FAST": "1"}
#: The least numbers of tests that must pass inside Pyodide (2026-12-01, with Parts 2-5: 1,030
#: passed, 175 of them property tests; about 150 s of CPU). A drop means modules or property tests
#: stopped being picked up.
MIN_PASSED = 950
MIN_PROPERTY_PASSED = 160


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


wheels = _load("pyodide_wheels", TESTS / "pyodide" / "wheels.py")


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


def _local(name: str) -> Path | None:
    """The file of a module that lives in tests/ (a helper such as widget_html, or another test module)."""
    path = TESTS / f"{name}.py"
    return path if "." not in name and path.is_file() else None


def _needs(stem: str, seen: set[str] | None = None) -> set[str] | None:
    """The tests/ modules that ``stem`` needs (itself included, recursively), or None if it or one of
    them imports anything beyond the stdlib, pytest, hypothesis and the core."""
    seen = set() if seen is None else seen
    seen.add(stem)
    for name in _top_imports(TESTS / f"{stem}.py"):
        if _local(name) is not None:
            if name not in seen and _needs(name, seen) is None:
                return None
        elif not _is_core_import(name):
            return None
    return seen


def core_test_modules() -> list[str]:
    """Names of the test modules that import only the stdlib, pytest, hypothesis, the core and
    tests/ helpers that do the same."""
    return [
        path.stem
        for path in sorted(TESTS.glob("test_*.py"))
        if path.stem not in HOST_ONLY and _needs(path.stem) is not None
    ]


def helper_modules(modules: list[str]) -> list[str]:
    """The tests/ modules that ``modules`` import (copied into Pyodide beside them), not themselves."""
    return sorted(set().union(*(_needs(m) for m in modules)) - set(modules))


def _imports_in(fn: ast.AST) -> set[str]:
    names = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Import):
            names |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            names.add(n.module)
            if n.module == "descent":
                names |= {f"descent.{a.name}" for a in n.names}
        elif (  # pytest.importorskip("numpy"): an import too (a peer check against an installed library)
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "importorskip"
            and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)
        ):
            names.add(n.args[0].value)
    return {m for m in names if not _is_core_import(m) and _local(m) is None}


def build_side_tests(modules: list[str]) -> dict[str, str]:
    """``{"tests/m.py::test_f": reason}`` for the tests of ``modules`` that import a module Pyodide
    lacks inside their body, or through a function or fixture of the same module that does (the
    module itself imports only the core at the top)."""
    out = {}
    for stem in modules:
        tree = ast.parse((TESTS / f"{stem}.py").read_text(encoding="utf-8"))
        funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            funcs |= {f"{cls.name}::{n.name}": n for n in cls.body if isinstance(n, ast.FunctionDef)}
        bad = {name: _imports_in(fn) for name, fn in funcs.items()}
        # Through helpers and fixtures: a name used in the body, or a parameter, that is a bad function.
        changed = True
        while changed:
            changed = False
            for name, fn in funcs.items():
                used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {a.arg for a in fn.args.args}
                for other in used & bad.keys():
                    if other != name and not bad[other] <= bad[name]:
                        bad[name] |= bad[other]
                        changed = True
        for name, mods in bad.items():
            if mods and name.split("::")[-1].startswith("test"):
                out[f"tests/{stem}.py::{name}"] = f"imports {', '.join(sorted(mods))}, which Pyodide lacks (build side)"
    return out


def test_module_selection():
    mods = core_test_modules()
    # Core modules' tests are in; build-side and peer tests (numpy, transformers, mkdocs) are out.
    for expected in ("test_units", "test_numerics", "test_memory", "test_widgets", "test_catalog_models",
                     "test_hostile", "test_widgets_part5"):
        assert expected in mods
    for build_side in ("test_trace", "test_formulas", "test_figures", "test_site_build", "test_pyodide",
                       "test_cli", "test_hostile_cli", "test_embeddings"):
        assert build_side not in mods
    # widget_html (stdlib only) travels with the widget tests that import it.
    assert helper_modules(["test_widgets_part5"]) == ["widget_html"]
    # A test that imports the build side in its body is skipped there, with the module named.
    skips = build_side_tests(["test_widgets_part0", "test_units"])
    assert skips["tests/test_widgets_part0.py::test_prompts_are_the_trace_prompts"].startswith(
        "imports descent.trace.record, which Pyodide lacks"
    )
    assert not [k for k in skips if "test_units" in k]


_SAMPLE = """
import pytest
from hypothesis import given, strategies as st

@pytest.fixture
def three():
    yield 3

def test_ok(three, tmp_path, capsys):
    print("hi")
    assert capsys.readouterr().out == "hi\\n" and three == 3 and tmp_path.is_dir()

@pytest.mark.parametrize(("a", "b"), [(1, 2), (2, 3), (3, 5)])
def test_param(a, b):
    assert b == a + 1

@given(st.integers())
def test_prop(x):
    assert x == x

@given(st.integers(min_value=0))
def test_prop_fails(x):
    assert x < 10

@pytest.mark.skip(reason="not here")
def test_skipped():
    pass

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False

@pytest.fixture
def broken():
    yield
    raise RuntimeError("teardown")

def test_teardown_fails(broken):
    pass
"""


def test_runner_counts_pass_fail_skip_and_property_tests(tmp_path):
    # The runner in CPython, on a sample counted by hand: test_ok, test_param[1-2], test_param[2-3],
    # test_prop pass (4); test_param[3-5], test_prop_fails and test_teardown_fails (passed its call,
    # failed its teardown) fail (3); test_skipped and test_xfail are skipped, each with its reason.
    (tmp_path / "test_sample.py").write_text(_SAMPLE)
    code = (
        f"import sys, json; sys.path.insert(0, {str(TESTS / 'pyodide')!r}); import runner; "
        "print(json.dumps(runner.run(['test_sample.py'], ['-p', 'no:cacheprovider', '-q'])))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["passed"] == 4
    assert sorted(f.split(": ")[0].split("::")[1] for f in res["failed"]) == [
        "test_param[3-5]", "test_prop_fails", "test_teardown_fails"
    ]  # fmt: skip
    assert res["skipped"] == {"not here": 1, "xfail: known": 1}
    assert res["property"] == {"passed": 1, "failed": 1, "skipped": 0}
    assert res["exit_code"] == 1 and res["collect_errors"] == []
    assert res["versions"]["pytest"] == metadata.version("pytest")


def test_wheels_for_pyodide_are_pure_and_pinned():
    # Markers are evaluated for Pyodide, not for this interpreter.
    env = wheels.marker_environment("3.14.2")
    assert (env["python_version"], env["sys_platform"]) == ("3.14", "emscripten")
    # The venv's own version wherever it is pure Python; the named fallback where it is not.
    assert wheels.pinned_version("pytest") == metadata.version("pytest")
    assert wheels.pinned_version("pluggy") == metadata.version("pluggy")
    hyp = metadata.distribution("hypothesis")
    expected = hyp.version if wheels.is_pure(hyp) else wheels.PURE_FALLBACK["hypothesis"]
    assert wheels.pinned_version("hypothesis") == expected


@pytest.mark.slow
@pytest.mark.pyodide
@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.skipif(
    not (PYODIDE / "pyodide.mjs").is_file(), reason="node_modules/pyodide missing: run npm ci"
)
def test_core_tests_pass_in_pyodide(tmp_path):
    python = json.loads((PYODIDE / "pyodide-lock.json").read_text(encoding="utf-8"))["info"]["python"]
    deps = wheels.wheels(WHEEL_CACHE, python)  # pytest, hypothesis and their dependencies
    wheel = runtime.build_wheel(ROOT, tmp_path)
    modules = core_test_modules()
    root = "/home/pyodide/project"
    files = {f"{root}/pyproject.toml": ROOT / "pyproject.toml"}  # the same pytest configuration
    for name in ["conftest", "sitebuild", *modules, *helper_modules(modules)]:  # conftest imports sitebuild
        files[f"{root}/tests/{name}.py"] = TESTS / f"{name}.py"
    for data in sorted((TESTS / "data").rglob("*")):  # test data (e.g. the config.json files)
        if data.is_file():
            files[f"{root}/tests/{data.relative_to(TESTS).as_posix()}"] = data
    files["/home/pyodide/runner/runner.py"] = TESTS / "pyodide" / "runner.py"
    spec = {
        "wheels": [str(wheel), *map(str, deps.values())],
        "files": {k: str(v) for k, v in files.items()},
        "root": root,
        "runner": "/home/pyodide/runner",
        "tests": [f"tests/{m}.py" for m in modules],
        "args": PYTEST_ARGS,
        "skip": build_side_tests(modules),
        "env": PYODIDE_ENV,
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    proc = subprocess.run(
        [NODE, str(RUNNER), str(PYODIDE), str(tmp_path / "spec.json")],
        capture_output=True,
        text=True,
        timeout=1800,  # about 150 s of CPU; a machine shared with other jobs can take several times that
        env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout)
    summary = (
        f"Pyodide (Python {res['python']}, pytest {res['versions']['pytest']}, hypothesis "
        f"{res['versions']['hypothesis']}): {res['passed']} passed ({res['property']['passed']} property "
        f"tests), {len(res['failed'])} failed, skipped {res['skipped']}"
    )
    print(summary)
    assert res["collect_errors"] == [], "\n".join(res["collect_errors"])
    assert res["failed"] == [], summary + "\n\n" + "\n".join(res["failed"])[:8000]
    assert res["exit_code"] == 0, proc.stderr[-3000:]
    # The only skips: tests that import the build side in their body (build_side_tests).
    assert all(r.endswith("which Pyodide lacks (build side)") for r in res["skipped"]), res["skipped"]
    assert res["python"] == python
    assert res["versions"]["pytest"] == metadata.version("pytest")  # the venv's pytest, not a stand-in
    assert res["versions"]["hypothesis"] == wheels.pinned_version("hypothesis")
    assert res["numpy_loaded"] is False  # the core never pulls numpy in
    assert res["passed"] >= MIN_PASSED, summary
    assert res["property"]["passed"] >= MIN_PROPERTY_PASSED, summary
