"""Run pytest itself on the core's test modules and summarise the outcome as JSON-able data.

Used inside Pyodide by run_core_tests.mjs (after it unpacked the descent wheel and the real pytest
and hypothesis wheels and copied the test files), and in CPython by tests/test_core_in_pyodide.py
to check this runner's counting. ``run(files, args)`` calls ``pytest.main`` with a plugin that
records every test's outcome and returns::

    {"exit_code": int, "passed": n, "failed": ["nodeid: message", ...], "skipped": {reason: n},
     "property": {"passed": n, "failed": n, "skipped": n}, "collect_errors": [...],
     "versions": {distribution: version}}

A test counts as failed when any of its phases (setup, call, teardown) failed, as skipped when it
was skipped (or xfailed), and as passed otherwise. "property" counts the tests hypothesis runs
(``@given``), as hypothesis itself detects them.
"""

from __future__ import annotations

from collections import Counter
from importlib import metadata

import pytest

#: Distributions whose versions the summary reports.
REPORTED = ("pytest", "pluggy", "hypothesis", "sortedcontainers", "iniconfig", "packaging", "pygments")


class _Collect:
    def __init__(self, hypothesis_settings: dict | None, skip: dict[str, str] | None):
        self.hypothesis_settings = hypothesis_settings
        self.skip = skip or {}
        self.outcome: dict[str, str] = {}
        self.message: dict[str, str] = {}
        self.skip_reason: dict[str, str] = {}
        self.property: set[str] = set()
        self.collect_errors: list[str] = []

    def pytest_configure(self, config):
        # Here, not before pytest.main: hypothesis must first be imported by pytest's plugin loading
        # (an earlier import is a PytestAssertRewriteWarning, an error under this project's config).
        if self.hypothesis_settings:
            from hypothesis import settings

            settings.register_profile("runner", **self.hypothesis_settings)
            settings.load_profile("runner")

    def pytest_collection_modifyitems(self, config, items):
        for item in items:
            reason = self.skip.get(item.nodeid.split("[")[0])
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))

    def pytest_itemcollected(self, item):
        from hypothesis.internal.detection import is_hypothesis_test

        if is_hypothesis_test(getattr(item, "obj", None)):
            self.property.add(item.nodeid)

    def pytest_collectreport(self, report):
        if report.failed:
            self.collect_errors.append(f"{report.nodeid}: {str(report.longrepr)[-1500:]}")

    def pytest_runtest_logreport(self, report):
        nid = report.nodeid
        if report.failed:
            self.outcome[nid] = "failed"
            self.message.setdefault(nid, f"{report.when}: {str(report.longrepr)[-1500:]}")
        elif report.skipped and self.outcome.get(nid) != "failed":
            self.outcome[nid] = "skipped"
            if hasattr(report, "wasxfail"):
                self.skip_reason[nid] = f"xfail: {report.wasxfail}"
            else:
                longrepr = report.longrepr
                reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
                self.skip_reason[nid] = reason.removeprefix("Skipped: ")[:100]
        elif report.passed and report.when == "call" and nid not in self.outcome:
            self.outcome[nid] = "passed"


def run(
    files: list[str], args: list[str], hypothesis_settings: dict | None = None, skip: dict[str, str] | None = None
) -> dict:
    """Run pytest on ``files`` with ``args``; ``hypothesis_settings`` (e.g. ``{"deadline": None}``)
    become the default hypothesis profile (a test's own ``@settings`` still wins); ``skip`` maps
    test ids without parameters (``tests/test_x.py::test_y``) to the reason they are skipped."""
    plugin = _Collect(hypothesis_settings, skip)
    exit_code = pytest.main([*files, *args], plugins=[plugin])
    outcomes = plugin.outcome
    prop = Counter(outcomes[n] for n in plugin.property if n in outcomes)
    versions = {}
    for name in REPORTED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "exit_code": int(exit_code),
        "passed": sum(1 for o in outcomes.values() if o == "passed"),
        "failed": [f"{n}: {plugin.message[n]}" for n, o in outcomes.items() if o == "failed"],
        "skipped": dict(Counter(plugin.skip_reason[n] for n, o in outcomes.items() if o == "skipped")),
        "property": {k: prop.get(k, 0) for k in ("passed", "failed", "skipped")},
        "collect_errors": plugin.collect_errors,
        "versions": versions,
    }
