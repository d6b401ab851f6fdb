"""Part 3 widgets ("Serving software"): every number from :mod:`descent.serving`.

* ``prefill_decode``: one request's prefill and decode on a chip; work per step with and without
  the KV cache.
* ``batching``: the seeded request-level simulator, static against continuous batching, with
  chunked prefill; the slots over time as a grid.
* ``prefix_cache``: what a cached shared prefix saves on one request and over a multi-turn chat.
* ``paged_kv``: contiguous reservation against paged blocks on a backlog of requests; the pool as a
  grid of blocks; copy-on-write sharing for parallel samples.
* ``kv_transfer``: moving one sequence's KV cache over NVLink, InfiniBand, PCIe and an SSD.
* ``break_even``: self-hosting one accelerator against a per-token API price.
* ``speculative``: expected tokens per target pass and speedup (Leviathan et al. 2023).

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

import math

from descent import params as P
from descent import quantities as Q
from descent import serving
from descent.scenario import Scenario
from descent.step import DeviceStep, StepModel, footprint
from descent.units import (
    format_bytes,
    format_int,
    format_number,
    format_percent,
    format_time,
    plural,
)
from descent.widgets import FieldError, Input, Look, widget
from descent.widgets import views as v

__all__ = [
    "ALLOC",
    "LANE_BINS",
    "batching",
    "break_even",
    "kv_transfer",
    "lanes",
    "paged_kv",
    "prefill_decode",
    "prefix_cache",
    "speculative",
]

#: Significant figures of the numbers the widgets show.
SIG = 3
#: The KV cache is kept in BF16 in these widgets (descent.params.KV's default).
KV = P.KV.default


def _rate(x: float) -> str:
    return format_number(x, SIG)


def _a_or_an(number_text: str) -> str:
    """``number_text`` after its article as said aloud: "an 80%", "an 11%", "a 50%", "a 110%"."""
    said_an = number_text[:1] == "8" or (number_text[:2] in ("11", "18") and not number_text[2:3].isdigit())
    return f"{'an' if said_an else 'a'} {number_text}"


def _server(model: str, accelerator: str, weights: str) -> StepModel:
    return serving.server(model, accelerator, weights, KV)


def _server_with_kv_room(model: str, accelerator: str, weights: str) -> StepModel:
    """:func:`_server`, when the weights leave memory for a KV cache on one accelerator.

    Raises:
        FieldError: (field ``model``) they do not.
    """
    s = _server(model, accelerator, weights)
    if s.kv_capacity <= 0:
        raise FieldError("model", f"{s.model.name}'s {weights} weights do not fit on one {s.accelerator.name} "
                         "with room for a KV cache; choose a smaller model, a lower precision or a larger chip")
    return s


# ---------------------------------------------------------------------------------------------
# prefill_decode
# ---------------------------------------------------------------------------------------------

KV_CACHE = P.declare(P.Param(
    "kv_cache", "Keep a KV cache", "bool", True,
    help="Off: every step runs the whole text again, as if nothing were remembered.",
))
#: Decode steps the work-per-step bars show (the first, then evenly spaced to the last).
STEP_BARS = 6


def _decode_step(s: StepModel, prompt: int, k: int, cache: bool) -> DeviceStep:
    """The pass that produces token ``k + 2`` (token 1 comes out of the prefill)."""
    return s.step(decode_contexts=[prompt + k]) if cache else s.step(prefill_spans=[(0, prompt + k + 1)])


def _decode_seconds(s: StepModel, prompt: int, output: int, cache: bool) -> list[float]:
    """The seconds of each pass that produces tokens 2 .. output: with the cache, the step model's
    run of decode steps (:meth:`StepModel.decode_steps`, the same floats as one step at a time, in
    a few milliseconds for 16,384 tokens); without, each pass re-running the text."""
    if output < 2:
        return []
    if cache:
        return s.decode_steps([prompt], output - 1)[0]
    return [_decode_step(s, prompt, k, False).seconds for k in range(output - 1)]


def _slower(model: str, accelerator: str, weights: str, prompt_tokens: int, pre: DeviceStep, per_token: DeviceStep,
            mid: DeviceStep) -> str:
    """How many times slower per token decode is than prefill, printed as Part 3's prose prints it:
    the quantity ``prefill_decode_ratio`` at context = the prompt, batch 1, three significant figures
    (tests/test_one_answer.py). Without the KV cache the second token's pass is compared instead."""
    if per_token is mid:
        q = Q.get("prefill_decode_ratio")
        return q.format(q(model=model, accelerator=accelerator, weights=weights, kv=KV, prompt_tokens=prompt_tokens,
                          context=prompt_tokens, batch=1), sig=3)
    return format_number(prompt_tokens / pre.seconds * per_token.seconds, 3, trim=True)


