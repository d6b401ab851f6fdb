"""The ``descent`` command line.

    descent size [MODEL | --config PATH] [--accelerator ACC | --memory-gb G --bandwidth-gbs B [--tflops T]]
                 [--weights PRECISION] [--kv PRECISION] [--context N] [--batch B] [--json] [--compare FLAG ...]
    descent dials [MODEL] [-a ACC] [--tp N] ... [--json] [--compare FLAG ...]
    descent cost [MODEL] [-a ACC] [--batch B] ... [--json] [--compare FLAG ...]
    descent models [--json]
    descent accelerators [--json]
    descent float FORMAT VALUE [--json]
    descent quant FORMAT [--json]
    descent value NAME [--PARAM VALUE ...] [--unit U] [--sig N] [--json]

Bad input (an unknown id, a context out of range, a malformed option) prints ONE line on stderr
that names what is allowed, and exits with status 2; no traceback is ever printed.

Every argument and flag is a declared parameter (:mod:`descent.params`, through
:func:`descent.params.add_argument`): the same name, range, default and message as the site's
widgets and shortcodes. The defaults are the site's running example (Llama 3.1 70B on one H200).

Extending: :func:`build_parser` returns the parser; each subcommand sets ``func`` (a callable
taking the parsed ``argparse.Namespace`` and returning an exit status). Other modules add their
subcommands through ``add_subcommands(subparsers)``; ``descent.trace.cli`` is picked up when present.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import importlib.metadata
import json
import math
import os
import stat
import sys
from typing import NoReturn

from descent import custom, floats, gguf_types, hfconfig, predict, transformer
from descent import params as P
from descent.catalog import Accelerator, Model, accelerators, models
from descent.cli import compare as compare_cli
from descent.cli import hardware as hardware_cli
from descent.cli import serving as serving_cli
from descent.cli import value as value_cli
from descent.cli.rows import print_rows
from descent.compare import spare_text
from descent.memory import JSON_NAMES, Sizing, size
from descent.trace import cli as trace_cli  # `trace` and `generate`: NumPy is imported only when they run
from descent.units import (
    GB,
    GiB,
    format_bytes,
    format_count,
    format_int,
    format_number,
    format_rate,
    format_si,
    format_time,
    plural,
    visible_controls,
)
from descent.weights import GROUP_LABELS, RELEASED, describe, released_map

__all__ = ["EXIT_USAGE", "MAX_CONFIG_BYTES", "UsageError", "build_parser", "main", "read_config_file", "size_inputs"]

#: Exit status for bad input, as argparse uses.
EXIT_USAGE = 2

PROG = "descent"


#: ``descent size`` sizes the checkpoint as published unless told otherwise.
SIZE_WEIGHTS = P.WEIGHTS.but(default="released")


def _version() -> str:
    """The installed package's version (pyproject.toml), or the source tree's when not installed."""
    try:
        return importlib.metadata.version("descent")
    except importlib.metadata.PackageNotFoundError:  # running from a source tree without installing
        return "0+source"


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (no usage block) and exit 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: error: {message}")

    def _get_values(self, action: argparse.Action, arg_strings: list[str]):
        """A flag's value ``--`` given as ``--flag=--`` is that text, checked like any other value.

        Python 3.11's argparse drops the first ``--`` of a flag's values as the end-of-flags
        marker, even when it is the value given after ``=``: ``--accelerator=--`` then hands the
        command an empty list ("unhashable type: 'list'", or "got []"). Only a single-value flag
        with nothing but ``--`` is affected; every other case is argparse's own.
        """
        if action.option_strings and action.nargs in (None, argparse.OPTIONAL) and arg_strings == ["--"]:
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)


def _token_rate(per_s: float) -> str:
    """A decode rate in tokens/s, or under one token a second the time one token takes
    ("one token every 8.000 h"): never "3.472e-05 tokens/s" for an absurd model or chip."""
    if per_s == 0 or per_s >= 1:
        return f"{format_number(per_s, 4)} tokens/s"
    return f"one token every {format_time(1 / per_s, 4)}"


def _bytes_both(n: float) -> str:
    """Bytes in a decimal and a binary unit, each chosen for the size: ``"151 GB = 141 GiB"``,
    ``"1.72 PB = 1.53 PiB"`` (never "1,720,000 GB")."""
    return f"{format_bytes(n, 'auto')} = {format_bytes(n, 'auto-binary')}"


def _typed(action: argparse.Action) -> argparse.Action:
    """Let the command know this flag was typed (its default cannot tell): ``args.typed`` lists it."""

    class Typed(type(action)):
        def __call__(self, parser, namespace, values, option_string=None):
            super().__call__(parser, namespace, values, option_string)
            namespace.typed = (*getattr(namespace, "typed", ()), self.dest)

    action.__class__ = Typed
    return action


def _no_default(action: argparse.Action) -> argparse.Action:
    """Drop "; default ..." from a flag's help: its declared default is the sandbox's, not the command's."""
    action.help = action.help.rsplit("; default", 1)[0]
    return action


