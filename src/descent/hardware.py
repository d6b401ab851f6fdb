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

(one step yields one token for each of the B sequences). It is an upper bound: compute, kernel
launch, communication and imperfect bandwidth use all come on top.

**What a step reads** (``bytes_per_decode_step``):

* every weight the step uses, once, in the weight precision, except:
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

from dataclasses import dataclass

from descent import params, transformer
from descent.catalog import Accelerator, Model
from descent.catalog import accelerator as _catalog_accelerator
from descent.catalog import model as _catalog_model
from descent.checks import is_real
from descent.numerics import BITS_PER_BYTE, Precision, kv_precision
from descent.numerics import precision as _weight_precision

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
    "decode_step_bytes",
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


def check_inputs(
    model: str | Model, weights: str, kv: str, context: int, batch: int
) -> tuple[Model, Precision, Precision]:
    """The model and the two precisions of a decode or sizing question, every input checked.

    Checks, in this order: the model (or its catalog id), the weight precision
    (``numerics.PRECISIONS``), the KV-cache precision (``numerics.KV_PRECISIONS``), ``context``
    (``transformer.check_context``: 1 to 10,000,000 tokens) and ``batch`` (:func:`check_batch`).
    Shared by :func:`decode_step_bytes` and :func:`descent.memory.size`.

    Raises:
        ValueError: the first input that is not allowed (the message lists what is).
    """
    mod = resolve_model(model)
    wp, kp = _weight_precision(weights), kv_precision(kv)
    transformer.check_context(mod, context)
    check_batch(batch)
    return mod, wp, kp


def kv_cache_bytes(model: Model, kv: Precision, context: int, batch: int) -> float:
    """KV cache of ``batch`` sequences at ``context`` tokens in precision ``kv``, bytes.

    ``transformer.kv_cache_elements(model, context) x batch x kv bits / 8`` (all layers, sliding
    windows capped). Inputs are not checked here: use :func:`check_inputs` first.
    """
    return transformer.kv_cache_elements(model, context) * batch * kv.bits_per_weight / BITS_PER_BYTE


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
        context: tokens already in each sequence's KV cache, 1 to 10,000,000.
        batch: B, sequences decoded together, 1 to ``MAX_BATCH``.
        moe_routing: ``"uniform"`` (expected expert coverage at batch B) or ``"active"`` (k of E).

    Raises:
        ValueError: unknown id or precision, context or batch out of range, unknown routing.
    """
    mod, wp, kp = check_inputs(model, weights, kv, context, batch)
    _check_routing(moe_routing)
    pc = transformer.param_counts(mod)

    if mod.moe is None or pc.experts == 0:
        share = 0.0
        routed = 0.0
    elif batch == 1 or moe_routing == "active":
        share = pc.active_experts / pc.experts
        routed = float(pc.active_experts)
    else:
        k_over_e = mod.moe.experts_per_token / mod.moe.num_experts
        share = 1.0 - (1.0 - k_over_e) ** batch
        routed = pc.experts * share

    if mod.tie_embeddings:
        embedding_read = pc.embedding  # the table is the output head: every row is read
    else:
        embedding_read = min(batch, mod.vocab_size) * mod.hidden_size  # B looked-up rows
    weight_params = pc.total - pc.experts - pc.embedding + routed + embedding_read
    w_bytes = weight_params * wp.bits_per_weight / BITS_PER_BYTE
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
    """Memory-bandwidth upper bound on decode speed.

    Attributes:
        bytes_per_step: bytes one step reads (all B sequences), bytes.
        step_seconds: ``bytes_per_step / memory_bandwidth``, seconds (a lower bound on ITL).
        tokens_per_s_per_sequence: ``1 / step_seconds``, tokens/s seen by each sequence.
        tokens_per_s_total: ``batch / step_seconds``, tokens/s over the batch.
        batch: B.
        memory_bandwidth: bytes/s used.
    """

    bytes_per_step: float
    step_seconds: float
    tokens_per_s_per_sequence: float
    tokens_per_s_total: float
    batch: int
    memory_bandwidth: float


def decode_ceiling(
    model: str | Model,
    accelerator: str | Accelerator,
    weights: str = "bf16",
    kv: str = "bf16",
    context: int = 8192,
    batch: int = 1,
    moe_routing: str = "uniform",
) -> DecodeCeiling:
    """Upper bound on decode speed on one accelerator: bandwidth / bytes per step.

    tokens/s per sequence = memory_bandwidth / bytes_per_decode_step (one step gives every sequence
    one token); total = batch x that. Pope et al. 2022, section 2; Williams et al. 2009.
    Whether the model fits is :func:`descent.memory.size`'s question, not this one's.

    Raises:
        ValueError: unknown id or precision, context or batch out of range.
    """
    a = resolve_accelerator(accelerator)
    step = bytes_per_decode_step(model, weights, kv, context, batch, moe_routing)
    seconds = step / a.memory_bandwidth
    per_seq = a.memory_bandwidth / step
    return DecodeCeiling(
        bytes_per_step=step,
        step_seconds=seconds,
        tokens_per_s_per_sequence=per_seq,
        tokens_per_s_total=per_seq * batch,
        batch=batch,
        memory_bandwidth=a.memory_bandwidth,
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
