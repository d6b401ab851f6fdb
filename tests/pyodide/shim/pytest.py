"""A small stand-in for pytest inside Pyodide (used only by tests/pyodide/runner.py).

Pyodide's core files do not include pytest, and vendoring pytest + pluggy + iniconfig +
packaging would mean downloading wheels at test time. The core's test modules use a small part
of pytest's API, which this module provides with pytest's semantics:

``raises`` (with ``match``, as ``re.search`` on ``str(exc)``), ``approx`` (rel 1e-6, abs 1e-12,
numbers, sequences and dicts), ``mark.parametrize`` / ``mark.skipif`` / ``mark.skip`` and any
other mark (recorded, no effect), ``param``, ``fixture``, ``skip``, ``fail``, ``importorskip``.
The runner supplies the fixtures ``tmp_path``, ``monkeypatch`` and ``capsys``.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Mapping


class Skipped(Exception):
    """Raised by :func:`skip` and :func:`importorskip`; the runner counts the test as skipped."""


class Failed(AssertionError):
    """Raised by :func:`fail`."""


def skip(reason: str = "", allow_module_level: bool = False):
    raise Skipped(reason)


def fail(reason: str = "", pytrace: bool = True):
    raise Failed(reason)


def importorskip(modname: str, minversion: str | None = None, reason: str | None = None):
    try:
        return importlib.import_module(modname)
    except ImportError:
        raise Skipped(reason or f"could not import {modname!r}") from None


class _RaisesContext:
    def __init__(self, expected, match):
        self.expected = expected
        self.match = match
        self.value = None
        self.type = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            raise Failed(f"DID NOT RAISE {self.expected}")
        if not issubclass(exc_type, self.expected):
            return False  # propagate the unexpected exception
        if self.match is not None and not re.search(self.match, str(exc)):
            raise Failed(f"Regex pattern did not match.\n Regex: {self.match!r}\n Input: {str(exc)!r}")
        self.value, self.type = exc, exc_type
        return True


def raises(expected, *args, match=None, **kwargs):
    ctx = _RaisesContext(expected, match)
    if args:
        with ctx:
            args[0](*args[1:], **kwargs)
        return ctx
    return ctx


class _Approx:
    def __init__(self, expected, rel=None, abs=None, nan_ok=False):
        self.expected, self.rel, self.abs, self.nan_ok = expected, rel, abs, nan_ok

    def _close(self, actual, expected) -> bool:
        if isinstance(expected, Mapping):
            return (
                isinstance(actual, Mapping)
                and set(actual) == set(expected)
                and all(self._close(actual[k], expected[k]) for k in expected)
            )
        if isinstance(expected, (list, tuple)):
            return (
                isinstance(actual, (list, tuple))
                and len(actual) == len(expected)
                and all(self._close(a, e) for a, e in zip(actual, expected, strict=True))
            )
        if isinstance(expected, (int, float)) and not isinstance(expected, bool):
            if isinstance(actual, bool) or not isinstance(actual, (int, float)):
                return False
            if math.isnan(expected):
                return self.nan_ok and math.isnan(actual)
            if math.isinf(expected):
                return actual == expected
            # pytest: tolerance = max(rel * |expected|, abs); rel defaults to 1e-6, abs to 1e-12
            # (when only abs is given, rel is not applied).
            rel = self.rel if self.rel is not None else (0.0 if self.abs is not None else 1e-6)
            ab = self.abs if self.abs is not None else 1e-12
            return abs_(actual - expected) <= max(rel * abs_(expected), ab)
        return actual == expected

    def __eq__(self, actual) -> bool:
        return self._close(actual, self.expected)

    def __repr__(self) -> str:
        return f"approx({self.expected!r}, rel={self.rel}, abs={self.abs})"

    __hash__ = None


abs_ = abs


def approx(expected, rel=None, abs=None, nan_ok=False):
    return _Approx(expected, rel=rel, abs=abs, nan_ok=nan_ok)


class _Param:
    def __init__(self, values, marks=(), id=None):
        self.values, self.marks, self.id = values, marks, id


def param(*values, marks=(), id=None):
    return _Param(values, marks if isinstance(marks, (list, tuple)) else (marks,), id)


class Mark:
    def __init__(self, name, args=(), kwargs=None):
        self.name, self.args, self.kwargs = name, args, kwargs or {}

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs and self.name not in ("skipif", "parametrize"):
            return _apply(args[0], Mark(self.name, self.args, self.kwargs))
        return _Decorator(self.name, args, kwargs)


class _Decorator(Mark):
    def __call__(self, fn):
        return _apply(fn, self)


def _apply(fn, mark):
    marks = list(getattr(fn, "pytestmark", []))
    marks.append(mark)
    fn.pytestmark = marks
    return fn


class _MarkGenerator:
    def __getattr__(self, name):
        return Mark(name)


mark = _MarkGenerator()


def fixture(fn=None, *, scope="function", params=None, autouse=False, name=None):
    def deco(f):
        f._shim_fixture = {"scope": scope, "autouse": autouse, "name": name or f.__name__}
        return f

    return deco(fn) if fn is not None else deco