#: The flags that describe a chip by its numbers instead of ``-a`` (descent.custom).
CHIP_FLAGS = (P.MEMORY_GB, P.BANDWIDTH_GBS, P.TFLOPS)


#: The most bytes ``--config`` reads: :data:`descent.hfconfig.MAX_CONFIG_CHARS` characters of UTF-8
#: take at most 4 bytes each. One byte more is read, to tell a file over the limit.
MAX_CONFIG_BYTES = 4 * hfconfig.MAX_CONFIG_CHARS


def read_config_file(path: str) -> str:
    """The text of the config.json at ``path``, read safely: an empty path, a directory, a device
    (``/dev/zero``), a FIFO or a socket is refused before it is opened (a FIFO would wait for a
    writer for ever, ``/dev/zero`` never ends), and at most :data:`MAX_CONFIG_BYTES` + 1 bytes are
    read, so a 500 MB file is refused after 200 KB, not read whole.

    Raises:
        ValueError: one line naming the path and what is wrong with it.
    """
    if not path:
        raise ValueError("--config needs the path of a config.json file, got an empty path")
    where = f"--config {path}"
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise ValueError(f"{where}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    if not stat.S_ISREG(mode):
        kind = ("a directory" if stat.S_ISDIR(mode) else "a pipe (FIFO)" if stat.S_ISFIFO(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "not a regular file")
        raise ValueError(f"{where}: cannot read it: it is {kind}, not a config.json file")
    try:
        # O_NONBLOCK: should the path have become a FIFO since the check, opening it does not wait.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ValueError(f"{where}: cannot read it: it is not a regular file, not a config.json file")
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"{where}: cannot read it: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ValueError(f"{where}: the file is larger than {format_int(MAX_CONFIG_BYTES)} bytes; a config.json "
                         f"must be at most {format_int(hfconfig.MAX_CONFIG_CHARS)} characters")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where}: cannot read it: it is not UTF-8 text ({exc.reason} at byte "
                         f"{format_int(exc.start)})") from None


def size_inputs(args: argparse.Namespace) -> tuple[str | Model, str | Accelerator]:
    """The model and chip ``descent size`` was asked about: a catalog id, or a record read from
    ``--config PATH`` (:func:`descent.hfconfig.read_config`) and built from ``--memory-gb``,
    ``--bandwidth-gbs`` and ``--tflops`` (:func:`descent.custom.accelerator`).

    Raises:
        ValueError: the file cannot be read or is not a config.json this reads; a model id with
            --config; -a with the chip flags; one of --memory-gb / --bandwidth-gbs without the other.
    """
    model: str | Model = args.model
    typed = set(getattr(args, "typed", ()))
    if args.config or P.CONFIG_PATH.name in typed:
        if args.model != P.MODEL.default:
            raise ValueError(f"give a model id or --config, not both (got {args.model!r} and --config {args.config})")
        model = hfconfig.read_config(read_config_file(args.config), source=args.config)
    chip = [p for p in CHIP_FLAGS if p.name in typed]
    if not chip:
        return model, args.accelerator
    if "accelerator" in typed:
        raise ValueError("give -a/--accelerator or --memory-gb and --bandwidth-gbs, not both")
    missing = [p for p in CHIP_FLAGS[:2] if p.name not in typed]
    if missing:
        flag = "--" + missing[0].name.replace("_", "-")
        raise ValueError(f"--memory-gb and --bandwidth-gbs describe a chip together: add {flag}")
    tflops = args.tflops if P.TFLOPS.name in typed else None
    return model, custom.accelerator(args.memory_gb, args.bandwidth_gbs, tflops)


