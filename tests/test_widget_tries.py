"""Every "Try this" hint that names an input change (``tries``' third element) works from the
widget's defaults: applied as the reader would, it gives a result, not an error (issue 24: Part 4's
"Double the tile size" once answered "Tile step must be 0 to 3")."""

from __future__ import annotations

from descent.widgets import get, names, run

#: Widget modules whose hints must all name their inputs where they are an input change.
COVERED = ("part4", "part5", "part5_cost", "part5_dials", "part5_replay")


def test_every_hint_with_inputs_works_from_the_defaults(capsys):
    applied, without = 0, []
    for name in names():
        w = get(name)
        for (what, _), inputs in zip(w.tries, w.try_inputs, strict=True):
            if inputs is None:
                without.append(f"{name}: {what}")
                continue
            res = run(name, {k: str(v) if not isinstance(v, bool) else v for k, v in inputs.items()},
                      next(iter(inputs)))
            assert res["ok"] and "html" in res, (name, what, res)
            applied += 1
    with capsys.disabled():
        print(f"\n{applied} hints applied from the defaults; {len(without)} hints name no inputs")
    assert applied >= 28


def test_part4_and_part5_widgets_give_their_hints_inputs():
    for name in names():
        w = get(name)
        if w.compute.__module__.rsplit(".", 1)[-1] in COVERED:
            assert any(d is not None for d in w.try_inputs), f"{name}: no hint names its inputs"
