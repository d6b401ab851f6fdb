"""How long each widget takes to recompute, in CPython: its defaults and each input at its extremes.

The bench (``tools/bench.py``) calls :func:`recompute_report` and puts its rows in the report
(issue 28: every widget recomputes under 50 ms at its defaults and its extremes). The browser's
own figure (input event to output swapped, through the worker) is the bench's recompute latency;
this one is the Python side alone, per widget and per input, so a slow widget can be found.

Each case is run once to warm the caches (a reader's first change has loaded the widget's data
already: the worker warms every widget), then :data:`REPEATS` times, each after emptying the caches
that hold whole results keyed by the inputs (:func:`_result_caches`); the median of the CPU times
(``time.process_time``: steadier than wall time on a shared machine) is kept. Pyodide in a
browser takes 2-4 times CPython's time (2.3-2.8x under Node, about 1.3x more in Chromium), so a widget over about a
fifth of the goal here is worth a look. Run alone: ``python tools/widget_recompute.py [--json] [NAME ...]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

#: Timed runs per case after the warm-up run (the median is kept).
REPEATS = 3
#: The goal for one recompute (issue 28), milliseconds.
GOAL_MS = 50.0


def _result_caches() -> list:
    """Caches that hold a whole result keyed by the reader's inputs (the batching simulations and
    their traces): emptied before each timed run, since a reader's change asks for inputs not yet
    computed. Caches of data (catalog rows, a model's step model, tables) stay warm."""
    from descent import serving

    return [serving.run, serving._draw_trace]


def _time(run, name: str, inputs: dict) -> float:
    run(name, inputs)
    times = []
    for _ in range(REPEATS):
        for c in _result_caches():
            c.cache_clear()
        t = time.process_time()
        run(name, inputs)
        times.append(time.process_time() - t)
    return statistics.median(times) * 1000


def widget_recompute(name: str) -> dict[str, Any]:
    """``{widget, defaults_ms, worst_ms, worst_at, cases}`` for one widget: the median CPU time of
    ``descent.widgets.run`` at its defaults and with each input alone at each of its extremes."""
    import descent.widgets as w

    widget = w.get(name)
    rows = [("defaults", _time(w.run, name, {}))]
    for inp in widget.inputs:
        for x in inp.extremes():
            label = f"{inp.name}={x!r}"[:60]
            rows.append((label, _time(w.run, name, {inp.name: x})))
    worst = max(rows, key=lambda r: r[1])
    return {"widget": name, "defaults_ms": round(rows[0][1], 2), "worst_ms": round(worst[1], 2),
            "worst_at": worst[0], "cases": len(rows)}


def recompute_report(names: list[str] | None = None) -> dict[str, Any]:
    """Every widget's recompute in CPython (or those named): rows sorted slowest first, the worst
    figure, how many are over :data:`GOAL_MS`, and the goal. For the bench's report."""
    import descent.widgets as w

    rows = [widget_recompute(n) for n in (names or w.names())]
    rows.sort(key=lambda r: -r["worst_ms"])
    return {"goal_ms": GOAL_MS, "repeats": REPEATS, "worst_ms": rows[0]["worst_ms"] if rows else None,
            "over_goal": [r["widget"] for r in rows if r["worst_ms"] > GOAL_MS], "widgets": rows}


def markdown(report: dict[str, Any]) -> list[str]:
    """The report's lines for bench/report.md."""
    lines = ["", "## Recompute per widget (CPython CPU, median of "
             f"{report['repeats']} after a warm-up; the goal, {report['goal_ms']:g} ms, is the browser's)", "",
             "| widget | defaults ms | worst ms | worst at | cases |", "| --- | --- | --- | --- | --- |"]
    for r in report["widgets"]:
        lines.append(f"| {r['widget']} | {r['defaults_ms']:.1f} | {r['worst_ms']:.1f} | `{r['worst_at']}` | {r['cases']} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rep = recompute_report(args.names or None)
    print(json.dumps(rep, indent=1) if args.json else "\n".join(markdown(rep)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