#: ``descent size --json`` keys that differ from the sizing's field names: the quantity each is
#: (the decode step's FLOPs and bytes are the roofline's ``flops_per_step`` and ``bytes_per_step``
#: at ``phase=decode``: one number, one name).
SIZE_JSON_NAMES = JSON_NAMES


def size_json(s: Sizing) -> dict:
    """A sizing as ``descent size --json`` names it: its fields, under their quantity names, and
    ``decode_tokens_per_s_expected``: the expected range beside the decode ceiling
    (:func:`descent.predict.expected_range`: ``low``, ``median``, ``high``, ``measurements``), or null
    when no public measurement covers the chip's class."""
    out = {SIZE_JSON_NAMES.get(k, k): v for k, v in dataclasses.asdict(s).items()}
    expected = predict.expected_range(s.decode_tokens_per_s, s.accelerator, s.bound)
    out["decode_tokens_per_s_expected"] = expected.as_json() if expected else None
    return out


def expected_line(e, what: str, accelerator, *, time: bool = False) -> str:
    """The expected range beside a ceiling (descent.predict.expected_range) as one line of text, or why
    there is none."""
    if e is None:
        cls = predict.chip_class_of(accelerator)
        return ("no public measurement covers a chip described by its numbers" if cls is None else
                f"no public measurement covers {cls} chips at this bound yet")
    if time:
        span = f"{format_time(e.low)} to {format_time(e.high)} (median {format_time(e.median)})"
    else:
        span = (f"{format_number(e.low, 3)} to {format_number(e.high, 3)} tokens/s {what} "
                f"(median {format_number(e.median, 3)})").replace("  ", " ")
    return (f"{span}, from {plural(e.measurements, 'public measurement')} on {e.chip_class} chips "
            f"whose ceiling was {e.bound}-bound (descent reference: How close are the ceilings?)")


def _cmd_size(args: argparse.Namespace) -> int:
    model, accelerator = size_inputs(args)
    s = size(model, accelerator, args.weights, args.kv, args.context, args.batch, args.runtime_percent)
    no_peak = s.peak_flops == math.inf  # a chip described without --tflops: no compute ceiling
    expected = predict.expected_range(s.decode_tokens_per_s, accelerator, s.bound)
    if args.json:  # strict JSON: the no-peak chip's infinite peak and compute ceiling are null
        print(json.dumps({k: None if v == math.inf else v for k, v in size_json(s).items()}, allow_nan=False))
        return 0
    m = model if isinstance(model, Model) else models()[s.model]
    a = accelerator if isinstance(accelerator, Accelerator) else accelerators()[s.accelerator]
    rows = [
        ("model", f"{m.name} ({s.model})"),
        ("accelerator", f"{a.name} ({s.accelerator}), {a.memory_type} sold as \"{a.memory_marketed}\" "
                        f"= {_bytes_both(a.memory_bytes)}"),
        (
            "parameters",
            f"{format_count(s.params_total, 'short')} total, {format_count(s.params_active, 'short')} active per token",
        ),
        ("weights", f"{_bytes_both(s.weights_bytes)}  ({describe(m, s.weights)}, all parameters)"),
        *[(f"  {GROUP_LABELS[g]}", _bytes_both(b)) for g, b in s.weights_bytes_by_group.items() if b],
        *([("note", released_map(m).note)] if s.weights == RELEASED and released_map(m).from_dtype else []),
        (
            "KV cache",
            f"{_bytes_both(s.kv_cache_bytes)}  ({s.kv}, {plural(s.context, 'token')} x {plural(s.batch, 'sequence')}; "
            f"{format_bytes(s.kv_bytes_per_token, 'auto-binary')} per token)",
        ),
        ("needed", f"{_bytes_both(s.need_bytes)}  (weights + KV cache, the same on every chip)"),
        ("capacity", _bytes_both(s.capacity_bytes)),
        (
            "runtime",
            f"{_bytes_both(s.runtime_bytes)}  kept back ({format_number(s.runtime_percent, 3, trim=True)}% of capacity, "
            "--runtime-percent: context, activations, workspace, fragmentation)",
        ),
        ("usable", _bytes_both(s.usable_bytes)),
        ("free" if s.free_bytes >= 0 else "over by", _bytes_both(abs(s.free_bytes))),
        ("fits", "yes" if s.fits else f"no: needs {format_int(s.accelerators_needed)} of these (memory only)"),
        ("decode step reads", f"{_bytes_both(s.bytes_per_decode_step)} at {format_rate(s.memory_bandwidth)}"),
        ("decode step computes", f"{format_si(s.flops_per_decode_step, 'FLOP')} at "
                                 + ("no known peak (--tflops not given)" if no_peak else
                                    f"{format_si(s.peak_flops, 'FLOP/s')} ({s.compute_precision} dense peak)")),
        (
            "decode ceiling",
            f"{_token_rate(s.decode_tokens_per_s)} per sequence, "
            f"{_token_rate(s.decode_tokens_per_s_total)} total, {s.bound}-bound"
            + ("" if s.fits else " (if it fit on one chip)"),
        ),
        ("expected", expected_line(expected, "per sequence", accelerator)),
        ("compute-bound from", "not known: no peak given" if no_peak else "no batch (the KV cache reads dominate)"
         if s.compute_bound_batch is None else plural(s.compute_bound_batch, "sequence")),
    ]
    if s.beyond_max_context:
        rows.append(("warning", f"context {format_int(s.context)} exceeds the model's {format_int(m.max_context)}"))
    print_rows(rows)
    return 0