@widget(
    "prefill_decode",
    tries=[("Lengthen the prompt.", "Time to first token grows with it; the time per output token barely moves.",
            {"prompt_tokens": 4096}),
           ("Turn the KV cache off.", "Each step redoes the whole context, so the time per token grows with every token.",
            {"kv_cache": False})],
    title="Prefill and decode",
    description="One request on one chip: the prompt is read in one pass (prefill), then the reply comes "
    "one token per pass (decode). Each pass takes the longer of reading its bytes and doing its arithmetic.",
    inputs=[
        Input(P.MODEL, "select"),
        Input(P.ACCELERATOR, "select"),
        Input(P.WEIGHTS_UNIFORM, "select"),
        Input(P.PROMPT_TOKENS.but(max=131_072), "range", log=True),
        Input(P.OUTPUT_TOKENS.but(max=16_384), "range", log=True),
        Input(KV_CACHE, "toggle"),
    ],
)
def prefill_decode(model: str, accelerator: str, weights: str, prompt_tokens: int, output_tokens: int,
                   kv_cache: bool) -> list[dict]:
    """Views: TTFT, time per token, prefill and decode speed, the whole reply's time, and bars of
    the time of sampled steps (with the cache, or, without it, each step re-running the text).

    Raises:
        ValueError: from :mod:`descent.serving` (a model whose weights cannot be read, ...).
    """
    s = _server(model, accelerator, weights)
    m, a = s.model, s.accelerator
    pre = serving.prefill(s, prompt_tokens)
    seconds = _decode_seconds(s, prompt_tokens, output_tokens, kv_cache)
    cached = seconds if kv_cache else _decode_seconds(s, prompt_tokens, output_tokens, True)
    total = pre.seconds + sum(seconds)
    # The first decode step, at the prompt's context: the step Part 3's prose times (itl_s at
    # context = prompt_tokens), so the page and the widget print one number for one input.
    mid = serving.decode_step(s, 1, prompt_tokens)
    # Without the cache the second token's pass runs the whole text again: that is the time per
    # output token then (and it grows with every token; the bars show it).
    per_token = mid if kv_cache or not seconds else _decode_step(s, prompt_tokens, 0, False)
    # Does it fit? The weights and this request's KV cache (at most the model's context) against
    # one chip's usable memory, as Part 5's widgets ask (descent.step.footprint).
    held = Scenario(model=model, accelerator=accelerator, weights=weights,
                    context=min(prompt_tokens + output_tokens, m.max_context), batch=1)
    out = [] if footprint(held).fits else [v.does_not_fit(f"{m.name} with its KV cache", a.name)]
    out += [
        v.stat("Time to first token", format_time(pre.seconds), note=f"no queue, at peak: prefill, {pre.bound}-bound",
               quantity="prefill_s"),
        # At the prompt's context (this widget has no context input): not labelled itl_s, whose
        # context is its own input (tests/test_one_answer.py).
        v.stat("Time per output token", format_time(per_token.seconds),
               note=f"decode, {per_token.bound}-bound, at the prompt's {format_int(prompt_tokens)} tokens of context"
               if per_token is mid else f"the second token's pass, {per_token.bound}-bound: without a KV cache it runs "
               f"all {format_int(prompt_tokens + 1)} tokens again, and each later pass one more"),
        v.stat("Prefill speed", _rate(prompt_tokens / pre.seconds), "tokens/s"),
        v.stat("Decode speed", _rate(1 / per_token.seconds), "tokens/s",
               note=f"{_slower(model, accelerator, weights, prompt_tokens, pre, per_token, mid)} times slower per token"),
        v.stat("Whole reply", format_time(total),
               note=f"{plural(output_tokens, 'token')}" + ("" if kv_cache else ", no KV cache")),
    ]
    picks = sorted({0, *(round(i * (len(seconds) - 1) / (STEP_BARS - 1)) for i in range(STEP_BARS))}) if seconds else []
    rows = [v.bar(f"pass 1: prefill of {format_int(prompt_tokens)}", pre.seconds, display=format_time(pre.seconds),
                  cls="is-selected")]
    for i in picks:
        c = _decode_step(s, prompt_tokens, i, kv_cache)
        what = f"reads {format_int(c.tokens)} tokens" if not kv_cache else "1 new token"
        rows.append(v.bar(f"pass {format_int(i + 2)}: {what}", c.seconds, display=format_time(c.seconds),
                          cls="" if kv_cache else "is-warn"))
    out.append(v.bar_list(rows, caption=f"Time of sampled passes, {m.name} on one {a.name}"
                          + ("" if kv_cache else " without a KV cache"), log=True))
    if kv_cache:
        out.append(v.note(
            f"Prefill does the arithmetic of {format_int(prompt_tokens)} tokens for one read of the weights; each "
            f"decode pass reads the same weights ({format_bytes(s.step_weight_bytes(1), 'GB')}) and every cached "
            f"key and value for a single token."))
    else:
        with_cache = pre.seconds + sum(cached)
        out.append(v.note(
            f"Without the cache, pass n runs all the text so far again: the work grows with the square of the "
            f"reply. This reply takes {format_time(total)} instead of {format_time(with_cache)}, "
            f"{format_number(total / with_cache, SIG, trim=True)} times as long.", "warn"))
    if prompt_tokens + output_tokens > m.max_context:
        out.append(v.note(f"{format_int(prompt_tokens + output_tokens)} tokens is more than {m.name} was built "
                          f"for ({format_int(m.max_context)}): the timing is what the arithmetic would cost.", "warn"))
    return out


