"""Serving arithmetic: prefill and decode timing, the batching simulator, caches, speculative decoding.

**The step model.** A serving engine runs the model in *steps*: one forward pass over a set of
tokens (a whole prompt, a piece of one, or one new token for each sequence that is decoding). A
step cannot be faster than either of two ceilings, so its time is the larger of the two
(the roofline of Williams, Waterman & Patterson 2009, applied to a whole step as in Pope et al.
2022, "Efficiently Scaling Transformer Inference", arXiv:2211.05102, section 2):

    bytes  = the weights the step uses, read once (descent.step.read_shares)
             + the KV cache of every sequence in the step, at its length
    FLOPs  = for every token in the step: 2 x its matmul weights + its attention over the tokens
             before it (descent.transformer.flops_per_token)
    time   = max(bytes / memory bandwidth, FLOPs / dense peak FLOP/s)

A step that decodes one token for a few sequences reads the weights for very little arithmetic:
memory-bound. A step that runs a 1,000-token prompt does 1,000 tokens' arithmetic for one read of
the weights: compute-bound. That asymmetry is Part 3's whole subject. The peak is the chip's dense
peak in the precision the matmuls run in (:func:`descent.step.compute_precision`). The step model
itself is :mod:`descent.step`; this module runs requests through it. Both ceilings are upper
bounds on speed: real kernels, launches and communication come on top, so every time here is a
lower bound.

**What is here.**

* :class:`descent.step.StepModel`: one model on one accelerator at given precisions; :meth:`StepModel.step` costs a
  step; :func:`prefill` and :func:`decode_step` are the two plain cases (TTFT, time per token).
* :func:`make_trace` and :func:`simulate`: a seeded request-level simulator of static and
  continuous batching, with chunked prefill (Orca, Yu et al., OSDI 2022; Sarathi-Serve, Agrawal et
  al., OSDI 2024), and the latency metrics (:func:`percentile`, :class:`Metrics`).
* :func:`prefix_cache` and :func:`multi_turn`: what a prefix-cache hit saves.
* :func:`allocate`: contiguous vs paged KV allocation on a trace (PagedAttention, Kwon et al.,
  SOSP 2023) and :func:`shared_blocks` for copy-on-write sharing of a prompt's blocks.
* :func:`kv_transfer`: moving a KV cache between machines (disaggregated serving, offload).
* :func:`speculative`: expected tokens per target pass and speedup (Leviathan et al. 2023).
* :func:`cost_per_million` and :func:`break_even_utilization`: self-hosting against an API.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import math
import random
import re
from bisect import bisect_left, bisect_right
from collections import deque
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache, reduce
from heapq import heappop, heappush
from itertools import accumulate, chain, repeat
from operator import add, truediv

from descent import params as P
from descent.catalog import Accelerator, Link, Model, links
from descent.checks import is_int, is_real
from descent.economics import SECONDS_PER_HOUR, TOKENS_PER_MILLION, usd_per_million_tokens
from descent.numerics import kv_precision
from descent.scenario import Scenario
from descent.step import DeviceStep, StepModel, kv_cache_bytes, model_for
from descent.units import format_bytes, format_int

__all__ = [
    "ALLOC_EXAMPLE",
    "KV_TRANSFER_LINKS",
    "MAX_SIMULATED_TOKENS",
    "Allocation",
    "Metrics",
    "Occupancy",
    "Pass",
    "PrefixSaving",
    "Simulation",
    "Speculation",
    "TraceRequest",
    "alloc_pool_tokens",
    "allocate",
    "backlog",
    "break_even_utilization",
    "cost_per_million",
    "decode_step",
    "make_trace",
    "metrics",
    "multi_turn",
    "passes",
    "percentile",
    "prefill",
    "prefix_cache",
    "run",
    "server",
    "shared_blocks",
    "simulate",
    "speculative",
    "steady_throughput",
    "trace_summary",
    "kv_transfer",
    "block_tables",
]



def server(model: str | Model, accelerator: str | Accelerator, weights: str = Scenario.weights, kv: str = Scenario.kv) -> StepModel:
    """The step model's one-device closed forms (:class:`descent.step.StepModel`) for a model on a
    chip at given precisions, the rest of the scenario at its defaults (cached).

    Raises:
        ValueError: an unknown model, accelerator or precision (the message lists the allowed values).
    """
    return model_for(Scenario(model=model, accelerator=accelerator, weights=weights, kv=kv))


def prefill(s: StepModel, prompt_tokens: int, cached_tokens: int = 0) -> DeviceStep:
    """The step that reads a prompt of ``prompt_tokens`` tokens in one pass (``cached_tokens`` of
    them already in the cache from a prefix hit). Its time is the time to first token with no
    queue. Raises ValueError for a length out of range or a cached part longer than the prompt."""
    P.PROMPT_TOKENS.check(prompt_tokens)
    if not 0 <= cached_tokens <= prompt_tokens - 1:
        raise ValueError(f"cached tokens must be 0 to {format_int(prompt_tokens - 1)} "
                         f"(the last prompt token is always run), got {cached_tokens!r}")
    return s.step(prefill_spans=[(cached_tokens, prompt_tokens)])


def decode_step(s: StepModel, batch: int, context: int) -> DeviceStep:
    """One decode step of ``batch`` sequences, each with ``context`` tokens cached: its time is the
    time per output token (ITL) each of them sees. Raises ValueError for a batch or context out of range."""
    P.BATCH.check(batch)
    P.CONTEXT.check(context)
    return s.uniform_decode(batch, context)


@dataclass(frozen=True)
class Pass:
    """One forward pass of one request, by token positions (0-based, the prompt's first is 0).

    Attributes:
        run: the positions the pass runs through every layer (it computes their keys and values).
        read: the positions whose keys and values it reads from the KV cache instead.
        new: the positions whose keys and values enter the cache for the first time.
    """

    run: range
    read: range
    new: range


def passes(prompt_tokens: int, output_tokens: int, cache: bool) -> list[Pass]:
    """The forward passes that write a reply of ``output_tokens`` tokens to a prompt of
    ``prompt_tokens``, with or without a KV cache: one pass per output token (the prefill gives the
    first; the last token is written but never fed back, so its keys and values are never computed).

    With the cache, the prefill runs the prompt's positions and each later pass runs only the newest
    token, reading the rest: ``prompt + output - 1`` token-processings in all, linear in the length.
    Without it, pass p (1-based) runs all ``prompt + p - 1`` positions again: ``output x prompt +
    output (output - 1) / 2`` in all, quadratic in the reply's length (the same passes
    ``widgets.part3.prefill_decode`` times with its cache off).

    Raises:
        ParamError: a length out of its declared range (:data:`descent.params.PROMPT_TOKENS`,
            :data:`descent.params.OUTPUT_TOKENS`).
    """
    P.PROMPT_TOKENS.check(prompt_tokens)
    P.OUTPUT_TOKENS.check(output_tokens)
    out = []
    for p in range(1, output_tokens + 1):
        end = prompt_tokens + p - 1  # positions fed so far: the prompt and p - 1 reply tokens
        first_new = 0 if p == 1 else end - 1
        if cache:
            out.append(Pass(run=range(first_new, end), read=range(0, first_new), new=range(first_new, end)))
        else:
            out.append(Pass(run=range(0, end), read=range(0, 0), new=range(first_new, end)))
    return out


# ---------------------------------------------------------------------------------------------
# A trace of requests
# ---------------------------------------------------------------------------------------------

#: A drawn length is cut off at this multiple of its mean: an exponential draw keeps the long tail
#: of real traces (most replies short, a few very long) without a request the size of a book.
LENGTH_CUTOFF = 8


@dataclass(frozen=True)
class TraceRequest:
    """One request of a trace: an id, its arrival time (s), prompt and reply lengths (tokens)."""

    id: int
    arrival: float
    prompt: int
    output: int



def _length(rng: random.Random, mean: int) -> int:
    return max(1, min(LENGTH_CUTOFF * mean, round(rng.expovariate(1.0 / mean))))


def make_trace(requests: int, rate: float, prompt_mean: int, output_mean: int, seed: int) -> tuple[TraceRequest, ...]:
    """A seeded trace: ``requests`` arrivals of a Poisson process at ``rate`` requests/s (exponential
    gaps), each with a prompt and a reply length drawn from an exponential distribution with the
    given mean, rounded, at least 1 and cut off at ``LENGTH_CUTOFF`` x the mean.

    The same arguments give the same trace in CPython and in Pyodide (``random.Random(seed)``); it
    is drawn once and kept for the next few asks (the batching widget asks for it four times a run).

    Raises:
        ParamError: an argument out of its declared range (descent.params).
    """
    P.REQUESTS.check(requests)
    rate = P.ARRIVAL_RATE.check(rate)
    P.PROMPT_MEAN.check(prompt_mean)
    P.OUTPUT_MEAN.check(output_mean)
    P.SEED.check(seed)
    return _draw_trace(requests, rate, prompt_mean, output_mean, seed)


@lru_cache(maxsize=8)
def _draw_trace(requests: int, rate: float, prompt_mean: int, output_mean: int, seed: int) -> tuple[TraceRequest, ...]:
    rng = random.Random(seed)
    t, out = 0.0, []
    for i in range(requests):
        t += rng.expovariate(rate)
        out.append(TraceRequest(i, t, _length(rng, prompt_mean), _length(rng, output_mean)))
    return tuple(out)


def trace_summary(trace) -> dict[str, float]:
    """Facts of a trace (:func:`make_trace`): ``duration_s`` (first to last arrival, s),
    ``mean_prompt`` and ``mean_reply`` (tokens, unrounded), ``longest_prompt``, ``longest_reply``,
    ``shortest_reply`` and ``output_tokens`` (the replies' sum), tokens.

    Raises:
        ValueError: an empty trace.
    """
    if not trace:
        raise ValueError("a trace needs at least one request")
    n = len(trace)
    return {
        "duration_s": trace[-1].arrival - trace[0].arrival,
        "mean_prompt": sum(r.prompt for r in trace) / n,
        "mean_reply": sum(r.output for r in trace) / n,
        "longest_prompt": max(r.prompt for r in trace),
        "longest_reply": max(r.output for r in trace),
        "shortest_reply": min(r.output for r in trace),
        "output_tokens": sum(r.output for r in trace),
    }


# ---------------------------------------------------------------------------------------------
# The batching simulator
# ---------------------------------------------------------------------------------------------

#: Most output tokens one simulation may produce, and most sequence-steps (one sequence handled in
#: one step) it may run: guards that keep a browser call within seconds. A larger trace gets a
#: message, not a truncated answer.
MAX_SIMULATED_TOKENS = 400_000
MAX_SIMULATED_WORK = 4_000_000

#: Most steps that read prompt pieces one simulation may need, estimated before it runs (issue 24:
#: a chunked-prefill budget of 3 tokens ran 86,000 costed steps, seconds in CPython and tens of
#: seconds in the browser, before any answer). Each such step is costed one by one (about 12 us
#: in CPython), and a widget runs two simulations: 4,000 keeps both well within 300 ms.
MAX_PREFILL_STEPS = 4_000


def chunk_floor(trace) -> int:
    """The smallest chunked-prefill budget :func:`simulate` takes for ``trace`` (tokens): each step
    reads at most ``chunk`` prompt tokens, so the prompts need at least sum(prompts) / chunk
    steps, and that estimate must stay within :data:`MAX_PREFILL_STEPS`. (0, no chunking, is
    always taken.)"""
    return max(1, math.ceil(sum(r.prompt for r in trace) / MAX_PREFILL_STEPS))


def check_chunk(trace, chunk: int, most: int = P.CHUNK.max) -> None:
    """Refuse, before any step runs, a chunked-prefill budget too small for ``trace`` to simulate
    quickly (:func:`chunk_floor`); ``most``: the largest budget the caller offers.

    Raises:
        ParamError: field ``chunk``, with the budgets allowed for this trace.
    """
    floor = chunk_floor(trace)
    if chunk == 0 or chunk >= floor:
        return
    prompts = sum(r.prompt for r in trace)
    allowed = (f"0 (no chunking) or {format_int(floor)} to {format_int(most)} tokens" if floor <= most
               else "0 (no chunking)")
    raise P.ParamError(P.CHUNK.name, (
        f"{P.CHUNK.label} must be {allowed} for this trace: its {format_int(prompts)} prompt tokens at "
        f"{format_int(chunk)} a step need more than {format_int(MAX_PREFILL_STEPS)} steps, too many to "
        f"simulate here; got {format_int(chunk)}"))


@dataclass(eq=False, slots=True)  # compared and hashed by identity
class _Seq:
    """A request in a slot. Once its prompt is read it writes one token at every step until its
    last, so its tokens appear at the ends of consecutive steps: ``first`` and ``last`` are the
    indices of those steps (-1 while its prompt is being read)."""

    req: TraceRequest
    slot: int
    admitted: float
    prefilled: int = 0
    first: int = -1
    last: int = -1


@dataclass(frozen=True)
class Occupancy:
    """One request's stay in a slot, seconds: admitted, first token, last token, slot freed."""

    slot: int
    request: int
    admitted: float
    first_token: float
    finished: float
    released: float


@dataclass(slots=True, unsafe_hash=True)  # not frozen: made for every run (a frozen one is slow to make); never changed
class StepRun:
    """Steps that :func:`simulate` ran one after another with the same sequences decoding.

    Attributes:
        start: when the first started, s.
        steps: how many.
        decoding: how many sequences decoded in each (every one wrote a token at every step; a
            prompt that ends in a run's one step is not counted: that token is its first).
        seconds: each step's time (the step model's floats), or None for a line:
        line: ``(first, growth, bandwidth)``: step ``j`` reads ``first + growth * j`` bytes
            (:meth:`descent.step.StepModel.decode_line`) and takes that over ``bandwidth``. The run
            is then kept in O(1) however long it is, and its clock in closed form (:meth:`offset`).
    """

    start: float
    steps: int
    decoding: int
    seconds: tuple[float, ...] | None = None
    line: tuple[float, float, float] | None = None

    def bytes(self) -> list[float]:
        """A line's bytes read at each step: ``first + growth x j``, each added to the last (the same
        floats: a line is kept only where every such sum is exact, StepModel.decode_line), without a
        Python step per value."""
        first, growth, _ = self.line
        return list(accumulate(repeat(growth, self.steps - 1), initial=first))

    def values(self) -> tuple[float, ...] | list[float]:
        """Each step's time, s: a line's bytes over its bandwidth."""
        if self.seconds is not None:
            return self.seconds
        return list(map(truediv, self.bytes(), repeat(self.line[2])))

    def offset(self, j: int) -> float:
        """A line's time from its start to the end of its step ``j`` (0-based), s: the bytes of
        steps 0 to j added exactly, over the bandwidth."""
        first, growth, bandwidth = self.line
        num, den = first.as_integer_ratio()
        return ((j + 1) * num + int(growth) * den * (j * (j + 1) // 2)) / den / bandwidth

    def ends(self) -> list[float]:
        """When each step ended, s."""
        if self.seconds is not None:
            return list(accumulate(self.seconds, initial=self.start))[1:]
        return [self.start + self.offset(j) for j in range(self.steps)]


def _line_run(now: float, decoding: int, line: tuple[float, float], bandwidth: float, limit: int,
              wake: float) -> tuple[StepRun, float]:
    """:func:`simulate`'s decode-only steps as a line: ``limit`` steps from ``now``, or fewer,
    ending with the first step that ends at or after ``wake``; and the run's length, s
    (:meth:`StepRun.offset` of its last step)."""
    run = StepRun(now, limit, decoding, None, (*line, bandwidth))
    took = run.offset(limit - 1)
    if wake < math.inf and now + took >= wake:
        # The first step j with now + offset(j) >= wake. Steps 0 to j read m first + growth m (m - 1) / 2
        # bytes, m = j + 1: they reach need = (wake - now) x bandwidth where half m^2 + (first - half) m
        # = need, half = growth / 2. x is that quadratic's positive root (written as 2 need / (b +
        # sqrt(...)), which loses no digits when b is large), in floats; j is then moved by the exact
        # test until it is the first step that passes it (what a search of every step would find).
        first, growth = line
        half, need = growth / 2, (wake - now) * bandwidth
        b = first - half
        x = need / first if half == 0 else 2 * need / (b + math.sqrt(b * b + 4 * half * need))
        j = min(max(math.ceil(x) - 1, 0), limit - 1)
        while j > 0 and now + run.offset(j - 1) >= wake:
            j -= 1
        while now + run.offset(j) < wake:
            j += 1
        run = StepRun(now, j + 1, decoding, None, run.line)
        took = run.offset(j)
    return run, took


@dataclass(frozen=True)
class Simulation:
    """What :func:`simulate` returns.

    Attributes:
        policy, slots, chunk: the settings.
        trace: the requests, in arrival order.
        occupancy: every request's stay in its slot (:class:`Occupancy`), in admission order.
        steps: number of steps run.
        busy_seconds: total time spent running steps.
        kv_peak: the most KV-cache bytes reserved at once.
        kv_capacity: bytes available for the KV cache.
        compute_bound_steps: steps whose time the compute ceiling set.
        runs: every step, as :class:`StepRun` s in order: each step's seconds once, not each
            token's time (a long run of decode steps is one entry; :func:`metrics` reads these).
    The times of every step and every token (:attr:`step_ends`, :attr:`token_times`) are written
    out from ``runs`` when first asked for.
    """

    policy: str
    slots: int
    chunk: int
    trace: tuple[TraceRequest, ...]
    occupancy: tuple[Occupancy, ...]
    steps: int
    busy_seconds: float
    kv_peak: float
    kv_capacity: float
    compute_bound_steps: int
    runs: tuple[StepRun, ...] = ()

    @cached_property
    def step_ends(self) -> tuple[float, ...]:
        """When each step ended, s, in order: each run's start plus its steps' seconds one by one
        (the same floats as adding every step's time to the clock as it runs)."""
        return tuple(chain.from_iterable(r.ends() for r in self.runs))

    @cached_property
    def token_times(self) -> tuple[tuple[float, ...], ...]:
        """For each request (by id), the time each of its output tokens appeared, s: a reply is
        written at consecutive steps, from its first token's step to its last's."""
        ends = self.step_ends
        out = {}
        for o in self.occupancy:
            first = bisect_left(ends, o.first_token)
            out[o.request] = ends[first:first + self.trace_by_id[o.request].output]
        return tuple(out[i] for i in sorted(out))

    @cached_property
    def trace_by_id(self) -> dict[int, TraceRequest]:
        """The requests by id."""
        return {r.id: r for r in self.trace}


def simulate(trace, s: StepModel, policy: str = "continuous", slots: int = 32, chunk: int = 0) -> Simulation:
    """Serve ``trace`` on ``s`` with static or continuous batching; every step costed by :meth:`StepModel.step`.

    The loop, once per step:

    1. *Admit*: a waiting request that has arrived takes a free slot if its whole KV cache
       (prompt + reply) fits in what is left. Continuous batching admits at every step; static
       batching only when the whole previous batch has finished.
    2. *Plan*: every admitted sequence past its prompt decodes one token; prompts that are not yet
       read take the rest of the step: whole, or, with a ``chunk`` budget, as many tokens as the
       budget leaves after the decodes (chunked prefill).
    3. *Run*: the step takes :meth:`StepModel.step`'s time; each decoding sequence gets a token, and a
       prompt whose last piece ran gets its first token (the last position's logits). Steps that
       only decode repeat the same plan until a sequence finishes or (continuous) a request that
       fits arrives; the code costs such a run at once (:meth:`StepModel.decode_steps`, the same
       floats as one step at a time).
    4. *Retire*: a sequence with all its tokens leaves and frees its KV cache; in static batching
       its slot stays empty until the batch drains.

    The KV cache of a request is reserved whole at admission (the simulator knows the reply's
    length; a real engine allocates as the reply grows and preempts a sequence when memory runs
    out), so the reserved bytes never exceed the capacity.

    Args:
        trace: :class:`TraceRequest` s (any order; served first come, first served).
        s: the :class:`descent.step.StepModel`.
        policy: ``"static"`` or ``"continuous"``.
        slots: most sequences in a step (a serving engine's max batch size), 1 to 100,000.
        chunk: the chunked-prefill token budget per step, or 0 for none.

    Raises:
        ValueError: a bad setting; a request without a prompt or a reply of 1 token or more; the
            weights leave no room for a KV cache; one request's KV
            cache is larger than the whole room; the trace asks for more than
            ``MAX_SIMULATED_TOKENS`` output tokens or ``MAX_SIMULATED_WORK`` sequence-steps.
        ParamError: (field ``chunk``) a chunk budget so small that the prompts need more than
            :data:`MAX_PREFILL_STEPS` steps (:func:`check_chunk`), refused before any step runs.
    """
    P.POLICY.check(policy)
    P.BATCH.check(slots)
    P.CHUNK.check(chunk)
    trace = tuple(sorted(trace, key=lambda r: (r.arrival, r.id)))
    if not trace:
        raise ValueError("the trace must hold at least one request")
    # (a plain int is checked without a call: the trace is read again at every change of a widget)
    short = next((r for r in trace if not ((type(r.prompt) is int or is_int(r.prompt))
                                           and (type(r.output) is int or is_int(r.output))
                                           and r.prompt >= 1 and r.output >= 1)), None)
    if short is not None:
        raise ValueError(f"request {short.id} has a prompt of {short.prompt!r} and a reply of {short.output!r} "
                         "tokens: each must be a whole number, 1 or more")
    check_chunk(trace, chunk)
    total = sum(r.output for r in trace)
    if total > MAX_SIMULATED_TOKENS:
        raise ValueError(f"the trace asks for {format_int(total)} output tokens; the simulator stops at "
                         f"{format_int(MAX_SIMULATED_TOKENS)}: use fewer requests or shorter replies")
    if s.kv_capacity <= 0:
        raise ValueError(f"{s.model.name}'s weights leave no memory for a KV cache on one {s.accelerator.name}")
    need = {r.id: s.kv_bytes(r.prompt + r.output) for r in trace}
    worst = max(trace, key=lambda r: need[r.id])
    if need[worst.id] > s.kv_capacity:
        raise ValueError(f"request {worst.id} ({format_int(worst.prompt + worst.output)} tokens) needs "
                         f"{format_bytes(need[worst.id], 'GB')} of KV cache; only "
                         f"{format_bytes(s.kv_capacity, 'GB')} is left after the weights")

    queue, done, runs = deque(trace), [], []
    run_end = {}  # step index -> when it ended, for the last step of each run (every first and last token's)
    # `running`: the admitted sequences (dicts here keep their order and remove in O(1)). Of them,
    # `decoding` are past their prompt and still writing, `reading` still have prompt to read; both
    # oldest first (the prompt budget goes in admission order, so the sequences still reading are
    # the newest). `lasts`: a heap of the decoding sequences' last steps; their contexts add up to
    # `base` + their number x `steps`. `free`: the free slots, smallest first (a heap).
    running, decoding, reading, free, lasts = {}, {}, deque(), list(range(slots)), []
    now = busy = kv_used = kv_peak = 0.0
    steps = compute_bound = work = base = order = 0
    while queue or running:
        # 1. Admit.
        if (policy == "continuous" or not running) and queue and queue[0].arrival <= now:
            while queue and queue[0].arrival <= now and free and kv_used + need[queue[0].id] <= s.kv_capacity:
                r = queue.popleft()
                q = _Seq(r, heappop(free), now)
                running[q] = None
                reading.append(q)
                kv_used += need[r.id]
            kv_peak = max(kv_peak, kv_used)
        if not running:
            now = queue[0].arrival  # nothing to do until the next request arrives
            continue
        # 2. Plan: one token per decoding sequence, then prompt pieces within the budget.
        n = len(decoding)
        budget = chunk - n if chunk else math.inf
        spans = []
        for q in reading:
            if budget <= 0:
                break
            k = min(q.req.prompt - q.prefilled, budget)
            spans.append((q, q.prefilled, q.prefilled + k))
            budget -= k
        # 3. Run. A step with prompt pieces runs alone. Steps that only decode repeat the same plan
        #    until a sequence writes its last token or (continuous) a request that fits arrives:
        #    they are costed together, each exactly as StepModel.step costs it, and kept as a line
        #    (StepRun) where the step model gives one.
        bound = 0
        if spans or not decoding:
            pieces = [(a, b) for _, a, b in spans]
            # The decoding sequences' contexts add up to base + n x steps: the step model costs them
            # from that sum where it is exact, else from each context.
            got = s.step_time_sum(n, base + n * steps, pieces)
            took, compute = got if got is not None else s.step_time(
                [q.req.prompt + steps - q.first - 1 for q in decoding], pieces)
            run = StepRun(now, 1, n, (took,))
            bound = int(compute)
        else:
            limit = lasts[0][0] + 1 - steps  # steps until one of them is done
            fits = policy == "continuous" and queue and len(running) < slots and \
                kv_used + need[queue[0].id] <= s.kv_capacity
            wake = queue[0].arrival if fits else math.inf
            line = s.decode_line(n, base + n * steps, limit)
            if line is not None:
                run, took = _line_run(now, n, line, s.bandwidth, limit, wake)
            else:
                contexts = [q.req.prompt + steps - q.first - 1 for q in decoding]  # tokens in each cache
                seconds, bound = _decode_run(s, contexts, limit, now, wake)
                run = StepRun(now, len(seconds), n, tuple(seconds))
        work += len(running) * run.steps
        if work > MAX_SIMULATED_WORK:
            raise ValueError(f"this trace needs more than {format_int(MAX_SIMULATED_WORK)} sequence-steps; the "
                             "simulator stops there: use fewer requests, shorter prompts or a larger chunk budget")
        runs.append(run)
        if run.seconds is None:  # a line: `took` is its length
            now += took
            busy += took
        else:
            now = reduce(add, run.seconds, now)  # the clock after each step in turn
            busy = reduce(add, run.seconds, busy)
        steps += run.steps
        run_end[steps - 1] = now
        compute_bound += bound
        for q, _, b in spans:
            q.prefilled = b
            if b == q.req.prompt:  # its first token, from the prompt's last position
                q.first, q.last = steps - 1, steps - 2 + q.req.output
                decoding[reading.popleft()] = None  # q: the pieces run oldest first
                heappush(lasts, (q.last, order, q))
                order += 1
                base += q.req.prompt - q.first - 1
        # 4. Retire.
        if lasts and lasts[0][0] < steps:
            finished = []
            while lasts and lasts[0][0] < steps:
                q = heappop(lasts)[2]
                finished.append(q)
                del decoding[q]
                base -= q.req.prompt - q.first - 1
            if policy == "static":  # the batch leaves together, once all of it is done
                finished = [] if decoding or reading else list(running)
            for q in finished:
                kv_used -= need[q.req.id]
                done.append((q, now))
                heappush(free, q.slot)
                del running[q]

    # A sequence's first token ends a step with its prompt's last piece (a run of one step) and its
    # last ends the run that stops at it: both are ends of runs.
    occupancy = tuple(
        Occupancy(q.slot, q.req.id, q.admitted, run_end[q.first], run_end[q.last], released)
        for q, released in sorted(done, key=lambda x: (x[0].admitted, x[0].slot))
    )
    return Simulation(
        policy=policy, slots=slots, chunk=chunk, trace=trace, occupancy=occupancy, steps=steps,
        busy_seconds=busy, kv_peak=kv_peak, kv_capacity=s.kv_capacity, compute_bound_steps=compute_bound,
        runs=tuple(runs),
    )


def _decode_run(s: StepModel, contexts: list[int], limit: int, now: float, wake: float) -> tuple[list[float], int]:
    """:func:`simulate`'s decode-only steps: up to ``limit`` steps of the sequences at ``contexts``
    starting at time ``now``, ending early after the first step that ends at or after ``wake``.
    Returns each step's seconds and how many were compute-bound, as ``StepModel.step`` says."""
    seconds, bound = [], 0
    while len(seconds) < limit:
        done = len(seconds)
        n = limit - done
        ctx = [c + done for c in contexts] if done else contexts
        shortest = s.step_weight_bytes(len(ctx)) / s.bandwidth  # every step reads the weights
        if wake < math.inf and shortest > 0:
            n = min(n, math.ceil((wake - now) / shortest) + 1)  # enough steps to reach wake
        got, compute = s.decode_steps(ctx, n)
        if wake < math.inf:
            stamps = list(accumulate(got, initial=now))
            first = bisect_left(stamps, wake, 1)  # stamps[0] is now < wake
            if first <= n:
                got, compute = s.decode_steps(ctx, first) if compute else (got[:first], 0)
                limit = done + first
            now = stamps[len(got)]
        seconds += got
        bound += compute
    return seconds, bound


def percentile(values, q: float) -> float:
    """The ``q``-th percentile (0 to 100) of ``values``, interpolated linearly between the two
    nearest ranks (Hyndman & Fan 1996, definition 7; NumPy's default ``method="linear"``).

    Raises:
        ValueError: no values, a non-finite value, or ``q`` outside 0 to 100.
    """
    return _percentiles(values, (q,))[0]


def _percentiles(values, qs) -> list[float]:
    """:func:`percentile` of ``values`` at each of ``qs``, sorting once (the same floats)."""
    xs = sorted(values)
    if not xs:
        raise ValueError("percentile of no values")
    if not all(map(math.isfinite, xs)):
        raise ValueError("percentile: every value must be a finite number")
    return [_ranked_percentile(xs.__getitem__, len(xs), q) for q in qs]


def _ranked_percentile(ranked, n: int, q: float) -> float:
    """:func:`percentile`'s interpolation, given ``ranked(r)``, the r-th smallest of ``n`` values."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be 0 to 100, got {q!r}")
    h = (n - 1) * q / 100
    lo = math.floor(h)
    hi = min(lo + 1, n - 1)
    return ranked(lo) + (h - lo) * (ranked(hi) - ranked(lo))


def _itl_percentiles(runs, qs) -> list[float]:
    """The percentiles ``qs`` of every gap between two tokens of one reply, from :class:`StepRun` s:
    a reply writes a token at every step from its first to its last, so the gap before each of its
    later tokens is that step's time, and a step's time is counted once for each sequence that
    decoded in it (0.0 for both when no reply has two tokens).

    The steps of a line (:attr:`StepRun.line`) are ranked by their bytes and divided by the
    bandwidth only where two are compared: the same order and the same floats as writing every
    step's time out (division keeps order), without dividing tens of thousands of them (a batch of
    one serves each reply alone: a line of hundreds of steps per request)."""
    counted = [r for r in runs if r.decoding]
    gaps = sum(r.steps * r.decoding for r in counted)
    if not gaps:
        return [0.0] * len(qs)
    widths = {r.line[2] for r in counted if r.line is not None}
    bandwidth = widths.pop() if len(widths) == 1 else None
    lines = [r for r in counted if bandwidth is not None and r.line is not None]
    others = [r for r in counted if bandwidth is None or r.line is None]
    # Two sorted lists, each with its running count of gaps and what turns an item into seconds: the
    # lines' bytes (over the bandwidth) and the other steps' seconds (over 1.0: exact, unchanged).
    ranked_lists = (
        (*_sorted_with_counts([(r.bytes(), r.decoding) for r in lines]), bandwidth),
        (*_sorted_with_counts([(r.values(), r.decoding) for r in others]), 1.0),
    )

    def at_most(x: float) -> int:
        """How many gaps are no longer than ``x`` seconds."""
        n = 0
        for xs, below, divisor in ranked_lists:
            # The items whose time is at most x are a prefix: its end is found from x's bytes, then
            # moved item by item to where the division (what values() does) says it ends.
            i = bisect_right(xs, x * divisor) if xs else 0
            while i < len(xs) and xs[i] / divisor <= x:
                i += 1
            while i and xs[i - 1] / divisor > x:
                i -= 1
            if below is None:  # each item is one gap
                n += i
            elif i:
                n += below[i - 1]
        return n

    @cache
    def ranked(k: int) -> float:
        """The k-th smallest gap (from 0): the least step time with more than k gaps up to it. Each
        list is searched for its first item that has; the smaller of the two is the answer."""
        best = math.inf
        for xs, _, divisor in ranked_lists:
            # bisect over the items' places with a test that is False, then True from that item on
            first = bisect_left(range(len(xs)), True, key=lambda i: at_most(xs[i] / divisor) > k)
            if first < len(xs):
                best = min(best, xs[first] / divisor)
        return best

    return [_ranked_percentile(ranked, gaps, q) for q in qs]


def _sorted_with_counts(parts) -> tuple[list[float], list[int] | None]:
    """``parts``: ``[(values, weight)]``, each value standing for ``weight`` gaps. Returns the values
    sorted and ``below``, the gaps up to and including each one in that order. ``below`` is None when
    each value was written out once per gap instead (when that makes the list at most twice as
    long): an index is then already a count."""
    steps = sum(len(v) for v, _ in parts)
    total = sum(len(v) * w for v, w in parts)
    if total <= 2 * steps:
        return sorted(chain.from_iterable(v * w for v, w in parts)), None
    xs = list(chain.from_iterable(v for v, _ in parts))
    order = sorted(range(len(xs)), key=xs.__getitem__)
    counts = list(chain.from_iterable(repeat(w, len(v)) for v, w in parts))
    return list(map(xs.__getitem__, order)), list(accumulate(map(counts.__getitem__, order)))


@dataclass(frozen=True)
class Metrics:
    """What users feel and what the operator counts, from one :class:`Simulation`. Units: s, tokens/s.

    Attributes:
        throughput_tokens_per_s: output tokens / (last token's time - first arrival).
        latency_p50_s, latency_p99_s: end-to-end latency (arrival to last token), median and 99th percentile.
        ttft_p50_s, ttft_p99_s: time to first token (arrival to first token, queueing included).
        itl_p50_s, itl_p99_s: inter-token latency, over every gap between two tokens of one reply
            (each gap is the time of the step that wrote the later token, the step model's float).
        slot_utilization: time slots held a request being served / (slots x time spent running steps).
        goodput_tokens_per_s: output tokens/s counting only requests whose TTFT and mean ITL met the targets.
        met_targets: share of requests that met both targets.
        duration_s: first arrival to last token.
        tpot_mean_s: time per output token as vLLM's benchmark defines it (TPOT): for each request
            of two tokens or more, (last token's time - first token's time) / (tokens - 1), averaged
            over those requests. Not the median of ``itl_p50_s``: that is over every gap, so a long
            reply weighs more and one long stall counts once.
    """

    throughput_tokens_per_s: float
    latency_p50_s: float
    latency_p99_s: float
    ttft_p50_s: float
    ttft_p99_s: float
    itl_p50_s: float
    itl_p99_s: float
    slot_utilization: float
    goodput_tokens_per_s: float
    met_targets: float
    duration_s: float
    tpot_mean_s: float


def metrics(sim: Simulation, ttft_target: float = 1.0, itl_target: float = 0.05) -> Metrics:
    """The latency and throughput numbers of a simulation.

    Definitions: TTFT and ITL as in vLLM's and DistServe's benchmarks; *goodput* counts only the
    output of requests that met both targets (TTFT within ``ttft_target`` seconds and a mean gap
    between tokens within ``itl_target``), per second. DistServe (Zhong et al., OSDI 2024,
    arXiv:2401.09670, section 2) defines it as the highest request rate at which a chosen share of
    requests meets its targets; this is the same count at one rate.

    Raises:
        ParamError: a target out of range.
    """
    ttft_target = P.TTFT_TARGET.check(ttft_target)
    itl_target = P.ITL_TARGET.check(itl_target)
    ttft, e2e, good, tpots = [], [], 0, []
    good_tokens = 0
    by_id = sim.trace_by_id
    for o in sorted(sim.occupancy, key=lambda o: o.request):  # by request id
        r = by_id[o.request]
        t0, n = r.arrival, r.output
        ttft.append(o.first_token - t0)
        e2e.append(o.finished - t0)
        # The mean of a reply's gaps is its span over its gaps (the sum of the gaps telescopes).
        mean_gap = (o.finished - o.first_token) / (n - 1) if n > 1 else 0.0
        if n > 1:
            tpots.append(mean_gap)
        if o.first_token - t0 <= ttft_target and mean_gap <= itl_target:
            good += 1
            good_tokens += n
    start = min(r.arrival for r in sim.trace)
    end = max(o.finished for o in sim.occupancy)
    duration = end - start
    tokens = sum(r.output for r in sim.trace)
    held = sum(o.finished - o.admitted for o in sim.occupancy)
    latency = _percentiles(e2e, (50, 99))
    first = _percentiles(ttft, (50, 99))
    itl = _itl_percentiles(sim.runs, (50, 99))
    return Metrics(
        throughput_tokens_per_s=tokens / duration if duration > 0 else 0.0,
        latency_p50_s=latency[0],
        latency_p99_s=latency[1],
        ttft_p50_s=first[0],
        ttft_p99_s=first[1],
        itl_p50_s=itl[0],
        itl_p99_s=itl[1],
        slot_utilization=held / (sim.slots * sim.busy_seconds) if sim.busy_seconds > 0 else 0.0,
        goodput_tokens_per_s=good_tokens / duration if duration > 0 else 0.0,
        met_targets=good / len(sim.trace),
        duration_s=duration,
        tpot_mean_s=sum(tpots) / len(tpots) if tpots else 0.0,
    )


@lru_cache(maxsize=32)
def run(model: str, accelerator: str, weights: str, kv: str, policy: str, requests: int, rate: float,
        prompt_mean: int, output_mean: int, batch: int, chunk: int, seed: int) -> Simulation:
    """:func:`simulate` on :func:`make_trace`'s trace, cached by its arguments (pages and the CLI
    ask for the same run more than once). ``batch`` is the number of slots. Raises as those two."""
    return simulate(make_trace(requests, rate, prompt_mean, output_mean, seed),
                    server(model, accelerator, weights, kv), policy, batch, chunk)


# ---------------------------------------------------------------------------------------------
# Steady state and the price of a token
# ---------------------------------------------------------------------------------------------


def steady_throughput(s: StepModel, batch: int, prompt_tokens: int, output_tokens: int) -> float:
    """Output tokens/s of one accelerator kept full: ``batch`` requests at a time, each with a
    ``prompt_tokens`` prompt and an ``output_tokens`` reply. One round: every prompt's prefill plus
    ``output_tokens`` decode steps of the whole batch at the mean context (prompt + half the reply).

        throughput = batch x output / (batch x prefill(prompt) + output x step(batch, context))

    Raises:
        ValueError: an argument out of range (descent.params).
    """
    P.BATCH.check(batch)
    P.OUTPUT_TOKENS.check(output_tokens)
    pre = prefill(s, prompt_tokens).seconds
    context = prompt_tokens + output_tokens // 2
    P.CONTEXT.check(context)
    step = decode_step(s, batch, context).seconds
    return batch * output_tokens / (batch * pre + output_tokens * step)


def cost_per_million(gpu_price: float, tokens_per_s: float, utilization: float) -> float:
    """Dollars per million output tokens of an accelerator that costs ``gpu_price`` $/hour, makes
    ``tokens_per_s`` at full load and is at full load a ``utilization`` share of its hours:

        cost = gpu_price / (3600 x tokens_per_s x utilization) x 1,000,000

    Raises:
        ValueError: a price or utilization out of range, or a rate that is not a positive number.
    """
    gpu_price = P.GPU_PRICE.check(gpu_price)
    utilization = P.UTILIZATION.check(utilization)
    _positive(tokens_per_s, "tokens per second")
    return usd_per_million_tokens(tokens_per_s * utilization, 1, gpu_price)


def api_bill_per_million_output(api_price: float, api_input_price: float, prompt_tokens: int,
                                output_tokens: int) -> float:
    """What an API bills per million output tokens once each request's prompt is paid for too, $:

        p = api_price + api_input_price x prompt_tokens / output_tokens

    The same unit as :func:`cost_per_million` (dollars per million output tokens), so the two compare.

    Raises:
        ValueError: a price or token count out of range.
    """
    api_price = P.API_PRICE.check(api_price)
    api_input_price = P.API_INPUT_PRICE.check(api_input_price)
    prompt_tokens = P.PROMPT_TOKENS.check(prompt_tokens)
    output_tokens = P.OUTPUT_TOKENS.check(output_tokens)
    return api_price + api_input_price * prompt_tokens / output_tokens


def break_even_utilization(api_price: float, gpu_price: float, tokens_per_s: float) -> float:
    """The utilization at which self-hosting costs what the API charges: solve
    ``cost_per_million(gpu_price, tokens_per_s, u) = api_price`` for u, where ``api_price`` is the
    API's whole bill per million output tokens (:func:`api_bill_per_million_output`: prompts included):

        u* = gpu_price x 1,000,000 / (3600 x tokens_per_s x api_price)

    Above u* the accelerator is cheaper; a value above 1 means it never is (it would have to be
    busier than all the time).

    Raises:
        ValueError: a price out of range, or a rate that is not a positive number.
    """
    api_price = P.API_PRICE.check(api_price)
    gpu_price = P.GPU_PRICE.check(gpu_price)
    _positive(tokens_per_s, "tokens per second")
    return gpu_price * TOKENS_PER_MILLION / (SECONDS_PER_HOUR * tokens_per_s * api_price)


def _positive(x, what: str) -> float:
    if not is_real(x) or not math.isfinite(x) or x <= 0:
        raise ValueError(f"{what} must be a positive number, got {x!r}")
    return float(x)


# ---------------------------------------------------------------------------------------------
# Prefix caching
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrefixSaving:
    """What a prefix cache saves on one request. Units: tokens, seconds, FLOP.

    Attributes:
        prompt_tokens: the whole prompt (shared prefix + the rest).
        ttft_miss_s: prefill time with nothing cached.
        ttft_hit_s: prefill time when the prefix is cached (only the rest runs).
        ttft_expected_s: ``hit_rate x hit + (1 - hit_rate) x miss``.
        flops_saved: share of prefill FLOPs a hit saves (0 to 1).
        flops_saved_expected: ``hit_rate x flops_saved``.
    """

    prompt_tokens: int
    ttft_miss_s: float
    ttft_hit_s: float
    ttft_expected_s: float
    flops_saved: float
    flops_saved_expected: float


def prefix_cache(s: StepModel, prefix_tokens: int, prompt_tokens: int, hit_rate: float) -> PrefixSaving:
    """A prompt whose first ``prefix_tokens`` tokens are shared by many requests (a system prompt)
    and cached with probability ``hit_rate``. A hit skips the prefix's prefill; the rest of the
    prompt still attends to it (the attention FLOPs over the cached part remain). The engine keeps
    cached prefixes in a radix tree of token blocks (SGLang's RadixAttention, Zheng et al. 2024,
    arXiv:2312.07104, section 3) or a hash of each full block (vLLM's automatic prefix caching).

    Raises:
        ValueError: a length out of range, a prefix not shorter than the prompt, a bad hit rate.
    """
    P.PREFIX_TOKENS.check(prefix_tokens)
    P.PROMPT_TOKENS.check(prompt_tokens)
    hit_rate = P.HIT_RATE.check(hit_rate)
    if prefix_tokens >= prompt_tokens:
        raise P.ParamError("prefix_tokens", f"Shared prefix must be shorter than the prompt ({format_int(prompt_tokens)} "
                           f"tokens), got {format_int(prefix_tokens)}")
    miss, hit = prefill(s, prompt_tokens), prefill(s, prompt_tokens, prefix_tokens)
    saved = 1 - hit.flops / miss.flops
    return PrefixSaving(prompt_tokens, miss.seconds, hit.seconds,
                        hit_rate * hit.seconds + (1 - hit_rate) * miss.seconds, saved, hit_rate * saved)


def multi_turn(s: StepModel, turns: int, prefix_tokens: int, user_tokens: int, reply_tokens: int) -> list[dict]:
    """A chat of ``turns`` rounds: each round sends the whole conversation again (a system prompt
    of ``prefix_tokens``, every earlier question and reply, the new question of ``user_tokens``).
    Without a cache each round prefills all of it; with one, only the new question: the earlier
    rounds' keys and values are kept, and the system prompt, shared by every chat, is already cached.

    Returns:
        One dict per turn: ``turn``, ``prompt_tokens``, ``ttft_no_cache_s``, ``ttft_cached_s``,
        and the running sums ``prefill_tokens_no_cache``, ``prefill_tokens_cached``.

    Raises:
        ValueError: an argument out of range, or a conversation longer than the context limit.
    """
    P.TURNS.check(turns)
    P.PREFIX_TOKENS.check(prefix_tokens)
    P.PROMPT_TOKENS.check(user_tokens)
    P.OUTPUT_TOKENS.check(reply_tokens)
    rows, done_no, done_yes = [], 0, 0
    history = prefix_tokens
    for t in range(1, turns + 1):
        prompt = history + user_tokens
        P.PROMPT_TOKENS.check(prompt)
        done_no += prompt
        done_yes += prompt - history
        rows.append({
            "turn": t,
            "prompt_tokens": prompt,
            "ttft_no_cache_s": prefill(s, prompt).seconds,
            "ttft_cached_s": prefill(s, prompt, history).seconds,
            "prefill_tokens_no_cache": done_no,
            "prefill_tokens_cached": done_yes,
        })
        history = prompt + reply_tokens
    return rows


# ---------------------------------------------------------------------------------------------
# The KV allocator: contiguous reservation vs paged blocks
# ---------------------------------------------------------------------------------------------

#: Cell states of :func:`allocate`'s memory map, one per block.
BLOCK_STATES = ("used", "reserved", "waste", "hole", "free")


@dataclass(frozen=True)
class Allocation:
    """What :func:`allocate` returns. Units: tokens (one token's KV slot), blocks, steps.

    Attributes:
        allocator, block_size, pool_tokens: the settings.
        blocks: the memory map at the snapshot step, one state per block (``BLOCK_STATES``):
            ``used`` holds at least one token now; ``reserved`` is reserved for tokens the reply
            will still produce; ``waste`` is reserved but will never be used (the reply ends
            first); ``hole`` is free but in a gap too small for the next request; ``free``.
        owners: the request id in each block (-1 when free), same length as ``blocks``.
        snapshot_step: the step the map shows.
        token_share: mean over the steps with a queue waiting of (tokens held / pool): the share of
            the KV pool that holds real tokens while requests wait.
        internal_share, reserved_share, external_share: the same means for token slots that are
            reserved-never-used (contiguous) or unused at the end of a last block (paged),
            reserved-for-later, and free-but-unusable.
        mean_running: mean number of sequences running over those steps.
        steps: steps until the trace is served.
        preempted: times a paged sequence was evicted to make room (and queued again).
    """

    allocator: str
    block_size: int
    pool_tokens: int
    blocks: tuple[str, ...]
    owners: tuple[int, ...]
    snapshot_step: int
    token_share: float
    internal_share: float
    reserved_share: float
    external_share: float
    mean_running: float
    steps: int
    preempted: int


def allocate(lengths, pool_tokens: int, allocator: str, block_size: int, reserve_tokens: int,
             snapshot_step: int | None = None) -> Allocation:
    """Serve requests from a backlog, one token per running sequence per step, under one of two
    KV allocators, and measure where the memory goes (Kwon et al., "Efficient Memory Management for
    Large Language Model Serving with PagedAttention", SOSP 2023, sections 3 and 4.2).

    * ``contiguous``: at admission, one run of consecutive blocks big enough for the prompt plus
      the longest reply allowed (``reserve_tokens``, the request's max_tokens), first fit.
    * ``paged``: blocks of ``block_size`` tokens handed out one at a time as a sequence grows,
      anywhere in the pool; a block table maps each sequence's blocks.

    Requests wait in arrival order; the first one that cannot be placed blocks the rest. When a
    paged sequence needs a block and none is free, the sequence admitted last is preempted: its
    blocks are freed and it waits first in line to be recomputed (vLLM's default, section 4.5).

    Args:
        lengths: ``(prompt, output)`` token counts, in arrival order (output <= reserve_tokens).
        pool_tokens: KV slots in the pool (a multiple of ``block_size``).
        allocator: ``"contiguous"`` or ``"paged"``.
        block_size: tokens per block.
        reserve_tokens: the reply limit a contiguous allocator reserves for.
        snapshot_step: the step whose memory map ``blocks`` shows (default: half-way through the
            steps that have a queue).

    Raises:
        ValueError: bad settings, a reply longer than ``reserve_tokens``, a request that can never fit.
    """
    P.ALLOCATOR.check(allocator)
    P.BLOCK_SIZE.check(block_size)
    P.RESERVE_TOKENS.check(reserve_tokens)
    if pool_tokens % block_size or pool_tokens <= 0:
        raise ValueError(f"the pool ({format_int(pool_tokens)} tokens) must be a positive multiple of the block size")
    nblocks = pool_tokens // block_size
    reqs = [(i, p, o) for i, (p, o) in enumerate(lengths)]
    for i, p, o in reqs:
        if o > reserve_tokens:
            raise ValueError(f"request {i} writes {format_int(o)} tokens, more than the reply limit "
                             f"{format_int(reserve_tokens)}")
        if -(-(p + reserve_tokens) // block_size) > nblocks:
            raise ValueError(f"request {i} ({format_int(p)} prompt tokens + {format_int(reserve_tokens)} reserved) "
                             f"cannot fit in a pool of {format_int(pool_tokens)} tokens")

    def blocks_for(tokens: int) -> int:
        return -(-tokens // block_size)

    final = {i: p + o for i, p, o in reqs}  # request id -> its length when done

    def serve(stop: int | None):
        """Serve the backlog. Returns the sums of the counts (used, reserved, waste, hole tokens,
        running) over the steps that have a queue, their number, the steps and the preemptions;
        with ``stop``, instead, ``(step, states, owners)`` at the stop-th step that has a queue
        (the map is drawn for one step only, by running the backlog again up to it)."""
        owner = [-1] * nblocks          # request id per block
        free = bytearray(b"\x01") * nblocks  # 1 where owner is -1: first fit and counts at C speed
        table: dict[int, list[int]] = {}  # request id -> its blocks, in order
        length: dict[int, int] = {}       # request id -> tokens held now
        queue = deque((i, p, p + o) for i, p, o in reqs)  # (request, tokens it holds on admission, final length)
        sums, records, step, preempted = [0] * 5, 0, 0, 0
        changes, holes_at = 0, {}  # the map's changes so far; hole blocks by (changes, need)

        def take(blocks: list[int], i: int) -> None:
            nonlocal changes
            changes += 1
            for b in blocks:
                owner[b], free[b] = i, 0

        def release(blocks: list[int]) -> None:
            nonlocal changes
            changes += 1
            for b in blocks:
                owner[b], free[b] = -1, 1

        def admit() -> None:
            while queue:
                i, p, _final = queue[0]
                if allocator == "contiguous":
                    n = blocks_for(p + reserve_tokens)
                    start = free.find(b"\x01" * n)  # first fit: the first run of n free blocks
                    if start < 0:
                        return
                    got = list(range(start, start + n))
                else:
                    if free.count(1) < blocks_for(p + 1):  # room for the prompt and the first new token
                        return
                    got, b = [], -1
                    for _ in range(blocks_for(p)):  # the first free blocks, in order
                        b = free.find(1, b + 1)
                        got.append(b)
                queue.popleft()
                take(got, i)
                table[i], length[i] = got, p

        def counts() -> tuple[int, int, int, int, int]:
            """used, reserved, waste, hole tokens and running sequences now (a queue is waiting)."""
            used = sum(length.values())
            held = (nblocks - free.count(1)) * block_size
            if allocator == "paged":
                return used, 0, held - used, 0, len(table)
            planned = sum(map(final.__getitem__, table))
            need = blocks_for(queue[0][1] + reserve_tokens)  # free runs shorter than this are holes
            holes = holes_at.get((changes, need))
            if holes is None:
                holes = holes_at[changes, need] = sum(n for n in map(len, _FREE_RUN.findall(free)) if n < need)
            return used, planned - used, held - planned, holes * block_size, len(table)

        def memory_map() -> list[str]:
            states = ["free"] * nblocks
            for i, blocks in table.items():
                now, last = length[i], final[i]
                for k, b in enumerate(blocks):
                    lo = k * block_size  # tokens before this block, in this sequence
                    if lo < now:
                        states[b] = "used"
                    elif lo < last:
                        states[b] = "reserved"
                    else:
                        states[b] = "waste"
            need = blocks_for(queue[0][1] + reserve_tokens) if queue and allocator == "contiguous" else 0
            run_start = None
            for b in range(nblocks + 1):
                if b < nblocks and owner[b] == -1:
                    run_start = b if run_start is None else run_start
                    continue
                if run_start is not None:
                    if b - run_start < need:
                        for h in range(run_start, b):
                            states[h] = "hole"
                    run_start = None
            return states

        def grow(i: int) -> None:
            """Paged: sequence ``i`` needs one more block; with none free, preempt the sequence admitted
            last (vLLM's default: free its blocks and queue it first again, to recompute its tokens)."""
            nonlocal preempted
            while True:
                b = free.find(1)
                if b >= 0:
                    take([b], i)
                    table[i].append(b)
                    return
                victim = next(reversed(table))
                release(table.pop(victim))
                queue.appendleft((victim, length.pop(victim), final[victim]))
                preempted += 1
                if victim == i:
                    return

        admit()
        while table or queue:
            if queue:
                if records == stop:
                    return step, memory_map(), list(owner)
                sums = list(map(add, sums, counts()))
                records += 1
            # One step: every running sequence gets one token (in admission order).
            for i in list(table):
                if i not in table:  # preempted earlier in this step
                    continue
                length[i] += 1
                if length[i] == final[i]:  # its last token: done (that token's keys are never read)
                    release(table.pop(i))
                    del length[i]
                elif allocator == "paged" and length[i] > len(table[i]) * block_size:
                    grow(i)
            step += 1
            admit()
            if not table and queue:
                raise ValueError(f"request {queue[0][0]} cannot be admitted into an empty pool")
        return sums, records, step, preempted

    (used, reserved, waste, hole, running), n, steps, preempted = serve(None)
    if n:
        pick = n // 2 if snapshot_step is None else min(max(snapshot_step, 0), n - 1)
        snap_step, snap_states, snap_owner = serve(pick)
    else:  # the backlog fitted at once: measure the first step
        n, snap_step, snap_states, snap_owner = 1, 0, ["free"] * nblocks, [-1] * nblocks
    return Allocation(
        allocator=allocator, block_size=block_size, pool_tokens=pool_tokens,
        blocks=tuple(snap_states), owners=tuple(snap_owner), snapshot_step=snap_step,
        token_share=used / (n * pool_tokens),
        internal_share=waste / (n * pool_tokens),
        reserved_share=reserved / (n * pool_tokens),
        external_share=hole / (n * pool_tokens),
        mean_running=running / n,
        steps=steps,
        preempted=preempted,
    )


#: A run of free blocks in :func:`allocate`'s map of the pool (1 free, 0 taken).
_FREE_RUN = re.compile(b"\x01+")


#: The allocator example of Part 3 (page and widget): a KV pool of ``pool`` token slots and a
#: backlog of ``requests`` requests with these mean prompt and reply lengths (tokens), drawn by
#: :func:`make_trace` (its arrival times do not matter: every request waits from the start).
ALLOC_EXAMPLE = {"pool": 4096, "requests": 120, "prompt_mean": 120, "output_mean": 60, "rate": 1.0}


def alloc_pool_tokens(block_size: int) -> int:
    """The allocator example's KV pool in token slots, cut down to whole blocks of ``block_size``
    (:data:`ALLOC_EXAMPLE`'s ``pool``). Raises ParamError for a bad block size."""
    P.BLOCK_SIZE.check(block_size)
    return ALLOC_EXAMPLE["pool"] // block_size * block_size


def backlog(seed: int, reserve_tokens: int) -> list[tuple[int, int]]:
    """The allocator example's requests as ``(prompt, reply)`` tokens; a reply stops at
    ``reserve_tokens`` (the request's max_tokens), as an engine stops it. Raises ParamError for a
    bad seed or limit."""
    P.RESERVE_TOKENS.check(reserve_tokens)
    e = ALLOC_EXAMPLE
    trace = make_trace(e["requests"], e["rate"], e["prompt_mean"], e["output_mean"], seed)
    return [(r.prompt, min(r.output, reserve_tokens)) for r in trace]


def shared_blocks(prompt_tokens: int, output_tokens: int, samples: int, block_size: int) -> dict:
    """Blocks for ``samples`` replies drawn from one prompt, without and with sharing.

    Without sharing every sample holds its own copy of the prompt. With PagedAttention's sharing
    the prompt's full blocks are stored once (a reference count per block); the last, partly filled
    prompt block is copied for a sample when it first writes into it (copy-on-write, Kwon et al.
    2023, section 4.4), and every sample's reply has its own blocks.

    Returns:
        ``{"separate": blocks, "shared": blocks, "saved": share of blocks saved}``.

    Raises:
        ValueError: an argument out of range.
    """
    P.PROMPT_TOKENS.check(prompt_tokens)
    P.OUTPUT_TOKENS.check(output_tokens)
    P.SAMPLES.check(samples)
    P.BLOCK_SIZE.check(block_size)
    full, rest = divmod(prompt_tokens, block_size)
    separate = samples * -(-(prompt_tokens + output_tokens) // block_size)
    # Each sample: its copy of the partial block (if any) continued by its reply.
    own = -(-(rest + output_tokens) // block_size)
    shared = full + samples * own
    return {"separate": separate, "shared": shared, "saved": 1 - shared / separate}


def block_tables(prompt_tokens: int, output_tokens: int, samples: int, block_size: int) -> list[list[int]]:
    """Each sample's block table under :func:`shared_blocks`' sharing: the physical block (from 0)
    behind each of its logical blocks, in order.

    The prompt's full blocks are allocated first and shared by every sample (the same physical
    numbers in every table). Then the samples grow in step, one token each per decode step, so their
    own blocks (the copied partial prompt block, then the reply's) are allocated in turn and
    interleave in memory: a sequence's blocks need not be next to each other. The number of distinct
    physical blocks is ``shared_blocks(...)["shared"]``.

    Raises:
        ValueError: an argument out of range (as :func:`shared_blocks`).
    """
    counts = shared_blocks(prompt_tokens, output_tokens, samples, block_size)
    full, rest = divmod(prompt_tokens, block_size)
    own = -(-(rest + output_tokens) // block_size)
    tables = [list(range(full)) for _ in range(samples)]
    nxt = full
    for _ in range(own):
        for t in tables:
            t.append(nxt)
            nxt += 1
    assert nxt == counts["shared"]
    return tables


# ---------------------------------------------------------------------------------------------
# Moving a KV cache: disaggregation and offload
# ---------------------------------------------------------------------------------------------


#: The catalog links (``links.toml``) :func:`kv_transfer` compares, besides the chip's own
#: scale-up link: a network port to another machine, PCIe to CPU memory, an SSD.
KV_TRANSFER_LINKS = ("ib-ndr", "pcie5", "nvme-ssd")


def kv_transfer(model: str, accelerator: str, kv: str, context: int) -> list[tuple[Link, float, float]]:
    """Time to move one sequence's KV cache at ``context`` tokens over each link.

    The scale-up link is the accelerator's own (catalog ``scale_up_bandwidth``, both directions
    added, so half of it one way); the others are :data:`KV_TRANSFER_LINKS` of the catalog. Disaggregated serving (DistServe,
    Zhong et al. 2024; Splitwise, Patel et al. 2024; Mooncake, Qin et al. 2024) sends the cache from
    the prefill machine to the decode machine; offloading parks it in CPU memory or on an SSD.

    Returns:
        ``[(link, bytes, seconds), ...]``, fastest link first.

    Raises:
        ValueError: unknown ids or precision, a context out of range.
    """
    sc = Scenario(model=model, accelerator=accelerator, kv=kv, context=context)
    m, a = sc.model_row, sc.chip
    nbytes = kv_cache_bytes(m, kv_precision(kv), context, 1)
    paths = [x for x in links().values() if x.id in KV_TRANSFER_LINKS]
    if a.scale_up_bandwidth:
        paths.insert(0, Link(f"{a.id}-scale-up", f"{a.scale_up_name} (one direction)", a.scale_up_bandwidth / 2,
                             "scale-up", 0, 0.0, 0.0,
                             {"default": f"{a.name} datasheet: {format_bytes(a.scale_up_bandwidth, 'GB')}/s, both directions"}))
    return [(x, nbytes, nbytes / x.bytes_per_s) for x in sorted(paths, key=lambda x: -x.bytes_per_s)]


# ---------------------------------------------------------------------------------------------
# Speculative decoding
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding's gain (Leviathan, Kalman & Matias, "Fast Inference from Transformers
    via Speculative Decoding", ICML 2023, arXiv:2211.17192, section 3).

    Attributes:
        expected_tokens: tokens one target pass yields on average, the accepted drafts plus the one
            the target adds: (1 - a^(k+1)) / (1 - a) (their equation 1); k + 1 when a = 1.
        speedup: expected_tokens / (1 + k c): the walltime improvement of their theorem 3.8, with
            one target pass plus k draft steps per round. Below 1 it slows decoding down.
        acceptance, draft_length, draft_cost: the inputs a, k, c.
    """

    expected_tokens: float
    speedup: float
    acceptance: float
    draft_length: int
    draft_cost: float


def speculative(acceptance: float, draft_length: int, draft_cost: float) -> Speculation:
    """Expected tokens per target pass and the speedup for acceptance rate ``a``, draft length ``k``
    and draft cost ``c`` (a draft step's time over a target step's), assuming each drafted token is
    accepted independently with probability a and the target checks k + 1 positions in one pass
    for the time of one step (decode is memory-bound, so the extra positions are nearly free).

    Raises:
        ParamError: a outside 0 to 1, k outside 1 to 64, c negative or above 10 (descent.params).
    """
    a = P.ACCEPTANCE.check(acceptance)
    k = P.DRAFT_LENGTH.check(draft_length)
    c = P.DRAFT_COST.check(draft_cost)
    expected = float(k + 1) if a == 1.0 else (1 - a ** (k + 1)) / (1 - a)
    return Speculation(expected, expected / (1 + k * c), a, k, c)
