"""descent.serving: the step model, the batching simulator and its invariants, prefix caching, the
KV allocator, transfers, speculative decoding and the break-even.

Expected values are worked out by hand from the catalog (comments say how), computed by the exact
functions the step model condenses (descent.transformer, descent.hardware), or taken from an
independent implementation (numpy.percentile).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import types
from collections import deque
from itertools import chain

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from descent import catalog, hardware, serving, step, transformer
from descent import params as P
from descent.params import ParamError

SETTINGS = settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def llama():
    return serving.server("llama-3.1-70b", "h200", "fp8", "bf16")


# -- the step model ---------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["llama-3.1-70b", "gemma-3-27b", "gpt-oss-20b", "mistral-7b-v0.1", "deepseek-v3",
                                   "llama-4-scout", "qwen3-next-80b-a3b"])
@pytest.mark.parametrize("kv", ["bf16", "fp8"])
def test_closed_forms_equal_the_exact_functions(model, kv):
    # The step model's per-sequence KV bytes and summed attention FLOPs (linear up to the window or
    # chunk, another slope beyond; a chunked layer's attention restarting every chunk; a hybrid's
    # fixed state) must equal descent.transformer's layer-by-layer sums, windows included.
    s = serving.server(model, "b200", "fp8", kv)
    m = catalog.model(model)
    w = m.sliding.window if m.sliding else m.chunked.chunk if m.chunked else 4096
    bits = {"bf16": 16, "fp8": 8}[kv]
    for t in (1, 2, w - 1, w, w + 1, 3 * w + 7):
        assert s.kv_bytes(t) == pytest.approx(transformer.kv_cache_bytes(m, t, bits), rel=1e-12)
    for start, end in ((w - 5, w + 9), (0, 3), (2 * w - 2, 3 * w + 1)):
        exact = sum(transformer.attention_flops_per_token(m, t) for t in range(start + 1, end + 1))
        assert s._attn.sum(start, end) == pytest.approx(exact, rel=1e-12)
    pre = s.step(prefill_spans=[(start, end)])
    by_token = sum(transformer.flops_per_token(m, t) for t in range(start + 1, end + 1))
    assert pre.flops == pytest.approx(by_token, rel=1e-12)


def test_prefill_of_llama_70b_on_h200_by_hand(llama):
    m = catalog.model("llama-3.1-70b")
    # 2 FLOP per matmul weight per token x 1,000 tokens, plus attention: token t attends to t
    # tokens, 4 x 64 heads x 128 dims x 80 layers = 2,621,440 FLOP per attended token, summed over
    # t = 1..1000 (500,500 attended tokens in all). Peak: H200 dense FP8, 1,978.9e12 FLOP/s.
    flops = 2 * transformer.matmul_params_per_token(m) * 1000 + 2_621_440 * 500_500
    pre = serving.prefill(llama, 1000)
    assert pre.flops == flops
    assert pre.bound == "compute"
    assert pre.seconds == pytest.approx(flops / 1978.9e12, rel=1e-12)


@pytest.mark.parametrize("model", ["llama-3.1-70b", "mixtral-8x7b", "gpt-oss-120b"])
@pytest.mark.parametrize("batch", [1, 4])
def test_decode_memory_time_is_the_hardware_ceiling(model, batch):
    # A decode step reads what descent.hardware says it reads: weights (experts touched) and every KV cache.
    s = serving.server(model, "b200", "fp8", "bf16")
    step = serving.decode_step(s, batch, 4096)
    ceiling = hardware.decode_ceiling(model, "b200", "fp8", "bf16", 4096, batch)
    assert step.memory_seconds == pytest.approx(ceiling.step_seconds, rel=1e-12)
    assert step.bound == "memory"


def test_compute_roof_binds_at_a_huge_batch(llama):
    # Issue 8's case: Llama 3.1 70B FP8 on an H200, context 128, batch 1,024: the FP8 peak allows at
    # most 1.9789e15 / (2 x ~70e9 matmul weights) ~ 14,000 tokens/s, so the step is compute-bound.
    step = serving.decode_step(llama, 1024, 128)
    assert step.bound == "compute"
    assert 1024 / step.seconds < 1978.9e12 / llama.matmul_flops < 14_300


def test_compute_precision():
    assert step.compute_precision("llama-3.1-70b", "h200", "fp8") == "fp8"
    assert step.compute_precision("llama-3.1-70b", "h200", "mxfp4") == "bf16"  # Hopper has no FP4 peak
    assert step.compute_precision("llama-3.1-70b", "b200", "mxfp4") == "fp4"
    assert step.compute_precision("llama-3.1-70b", "rtx-5090", "q4_k_m") == "bf16"  # weight-only format: widened to BF16


def test_server_rejects_bad_ids():
    with pytest.raises(ParamError, match="Model must be one of"):
        serving.server("gpt-5", "h200")
    with pytest.raises(ParamError, match="Accelerator must be one of"):
        serving.server("llama-3.1-8b", "tpu-v9")


# -- traces -----------------------------------------------------------------------------------


def test_trace_is_seeded_and_bounded():
    a = serving.make_trace(300, 5.0, 400, 100, 7)
    assert a == serving.make_trace(300, 5.0, 400, 100, 7)
    assert a != serving.make_trace(300, 5.0, 400, 100, 8)
    assert [r.id for r in a] == list(range(300))
    assert all(x.arrival < y.arrival for x, y in zip(a, a[1:], strict=False))
    assert all(1 <= r.prompt <= 8 * 400 and 1 <= r.output <= 8 * 100 for r in a)
    # Exponential draws: the sample means land near the requested means (300 draws; 15% is > 2.5 sd).
    assert sum(r.prompt for r in a) / 300 == pytest.approx(400, rel=0.15)
    assert 300 / a[-1].arrival == pytest.approx(5.0, rel=0.15)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"requests": 0}, "Requests must be 1 to 5,000 requests, got 0"),
    ({"rate": -1.0}, "Arrival rate must be 0.01 to 10,000 requests/s"),
    ({"rate": math.nan}, "Arrival rate must be a number"),
    ({"prompt_mean": 0}, "Mean prompt must be 1 to 100,000 tokens"),
])
def test_trace_bad_input_gets_a_message(kwargs, message):
    args = {"requests": 10, "rate": 1.0, "prompt_mean": 100, "output_mean": 10, "seed": 0} | kwargs
    with pytest.raises(ParamError, match=message):
        serving.make_trace(**args)


# -- the simulator: invariants ----------------------------------------------------------------


def _check_invariants(sim: serving.Simulation) -> None:
    trace = {r.id: r for r in sim.trace}
    # No request lost, every token produced exactly once, in order.
    assert len(sim.token_times) == len(trace) == len(sim.occupancy)
    for rid, times in enumerate(sim.token_times):
        assert len(times) == trace[rid].output
        assert all(a < b for a, b in zip(times, times[1:], strict=False))
        assert times[0] > trace[rid].arrival
    # The KV cache never above capacity.
    assert 0 < sim.kv_peak <= sim.kv_capacity
    # A slot holds one request at a time; never more requests than slots.
    by_slot = {}
    for o in sim.occupancy:
        assert 0 <= o.slot < sim.slots
        assert o.admitted <= o.first_token <= o.finished <= o.released
        by_slot.setdefault(o.slot, []).append(o)
    for stays in by_slot.values():
        stays.sort(key=lambda o: o.admitted)
        assert all(a.released <= b.admitted for a, b in zip(stays, stays[1:], strict=False))
    if sim.policy == "static":
        # A new batch only when the whole previous one has left.
        for o in sim.occupancy:
            for p in sim.occupancy:
                if p.admitted < o.admitted:
                    assert p.released <= o.admitted


traces = st.builds(
    serving.make_trace,
    requests=st.integers(1, 40),
    rate=st.floats(0.05, 2000.0),
    prompt_mean=st.integers(1, 3000),
    output_mean=st.integers(1, 200),
    seed=st.integers(0, 2**32 - 1),
)
servers = st.sampled_from([("llama-3.1-70b", "h200"), ("smollm2-135m", "rtx-5090"), ("gpt-oss-120b", "h200"),
                           ("gemma-3-27b", "mi300x")])


@SETTINGS
@given(trace=traces, where=servers, policy=st.sampled_from(["static", "continuous"]), slots=st.integers(1, 48),
       chunk=st.sampled_from([0, 1, 7, 256, 2048]))
def test_simulator_invariants(trace, where, policy, slots, chunk):
    s = serving.server(*where, "fp8", "bf16")
    if 0 < chunk < serving.chunk_floor(trace):  # refused up front (test_a_tiny_chunk_budget_...)
        with pytest.raises(ParamError):
            serving.simulate(trace, s, policy, slots, chunk)
        return
    _check_invariants(serving.simulate(trace, s, policy, slots, chunk))


@pytest.mark.parametrize("chunk", [1, 2, 3, 4, 40])
def test_a_tiny_chunk_budget_is_refused_before_it_runs(chunk, monkeypatch):
    # Issue 24: budgets 3 and 4 ran for seconds (tens in the browser); 1 and 2 for 1.5 s before
    # refusing with a message attached to no field. Now: at once, under the chunk field, with the
    # budgets allowed for this trace.

    trace = serving.make_trace(200, 4.0, 1000, 250, P.SEED.default)  # the batching widget's defaults
    floor = serving.chunk_floor(trace)
    assert floor == math.ceil(sum(r.prompt for r in trace) / serving.MAX_PREFILL_STEPS) == 51
    server = serving.server("llama-3.1-8b", "h200", "bf16", "bf16")
    steps = []  # "at once": before any step is costed (counted, not timed: a clock measures the machine)
    step = type(server).step
    monkeypatch.setattr(type(server), "step", lambda self, *a, **k: steps.append(1) or step(self, *a, **k))
    with pytest.raises(ParamError) as exc:
        serving.simulate(trace, server, "continuous", 32, chunk)
    assert steps == []
    assert exc.value.field == "chunk"
    assert exc.value.message.startswith("Chunked prefill budget must be 0 (no chunking) or 51 to 65,536 tokens")
    assert f"got {chunk}" in exc.value.message


def test_the_smallest_chunk_budget_allowed_runs_quickly(monkeypatch):
    # Quick by construction, counted rather than timed (a clock measures the machine: inside Pyodide
    # on a loaded CI machine this once took 0.58 s of a 0.5 s limit; 0.07 s in CPython here). The
    # simulator costs a step one at a time only when prompt pieces run (StepModel.step_time_sum, or
    # step_time where the contexts' sum is not exact); runs of
    # decode-only steps go at once. chunk_floor sizes the smallest budget so that the prompts alone
    # would need MAX_PREFILL_STEPS steps; decodes share each step's budget, so a few more run (4,355
    # here, against 196 unchunked), but not twice as many.
    trace = serving.make_trace(200, 4.0, 1000, 250, P.SEED.default)
    s = serving.server("llama-3.1-8b", "h200", "bf16", "bf16")
    one_at_a_time = []
    for name in ("_step_parts", "step_time_sum"):  # what step, step_time and step_time_sum cost a step with
        each = getattr(type(s), name)
        monkeypatch.setattr(type(s), name, lambda self, *a, _each=each, **k: one_at_a_time.append(1) or _each(self, *a, **k))
    sim = serving.simulate(trace, s, "continuous", 32, serving.chunk_floor(trace))
    assert len(one_at_a_time) <= 2 * serving.MAX_PREFILL_STEPS
    # ...and the budget is small enough to matter: most of those steps carry prompt pieces.
    assert len(one_at_a_time) > serving.MAX_PREFILL_STEPS / 2 and sim.steps > serving.MAX_PREFILL_STEPS / 2


# -- the simulator's fast paths against the step-by-step reference ----------------------------------


def _reference_step(s, decode_contexts=(), prefill_spans=()):
    """Server.step as first written: every sequence added one by one. The fast paths (closed forms,
    tables, whole runs of decode steps) must give these floats to the last bit."""
    tokens = len(decode_contexts) + sum(e - a for a, e in prefill_spans)
    nbytes = s.step_weight_bytes(tokens)
    flops = 0.0
    for c in decode_contexts:
        nbytes += s.kv_bytes(c)
        flops += s.matmul_flops + s._attn(c + 1)
    for a, e in prefill_spans:
        nbytes += s.kv_bytes(e)
        flops += (e - a) * s.matmul_flops + s._attn.sum(a, e)
    mem, comp = nbytes / s.bandwidth, flops / s.peak
    return step.DeviceStep(tokens, nbytes, flops, mem, comp, max(mem, comp), "compute" if comp > mem else "memory")


@dataclasses.dataclass(eq=False)
class _RefSeq:
    """A request in a slot as simulate first kept it: every token's time in a list."""

    req: serving.TraceRequest
    slot: int
    admitted: float
    prefilled: int = 0
    times: list = dataclasses.field(default_factory=list)

    @property
    def done(self) -> bool:
        return len(self.times) == self.req.output

    @property
    def context(self) -> int:
        return self.req.prompt + len(self.times) - 1


