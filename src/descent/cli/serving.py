"""``descent simulate batching`` and ``descent speculative``: Part 3's arithmetic from the command line.

    descent simulate batching [--policy static|continuous] [--requests N] [--seed S] [--rate R]
        [--prompt-mean P] [--output-mean O] [--batch SLOTS] [--chunk C] [--model M] [-a ACC] [-w W]
        [--kv KV] [--ttft-target S] [--itl-target S] [--json]
    descent speculative --acceptance A --draft-length K --draft-cost C [--json]

``descent.cli.build_parser`` calls :func:`add_subcommands`. Every flag is a declared parameter
(:mod:`descent.params`); the JSON keys are parameter and quantity names (:mod:`descent.quantities`).
Core only: imports nothing from the build side.
"""

from __future__ import annotations

import argparse
import json

from descent import params as P
from descent import quantities as Q
from descent import serving
from descent.catalog import accelerator, model
from descent.units import format_int, format_number, format_percent, format_time

__all__ = ["add_subcommands"]

#: The simulation's metrics, printed and reported in this order (quantity names).
METRICS = (
    "throughput_tokens_per_s", "latency_p50_s", "latency_p99_s", "ttft_p50_s", "ttft_p99_s",
    "itl_p50_s", "itl_p99_s", "slot_utilization", "goodput_tokens_per_s",
)
_TRACE_PARAMS = (P.POLICY, P.REQUESTS, P.SEED, P.ARRIVAL_RATE, P.PROMPT_MEAN, P.OUTPUT_MEAN, Q.SLOTS, P.CHUNK)
_SERVER_PARAMS = (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV)
#: What ``descent simulate`` simulates (one thing so far).
SIMULATION = P.declare(P.Param("what", "Simulation", "choice", key="simulation", choices=[("batching", "batching")],
                               help="what to simulate: batching (a seeded trace, static or continuous)"))


def _cmd_batching(args: argparse.Namespace) -> int:
    names = [p.name for p in (*_SERVER_PARAMS, *_TRACE_PARAMS)]
    settings = {n: getattr(args, n) for n in names}
    sim = serving.run(**settings)
    m = serving.metrics(sim, args.ttft_target, args.itl_target)
    values = {name: getattr(m, name) for name in METRICS}
    if args.json:
        print(json.dumps({**settings, "ttft_target": args.ttft_target, "itl_target": args.itl_target, **values}))
        return 0
    mod, acc = model(args.model), accelerator(args.accelerator)
    print(f"{args.policy} batching of {format_int(args.requests)} requests (seed {args.seed}, "
          f"{format_number(args.rate, 3, trim=True)} requests/s, prompts ~{format_int(args.prompt_mean)} and "
          f"replies ~{format_int(args.output_mean)} tokens)")
    print(f"on {mod.name} ({args.weights} weights, {args.kv} KV cache) on one {acc.name}, "
          f"{format_int(args.batch)} slots, chunked prefill "
          + (f"{format_int(args.chunk)} tokens per step" if args.chunk else "off"))
    width = max(len(Q.get(n).label) for n in METRICS)
    for name in METRICS:
        q, x = Q.get(name), values[name]
        shown = format_time(x) if q.kind == "seconds" else format_percent(x) if q.kind == "fraction" \
            else f"{format_number(x, 4)} tokens/s"
        print(f"  {q.label:<{width}}  {shown}")
    print(f"  {format_int(sim.steps)} steps, {format_percent(sim.compute_bound_steps / sim.steps)} of them "
          f"compute-bound; goodput targets: TTFT {format_time(args.ttft_target)}, mean ITL {format_time(args.itl_target)}")
    return 0


def _cmd_speculative(args: argparse.Namespace) -> int:
    s = serving.speculative(args.acceptance, args.draft_length, args.draft_cost)
    if args.json:
        print(json.dumps({"acceptance": s.acceptance, "draft_length": s.draft_length, "draft_cost": s.draft_cost,
                          "expected_tokens": s.expected_tokens, "speedup": s.speedup}))
        return 0
    print(f"acceptance {format_number(s.acceptance, 3, trim=True)}, draft length {s.draft_length}, "
          f"draft cost {format_number(s.draft_cost, 3, trim=True)} of a target step")
    print(f"  tokens per target pass  {format_number(s.expected_tokens, 4)}  (at most {s.draft_length + 1})")
    verdict = "faster" if s.speedup > 1 else "slower" if s.speedup < 1 else "no change"
    print(f"  speedup                 {format_number(s.speedup, 4)}x  ({verdict} than plain decoding)")
    return 0


def add_subcommands(sub) -> None:
    """Add ``simulate`` (with ``batching``) and ``speculative`` to the ``descent`` subparsers ``sub``."""
    p = sub.add_parser("simulate", help="simulate serving: static vs continuous batching")
    P.add_argument(p, SIMULATION, positional=True, metavar="WHAT")
    for param in (*_TRACE_PARAMS, *_SERVER_PARAMS, P.TTFT_TARGET, P.ITL_TARGET,
                  P.JSON.but(help="print one JSON object")):
        P.add_argument(p, param)
    p.set_defaults(func=_cmd_batching)

    p = sub.add_parser("speculative", help="speculative decoding: tokens per target pass and speedup")
    for param in (P.ACCEPTANCE, P.DRAFT_LENGTH, P.DRAFT_COST, P.JSON.but(help="print one JSON object")):
        P.add_argument(p, param)
    p.set_defaults(func=_cmd_speculative)