# ---------------------------------------------------------------------------------------------
# batching
# ---------------------------------------------------------------------------------------------

#: Time bins across the simulated run in the slot grid, and the most slots it draws.
LANE_BINS = 40
LANE_ROWS = 16

#: Cell classes of the slot grid, with their meaning.
LANE_LEGEND = (
    ("is-prefill", "reading its prompt"),
    ("is-decode", "writing its reply"),
    ("is-waste", "finished, slot held until the batch ends"),
    ("is-free", "empty"),
)


def lanes(sim: serving.Simulation, bins: int = LANE_BINS, rows: int = LANE_ROWS) -> dict:
    """The first ``rows`` slots of ``sim`` over ``bins`` equal time bins: a ``cell_grid`` view. A bin
    shows what its slot held at the bin's middle; a run of bins holding the same request in the same
    state is one bar (one cell spanning them), named by the times its bins cover."""
    start = min(r.arrival for r in sim.trace)
    end = max(o.finished for o in sim.occupancy)
    width = (end - start) / bins
    by_slot: dict[int, list[serving.Occupancy]] = {}
    for o in sim.occupancy:
        by_slot.setdefault(o.slot, []).append(o)
    shown = min(rows, sim.slots)
    middles = [start + (b + 0.5) * width for b in range(bins)]
    edges = [format_time(b * width) for b in range(bins + 1)]  # the same for every slot
    grid = []
    for slot in range(shown):
        states = []  # (class, what) of each bin
        stays = by_slot.get(slot, [])
        for t in middles:
            o = next((o for o in stays if o.admitted <= t < o.released), None)
            if o is None:
                states.append(("is-free", "empty"))
            elif t < o.first_token:
                states.append(("is-prefill", f"request {o.request} reading its prompt"))
            elif t < o.finished:
                states.append(("is-decode", f"request {o.request} writing"))
            else:
                states.append(("is-waste", f"request {o.request} finished, slot held"))
        row, b = [], 0
        while b < bins:
            e = b + 1
            while e < bins and states[e] == states[b]:
                e += 1
            cls, what = states[b]
            row.append(v.cell(cls, title=f"slot {slot + 1}, {edges[b]} to {edges[e]}: {what}", span=e - b))
            b = e
        grid.append(row)
    more = f" (the first {shown} of {sim.slots})" if shown < sim.slots else ""
    return v.cell_grid(grid, caption=f"Slots{more} over {format_time(end - start)}, {sim.policy} batching",
                       row_labels=[str(i + 1) for i in range(shown)], legend=LANE_LEGEND)


#: The batching widget's chunk budget slider.
BATCHING_CHUNK = P.CHUNK.but(max=4096)


