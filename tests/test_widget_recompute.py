"""tools/widget_recompute.py, the bench's per-widget recompute report (issue 28): what it runs and
what it reports. No timing is asserted (the bench measures speed, not the test suite)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import descent.widgets as w

TOOL = Path(__file__).resolve().parents[1] / "tools" / "widget_recompute.py"
spec = importlib.util.spec_from_file_location("widget_recompute", TOOL)
recompute = importlib.util.module_from_spec(spec)
spec.loader.exec_module(recompute)


def test_report_times_defaults_and_each_input_at_both_ends():
    rep = recompute.recompute_report(["kv_demo", "float_bits"])
    assert rep["goal_ms"] == 50.0 and rep["repeats"] == recompute.REPEATS
    rows = {r["widget"]: r for r in rep["widgets"]}
    assert set(rows) == {"kv_demo", "float_bits"}
    for name, row in rows.items():
        # The defaults, then each input at its two ends (a select's first and last option, ...).
        assert row["cases"] == 1 + 2 * len(w.get(name).inputs)
        assert 0 <= row["defaults_ms"] <= row["worst_ms"]
    # Slowest first; the headline is the slowest row's worst case; none listed over the goal unless over it.
    assert [r["worst_ms"] for r in rep["widgets"]] == sorted((r["worst_ms"] for r in rep["widgets"]), reverse=True)
    assert rep["worst_ms"] == rep["widgets"][0]["worst_ms"]
    assert rep["over_goal"] == [r["widget"] for r in rep["widgets"] if r["worst_ms"] > 50.0]
    lines = recompute.markdown(rep)
    assert lines[4] == "| --- | --- | --- | --- | --- |"
    assert sum(line.startswith("| kv_demo |") for line in lines) == 1


def test_extremes_are_the_ends_of_each_kind_of_input():
    # descent.widgets.Input.extremes: what the report and the budget test try.
    kinds = {i.kind: i for name in w.names() for i in w.get(name).inputs}
    rng = kinds["range"]
    assert rng.extremes() == [rng.min, rng.max]
    sel = kinds["select"]
    assert sel.extremes() == [sel.options[0][0], sel.options[-1][0]]
    assert kinds["toggle"].extremes() == [False, True]
    text = kinds["text"]
    assert text.extremes() == ["", "x" * text.max_length]


def test_each_timed_run_simulates_again(monkeypatch):
    # A reader's change asks for inputs not yet simulated: the batching widget's two simulations
    # (static and continuous) run in every timed run, not only in the warm-up before them.
    from descent import serving

    calls = []
    simulate = serving.simulate
    monkeypatch.setattr(serving, "simulate", lambda *a, **k: calls.append(1) or simulate(*a, **k))
    serving.run.cache_clear()
    recompute._time(w.run, "batching", {})
    assert len(calls) == 2 * (1 + recompute.REPEATS)
