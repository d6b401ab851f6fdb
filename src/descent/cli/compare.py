"""``descent size|dials|cost ... --compare ...``: two set-ups side by side (issue 26, Compare).

The flags after ``--compare`` describe the second set-up; each one it does not give is the first
set-up's (``descent size llama-3.1-70b -a h200 --compare -a b200`` compares one model on two
chips; a model named after ``--compare`` replaces the first's). Each set-up is computed by the
command itself: its ``--json`` object is exactly what ``descent COMMAND ... --json`` prints. Then

* as text: one row per output with both values, the ratio (second over first) and the better one
  where "better" is unambiguous (:func:`descent.compare.compare`: faster, cheaper, fits);
* under ``--json``: ``{"first": {...}, "second": {...}, "ratio": {field: second / first},
  "better": {field: "first" | "second" | ""}}``.

Bad input in either set-up is reported like any other (one line, exit 2), naming the set-up.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
from collections.abc import Callable

from descent import dials, economics, memory
from descent import params as P
from descent.checks import is_real
from descent.cli.rows import print_rows
from descent.compare import SPARE_FIELDS, compare, spare_text
from descent.units import format_bytes, format_int, format_number, format_time

__all__ = ["COMPARE", "COMPARED", "FLAG", "INPUTS", "NEEDS_FIT", "add_flag", "compared_rows", "run", "split"]

FLAG = "--compare"

#: What each command compares: (field of its --json object, label, which is better).
COMPARED: dict[str, tuple[tuple[str, str, str], ...]] = {
    "size": (*memory.COMPARED, ("fits", "Fits on one chip", "higher")),
    "dials": dials.COMPARED,
    "cost": economics.COMPARED,
}

#: Each command's outputs that only a set-up which fits can reach (no "better" unless both fit).
NEEDS_FIT: dict[str, tuple[str, ...]] = {"size": memory.NEEDS_FIT, "dials": dials.NEEDS_FIT, "cost": economics.NEEDS_FIT}

#: The inputs each command's --json object repeats, printed above the comparison.
INPUTS = ("model", "accelerator", "weights", "kv", "context", "batch", "tp", "price", "pue", "link",
          "runtime_percent")

#: Flags that name the chip in place of -a (``descent size``): typing one side drops the other.
_CHIP = ("memory_gb", "bandwidth_gbs", "tflops")


#: The switch itself (its help; :func:`descent.cli.main` cuts the arguments at it before parsing).
COMPARE = P.declare(P.Param(
    "compare", "Compare", "bool", False, key="cli_compare",
    help="then the flags of a second set-up (any not given are the first's): both side by side, with the "
         "ratio and the better one",
))


def add_flag(p: argparse.ArgumentParser) -> None:
    """``--compare`` on a command's parser, for its help (:func:`run` does the work)."""
    P.add_argument(p, COMPARE)


def split(argv: list[str]) -> tuple[list[str], list[str]] | None:
    """``argv`` cut at ``--compare`` (before any ``--``): the first set-up's arguments and the
    flags after it, or None without ``--compare``."""
    head = argv[:argv.index("--")] if "--" in argv else argv
    if FLAG not in head:
        return None
    i = argv.index(FLAG)
    return argv[:i], argv[i + 1:]


def _second(sub: argparse.ArgumentParser, first: argparse.Namespace, after: list[str]) -> argparse.Namespace:
    """The second set-up's arguments: ``after`` parsed over the first's (a flag not given keeps the
    first's value)."""
    fresh = sub.parse_args(after, namespace=argparse.Namespace())
    ns = copy.copy(first)
    typed_after = set(getattr(fresh, "typed", ()))
    typed = set(getattr(first, "typed", ()))
    if "accelerator" in typed_after:
        typed -= set(_CHIP)
    if typed_after & set(_CHIP):
        typed.discard("accelerator")
    model_given = fresh.model != P.MODEL.default or P.MODEL.default in after
    if model_given and hasattr(ns, "config"):
        typed.discard(P.CONFIG_PATH.name)
        ns.config = None
    ns.typed = ()
    sub.parse_args(after, namespace=ns)
    ns.typed = tuple(typed | set(getattr(ns, "typed", ())))
    if not model_given:
        ns.model = first.model
    return ns


