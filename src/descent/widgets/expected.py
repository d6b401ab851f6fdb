"""The expected range beside a calculator's ceiling (issue 25), one view for every widget that shows one.

A ceiling (bandwidth over bytes, peak over FLOPs) is what no engine passes. Beside it a widget shows
what published engines reached of ceilings like it: :func:`descent.predict.expected_range`, the
ceiling times the lowest, median and highest share that the public measurements of the same chip
class and bound reached, with how many measurements that is. The ceiling stays where it was; the
range is a second number under its own label, and where no measurement covers the class a note
says so instead.

Core rule: standard library and core ``descent`` modules only (runs in Pyodide). The shares come
from the committed record ``data/expected_shares.json`` (:func:`descent.predict.class_shares`), so a
recomputation costs a look-up, not the step model over every row.
"""

from __future__ import annotations

from collections.abc import Callable

from descent import predict
from descent.catalog import Accelerator
from descent.units import format_number, plural
from descent.widgets import views as v

__all__ = ["HREF", "expected_views"]

#: Where the measurements and the classes are explained, relative to a top-level page (views.note).
HREF = "reference/ceilings.html#what-to-expect-from-a-ceiling"


def _rate(x: float) -> str:
    return format_number(x, 3)


def expected_views(what: str, ceiling: float, accelerator: str | Accelerator, bound: str, *,
                   inverse: bool = False, fmt: Callable[[float], str] = _rate, unit: str = "tokens/s") -> list[dict]:
    """One stat "WHAT, expected (from N public measurements)" giving the range beside ``ceiling`` on
    ``accelerator`` with a ``bound`` step, its median in the note; or, when no measurement covers the
    chip's class at that bound, one note saying so.

    Args:
        ceiling: a speed (tokens/s), or with ``inverse`` a figure that grows as the speed falls (a
            time in seconds, a price per token): the ceiling divides by the shares instead.
        fmt, unit: how a value of the range is written, and its unit (``""`` for a time).

    Raises:
        ValueError: ``bound`` is not memory or compute (:func:`descent.predict.expected_range`).
    """
    e = predict.expected_range(ceiling, accelerator, bound, time=inverse)
    if e is None:
        cls = predict.chip_class_of(accelerator)
        whose = "a chip described by its numbers" if cls is None else f"{cls} chips at a {bound}-bound step"
        return [v.note(f"{what}: no public measurement covers {whose} yet, so only the ceiling is shown.",
                       "info", link="How close are the ceilings?", href=HREF)]
    median = f"{fmt(e.median)} {unit}".strip()
    return [v.stat(f"{what}, expected (from {plural(e.measurements, 'public measurement')})",
                   f"{fmt(e.low)} to {fmt(e.high)}", unit, cls="is-expected",
                   note=f"median {median}: this ceiling scaled by the shares of their ceilings that published "
                        f"engines reached on {e.chip_class} chips whose step was {e.bound}-bound. A share above "
                        f"100% counts as 100%, so the range stops at the ceiling")]