@widget(
    "batching",
    tries=[("Switch from continuous to static.",
            "Freed slots wait for the whole batch to finish: throughput falls and waits grow.", {"policy": "static"}),
           ("Raise the arrival rate.", "The slots fill up and latency climbs.", {"rate": 16.0})],
    title="Static and continuous batching",
    description="A seeded stream of requests with mixed prompt and reply lengths, served by one chip. "
    "Static batching starts a new batch only when the last one has finished; continuous batching fills a "
    "free slot at the next step. Both serve the same requests.",
    inputs=[
        Input(P.POLICY, "segmented"),
        Input(Q.SLOTS.but(max=256), "range", log=True),
        Input(BATCHING_CHUNK, "range"),
        Input(P.ARRIVAL_RATE.but(max=100.0), "range", log=True),
        # Up to 250: the two simulations then answer well within the 50 ms goal in a browser (in
        # Chromium on the bench's 2-core machine, 2026-12-04: 66 ms of Python at 500, 46 at 300);
        # the command line takes more.
        Input(P.REQUESTS.but(max=250), "range", log=True),
        Input(P.SEED, "number"),
        Input(P.MODEL, "select"),
        Input(P.ACCELERATOR, "select"),
    ],
)
def batching(policy: str, batch: int, chunk: int, rate: float, requests: int, seed: int, model: str,
             accelerator: str) -> list[dict]:
    """Views: the chosen policy's metrics, a table of both policies on the same trace, the slot grid.

    Raises:
        FieldError: the model leaves no room for a KV cache on one accelerator of this kind; a
            chunk budget too small to simulate this trace quickly (:func:`descent.serving.check_chunk`).
        ValueError: from :func:`descent.serving.simulate` (a trace too large).
    """
    weights = P.WEIGHTS.default
    _server_with_kv_room(model, accelerator, weights)
    # Refused before either simulation runs, under the chunk control, with this slider's range.
    serving.check_chunk(serving.make_trace(requests, rate, P.PROMPT_MEAN.default, P.OUTPUT_MEAN.default, seed),
                        chunk, BATCHING_CHUNK.max)
    settings = dict(model=model, accelerator=accelerator, weights=weights, kv=KV, requests=requests, rate=rate,
                    prompt_mean=P.PROMPT_MEAN.default, output_mean=P.OUTPUT_MEAN.default, batch=batch,
                    chunk=chunk, seed=seed)
    sims = {p: serving.run(policy=p, **settings) for p in ("static", "continuous")}
    met = {p: serving.metrics(sims[p]) for p in sims}
    m = met[policy]
    out = [
        v.stat("Throughput", _rate(m.throughput_tokens_per_s), "tokens/s", quantity="throughput_tokens_per_s"),
        v.stat("Median latency", format_time(m.latency_p50_s), note="arrival to last token",
               quantity="latency_p50_s"),
        v.stat("99th-percentile latency", format_time(m.latency_p99_s), quantity="latency_p99_s"),
        v.stat("99th-percentile TTFT", format_time(m.ttft_p99_s), quantity="ttft_p99_s"),
        v.stat("99th-percentile ITL", format_time(m.itl_p99_s), note="gap between two tokens of a reply",
               quantity="itl_p99_s"),
        v.stat("Slot use", format_percent(m.slot_utilization), quantity="slot_utilization"),
        v.stat("Goodput", _rate(m.goodput_tokens_per_s), "tokens/s",
               note=f"TTFT within {format_time(P.TTFT_TARGET.default)}, mean ITL within "
               f"{format_time(P.ITL_TARGET.default)}: {format_percent(m.met_targets)} of requests",
               quantity="goodput_tokens_per_s"),
    ]
    out.append(v.table(
        ["Batching", "Tokens/s", "Latency p99", "TTFT p99", "ITL p99", "Slot use"],
        [[p, _rate(x.throughput_tokens_per_s), format_time(x.latency_p99_s), format_time(x.ttft_p99_s),
          format_time(x.itl_p99_s), format_percent(x.slot_utilization)]
         for p, x in met.items()],
        caption=f"The same {plural(requests, 'request')} both ways",
        numeric=[False, True, True, True, True, True],
    ))
    out.append(lanes(sims[policy]))
    s = serving.server(model, accelerator, weights, KV)
    # The distributions' means (the inputs) and this seeded sample's own averages (what Part 3's
    # prose prints, trace_fact field=mean_prompt): two different numbers, each named.
    sample = serving.trace_summary(serving.make_trace(requests, rate, P.PROMPT_MEAN.default, P.OUTPUT_MEAN.default,
                                                      seed))
    out.append(v.note(
        f"{s.model.name} ({weights.upper()} weights) on one {s.accelerator.name}: prompts are drawn with a mean of "
        f"{format_int(P.PROMPT_MEAN.default)} tokens and replies {format_int(P.OUTPUT_MEAN.default)}; this sample "
        f"averages {format_int(round(sample['mean_prompt']))} and {format_int(round(sample['mean_reply']))}; "
        f"{format_int(sims[policy].steps)} steps, "
        f"{format_percent(sims[policy].compute_bound_steps / sims[policy].steps)} of them compute-bound."))
    return out


