"""Two set-ups side by side (issue 26, Compare): each output with both values, their ratio and
the better one where "better" is unambiguous (faster, cheaper, fits).

A view that offers a comparison lists what it compares as ``(field, label, better)`` triples, where
``better`` is ``"lower"`` (less memory, less time, fewer dollars), ``"higher"`` (more tokens/s, more
free memory, fits) or ``""`` (neither is better: a count the reader sets, a bound's name). The
sizing (:func:`descent.memory.compare`), the server dials (:func:`descent.dials.compare`) and the
price of a token (:func:`descent.economics.compare`) call :func:`compare` with their own lists; the
widgets and ``descent size|dials|cost --compare`` print its rows.

Core rule: standard library only (runs in Pyodide).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from descent.checks import is_real as _number

__all__ = ["BETTER", "SPARE_FIELDS", "Compared", "compare", "spare_text", "value_of"]

#: Which way an output is better: a lower value, a higher one, or neither.
BETTER = ("lower", "higher", "")

#: Outputs that are memory left over (the sizing's "Memory left free", the dials' "Spare memory per
#: accelerator"), in bytes: a negative value means the set-up does not fit and needs that much more.
#: A ratio of two of them means nothing once either is negative (a "-0.3" between a set-up that fits
#: and one that does not), so :func:`compare` gives none, and :func:`spare_text` prints the shortfall.
SPARE_FIELDS = ("free_bytes",)


def spare_text(x: float, fmt: Callable[[float], str], unit: str = "") -> str:
    """Memory left over as text: ``fmt(x)`` when ``x >= 0``; when it is negative, the plain
    "does not fit: needs ``fmt(-x)`` more" (``unit`` after the number, for a cell whose label carries
    the unit and whose numbers are bare)."""
    if x >= 0:
        return fmt(x)
    return f"does not fit: needs {fmt(-x)}{' ' + unit if unit else ''} more"


@dataclass(frozen=True)
class Compared:
    """One output of two set-ups side by side: both values, ``after / before`` (None when either is
    not a number, or ``before`` is 0) and which is better ("before", "after", or "" when they are
    equal or neither is better)."""

    field: str
    label: str
    before: Any
    after: Any
    ratio: float | None
    better: str

    def as_json(self) -> dict:
        """The row as ``--compare --json`` prints it."""
        return {"label": self.label, "first": self.before, "second": self.after, "ratio": self.ratio,
                "better": {"before": "first", "after": "second"}.get(self.better, "")}


def value_of(obj: Any, name: str) -> Any:
    """Field ``name`` of a record (a dataclass) or a mapping (a ``--json`` object)."""
    return obj[name] if isinstance(obj, Mapping) else getattr(obj, name)


def compare(before: Any, after: Any, fields: Sequence[tuple[str, str, str]], *,
            needs_fit: Collection[str] = ()) -> list[Compared]:
    """``before`` and ``after`` (records or mappings with the same fields) output by output. The ratio
    is ``after / before`` where both are numbers and ``before`` is not 0, except for memory left over
    (:data:`SPARE_FIELDS`) when either side is negative: None (print :func:`spare_text` instead).

    Args:
        fields: ``[(field, label, better)]``; ``better`` one of :data:`BETTER`. A bool field
            (``fits``) is better ``"higher"``: True beats False.
        needs_fit: fields (speeds, times, prices) that only a set-up which fits can reach: unless both
            set-ups' ``fits`` is True, neither is marked better on them (a faster ceiling that does
            not fit in memory is not a better set-up; ``fits`` itself says which one runs).

    Raises:
        ValueError: a ``better`` that is not one of :data:`BETTER`.
    """
    both_fit = not needs_fit or (value_of(before, "fits") is True and value_of(after, "fits") is True)
    out = []
    for name, label, good in fields:
        if good not in BETTER:
            raise ValueError(f"compare: better must be one of {', '.join(map(repr, BETTER))}, got {good!r}")
        a, b = value_of(before, name), value_of(after, name)
        ratio = b / a if _number(a) and _number(b) and a else None
        if name in SPARE_FIELDS and ratio is not None and (a < 0 or b < 0):
            ratio = None  # memory left: a negative side does not fit, and a ratio of the two means nothing
        if name in needs_fit and not both_fit:
            better = ""
        elif a == b or not good or not (_number(a) or isinstance(a, bool)) or not (_number(b) or isinstance(b, bool)):
            better = ""
        else:
            better = "after" if (b < a) == (good == "lower") else "before"
        out.append(Compared(name, label, a, b, ratio, better))
    return out
