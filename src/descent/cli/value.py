"""``descent value NAME [--PARAM VALUE ...] [--unit U] [--sig N] [--json]``: one quantity, printed
as a page prints it.

NAME is any quantity of :mod:`descent.quantities` (the name a page's ``descent:value`` shortcode
uses); the flags are the quantity's own parameters, with the same names, ranges and messages as the
shortcode's arguments, and ``--unit``/``--sig`` print it as ``unit=``/``sig=`` do. A flag that is not
typed takes the quantity's own default, so ``descent value kv_cache_bytes --unit KiB`` prints what
``<!-- descent:value kv_cache_bytes unit=KiB -->`` prints. Each page's "How each number on this page
is computed" section (:mod:`descent.site.explain`) gives this command for every quantity it shows.

Every quantity's parameters are flags of the one subcommand; a flag the chosen quantity does not
take is refused, naming the ones it takes.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from descent import params as P
from descent import quantities as Q

__all__ = ["QUANTITY", "VALUE_UNIT", "add_subcommands", "command_line", "value_of"]

QUANTITY = P.declare(P.Param(
    "quantity", "Quantity", "choice", P.REQUIRED, key="cli_quantity",
    choices=lambda: [(n, Q.QUANTITIES[n].label) for n in sorted(Q.QUANTITIES)],
    help="A quantity's name, as a page's descent:value shortcode names it (descent value --help lists them)",
))

#: ``--unit``: every unit any kind of quantity may be printed in; the chosen quantity's kind narrows it.
_UNITS = tuple(dict.fromkeys(
    v for params in Q.FORMAT_PARAMS.values() for p in params if p.name == "unit" for v in p.values()))
VALUE_UNIT = P.declare(P.Param(
    "unit", "Unit", "choice", "auto", key="value_unit", choices=[(u, u) for u in _UNITS],
    help="How to print it, as a shortcode's unit= (bytes: B .. PiB; counts: thousand .. exact; FLOP/s: TFLOP/s ..)",
))


def _flag_params() -> dict[str, P.Param]:
    """One Param per flag name: the first quantity's declaration of that name (each quantity's own
    default is applied when the flag is not typed)."""
    out: dict[str, P.Param] = {}
    for q in Q.QUANTITIES.values():
        for p in q.params:
            out.setdefault(p.name, p)
    return out


def add_subcommands(sub: argparse._SubParsersAction, typed: Any, no_default: Any) -> None:
    """Add ``value`` to the ``descent`` parser's subcommands. ``typed``/``no_default``: the CLI's
    helpers that record a typed flag and drop the sandbox default from its help."""
    p = sub.add_parser("value", help="one quantity of a page, printed as the page prints it")
    name = P.add_argument(p, QUANTITY, positional=True, metavar="NAME")
    name.choices = QUANTITY.values()  # checked by its type first, with the parameter's message
    for param in (*_flag_params().values(), VALUE_UNIT, P.SIG):
        no_default(typed(P.add_argument(p, param)))
    P.add_argument(p, P.JSON.but(help="print one JSON object"))
    p.set_defaults(func=_cmd_value)


def value_of(name: str, args: dict[str, Any]) -> tuple[Q.Quantity, Any, dict[str, Any]]:
    """The quantity ``name``, its value at ``args`` (its own parameters only; the rest default) and
    the inputs it used. Raises ValueError naming a parameter it does not take or a bad value."""
    q = Q.get(name)
    inputs = q.bind(args, parse=False)
    return q, q.func(**inputs), inputs


def _cmd_value(args: argparse.Namespace) -> int:
    q = Q.get(args.quantity)
    typed = set(getattr(args, "typed", ()))
    takes = {p.name for p in q.params}
    fmt = {p.name: p for p in Q.FORMAT_PARAMS[q.kind]}
    for dest in sorted(typed):
        if dest not in takes and dest not in fmt:
            flags = ", ".join(f"--{n.replace('_', '-')}" for n in (*takes, *fmt)) or "no flags"
            raise ValueError(f"{q.name} does not take --{dest.replace('_', '-')}; it takes {flags}")
    if "unit" in typed:
        fmt["unit"].check(args.unit)  # the kind's own units: "Byte unit must be one of ..."
    q, value, inputs = value_of(q.name, {n: getattr(args, n) for n in takes if n in typed})
    opts = {n: getattr(args, n) for n in fmt if n in typed}
    text = q.format(value, **opts)
    if args.json:
        print(json.dumps({"quantity": q.name, "label": q.label, "value": value, "unit": q.unit, "text": text,
                          "inputs": inputs}))
    else:
        print(text)
    return 0


def command_line(name: str, args: dict[str, str]) -> str:
    """The ``descent value`` command that prints quantity ``name`` with a shortcode's raw ``args``
    (:func:`descent.derivation.command_line`)."""
    from descent.derivation import command_line as line

    return line(name, args)