def _reference_simulate(trace, s, policy, slots, chunk):
    """simulate as first written: one loop per step, each costed by _reference_step."""
    trace = tuple(sorted(trace, key=lambda r: (r.arrival, r.id)))
    need = {r.id: s.kv_bytes(r.prompt + r.output) for r in trace}
    queue, running, done, ends = deque(trace), [], [], []
    now = busy = kv_used = kv_peak = 0.0
    steps = compute_bound = 0
    while queue or running:
        if policy == "continuous" or not running:
            free = sorted(set(range(slots)) - {q.slot for q in running})
            while queue and queue[0].arrival <= now and free and kv_used + need[queue[0].id] <= s.kv_capacity:
                r = queue.popleft()
                running.append(_RefSeq(r, free.pop(0), now))
                kv_used += need[r.id]
            kv_peak = max(kv_peak, kv_used)
        if not running:
            now = queue[0].arrival
            continue
        decoding = [q for q in running if q.prefilled == q.req.prompt and not q.done]
        budget = chunk - len(decoding) if chunk else math.inf
        spans = []
        for q in running:
            if q.prefilled < q.req.prompt and budget > 0:
                n = min(q.req.prompt - q.prefilled, budget)
                spans.append((q, q.prefilled, q.prefilled + n))
                budget -= n
        cost = _reference_step(s, [q.context for q in decoding], [(a, b) for _, a, b in spans])
        now += cost.seconds
        busy += cost.seconds
        steps += 1
        compute_bound += cost.bound == "compute"
        ends.append(now)
        for q in decoding:
            q.times.append(now)
        for q, _, b in spans:
            q.prefilled = b
            if b == q.req.prompt:
                q.times.append(now)
        finished = [q for q in running if q.done]
        if policy == "continuous" or len(finished) == len(running):
            for q in finished:
                running.remove(q)
                kv_used -= need[q.req.id]
                done.append((q, now))
    by_id = {q.req.id: q for q, _ in done}
    occupancy = tuple(
        serving.Occupancy(q.slot, q.req.id, q.admitted, q.times[0], q.times[-1], released)
        for q, released in sorted(done, key=lambda x: (x[0].admitted, x[0].slot))
    )
    return types.SimpleNamespace(
        policy=policy, slots=slots, chunk=chunk, trace=trace,
        token_times=tuple(tuple(by_id[r.id].times) for r in sorted(trace, key=lambda r: r.id)),
        occupancy=occupancy, steps=steps, busy_seconds=busy, kv_peak=kv_peak,
        kv_capacity=s.kv_capacity, compute_bound_steps=compute_bound, step_ends=tuple(ends),
    )