def _cmd_cost(args: argparse.Namespace) -> int:
    from descent import economics

    c = economics.token_cost(args.model, args.accelerator, args.weights, args.kv, args.context, args.batch,
                             args.price, args.pue)
    biggest = economics.max_batch(args.model, args.accelerator, args.weights, args.kv, args.context)
    out = {
        "model": args.model, "accelerator": args.accelerator, "weights": args.weights, "kv": args.kv,
        "context": args.context, "batch": args.batch, "price": args.price, "pue": args.pue,
        "tokens_per_s_total": c.tokens_per_s_total, "usd_per_million_tokens": c.usd_per_million_tokens,
        "joules_per_token": c.joules_per_token, "max_batch": biggest, "fits": c.fits, "bound": c.bound,
    }
    expected = predict.expected_range(c.tokens_per_s_total, args.accelerator, c.bound)
    out["tokens_per_s_total_expected"] = expected.as_json() if expected else None
    # The same key as descent size's and dials': the range beside one sequence's decode ceiling.
    per_sequence = predict.expected_range(c.tokens_per_s_total / args.batch, args.accelerator, c.bound)
    out["decode_tokens_per_s_expected"] = per_sequence.as_json() if per_sequence else None
    if args.json:
        print(json.dumps(out))
        return 0
    rows = [
        ("output tokens", f"{format_number(c.tokens_per_s_total, 4)} tokens/s in total ({c.bound}-bound), the ceiling"),
        ("expected", expected_line(expected, "in total", args.accelerator)),
        ("price", f"${format_number(c.usd_per_million_tokens, 3)} per million tokens at "
                  f"${format_number(args.price, 3, trim=True)} per accelerator-hour"),
        ("energy", f"{format_number(c.joules_per_token, 3)} J per token (board power x PUE "
                   f"{format_number(args.pue, 3, trim=True)})"),
        ("largest batch", plural(biggest, "sequence") + " fit beside the weights"),
        ("fits", "yes" if c.fits else "no (the figures are what the speed would give if it did)"),
    ]
    print_rows(rows)
    return 0


