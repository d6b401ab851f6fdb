"""Part 4's commands: ``descent roofline`` and ``descent parallel``.

    descent roofline [MODEL] -a ACC [--weights P] [--kv P] [--batch B] [--context N] [--phase decode|prefill] [--json]
    descent parallel [MODEL] -a ACC [--tp T] [--pp P] [--ep E] [--microbatches M] [--link L]
                     [--weights P] [--kv P] [--batch B] [--context N] [--json]

Every argument is a declared parameter (:mod:`descent.params`) and every JSON key a parameter or a
quantity (:mod:`descent.quantities`), plus ``bound`` ("memory" or "compute"), ``compute_precision``
and ``fits`` (yes/no answers, not numbers). Bad input exits 2 with one line, as the rest of the
command line does (:func:`descent.cli.main` handles it). :func:`add_subcommands` is called by
:func:`descent.cli.build_parser`.

Standard library and core modules only.
"""

from __future__ import annotations

import argparse
import json

from descent import parallel, roofline
from descent import params as P
from descent.catalog import accelerator, model
from descent.catalog import link as catalog_link
from descent.cli.rows import print_rows
from descent.units import format_bytes, format_number, format_percent, format_si, format_time, plural

__all__ = ["ROOFLINE_KEYS", "PARALLEL_KEYS", "add_subcommands"]

#: ``descent roofline --json`` keys: the step's inputs, then its numbers (quantity names).
ROOFLINE_KEYS = ("model", "accelerator", "weights", "kv", "context", "batch", "phase", "compute_precision",
                 "flops_per_step", "bytes_per_step", "intensity", "ridge_point", "bound", "seconds_per_step",
                 "peak_flops", "memory_bandwidth", "attained_flops", "compute_share")

#: ``descent parallel --json`` keys (``decode_tokens_per_s`` of the plan is the quantity
#: ``split_decode_tokens_per_s``).
PARALLEL_KEYS = ("model", "accelerator", "weights", "kv", "context", "batch", "tp", "pp", "ep", "microbatches",
                 "link", "devices", "weights_bytes_per_device", "kv_bytes_per_device", "fits",
                 "allreduce_bytes_per_layer", "allreduce_seconds_per_layer", "alltoall_bytes_per_layer",
                 "bubble_fraction", "split_decode_tokens_per_s")


def _cmd_roofline(args: argparse.Namespace) -> int:
    s = roofline.step(args.model, args.accelerator, args.weights, args.kv, args.context, args.batch, args.phase)
    if args.json:
        print(json.dumps({k: getattr(s, "ridge" if k == "ridge_point" else k) for k in ROOFLINE_KEYS}))
        return 0
    m, a = model(s.model), accelerator(s.accelerator)
    what = (f"{plural(s.batch, 'sequence')} x 1 new token, {plural(s.context, 'token')} of context"
            if s.phase == "decode" else f"{plural(s.batch, 'prompt')} of {plural(s.context, 'token')}")
    print_rows([
        ("step", f"{s.phase}: {m.name} on {a.name}, {what}"),
        ("FLOPs per step", format_si(s.flops_per_step, "FLOP", 4, trim=True)),
        ("bytes per step", format_bytes(s.bytes_per_step, "auto", 4, trim=True)
         + f" ({s.weights} weights, {s.kv} KV cache)"),
        ("intensity", f"{format_number(s.intensity, 4, trim=True)} FLOP/byte"),
        ("ridge", f"{format_number(s.ridge, 4, trim=True)} FLOP/byte = "
         f"{format_si(s.peak_flops, 'FLOP/s', 4, trim=True)} ({s.compute_precision} dense) / "
         f"{format_si(s.memory_bandwidth, 'B/s', 4, trim=True)}"),
        ("bound", f"{s.bound} (intensity {'below' if s.bound == 'memory' else 'at or above'} the ridge)"),
        ("time per step", f"{format_time(s.seconds_per_step, 4)} (arithmetic {format_time(s.compute_seconds, 3)}, "
         f"memory {format_time(s.memory_seconds, 3)}; a lower bound)"),
        ("share of peak", f"{format_percent(s.compute_share)} of the chip's arithmetic"),
    ])
    return 0


def _cmd_parallel(args: argparse.Namespace) -> int:
    p = parallel.plan(args.model, args.accelerator, args.weights, args.kv, args.context, args.batch,
                      args.tp, args.pp, args.ep, args.microbatches, args.link)
    values = {k: getattr(p, k) for k in PARALLEL_KEYS if k != "split_decode_tokens_per_s"}
    values["split_decode_tokens_per_s"] = p.decode_tokens_per_s
    if args.json:
        print(json.dumps(values))
        return 0
    m, a, wire = model(p.model), accelerator(p.accelerator), catalog_link(p.link)
    usable = "fits" if p.fits else "does NOT fit"
    print_rows([
        ("split", f"{m.name} on {plural(p.devices, 'device')} ({a.name}): tp {p.tp} x pp {p.pp} x ep {p.ep}"),
        ("weights per device", f"{format_bytes(p.weights_bytes_per_device, 'GB', 4, trim=True)} "
         f"of {format_bytes(p.weights_bytes, 'GB', 4, trim=True)} ({p.weights})"),
        ("KV cache per device", f"{format_bytes(p.kv_bytes_per_device, 'GB', 4, trim=True)} "
         f"({plural(p.batch, 'sequence')} x {plural(p.context, 'token')}, {p.kv})"),
        ("memory per device", f"{format_bytes(p.memory_bytes_per_device, 'GB', 4, trim=True)}: {usable}"),
        ("all-reduce per layer", f"{format_bytes(p.allreduce_bytes_per_layer, 'auto', 4, trim=True)} sent per device, "
         f"{format_time(p.allreduce_seconds_per_layer, 3)} over {wire.label} (bandwidth and latency)"),
        ("all-to-all per MoE layer", format_bytes(p.alltoall_bytes_per_layer, "auto", 4, trim=True)),
        ("pipeline bubble", f"{format_percent(p.bubble_fraction)} ({plural(p.pp, 'stage')}, "
         f"{plural(p.microbatches, 'micro-batch', 'micro-batches')} cycling through them; counted in the step)"),
        ("decode step", f"{format_time(p.decode_step_seconds, 4)}: "
         f"{format_number(p.decode_tokens_per_s, 4)} tokens/s over the batch (a ceiling)"),
    ])
    return 0


def add_subcommands(sub: argparse._SubParsersAction) -> None:
    """Add ``roofline`` and ``parallel`` to the ``descent`` parser's subcommands."""
    p = sub.add_parser("roofline", help="one decode or prefill step of a model on a chip's roofline")
    P.add_argument(p, P.MODEL, positional=True, metavar="MODEL")
    for param in (P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH, P.PHASE,
                  P.JSON.but(help="print one JSON object")):
        P.add_argument(p, param)
    p.set_defaults(func=_cmd_roofline)

    p = sub.add_parser("parallel", help="a model split over many chips: memory, communication, bubble")
    P.add_argument(p, P.MODEL, positional=True, metavar="MODEL")
    for param in (P.ACCELERATOR, P.TP, P.PP, P.EP, P.MICROBATCHES, P.LINK, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH,
                  P.JSON.but(help="print one JSON object")):
        P.add_argument(p, param)
    p.set_defaults(func=_cmd_parallel)