#: How far simulate's clock may drift from the reference's: a run of decode steps that the step
#: model gives as a line is timed in closed form (its bytes added exactly, divided once), where the
#: reference adds each step's rounded time to the clock.
CLOCK = 1e-12


def _assert_matches_reference(sim: serving.Simulation, ref) -> None:
    """simulate's result against _reference_simulate's: every decision the same (steps, admissions,
    slots, compute-bound steps, the KV cache), every time the same to CLOCK."""
    same = ("policy", "slots", "chunk", "trace", "steps", "compute_bound_steps", "kv_peak", "kv_capacity")
    assert [getattr(sim, k) for k in same] == [getattr(ref, k) for k in same]
    assert sim.busy_seconds == pytest.approx(ref.busy_seconds, rel=CLOCK)
    assert sim.step_ends == pytest.approx(ref.step_ends, rel=CLOCK)
    assert [len(t) for t in sim.token_times] == [len(t) for t in ref.token_times]
    assert list(chain.from_iterable(sim.token_times)) == pytest.approx(list(chain.from_iterable(ref.token_times)),
                                                                       rel=CLOCK)
    assert [(o.slot, o.request) for o in sim.occupancy] == [(o.slot, o.request) for o in ref.occupancy]
    assert [t for o in sim.occupancy for t in (o.admitted, o.first_token, o.finished, o.released)] == \
        pytest.approx([t for o in ref.occupancy for t in (o.admitted, o.first_token, o.finished, o.released)], rel=CLOCK)


# Dense (whole-number closed form), MoE (fractional weight bytes), sliding windows, chunked
# attention and a linear-attention hybrid (the tables), on a chip where big batches turn compute-bound.
FAST_PATH_MODELS = ["llama-3.1-70b", "mixtral-8x7b", "gpt-oss-120b", "gemma-3-27b", "llama-4-scout",
                    "qwen3-next-80b-a3b", "smollm2-135m"]


@pytest.mark.parametrize("model", FAST_PATH_MODELS)
@pytest.mark.parametrize(("contexts", "steps"), [
    ([1], 1), ([1], 700), ([0, 2, 9], 40), ([5, 300, 7000, 129, 4097, 8193], 300),
    ([100] * 300, 600),  # compute-bound at first, memory-bound once the caches grow
    ([128] * 2000, 3),  # compute-bound
    ([step.DECODE_TABLE_TOKENS - 3, 40_000], 9),  # past the tables
])
def test_decode_steps_equal_steps_one_by_one(model, contexts, steps):
    s = serving.server(model, "h200", "fp8", "bf16")
    seconds, bound = s.decode_steps(contexts, steps)
    ref = [_reference_step(s, [c + j for c in contexts]) for j in range(steps)]
    assert seconds == [r.seconds for r in ref]
    assert bound == sum(r.bound == "compute" for r in ref)
    assert s.step(contexts, [(0, 7), (3, 20)]) == _reference_step(s, contexts, [(0, 7), (3, 20)])
    mixed = _reference_step(s, contexts, [(0, 7), (3, 20)])
    assert s.step_time(contexts, [(0, 7), (3, 20)]) == (mixed.seconds, mixed.bound == "compute")
    # From the contexts' sum (each context 1 or more, as the simulator's): the same pair where the
    # sums are exact, None (step_time's turn) where they might not be.
    if min(contexts) >= 1:
        by_sum = s.step_time_sum(len(contexts), sum(contexts), [(0, 7), (3, 20)])
        assert by_sum in (None, (mixed.seconds, mixed.bound == "compute"))
        assert (by_sum is None) == (s._exact_line(s.step_weight_bytes(len(contexts) + 24), contexts, 1) is None)


@pytest.mark.parametrize("model", FAST_PATH_MODELS)
@pytest.mark.parametrize(("contexts", "steps"), [([1], 700), ([5, 300, 7000, 129, 4097, 8193], 300),
                                                 ([100] * 300, 600), ([128] * 2000, 3)])
def test_decode_line_gives_the_steps_floats(model, contexts, steps):
    # Where decode_line answers, step j's time is (first + growth j) / bandwidth, the same float as
    # step()'s, and StepRun times the run from it; it refuses where decode_steps' closed form does
    # (a window, a chunk, sums past 2**53) and any run that may turn
    # compute-bound (the 300 x 100 run starts compute-bound on H200).
    s = serving.server(model, "h200", "fp8", "bf16")
    ref = [_reference_step(s, [c + j for c in contexts]) for j in range(steps)]
    line = s.decode_line(len(contexts), sum(contexts), steps)
    if line is None:
        exact = s._exact_line(s.step_weight_bytes(len(contexts)), contexts, steps)
        assert exact is None or any(r.bound == "compute" for r in ref)
        return
    assert all(r.bound == "memory" for r in ref)
    run = serving.StepRun(2.5, steps, len(contexts), None, (*line, s.bandwidth))
    assert run.values() == [r.seconds for r in ref]
    clock = list(itertools.accumulate((r.seconds for r in ref), initial=2.5))[1:]
    assert run.ends() == pytest.approx(clock, rel=1e-13)


def test_decode_line_is_refused_where_it_cannot_promise(llama):
    assert llama.decode_line(4, 400, 10) is not None
    assert llama.decode_line(0, 0, 10) is None and llama.decode_line(4, 400, 0) is None
    assert serving.server("gemma-3-27b", "h200", "fp8", "bf16").decode_line(4, 400, 10) is None  # sliding windows
    assert llama.decode_line(2000, 2000 * 128, 3) is None  # compute-bound: 2,000 tokens a step at FP8