# ---------------------------------------------------------------------------------------------
# prefix_cache
# ---------------------------------------------------------------------------------------------

#: An example chat turn for the multi-turn table: a question and a reply, tokens.
TURN_QUESTION_TOKENS = 150
TURN_REPLY_TOKENS = 300


@widget(
    "prefix_cache",
    tries=[("Raise the hit rate.", "The expected time to first token falls toward the hit time.", {"hit_rate": 0.95}),
           ("Lengthen the shared prefix.", "More of each prompt is served from the cache.", {"prefix_tokens": 2300})],
    title="Prefix caching",
    description="Many requests start with the same text (a system prompt, tool definitions). When its keys "
    "and values are still cached, the prefill runs only on the rest of the prompt.",
    inputs=[
        Input(P.HIT_RATE, "range"),
        Input(P.PREFIX_TOKENS.but(max=65_536), "range", log=False),
        Input(P.PROMPT_TOKENS.but(default=2400, max=131_072), "range", log=True),
        Input(P.TURNS.but(max=50), "range"),
        Input(P.MODEL, "select"),
        Input(P.ACCELERATOR, "select"),
    ],
)
def prefix_cache(hit_rate: float, prefix_tokens: int, prompt_tokens: int, turns: int, model: str,
                 accelerator: str) -> list[dict]:
    """Views: TTFT on a miss, on a hit, expected; FLOPs saved; a multi-turn table.

    Raises:
        FieldError: the shared prefix is not shorter than the prompt.
    """
    s = _server(model, accelerator, P.WEIGHTS.default)
    saving = serving.prefix_cache(s, prefix_tokens, prompt_tokens, hit_rate)
    out = [
        # The shared prefix's slider ends below the prompt: only values that make sense are offered.
        v.limits(prefix_tokens={"max": prompt_tokens - 1}),
        v.stat("TTFT on a miss", format_time(saving.ttft_miss_s), note=f"prefill of {format_int(prompt_tokens)} tokens"),
        v.stat("TTFT on a hit", format_time(saving.ttft_hit_s),
               note=f"prefill of {format_int(prompt_tokens - prefix_tokens)} tokens"),
        v.stat("Expected TTFT", format_time(saving.ttft_expected_s), note=f"at {_a_or_an(format_percent(hit_rate))} hit rate"),
        v.stat("Prefill arithmetic saved", format_percent(saving.flops_saved_expected),
               note=f"{format_percent(saving.flops_saved)} on each hit"),
    ]
    rows = serving.multi_turn(s, turns, prefix_tokens, TURN_QUESTION_TOKENS, TURN_REPLY_TOKENS)
    out.append(v.table(
        ["Turn", "Prompt (tokens)", "TTFT, no cache", "TTFT, cached"],
        [[r["turn"], r["prompt_tokens"], format_time(r["ttft_no_cache_s"]), format_time(r["ttft_cached_s"])]
         for r in rows],
        caption=f"A chat of {plural(turns, 'turn')}: each sends the whole conversation again (questions of "
        f"{TURN_QUESTION_TOKENS}, replies of {TURN_REPLY_TOKENS} tokens)",
        numeric=[True, True, True, True],
    ))
    last = rows[-1]
    out.append(v.note(
        f"Over the chat the model reads {format_int(last['prefill_tokens_no_cache'])} prompt tokens without a "
        f"cache and {format_int(last['prefill_tokens_cached'])} with one: the repeated history grows with the "
        f"square of the number of turns."))
    return out


# ---------------------------------------------------------------------------------------------
# paged_kv
# ---------------------------------------------------------------------------------------------

#: The allocator's workload: descent.serving.ALLOC_EXAMPLE (a pool of 4,096 tokens, a backlog of requests).
ALLOC = serving.ALLOC_EXAMPLE
#: Columns of the block grid.
GRID_COLUMNS = 32

