"""Run the core's test modules inside Pyodide without pytest (see tests/test_core_in_pyodide.py).

Called by run_core_tests.mjs after the descent wheel is unpacked and the test files, this file
and the ``shim/`` stand-ins for pytest and hypothesis are written into Pyodide's file system.
``run(test_dir, modules)`` imports each module, expands ``@pytest.mark.parametrize``, resolves
fixtures (the module's own ``@pytest.fixture`` functions and conftest's, plus ``tmp_path``,
``monkeypatch`` and ``capsys``) and calls every ``test_*`` function. A test is skipped, with a
reason, when it needs hypothesis (``@given``), a fixture nobody provides, a subprocess (there
are no processes in Pyodide), a module Pyodide lacks, or carries ``skipif(True)``. It returns
``{"passed": n, "failed": [...], "skipped": {reason: n}, "errors": {module: message}}``.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import itertools
import os
import sys
import tempfile
import traceback
from collections import Counter, namedtuple
from pathlib import Path

import pytest  # the shim

#: Tests whose source mentions one of these need another process: Pyodide has none.
NEEDS_PROCESS = ("subprocess", "sys.executable")

CaptureResult = namedtuple("CaptureResult", "out err")


class _Capsys:
    def __init__(self):
        self._out, self._err = io.StringIO(), io.StringIO()
        self._saved = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = self._out, self._err

    def readouterr(self):
        res = CaptureResult(self._out.getvalue(), self._err.getvalue())
        self._out.seek(0), self._out.truncate()
        self._err.seek(0), self._err.truncate()
        return res

    def close(self):
        sys.stdout, sys.stderr = self._saved


_MISSING = object()


class _MonkeyPatch:
    def __init__(self):
        self._undo = []

    def setattr(self, target, name, value=_MISSING, raising=True):
        if value is _MISSING:  # setattr("pkg.mod.attr", value)
            value = name
            mod, _, name = target.rpartition(".")
            target = importlib.import_module(mod)
        old = getattr(target, name, _MISSING)
        if old is _MISSING and raising:
            raise AttributeError(f"{target!r} has no attribute {name!r}")
        self._undo.append(lambda: delattr(target, name) if old is _MISSING else setattr(target, name, old))
        setattr(target, name, value)

    def delattr(self, target, name, raising=True):
        old = getattr(target, name, _MISSING)
        if old is _MISSING:
            if raising:
                raise AttributeError(name)
            return
        self._undo.append(lambda: setattr(target, name, old))
        delattr(target, name)

    def setitem(self, mapping, key, value):
        old = mapping.get(key, _MISSING)
        self._undo.append(
            lambda: mapping.pop(key, None) if old is _MISSING else mapping.__setitem__(key, old)
        )
        mapping[key] = value

    def delitem(self, mapping, key, raising=True):
        if key not in mapping:
            if raising:
                raise KeyError(key)
            return
        old = mapping[key]
        self._undo.append(lambda: mapping.__setitem__(key, old))
        del mapping[key]

    def setenv(self, name, value, prepend=None):
        self.setitem(os.environ, name, str(value))

    def delenv(self, name, raising=True):
        self.delitem(os.environ, name, raising)

    def chdir(self, path):
        old = os.getcwd()
        self._undo.append(lambda: os.chdir(old))
        os.chdir(path)

    def undo(self):
        for fn in reversed(self._undo):
            fn()
        self._undo.clear()


def _builtin_fixture(name, stack):
    if name == "tmp_path":
        return Path(tempfile.mkdtemp(prefix="pyodide-test-"))
    if name == "tmp_path_factory":
        return None
    if name == "monkeypatch":
        mp = _MonkeyPatch()
        stack.callback(mp.undo)
        return mp
    if name == "capsys":
        cap = _Capsys()
        stack.callback(cap.close)
        return cap
    raise LookupError(name)


class NeedsFixture(Exception):
    pass


def _fixtures_of(module) -> dict:
    return {
        f._shim_fixture["name"]: f
        for f in vars(module).values()
        if callable(f) and hasattr(f, "_shim_fixture")
    }


class _Resolver:
    def __init__(self, fixtures: dict, module_cache: dict):
        self.fixtures = fixtures
        self.module_cache = module_cache  # scope != function: computed once per module

    def get(self, name, stack, cache):
        if name in cache:
            return cache[name]
        if name in self.fixtures:
            fn = self.fixtures[name]
            scoped = fn._shim_fixture["scope"] != "function"
            if scoped and name in self.module_cache:
                return self.module_cache[name]
            kwargs = {
                p: self.get(p, stack, cache) for p in inspect.signature(fn).parameters if p != "request"
            }
            if "request" in inspect.signature(fn).parameters:
                raise NeedsFixture("request")
            value = fn(**kwargs)
            if inspect.isgenerator(value):
                gen = value
                value = next(gen)
                if not scoped:
                    stack.callback(lambda: next(gen, None))
            if scoped:
                self.module_cache[name] = value
            cache[name] = value
            return value
        try:
            value = _builtin_fixture(name, stack)
        except LookupError:
            raise NeedsFixture(name) from None
        if value is None:
            raise NeedsFixture(name)
        cache[name] = value
        return value


def _marks(obj) -> list:
    m = getattr(obj, "pytestmark", [])
    return list(m) if isinstance(m, (list, tuple)) else [m]


def _cases(fn):
    """Expand parametrize marks into (id, kwargs, marks) cases (the cross product, as pytest does)."""
    axes = []
    for m in _marks(fn):
        if m.name != "parametrize":
            continue
        names, values = m.args[0], m.args[1]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        axis = []
        for v in values:
            marks = ()
            if isinstance(v, pytest._Param):
                marks, v = v.marks, v.values
                v = v if len(names) > 1 else v[0]
            vals = v if len(names) > 1 else (v,)
            axis.append((dict(zip(names, vals, strict=True)), marks))
        axes.append(axis)
    if not axes:
        yield "", {}, ()
        return
    for i, combo in enumerate(itertools.product(*axes)):
        kwargs, marks = {}, ()
        for kw, mk in combo:
            kwargs.update(kw)
            marks += tuple(mk)
        yield f"[{i}]", kwargs, marks


def _skip_reason(fn, marks, module_marks) -> str | None:
    for m in list(marks) + _marks(fn) + module_marks:
        if m.name == "skip":
            return "marked skip"
        if m.name == "skipif" and m.args and m.args[0]:
            return "skipif: " + str(m.kwargs.get("reason", ""))
    if getattr(fn, "_shim_needs_hypothesis", False):
        return "needs hypothesis (runs in CPython)"
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        src = ""
    if any(s in src for s in NEEDS_PROCESS):
        return "needs a subprocess (none in Pyodide)"
    return None


def run(test_dir: str, modules: list[str]) -> dict:
    sys.path.insert(0, test_dir)
    passed, failed, skipped, errors = 0, [], Counter(), {}
    per_module = {}
    conftest = {}
    try:
        conftest = _fixtures_of(importlib.import_module("conftest"))
    except Exception:  # noqa: BLE001  (a conftest that needs a build tool only loses its fixtures)
        conftest = {}
    for modname in modules:
        try:
            mod = importlib.import_module(modname)
        except pytest.Skipped as exc:  # a module-level importorskip (e.g. torch for peer tests)
            skipped[f"module skipped: {str(exc)[:80]}"] += 1
            per_module[modname] = {"module skipped": str(exc)[:80]}
            continue
        except Exception as exc:  # noqa: BLE001
            errors[modname] = f"{type(exc).__name__}: {exc}"
            continue
        resolver = _Resolver({**conftest, **_fixtures_of(mod)}, {})
        module_marks = _marks(mod)
        counts = Counter()
        for name, fn in list(vars(mod).items()):
            if not (name.startswith("test_") and inspect.isfunction(fn)):
                continue
            for case_id, params, marks in _cases(fn):
                test_id = f"{modname}::{name}{case_id}"
                reason = _skip_reason(fn, marks, module_marks)
                if reason:
                    skipped[reason] += 1
                    counts["skipped"] += 1
                    continue
                with contextlib.ExitStack() as stack:
                    try:
                        cache = dict(params)
                        kwargs = {p: resolver.get(p, stack, cache) for p in inspect.signature(fn).parameters}
                        fn(**kwargs)
                    except NeedsFixture as exc:
                        skipped[f"needs fixture {exc.args[0]!r}"] += 1
                        counts["skipped"] += 1
                        continue
                    except pytest.Skipped as exc:
                        skipped[f"skip: {str(exc)[:80]}"] += 1
                        counts["skipped"] += 1
                        continue
                    except ModuleNotFoundError as exc:
                        if (exc.name or "").split(".")[0] != "descent":
                            skipped[f"needs {exc.name} (not in Pyodide's core)"] += 1
                            counts["skipped"] += 1
                            continue
                        failed.append(f"{test_id}: {traceback.format_exc(limit=-3)}")
                        counts["failed"] += 1
                        continue
                    except BaseException:  # noqa: BLE001
                        failed.append(f"{test_id}: {traceback.format_exc(limit=-3)[-1500:]}")
                        counts["failed"] += 1
                        continue
                passed += 1
                counts["passed"] += 1
        per_module[modname] = dict(counts)
    return {
        "passed": passed,
        "failed": failed,
        "skipped": dict(skipped),
        "errors": errors,
        "modules": per_module,
    }