def _json_of(func: Callable[[argparse.Namespace], int], args: argparse.Namespace, which: str) -> dict:
    """The command's own --json object for ``args``; an error it reports names the set-up."""
    args = copy.copy(args)
    args.json = True
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            func(args)
    except ValueError as exc:
        raise ValueError(f"the {which} set-up: {exc}") from None
    return json.loads(buf.getvalue())


def _show(field: str, x) -> str:
    """One compared value as text, by what the field holds."""
    if x is None:
        return "none"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if field in SPARE_FIELDS:  # memory left: a negative one is a shortfall
        return spare_text(x, lambda n: format_bytes(n, "auto"))
    if field.endswith("bytes"):
        return format_bytes(x, "auto")
    if "tokens_per_s" in field:
        return f"{format_number(x, 4)} tokens/s"
    if field.startswith("usd"):
        return f"${format_number(x, 3)}"
    if field.startswith("joules"):
        return f"{format_number(x, 3)} J"
    if field.endswith("_s"):
        return format_time(x)
    return format_int(x) if isinstance(x, int) else format_number(x, 4)


def _input(x) -> str:
    if not is_real(x):
        return str(x)
    return format_int(x) if isinstance(x, int) else format_number(x, 4, trim=True)


def compared_rows(command: str, first: dict, second: dict) -> list[tuple[str, str, str, str, str]]:
    """``(label, first, second, ratio, better)`` text for each output the command compares."""
    side = {"before": "first", "after": "second"}
    out = []
    for c in compare(first, second, COMPARED[command], needs_fit=NEEDS_FIT[command]):
        ratio = "" if c.ratio is None else format_number(c.ratio, 3)
        out.append((c.label, _show(c.field, c.before), _show(c.field, c.after), ratio, side.get(c.better, "")))
    return out


def run(parser: argparse.ArgumentParser, head: list[str], after: list[str]) -> int:
    """``descent COMMAND ... --compare ...``: parse both set-ups, compute each with the command and
    print them side by side (the module docstring)."""
    sub_action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    first = parser.parse_args(head)
    if first.command not in COMPARED:
        raise ValueError(f"{FLAG} works with {', '.join(COMPARED)}, not with {first.command}")
    sub = sub_action.choices[first.command]
    if not after:
        raise ValueError(f"{FLAG} needs the flags of the second set-up after it (say {FLAG} -a b200)")
    second = _second(sub, first, after)
    a, b = _json_of(first.func, first, "first"), _json_of(first.func, second, "second")
    if first.json or second.json:
        rows = compare(a, b, COMPARED[first.command], needs_fit=NEEDS_FIT[first.command])
        print(json.dumps({"first": a, "second": b, "ratio": {c.field: c.ratio for c in rows},
                          "better": {c.field: {"before": "first", "after": "second"}.get(c.better, "")
                                     for c in rows}}, allow_nan=False))
        return 0
    given = [k for k in INPUTS if k in a]
    print_rows([("first", ", ".join(f"{k} {_input(a[k])}" for k in given)),
                ("second", ", ".join(f"{k} {_input(b[k])}" for k in given if b[k] != a[k]) or "the same inputs")])
    print()
    table = [("output", "first", "second", "ratio", "better"), *compared_rows(first.command, a, b)]
    widths = [max(len(r[i]) for r in table) for i in range(5)]
    for r in table:
        print("  ".join(x.ljust(w) if i in (0, 4) else x.rjust(w) for i, (x, w) in enumerate(zip(r, widths, strict=True))).rstrip())
    print("ratio: second over first")
    return 0
