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

**The compute ceiling.** A step also does arithmetic: ``B x flops_per_token`` (2 FLOP per active
matmul weight per sequence, plus attention's 4 x layers x heads x d_head x context), which takes at
least ``flops / peak`` seconds at the chip's dense peak in the precision the math runs in
(:func:`descent.step.compute_precision`). The step takes at least the longer of the two times (the roofline of
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

Every number here is a view of the one step model, :mod:`descent.step` (one device: the scenario's
split is ignored); this module names its parts the way the roofline does.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from dataclasses import dataclass

from descent import step as S
from descent import transformer
from descent.catalog import Accelerator, Model
from descent.numerics import Precision, kv_precision
from descent.scenario import Scenario

__all__ = [
    "DecodeCeiling",
    "StepBytes",
    "StepTime",
    "bytes_per_decode_step",
    "check_inputs",
    "compute_bound_batch",
    "decode_ceiling",
    "decode_step_bytes",
    "prefill_time",
]


def check_inputs(
    model: str | Model, weights: str = Scenario.weights, kv: str = Scenario.kv, context: int = Scenario.context, batch: int = Scenario.batch
) -> tuple[Model, str, Precision]:
    """The model, the weight choice and the KV precision of a decode or sizing question, checked
    (as a :class:`descent.scenario.Scenario` checks them: model, weights, KV precision, context,
    batch, in that order).

    Raises:
        ValueError: the first input that is not allowed (the message lists what is).
    """
    sc = Scenario(model=model, weights=S.check_weights(weights), kv=kv, context=context, batch=batch)
    return sc.model_row, sc.weights, kv_precision(sc.kv)


@dataclass(frozen=True)
class StepBytes:
    """The bytes one decode step reads, by part. Units: bytes.

    Attributes:
        weight_params: weight values read (embedding rows, MoE coverage applied), parameters
            (a float when the MoE coverage is an expectation).
        weights_bytes: ``weight_params`` in their stored precisions, bytes.
        kv_cache_bytes: KV cache of all B sequences at this context, bytes.
        total_bytes: ``weights_bytes + kv_cache_bytes``.
        routed_expert_share: fraction of routed-expert weights read (0 for dense models).
        by_group: ``weights_bytes`` by weight group (``descent.weights.GROUPS``).
    """

    weight_params: float
    weights_bytes: float
    kv_cache_bytes: float
    total_bytes: float
    routed_expert_share: float
    by_group: dict


def _scenario(model, accelerator, weights, kv, context, batch, moe_routing) -> Scenario:
    return Scenario(model=model, accelerator=accelerator, weights=S.check_weights(weights), kv=kv,
                    context=context, batch=batch, moe_routing=moe_routing)


def decode_step_bytes(model: str | Model, weights: str = Scenario.weights, kv: str = Scenario.kv, context: int = Scenario.context, batch: int = Scenario.batch,
                      moe_routing: str = "uniform") -> StepBytes:
    """Bytes one decode step of ``batch`` sequences at ``context`` tokens reads, by part
    (:func:`descent.step.decode`'s bytes; the module docstring gives the rule).

    Raises:
        ValueError: unknown id or precision, context or batch out of range, unknown routing.
    """
    sc = _scenario(model, Scenario.accelerator, weights, kv, context, batch, moe_routing)  # bytes: any chip
    c = S.decode(sc)
    groups = {g: b for g, b in c.bytes_by_group.items() if g != "kv_cache"}
    m = sc.model_row
    shares = S.read_shares(m, min(batch, S.MAX_BATCH), moe_routing)
    pc = transformer.param_counts(m)
    params = sum(getattr(pc, g) * shares.get(g, 1.0) for g in groups)
    return StepBytes(params, c.weights_bytes, c.kv_bytes, c.bytes, shares["experts"], groups)


def bytes_per_decode_step(model: str | Model, weights: str = Scenario.weights, kv: str = Scenario.kv, context: int = Scenario.context, batch: int = Scenario.batch,
                          moe_routing: str = "uniform") -> float:
    """``decode_step_bytes(...).total_bytes``, bytes; arguments and errors as there."""
    return decode_step_bytes(model, weights, kv, context, batch, moe_routing).total_bytes


@dataclass(frozen=True)
class DecodeCeiling:
    """Upper bound on decode speed: the longer of the memory time and the compute time of a step.

    Attributes:
        bytes_per_step: bytes one step reads (all B sequences), bytes.
        flops_per_step: FLOPs of one step, FLOP.
        memory_seconds: ``bytes_per_step / memory_bandwidth``, seconds.
        compute_seconds: ``flops_per_step / peak``, seconds.
        step_seconds: the longer of the two, seconds (a lower bound on ITL).
        bound: ``"memory"`` or ``"compute"``: which of the two sets ``step_seconds``.
        tokens_per_s_per_sequence: ``1 / step_seconds``, tokens/s seen by each sequence.
        tokens_per_s_total: ``batch / step_seconds``, tokens/s over the batch.
        batch: B. memory_bandwidth: bytes/s. peak_flops: FLOP/s.
        compute_precision: the precision the math runs in (:func:`descent.step.compute_precision`).
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


def decode_ceiling(model: str | Model, accelerator: str | Accelerator, weights: str = Scenario.weights, kv: str = Scenario.kv, context: int = Scenario.context,
                   batch: int = Scenario.batch, moe_routing: str = "uniform") -> DecodeCeiling:
    """Upper bound on decode speed on one accelerator: :func:`descent.step.decode` on one device.

    Raises:
        ValueError: unknown id or precision, context or batch out of range.
    """
    c = S.decode(_scenario(model, accelerator, weights, kv, context, batch, moe_routing))
    return DecodeCeiling(
        bytes_per_step=c.bytes, flops_per_step=c.flops, memory_seconds=c.memory_seconds,
        compute_seconds=c.compute_seconds, step_seconds=c.seconds, bound=c.bound,
        tokens_per_s_per_sequence=c.tokens_per_s_per_sequence, tokens_per_s_total=c.tokens_per_s_total,
        batch=batch, memory_bandwidth=c.bandwidth, peak_flops=c.peak_flops, compute_precision=c.compute_precision,
    )


def compute_bound_batch(model: str | Model, accelerator: str | Accelerator, weights: str = Scenario.weights, kv: str = Scenario.kv, context: int = Scenario.context,
                        moe_routing: str = "uniform", positions: int = 1) -> int | None:
    """The smallest batch at which a decode step is compute-bound on one device, or None if none up
    to ``step.MAX_BATCH`` is: :func:`descent.step.compute_bound_batch` (``positions`` > 1: a
    speculative verification step of that many positions per sequence).

    Raises:
        ValueError: as :func:`decode_ceiling`.
    """
    return S.compute_bound_batch(_scenario(model, accelerator, weights, kv, context, 1, moe_routing), positions)


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


def prefill_time(model: str | Model, accelerator: str | Accelerator, weights: str = Scenario.weights, kv: str = Scenario.kv,
                 prompt_tokens: int = Scenario.context) -> StepTime:
    """The roofline time of prefilling one prompt of ``prompt_tokens`` tokens in one pass, on one
    device: :func:`descent.step.prefill`. TTFT is at least this.

    Raises:
        ValueError: unknown ids or precisions, ``prompt_tokens`` out of range.
    """
    sc = _scenario(model, accelerator, weights, kv, prompt_tokens, 1, "uniform")
    c = S.prefill(sc, prompt_tokens)
    return StepTime(flops=c.flops, bytes=c.bytes, intensity=c.intensity, ridge=c.peak_flops / c.bandwidth,
                    memory_seconds=c.memory_seconds, compute_seconds=c.compute_seconds, seconds=c.seconds,
                    bound=c.bound)