BLOCK_LEGEND = (
    ("is-used", "holds tokens"),
    ("is-prefill", "reserved for tokens still to come"),
    ("is-waste", "reserved, never used"),
    ("is-decode", "free, but too small a gap"),
    ("is-free", "free"),
)
_BLOCK_CLASS = {"used": "is-used", "reserved": "is-prefill", "waste": "is-waste", "hole": "is-decode",
                "free": "is-free"}


@widget(
    "paged_kv",
    tries=[("Switch from paged blocks to contiguous.",
            "Each request reserves room for its longest reply up front: far more memory is reserved and never used, "
            "and fewer sequences run at once.", {"allocator": "contiguous"}),
           ("Raise the block size.", "Fewer blocks to track, more waste in each last block.", {"block_size": 64})],
    title="Where the KV memory goes",
    description="The same backlog of requests served from one KV pool, by two allocators. Contiguous: each "
    "request reserves one run of memory for its prompt and its longest allowed reply. Paged: small blocks, "
    "handed out as the reply grows. The grid is the pool half-way through, one cell per block.",
    inputs=[
        Input(P.ALLOCATOR, "segmented"),
        Input(P.BLOCK_SIZE.but(min=8, max=256), "range", log=True),
        Input(P.RESERVE_TOKENS.but(max=1024), "range", log=True),
        Input(P.SAMPLES.but(max=16), "range"),
        Input(P.SEED, "number"),
    ],
)
def paged_kv(allocator: str, block_size: int, reserve_tokens: int, samples: int, seed: int) -> list[dict]:
    """Views: shares of the pool (tokens, reserved, never used, unusable gaps), sequences running,
    the block grid, and the blocks copy-on-write sharing saves for parallel samples."""
    pool = ALLOC["pool"] // block_size * block_size
    got = serving.allocate(serving.backlog(seed, reserve_tokens), pool, allocator, block_size, reserve_tokens)
    out = [
        v.stat("Pool holding tokens", format_percent(got.token_share), note="mean while requests wait"),
        v.stat("Reserved, never used", format_percent(got.internal_share),
               note="internal fragmentation" + (" (last blocks)" if allocator == "paged" else "")),
        v.stat("Reserved for later", format_percent(got.reserved_share)),
        v.stat("Free but unusable", format_percent(got.external_share), note="external fragmentation"),
        v.stat("Sequences running", format_number(got.mean_running, SIG, trim=True), note="mean while requests wait"),
    ]
    cells = [v.cell(_BLOCK_CLASS[st], title=f"block {i}: {st}" + (f", request {o}" if o >= 0 else ""))
             for i, (st, o) in enumerate(zip(got.blocks, got.owners, strict=True))]
    cells += [v.cell("", title="outside the pool")] * (-len(cells) % GRID_COLUMNS)
    grid = [cells[i:i + GRID_COLUMNS] for i in range(0, len(cells), GRID_COLUMNS)]
    out.append(v.cell_grid(grid, caption=f"{format_int(pool // block_size)} blocks of {format_int(block_size)} "
                           f"tokens at step {format_int(got.snapshot_step)}, {allocator}", legend=BLOCK_LEGEND))
    if got.preempted:
        out.append(v.note(f"{plural(got.preempted, 'time')} a sequence was preempted (its blocks freed, its tokens "
                          "recomputed later) because the pool ran out as replies grew."))
    share = serving.shared_blocks(ALLOC["prompt_mean"], ALLOC["output_mean"], samples, block_size)
    out.append(v.note(
        f"{plural(samples, 'sample')} of one {format_int(ALLOC['prompt_mean'])}-token prompt with "
        f"{format_int(ALLOC['output_mean'])}-token replies: {format_int(share['separate'])} blocks with separate "
        f"copies, {format_int(share['shared'])} when the prompt's full blocks are shared and the last one is "
        f"copied on write ({format_percent(share['saved'])} fewer)."))
    return out


# ---------------------------------------------------------------------------------------------
# kv_transfer
# ---------------------------------------------------------------------------------------------