def _cmd_dials(args: argparse.Namespace) -> int:
    from descent import dials

    d = dials.server_dials(args.model, args.accelerator, args.weights, args.kv, args.context, args.batch,
                           args.tp, args.price, args.link)
    out = {
        "model": args.model, "accelerator": args.accelerator, "weights": args.weights, "kv": args.kv,
        "context": args.context, "batch": args.batch, "tp": args.tp, "price": args.price, "link": args.link,
        "ttft_s": d.ttft_s, "tokens_per_s_per_user": d.tokens_per_s_per_user,
        "tokens_per_s_total": d.tokens_per_s_total, "usd_per_million_tokens": d.usd_per_million_tokens,
        "free_bytes": d.free_bytes, "fits": d.fits, "bound": d.bound,
    }
    per_user = predict.expected_range(d.tokens_per_s_per_user, args.accelerator, d.bound)
    total = predict.expected_range(d.tokens_per_s_total, args.accelerator, d.bound)
    ttft = predict.expected_range(d.ttft_s, args.accelerator, d.prefill_bound, time=True)
    for key, e in (("ttft_s", ttft), ("tokens_per_s_per_user", per_user), ("tokens_per_s_total", total)):
        out[f"{key}_expected"] = e.as_json() if e else None
    # The same key as descent size's and cost's: the range beside one sequence's decode ceiling.
    out["decode_tokens_per_s_expected"] = out["tokens_per_s_per_user_expected"]
    if args.json:
        print(json.dumps(out))
        return 0
    rows = [
        ("first token", f"{format_time(d.ttft_s)} for a prompt of {plural(args.context, 'token')} (the ceiling's time)"),
        ("  expected", expected_line(ttft, "", args.accelerator, time=True)),
        ("per user", f"{format_number(d.tokens_per_s_per_user, 4)} tokens/s ({d.bound}-bound, "
                     f"{format_time(d.comm_s)} of each step in all-reduces), the ceiling"),
        ("  expected", expected_line(per_user, "per user", args.accelerator)),
        ("whole server", f"{format_number(d.tokens_per_s_total, 4)} tokens/s for {plural(args.batch, 'conversation')}, "
                         "the ceiling"),
        ("  expected", expected_line(total, "in total", args.accelerator)),
        ("price", f"${format_number(d.usd_per_million_tokens, 3)} per million tokens at "
                  f"{format_int(args.tp)} x ${format_number(args.price, 3, trim=True)} per accelerator-hour"),
        ("spare memory", f"{spare_text(d.free_bytes, format_bytes)} per accelerator"
                         + ("" if d.fits else " (the speeds are what it would do if it did)")),
    ]
    print_rows(rows)
    return 0


def _cmd_models(args: argparse.Namespace) -> int:
    out = []
    for m in models().values():
        pc = transformer.param_counts(m)
        out.append(
            {
                "id": m.id,
                "name": m.name,
                "params_total": pc.total,
                "params_active": pc.active,
                "moe": m.moe is not None,
                "max_context": m.max_context,
                "kv_elements_per_token": transformer.kv_elements_per_token(m),
                "hf_repo": m.hf_repo,
            }
        )
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{'id':<18} {'total':>8} {'active':>8} {'context':>9}  name")
    for r in out:
        print(
            f"{r['id']:<18} {format_count(r['params_total'], 'short'):>8} {format_count(r['params_active'], 'short'):>8} "
            f"{format_int(r['max_context']):>9}  {r['name']}"
        )
    return 0


def _cmd_accelerators(args: argparse.Namespace) -> int:
    accs = accelerators()
    if args.json:
        print(
            json.dumps([{f.name: getattr(a, f.name) for f in dataclasses.fields(a)} for a in accs.values()])
        )
        return 0
    print(f"{'id':<17} {'memory GB':>10} {'memory GiB':>10} {'bandwidth':>11} {'BF16 dense':>12}  name")
    for a in accs.values():
        caveat = f" (peak: {a.peak_16bit_caveat})" if a.peak_16bit_caveat else ""
        print(
            f"{a.id:<17} {format_number(a.memory_bytes / GB, 4):>10} {format_number(a.memory_bytes / GiB, 4):>10} "
            f"{format_rate(a.memory_bandwidth):>11} {format_si(a.bf16_flops, 'FLOP/s'):>12}  {a.name}{caveat}"
        )
    return 0


def _cmd_float(args: argparse.Namespace) -> int:
    """``descent float FORMAT VALUE``: the code, the nearest representable value and the error."""
    f = floats.get(args.format)
    kind, x = floats.parse_value(f, args.value)
    if kind == "code":
        code, value, error, overflow = int(x), f.decode(int(x)), 0.0, False
    else:
        r = f.round(float(x))
        code, value, error, overflow = r.code, r.value, r.error, r.overflow
    finite = value == value and abs(value) != float("inf")
    out = {
        "format": f.name,
        "bits": f.bit_string(code),
        "nearest": value if finite else None,
        "error": error if finite else None,
        "kind": f.kind(code),
        "overflow": overflow,
    }
    if args.json:
        print(json.dumps(out))
        return 0
    rows = [
        ("format", f"{f.label} ({f.bits} bits: {'1 sign, ' if f.signed else ''}{f.exponent_bits} exponent, "
                   f"{f.mantissa_bits} mantissa)"),
        ("bits", f.bit_string(code, " ") + f"  (0x{hex(code)[2:].upper()})"),
        ("nearest", floats.value_text(value) + f"  ({out['kind']})"),
        ("error", "overflow: beyond the largest finite value" if overflow else
         (floats.value_text(error) if finite else "none")),
    ]
    print_rows(rows)
    return 0


