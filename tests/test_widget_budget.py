"""Every widget recomputes within its budget at its inputs' extremes (issue 24).

A widget's recomputation runs in the reader's browser, in one worker that every widget on the page
shares: a slow one blocks the others. Budget: :data:`BUDGET_S` of CPU in CPython for one call of
``widgets.run`` (the browser is slower, several times), or it refuses up front with a field error.
The inputs tried: the defaults; each input alone at its extremes (a range's min and max, a choice's
first and last option); all inputs at their minimums, all at their maximums; and, for a widget of
at most :data:`PAIRWISE_INPUTS` inputs, every pair of extremes. The assertion has a generous margin
for the shared 2-core machine (:data:`LIMIT_S`); the slowest calls are printed (``pytest -s``).
"""

from __future__ import annotations

import itertools
import time

import pytest

import descent.widgets as w

#: The budget a widget's recomputation is designed for, seconds of CPU in CPython.
BUDGET_S = 0.3
#: What the test asserts: the budget with a margin for a loaded machine.
LIMIT_S = 1.0
#: Widgets with at most this many inputs are also tried at every pair of extremes.
PAIRWISE_INPUTS = 4

pytestmark = pytest.mark.slow


def cases(widget: w.Widget) -> list[dict]:
    """Input sets to time: defaults, each input at each end, all at min, all at max, and pairs."""
    ends = {i.name: i.extremes() for i in widget.inputs if i.when is None}
    out: list[dict] = [{}]
    out += [{n: x} for n, xs in ends.items() for x in xs]
    out += [{n: xs[0] for n, xs in ends.items()}, {n: xs[-1] for n, xs in ends.items()}]
    if len(ends) <= PAIRWISE_INPUTS:
        for (a, xa), (b, xb) in itertools.combinations(ends.items(), 2):
            out += [{a: p, b: q} for p in xa for q in xb]
    return out


def timed(name: str, inputs: dict) -> tuple[float, dict]:
    t = time.process_time()
    res = w.run(name, inputs)
    return time.process_time() - t, res


@pytest.mark.parametrize("name", w.names())
def test_widget_recomputes_within_budget_at_its_extremes(name):
    widget = w.get(name)
    timings = []
    for inputs in cases(widget):
        dt, res = timed(name, inputs)
        assert not res.get("internal"), (name, inputs, res)
        timings.append((dt, inputs, res["ok"]))
    timings.sort(key=lambda x: -x[0])
    slowest = timings[0]
    print(f"\n{name}: {len(timings)} calls, slowest {slowest[0] * 1000:.0f} ms at {slowest[1]!r:.200} "
          f"({'ok' if slowest[2] else 'refused'})")
    over = [(round(dt, 3), i) for dt, i, _ in timings if dt > LIMIT_S]
    assert not over, f"{name}: over {LIMIT_S} s of CPU: {over[:5]}"
