"""Every quantity reaches the step model, the catalog or a recording through at most one view.

Issue 22's rule: a number on a page reaches its catalog row or recording in at most three hops
(the page's shortcode, a quantity, the step model or the catalog); a view's quantity (the split,
the price, the simulator, the sizing) may pass one view that renames the step model's fields.

The test traces each registered quantity at its defaults (``sys.setprofile``: every call into
``descent.step``, ``descent.catalog`` or ``descent.recorded`` from outside them) and lists the
*views* on the call stack between the quantity's frame and that call: descent modules that are
neither the quantity's, nor a target, nor the model layer below the step model (DESIGN.md's
layers: params, units, the scenario, transformer, weights, numerics ...). It fails on a second
view: before this test, memory.size and economics.input_output_ratio called
``hardware.decode_ceiling``, which called the step model (seven quantities went through two views).
"""

from __future__ import annotations

import sys

import pytest

from descent.quantities.registry import QUANTITIES

#: Modules of the model layer and below (DESIGN.md, "The layers"): not views.
BELOW = {"params", "checks", "units", "scenario", "transformer", "weights", "numerics", "floats",
         "gguf_types", "quant", "tokenizer", "sampling", "hfconfig", "custom", "published", "weights_sample"}
TARGETS = ("descent.step", "descent.catalog", "descent.recorded")
#: Inputs for a quantity whose defaults are refused (a dense default model for an MoE quantity; no
#: compute-bound batch at the default context).
FALLBACK = {"model": "deepseek-v3", "context": 512}


def _module(frame) -> str:
    return frame.f_globals.get("__name__", "")


def views_passed(q) -> list[str]:
    """The most views on any call path from quantity ``q`` (at its defaults) to a target."""
    worst: list[str] = []

    def profile(frame, event, _arg):
        if event != "call" or not _module(frame).startswith(TARGETS) or _module(frame.f_back).startswith(TARGETS):
            return
        views: list[str] = []
        f = frame.f_back
        while f is not None and not _module(f).startswith("descent.quantities"):
            m = _module(f)
            if m.startswith("descent.") and not m.startswith(TARGETS) and m.split(".")[1] not in BELOW \
                    and m not in views:
                views.append(m)
            f = f.f_back
        if len(views) > len(worst):
            worst[:] = views

    names = {p.name for p in q.params}
    sys.setprofile(profile)
    try:
        try:
            q()
        except ValueError:
            q(**{k: v for k, v in FALLBACK.items() if k in names})
    finally:
        sys.setprofile(None)
    return worst


TRACED = sorted(n for n, q in QUANTITIES.items() if not any(p.required for p in q.params))


def test_most_quantities_are_traced():
    # A quantity with a required parameter (no default) is not traced here; keep them few.
    assert len(TRACED) >= 0.9 * len(QUANTITIES), sorted(set(QUANTITIES) - set(TRACED))


@pytest.mark.parametrize("name", TRACED)
def test_a_quantity_passes_at_most_one_view(name):
    views = views_passed(QUANTITIES[name])
    assert len(views) <= 1, f"{name} reaches the step model or catalog through {len(views)} views: {views}"
