"""Value and table shortcodes for Part 3 ("Serving software").

Imported at the bottom of :mod:`descent.site.values`. The arithmetic is :mod:`descent.serving`'s
(core); the measurements on the real model are :mod:`descent.trace.measure`'s (token-level results
computed at build and cached by the GGUF's SHA-256; timings read from the build machine's record). The single numbers that are quantities (``prefill_s``, ``itl_s``,
``throughput_tokens_per_s``, ``speedup``, ...) need no entry here.

* ``<!-- descent:value step_fact field=... -->``: one prefill and one decode step of a model on a chip.
* ``<!-- descent:value measured field=... -->``, ``<!-- descent:table measured_speeds -->``,
  ``<!-- descent:table measured_batches -->``, ``<!-- descent:table constrained_steps -->``: SmolLM2
  on the build machine.
* ``<!-- descent:table simulator_loop -->``, ``<!-- descent:table simulator_decode_run -->``: the
  simulator's step loop and the helper it calls for runs of decode-only steps, as in the source.
* ``<!-- descent:table batching_compare -->``, ``<!-- descent:value trace_fact field=... -->``,
  ``<!-- descent:value batching_exception field=... -->``: the batching simulator.
* ``<!-- descent:value prefix_fact field=... -->``, ``<!-- descent:value multi_turn_fact field=... -->``.
* ``<!-- descent:value alloc_fact field=... -->``, ``<!-- descent:value shared_blocks_fact field=... -->``.
* ``<!-- descent:table kv_transfer_table -->``, ``<!-- descent:value kv_transfer_fact field=... -->``.
* ``<!-- descent:table engines -->``: what each engine's own documentation says it does.
"""

from __future__ import annotations

import inspect
import re
from functools import cache

from descent import params as P
from descent import quantities as Q
from descent import serving
from descent.site.shortcodes import table, value
from descent.site.values import fmt_bytes, fmt_num, md_link_source, md_table, md_text
from descent.units import (
    format_count,
    format_int,
    format_number,
    format_percent,
    format_time,
    visible_whitespace,
)

__all__ = [
    "alloc_fact",
    "batching_compare",
    "batching_exception",
    "constrained_steps",
    "engines",
    "kv_transfer_fact",
    "kv_transfer_table",
    "measured",
    "measured_batches",
    "measured_speeds",
    "multi_turn_fact",
    "prefix_fact",
    "shared_blocks_fact",
    "simulator_decode_run",
    "simulator_loop",
    "step_fact",
    "trace_fact",
]

_SERVER = (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV)


def _field(key: str, label: str, names, help_: str) -> P.Param:
    return P.declare(P.Param("field", label, "choice", key=key, choices=[(n, n) for n in names], help=help_))


# ---------------------------------------------------------------------------------------------
# One prefill, one decode step
# ---------------------------------------------------------------------------------------------

STEP_FIELD = _field("step_field", "Step fact", (
    "prefill_tokens_per_s", "decode_tokens_per_s", "speed_ratio", "prefill_bound", "decode_bound",
    "prefill_flops", "prefill_compute_s", "prefill_memory_s", "decode_bytes", "decode_compute_s",
    "compute_precision", "peak_flops", "kv_capacity", "kv_tokens", "prompt", "context", "batch"),
    "one number about a prefill of prompt_tokens and a decode step of batch sequences at context")


