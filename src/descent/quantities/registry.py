"""The registry of quantities: every number the site shows, as a core function of declared parameters.

A *quantity* is one number with a unit that a page prints, a widget shows and the command line
reports: the bytes of a model's weights, the KV cache per token, the decode ceiling. Each is a
:class:`Quantity`: a name, a kind of unit, the :mod:`descent.params` it takes, and the function
that computes it. From that one declaration:

* a page writes ``<!-- descent:value NAME param=value ... -->`` (the shortcode's arguments are the
  quantity's parameters plus how to print it: ``unit=`` for bytes and counts, ``sig=``);
* a widget labels its output with the quantity's name (``views.stat(..., quantity=NAME)``);
* ``descent size --json`` reports it under the same name.

Printing goes through :mod:`descent.units` (:meth:`Quantity.format`), the one formatter. The
quantities themselves live in the subject modules of :mod:`descent.quantities` (model, chip,
memory, step, attention, parallel, serving, economics, dials), which import this module; the
package's ``__init__`` imports them all, so ``descent.quantities.QUANTITIES`` is complete.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from descent import params as P
from descent.units import (
    format_bytes,
    format_count,
    format_int,
    format_number,
    format_percent,
    format_si,
    format_time,
)

__all__ = ["FORMAT_PARAMS", "KINDS", "QUANTITIES", "Quantity", "blame", "get", "quantity"]

#: Kinds of quantity, each with its unit and how it prints.
KINDS = {
    "bytes": "bytes",
    "params": "parameters",
    "integer": "",
    "tokens_per_s": "tokens/s",
    "fraction": "",
    "bytes_per_s": "bytes/s",
    "flop_per_s": "FLOP/s",
    "flop": "FLOP",
    "usd": "USD",
    "joules": "J",
    "flop_per_byte": "FLOP/byte",
    "seconds": "s",
    "ratio": "times",
    "number": "",
    "flop_count": "FLOP",
    "text": "",
}

#: How a FLOP/s quantity may be printed: with the SI prefix that fits, or in a fixed one.
FLOPS_PREFIXES = {"TFLOP/s": 1e12, "PFLOP/s": 1e15, "GFLOP/s": 1e9}
FLOPS_UNIT = P.declare(P.Param(
    "unit", "FLOP/s unit", "choice", "auto", key="flops_unit",
    choices=[("auto", "auto"), *((u, u) for u in FLOPS_PREFIXES)],
    help="auto (the SI prefix that fits) or a fixed one: " + ", ".join(FLOPS_PREFIXES),
))

#: The formatting parameters a page may add, by kind.
FORMAT_PARAMS: dict[str, tuple[P.Param, ...]] = {
    "bytes": (P.BYTE_UNIT, P.SIG),
    "params": (P.COUNT_UNIT, P.SIG),
    "integer": (),
    "tokens_per_s": (P.SIG,),
    "fraction": (P.SIG,),
    "bytes_per_s": (P.SIG,),
    "flop_per_s": (FLOPS_UNIT, P.SIG),
    "flop": (P.SIG,),
    "usd": (P.SIG,),
    "joules": (P.SIG,),
    "flop_per_byte": (P.SIG,),
    "seconds": (P.SIG,),
    "ratio": (P.SIG,),
    "number": (P.SIG,),
    "flop_count": (P.SIG,),
    "text": (),
}

@dataclass(frozen=True)
class Quantity:
    """One number the site shows: ``func(**params) -> value`` in the unit of ``kind``.

    Attributes:
        name: the shortcode name, the widget output's ``data-quantity``, the CLI JSON key.
        label: a short phrase for a reader ("Weights").
        kind: a key of :data:`KINDS` (bytes, params, integer, tokens_per_s, fraction, ...).
        params: the parameters ``func`` takes, in order.
        func: computes the value from validated parameters.
        doc: one sentence: what it is and its source.
    """

    name: str
    label: str
    kind: str
    params: tuple[P.Param, ...]
    func: Callable[..., Any]
    doc: str

    @property
    def unit(self) -> str:
        return KINDS[self.kind]

    def __call__(self, **values: Any) -> Any:
        """The value for these parameters (missing ones take their defaults).

        Raises:
            ParamError: an unknown, missing or invalid parameter (:meth:`Param.check`).
        """
        return self.func(**self.bind(values, parse=False))

    def bind(self, values: Mapping[str, Any], *, parse: bool) -> dict[str, Any]:
        """Validated keyword arguments for ``func``: ``parse`` for typed text, else ``check``."""
        known = {p.name: p for p in self.params}
        for key in values:
            if key not in known:
                raise P.ParamError(key, f"{self.name} takes {', '.join(known) or 'no parameters'}; got {key!r}")
        out = {}
        for p in self.params:
            if p.name in values:
                out[p.name] = p.parse(values[p.name]) if parse else p.check(values[p.name])
            elif p.required:
                raise P.ParamError(p.name, f"{self.name} needs {p.name} ({p.allowed()})")
            else:
                out[p.name] = p.default
        return out

    def format(self, x: Any, unit: str = "auto", sig: int = 3) -> str:
        """``x`` as running text with its unit, through :mod:`descent.units`."""
        k = self.kind
        if k == "bytes":
            return format_bytes(x, unit, sig, trim=True, words=True)
        if k == "params":
            return format_count(x, unit, sig)
        if k == "integer":
            return format_int(x)
        if k == "tokens_per_s":
            return f"{format_number(x, sig, trim=True)} tokens/s"
        if k == "fraction":
            return format_percent(x, sig)
        if k == "bytes_per_s":
            return format_si(x, "B/s", sig, trim=True)
        if k == "usd":
            return f"${format_number(x, sig, trim=False)}"
        if k == "joules":
            return format_si(x, "J", sig, trim=True)
        if k == "flop":
            return format_si(x, "FLOP", sig, trim=True)
        if k == "flop_per_byte":
            return f"{format_number(x, sig, trim=True)} FLOP/byte"
        if k == "seconds":
            return format_time(x, sig)
        if k == "ratio":
            return f"{format_number(x, sig, trim=True)} times"
        if k == "number":
            return format_number(x, sig, trim=True)
        if k == "flop_count":
            return f"{format_count(x, 'auto', sig)} FLOP"
        if k == "text":
            return str(x)
        if unit in FLOPS_PREFIXES:
            return f"{format_number(x / FLOPS_PREFIXES[unit], sig, trim=True)} {unit}"
        return format_si(x, "FLOP/s", sig, trim=True)

#: Every quantity, by name.
QUANTITIES: dict[str, Quantity] = {}

def quantity(name: str, label: str, kind: str, *params: P.Param) -> Callable[[Callable[..., Any]], Quantity]:
    """Decorator: register ``func`` as the quantity ``name`` taking ``params``.

    The docstring's first line is the quantity's description (shown on the contributing page).

    Raises:
        ValueError: an unknown kind, a name taken, or a parameter ``func`` does not take.
    """
    if kind not in KINDS:
        raise ValueError(f"quantity {name!r}: kind must be one of {', '.join(KINDS)}, got {kind!r}")

    def deco(func: Callable[..., Any]) -> Quantity:
        if name in QUANTITIES:
            raise ValueError(f"quantity {name!r} is declared twice")
        doc = (func.__doc__ or "").strip().split("\n")[0]
        q = Quantity(name, label, kind, tuple(params), func, doc)
        QUANTITIES[name] = q
        return q

    return deco

def get(name: str) -> Quantity:
    """The quantity ``name``. Raises ValueError listing the known names."""
    try:
        return QUANTITIES[name]
    except KeyError:
        raise ValueError(f"unknown quantity {name!r}; known: {', '.join(sorted(QUANTITIES))}") from None


def blame(field: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """Call ``fn``; a ValueError becomes a ParamError on ``field`` (the input a reader changes)."""
    try:
        return fn(*args, **kw)
    except P.ParamError:
        raise
    except ValueError as exc:
        raise P.ParamError(field, str(exc)) from None