def _cmd_quant(args: argparse.Namespace) -> int:
    """``descent quant FORMAT``: block size, bits per weight (scales included) and layout."""
    info = gguf_types.decode_name(args.format)
    b = info.block
    out = {
        "format": info.name,
        "block_size": b.block_size,
        "bits_per_weight": b.bits_per_weight,
        "layout": b.layout(),
        "block_type": b.name,
        "block_bytes": b.block_bytes,
        "published_file_bits_per_weight": info.published_bpw,
    }
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{info.name}: {b.name} blocks of {format_int(b.block_size)} weights, {format_int(b.block_bytes)} bytes "
          f"= {format_number(b.bits_per_weight, 5, trim=True)} bits per weight ({b.formula})")
    for fld in b.fields:
        print(f"  {fld.name:<9} {format_int(fld.count):>5} x {fld.bits:>2} bits  {fld.meaning}")
    if info.published_bpw is not None:
        print(f"file average published for Llama-3.1-8B: {format_number(info.published_bpw, 5, trim=True)} "
              f"bits per weight ({gguf_types.MIX_SOURCE})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``descent`` parser with its subcommands; ``args.func(args)`` runs the chosen one."""
    parser = _Parser(prog=PROG, description="How an LLM answers you: the inference arithmetic.")
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("size", help="memory fit and decode ceiling of a model on one accelerator")
    P.add_argument(p, P.MODEL, positional=True, metavar="MODEL")
    for param in (P.ACCELERATOR, SIZE_WEIGHTS, P.KV, P.CONTEXT, P.BATCH, P.RUNTIME,
                  P.JSON.but(help="print one JSON object")):
        P.add_argument(p, param)
    # A model from its config.json, a chip from its numbers: absent unless typed (no "default" in --help).
    _no_default(_typed(P.add_argument(p, P.CONFIG_PATH, metavar="PATH")))  # typed: `--config ""` is refused
    _typed(p._option_string_actions["--accelerator"])
    for param, metavar in zip(CHIP_FLAGS, ("G", "B", "T"), strict=True):
        _no_default(_typed(P.add_argument(p, param, metavar=metavar)))
    p._option_string_actions["--tflops"].help += "; without it, no compute ceiling"
    compare_cli.add_flag(p)
    p.set_defaults(func=_cmd_size)

    p = sub.add_parser("cost", help="dollars and joules per output token of a model on one accelerator")
    P.add_argument(p, P.MODEL, positional=True, metavar="MODEL")
    for param in (P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH, P.PRICE, P.PUE,
                  P.JSON.but(help="print one JSON object")):
        P.add_argument(p, param)
    compare_cli.add_flag(p)
    p.set_defaults(func=_cmd_cost)

    p = sub.add_parser("dials", help="a model on N accelerators with tensor parallelism: first token, speed, cost")
    P.add_argument(p, P.MODEL, positional=True, metavar="MODEL")
    for param in (P.ACCELERATOR.but(default="h100-sxm"), P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH, P.TP.but(default=8),
                  P.PRICE, P.LINK, P.JSON.but(help="print one JSON object")):
        P.add_argument(p, param)
    compare_cli.add_flag(p)
    p.set_defaults(func=_cmd_dials)

    p = sub.add_parser("models", help="list the catalog's models")
    P.add_argument(p, P.JSON.but(help="print a JSON list"))
    p.set_defaults(func=_cmd_models)

    p = sub.add_parser("accelerators", help="list the catalog's accelerators")
    P.add_argument(p, P.JSON.but(help="print a JSON list"))
    p.set_defaults(func=_cmd_accelerators)

    p = sub.add_parser("float", help="a number in a floating-point format: bits, nearest value, error")
    P.add_argument(p, floats.FLOAT_FORMAT.but(help="the format"), positional=True, metavar="FORMAT")
    P.add_argument(p, floats.FLOAT_VALUE, positional=True, metavar="VALUE")
    P.add_argument(p, P.JSON.but(help="print one JSON object"))
    p.set_defaults(func=_cmd_float)

    p = sub.add_parser("quant", help="a GGUF or MX quantization type: block size, bits per weight, layout")
    P.add_argument(p, gguf_types.QUANT_FORMAT, positional=True, metavar="FORMAT")
    P.add_argument(p, P.JSON.but(help="print one JSON object"))
    p.set_defaults(func=_cmd_quant)

    trace_cli.add_subcommands(sub)
    hardware_cli.add_subcommands(sub)  # roofline, parallel (Part 4)
    serving_cli.add_subcommands(sub)
    value_cli.add_subcommands(sub, _typed, _no_default)  # one quantity, as a page prints it
    return parser


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace, extras: list[str]) -> str:
    """One line naming each unknown flag, with the closest real flag of that command."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    known = list(sub.choices[args.command]._option_string_actions) if args.command in sub.choices else []
    parts = []
    for tok in extras:
        flag = tok.split("=", 1)[0]
        close = difflib.get_close_matches(flag, known, n=1, cutoff=0.6) if flag.startswith("-") else []
        parts.append(f"{tok!r}" + (f" (did you mean {close[0]}?)" if close else ""))
    return f"{PROG} {args.command}: error: unrecognized arguments: {', '.join(parts)}"


def _check_flags(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """Name an unknown flag before argparse blames the next argument for it: ``descent size
    --acelerator h200`` would otherwise read h200 as the model. Abbreviations argparse accepts
    (``--acc``) pass; negative numbers are values, not flags."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = next((t for t in argv if t in sub.choices), None)
    if command is None:
        return
    known = list(sub.choices[command]._option_string_actions)
    for tok in argv[argv.index(command) + 1:]:
        if tok == "--":
            return
        flag = tok.split("=", 1)[0]
        if not flag.startswith("-") or flag == "-" or flag.lstrip("-").replace(".", "", 1).isdigit():
            continue
        if flag not in known and not (flag.startswith("--") and any(k.startswith(flag) for k in known)):
            close = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]}?)" if close else f"; it takes {', '.join(k for k in known if k.startswith('--'))}"
            raise UsageError(f"{PROG} {command}: error: unknown flag {flag!r}{hint}")