@value("step_fact", *_SERVER, P.PROMPT_TOKENS, P.CONTEXT, P.BATCH, STEP_FIELD)
def step_fact(model: str, accelerator: str, weights: str, kv: str, prompt_tokens: int, context: int,
              batch: int, field: str) -> str:
    """A prefill and a decode step of one model on one chip (descent.serving's step model)."""
    s = serving.server(model, accelerator, weights, kv)
    pre = serving.prefill(s, prompt_tokens)
    dec = serving.decode_step(s, batch, context)
    return {
        "prefill_tokens_per_s": lambda: f"{fmt_num(prompt_tokens / pre.seconds)} tokens/s",
        "decode_tokens_per_s": lambda: f"{fmt_num(batch / dec.seconds)} tokens/s",
        "speed_ratio": lambda: fmt_num(prompt_tokens / pre.seconds / (batch / dec.seconds), 2),
        "prefill_bound": lambda: pre.bound,
        "decode_bound": lambda: dec.bound,
        "prefill_flops": lambda: format_count(pre.flops) + " FLOP",
        "prefill_compute_s": lambda: format_time(pre.compute_seconds),
        "prefill_memory_s": lambda: format_time(pre.memory_seconds),
        "decode_bytes": lambda: fmt_bytes(dec.bytes, "GB"),
        "decode_compute_s": lambda: format_time(dec.compute_seconds),
        "compute_precision": lambda: s.precision.upper(),
        "peak_flops": lambda: format_number(s.peak / 1e12, 4, trim=True) + " TFLOP/s",
        "kv_capacity": lambda: fmt_bytes(s.kv_capacity, "GB"),
        "kv_tokens": lambda: format_int(int(s.kv_capacity // s.kv_bytes(1))),
        "prompt": lambda: format_int(prompt_tokens),
        "context": lambda: format_int(context),
        "batch": lambda: format_int(batch),
    }[field]()


# ---------------------------------------------------------------------------------------------
# Measured on the build machine
# ---------------------------------------------------------------------------------------------


@cache
def _measured() -> dict:
    from descent.trace.measure import measurements

    return measurements()


def measured_label() -> str:
    """Where and when the SmolLM2 measurements were taken, as one phrase."""
    d = _measured()
    mc = d["machine"]
    load = f", load average {format_number(mc['load_average'], 2, trim=True)}" if mc.get("load_average") is not None else ""
    return (f"measured on {mc['cpu']} ({plural_cores(mc['cores'])}{load}), NumPy {mc['numpy']} on one BLAS thread, "
            f"{d['date']}, median of {format_int(d['repeats'])} runs")


def plural_cores(n: int) -> str:
    return f"{format_int(n)} core" + ("" if n == 1 else "s")


def _batch(b: int) -> dict:
    for row in _measured()["batched"]:
        if row["batch"] == b:
            return row
    raise ValueError(f"no measurement at batch {b}")


MEASURED_FIELD = _field("serving_measured_field", "Measured fact", (
    "label", "date", "prefill_tokens", "prefill_tokens_per_s", "decode_tokens_per_s", "speed_ratio",
    "batch_context", "batch1_tokens_per_s", "batch16_tokens_per_s", "batch_gain", "batch_step_growth",
    "batch2_vs_1", "batch_note", "batch_max", "constrained_prompt", "constrained_text", "constrained_free_text", "constrained_steps",
    "first_allowed", "first_mass", "first_free_top", "first_free_top_p", "first_token", "first_token_p",
    "first_renormalized", "min_mass", "spec_tokens", "spec_passes", "spec_drafted",
    "spec_accepted", "spec_acceptance", "spec_tokens_per_pass", "spec_equal", "spec_seconds_greedy",
    "spec_seconds", "spec_wall_speedup", "spec_text"),
    "one measured number or text from SmolLM2 on the build machine")


def _text(t: str) -> str:
    return "“" + visible_whitespace(t) + "”" if t.strip() != t or "\n" in t else "“" + t + "”"


def _code(t: str) -> str:
    """Model output for running text: inline code (double backticks, so the text may hold one), newlines
    shown as ↵ (a shortcode value is one line)."""
    return "`` " + t.replace("\n", "↵") + " ``"


@value("serving_measured", MEASURED_FIELD)
def measured(field: str) -> str:
    """SmolLM2-135M measured when the site was built (descent.trace.measure): speeds, constrained and speculative decoding."""
    d = _measured()
    c, s = d["constrained"], d["speculative"]
    first = c["steps"][0]
    b1, b16 = _batch(1), _measured()["batched"][-1]
    return {
        "label": measured_label,
        "date": lambda: d["date"],
        "prefill_tokens": lambda: format_int(d["prefill"]["tokens"]),
        "prefill_tokens_per_s": lambda: f"{fmt_num(d['prefill']['tokens_per_s'])} tokens/s",
        "decode_tokens_per_s": lambda: f"{fmt_num(d['decode']['tokens_per_s'])} tokens/s",
        "speed_ratio": lambda: fmt_num(d["prefill"]["tokens_per_s"] / d["decode"]["tokens_per_s"], 2),
        "batch_context": lambda: format_int(d["batch_context"]),
        "batch1_tokens_per_s": lambda: f"{fmt_num(b1['tokens_per_s'])} tokens/s",
        "batch16_tokens_per_s": lambda: f"{fmt_num(b16['tokens_per_s'])} tokens/s",
        "batch_gain": lambda: fmt_num(b16["tokens_per_s"] / b1["tokens_per_s"], 2),
        "batch_step_growth": lambda: fmt_num(b16["seconds_per_step"] / b1["seconds_per_step"], 2),
        "batch2_vs_1": lambda: fmt_num(_batch(2)["seconds_per_step"] / b1["seconds_per_step"], 2),
        "batch_note": lambda: _batch_note(b1, _batch(2), b16),
        "batch_max": lambda: format_int(b16["batch"]),
        "constrained_prompt": lambda: "“" + c["prompt"] + "”",
        "constrained_text": lambda: _code(c["text"]),
        "constrained_free_text": lambda: _code(c["free_text"]),
        "constrained_steps": lambda: format_int(len(c["steps"])),
        "first_allowed": lambda: format_int(first["allowed"]),
        "first_mass": lambda: format_percent(first["allowed_mass"]),
        "first_free_top": lambda: _text(first["free_top"]["text"]),
        "first_free_top_p": lambda: format_percent(first["free_top"]["probability"]),
        "first_token": lambda: _text(first["token"]["text"]),
        "first_token_p": lambda: format_percent(first["probability"]),
        "first_renormalized": lambda: format_percent(first["renormalized"]),
        "min_mass": lambda: format_percent(min(st["allowed_mass"] for st in c["steps"])),
        "spec_tokens": lambda: format_int(s["tokens"]),
        "spec_passes": lambda: format_int(s["passes"]),
        "spec_drafted": lambda: format_int(s["drafted"]),
        "spec_accepted": lambda: format_int(s["accepted"]),
        "spec_acceptance": lambda: format_percent(s["acceptance"]),
        "spec_tokens_per_pass": lambda: fmt_num(s["tokens_per_pass"]),
        "spec_equal": lambda: "identical" if s["equals_greedy"] else "different",
        "spec_seconds_greedy": lambda: format_time(s["seconds_greedy"]),
        "spec_seconds": lambda: format_time(s["seconds_speculative"]),
        "spec_wall_speedup": lambda: fmt_num(s["seconds_greedy"] / s["seconds_speculative"], 2),
        "spec_text": lambda: _code(s["text"]),
    }[field]()


#: Above this ratio of batch 2's step time to batch 1's, the page explains the jump (see _batch_note).
BATCH2_JUMP = 1.5


def _batch_note(b1: dict, b2: dict, b16: dict) -> str:
    """A sentence on what the measured step times show, chosen by the numbers themselves."""
    jump = b2["seconds_per_step"] / b1["seconds_per_step"]
    tail = b16["seconds_per_step"] / b2["seconds_per_step"]
    if jump > BATCH2_JUMP:
        return (f"On this machine batch 1 is the odd one out: NumPy multiplies a single row by a weight matrix with "
                f"a routine that streams the matrix once, but two or more rows with a general one that first copies "
                f"the matrix into its own layout, so a step at batch 2 takes {fmt_num(jump, 2)}× as long as at "
                f"batch 1. From batch 2 to {format_int(b16['batch'])}, {fmt_num(b16['batch'] / b2['batch'])} times the "
                f"sequences cost {fmt_num(tail, 2)}× the time.")
    return (f"A step at batch {format_int(b16['batch'])} takes "
            f"{fmt_num(b16['seconds_per_step'] / b1['seconds_per_step'], 2)}× as long as at batch 1 for "
            f"{fmt_num(b16['batch'] / b1['batch'])} times the tokens.")


@table("measured_speeds")
def measured_speeds() -> str:
    """SmolLM2 on the build machine: a prompt read in one pass against one token per pass."""
    d = _measured()
    pre, dec = d["prefill"], d["decode"]
    return md_table(
        ["phase", "tokens per pass", "time per pass", "tokens/s"],
        [["prefill (the prompt in one pass)", format_int(pre["tokens"]), format_time(pre["seconds"]),
          fmt_num(pre["tokens_per_s"])],
         [f"decode (one token, {format_int(dec['context'])} cached)", "1", format_time(dec["seconds_per_token"]),
          fmt_num(dec["tokens_per_s"])]],
        "lrrr",
    )


@table("measured_batches")
def measured_batches() -> str:
    """SmolLM2 decode on the build machine at batch 1 to 16: time per step and tokens/s."""
    rows = _measured()["batched"]
    b1 = rows[0]
    return md_table(
        ["batch", "time per step", "tokens/s", "tokens/s vs batch 1"],
        [[format_int(r["batch"]), format_time(r["seconds_per_step"]), fmt_num(r["tokens_per_s"]),
          fmt_num(r["tokens_per_s"] / b1["tokens_per_s"], 2) + "×"] for r in rows],
        "rrrr",
    )


def _cell_token(t: str) -> str:
    return "`" + visible_whitespace(t).replace("`", "'") + "`"


@table("constrained_steps")
def constrained_steps() -> str:
    """Each step of SmolLM2's constrained reply: tokens allowed, probability on them, and the choice before and after masking."""
    rows = []
    for i, st in enumerate(_measured()["constrained"]["steps"], 1):
        rows.append([
            format_int(i), format_int(st["allowed"]), format_percent(st["masked_share"], 5),
            format_percent(st["allowed_mass"]),
            f"{_cell_token(st['free_top']['text'])} {format_percent(st['free_top']['probability'])}",
            f"{_cell_token(st['token']['text'])} {format_percent(st['probability'])} → "
            f"{format_percent(st['renormalized'])}",
        ])
    return md_table(["step", "tokens allowed", "masked", "probability on allowed", "model's favourite",
                     "chosen: before → after renormalizing"], rows, "rrrrll")


# ---------------------------------------------------------------------------------------------
# The batching simulator
# ---------------------------------------------------------------------------------------------

_LOOP_START = "    while queue or running:"
_LOOP_END = "    by_id = "


@table("simulator_loop")
def simulator_loop() -> str:
    """The step loop of descent.serving.simulate, as it is in the source (a fenced code block)."""
    src = inspect.getsource(serving.simulate)
    body = src[src.index(_LOOP_START):src.index(_LOOP_END)].rstrip()
    lines = [line[4:] if line.startswith("    ") else line for line in body.splitlines()]
    return "\n\n```python\n" + "\n".join(lines) + "\n```\n\n"


@table("simulator_decode_run")
def simulator_decode_run() -> str:
    """The helper the loop calls for a run of decode-only steps, as it is in the source (a fenced code block)."""
    return "\n\n```python\n" + inspect.getsource(serving._decode_run).rstrip() + "\n```\n\n"


_TRACE = (P.REQUESTS, P.ARRIVAL_RATE, P.PROMPT_MEAN, P.OUTPUT_MEAN, Q.SLOTS, P.SEED)
COMPARE_CHUNK = P.CHUNK.but(default=512, label="Chunk compared", help="the chunked-prefill budget of the third row")


@table("batching_compare", *_SERVER, *_TRACE, COMPARE_CHUNK)
def batching_compare(model: str, accelerator: str, weights: str, kv: str, requests: int, rate: float,
                     prompt_mean: int, output_mean: int, batch: int, seed: int, chunk: int) -> str:
    """Static, continuous and continuous with chunked prefill on one trace: throughput and latencies."""
    rows = []
    for label, policy, ch in (("static", "static", 0), ("continuous", "continuous", 0),
                              (f"continuous, chunks of {format_int(chunk)}", "continuous", chunk)):
        sim = serving.run(model, accelerator, weights, kv, policy, requests, rate, prompt_mean, output_mean, batch,
                          ch, seed)
        m = serving.metrics(sim)
        rows.append([label, fmt_num(m.throughput_tokens_per_s), format_time(m.ttft_p50_s), format_time(m.ttft_p99_s),
                     format_time(m.itl_p50_s), format_time(m.itl_p99_s), format_time(m.latency_p50_s),
                     format_time(m.latency_p99_s), format_percent(m.slot_utilization),
                     fmt_num(m.goodput_tokens_per_s)])
    return md_table(["batching", "tokens/s", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "latency p50",
                     "latency p99", "slot use", "goodput (tokens/s)"], rows, "lrrrrrrrrr")


TRACE_FIELD = _field("sim_trace_field", "Trace fact", (
    "duration", "mean_prompt", "mean_reply", "longest_prompt", "longest_reply", "shortest_reply", "output_tokens",
    "requests", "rate", "slots"),
    "one fact about the simulated trace of requests")


@value("trace_fact", *_TRACE, TRACE_FIELD)
def trace_fact(requests: int, rate: float, prompt_mean: int, output_mean: int, batch: int, seed: int,
               field: str) -> str:
    """A fact about the seeded trace the batching simulator serves (descent.serving.make_trace)."""
    tr = serving.make_trace(requests, rate, prompt_mean, output_mean, seed)
    return {
        "duration": lambda: format_time(tr[-1].arrival - tr[0].arrival),
        "mean_prompt": lambda: format_int(round(sum(r.prompt for r in tr) / len(tr))),
        "mean_reply": lambda: format_int(round(sum(r.output for r in tr) / len(tr))),
        "longest_prompt": lambda: format_int(max(r.prompt for r in tr)),
        "longest_reply": lambda: format_int(max(r.output for r in tr)),
        "shortest_reply": lambda: format_int(min(r.output for r in tr)),
        "output_tokens": lambda: format_int(sum(r.output for r in tr)),
        "requests": lambda: format_int(requests),
        "rate": lambda: fmt_num(rate) + " requests/s",
        "slots": lambda: format_int(batch),
    }[field]()


#: The trace on which continuous batching loses (found by a search over seeds; the page explains
#: why): gpt-oss-120b in FP8 on one H200, a burst of 8 short requests, 4 slots.
EXCEPTION = {"model": "gpt-oss-120b", "accelerator": "h200", "weights": "fp8", "kv": "bf16", "requests": 8,
             "rate": 500.0, "prompt_mean": 300, "output_mean": 10, "batch": 4, "chunk": 0, "seed": 0}
EXCEPTION_FIELD = _field("exception_field", "Exception fact", (
    "static_tokens_per_s", "continuous_tokens_per_s", "loss", "requests", "slots", "prefill_steps_static",
    "prefill_steps_continuous", "expert_share_decode"),
    "one number about the trace where continuous batching loses")


def _prefill_steps(sim: serving.Simulation) -> int:
    return len({o.first_token for o in sim.occupancy})


@value("batching_exception", EXCEPTION_FIELD)
def batching_exception(field: str) -> str:
    """A burst of short requests on a mixture-of-experts model: continuous batching slower than static."""
    e = EXCEPTION
    sims = {p: serving.run(policy=p, **e) for p in ("static", "continuous")}
    tps = {p: serving.metrics(sims[p]).throughput_tokens_per_s for p in sims}
    s = serving.server(e["model"], e["accelerator"], e["weights"], e["kv"])
    return {
        "static_tokens_per_s": lambda: fmt_num(tps["static"]) + " tokens/s",
        "continuous_tokens_per_s": lambda: fmt_num(tps["continuous"]) + " tokens/s",
        "loss": lambda: format_percent(1 - tps["continuous"] / tps["static"]),
        "requests": lambda: format_int(e["requests"]),
        "slots": lambda: format_int(e["batch"]),
        "prefill_steps_static": lambda: format_int(_prefill_steps(sims["static"])),
        "prefill_steps_continuous": lambda: format_int(_prefill_steps(sims["continuous"])),
        "expert_share_decode": lambda: format_percent(
            s.step_weight_bytes(e["batch"]) / s.step_weight_bytes(e["prompt_mean"])),
    }[field]()


# ---------------------------------------------------------------------------------------------
# Prefix caching
# ---------------------------------------------------------------------------------------------

PREFIX_FIELD = _field("prefix_field", "Prefix fact", (
    "ttft_miss", "ttft_hit", "ttft_expected", "flops_saved", "flops_saved_expected", "rest_tokens"),
    "one number about a cached shared prefix")
_PREFIX_PROMPT = P.PROMPT_TOKENS.but(default=2400)


@value("prefix_fact", *_SERVER, P.PREFIX_TOKENS, _PREFIX_PROMPT, P.HIT_RATE, PREFIX_FIELD)
def prefix_fact(model: str, accelerator: str, weights: str, kv: str, prefix_tokens: int, prompt_tokens: int,
                hit_rate: float, field: str) -> str:
    """What a prefix-cache hit saves on one request (descent.serving.prefix_cache)."""
    r = serving.prefix_cache(serving.server(model, accelerator, weights, kv), prefix_tokens, prompt_tokens, hit_rate)
    return {
        "ttft_miss": lambda: format_time(r.ttft_miss_s),
        "ttft_hit": lambda: format_time(r.ttft_hit_s),
        "ttft_expected": lambda: format_time(r.ttft_expected_s),
        "flops_saved": lambda: format_percent(r.flops_saved),
        "flops_saved_expected": lambda: format_percent(r.flops_saved_expected),
        "rest_tokens": lambda: format_int(prompt_tokens - prefix_tokens),
    }[field]()


TURN_FIELD = _field("turn_field", "Multi-turn fact", (
    "tokens_no_cache", "tokens_cached", "ratio", "last_prompt", "last_ttft_no_cache", "last_ttft_cached",
    "question", "reply"),
    "one number about a multi-turn chat with and without a prefix cache")
#: A chat turn of the multi-turn example: a question and a reply, tokens (example sizes).
TURN_QUESTION = P.PROMPT_TOKENS.but(default=150, label="Question")
TURN_REPLY = P.OUTPUT_TOKENS.but(default=300, label="Reply")


@value("multi_turn_fact", *_SERVER, P.TURNS, P.PREFIX_TOKENS, TURN_QUESTION, TURN_REPLY, TURN_FIELD)
def multi_turn_fact(model: str, accelerator: str, weights: str, kv: str, turns: int, prefix_tokens: int,
                    prompt_tokens: int, output_tokens: int, field: str) -> str:
    """A chat that resends its history each turn: prefill with and without the cache (descent.serving.multi_turn)."""
    rows = serving.multi_turn(serving.server(model, accelerator, weights, kv), turns, prefix_tokens, prompt_tokens,
                              output_tokens)
    last = rows[-1]
    return {
        "tokens_no_cache": lambda: format_int(last["prefill_tokens_no_cache"]),
        "tokens_cached": lambda: format_int(last["prefill_tokens_cached"]),
        "ratio": lambda: fmt_num(last["prefill_tokens_no_cache"] / last["prefill_tokens_cached"], 2),
        "last_prompt": lambda: format_int(last["prompt_tokens"]),
        "last_ttft_no_cache": lambda: format_time(last["ttft_no_cache_s"]),
        "last_ttft_cached": lambda: format_time(last["ttft_cached_s"]),
        "question": lambda: format_int(prompt_tokens),
        "reply": lambda: format_int(output_tokens),
    }[field]()


# ---------------------------------------------------------------------------------------------
# The KV allocator
# ---------------------------------------------------------------------------------------------

ALLOC_FIELD = _field("alloc_field", "Allocator fact", (
    "token_share", "internal_share", "reserved_share", "external_share", "mean_running", "preempted", "pool",
    "requests", "prompt_mean", "output_mean", "blocks", "block_size", "reserve_tokens"),
    "one number about the allocator example (descent.serving.ALLOC_EXAMPLE)")


@value("alloc_fact", P.ALLOCATOR, P.BLOCK_SIZE, P.RESERVE_TOKENS, P.SEED, ALLOC_FIELD)
def alloc_fact(allocator: str, block_size: int, reserve_tokens: int, seed: int, field: str) -> str:
    """Where the KV pool goes under one allocator on the allocator example's backlog (descent.serving.allocate)."""
    e = serving.ALLOC_EXAMPLE
    pool = e["pool"] // block_size * block_size
    got = serving.allocate(serving.backlog(seed, reserve_tokens), pool, allocator, block_size, reserve_tokens)
    return {
        "token_share": lambda: format_percent(got.token_share),
        "internal_share": lambda: format_percent(got.internal_share),
        "reserved_share": lambda: format_percent(got.reserved_share),
        "external_share": lambda: format_percent(got.external_share),
        "mean_running": lambda: fmt_num(got.mean_running),
        "preempted": lambda: format_int(got.preempted),
        "pool": lambda: format_int(pool),
        "requests": lambda: format_int(e["requests"]),
        "prompt_mean": lambda: format_int(e["prompt_mean"]),
        "output_mean": lambda: format_int(e["output_mean"]),
        "blocks": lambda: format_int(pool // block_size),
        "block_size": lambda: format_int(block_size),
        "reserve_tokens": lambda: format_int(reserve_tokens),
    }[field]()


SHARED_FIELD = _field("shared_field", "Shared-block fact", ("separate", "shared", "saved"),
                      "blocks for parallel samples of one prompt, without and with sharing")


@value("shared_blocks_fact", P.PROMPT_TOKENS, P.OUTPUT_TOKENS, P.SAMPLES, P.BLOCK_SIZE, SHARED_FIELD)
def shared_blocks_fact(prompt_tokens: int, output_tokens: int, samples: int, block_size: int, field: str) -> str:
    """Blocks for parallel samples of one prompt, with and without copy-on-write sharing (descent.serving.shared_blocks)."""
    r = serving.shared_blocks(prompt_tokens, output_tokens, samples, block_size)
    return format_percent(r["saved"]) if field == "saved" else format_int(r[field])


# ---------------------------------------------------------------------------------------------
# Moving a KV cache
# ---------------------------------------------------------------------------------------------


@table("kv_transfer_table", P.MODEL, P.ACCELERATOR, P.KV, P.CONTEXT)
def kv_transfer_table(model: str, accelerator: str, kv: str, context: int) -> str:
    """One sequence's KV cache moved over each link: bandwidth, time, and the source of the bandwidth."""
    rows = [[md_text(link.name), format_number(link.bytes_per_s / 1e9, 3, trim=True) + " GB/s", format_time(t),
             md_link_source(link.source)]
            for link, _, t in serving.kv_transfer(model, accelerator, kv, context)]
    return md_table(["link", "one direction", "time", "source"], rows, "lrrl")


KV_MOVE_FIELD = _field("kv_move_field", "KV transfer fact", (
    "bytes", "fastest", "infiniband", "pcie", "ssd", "recompute", "decode_step"),
    "one number about moving one sequence's KV cache")


@value("kv_transfer_fact", *_SERVER, P.CONTEXT, KV_MOVE_FIELD)
def kv_transfer_fact(model: str, accelerator: str, weights: str, kv: str, context: int, field: str) -> str:
    """Time to move one sequence's KV cache over a link, or to recompute it (descent.serving.kv_transfer)."""
    moves = serving.kv_transfer(model, accelerator, kv, context)
    by_name = {link.name.split(" ")[0]: t for link, _, t in moves}
    s = serving.server(model, accelerator, weights, kv)
    return {
        "bytes": lambda: fmt_bytes(moves[0][1], "GB"),
        "fastest": lambda: format_time(moves[0][2]),
        "infiniband": lambda: format_time(by_name["InfiniBand"]),
        "pcie": lambda: format_time(by_name["PCIe"]),
        "ssd": lambda: format_time(by_name["NVMe"]),
        "recompute": lambda: format_time(serving.prefill(s, context).seconds),
        "decode_step": lambda: format_time(serving.decode_step(s, 1, context).seconds),
    }[field]()


# ---------------------------------------------------------------------------------------------
# The engines
# ---------------------------------------------------------------------------------------------

#: What each engine's own README (or documentation front page) says it does. "yes" only where the
#: project states it; a dash means the page we read does not list it, not that it is missing.
ENGINE_FEATURES = ("continuous batching", "paged KV cache", "prefix caching", "chunked prefill",
                   "speculative decoding", "structured output", "prefill/decode disaggregation")
ENGINES = [
    {"name": "vLLM", "url": "https://github.com/vllm-project/vllm",
     "yes": {"continuous batching", "paged KV cache", "prefix caching", "chunked prefill", "speculative decoding"},
     "docs": {"structured output": "https://github.com/vllm-project/vllm/blob/main/docs/features/structured_outputs.md",
              "prefill/decode disaggregation": "https://github.com/vllm-project/vllm/blob/main/docs/features/disagg_prefill.md"},
     "hardware": "NVIDIA GPUs, AMD and Intel CPUs and GPUs, PowerPC CPUs, TPU, AWS Neuron"},
    {"name": "SGLang", "url": "https://github.com/sgl-project/sglang",
     "yes": set(ENGINE_FEATURES), "docs": {},
     "hardware": "NVIDIA and AMD GPUs, Intel Xeon CPUs, Google TPUs, Ascend NPUs"},
    {"name": "TensorRT-LLM", "url": "https://github.com/NVIDIA/TensorRT-LLM",
     "yes": {"continuous batching", "paged KV cache", "speculative decoding"},
     "docs": {"prefix caching": "https://developer.nvidia.com/blog/introducing-new-kv-cache-reuse-optimizations-in-nvidia-tensorrt-llm/",
              "prefill/decode disaggregation":
                  "https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/blogs/tech_blog/blog5_Disaggregated_Serving_in_TensorRT-LLM.md"},
     "hardware": "NVIDIA GPUs"},
    {"name": "llama.cpp (server)", "url": "https://github.com/ggml-org/llama.cpp/tree/master/tools/server",
     "yes": {"continuous batching", "speculative decoding", "structured output"}, "docs": {},
     "hardware": "CPUs, Apple Metal, CUDA, HIP, Vulkan, SYCL and more"},
    {"name": "MLX LM", "url": "https://github.com/ml-explore/mlx-lm",
     "yes": {"prefix caching"}, "docs": {},
     "hardware": "Apple silicon"},
]


@table("engines")
def engines() -> str:
    """Serving engines against the techniques of this part, each "yes" from the project's own README or docs."""
    rows = []
    for e in ENGINES:
        cells = [f"[{e['name']}]({e['url']})"]
        for f in ENGINE_FEATURES:
            if f in e["docs"]:
                cells.append(f"[yes]({e['docs'][f]})")
            else:
                cells.append("yes" if f in e["yes"] else "—")
        cells.append(e["hardware"])
        rows.append(cells)
    return md_table(["engine", *ENGINE_FEATURES, "runs on"], rows, "l" + "c" * len(ENGINE_FEATURES) + "l")


def _check_loop_markers() -> None:
    """Fail the build if the simulator's loop markers moved (the page shows that code)."""
    src = inspect.getsource(serving.simulate)
    if _LOOP_START not in src or _LOOP_END not in src or not re.search(r"# 1\. Admit", src):
        raise ValueError("descent.serving.simulate changed: update simulator_loop's markers")


_check_loop_markers()


# ---------------------------------------------------------------------------------------------
# Numbers the page quotes from papers, and the inputs of the worked problems
# ---------------------------------------------------------------------------------------------

#: Measured results the page quotes, each with where it was published.
CITED = {
    "vllm_token_share_low": (0.204, "Kwon et al. 2023, section 1 and figure 2"),
    "vllm_token_share_high": (0.382, "Kwon et al. 2023, section 1 and figure 2"),
    "vllm_paged_waste": (0.04, "vLLM blog, 2023-06-20 (blog.vllm.ai/2023/06/20/vllm.html): waste under 4%"),
}
CITED_FIELD = _field("cited_field", "Cited figure", tuple(CITED), "a measured result quoted from a paper")


@value("cited", CITED_FIELD)
def cited(field: str) -> str:
    """A measured result quoted from a paper (the table CITED names the paper and section)."""
    return format_percent(CITED[field][0])


#: Parameters a worked problem may state, by key.
GIVEN = ("prefix_tokens", "prompt_tokens", "hit_rate", "acceptance", "draft_length", "draft_cost", "gpu_price",
         "api_price", "utilization", "context", "thinking_tokens", "batch", "turns", "output_tokens", "chunk",
         "samples", "ttft_target", "itl_target")
GIVEN_NAME = P.declare(P.Param("param", "Given parameter", "choice", key="given_param",
                               choices=[(g, g) for g in GIVEN], help="the declared parameter a problem states"))
GIVEN_VALUE = P.declare(P.Param("value", "Given value", "text", key="given_value", max_length=40,
                                help="its value, checked by that parameter"))


@value("given", GIVEN_NAME, GIVEN_VALUE)
def given(param: str, value: str) -> str:
    """An input of a worked problem, checked by its declared parameter and printed with its unit."""
    p = P.get(param)
    x = p.parse(value)
    if p.type == "int":
        text = format_int(x)
    elif p.unit == "s":
        return format_time(x)
    elif p.unit.startswith("$"):
        return "$" + format_number(x, 3, trim=True) + p.unit[1:]
    elif not p.unit and p.max == 1.0:
        return format_percent(x) if param in ("hit_rate", "utilization", "acceptance") else format_number(x, 3, trim=True)
    else:
        text = format_number(x, 3, trim=True)
    return f"{text} {p.unit}".rstrip()
