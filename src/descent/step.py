"""The step model: what one forward pass of a serving engine costs, for a scenario.

A serving engine runs the model in *steps*: one forward pass over a set of tokens (a whole prompt,
a piece of one, or one new token for each sequence that is decoding). Every speed the site prints
(time to first token, time between tokens, tokens/s, the roofline's point, the parallel split's
step, the server dials, the price of a token) is this module's cost of such a step, for one
:class:`descent.scenario.Scenario`. There is no second model of a step anywhere in descent.

**One device.** A step cannot be faster than either of two ceilings, so it takes the longer of the
two (the roofline of Williams, Waterman & Patterson 2009, "Roofline", CACM 52(4), applied to a
whole step as in Pope et al. 2022, "Efficiently Scaling Transformer Inference", arXiv:2211.05102,
section 2):

    bytes  = the weights the step's tokens use, read once (by group, :func:`read_shares`)
             + every sequence's KV cache at its length (a prompt piece writes its new part)
    FLOPs  = for every token: 2 x its matmul weights + its attention over the tokens before it
             and itself (descent.transformer.flops_per_token)
    time   = max(bytes / memory bandwidth, FLOPs / dense peak in the compute precision)

What a step reads of each weight group: an *untied* input embedding only the rows looked up
(min(T, V) of V), MoE routed experts the share the step's T tokens touch (1 - (1 - k/E)^T when
each token picks k of E uniformly, ``moe_routing="uniform"``; the k/E of one token with
``"active"``), everything else once. A decoding token at context c reads c cached tokens' keys
and values and attends to c + 1 positions (the cache and itself).

**The compute precision** (:func:`compute_precision`, THE rule): the matmuls run in the weights'
own precision where the chip has a dense peak for it (``numerics.MATMUL_PRECISION``: FP8 weights
in FP8, MXFP4/NVFP4 in FP4), else at the 16-bit peak (weight-only formats are dequantized first).
"As released" takes the precision that holds the most parameters (gpt-oss: its MXFP4 experts).

**Across devices** (tp x pp x ep, ``microbatches`` m; Shoeybi et al. 2019, "Megatron-LM",
arXiv:1909.08053, section 3; Lepikhin et al. 2020, "GShard", arXiv:2006.16668, section 2.2).
Expert parallelism is modelled as DeepSeek's and SGLang's layout: attention data-parallel over the
ep groups (each takes batch / ep of the decoding sequences, with its own copy of the non-expert
weights) and the routed experts spread over all of them. Each device of a pipeline stage reads
its share: non-expert weights / (tp pp), routed experts / (tp pp ep), the KV cache / (pp d s)
with d = ep groups holding sequences and s = min(tp, K) (KV heads beyond K are copies; 1 for
MLA's shared latent); it does the non-expert FLOPs / (tp pp d) and the routed experts' FLOPs /
(tp pp ep). One prompt lives on one group (d = 1 in a prefill): expert parallelism spreads only
its experts. Each layer ends its attention and its FFN with an all-reduce of the step's
activations over tp devices, each MoE layer dispatches and combines tokens over ep devices (two
all-to-alls, each token's vector sent once per expert it picks), and each stage sends its
activations to the next. A collective costs its bytes over the link plus a start-up latency
(catalog ``links.toml``): a ring all-reduce over p devices sends 2 (p - 1) / p of the message
(Patarasuk & Yuan 2009) and takes NCCL's ring latency, ``base + 2 (p - 1) x step`` (NCCL's cost
model, src/graph/tuning.cc). Engines' own one-shot all-reduces for small messages (vLLM's and
TensorRT-LLM's custom all-reduce) are two to three times faster at decode sizes, so the
communication is NCCL's ring, not the fastest an engine achieves. Reads and arithmetic are at the
chip's peaks and nothing overlaps communication: the reads and FLOPs part is a lower bound, the
communication an estimate for an engine that does not overlap it (vLLM's tensor-parallel decode
does not).

**The pipeline schedule modelled** is a serving engine's steady state, not a training flush: the
batch is split into m micro-batches that cycle through the pp stages, each stage taking them one
after another. A sequence waits for its micro-batch to come round: the time between its tokens is
max(sum of the micro-batches' stage times, pp x the longest), so with m >= pp every stage stays
busy (no bubble) and with m < pp each stage idles a share 1 - m/pp of the time (the *bubble*,
:attr:`StepCost.bubble`, which is the share the step's time includes). Prefill runs the prompt
as one micro-batch through the stages in turn.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate, repeat
from operator import add, gt, truediv

from descent import numerics, transformer
from descent import params as P
from descent.catalog import Accelerator, Link, Model, resolve_accelerator, resolve_model
from descent.catalog import link as catalog_link
from descent.checks import is_finite, is_real
from descent.numerics import Precision, kv_precision
from descent.scenario import Scenario
from descent.units import format_int
from descent.weights import GROUPS, RELEASED, bytes_by_group, released_map, scheme_names

__all__ = [
    "ACTIVATION_BYTES",
    "ALLREDUCES_PER_LAYER",
    "MAX_BATCH",
    "Collective",
    "DeviceStep",
    "Footprint",
    "StepCost",
    "StepModel",
    "allreduce_seconds",
    "all_to_all_bytes",
    "attainable_flops",
    "check_weights",
    "compute_precision",
    "cost",
    "decode",
    "footprint",
    "kv_cache_bytes",
    "model_for",
    "peak_flops",
    "pipeline_bubble",
    "prefill",
    "read_shares",
    "ridge_point",
    "ring_allreduce_bytes",
]

#: Largest batch (concurrent sequences) accepted, sequences (``params.BATCH``).
MAX_BATCH = P.BATCH.max

#: Bytes per activation value sent between devices: BF16 (Megatron-LM and vLLM all-reduce in the
#: model's 16-bit dtype).
ACTIVATION_BYTES = 2

#: All-reduces per transformer layer in tensor parallelism's forward pass: after the attention
#: output projection and after the FFN down projection (Shoeybi et al. 2019, section 3, figure 3).
ALLREDUCES_PER_LAYER = 2


# ---------------------------------------------------------------------------------------------
# The chip's peaks and the one compute-precision rule
# ---------------------------------------------------------------------------------------------


def check_weights(weights: str) -> str:
    """Return ``weights`` if it is a weight choice (``descent.weights.scheme_names()``: ``released``,
    a GGUF mix or a precision of ``numerics.PRECISIONS``), else raise ValueError listing them."""
    if weights not in scheme_names():
        raise ValueError(f"unknown weight precision {weights!r}; allowed: {', '.join(scheme_names())}")
    return weights


def compute_precision(model: str | Model, accelerator: str | Accelerator, weights: str) -> str:
    """The precision a step's matmuls run in: ``"fp4"``, ``"fp8"`` or ``"bf16"`` (module docstring).

    Raises:
        ValueError: unknown model, accelerator or weight choice.
    """
    a = resolve_accelerator(accelerator)
    w = check_weights(weights)
    if w == RELEASED:
        m = resolve_model(model)
        pc = transformer.param_counts(m)
        rm = released_map(m)
        by_precision: dict[str, int] = {}
        for g in GROUPS:
            by_precision[rm.by_group[g]] = by_precision.get(rm.by_group[g], 0) + getattr(pc, g)
        w = max(by_precision, key=by_precision.get)
    wanted = numerics.MATMUL_PRECISION.get(w, "bf16")
    try:
        a.peak(wanted)
    except ValueError:
        return "bf16"
    return wanted


def peak_flops(accelerator: str | Accelerator, precision: str) -> float:
    """Dense peak FLOP/s of an accelerator in a compute precision (catalog ``Accelerator.peak``).

    Raises:
        ValueError: unknown accelerator or precision, or the chip has no peak for it.
    """
    return resolve_accelerator(accelerator).peak(precision)


def ridge_point(accelerator: str | Accelerator, precision: str) -> float:
    """The roofline's ridge point: peak FLOP/s / memory bandwidth, FLOP per byte.

    Below this arithmetic intensity a kernel is memory-bound (Williams et al. 2009, section 2).
    Raises ValueError as :func:`peak_flops`.
    """
    a = resolve_accelerator(accelerator)
    return peak_flops(a, precision) / a.memory_bandwidth


def attainable_flops(accelerator: str | Accelerator, intensity: float, precision: str) -> float:
    """The roofline: attainable FLOP/s at an arithmetic intensity, min(peak, intensity x bandwidth).

    Source: Williams, Waterman & Patterson 2009, "Roofline", CACM 52(4), section 2.

    Raises:
        ValueError: intensity not a positive finite number (FLOP per byte); errors of :func:`peak_flops`.
    """
    if not is_real(intensity) or not 0 < intensity < math.inf:
        raise ValueError(f"intensity must be a positive number of FLOP per byte, got {intensity!r}")
    a = resolve_accelerator(accelerator)
    return min(peak_flops(a, precision), intensity * a.memory_bandwidth)


# ---------------------------------------------------------------------------------------------
# What a step reads
# ---------------------------------------------------------------------------------------------


def kv_cache_bytes(model: Model, kv: Precision, context: int, batch: int) -> float:
    """KV cache of ``batch`` sequences at ``context`` tokens in precision ``kv``, bytes.

    ``transformer.kv_cache_bytes(model, context, kv bits) x batch`` (all layers, sliding windows
    capped, a linear-attention state at its own 16 bits). Inputs are not checked here.
    """
    return transformer.kv_cache_bytes(model, context, kv.bits_per_weight) * batch


def read_shares(model: Model, tokens: int, moe_routing: str) -> dict[str, float]:
    """The share of each weight group a step of ``tokens`` tokens reads (groups not listed: all).

    ``embedding``: min(T, V) / V when untied (rows looked up; a tied table is the output head,
    read in full); ``experts``: the routed experts touched, k/E for one token (or ``"active"``
    routing), else 1 - (1 - k/E)^T (module docstring).
    """
    out: dict[str, float] = {}
    if not model.tie_embeddings:
        out["embedding"] = min(tokens, model.vocab_size) / model.vocab_size
    pc = transformer.param_counts(model)
    if model.moe is None or pc.experts == 0:
        out["experts"] = 0.0
    elif tokens == 1 or moe_routing == "active":
        out["experts"] = pc.active_experts / pc.experts
    else:
        k_over_e = model.moe.experts_per_token / model.moe.num_experts
        out["experts"] = 1.0 - (1.0 - k_over_e) ** tokens
    return out


class _Linear:
    """``f(t) = a t + b h(t) + c``: a per-token cost that grows with the context on every layer
    (``a``), a part that is bounded by a window ``W`` (``b``), and a part that never grows (``c``:
    the fixed state of linear-attention layers). ``h(t)`` is ``min(t, W)`` (``shape="min"``: a
    sliding-window layer's cache and attention, a chunked layer's cache) or ``((t - 1) mod W) + 1``
    (``shape="mod"``: a chunked layer attends only within the current chunk of ``W`` tokens). The
    KV bytes of one sequence and the attention FLOPs of one token both have this shape
    (:func:`descent.transformer.kv_cache_bytes`, :func:`descent.transformer.attention_flops_per_token`),
    so a few calls to the exact function give ``a``, ``b`` and ``c``, and sums over a range of
    positions have a closed form: the simulator's inner loop stays O(1) per sequence.
    """

    def __init__(self, f, window: int | None, shape: str = "min"):
        if shape not in ("min", "mod"):
            raise ValueError(f"shape must be 'min' or 'mod', got {shape!r}")
        self.window, self.shape = window, shape
        first = f(2) - f(1)  # every part grows while t <= W
        if window is None:
            self.a, self.b = first, 0
        elif shape == "min":
            self.a = f(window + 2) - f(window + 1)
            self.b = first - self.a
        else:  # f(W + 1) - f(W) = a + b (1 - W)
            self.b = (first - (f(window + 1) - f(window))) / window
            self.a = first - self.b
        self.c = f(1) - self.a - self.b

    def _h(self, t: int) -> int:
        w = self.window
        return min(t, w) if self.shape == "min" else (t - 1) % w + 1

    def __call__(self, t: int) -> float:
        return self.a * t + (self.b * self._h(t) if self.window else 0) + self.c

    def _prefix(self, n: int) -> float:
        """sum of f(t) for t = 1..n."""
        s = n * (n + 1) // 2
        if not self.window:
            return self.a * s + self.c * n
        w = self.window
        if self.shape == "min":
            m = s if n <= w else w * (w + 1) // 2 + w * (n - w)
        else:  # q whole chunks 1..W, then 1..r
            q, r = divmod(n, w)
            m = q * (w * (w + 1) // 2) + r * (r + 1) // 2
        return self.a * s + self.b * m + self.c * n

    def sum(self, start: int, end: int) -> float:
        """sum of f(t) for t = start+1 .. end."""
        return self._prefix(end) - self._prefix(start)


@dataclass(frozen=True)
class DeviceStep:
    """One step on one device, from :meth:`StepModel.step`'s closed forms. Units: bytes, FLOP, seconds, tokens.

    Attributes:
        tokens: tokens the step runs through the model (one per decoding sequence plus prompt pieces).
        bytes: bytes read from memory: weights once, every sequence's KV cache.
        flops: arithmetic of the step, FLOP.
        memory_seconds: ``bytes / memory bandwidth``.
        compute_seconds: ``flops / dense peak``.
        seconds: the larger of the two: the step's time (a lower bound).
        bound: ``"memory"`` or ``"compute"``, whichever ceiling sets the time.
    """

    tokens: int
    bytes: float
    flops: float
    memory_seconds: float
    compute_seconds: float
    seconds: float
    bound: str


class StepModel:
    """One model on one accelerator, weights and KV cache at given precisions: the step model's
    closed forms on one device. Build it with :func:`model_for` (cached). Attributes: ``model``, ``accelerator`` (catalog rows),
    ``weights``, ``kv`` (precision names), ``precision`` (the compute precision), ``bandwidth``
    (bytes/s), ``peak`` (FLOP/s), ``kv_capacity`` (bytes of memory left for the KV cache after the
    weights and the runtime allowance; may be negative when the weights do not fit).
    """

    def __init__(self, model: Model, accelerator: Accelerator, weights: str, kv: str, moe_routing: str,
                 runtime_percent: float):
        self.model, self.accelerator, self.weights, self.kv = model, accelerator, weights, kv
        self.moe_routing = moe_routing
        self.precision = compute_precision(model, accelerator, weights)
        self.bandwidth = accelerator.memory_bandwidth
        self.peak = peak_flops(accelerator, self.precision)
        kv_bits = kv_precision(kv).bits_per_weight
        # KV bytes stop growing at a sliding window or a chunk (a chunked layer holds one chunk).
        window = model.sliding.window if model.sliding is not None else None
        kv_window = model.chunked.chunk if model.chunked is not None else window
        self._kv = _Linear(lambda t: transformer.kv_cache_bytes(model, t, kv_bits), kv_window)
        if model.chunked is not None:
            self._attn = _Linear(lambda t: transformer.attention_flops_per_token(model, t), model.chunked.chunk, "mod")
        else:
            self._attn = _Linear(lambda t: transformer.attention_flops_per_token(model, t), window)
        # 2 FLOP per weight of every matrix one token multiplies by (flops_per_token minus attention).
        self.matmul_flops = transformer.flops_per_token(model, 1) - transformer.attention_flops_per_token(model, 1)
        self.stored = bytes_by_group(model, weights)
        self._weights_at: dict[int, float] = {}
        self._step1_weights = self._read(1)
        #: Bytes of every stored weight (all experts), and what the memory leaves for the KV cache.
        self.weight_bytes = sum(self.stored.values())
        self.kv_capacity = accelerator.memory_bytes * (1 - runtime_percent / 100) - self.weight_bytes
        # decode_steps' tables by context t: kv_bytes(t) and the FLOPs of the token decoded at t.
        self._kv_at: list[float] = []
        self._decode_flops_at: list[float] = []
        # When both are whole numbers a t + c, decode_steps sums them in closed form instead.
        self._whole = _whole_linear(self._kv, self._attn, self.matmul_flops)
        # Bandwidth and peak as exact fractions, for _memory_bound.
        self._ratios = ((self.bandwidth.as_integer_ratio(), self.peak.as_integer_ratio())
                        if is_finite(self.bandwidth) and is_finite(self.peak) and self.bandwidth > 0 and self.peak > 0
                        else None)

    def read_by_group(self, tokens: int) -> dict[str, float]:
        """Bytes of each weight group a step of ``tokens`` tokens reads (:func:`read_shares`)."""
        shares = read_shares(self.model, tokens, self.moe_routing)
        return {g: b * shares.get(g, 1.0) for g, b in self.stored.items()}

    def _read(self, tokens: int) -> float:
        return sum(self.read_by_group(tokens).values())

    def _tables(self, top: int) -> tuple[list[float], list[float]] | None:
        """The tables of :meth:`decode_steps` for contexts 0 .. ``top`` (grown as asked, kept), or
        None above ``DECODE_TABLE_TOKENS``."""
        if top >= DECODE_TABLE_TOKENS:
            return None
        kv, fl = self._kv_at, self._decode_flops_at
        if len(kv) <= top:
            grow = range(len(kv), top + 1)
            # The same expressions as step()'s: kv_bytes(c) and matmul_flops + attention at c + 1.
            kv += [self.kv_bytes(c) for c in grow]
            fl += [self.matmul_flops + self._attn(c + 1) for c in grow]
        return kv, fl

    def kv_bytes(self, tokens: int) -> float:
        """KV-cache bytes of one sequence holding ``tokens`` tokens (sliding windows capped)."""
        return self._kv(tokens) if tokens > 0 else 0.0

    def step_weight_bytes(self, tokens: int) -> float:
        """Weight bytes a step of ``tokens`` tokens reads (MoE: the experts those tokens touch)."""
        if tokens <= 1:
            return self._step1_weights
        # Expert coverage saturates long before MAX_BATCH tokens.
        n = min(tokens, MAX_BATCH)
        got = self._weights_at.get(n)
        if got is None:
            got = self._weights_at[n] = self._read(n)
        return got

    def step(self, decode_contexts=(), prefill_spans=()) -> DeviceStep:
        """The cost of one step.

        Args:
            decode_contexts: for each sequence that decodes one token this step, the tokens already
                in its cache (the new token attends to those and to itself).
            prefill_spans: ``(start, end)`` for each prompt piece run this step: positions
                ``start + 1 .. end`` of that prompt (``start`` already cached).

        Returns:
            :class:`DeviceStep`. A prompt piece reads its cached part and writes its new keys and
            values: ``kv_bytes(end)``; a decoding sequence reads ``kv_bytes(context)``.
        """
        tokens, nbytes, flops, mem, comp = self._step_parts(decode_contexts, prefill_spans)
        return DeviceStep(tokens, nbytes, flops, mem, comp, max(mem, comp), "compute" if comp > mem else "memory")

    def step_time(self, decode_contexts=(), prefill_spans=()) -> tuple[float, bool]:
        """:meth:`step`'s ``seconds`` and whether the compute ceiling set it, without the record
        (the simulator's many one-step runs)."""
        _, _, _, mem, comp = self._step_parts(decode_contexts, prefill_spans)
        return max(mem, comp), comp > mem

    def step_time_sum(self, sequences: int, context_sum: int, prefill_spans=()) -> tuple[float, bool] | None:
        """:meth:`step_time` from how many sequences decode and their contexts added up, without the
        list of contexts, where the sums are exact (``_exact_sums``: the same floats); None where
        that cannot be promised (a window, sums past 2**53): call :meth:`step_time` with the
        contexts. The simulator's steps with a prompt piece.

        Args:
            sequences: decoding sequences, 0 or more.
            context_sum: their contexts added up. Each context must be 1 or more (the simulator's
                are: a sequence decodes once its prompt is read), which this does not check: a
                context of 0 would give another float, not None.
            prefill_spans: as for :meth:`step`.
        """
        tokens = sequences + sum(e - s for s, e in prefill_spans)
        nbytes = self.step_weight_bytes(tokens)
        flops = 0.0
        if sequences:
            sums = self._exact_sums(nbytes, sequences, context_sum, 1)
            if sums is None:
                return None
            nbytes, flops = nbytes + sums[0], float(sums[2])  # _decode_sums' first step, as a line
        nbytes, flops = self._add_spans(nbytes, flops, prefill_spans)
        mem, comp = nbytes / self.bandwidth, flops / self.peak
        return max(mem, comp), comp > mem

    def _step_parts(self, decode_contexts, prefill_spans) -> tuple[int, float, float, float, float]:
        """:meth:`step`'s tokens, bytes, FLOPs, memory seconds and compute seconds."""
        tokens = len(decode_contexts) + sum(e - s for s, e in prefill_spans)
        nbytes = self.step_weight_bytes(tokens)
        flops = 0.0
        if decode_contexts:  # nbytes += kv_bytes(c); flops += matmul_flops + attention at c + 1, for each c
            sums = self._decode_sums(nbytes, decode_contexts, 1)
            nbytes, flops = sums[0][0], sums[1][0]
        nbytes, flops = self._add_spans(nbytes, flops, prefill_spans)
        return tokens, nbytes, flops, nbytes / self.bandwidth, flops / self.peak

    def _add_spans(self, nbytes: float, flops: float, prefill_spans) -> tuple[float, float]:
        """``nbytes`` and ``flops`` with each prompt piece's added in turn: it reads its cached part
        and writes its new keys and values, and does its tokens' matmuls and attention."""
        for s, e in prefill_spans:
            nbytes += self.kv_bytes(e)
            flops += (e - s) * self.matmul_flops + self._attn.sum(s, e)
        return nbytes, flops

    def uniform_decode(self, n: int, context: int) -> DeviceStep:
        """One decode step of ``n`` sequences that all hold ``context`` tokens: :meth:`step` with
        ``decode_contexts=[context] * n`` in O(1) (``n`` times one sequence's KV bytes and FLOPs,
        where :meth:`step` adds them one by one: equal to rounding)."""
        nbytes = self.step_weight_bytes(n) + n * self.kv_bytes(context)
        flops = n * (self.matmul_flops + self._attn(context + 1))
        mem, comp = nbytes / self.bandwidth, flops / self.peak
        return DeviceStep(n, nbytes, flops, mem, comp, max(mem, comp), "compute" if comp > mem else "memory")

    def uniform_verify(self, n: int, context: int, positions: int) -> DeviceStep:
        """One speculative-decoding verification step: ``n`` sequences that all hold ``context``
        tokens each run ``positions`` new positions (the last accepted token and the draft's
        ``positions - 1`` guesses) through the target. :meth:`step` with
        ``prefill_spans=[(context, context + positions)] * n`` in O(1): each sequence reads its cache
        and writes the new positions' keys and values (``kv_bytes(context + positions)``) and does
        ``positions`` tokens' matmul FLOPs plus their attention. Equal to :meth:`step` to rounding.
        Source: Leviathan et al. 2023, section 3 (the target scores all guesses in one pass)."""
        nbytes = self.step_weight_bytes(n * positions) + n * self.kv_bytes(context + positions)
        flops = n * (positions * self.matmul_flops + self._attn.sum(context, context + positions))
        mem, comp = nbytes / self.bandwidth, flops / self.peak
        return DeviceStep(n * positions, nbytes, flops, mem, comp, max(mem, comp), "compute" if comp > mem else "memory")

    def decode_steps(self, contexts, steps: int) -> tuple[list[float], int]:
        """The times of ``steps`` consecutive decode steps of the same sequences, one token each:
        step ``j`` (0-based) is ``step(decode_contexts=[c + j for c in contexts])``. The same floats
        as :meth:`step`'s, to the last bit, computed for all the steps at once (in closed form
        where that is exact: ``_exact_line``).

        Args:
            contexts: for each decoding sequence, the tokens in its cache at the first step (>= 0).
            steps: number of steps, >= 1.

        Returns:
            ``(seconds, compute_bound)``: each step's ``DeviceStep.seconds`` (s), and how many of the
            steps were compute-bound.

        Raises:
            ValueError: no sequences, a negative context or fewer than one step.
        """
        if not contexts or steps < 1 or min(contexts) < 0:
            raise ValueError(f"decode_steps needs one or more contexts >= 0 and steps >= 1, got "
                             f"{format_int(len(contexts))} contexts (least {min(contexts, default=0)!r}) "
                             f"and {steps!r} steps")
        weights = self.step_weight_bytes(len(contexts))
        line = self._exact_line(weights, contexts, steps)
        if line is None:
            nbytes, flops = self._decode_sums(weights, contexts, steps)
        else:
            kv0, kv_step, fl0, fl_step = line
            nbytes = _progression(weights + kv0, kv_step, steps)
            last = steps - 1
            if self._memory_bound(weights, kv0, fl0) and \
                    self._memory_bound(weights, kv0 + kv_step * last, fl0 + fl_step * last):
                return list(map(truediv, nbytes, repeat(self.bandwidth))), 0
            flops = _progression(float(fl0), fl_step, steps)
        mem = list(map(truediv, nbytes, repeat(self.bandwidth)))
        comp = list(map(truediv, flops, repeat(self.peak)))
        compute = sum(map(gt, comp, mem))
        # max(mem, comp) step by step, as step() takes it (mostly all one or all the other).
        return (mem if compute == 0 else comp if compute == steps else list(map(max, mem, comp))), compute

    def decode_line(self, sequences: int, context_sum: int, steps: int) -> tuple[float, float] | None:
        """:meth:`decode_steps` as a line, where every step is memory-bound: ``(first, growth)``,
        the bytes of the run's first step and what each later step adds, so that step ``j`` reads
        ``first + growth * j`` bytes and takes that over the bandwidth: the same floats as
        :meth:`step`'s (``_exact_line``'s conditions). None where that cannot be promised (a
        window, a chunk, sums past 2**53, a step that may be compute-bound): use :meth:`decode_steps`.

        Args:
            sequences: decoding sequences, >= 1.
            context_sum: the tokens in their caches at the first step, added up; each holds 1 or more.
            steps: number of steps, >= 1.
        """
        if sequences < 1 or steps < 1:
            return None
        weights = self.step_weight_bytes(sequences)
        sums = self._exact_sums(weights, sequences, context_sum, steps)
        if sums is None:
            return None
        kv0, kv_step, fl0, fl_step = sums
        last = steps - 1
        if not (self._memory_bound(weights, kv0, fl0)
                and self._memory_bound(weights, kv0 + kv_step * last, fl0 + fl_step * last)):
            return None
        return weights + kv0, float(kv_step)

    def _decode_sums(self, weights: float, contexts, steps: int) -> tuple[list[float], list[float]]:
        """For ``steps`` steps (``j`` = 0, 1, ...): ``weights`` plus ``kv_bytes(c + j)``, and 0.0
        plus ``matmul_flops`` + the attention at ``c + j + 1``, added sequence by sequence in the
        order of ``contexts``, as :meth:`step` adds them. Two lists: bytes and FLOPs."""
        line = self._exact_line(weights, contexts, steps)
        if line is not None:
            kv0, kv_step, fl0, fl_step = line
            return (list(_progression(weights + kv0, kv_step, steps)),
                    list(_progression(float(fl0), fl_step, steps)))
        nbytes = [weights] * steps
        flops = [0.0] * steps
        tables = self._tables(max(contexts) + steps) if min(contexts) >= 0 else None
        for c in contexts:  # sequence by sequence, for all the steps at once
            if tables is not None:
                kv = tables[0][c:c + steps]
                fl = tables[1][c:c + steps]
            else:
                kv = [self.kv_bytes(t) for t in range(c, c + steps)]
                fl = [self.matmul_flops + self._attn(t + 1) for t in range(c, c + steps)]
            nbytes = list(map(add, nbytes, kv))
            flops = list(map(add, flops, fl))
        return nbytes, flops

    def _exact_line(self, weights: float, contexts, steps: int) -> tuple[int, int, int, int] | None:
        """:meth:`_decode_sums` in closed form: ``(kv0, kv_step, fl0, fl_step)``, the exact sums of
        the sequences' KV bytes and FLOPs at the first step and their growth per step; or None
        where that might differ from step()'s additions in a single bit.

        When a sequence's KV bytes and its token's FLOPs are whole numbers ``a t + c`` in the
        context t (no window: ``_whole``), every partial sum step() forms is a multiple of the
        weights' smallest binary digit (1 when they are whole); below 2**53 of those digits each
        addition is exact, so step()'s sums are ``weights + kv0 + kv_step j`` and
        ``fl0 + fl_step j``.
        """
        if min(contexts) < 1:
            return None
        return self._exact_sums(weights, len(contexts), sum(contexts), steps)

    def _exact_sums(self, weights: float, sequences: int, context_sum: int,
                    steps: int) -> tuple[int, int, int, int] | None:
        """:meth:`_exact_line` from the number of sequences and their contexts added up (each 1 or more)."""
        if self._whole is None or not isinstance(weights, float) or weights < 0:
            return None
        kv_a, kv_c, fl_a, fl_c = self._whole
        kv0, kv_step = kv_a * context_sum + kv_c * sequences, kv_a * sequences
        fl0, fl_step = fl_a * context_sum + fl_c * sequences, fl_a * sequences
        num, den = weights.as_integer_ratio()  # den: a power of two
        last = steps - 1
        if num + (kv0 + kv_step * last) * den >= EXACT_FLOAT_LIMIT or fl0 + fl_step * last >= EXACT_FLOAT_LIMIT:
            return None
        return kv0, kv_step, fl0, fl_step

    def _memory_bound(self, weights: float, kv_bytes: int, flops: int) -> bool:
        """Whether ``flops / peak <= (weights + kv_bytes) / bandwidth`` in exact arithmetic. Then
        step()'s rounded quotients compare the same way (rounding keeps order): memory-bound."""
        if self._ratios is None:
            return False
        # Far apart in floats (each side within a few rounding errors of its exact value), the
        # floats decide; close, the exact fractions do.
        comp, mem = flops / self.peak, (weights + kv_bytes) / self.bandwidth
        if comp < mem * (1 - MEMORY_BOUND_MARGIN):
            return True
        if comp > mem * (1 + MEMORY_BOUND_MARGIN):
            return False
        (bn, bd), (pn, pd) = self._ratios
        wn, wd = weights.as_integer_ratio()
        return flops * pd * wd * bn <= (wn + kv_bytes * wd) * bd * pn


#: Integers up to 2**53 are exact in a float (53-bit significand, IEEE 754 binary64).
EXACT_FLOAT_LIMIT = 2**53
#: A relative gap between a step's FLOP time and its memory time (each computed in floats) that
#: rounding cannot close: a few units in the last place of a double (2**-52 each), with room to spare.
MEMORY_BOUND_MARGIN = 1e-12


def _whole(x) -> int | None:
    """``x`` as an int when it is a whole number >= 0 (an int or an integral float), else None."""
    if not is_finite(x) or x < 0 or x != int(x):
        return None
    return int(x)


def _whole_linear(kv: _Linear, attn: _Linear, matmul_flops: float) -> tuple[int, int, int, int] | None:
    """``(kv_a, kv_c, fl_a, fl_c)`` with kv_bytes(t) = kv_a t + kv_c and matmul_flops + attention at
    t + 1 = fl_a t + fl_c, every part a whole number (no window term), else None."""
    parts = [_whole(x) for x in (kv.a, kv.b, kv.c, attn.a, attn.b, attn.c, matmul_flops)]
    if None in parts or parts[1] or parts[4]:
        return None
    kv_a, _, kv_c, at_a, _, at_c, mf = parts
    return kv_a, kv_c, at_a, at_a + at_c + mf


def _progression(start: float, step: int, count: int):
    """``start, start + step, ...``: ``count`` floats, each the last plus ``step`` (exact where
    :meth:`StepModel._exact_line` allows it: every value a whole number of the start's smallest
    binary digit, below 2**53 of them)."""
    return accumulate(repeat(float(step), count - 1), initial=start)


#: Contexts (tokens) up to which a :class:`Server` keeps its per-context tables for
#: :meth:`Server.decode_steps`: two lists of floats, about 2 MB at this length; longer contexts are
#: computed position by position (the same numbers, slower).
DECODE_TABLE_TOKENS = 2**15




@lru_cache(maxsize=64)
def _model_for(model: Model, accelerator: Accelerator, weights: str, kv: str, moe_routing: str,
               runtime_percent: float) -> StepModel:
    return StepModel(model, accelerator, weights, kv, moe_routing, runtime_percent)


def model_for(sc: Scenario) -> StepModel:
    """The one-device :class:`StepModel` of a scenario (cached by model, chip, precisions, routing
    and runtime allowance)."""
    return _model_for(sc.model_row, sc.chip, check_weights(sc.weights), kv_precision(sc.kv).name,
                      sc.moe_routing, float(sc.runtime_percent))


# ---------------------------------------------------------------------------------------------
# Collectives
# ---------------------------------------------------------------------------------------------


def ring_allreduce_bytes(message_bytes: float, devices: int) -> float:
    """Bytes each device sends in a ring all-reduce of ``message_bytes`` over ``devices``.

    ``2 (p - 1) / p x S`` (Patarasuk & Yuan 2009; nccl-tests doc/PERFORMANCE.md). 0 for one device.

    Raises:
        ValueError: message not a finite number >= 0, devices not 1 to 100,000.
    """
    if not (is_finite(message_bytes) and message_bytes >= 0):
        raise ValueError(f"message must be a number of bytes >= 0, got {message_bytes!r}")
    p = P.BATCH.but(label="devices").check(devices)
    return 2 * (p - 1) / p * message_bytes


def all_to_all_bytes(tokens: float, experts_per_token: int, d_model: int, bytes_per_value: float,
                     devices: int) -> float:
    """Bytes each device sends in one MoE layer's dispatch and combine all-to-alls.

    ``2 x tokens x k x D x b x (e - 1) / e``: each token's hidden vector goes to the devices of its
    k experts and comes back; with uniform routing a share (e - 1) / e of them are elsewhere
    (Lepikhin et al. 2020, section 2.2; DeepSeek-V3 Technical Report, arXiv:2412.19437, section 3.2).
    One copy per expert picked: an upper bound on kernels that deduplicate (DeepEP sends a token
    once to each device holding any of its experts), which Part 4 says.

    Raises:
        ValueError: a negative or non-finite size, experts per token below 1, devices not 1 to 100,000.
    """
    for name, x in (("tokens", tokens), ("d_model", d_model), ("bytes_per_value", bytes_per_value)):
        if not (is_finite(x) and x >= 0):
            raise ValueError(f"{name} must be a positive number, got {x!r}")
    if not isinstance(experts_per_token, int) or isinstance(experts_per_token, bool) or experts_per_token < 1:
        raise ValueError(f"experts per token must be a whole number >= 1, got {experts_per_token!r}")
    e = P.BATCH.but(label="devices").check(devices)
    return 2 * tokens * experts_per_token * d_model * bytes_per_value * (e - 1) / e


def pipeline_bubble(stages: int, microbatches: int) -> float:
    """The share of a step each pipeline stage idles in a serving engine's steady state:
    ``max(0, p - m) / p`` (equal micro-batches; module docstring). 0 for one stage.

    Raises:
        ValueError: stages or micro-batches not whole numbers from 1 to 100,000.
    """
    p = P.BATCH.but(label="Stages").check(stages)
    m = P.BATCH.but(label="Micro-batches").check(microbatches)
    return max(0, p - m) / p


def allreduce_seconds(wire: Link, message_bytes: float, devices: int) -> float:
    """Time of one ring all-reduce of ``message_bytes`` over ``devices`` on ``wire``, s: the bytes
    each device sends over one direction of the link, plus NCCL's latency, ``base + 2 (p - 1) x
    step`` (catalog ``links.toml``). 0 on one device."""
    if devices == 1:
        return 0.0
    steps = 2 * (devices - 1)
    return ring_allreduce_bytes(message_bytes, devices) / wire.bytes_per_s + wire.base_latency_s + steps * wire.step_latency_s


@dataclass(frozen=True)
class Collective:
    """The communication of one step, by kind. Units: bytes, seconds.

    Attributes:
        kind: ``"all-reduce"`` (TP), ``"all-to-all"`` (EP) or ``"send"`` (PP, stage to stage).
        devices: devices taking part in each. count: how many one token's path crosses.
        message_bytes: the message each device contributes (an all-reduce's activations), bytes.
        bytes_each: bytes each device sends in one. seconds_each: the time of one (bandwidth and latency).
        seconds: ``count x seconds_each``.
    """

    kind: str
    devices: int
    count: float
    message_bytes: float
    bytes_each: float
    seconds_each: float
    seconds: float


# ---------------------------------------------------------------------------------------------
# The cost of a step
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepCost:
    """The cost of one step for a scenario. Units: tokens, FLOP, bytes, seconds.

    Attributes:
        tokens: tokens the step runs (one per decoding sequence plus prompt pieces).
        sequences: sequences that get a token from the step (decoding ones; 1 for a prefill).
        flops: the step's arithmetic, all devices, FLOP.
        bytes: bytes the step reads, each value counted once however many devices hold a copy
            (weights once per micro-batch, the KV cache): the model's bytes, not the sum over
            devices (MLA's latent, KV heads beyond K and non-expert weights under ep are copies).
        bytes_by_group: ``bytes`` by weight group (:data:`descent.weights.GROUPS`) plus ``kv_cache``.
        weights_bytes, kv_bytes: the two parts of ``bytes``.
        bytes_per_device: what one device of a stage reads for one micro-batch, bytes.
        compute_precision: :func:`compute_precision`. peak_flops: that peak, FLOP/s.
        bandwidth: one device's memory bandwidth, bytes/s.
        memory_seconds, compute_seconds, comm_seconds: one micro-batch's path through every stage:
            reads / bandwidth, FLOPs / peak, and its collectives (s). On one device,
            ``bytes / bandwidth``, ``flops / peak`` and 0.
        seconds: the step's time as a sequence sees it: on one device max(memory, compute); split,
            max(sum of the micro-batches' stage times, pp x the longest) (module docstring).
        bound: ``"memory"`` or ``"compute"``: which of reading and computing is longer.
        bubble: the share of the step each stage idles (0 with micro-batches >= stages).
        collectives: :class:`Collective` per kind (empty on one device).
        devices: tp x pp x ep.
    """

    tokens: int
    sequences: int
    flops: float
    bytes: float
    bytes_by_group: dict
    weights_bytes: float
    kv_bytes: float
    bytes_per_device: float
    compute_precision: str
    peak_flops: float
    bandwidth: float
    memory_seconds: float
    compute_seconds: float
    comm_seconds: float
    seconds: float
    bound: str
    bubble: float
    collectives: tuple
    devices: int

    @property
    def tokens_per_s_per_sequence(self) -> float:
        """``1 / seconds``: tokens/s each sequence sees (decode), tokens/s."""
        return 1 / self.seconds

    @property
    def tokens_per_s_total(self) -> float:
        """``sequences / seconds``: tokens/s over the batch."""
        return self.sequences / self.seconds

    @property
    def intensity(self) -> float:
        """``flops / bytes``, FLOP per byte: where the step sits on one chip's roofline (on one
        device; split, the model's FLOPs over the model's bytes)."""
        return self.flops / self.bytes


def _groups(sm: StepModel, tokens: int, kv: float) -> dict[str, float]:
    out = sm.read_by_group(min(tokens, MAX_BATCH)) if tokens > 1 else sm.read_by_group(1)
    out["kv_cache"] = kv
    return out


def _device_step(sm: StepModel, contexts: list, spans: list) -> DeviceStep:
    """One device's step: O(1) when every sequence decodes at one context and nothing prefills, or
    every prompt piece is the same span and nothing decodes."""
    if contexts and not spans and contexts.count(contexts[0]) == len(contexts):
        return sm.uniform_decode(len(contexts), contexts[0])
    if spans and not contexts and len(spans) > 1 and spans.count(spans[0]) == len(spans):
        start, end = spans[0]
        return sm.uniform_verify(len(spans), start, end - start)  # n prompt pieces (start, end): the same step
    return sm.step(contexts, spans)


def _split(items: list, parts: int) -> list[list]:
    """``items`` in ``parts`` groups of sizes differing by at most one, in order."""
    q, r = divmod(len(items), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + q + (i < r)
        out.append(items[start:end])
        start = end
    return [g for g in out if g]


def cost(sc: Scenario, decode_contexts=(), prefill_spans=()) -> StepCost:
    """The cost of one step of scenario ``sc`` (module docstring for every rule).

    Args:
        sc: the scenario (model, chip, precisions, split, link).
        decode_contexts: for each sequence that decodes one token, the tokens already in its cache.
        prefill_spans: ``(start, end)`` for each prompt piece: positions ``start + 1 .. end`` of a
            prompt (``start`` already cached).

    Raises:
        ValueError: no tokens in the step, a negative context, a span out of order.
    """
    decode_contexts, prefill_spans = list(decode_contexts), list(prefill_spans)
    if not decode_contexts and not prefill_spans:
        raise ValueError("a step needs at least one decoding sequence or one prompt piece")
    # A batch of one context or one span (the common case, up to 100,000 long) is checked once.
    contexts = decode_contexts if decode_contexts.count(decode_contexts[0] if decode_contexts else 0) != len(
        decode_contexts) else decode_contexts[:1]
    spans = prefill_spans if prefill_spans.count(prefill_spans[0] if prefill_spans else 0) != len(
        prefill_spans) else prefill_spans[:1]
    if any(c < 0 for c in contexts) or any(not 0 <= s < e for s, e in spans):
        raise ValueError("decode contexts must be >= 0 and prompt pieces (start, end) with 0 <= start < end")
    sm = model_for(sc)
    m = sm.model
    sequences = len(decode_contexts) or 1
    if sc.devices == 1 and sc.microbatches == 1:
        d = _device_step(sm, decode_contexts, prefill_spans)
        groups = _groups(sm, d.tokens, 0.0)
        w = sum(groups.values())
        groups["kv_cache"] = d.bytes - w
        return StepCost(d.tokens, sequences, d.flops, d.bytes, groups, w, d.bytes - w, d.bytes, sm.precision,
                        sm.peak, sm.bandwidth, d.memory_seconds, d.compute_seconds, 0.0, d.seconds, d.bound,
                        0.0, (), 1)

    wire = catalog_link(sc.link)
    tp, pp, ep = sc.tp, sc.pp, sc.ep
    kv_split = 1 if m.mla is not None else min(tp, m.num_kv_heads)
    groups = ep if decode_contexts else 1  # attention replicas holding sequences (one prompt: one)
    expert_flops_per_token = transformer.FLOP_PER_MAC * transformer.param_counts(m).active_experts
    layers = m.num_layers / pp
    first_dense = min(m.moe.first_dense_layers, m.num_layers) if m.moe else m.num_layers
    moe_layers = (m.num_layers - first_dense) / pp
    micro = _split(decode_contexts, sc.microbatches) if decode_contexts else [[]]
    stage_times, parts = [], []
    for i, ctx in enumerate(micro):
        spans = prefill_spans if i == 0 else []
        d = _device_step(sm, ctx, spans)
        g = _groups(sm, d.tokens, 0.0)
        w = sum(g.values())
        kv = d.bytes - w
        experts = g.get("experts", 0.0)
        per_dev = (w - experts) / (tp * pp) + experts / (tp * pp * ep) + kv / (pp * groups * kv_split)
        expert_flops = expert_flops_per_token * d.tokens
        comp = ((d.flops - expert_flops) / (tp * pp * groups) + expert_flops / (tp * pp * ep)) / sm.peak
        mem = per_dev / sm.bandwidth
        message = d.tokens / groups * m.hidden_size * ACTIVATION_BYTES
        colls = []
        if tp > 1:
            each = allreduce_seconds(wire, message, tp)
            colls.append(Collective("all-reduce", tp, ALLREDUCES_PER_LAYER * layers, message,
                                    ring_allreduce_bytes(message, tp), each, ALLREDUCES_PER_LAYER * layers * each))
        if ep > 1 and moe_layers:
            nbytes = all_to_all_bytes(d.tokens / groups, m.moe.experts_per_token, m.hidden_size, ACTIVATION_BYTES, ep)
            each = nbytes / wire.bytes_per_s + 2 * (wire.base_latency_s + (ep - 1) * wire.step_latency_s)
            colls.append(Collective("all-to-all", ep, moe_layers, message, nbytes, each, moe_layers * each))
        if pp > 1:
            nbytes = d.tokens * m.hidden_size * ACTIVATION_BYTES
            each = nbytes / wire.bytes_per_s + wire.base_latency_s
            colls.append(Collective("send", 2, 1, nbytes, nbytes, each, each))
        comm = sum(c.seconds for c in colls)
        stage_times.append(max(mem, comp) + comm)
        parts.append((d, g, w, kv, per_dev, mem, comp, comm, colls))

    longest = max(range(len(parts)), key=lambda i: stage_times[i])
    d, g, w, kv, per_dev, mem, comp, comm, colls = parts[longest]
    busy = sum(stage_times)
    # Micro-batches of equal size sum to pp x one of them only to within rounding: no bubble then.
    seconds = busy if busy >= pp * stage_times[longest] * (1 - 1e-12) else pp * stage_times[longest]
    groups: dict[str, float] = {}
    for p in parts:
        for k, v in p[1].items():
            groups[k] = groups.get(k, 0.0) + v
    kv_all = sum(p[3] for p in parts)
    groups["kv_cache"] = kv_all
    w_all = sum(p[2] for p in parts)
    path = [Collective(c.kind, c.devices, c.count * pp, c.message_bytes, c.bytes_each, c.seconds_each, c.seconds * pp)
            for c in colls]
    return StepCost(
        tokens=sum(p[0].tokens for p in parts), sequences=sequences, flops=sum(p[0].flops for p in parts),
        bytes=w_all + kv_all, bytes_by_group=groups, weights_bytes=w_all, kv_bytes=kv_all,
        bytes_per_device=per_dev, compute_precision=sm.precision, peak_flops=sm.peak, bandwidth=sm.bandwidth,
        memory_seconds=pp * mem, compute_seconds=pp * comp, comm_seconds=pp * comm, seconds=seconds,
        bound="compute" if comp > mem else "memory", bubble=1 - busy / seconds, collectives=tuple(path),
        devices=sc.devices,
    )


def decode(sc: Scenario) -> StepCost:
    """One decode step of the scenario's batch, every sequence at ``sc.context`` tokens: its
    ``seconds`` is the time between tokens (ITL) each sequence sees."""
    return cost(sc, decode_contexts=[sc.context] * sc.batch)


def prefill(sc: Scenario, prompt_tokens: int | None = None, cached_tokens: int = 0) -> StepCost:
    """The step that reads one prompt (``prompt_tokens``, default ``sc.prompt_tokens``) in one
    pass, ``cached_tokens`` of it already cached: its ``seconds`` is the time to first token with
    no queue.

    Raises:
        ValueError: a prompt out of range, or a cached part not shorter than the prompt.
    """
    t = sc.prompt_tokens if prompt_tokens is None else prompt_tokens
    P.CONTEXT.but(label="Prompt").check(t)
    if not isinstance(cached_tokens, int) or isinstance(cached_tokens, bool) or not 0 <= cached_tokens <= t - 1:
        raise ValueError(f"cached tokens must be 0 to {format_int(t - 1)} "
                         f"(the last prompt token is always run), got {cached_tokens!r}")
    return cost(sc.but(microbatches=1), prefill_spans=[(cached_tokens, t)])



def compute_bound_batch(sc: Scenario, positions: int = 1) -> int | None:
    """The smallest batch at which a decode step of ``sc`` on one device is compute-bound, or None
    if none up to ``MAX_BATCH`` is (or the chip has no peak: a ``descent.custom`` chip).

    Memory time grows with B through the KV cache (and the experts a batch touches); compute time
    grows with B through the FLOPs. At long contexts each sequence's KV cache can cost more time
    to read than its FLOPs take, and then no batch is compute-bound. Found by doubling B until the
    step is compute-bound, then bisecting (the compute share of a step rises with B), on the
    one-device closed form (:meth:`StepModel.uniform_decode`, O(1) per probe). The scenario's batch
    and split are ignored.

    ``positions`` > 1 asks the same of a speculative-decoding verification step, in which each
    sequence runs ``positions`` = draft length + 1 positions through the target
    (:meth:`StepModel.uniform_verify`): the arithmetic per sequence is ``positions`` times a decode
    step's, the bytes barely grow, so the ridge comes at a smaller batch.
    """
    sm = model_for(sc)
    if sm.peak == math.inf:
        return None  # a chip described without a peak (descent.custom): no compute ceiling at any batch
    context = sc.context

    def bound(b: int) -> bool:
        if positions > 1:
            return sm.uniform_verify(b, context, positions).bound == "compute"
        return sm.uniform_decode(b, context).bound == "compute"

    lo, hi = 1, 1
    if bound(1):
        return 1
    while not bound(hi):
        lo = hi
        if hi >= MAX_BATCH:
            return None
        hi = min(hi * 2, MAX_BATCH)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if bound(mid):
            hi = mid
        else:
            lo = mid
    return hi

# ---------------------------------------------------------------------------------------------
# What each device holds
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Footprint:
    """What one device holds for a scenario. Units: bytes.

    Attributes:
        weights_bytes: every stored weight once (all experts), the whole model, bytes
            (``descent.weights.bytes_by_group``).
        weights_bytes_per_device: non-expert weights / (tp pp) + routed experts / (tp pp ep).
        kv_bytes: the batch's KV cache at the scenario's context, whole model.
        kv_bytes_per_device: ``kv_bytes / (pp x ep x s)``, s = min(tp, K) (1 for MLA).
        need_bytes: weights + KV cache per device. usable_bytes: ``Scenario.usable_bytes``.
        free_bytes: usable - need (negative when it does not fit). fits: ``free_bytes >= 0``.
    """

    weights_bytes: float
    weights_bytes_per_device: float
    kv_bytes: float
    kv_bytes_per_device: float
    need_bytes: float
    usable_bytes: float
    free_bytes: float
    fits: bool


def footprint(sc: Scenario) -> Footprint:
    """Weights and KV cache per device against the usable memory (module docstring's split)."""
    m = sc.model_row
    stored = bytes_by_group(m, check_weights(sc.weights))
    total = sum(stored.values())
    experts = stored.get("experts", 0.0)
    w_dev = (total - experts) / (sc.tp * sc.pp) + experts / (sc.tp * sc.pp * sc.ep)
    kv_split = 1 if m.mla is not None else min(sc.tp, m.num_kv_heads)
    kv_all = kv_cache_bytes(m, kv_precision(sc.kv), sc.context, sc.batch)
    kv_dev = kv_all / (sc.pp * sc.ep * kv_split)
    need = w_dev + kv_dev
    usable = sc.usable_bytes
    return Footprint(total, w_dev, kv_all, kv_dev, need, usable, usable - need, need <= usable)
