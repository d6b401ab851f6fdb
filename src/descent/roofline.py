"""The roofline of one model on one chip: FLOPs and bytes of a step, and which roof binds.

A step of a transformer is a sequence of matrix products whose arithmetic and memory traffic can
be counted from the model's shapes (:mod:`descent.transformer`, :mod:`descent.hardware`). The
roofline model (Williams, Waterman & Patterson 2009, "Roofline: an insightful visual performance
model", CACM 52(4), section 2) bounds the time of the step by the slower of two roofs:

    seconds >= max(FLOPs / peak FLOP/s, bytes / memory bandwidth)
    intensity = FLOPs / bytes                      (FLOP per byte)
    ridge     = peak FLOP/s / memory bandwidth     (FLOP per byte)
    bound     = "memory" if intensity < ridge else "compute"

Two kinds of step (:data:`PHASES`):

* **decode**: each of B sequences, holding ``context`` tokens, gets one new token. FLOPs are
  ``B x transformer.flops_per_token(model, context)`` (2 per weight a token multiplies by, plus
  attention over the context); bytes are :func:`descent.hardware.decode_step_bytes` (the weights
  the batch touches, once, plus every sequence's KV cache).
* **prefill**: each of B sequences reads a prompt of ``context`` tokens in one pass. FLOPs are the
  sum over positions t = 1..context of ``flops_per_token(model, t)`` (token t attends to t
  tokens, sliding layers capped at their window), times B; bytes are the weights touched by
  B x context tokens (MoE: nearly every expert), read once, plus the KV cache written. Activations
  are not counted: a fused kernel keeps most of them on chip, and at prefill sizes the weights and
  the arithmetic dominate (Pope et al. 2022, "Efficiently Scaling Transformer Inference",
  arXiv:2211.05102, section 3).

**The precision the arithmetic runs in** (:func:`compute_precision`). Weights in FP8 run on the
FP8 tensor cores where the chip has them; MXFP4/NVFP4 weights on FP4 units where it has them;
everything else (BF16, FP16, FP32, and the weight-only integer formats INT8/INT4 and GGUF, which
kernels dequantize to 16 bits before multiplying) at the chip's dense BF16 peak. A chip without
the low-precision units falls back to BF16. This is the rule behind the site's roofline; another
rule (FP8 activations with INT4 weights, say) moves the compute ceiling, not the memory ceiling.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from dataclasses import dataclass

from descent import step as S
from descent import transformer
from descent.catalog import Accelerator, Model, resolve_model
from descent.checks import is_finite
from descent.hardware import compute_bound_batch
from descent.scenario import Scenario

__all__ = [
    "PHASES",
    "Roofline",
    "attained_flops",
    "crossover_batch",
    "prefill_attention_flops",
    "step",
]

#: The kinds of step :func:`step` counts.
PHASES = ("decode", "prefill")


def _sum_min(n: int, window: int | None) -> int:
    """``sum(min(t, window) for t in 1..n)`` in closed form (``window=None``: no cap)."""
    if window is None or n <= window:
        return n * (n + 1) // 2
    return window * (window + 1) // 2 + (n - window) * window


def prefill_attention_flops(model: str | Model, tokens: int) -> int:
    """Attention FLOPs of a prefill of ``tokens`` prompt tokens, one sequence, all layers (FLOP).

    ``sum over t = 1..tokens of transformer.attention_flops_per_token(model, t)``: position t's
    query scores t keys (causal mask) and sums t values; a sliding-window layer caps t at its
    window. Computed in closed form (``sum min(t, W) = W(W+1)/2 + (T - W) W`` for T > W), so a
    prompt of millions of tokens costs no loop over positions.

    Raises:
        ValueError: unknown model, or ``tokens`` not 1 to 10,000,000.
    """
    m = resolve_model(model)
    transformer.check_context(m, tokens)
    per_pair = transformer.attention_flops_per_token(m, 1) // m.num_layers  # 2 H (d_qk + d_v)
    total = 0
    for layer in range(m.num_layers):
        window = m.sliding.window if m.sliding is not None and m.sliding.is_sliding(layer) else None
        total += per_pair * _sum_min(tokens, window)
    return total


@dataclass(frozen=True)
class Roofline:
    """One step of a model on one chip, placed on the chip's roofline.

    Units: FLOP, bytes, FLOP/s, bytes/s, FLOP per byte, seconds.

    Attributes:
        model, accelerator: catalog ids. weights, kv: precision names. context: tokens per
            sequence (decode: held in the KV cache; prefill: the prompt). batch: B sequences.
        phase: ``"decode"`` or ``"prefill"``.
        compute_precision: the precision the products run in (:func:`compute_precision`).
        flops_per_step: arithmetic of the step, FLOP.
        bytes_per_step: memory traffic of the step, bytes.
        intensity: ``flops_per_step / bytes_per_step``, FLOP per byte.
        peak_flops: the chip's dense peak in ``compute_precision``, FLOP/s.
        memory_bandwidth: the chip's memory bandwidth, bytes/s.
        ridge: ``peak_flops / memory_bandwidth``, FLOP per byte.
        bound: ``"memory"`` when ``intensity < ridge``, else ``"compute"``.
        compute_seconds: ``flops_per_step / peak_flops``, s.
        memory_seconds: ``bytes_per_step / memory_bandwidth``, s.
        seconds_per_step: the larger of the two, s: a lower bound on the step's time.
        attained_flops: ``flops_per_step / seconds_per_step``, FLOP/s (at most the peak).
        compute_share: ``attained_flops / peak_flops``: the share of the chip's arithmetic the
            step can use (1 when compute-bound).
        tokens_per_step: tokens the step produces (decode: B) or reads (prefill: B x context).
    """

    model: str
    accelerator: str
    weights: str
    kv: str
    context: int
    batch: int
    phase: str
    compute_precision: str
    flops_per_step: float
    bytes_per_step: float
    intensity: float
    peak_flops: float
    memory_bandwidth: float
    ridge: float
    bound: str
    compute_seconds: float
    memory_seconds: float
    seconds_per_step: float
    attained_flops: float
    compute_share: float
    tokens_per_step: int

    @property
    def tokens_per_s(self) -> float:
        """``tokens_per_step / seconds_per_step``: tokens/s over all B sequences (a lower bound's
        inverse, so an upper bound)."""
        return self.tokens_per_step / self.seconds_per_step


def _check_phase(phase: str) -> str:
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
    return phase


def step(model: str | Model, accelerator: str | Accelerator, weights: str = Scenario.weights, kv: str = Scenario.kv, context: int = Scenario.context, batch: int = Scenario.batch,
         phase: str = "decode") -> Roofline:
    """Place one decode or prefill step of ``model`` on ``accelerator``'s roofline: the step model's
    cost (:func:`descent.step.decode`, or :func:`descent.step.cost` of ``batch`` prompts of
    ``context`` tokens for ``"prefill"``) on one device.

    Args:
        model, accelerator: catalog ids (or records). weights, kv: precision names.
        context: decode: tokens in each sequence's cache; prefill: prompt tokens per sequence.
        batch: B sequences, 1 to 100,000. phase: ``"decode"`` or ``"prefill"``.

    Returns:
        :class:`Roofline`. Sources: Williams et al. 2009 (the roofline); Pope et al. 2022,
        sections 2-3 (decode is memory-bound at small batch, prefill compute-bound).

    Raises:
        ValueError: unknown id, precision or phase; context or batch out of range.
    """
    _check_phase(phase)
    sc = Scenario(model=model, accelerator=accelerator, weights=S.check_weights(weights), kv=kv, context=context,
                  batch=batch)
    if phase == "decode":
        c = S.decode(sc)
        tokens = batch
    else:
        c = S.cost(sc, prefill_spans=[(0, context)] * batch)
        tokens = batch * context
    ridge = c.peak_flops / c.bandwidth
    attained = c.flops / c.seconds
    return Roofline(
        model=sc.model_row.id, accelerator=sc.chip.id, weights=weights, kv=kv, context=context, batch=batch,
        phase=phase, compute_precision=c.compute_precision, flops_per_step=c.flops, bytes_per_step=c.bytes,
        intensity=c.intensity, peak_flops=c.peak_flops, memory_bandwidth=c.bandwidth, ridge=ridge,
        bound=c.bound, compute_seconds=c.compute_seconds, memory_seconds=c.memory_seconds,
        seconds_per_step=c.seconds, attained_flops=attained, compute_share=attained / c.peak_flops,
        tokens_per_step=tokens,
    )


def attained_flops(peak: float, bandwidth: float, intensity: float) -> float:
    """The roof at ``intensity``: ``min(peak, intensity x bandwidth)``, FLOP/s (Williams et al. 2009).

    For a chip that is not in the catalog (the build machine's measured roofline); for a catalog
    chip, :func:`descent.step.attainable_flops` reads the peak and the bandwidth itself.

    Raises:
        ValueError: any argument not a positive finite number.
    """
    for name, x in (("peak", peak), ("bandwidth", bandwidth), ("intensity", intensity)):
        if not (is_finite(x) and x > 0):
            raise ValueError(f"{name} must be a positive finite number, got {x!r}")
    return min(peak, intensity * bandwidth)


def crossover_batch(model: str | Model, accelerator: str | Accelerator, weights: str = Scenario.weights, kv: str = Scenario.kv,
                    context: int = Scenario.context) -> int | None:
    """The smallest decode batch whose step is compute-bound on this chip, or None if none is:
    :func:`descent.hardware.compute_bound_batch` (one search, one step model).

    Decode's intensity grows with the batch B (the weights are shared by B tokens) but each
    sequence brings its own KV cache, so it levels off near ``flops_per_token / kv_bytes_per_sequence``
    (about 2 FLOP per cached byte per query head sharing it): at long contexts no batch reaches the
    ridge.

    Raises:
        ValueError: as :func:`step`.
    """
    return compute_bound_batch(model, accelerator, S.check_weights(weights), kv, context)