def test_decode_steps_without_the_closed_form(llama, monkeypatch):
    # Above the exactness limit the closed form is refused and the tables (or the positions one by
    # one) give the same floats.
    contexts, steps = [100] * 300, 600
    want = [_reference_step(llama, [c + j for c in contexts]).seconds for j in range(steps)]
    monkeypatch.setattr(step, "EXACT_FLOAT_LIMIT", 0)
    assert llama._exact_line(llama.step_weight_bytes(300), contexts, steps) is None
    assert llama.decode_steps(contexts, steps)[0] == want
    monkeypatch.setattr(step, "DECODE_TABLE_TOKENS", 0)
    assert llama.decode_steps(contexts, 3)[0] == want[:3]


def test_decode_steps_bad_input(llama):
    for contexts, steps in (([], 3), ([4, -1], 3), ([4], 0)):
        with pytest.raises(ValueError, match="decode_steps needs"):
            llama.decode_steps(contexts, steps)


@pytest.mark.parametrize(("model", "policy", "slots", "chunk", "rate"), [
    ("llama-3.1-70b", "continuous", 32, 0, 4.0),
    ("llama-3.1-70b", "static", 32, 0, 4.0),
    ("llama-3.1-70b", "continuous", 1, 0, 4.0),
    ("llama-3.1-70b", "continuous", 256, 0, 100.0),
    ("llama-3.1-70b", "continuous", 8, 64, 4.0),
    ("mixtral-8x7b", "continuous", 16, 0, 20.0),
    ("gpt-oss-120b", "static", 7, 0, 2.0),
    ("gemma-3-27b", "continuous", 24, 512, 8.0),
    ("llama-4-scout", "continuous", 12, 0, 0.5),
    ("qwen3-next-80b-a3b", "static", 64, 0, 50.0),
    # The batching widget's extremes: its largest batch, chunked and not, at its highest rate; static and chunked.
    ("llama-3.1-8b", "continuous", 256, 256, 100.0),
    ("llama-3.1-8b", "static", 256, 4096, 100.0),
    ("llama-3.1-70b", "static", 16, 64, 8.0),
])
def test_simulate_equals_the_step_by_step_reference(model, policy, slots, chunk, rate):
    trace = serving.make_trace(60, rate, 300, 80, 3)
    s = serving.server(model, "h200", "fp8", "bf16")
    _assert_matches_reference(serving.simulate(trace, s, policy, slots, chunk),
                              _reference_simulate(trace, s, policy, slots, chunk))


@SETTINGS
@given(trace=traces, where=servers, policy=st.sampled_from(["static", "continuous"]), slots=st.integers(1, 48),
       chunk=st.sampled_from([0, 7, 256, 2048]))
def test_simulate_equals_the_reference_on_any_trace(trace, where, policy, slots, chunk):
    # The loop's bookkeeping (the sequences still reading kept apart, the decoding ones' last steps
    # in a heap, runs of decode steps kept as lines, the free slots in a heap) changes no decision:
    # the reference keeps every token's time in a list and rescans every running sequence at every step.
    if 0 < chunk < serving.chunk_floor(trace):
        return
    s = serving.server(*where, "fp8", "bf16")
    _assert_matches_reference(serving.simulate(trace, s, policy, slots, chunk),
                              _reference_simulate(trace, s, policy, slots, chunk))


def test_kv_capacity_limits_admission():
    # A chip with room for about two of these requests' caches at once: gemma-3-27b in BF16 on one
    # MI300X leaves ~137 GB - 55 GB for the cache; 32k-token requests need ~15 GB each (sliding
    # windows cap most layers), so the peak stays under the capacity while requests queue.
    s = serving.server("llama-3.1-70b", "h200", "fp8", "bf16")
    trace = tuple(serving.TraceRequest(i, 0.001 * i, 60_000, 100) for i in range(6))
    sim = serving.simulate(trace, s, "continuous", 32)
    per = s.kv_bytes(60_100)
    assert 3 * per <= s.kv_capacity < 4 * per  # 65.7 GB of room, 19.7 GB per request: three fit
    assert sim.kv_peak == pytest.approx(3 * per)
    _check_invariants(sim)


dense = st.sampled_from([("llama-3.1-70b", "h200"), ("smollm2-135m", "rtx-5090"), ("gemma-3-27b", "mi300x"),
                         ("qwen3-8b", "b200"), ("mistral-7b-v0.1", "h100-sxm")])

#: How far continuous batching may fall behind static batching on a dense model's trace: a greedy
#: step-by-step scheduler can pair requests unluckily (the worst case found, below, is 0.24%).
ANOMALY = 0.01


@SETTINGS
@given(seed=st.integers(0, 10**6), slots=st.integers(1, 16), rate=st.floats(0.1, 1000.0),
       prompt_mean=st.integers(1, 4000), output_mean=st.integers(16, 200), where=dense,
       chunk=st.sampled_from([0, 256, 2048]), extra=st.integers(0, 24))
def test_continuous_never_worse_than_static_on_throughput(seed, slots, rate, prompt_mean, output_mean, where,
                                                          chunk, extra):
    # Dense models, replies averaging 16 tokens or more, at least twice as many requests as slots, no
    # chunk budget or one of 256 tokens and up: continuous batching is never more than ANOMALY behind
    # (10,000 random traces found no loss at all; hypothesis found the 0.24% case pinned below).
    # Mixture-of-experts models are the real exception (next tests).
    s = serving.server(*where, "fp8", "bf16")
    trace = serving.make_trace(2 * slots + extra, rate, prompt_mean, output_mean, seed)
    static = serving.metrics(serving.simulate(trace, s, "static", slots, chunk))
    continuous = serving.metrics(serving.simulate(trace, s, "continuous", slots, chunk))
    assert continuous.throughput_tokens_per_s >= static.throughput_tokens_per_s * (1 - ANOMALY)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rate", [1.0, 4.0, 16.0])
def test_continuous_beats_static_on_the_pages_workload(seed, rate):
    # The running example's trace family, strictly: no anomaly, and a clear margin once the arrivals
    # keep the chip busy (at 1 request/s both mostly wait for requests).
    kw = dict(model="llama-3.1-70b", accelerator="h200", weights="fp8", kv="bf16", requests=120, rate=rate,
              prompt_mean=1000, output_mean=250, batch=32, chunk=0, seed=seed)
    static = serving.metrics(serving.run(policy="static", **kw)).throughput_tokens_per_s
    continuous = serving.metrics(serving.run(policy="continuous", **kw)).throughput_tokens_per_s
    assert continuous > (1.2 if rate >= 4 else 1.0) * static


def test_a_greedy_scheduling_anomaly_on_a_dense_model():
    # Strict "never worse" is not a theorem of the step model: on this 4-request trace (found by
    # hypothesis, at one byte for every weight) continuous batching pairs the requests differently and
    # ends 0.24% later. INT8: FP8 now keeps the embedding and head in BF16 (descent.weights.KEPT_IN_BF16).
    s = serving.server("gemma-3-27b", "mi300x", "int8", "bf16")
    trace = serving.make_trace(4, 7.0, 1, 71, 0)
    static = serving.metrics(serving.simulate(trace, s, "static", 2)).throughput_tokens_per_s
    continuous = serving.metrics(serving.simulate(trace, s, "continuous", 2)).throughput_tokens_per_s
    assert static * (1 - ANOMALY) < continuous < static


