"""Hardware arithmetic: bytes moved per decode step, decode ceilings, the roofline.

**Why decode is memory-bound.** To produce one token per sequence, a decode step multiplies every
weight matrix by a batch of B vectors: about 2 FLOP per weight per sequence, while each weight is
read from memory once per step. At small B the arithmetic intensity (FLOP per byte) is far below the
chip's ridge point, so the step takes as long as reading the bytes takes (Pope et al. 2022,
"Efficiently Scaling Transformer Inference", arXiv:2211.05102, section 2; the roofline of Williams,
Waterman & Patterson 2009, "Roofline: an insightful visual performance model", CACM 52(4)).
Hence the **decode ceiling**:

    step time >= bytes_per_decode_step / memory_bandwidth
    tokens/s per sequence <= memory_bandwidth / bytes_per_decode_step
    tokens/s in total     <= B * memory_bandwidth / bytes_per_decode_step

(one step yields one token for each of the B sequences).

**The compute roof.** A step also does arithmetic: ``B x flops_per_token`` (2 FLOP per active
matmul weight per sequence, plus attention's 4 x layers x heads x d_head x context), which takes at
least ``flops / peak`` seconds at the chip's dense peak in the precision the math runs in
(:func:`compute_precision`). The step takes at least the longer of the two times (the roofline of
Williams et al. 2009), so decode is *memory-bound* at small batches and becomes *compute-bound*
once B x flops_per_token / peak exceeds bytes / bandwidth (:func:`compute_bound_batch`). Prefill
runs the whole prompt in one pass and is compute-bound for all but tiny prompts
(:func:`prefill_time`). Both are upper bounds on speed: kernel launches, communication and
imperfect use of bandwidth and tensor cores come on top.

**What a step reads** (``bytes_per_decode_step``):

* every weight the step uses, once, in its stored precision (:func:`descent.weights.bytes_by_group`:
  as released, a GGUF mix, or one precision for all), except:
  - an *untied* input embedding contributes only the rows looked up, min(B, V) rows of D values
    (a lookup, not a matmul); the separate output head (D x V) is read in full;
  - a *tied* embedding is the output head, so it is read in full;
  - MoE routed experts: with B = 1 exactly the k of E experts per layer the token picks (the
    model's *active* parameters). With B tokens routed independently and uniformly, an expert is
    untouched with probability (1 - k/E)^B, so the expected share of routed-expert weights read
    is 1 - (1 - k/E)^B (``moe_routing="uniform"``, the default). ``moe_routing="active"`` keeps
    the B = 1 share at every batch, the lower bound usually quoted. Real routers are skewed, which
    puts the truth between the two.
* the KV cache of all B sequences at this context, in the KV precision
  (``transformer.kv_cache_elements``: all layers, sliding windows capped). Writing the one new
  token's K and V is 1/context of that and is not counted.

Activations stay on chip at decode sizes and are not counted.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from descent import params, transformer
from descent.catalog import Accelerator, Model
from descent.catalog import accelerator as _catalog_accelerator
from descent.catalog import model as _catalog_model
from descent.checks import is_real
from descent.numerics import Precision, kv_precision

__all__ = [
    "COMPUTE_PRECISIONS",
    "MAX_BATCH",
    "MOE_ROUTINGS",
    "DecodeCeiling",
    "StepBytes",
    "bytes_per_decode_step",
    "check_batch",
    "check_inputs",
    "decode_ceiling",
    "StepTime",
    "compute_bound_batch",
    "compute_precision",
    "decode_step_bytes",
    "prefill_time",
    "kv_cache_bytes",
    "peak_flops",
    "resolve_accelerator",
    "resolve_model",
    "ridge_point",
    "roofline",
]

#: Largest batch (concurrent sequences) accepted, sequences. A guard against typos, well above what
#: serving engines run on one replica (vLLM's ``max_num_seqs`` defaults to a few hundred).
MAX_BATCH = params.BATCH.max

#: How a batch of tokens spreads over MoE experts; see the module docstring.
MOE_ROUTINGS = ("uniform", "active")

#: Compute precision -> the Accelerator field holding its dense peak FLOP/s.
COMPUTE_PRECISIONS: dict[str, str] = {
    "bf16": "bf16_flops",
    "fp16": "bf16_flops",
    "fp8": "fp8_flops",
    "fp4": "fp4_flops",
    "mxfp4": "fp4_flops",
    "nvfp4": "fp4_flops",
}


def resolve_model(model: str | Model) -> Model:
    """A ``Model`` from itself or its catalog id. Raises ValueError listing the allowed ids."""
    return model if isinstance(model, Model) else _catalog_model(model)


def resolve_accelerator(accelerator: str | Accelerator) -> Accelerator:
    """An ``Accelerator`` from itself or its catalog id. Raises ValueError listing the allowed ids."""
    return accelerator if isinstance(accelerator, Accelerator) else _catalog_accelerator(accelerator)


def check_batch(batch: int) -> int:
    """Return ``batch`` if it is a whole number of sequences from 1 to ``MAX_BATCH``, else raise ValueError."""
    return params.BATCH.check(batch)


def check_weights(weights: str) -> str:
    """Return ``weights`` if it is a weight choice (``descent.weights.scheme_names()``: ``released``,
    a GGUF mix or a precision of ``numerics.PRECISIONS``), else raise ValueError listing them."""
    from descent.weights import scheme_names

    if weights not in scheme_names():
        raise ValueError(f"unknown weight precision {weights!r}; allowed: {', '.join(scheme_names())}")
    return weights


def check_inputs(
    model: str | Model, weights: str, kv: str, context: int, batch: int
) -> tuple[Model, str, Precision]:
    """The model, the weight choice and the KV precision of a decode or sizing question, checked.

    Checks, in this order: the model (or its catalog id), the weight choice (:func:`check_weights`),
    the KV-cache precision (``numerics.KV_PRECISIONS``), ``context`` (``transformer.check_context``:
    1 to 20,000,000 tokens) and ``batch`` (:func:`check_batch`). Shared by
    :func:`decode_step_bytes` and :func:`descent.memory.size`.

    Raises:
        ValueError: the first input that is not allowed (the message lists what is).
    """
    mod = resolve_model(model)
    w, kp = check_weights(weights), kv_precision(kv)
    transformer.check_context(mod, context)
    check_batch(batch)
    return mod, w, kp


def kv_cache_bytes(model: Model, kv: Precision, context: int, batch: int) -> float:
    """KV cache of ``batch`` sequences at ``context`` tokens in precision ``kv``, bytes.

    ``transformer.kv_cache_bytes(model, context, kv bits) x batch`` (all layers, sliding windows
    capped, a linear-attention state at its own 16 bits). Inputs are not checked here: use
    :func:`check_inputs` first.
    """
    return transformer.kv_cache_bytes(model, context, kv.bits_per_weight) * batch


def _check_routing(moe_routing: str) -> str:
    if moe_routing not in MOE_ROUTINGS:
        raise ValueError(f"moe_routing must be one of {', '.join(MOE_ROUTINGS)}, got {moe_routing!r}")
    return moe_routing


@dataclass(frozen=True)
class StepBytes:
    """The bytes one decode step reads, by part. Units: parameters and bytes (floats for bytes).

    Attributes:
        weight_params: weight values read (embedding rows, MoE coverage applied), parameters (float
            when MoE coverage is an expectation).
        weights_bytes: ``weight_params`` in the weight precision, bytes.
        kv_cache_bytes: KV cache of all B sequences at this context, bytes.
        total_bytes: ``weights_bytes + kv_cache_bytes``.
        routed_expert_share: fraction of routed-expert weights read (0 for dense models).
    """

    weight_params: float
    weights_bytes: float
    kv_cache_bytes: float
    total_bytes: float
    routed_expert_share: float


def decode_step_bytes(
    model: str | Model,
    weights: str = "bf16",
    kv: str = "bf16",
    context: int = 8192,
    batch: int = 1,
    moe_routing: str = "uniform",
) -> StepBytes:
    """Bytes one decode step reads, by part (see the module docstring for the rule).

    Args:
        model: model or its catalog id.
        weights: weight precision name (``numerics.PRECISIONS``).
        kv: KV-cache precision name (``numerics.KV_PRECISIONS``).
        context: tokens already in each sequence's KV cache, 1 to 20,000,000.
        batch: B, sequences decoded together, 1 to ``MAX_BATCH``.
        moe_routing: ``"uniform"`` (expected expert coverage at batch B) or ``"active"`` (k of E).

    Raises:
        ValueError: unknown id or precision, context or batch out of range, unknown routing.
    """
    from descent.weights import bytes_by_group

    mod, w, kp = check_inputs(model, weights, kv, context, batch)
    _check_routing(moe_routing)
    pc = transformer.param_counts(mod)
    stored = bytes_by_group(mod, w)

    if mod.moe is None or pc.experts == 0:
        share = 0.0
    elif batch == 1 or moe_routing == "active":
        share = pc.active_experts / pc.experts
    else:
        k_over_e = mod.moe.experts_per_token / mod.moe.num_experts
        share = 1.0 - (1.0 - k_over_e) ** batch

    # Fraction of each group one step reads: B looked-up rows of an untied embedding table (a tied
    # one is the output head, read in full), the routed experts the batch picks, all of the rest.
    read = dict.fromkeys(stored, 1.0)
    if not mod.tie_embeddings:
        read["embedding"] = min(batch, mod.vocab_size) / mod.vocab_size
    read["experts"] = share
    weight_params = sum(getattr(pc, g) * f for g, f in read.items())
    w_bytes = sum(stored[g] * f for g, f in read.items())
    kv_bytes = kv_cache_bytes(mod, kp, context, batch)
    return StepBytes(
        weight_params=weight_params,
        weights_bytes=w_bytes,
        kv_cache_bytes=kv_bytes,
        total_bytes=w_bytes + kv_bytes,
        routed_expert_share=share,
    )


def bytes_per_decode_step(
    model: str | Model,
    weights: str = "bf16",
    kv: str = "bf16",
    context: int = 8192,
    batch: int = 1,
    moe_routing: str = "uniform",
) -> float:
    """Bytes read from memory by one decode step of ``batch`` sequences at ``context`` tokens.

    ``decode_step_bytes(...).total_bytes``; arguments and errors as there.
    """
    return decode_step_bytes(model, weights, kv, context, batch, moe_routing).total_bytes


@dataclass(frozen=True)
class DecodeCeiling:
    """Upper bound on decode speed: the longer of the memory time and the compute time of a step.

    Attributes:
        bytes_per_step: bytes one step reads (all B sequences), bytes.
        flops_per_step: FLOPs of one step, ``B x transformer.flops_per_token(model, context)``.
        memory_seconds: ``bytes_per_step / memory_bandwidth``, seconds.
        compute_seconds: ``flops_per_step / peak``, seconds (dense peak in ``compute_precision``).
        step_seconds: the longer of the two, seconds (a lower bound on ITL).
        bound: ``"memory"`` or ``"compute"``: which of the two sets ``step_seconds``.
        tokens_per_s_per_sequence: ``1 / step_seconds``, tokens/s seen by each sequence.
        tokens_per_s_total: ``batch / step_seconds``, tokens/s over the batch.
        batch: B.
        memory_bandwidth: bytes/s used.
        peak_flops: FLOP/s used.
        compute_precision: the precision the math runs in (:func:`compute_precision`).
    """

    bytes_per_step: float
    flops_per_step: float
    memory_seconds: float
    compute_seconds: float
    step_seconds: float
    bound: str
    tokens_per_s_per_sequence: float
    tokens_per_s_total: float
    batch: int
    memory_bandwidth: float
    peak_flops: float
    compute_precision: str


def compute_precision(model: str | Model, accelerator: str | Accelerator, weights: str) -> str:
    """The precision a decode or prefill step's matmuls run in: ``"fp4"``, ``"fp8"`` or ``"bf16"``.

    FP8 weights (``fp8``, ``fp8_b128``) run FP8 matmuls and FP4 weights (``mxfp4``, ``nvfp4``) FP4
    matmuls when the chip has a dense peak for that precision (H100 has FP8, not FP4; B200 both).
    Integer and GGUF formats are weight-only: the weights are dequantized and the math runs in
    16-bit, as are FP32/FP16/BF16 weights (counted at the BF16/FP16 peak). For ``released``, the
    precision that holds the most parameters decides (gpt-oss: its MXFP4 experts).

    Raises:
        ValueError: unknown model, accelerator or weight choice.
    """
    from descent import weights as W

    a = resolve_accelerator(accelerator)
    w = check_weights(weights)
    if w == W.RELEASED:
        pc = transformer.param_counts(resolve_model(model))
        rm = W.released_map(resolve_model(model))
        by_precision: dict[str, int] = {}
        for g in W.GROUPS:
            by_precision[rm.by_group[g]] = by_precision.get(rm.by_group[g], 0) + getattr(pc, g)
        w = max(by_precision, key=by_precision.get)
    if w in ("fp8", "fp8_b128") and a.fp8_flops is not None:
        return "fp8"
    if w in ("mxfp4", "nvfp4") and a.fp4_flops is not None:
        return "fp4"
    return "bf16"


def decode_ceiling(
    model: str | Model,
    accelerator: str | Accelerator,
    weights: str = "bf16",
    kv: str = "bf16",
    context: int = 8192,
    batch: int = 1,
    moe_routing: str = "uniform",
) -> DecodeCeiling:
    """Upper bound on decode speed on one accelerator: the roofline of one decode step.

    step seconds = max(bytes_per_step / bandwidth, flops_per_step / peak); tokens/s per sequence =
    1 / step seconds (one step gives every sequence one token); total = batch x that. Pope et al.
    2022, section 2; Williams et al. 2009. Whether the model fits is
    :func:`descent.memory.size`'s question, not this one's.

    Raises:
        ValueError: unknown id or precision, context or batch out of range.
    """
    a = resolve_accelerator(accelerator)
    mod = resolve_model(model)
    step = bytes_per_decode_step(mod, weights, kv, context, batch, moe_routing)
    flops = batch * transformer.flops_per_token(mod, context)
    cp = compute_precision(mod, a, weights)
    peak = peak_flops(a, cp)
    mem_s, comp_s = step / a.memory_bandwidth, flops / peak
    seconds = max(mem_s, comp_s)
    return DecodeCeiling(
        bytes_per_step=step,
        flops_per_step=flops,
        memory_seconds=mem_s,
        compute_seconds=comp_s,
        step_seconds=seconds,
        bound="compute" if comp_s > mem_s else "memory",
        tokens_per_s_per_sequence=1 / seconds,
        tokens_per_s_total=batch / seconds,
        batch=batch,
        memory_bandwidth=a.memory_bandwidth,
        peak_flops=peak,
        compute_precision=cp,
    )


def compute_bound_batch(
    model: str | Model,
    accelerator: str | Accelerator,
    weights: str = "bf16",
    kv: str = "bf16",
    context: int = 8192,
    moe_routing: str = "uniform",
) -> int | None:
    """The smallest batch at which a decode step is compute-bound, or None if none up to MAX_BATCH is.

    Memory time grows with B through the KV cache (and the experts a batch touches); compute time
    grows with B through the FLOPs. At long contexts each sequence's KV cache can cost more time
    to read than its FLOPs take, and then no batch is compute-bound. Found by doubling B until the
    step is compute-bound, then bisecting (the compute share of a step rises with B).

    Raises:
        ValueError: as :func:`decode_ceiling`.
    """
    def bound(b: int) -> bool:
        return decode_ceiling(model, accelerator, weights, kv, context, b, moe_routing).bound == "compute"

    if decode_ceiling(model, accelerator, weights, kv, context, 1, moe_routing).peak_flops == math.inf:
        return None  # a chip described without a peak (descent.custom): no compute roof at any batch
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


@dataclass(frozen=True)
class StepTime:
    """One forward pass against the roofline (units: FLOP, bytes, seconds).

    Attributes:
        flops: FLOPs of the pass. bytes: bytes it moves to and from memory.
        intensity: flops / bytes, FLOP per byte. ridge: peak / bandwidth, FLOP per byte.
        memory_seconds, compute_seconds: bytes / bandwidth and flops / peak.
        seconds: the longer of the two. bound: ``"memory"`` or ``"compute"``.
    """

    flops: float
    bytes: float
    intensity: float
    ridge: float
    memory_seconds: float
    compute_seconds: float
    seconds: float
    bound: str


def prefill_time(
    model: str | Model,
    accelerator: str | Accelerator,
    weights: str = "bf16",
    kv: str = "bf16",
    prompt_tokens: int = 8192,
) -> StepTime:
    """The roofline time of prefilling one prompt of ``prompt_tokens`` tokens in one pass.

    FLOPs: ``2 x matmul_params_per_token x T`` plus attention, token t attending to t tokens
    (``attention_flops_per_token`` summed over t = 1..T, computed in closed form per layer).
    Bytes: every stored weight read once (all experts: a long prompt routes to all of them) plus
    the KV cache written for the T tokens. The time is the longer of bytes / bandwidth and
    flops / peak (Williams et al. 2009); TTFT is at least this.

    Raises:
        ValueError: unknown ids or precisions, ``prompt_tokens`` out of range.
    """
    from descent.weights import bytes_by_group

    mod, w, kp = check_inputs(model, weights, kv, prompt_tokens, 1)
    a = resolve_accelerator(accelerator)
    T = prompt_tokens
    # Attention: sum over t of attention_flops_per_token(t) ~ T * attention_flops(T) / 2 (the scores
    # grow linearly with t); exact for full layers, an upper bound for sliding ones.
    attn = (transformer.attention_flops_per_token(mod, T) * (T + 1)) / 2
    flops = transformer.FLOP_PER_MAC * transformer.matmul_params_per_token(mod) * T + attn
    nbytes = sum(bytes_by_group(mod, w).values()) + kv_cache_bytes(mod, kp, T, 1)
    peak = peak_flops(a, compute_precision(mod, a, w))
    mem_s, comp_s = nbytes / a.memory_bandwidth, flops / peak
    return StepTime(
        flops=flops, bytes=nbytes, intensity=flops / nbytes, ridge=peak / a.memory_bandwidth,
        memory_seconds=mem_s, compute_seconds=comp_s, seconds=max(mem_s, comp_s),
        bound="compute" if comp_s > mem_s else "memory",
    )


def peak_flops(accelerator: str | Accelerator, precision: str = "bf16") -> float:
    """Dense peak FLOP/s of an accelerator in a compute precision (``COMPUTE_PRECISIONS``), FLOP/s.

    Raises:
        ValueError: unknown precision, or the chip has no peak for it (e.g. FP4 on H100); the
            message lists the precisions this chip has.
    """
    a = resolve_accelerator(accelerator)
    if precision not in COMPUTE_PRECISIONS:
        raise ValueError(
            f"compute precision must be one of {', '.join(COMPUTE_PRECISIONS)}, got {precision!r}"
        )
    value = getattr(a, COMPUTE_PRECISIONS[precision])
    if value is None:
        have = [p for p, f in COMPUTE_PRECISIONS.items() if getattr(a, f) is not None]
        raise ValueError(f"{a.name} has no {precision} peak; allowed for this chip: {', '.join(have)}")
    return value


def ridge_point(accelerator: str | Accelerator, precision: str = "bf16") -> float:
    """The roofline's ridge point: peak FLOP/s / memory bandwidth, in FLOP per byte.

    Below this arithmetic intensity a kernel is memory-bound (Williams et al. 2009, section 2).
    Raises ValueError as :func:`peak_flops`.
    """
    a = resolve_accelerator(accelerator)
    return peak_flops(a, precision) / a.memory_bandwidth


def roofline(accelerator: str | Accelerator, intensity: float, precision: str = "bf16") -> float:
    """Attainable FLOP/s at an arithmetic intensity: min(peak, intensity x bandwidth).

    Args:
        accelerator: accelerator or its id.
        intensity: arithmetic intensity, FLOP per byte of memory traffic, > 0.
        precision: compute precision (``COMPUTE_PRECISIONS``).

    Source: Williams, Waterman & Patterson 2009, "Roofline", CACM 52(4), equation in section 2.

    Raises:
        ValueError: intensity not a positive finite number; errors of :func:`peak_flops`.
    """
    if (
        not is_real(intensity)
        or not 0 < intensity < float("inf")
    ):
        raise ValueError(f"intensity must be a positive number of FLOP per byte, got {intensity!r}")
    a = resolve_accelerator(accelerator)
    return min(peak_flops(a, precision), intensity * a.memory_bandwidth)