@widget(
    "kv_transfer",
    tries=[("Lengthen the context.", "The cache to move grows in proportion, and so does the time.", {"context": 32768}),
           ("Compare the links.", "NVLink moves it many times faster than PCIe or the network.", Look(html="NVLink"))],
    title="Moving a KV cache",
    description="Disaggregated serving computes a prompt's keys and values on one machine and decodes on "
    "another; offloading parks them in CPU memory or on an SSD. How long one sequence's cache takes to move.",
    inputs=[
        Input(P.MODEL, "select"),
        Input(P.ACCELERATOR, "select"),
        Input(P.KV, "select"),
        Input(P.CONTEXT.but(max=1_048_576), "range", log=True),
    ],
)
def kv_transfer(model: str, accelerator: str, kv: str, context: int) -> list[dict]:
    """Views: the cache's size; a bar per link, beside the prefill that made the cache and one decode step."""
    s = serving.server(model, accelerator, P.WEIGHTS.default, kv)
    moves = serving.kv_transfer(model, accelerator, kv, context)
    nbytes = moves[0][1]
    pre = serving.prefill(s, min(context, P.PROMPT_TOKENS.max))
    step = serving.decode_step(s, 1, context)
    rows = [v.bar(link.label, t, display=format_time(t), note=link.source) for link, _, t in moves]
    rows.append(v.bar(f"prefill of {format_int(context)} tokens on one {s.accelerator.name}", pre.seconds,
                      display=format_time(pre.seconds), cls="is-selected"))
    rows.append(v.bar("one decode step", step.seconds, display=format_time(step.seconds), cls="is-selected"))
    return [
        v.stat("KV cache of the sequence", format_bytes(nbytes, "auto", SIG, trim=True),
               note=f"{format_int(context)} tokens, {kv}"),
        v.stat("Over the fastest link", format_time(moves[0][2]), note=moves[0][0].label),
        v.stat("Prefill that made it", format_time(pre.seconds)),
        v.bar_list(rows, caption="Time to move it, and what it is compared with", log=True),
        v.note("A transfer can overlap the prefill, layer by layer, as the cache is written; it only adds to the "
               "time to first token where the link is slower than the prefill."),
    ]


# ---------------------------------------------------------------------------------------------
# break_even
# ---------------------------------------------------------------------------------------------

#: Utilizations the cost bars show.
UTILIZATION_BARS = (0.1, 0.25, 0.5, 0.75, 1.0)


@widget(
    "break_even",
    tries=[("Lower the utilization.", "Idle hours make self-hosting dearer per token.", {"utilization": 0.25}),
           ("Lower the API price.", "The utilization needed to break even rises.", {"api_price": 0.5}),
           ("Set the input price to zero.", "The API's bill per output token falls to its output price: the prompts were "
            "a large part of it.", {"api_input_price": 0.0})],
    title="Rent a GPU or pay per token?",
    description="One accelerator kept full makes a number of tokens per second; it costs its hourly price "
    "whether busy or not. The API bills each request's prompt and reply. Put in the prices you see.",
    inputs=[
        Input(P.GPU_PRICE.but(max=100.0), "range", log=True),
        Input(P.API_PRICE.but(max=100.0), "range", log=True),
        Input(P.API_INPUT_PRICE.but(max=100.0), "range"),
        Input(P.UTILIZATION, "range"),
        Input(Q.SLOTS.but(max=512), "range", log=True),
        Input(P.MODEL, "select"),
        Input(P.ACCELERATOR, "select"),
        Input(P.WEIGHTS_UNIFORM, "select"),
    ],
)
def break_even(gpu_price: float, api_price: float, api_input_price: float, utilization: float, batch: int,
               model: str, accelerator: str, weights: str) -> list[dict]:
    """Views: tokens/s at full load, the cost per million tokens at this utilization, the break-even
    utilization, and bars of the cost at several utilizations against the API price.

    Raises:
        FieldError: the model does not fit on one accelerator of this kind.
    """
    s = _server_with_kv_room(model, accelerator, weights)
    prompt, output = P.PROMPT_TOKENS.default, P.OUTPUT_TOKENS.default
    need = batch * s.kv_bytes(prompt + output)
    note = ""
    if need > s.kv_capacity:
        note = (f"{format_int(batch)} sequences of {format_int(prompt + output)} tokens need "
                f"{format_bytes(need, 'GB')} of KV cache; one {s.accelerator.name} has "
                f"{format_bytes(s.kv_capacity, 'GB')} after the weights: the full batch does not fit.")
    rate = serving.steady_throughput(s, batch, prompt, output)
    cost = serving.cost_per_million(gpu_price, rate, utilization)
    bill = serving.api_bill_per_million_output(api_price, api_input_price, prompt, output)
    u = serving.break_even_utilization(bill, gpu_price, rate)
    out = [
        v.stat("Tokens/s at full load", _rate(rate), note=f"{format_int(batch)} requests at a time, "
               f"{format_int(prompt)}-token prompts, {format_int(output)}-token replies", quantity="steady_tokens_per_s"),
        v.stat("Cost per million tokens", "$" + format_number(cost, SIG), note=f"at {format_percent(utilization)} "
               "utilization", quantity="cost_per_million_usd"),
        v.stat("API bill per million output tokens", "$" + format_number(bill, SIG),
               note=f"${format_number(api_price, SIG)} output + {format_int(prompt)}/{format_int(output)} x "
               f"${format_number(api_input_price, SIG)} input", quantity="api_bill_per_million_output"),
        v.stat("Break-even utilization", format_percent(u) if u <= 1 else "never",
               note="busier than this, the GPU is cheaper" if u <= 1 else
               f"even at 100% it costs {format_percent(u)} of what is needed", quantity="break_even_utilization"),
    ]
    rows = [v.bar(f"GPU at {format_percent(x)}", serving.cost_per_million(gpu_price, rate, x),
                  display="$" + format_number(serving.cost_per_million(gpu_price, rate, x), SIG),
                  cls="is-ok" if serving.cost_per_million(gpu_price, rate, x) <= bill else "is-warn")
            for x in UTILIZATION_BARS]
    rows.append(v.bar("API, prompts included", bill, display="$" + format_number(bill, SIG), cls="is-selected"))
    out.append(v.bar_list(rows, caption="Dollars per million output tokens", log=True))
    if note:
        out.append(v.note(note, "warn"))
    return out