def test_continuous_can_lose_on_a_burst_of_short_moe_requests():
    # The page's aside: gpt-oss-120b (4 of 128 experts per token) on one H200. A step that carries a
    # prompt reads nearly every expert; continuous batching admits newcomers one step at a time and
    # pays that read for each, static batching groups the prompts. Found by a search over seeds.
    e = dict(model="gpt-oss-120b", accelerator="h200", weights="fp8", kv="bf16", requests=8, rate=500.0,
             prompt_mean=300, output_mean=10, batch=4, chunk=0, seed=0)
    static = serving.metrics(serving.run(policy="static", **e)).throughput_tokens_per_s
    continuous = serving.metrics(serving.run(policy="continuous", **e)).throughput_tokens_per_s
    assert continuous < 0.8 * static


def test_a_simulation_is_a_value(llama):
    # Frozen and hashable, its runs too: two runs of one trace are equal and hash alike.
    trace = serving.make_trace(30, 2.0, 500, 50, 3)
    a, b = serving.simulate(trace, llama, "continuous", 4), serving.simulate(trace, llama, "continuous", 4)
    assert a == b and hash(a) == hash(b) and any(r.line is not None for r in a.runs)


def test_one_slot_makes_both_policies_the_same(llama):
    trace = serving.make_trace(30, 2.0, 500, 50, 3)
    a = serving.simulate(trace, llama, "static", 1)
    b = serving.simulate(trace, llama, "continuous", 1)
    assert a.token_times == b.token_times


def test_running_example_numbers(llama):
    # The page's default trace: continuous batching more than doubles static batching's throughput
    # and slot use, and chunked prefill (512 tokens) cuts the p99 inter-token latency below 50 ms.
    kw = dict(model="llama-3.1-70b", accelerator="h200", weights="fp8", kv="bf16", requests=200, rate=4.0,
              prompt_mean=1000, output_mean=250, batch=32, seed=0)
    static = serving.metrics(serving.run(policy="static", chunk=0, **kw))
    cont = serving.metrics(serving.run(policy="continuous", chunk=0, **kw))
    chunked = serving.metrics(serving.run(policy="continuous", chunk=512, **kw))
    assert cont.throughput_tokens_per_s > 2 * static.throughput_tokens_per_s
    assert cont.slot_utilization > 1.5 * static.slot_utilization
    assert chunked.itl_p99_s < 0.05 < cont.itl_p99_s
    # A decode step of one sequence at ~1,250 tokens is ~14.7 ms (70.5 GB of FP8 weights at 4.8 TB/s):
    # the median ITL sits just above it.
    assert 0.0145 < cont.itl_p50_s < 0.02


def test_single_request_metrics_by_hand(llama):
    # One request alone: TTFT is exactly its prefill; each later token one decode step.
    trace = (serving.TraceRequest(0, 0.5, 1000, 3),)
    sim = serving.simulate(trace, llama, "continuous", 8)
    m = serving.metrics(sim)
    pre = serving.prefill(llama, 1000).seconds
    steps = [serving.decode_step(llama, 1, 1000).seconds, serving.decode_step(llama, 1, 1001).seconds]
    assert m.ttft_p50_s == pytest.approx(pre, rel=1e-12)
    assert sim.token_times[0] == pytest.approx((0.5 + pre, 0.5 + pre + steps[0], 0.5 + pre + sum(steps)))
    assert m.latency_p99_s == pytest.approx(pre + sum(steps))
    assert m.slot_utilization == pytest.approx(1 / 8)
    assert m.throughput_tokens_per_s == pytest.approx(3 / (pre + sum(steps)))


def test_simulator_bad_input_gets_a_message(llama):
    trace = serving.make_trace(5, 1.0, 100, 10, 0)
    with pytest.raises(ParamError, match="Batching must be one of: static, continuous"):
        serving.simulate(trace, llama, "greedy")
    with pytest.raises(ParamError, match="Batch must be 1 to 100,000 sequences, got 0"):
        serving.simulate(trace, llama, "static", 0)
    with pytest.raises(ValueError, match="at least one request"):
        serving.simulate((), llama)
    big = serving.make_trace(5000, 1.0, 10, 10_000, 0)
    with pytest.raises(ValueError, match="the simulator stops at 400,000"):
        serving.simulate(big, llama)
    with pytest.raises(ValueError, match="leave no memory for a KV cache"):
        serving.simulate(trace, serving.server("llama-3.1-405b", "h100-sxm", "bf16", "bf16"))
    huge = (serving.TraceRequest(0, 0.0, 900_000, 10),)
    with pytest.raises(ValueError, match="request 0 .* needs .* of KV cache"):
        serving.simulate(huge, llama)
    # A prompt or a reply of no token (only a hand-made trace has one) is refused before any step runs.
    for prompt, output in ((0, 5), (5, 0), (5, 2.5)):
        with pytest.raises(ValueError, match=f"request 1 has a prompt of {prompt!r} and a reply of {output!r} tokens"):
            serving.simulate((serving.TraceRequest(0, 0.0, 10, 3), serving.TraceRequest(1, 0.1, prompt, output)), llama)


@pytest.mark.parametrize("q", [0, 1, 37.5, 50, 90, 99, 100])
def test_percentile_matches_numpy(q):
    np = pytest.importorskip("numpy")
    xs = [0.3, 9.0, 1.5, 2.5, 2.5, 7.25, 0.01]
    assert serving.percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)), rel=1e-12)


def test_percentiles_at_once_equal_percentile_one_by_one():
    xs = [0.3, 9.0, 1.5, 2.5, 2.5, 7.25, 0.01, 4.0]
    qs = (0, 1, 37.5, 50, 99, 100)
    assert serving._percentiles(xs, qs) == [serving.percentile(xs, q) for q in qs]


