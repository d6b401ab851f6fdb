"""The ``descent`` command line.

    descent size [MODEL] [--accelerator ACC] [--weights PRECISION] [--kv PRECISION] [--context N] [--batch B] [--json]
    descent models [--json]
    descent accelerators [--json]

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
import json
import sys
from typing import NoReturn

from descent import params as P
from descent import serving_cli, transformer
from descent.catalog import accelerators, models
from descent.memory import RUNTIME_ALLOWANCE, size
from descent.trace import cli as trace_cli  # `trace` and `generate`: NumPy is imported only when they run
from descent.units import (
    GB,
    GiB,
    format_bytes,
    format_count,
    format_int,
    format_number,
    format_percent,
    format_rate,
    format_si,
    plural,
)

__all__ = ["EXIT_USAGE", "UsageError", "build_parser", "main"]

#: Exit status for bad input, as argparse uses.
EXIT_USAGE = 2

PROG = "descent"


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (no usage block) and exit 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: error: {message}")


def _bytes_both(n: float) -> str:
    return f"{format_bytes(n, 'GB')} = {format_bytes(n, 'GiB')}"


def _cmd_size(args: argparse.Namespace) -> int:
    s = size(args.model, args.accelerator, args.weights, args.kv, args.context, args.batch)
    if args.json:
        print(json.dumps(dataclasses.asdict(s)))
        return 0
    m, a = models()[s.model], accelerators()[s.accelerator]
    rows = [
        ("model", f"{m.name} ({s.model})"),
        ("accelerator", f"{a.name} ({s.accelerator}), {a.memory_marketed} {a.memory_type}"),
        (
            "parameters",
            f"{format_count(s.params_total, 'short')} total, {format_count(s.params_active, 'short')} active per token",
        ),
        ("weights", f"{_bytes_both(s.weights_bytes)}  ({s.weights}, all parameters)"),
        (
            "KV cache",
            f"{_bytes_both(s.kv_cache_bytes)}  ({s.kv}, {plural(s.context, 'token')} x {plural(s.batch, 'sequence')}; "
            f"{format_bytes(s.kv_bytes_per_token, 'auto-binary')} per token)",
        ),
        (
            "runtime",
            f"{_bytes_both(s.runtime_bytes)}  ({format_percent(RUNTIME_ALLOWANCE, decimals=0)} of capacity: "
            "activations, context, fragmentation)",
        ),
        ("total", _bytes_both(s.total_bytes)),
        ("capacity", _bytes_both(s.capacity_bytes)),
        ("free" if s.free_bytes >= 0 else "over by", _bytes_both(abs(s.free_bytes))),
        ("fits", "yes" if s.fits else f"no: needs {format_int(s.accelerators_needed)} of these (memory only)"),
        ("decode step reads", f"{_bytes_both(s.bytes_per_decode_step)} at {format_rate(s.memory_bandwidth)}"),
        (
            "decode ceiling",
            f"{format_number(s.decode_tokens_per_s, 4)} tokens/s per sequence, "
            f"{format_number(s.decode_tokens_per_s_total, 4)} tokens/s total"
            + ("" if s.fits else " (if it fit on one chip)"),
        ),
    ]
    if s.beyond_max_context:
        rows.append(("warning", f"context {format_int(s.context)} exceeds the model's {format_int(m.max_context)}"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
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
    print(f"{'id':<15} {'memory GB':>10} {'memory GiB':>10} {'bandwidth':>11} {'BF16 dense':>12}  name")
    for a in accs.values():
        print(
            f"{a.id:<15} {format_number(a.memory_bytes / GB, 4):>10} {format_number(a.memory_bytes / GiB, 4):>10} "
            f"{format_rate(a.memory_bandwidth):>11} {format_si(a.bf16_flops, 'FLOP/s'):>12}  {a.name}"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``descent`` parser with its subcommands; ``args.func(args)`` runs the chosen one."""
    parser = _Parser(prog=PROG, description="How an LLM answers you: the inference arithmetic.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("size", help="memory fit and decode ceiling of a model on one accelerator")
    P.add_argument(p, P.MODEL, positional=True, metavar="MODEL")
    for param in (P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH, P.JSON.but(help="print one JSON object")):
        P.add_argument(p, param)
    p.set_defaults(func=_cmd_size)

    p = sub.add_parser("models", help="list the catalog's models")
    P.add_argument(p, P.JSON.but(help="print a JSON list"))
    p.set_defaults(func=_cmd_models)

    p = sub.add_parser("accelerators", help="list the catalog's accelerators")
    P.add_argument(p, P.JSON.but(help="print a JSON list"))
    p.set_defaults(func=_cmd_accelerators)

    trace_cli.add_subcommands(sub)
    serving_cli.add_subcommands(sub)
    return parser


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input, 1 unexpected failure)."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except UsageError as e:
        print(_one_line(e), file=sys.stderr)
        return EXIT_USAGE
    except ValueError as e:  # bad ids, precisions, ranges; CatalogError is a ValueError too
        print(f"{PROG}: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except FileNotFoundError as e:  # the SmolLM2 GGUF is missing, or $DESCENT_GGUF names no file
        print(f"{PROG}: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except ModuleNotFoundError as e:  # `trace`/`generate` with only the core installed (no NumPy, gguf)
        print(f"{PROG}: error: this command needs the build extra (pip install 'descent[build]'); "
              f"missing module {e.name!r}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as e:  # --help and --version exit 0 through argparse
        return e.code if isinstance(e.code, int) else 0
    except BrokenPipeError:  # `descent models | head`
        return 0
    except Exception as e:  # never a traceback
        print(f"{PROG}: internal error: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