# ---------------------------------------------------------------------------------------------
# speculative
# ---------------------------------------------------------------------------------------------

#: Draft lengths the first bar list compares; acceptance rates the second compares.
DRAFT_LENGTHS = tuple(range(1, 13))
ACCEPTANCES = tuple(i / 10 for i in range(11))


@widget(
    "speculative",
    tries=[("Raise the acceptance rate.", "Expected tokens per pass approach draft length plus one.", {"acceptance": 0.95}),
           ("Raise the draft cost.", "Past some point speculation slows things down.", {"draft_cost": 1.0})],
    title="Speculative decoding",
    description="A cheap draft proposes k tokens; the target checks them all in one pass and keeps them up to "
    "the first one it disagrees with, then adds its own. Each drafted token is accepted with probability a.",
    inputs=[
        Input(P.ACCEPTANCE, "range"),
        Input(P.DRAFT_LENGTH.but(max=32), "range"),
        Input(P.DRAFT_COST.but(max=2.0), "range"),
    ],
)
def speculative(acceptance: float, draft_length: int, draft_cost: float) -> list[dict]:
    """Views: expected tokens per target pass and speedup; speedup against k and against a."""
    r = serving.speculative(acceptance, draft_length, draft_cost)
    out = [
        v.stat("Tokens per target pass", format_number(r.expected_tokens, SIG), note=f"between 1 and {draft_length + 1}",
               quantity="expected_tokens"),
        v.stat("Speedup", format_number(r.speedup, SIG) + "×", note="over plain decoding", quantity="speedup"),
    ]

    def bar(label: str, x: serving.Speculation, selected: bool) -> dict:
        cls = "is-selected" if selected else ("is-warn" if x.speedup < 1 else "")
        return v.bar(label, x.speedup, display=format_number(x.speedup, SIG) + "×", cls=cls,
                     note="slower than plain decoding" if x.speedup < 1 else "")

    ks = sorted({*DRAFT_LENGTHS, draft_length})
    out.append(v.bar_list([bar(f"k = {k}", serving.speculative(acceptance, k, draft_cost), k == draft_length)
                           for k in ks], caption=f"Speedup by draft length at a = {format_number(acceptance, 2, trim=True)}"))
    best = max(ks, key=lambda k: serving.speculative(acceptance, k, draft_cost).speedup)
    out.append(v.bar_list([bar(f"a = {format_number(a, 2, trim=True)}", serving.speculative(a, draft_length, draft_cost),
                               math.isclose(a, acceptance)) for a in ACCEPTANCES],
                          caption=f"Speedup by acceptance rate at k = {draft_length}"))
    if r.speedup < 1:
        out.append(v.note(f"At these settings speculation slows decoding down: each round costs "
                          f"{format_number(1 + draft_length * draft_cost, SIG, trim=True)} target steps and yields "
                          f"{format_number(r.expected_tokens, SIG, trim=True)} tokens.", "warn"))
    else:
        out.append(v.note(f"Best draft length here: k = {best}. Longer drafts add cost for tokens that are less "
                          "and less likely to survive."))
    return out