def _metrics_written_out(sim, ttft_target=1.0, itl_target=0.05) -> dict:
    """Metrics as first written: from every token's time, every gap between two tokens in a list."""
    arrivals = {r.id: r.arrival for r in sim.trace}
    ttft, e2e, gaps, tpots, good, good_tokens = [], [], [], [], 0, 0
    for rid, times in enumerate(sim.token_times):
        ttft.append(times[0] - arrivals[rid])
        e2e.append(times[-1] - arrivals[rid])
        gaps += [b - a for a, b in zip(times, times[1:], strict=False)]
        mean_gap = (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else 0.0
        if len(times) > 1:
            tpots.append(mean_gap)
        if ttft[-1] <= ttft_target and mean_gap <= itl_target:
            good, good_tokens = good + 1, good_tokens + len(times)
    duration = max(t[-1] for t in sim.token_times) - min(arrivals.values())
    tokens = sum(map(len, sim.token_times))
    held = sum(o.finished - o.admitted for o in sim.occupancy)
    itl = [serving.percentile(gaps, q) for q in (50, 99)] if gaps else [0.0, 0.0]
    return dict(
        throughput_tokens_per_s=tokens / duration, latency_p50_s=serving.percentile(e2e, 50),
        latency_p99_s=serving.percentile(e2e, 99), ttft_p50_s=serving.percentile(ttft, 50),
        ttft_p99_s=serving.percentile(ttft, 99), itl_p50_s=itl[0], itl_p99_s=itl[1],
        slot_utilization=held / (sim.slots * sim.busy_seconds), goodput_tokens_per_s=good_tokens / duration,
        met_targets=good / len(sim.token_times), duration_s=duration,
        tpot_mean_s=sum(tpots) / len(tpots) if tpots else 0.0,
    )


@pytest.mark.parametrize(("policy", "slots", "chunk", "rate"), [("continuous", 1, 0, 4.0), ("continuous", 32, 0, 4.0),
                                                                 ("static", 16, 0, 4.0), ("continuous", 8, 64, 4.0),
                                                                 ("continuous", 32, 0, 0.01)])
def test_metrics_equal_metrics_from_every_token(llama, policy, slots, chunk, rate):
    # metrics reads each run of steps once (a reply's gaps are the times of the steps that wrote its
    # later tokens, counted once per sequence decoding in them); written out token by token, every
    # number is the same, the gaps to the rounding of two clock readings subtracted.
    sim = serving.simulate(serving.make_trace(120, rate, 500, 120, 5), llama, policy, slots, chunk)
    assert len(sim.step_ends) == sim.steps
    assert any(r.line is not None for r in sim.runs)  # some runs are lines
    assert dataclasses.asdict(serving.metrics(sim)) == pytest.approx(_metrics_written_out(sim), rel=1e-9)


@pytest.mark.parametrize(("model", "policy", "slots", "chunk", "rate"), [
    ("llama-3.1-70b", "continuous", 1, 0, 4.0),    # each reply alone: long lines of one sequence
    ("llama-3.1-70b", "continuous", 32, 0, 4.0),   # many sequences a step: gaps counted by weight
    ("llama-3.1-70b", "static", 32, 0, 0.01),
    ("llama-3.1-70b", "continuous", 8, 64, 4.0),   # chunked prefill: steps that are not lines
    ("gemma-3-27b", "continuous", 16, 0, 4.0),     # sliding windows: no lines at all
])
def test_itl_percentiles_equal_every_gap_written_out(model, policy, slots, chunk, rate):
    # _itl_percentiles ranks a line's steps by their bytes and divides only where it compares: the
    # same floats, at every percentile, as every gap's step time written out once per sequence and
    # ranked (serving.percentile, NumPy's linear definition).
    s = serving.server(model, "h200", "fp8", "bf16")
    sim = serving.simulate(serving.make_trace(150, rate, 500, 120, 5), s, policy, slots, chunk)
    every = [v for r in sim.runs if r.decoding for v in r.values() for _ in range(r.decoding)]
    qs = (0, 1, 25, 50, 90, 99, 99.9, 100)
    assert serving._itl_percentiles(sim.runs, qs) == [serving.percentile(every, q) for q in qs]
    lines = [r for r in sim.runs if r.line is not None]
    assert bool(lines) == (model != "gemma-3-27b")


def test_a_line_stops_at_the_first_step_that_reaches_the_wake():
    # _line_run finds that step from a quadratic's root, in floats, then moves it by the exact test:
    # it must be the step a search of every step finds, also with the wake exactly at a step's end
    # or one float either side of it (the lines of a real simulation; three wakes around each end).
    sim = serving.simulate(serving.make_trace(60, 4.0, 500, 120, 5), serving.server("llama-3.1-70b", "h200", "fp8", "bf16"),
                           "continuous", 32, 0)
    checked = 0
    for r in sim.runs:
        if r.line is None or r.steps < 3:
            continue
        first, growth, bandwidth = r.line
        for j in (0, 1, r.steps // 2, r.steps - 2):
            end = r.start + r.offset(j)
            for wake in (math.nextafter(end, -math.inf), end, math.nextafter(end, math.inf)):
                run, took = serving._line_run(r.start, r.decoding, (first, growth), bandwidth, r.steps, wake)
                every = next(i for i in range(r.steps) if r.start + r.offset(i) >= wake) + 1
                assert (run.steps, took) == (every, run.offset(every - 1)), (j, wake)
                checked += 1
    assert checked > 100


def test_percentile_rejects_bad_input():
    with pytest.raises(ValueError, match="no values"):
        serving.percentile([], 50)
    with pytest.raises(ValueError, match="0 to 100"):
        serving.percentile([1.0], 101)
    with pytest.raises(ValueError, match="finite"):
        serving.percentile([1.0, math.nan], 50)


# -- prefix caching -----------------------------------------------------------------------------


def test_prefix_cache(llama):
    r = serving.prefix_cache(llama, 2000, 2400, 0.8)
    miss = serving.prefill(llama, 2400)
    hit = serving.prefill(llama, 2400, 2000)
    assert (r.ttft_miss_s, r.ttft_hit_s) == (miss.seconds, hit.seconds)
    assert r.ttft_expected_s == pytest.approx(0.8 * hit.seconds + 0.2 * miss.seconds)
    # A hit runs 400 tokens' matmuls instead of 2,400 but still attends to the prefix, so it saves
    # less than 2,000 / 2,400 of the arithmetic.
    assert 0.7 < r.flops_saved < 2000 / 2400
    assert serving.prefix_cache(llama, 2000, 2400, 0.0).ttft_expected_s == miss.seconds
    with pytest.raises(ParamError, match="Shared prefix must be shorter than the prompt"):
        serving.prefix_cache(llama, 2400, 2400, 0.5)


def test_multi_turn_by_hand(llama):
    # System prompt 2,000, questions 150, replies 300: prompts 2,150, 2,600, 3,050 tokens; without a
    # cache 7,800 tokens are prefilled in all. With one, the system prompt (shared by every chat) and
    # the earlier turns are cached: only the three questions run, 3 x 150 = 450.
    rows = serving.multi_turn(llama, 3, 2000, 150, 300)
    assert [r["prompt_tokens"] for r in rows] == [2150, 2600, 3050]
    assert rows[-1]["prefill_tokens_no_cache"] == 7800
    assert rows[-1]["prefill_tokens_cached"] == 450


# -- the allocator ------------------------------------------------------------------------------


def test_allocators_on_the_example():
    lengths = serving.backlog(0, 512)
    contiguous = serving.allocate(lengths, 4096, "contiguous", 16, 512)
    paged = serving.allocate(lengths, 4096, "paged", 16, 512)
    # The vLLM paper measured 20.4% to 38.2% of reserved KV memory holding tokens before paging and
    # near-zero waste with it: the example lands in the same places.
    assert 0.15 < contiguous.token_share < 0.4
    assert paged.token_share > 0.9
    assert paged.reserved_share == paged.external_share == 0
    assert paged.mean_running > 3 * contiguous.mean_running
    for a in (contiguous, paged):
        assert len(a.blocks) == len(a.owners) == 4096 // 16
        assert set(a.blocks) <= set(serving.BLOCK_STATES)
        assert a.token_share + a.internal_share + a.reserved_share + a.external_share <= 1 + 1e-12
        assert all((o == -1) == (st in ("free", "hole")) for st, o in zip(a.blocks, a.owners, strict=True))


def test_paged_waste_is_only_the_last_block():
    # One request of 10 tokens + 5 reply tokens in blocks of 4: 16 slots in 4 blocks hold 15 tokens at
    # the end, never more than 3 unused slots.
    a = serving.allocate([(10, 5)] * 3 + [(40, 5)] * 50, 64, "paged", 4, 8)
    assert a.internal_share * 64 <= 3 * a.mean_running + 1e-9
    one = serving.allocate([(7, 1)] * 30, 64, "paged", 1, 8)
    assert one.internal_share == 0  # one-token blocks waste nothing


def test_preemption_happens_and_loses_nothing():
    # Long replies in a small pool: paged sequences outgrow it and are preempted, yet all finish.
    lengths = [(30, 200)] * 12
    a = serving.allocate(lengths, 512, "paged", 16, 200)
    assert a.preempted > 0
    assert a.steps < 10_000


def _reference_allocate(lengths, pool_tokens, allocator, block_size, reserve_tokens, snapshot_step=None):
    """allocate as first written (its checks left out): the whole map drawn at every step and
    scanned block by block. The fast version (C-speed searches, counts by sums, the map drawn
    once) must give the same Allocation."""
    nblocks = pool_tokens // block_size
    reqs = [(i, p, o) for i, (p, o) in enumerate(lengths)]

    def blocks_for(tokens: int) -> int:
        return -(-tokens // block_size)

    owner = [-1] * nblocks          # request id per block
    table: dict[int, list[int]] = {}  # request id -> its blocks, in order
    length: dict[int, int] = {}       # request id -> tokens held now
    info = {i: (p, o) for i, p, o in reqs}
    queue = deque((i, p, p + o) for i, p, o in reqs)  # (request, tokens it holds on admission, final length)
    records, maps, step, preempted = [], [], 0, 0

    def first_fit(n: int) -> int | None:
        run = 0
        for b in range(nblocks):
            run = run + 1 if owner[b] == -1 else 0
            if run == n:
                return b - n + 1
        return None

    def admit() -> None:
        while queue:
            i, p, _final = queue[0]
            if allocator == "contiguous":
                start = first_fit(blocks_for(p + reserve_tokens))
                if start is None:
                    return
                got = list(range(start, start + blocks_for(p + reserve_tokens)))
            else:
                free = [b for b in range(nblocks) if owner[b] == -1]
                if len(free) < blocks_for(p + 1):  # room for the prompt and the first new token
                    return
                got = free[:blocks_for(p)]
            queue.popleft()
            for b in got:
                owner[b] = i
            table[i], length[i] = got, p

    def snapshot() -> tuple[list[str], dict]:
        states = ["free"] * nblocks
        used = reserved = waste = 0
        for i, blocks in table.items():
            p, o = info[i]
            now, final = length[i], p + o
            for k, b in enumerate(blocks):
                lo = k * block_size  # tokens before this block, in this sequence
                if lo < now:
                    states[b] = "used"
                elif lo < final:
                    states[b] = "reserved"
                else:
                    states[b] = "waste"
            used += now
            held = len(blocks) * block_size
            if allocator == "contiguous":
                reserved += final - now
                waste += held - final
            else:
                waste += held - now
        need = blocks_for(queue[0][1] + reserve_tokens) if queue and allocator == "contiguous" else 0
        holes = 0
        run_start = None
        for b in range(nblocks + 1):
            if b < nblocks and owner[b] == -1:
                run_start = b if run_start is None else run_start
                continue
            if run_start is not None:
                size = b - run_start
                if size < need:
                    holes += size
                    for h in range(run_start, b):
                        states[h] = "hole"
                run_start = None
        return states, {"used": used, "reserved": reserved, "waste": waste, "hole": holes * block_size,
                        "running": len(table)}

    def grow(i: int) -> None:
        """Paged: sequence ``i`` needs one more block; with none free, preempt the sequence admitted
        last (vLLM's default: free its blocks and queue it first again, to recompute its tokens)."""
        nonlocal preempted
        while True:
            free = next((b for b in range(nblocks) if owner[b] == -1), None)
            if free is not None:
                owner[free] = i
                table[i].append(free)
                return
            victim = next(reversed(table))
            for b in table.pop(victim):
                owner[b] = -1
            p, o = info[victim]
            queue.appendleft((victim, length.pop(victim), p + o))
            preempted += 1
            if victim == i:
                return

    admit()
    while table or queue:
        states, counts = snapshot()
        if queue:
            records.append(counts)
            maps.append((step, states, list(owner)))
        # One step: every running sequence gets one token (in admission order).
        for i in list(table):
            if i not in table:  # preempted earlier in this step
                continue
            length[i] += 1
            if length[i] == sum(info[i]):  # its last token: done (that token's keys are never read)
                for b in table.pop(i):
                    owner[b] = -1
                del length[i]
            elif allocator == "paged" and length[i] > len(table[i]) * block_size:
                grow(i)
        step += 1
        admit()
        if not table and queue:
            raise ValueError(f"request {queue[0][0]} cannot be admitted into an empty pool")

    if not records:  # the backlog fitted at once: measure the first step
        records.append({"used": 0, "reserved": 0, "waste": 0, "hole": 0, "running": 0})
        maps.append((0, ["free"] * nblocks, [-1] * nblocks))
    n = len(records)
    pick = n // 2 if snapshot_step is None else min(max(snapshot_step, 0), n - 1)
    snap_step, snap_states, snap_owner = maps[pick]
    return serving.Allocation(
        allocator=allocator, block_size=block_size, pool_tokens=pool_tokens,
        blocks=tuple(snap_states), owners=tuple(snap_owner), snapshot_step=snap_step,
        token_share=sum(r["used"] for r in records) / (n * pool_tokens),
        internal_share=sum(r["waste"] for r in records) / (n * pool_tokens),
        reserved_share=sum(r["reserved"] for r in records) / (n * pool_tokens),
        external_share=sum(r["hole"] for r in records) / (n * pool_tokens),
        mean_running=sum(r["running"] for r in records) / n,
        steps=step,
        preempted=preempted,
    )


@pytest.mark.parametrize("allocator", ["contiguous", "paged"])
@pytest.mark.parametrize(("block_size", "reserve", "seed"), [
    (16, 512, 0), (8, 512, 1), (9, 64, 2), (33, 1024, 3), (256, 1024, 0), (1, 30, 4), (64, 1, 5),
])
def test_allocate_equals_the_reference(allocator, block_size, reserve, seed):
    pool = 4096 // block_size * block_size
    lengths = serving.backlog(seed, reserve)
    for snapshot_step in (None, 0, 7, 10**6):
        assert serving.allocate(lengths, pool, allocator, block_size, reserve, snapshot_step) == \
            _reference_allocate(lengths, pool, allocator, block_size, reserve, snapshot_step)


@pytest.mark.parametrize(("lengths", "pool", "block_size", "reserve"), [
    ([(30, 200)] * 12, 512, 16, 200),  # preemptions
    ([(10, 5)] * 3 + [(40, 5)] * 50, 64, 4, 8),
    ([(7, 1)] * 30, 64, 1, 8),
    ([(3, 2)] * 2, 4096, 16, 8),  # the backlog fits at once
])
def test_allocate_equals_the_reference_on_small_pools(lengths, pool, block_size, reserve):
    for allocator in ("contiguous", "paged"):
        assert serving.allocate(lengths, pool, allocator, block_size, reserve) == \
            _reference_allocate(lengths, pool, allocator, block_size, reserve)


def test_allocator_errors():
    with pytest.raises(ValueError, match="more than the reply limit"):
        serving.allocate([(10, 600)], 4096, "paged", 16, 512)
    with pytest.raises(ValueError, match="multiple of the block size"):
        serving.allocate([(10, 5)], 100, "paged", 16, 512)
    with pytest.raises(ValueError, match="cannot fit in a pool"):
        serving.allocate([(4000, 5)], 4096, "contiguous", 16, 512)


def test_shared_blocks_by_hand():
    # 4 samples of a 120-token prompt with 60-token replies, blocks of 16: separate copies need
    # 4 x ceil(180 / 16) = 48 blocks; shared, the 7 full prompt blocks once and each sample its copy
    # of the 8-token partial block continued by its reply, ceil(68 / 16) = 5: 7 + 4 x 5 = 27.
    assert serving.shared_blocks(120, 60, 4, 16) == {"separate": 48, "shared": 27, "saved": 1 - 27 / 48}


# -- transfers ----------------------------------------------------------------------------------


def test_kv_transfer_by_hand():
    # Llama 3.1 70B, 8,192 tokens, BF16: 327,680 bytes per token x 8,192 = 2,684,354,560 bytes.
    moves = serving.kv_transfer("llama-3.1-70b", "h200", "bf16", 8192)
    names = [link.label for link, _, _ in moves]
    assert names[0].startswith("NVLink 4")
    assert all(b == 2_684_354_560 for _, b, _ in moves)
    by = {link.id: link.bytes_per_s for link, _, _ in moves}
    assert by["h200-scale-up"] == 450e9  # 900 GB/s both directions (H200 datasheet), half each way
    assert by["pcie5"] == pytest.approx(63.0154e9, rel=1e-5)  # 32 GT/s x 16 x 128/130 / 8
    assert by["ib-ndr"] == 50e9
    assert by["nvme-ssd"] == 7.45e9  # Samsung 990 PRO datasheet
    assert [t for _, _, t in moves] == sorted(t for _, _, t in moves)
    assert "NVLink" not in " ".join(link.label for link, _, _ in serving.kv_transfer("llama-3.1-8b", "rtx-5090", "bf16", 1000))


# -- speculative decoding -----------------------------------------------------------------------


def test_speculative_by_hand():
    # a = 0.8, k = 4: (1 - 0.8^5) / 0.2 = (1 - 0.32768) / 0.2 = 3.3616 tokens per pass;
    # c = 0.05: 3.3616 / (1 + 0.2) = 2.80133...
    r = serving.speculative(0.8, 4, 0.05)
    assert r.expected_tokens == pytest.approx(3.3616, rel=1e-12)
    assert r.speedup == pytest.approx(3.3616 / 1.2, rel=1e-12)


@pytest.mark.parametrize("k", [1, 4, 64])
def test_acceptance_one_gives_k_plus_one(k):
    r = serving.speculative(1.0, k, 0.0)
    assert r.expected_tokens == k + 1 and r.speedup == k + 1
    assert serving.speculative(0.0, k, 0.0).expected_tokens == 1


@given(a=st.floats(0.0, 1.0), k=st.integers(1, 64), c=st.floats(0.0, 10.0))
def test_speculative_is_finite_and_bounded(a, k, c):
    r = serving.speculative(a, k, c)
    assert math.isfinite(r.expected_tokens) and math.isfinite(r.speedup)
    assert 1 - 1e-9 <= r.expected_tokens <= k + 1 + 1e-9
    assert r.speedup == pytest.approx(r.expected_tokens / (1 + k * c))


@pytest.mark.parametrize(("args", "message"), [
    ((1.5, 4, 0.05), "Acceptance rate must be 0 to 1, got 1.5"),
    ((-0.1, 4, 0.05), "Acceptance rate must be 0 to 1"),
    ((math.nan, 4, 0.05), "Acceptance rate must be a number"),
    ((0.8, 0, 0.05), "Draft length must be 1 to 64 tokens, got 0"),
    ((0.8, 4, -1.0), "Draft cost must be 0 to 10, got -1"),
    ((0.8, 4, math.inf), "Draft cost must be a number"),
])
def test_speculative_bad_input_gets_a_message(args, message):
    with pytest.raises(ParamError, match=message):
        serving.speculative(*args)


def test_speculative_formula_from_sympy():
    sp = pytest.importorskip("sympy")
    pytest.importorskip("numpy")  # descent.formulas is build side (it checks against the NumPy forward pass)
    from descent.formulas import FORMULAS

    e = FORMULAS["speculative_expected_tokens"]
    s = FORMULAS["speculative_speedup"]
    alpha = next(x.symbol for x in e.symbols if x.symbol.name == "alpha")
    k = next(x.symbol for x in e.symbols if x.symbol.name == "k")
    assert sp.simplify(sp.limit(e.expr, alpha, 1) - (k + 1)) == 0  # the a = 1 limit is k + 1
    for a, kk, c in ((0.3, 3, 0.1), (0.9, 7, 0.02), (0.55, 1, 1.0)):
        r = serving.speculative(a, kk, c)
        assert e.evaluate(alpha=a, k=kk) == pytest.approx(r.expected_tokens, rel=1e-12)
        assert s.evaluate(alpha=a, k=kk, c=c) == pytest.approx(r.speedup, rel=1e-12)


# -- the price of a token ----------------------------------------------------------------------


def test_break_even_by_hand():
    # $3 per hour, 1,000 tokens/s: 3.6 million tokens per hour; at full use $3 / 3.6 = $0.8333 per
    # million; against an API at $1 per million the break-even utilization is 0.8333.
    assert serving.cost_per_million(3.0, 1000.0, 1.0) == pytest.approx(3 / 3.6)
    assert serving.cost_per_million(3.0, 1000.0, 0.5) == pytest.approx(2 * 3 / 3.6)
    assert serving.break_even_utilization(1.0, 3.0, 1000.0) == pytest.approx(3 / 3.6)
    with pytest.raises(ValueError, match="tokens per second must be a positive number"):
        serving.break_even_utilization(1.0, 3.0, 0.0)
    with pytest.raises(ParamError, match="Utilization must be 0.001 to 1"):
        serving.cost_per_million(3.0, 1000.0, 0.0)


def test_steady_throughput(llama):
    # One round of 32 requests: 32 prefills of 1,024 tokens plus 256 decode steps at batch 32.
    pre = serving.prefill(llama, 1024).seconds
    step = serving.decode_step(llama, 32, 1024 + 128).seconds
    assert serving.steady_throughput(llama, 32, 1024, 256) == pytest.approx(32 * 256 / (32 * pre + 256 * step))


def test_tpot_is_per_request_and_differs_from_the_median_gap():
    """Issue 23: Part 3 names both: ITL p50 over every gap, and TPOT per request, (t_last - t_first) /
    (n - 1) averaged over requests; on the default trace they differ by more than 10%."""
    from descent import quantities as Q
    from descent.quantities.serving import _SIMULATION

    kw = {p.name: p.default for p in _SIMULATION}
    sim = serving.run(**kw)
    per_request = [(t[-1] - t[0]) / (len(t) - 1) for t in sim.token_times if len(t) > 1]
    tpot = Q.get("tpot_mean_s")()
    assert tpot == pytest.approx(sum(per_request) / len(per_request))
    assert tpot > 1.1 * Q.get("itl_p50_s")()
