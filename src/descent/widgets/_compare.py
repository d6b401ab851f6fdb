"""A pinned set-up beside the current one (issue 26, Compare), for the sizing sandbox, the server
dials and the price of a token.

Each of those widgets has a text input named ``pinned``, filled by share.js's "Pin" button with the
widget's inputs as ``field:value`` pairs joined by ``;`` (the form of the page's address). When it
is not empty the widget's results begin with :func:`table`: each output of the pinned set-up beside
the current one, the ratio (now over pinned) and the better one where that is unambiguous
(:func:`descent.compare.compare`).

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from descent import params as P
from descent.checks import is_real
from descent.compare import Compared
from descent.units import format_int, format_number
from descent.widgets import views as v

__all__ = ["HELP", "LABEL", "MAX_CHARS", "PLACEHOLDER", "describe", "parse_pinned", "pinned_param", "table", "yes_no"]

LABEL = "Compare with (pinned set-up)"
HELP = ("Press Pin to hold the inputs above here; the results then set them beside the current ones. "
        "Empty: no comparison.")
#: The empty box's hint. The box shows only once it holds something (descent.css hides the field
#: while this hint shows, and without JavaScript, where nothing can be pinned): give it to the
#: widget's ``Input(..., "text", placeholder=PLACEHOLDER)``.
PLACEHOLDER = "Press Pin to fill this box"
#: The longest pinned set-up: a handful of field:value pairs.
MAX_CHARS = 400

#: What the "Better" column says for each side (:attr:`descent.compare.Compared.better`).
SIDE = {"before": "pinned", "after": "now"}


def pinned_param(key: str) -> P.Param:
    """The ``pinned`` text input of one widget (Param keys are global: ``key`` names the widget's)."""
    return P.declare(P.Param("pinned", LABEL, "text", "", key=key, max_length=MAX_CHARS, help=HELP))


def parse_pinned(text: str, params: Mapping[str, P.Param], label: str = LABEL) -> dict[str, Any]:
    """A pinned set-up as the widget's inputs, every one checked by its own parameter; the inputs it
    does not name take their defaults.

    Raises:
        ParamError: (field ``pinned``) a pair that is not ``field:value``, a field it may not hold,
            or a value its parameter refuses (that parameter's message).
    """
    values = {name: p.parse(p.default) for name, p in params.items()}
    for part in text.strip().split(";"):
        if not part.strip():
            continue
        name, colon, raw = part.partition(":")
        name = name.strip()
        if not colon or name not in params:
            raise P.ParamError("pinned", f"{label}: each part is field:value, the field one of "
                               f"{', '.join(params)}; got {part.strip()[:40]!r}")
        try:
            values[name] = params[name].parse(raw.strip())
        except P.ParamError as exc:
            raise P.ParamError("pinned", f"{label}: {exc.message}") from None
    return values


def table(rows: Sequence[Compared], cells: Callable[[Compared], tuple[str, str, str]], what: str) -> dict:
    """The comparison as a table view: Output, Pinned, Now, Ratio (now over pinned), Better.

    Args:
        cells: ``cells(row) -> (label with its unit, pinned value, current value)`` as text: units go
            in the label so that five columns fit a phone's width.
        what: the pinned set-up in words, for the caption.
    """
    out = []
    for c in rows:
        label, a, b = cells(c)
        ratio = "" if c.ratio is None else format_number(c.ratio, 3)
        better = SIDE.get(c.better, "same" if c.before == c.after else "")
        out.append([label, a, b, ratio, better])
    return v.table(["Output", "Pinned", "Now", "Ratio", "Better"], out,
                   caption=f"Pinned set-up ({what}) beside the current one; ratio: now over pinned",
                   numeric=[False, True, True, True, False])


def yes_no(x: Any) -> str:
    return "yes" if x else "no"


def describe(values: Mapping[str, Any], keys: Sequence[str]) -> str:
    """A set-up in words for a caption: ``"model llama-3.1-70b, tp 2, price 3"``."""
    def text(x: Any) -> str:
        if not is_real(x):
            return str(x)
        return format_int(x) if isinstance(x, int) else format_number(x, 3, trim=True)

    return ", ".join(f"{k} {text(values[k])}" for k in keys)