def _fail(message: str, as_json: bool) -> int:
    """Report bad input as one line on stderr, or as ``{"error": message}`` on stdout under --json."""
    return _report(message, as_json, EXIT_USAGE)


def _report(message: str, as_json: bool, status: int) -> int:
    """Print an error as one line on stderr, or as one JSON object on stdout under --json; the
    control characters it may quote from the input (ESC, BEL, bidirectional controls) are shown as
    ``<U+001B>``, never sent to the terminal."""
    message = visible_controls(_one_line(message))
    if as_json:
        print(json.dumps({"error": message, "exit_status": status}))
    else:
        print(message, file=sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input, 1 unexpected failure).

    Bad input is one line on stderr, or, when ``--json`` is among the arguments, one JSON object
    ``{"error": ..., "exit_status": 2}`` on stdout, so a script reading JSON always gets JSON.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    flags = argv[:argv.index("--")] if "--" in argv else argv
    as_json = any(len(t) >= 3 and "--json".startswith(t) for t in flags)  # --json, or an abbreviation (--js)
    try:
        parser = build_parser()
        _check_flags(parser, argv)
        both = compare_cli.split(argv)
        if both is not None:
            return compare_cli.run(parser, *both)
        args, extras = parser.parse_known_args(argv)
        if extras:
            raise UsageError(_unrecognized(parser, args, extras))
        return int(args.func(args) or 0)
    except UsageError as e:
        return _fail(_one_line(e), as_json)
    except ValueError as e:  # bad ids, precisions, ranges; CatalogError is a ValueError too
        return _fail(f"{PROG}: error: {_one_line(e)}", as_json)
    except FileNotFoundError as e:  # the SmolLM2 GGUF is missing, or $DESCENT_GGUF names no file
        return _fail(f"{PROG}: error: {_one_line(e)}", as_json)
    except ModuleNotFoundError as e:  # `trace`/`generate` with only the core installed (no NumPy, gguf)
        return _fail(f"{PROG}: error: this command needs the build extra (pip install 'descent[build]'); "
                     f"missing module {e.name!r}", as_json)
    except SystemExit as e:  # --help and --version exit 0 through argparse
        return e.code if isinstance(e.code, int) else 0
    except BrokenPipeError:  # `descent models | head`
        return 0
    except Exception as e:  # never a traceback; JSON under --json, like every other error
        return _report(f"{PROG}: internal error: {type(e).__name__}: {e}", as_json, 1)

