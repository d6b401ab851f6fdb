"""The memory budget: weights + KV cache + a runtime allowance against one accelerator's memory.

    total = weights + KV cache + runtime allowance
    weights  = params_total x bits_per_weight / 8            (MoE: ALL experts are stored)
    KV cache = kv_cache_elements(model, context) x batch x kv_bits / 8
    runtime  = RUNTIME_ALLOWANCE x capacity
    fits     = total <= capacity  (capacity in true bytes: H100's "80 GB" is 80 GiB)

The runtime allowance stands for what is neither weights nor KV cache: activations and their
workspace, the CUDA/ROCm context, the framework's allocator pools, communication buffers and
fragmentation. We reserve a fixed share of the accelerator's memory, as serving engines do: vLLM's
``gpu_memory_utilization`` defaults to 0.9 (vLLM engine arguments documentation), so 10% of the
memory is never given to weights or KV cache. It is an allowance, not a measurement; it is shown as
its own segment so a reader can see it and discount it.

Decode speed comes along (``bytes_per_decode_step``, ``decode_tokens_per_s``) from
:mod:`descent.hardware`; it reads only the *active* weights, while memory holds all of them.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from descent import catalog, transformer
from descent.catalog import Accelerator, Model
from descent.checks import is_real
from descent.hardware import (
    check_inputs,
    decode_ceiling,
    kv_cache_bytes,
    resolve_accelerator,
    resolve_model,
)
from descent.numerics import BITS_PER_BYTE, weight_bytes
from descent.units import format_count, format_percent

__all__ = ["RUNTIME_ALLOWANCE", "Sizing", "across_field", "fits_in", "moe_line", "size"]

#: Share of an accelerator's memory reserved for activations, runtime context, workspace and
#: fragmentation: 1 - vLLM's default ``gpu_memory_utilization`` (0.9). Dimensionless fraction.
RUNTIME_ALLOWANCE = 0.10


@dataclass(frozen=True)
class Sizing:
    """Result of :func:`size`. Units: parameters, bytes, bytes/s, tokens/s.

    Attributes:
        model: model id.
        accelerator: accelerator id.
        weights: weight precision name.
        kv: KV-cache precision name.
        context: tokens per sequence in the KV cache.
        batch: B, sequences held at once.
        params_total: all parameters (MoE: every expert), stored in memory.
        params_active: parameters used per token (MoE: k of E experts; embedding table included).
        weights_bytes: ``params_total`` in the weight precision, bytes.
        kv_bytes_per_token: KV cache per token of one sequence, all layers (no window cap), bytes.
        kv_cache_bytes: KV cache of B sequences at ``context`` (sliding windows capped), bytes.
        runtime_bytes: ``RUNTIME_ALLOWANCE x capacity_bytes``, bytes.
        total_bytes: weights + KV cache + runtime, bytes.
        capacity_bytes: accelerator memory, true bytes.
        free_bytes: capacity - total, bytes; negative = over by that much.
        fits: ``total_bytes <= capacity_bytes``.
        accelerators_needed: fewest such chips whose usable memory (capacity x (1 - allowance))
            holds weights + KV cache, ignoring parallelism overheads; 1 when it fits.
        beyond_max_context: ``context`` exceeds the model's published ``max_context``.
        memory_bandwidth: accelerator memory bandwidth, bytes/s.
        bytes_per_decode_step: bytes one decode step of B sequences reads (hardware module), bytes.
        decode_tokens_per_s: ceiling per sequence, bandwidth / bytes_per_decode_step, tokens/s.
        decode_tokens_per_s_total: ceiling over the batch, B x per sequence, tokens/s.
    """

    model: str
    accelerator: str
    weights: str
    kv: str
    context: int
    batch: int
    params_total: int
    params_active: int
    weights_bytes: float
    kv_bytes_per_token: float
    kv_cache_bytes: float
    runtime_bytes: float
    total_bytes: float
    capacity_bytes: int
    free_bytes: float
    fits: bool
    accelerators_needed: int
    beyond_max_context: bool
    memory_bandwidth: float
    bytes_per_decode_step: float
    decode_tokens_per_s: float
    decode_tokens_per_s_total: float

    def segments(self) -> list[tuple[str, float]]:
        """The stacked bar against ``capacity_bytes``: (label, bytes) for weights, KV cache, runtime."""
        return [
            ("weights", self.weights_bytes),
            ("KV cache", self.kv_cache_bytes),
            ("runtime allowance", self.runtime_bytes),
        ]


def fits_in(total_bytes: float, accelerator: str | Accelerator) -> bool:
    """True when ``total_bytes`` (already including any runtime allowance) fit in the chip's memory.

    Compares true bytes: a need of 141.1 GB (141.1e9 bytes) fits in H200's "141 GB", which is
    141 GiB = 151.4e9 bytes. Raises ValueError for an unknown id or a negative/non-finite size.
    """
    if not is_real(total_bytes) or not 0 <= total_bytes < math.inf:
        raise ValueError(f"total_bytes must be a number of bytes >= 0, got {total_bytes!r}")
    return total_bytes <= resolve_accelerator(accelerator).memory_bytes


def size(
    model: str | Model,
    accelerator: str | Accelerator,
    weights: str = "bf16",
    kv: str = "bf16",
    context: int = 8192,
    batch: int = 1,
) -> Sizing:
    """Size a model on one accelerator: memory segments, fit, and the decode ceiling.

    Args:
        model: model or catalog id (``descent.catalog.models()``).
        accelerator: accelerator or catalog id (``descent.catalog.accelerators()``).
        weights: weight precision (``numerics.PRECISIONS``).
        kv: KV-cache precision (``numerics.KV_PRECISIONS``).
        context: tokens per sequence, 1 to 10,000,000 (beyond the model's max_context is allowed
            and flagged in ``beyond_max_context``).
        batch: sequences, 1 to ``hardware.MAX_BATCH`` (100,000).

    Returns:
        :class:`Sizing`.

    Raises:
        ValueError: unknown model/accelerator id or precision (message lists the allowed values),
            context or batch out of range.
    """
    mod = resolve_model(model)
    a = resolve_accelerator(accelerator)
    mod, wp, kp = check_inputs(mod, weights, kv, context, batch)

    pc = transformer.param_counts(mod)
    w_bytes = weight_bytes(pc.total, wp)
    kv_per_token = transformer.kv_elements_per_token(mod) * kp.bits_per_weight / BITS_PER_BYTE
    kv_bytes = kv_cache_bytes(mod, kp, context, batch)
    capacity = a.memory_bytes
    runtime = RUNTIME_ALLOWANCE * capacity
    total = w_bytes + kv_bytes + runtime
    usable = capacity * (1 - RUNTIME_ALLOWANCE)
    needed = max(1, math.ceil((w_bytes + kv_bytes) / usable))

    ceiling = decode_ceiling(mod, a, wp.name, kp.name, context, batch)
    return Sizing(
        model=mod.id,
        accelerator=a.id,
        weights=wp.name,
        kv=kp.name,
        context=context,
        batch=batch,
        params_total=pc.total,
        params_active=pc.active,
        weights_bytes=w_bytes,
        kv_bytes_per_token=kv_per_token,
        kv_cache_bytes=kv_bytes,
        runtime_bytes=runtime,
        total_bytes=total,
        capacity_bytes=capacity,
        free_bytes=capacity - total,
        fits=total <= capacity,
        accelerators_needed=needed,
        beyond_max_context=context > mod.max_context,
        memory_bandwidth=a.memory_bandwidth,
        bytes_per_decode_step=ceiling.bytes_per_step,
        decode_tokens_per_s=ceiling.tokens_per_s_per_sequence,
        decode_tokens_per_s_total=ceiling.tokens_per_s_total,
    )


def moe_line(model: str) -> str | None:
    """For a mixture-of-experts model: stored vs per-token parameters, as one sentence; else None.

    Uses :func:`descent.transformer.param_counts` (``total`` counts every expert, ``active`` the
    k of E experts one token runs through, plus everything shared). Raises ValueError for an
    unknown model id.
    """
    m = catalog.model(model)
    if m.moe is None:
        return None
    pc = transformer.param_counts(m)
    share = pc.active / pc.total
    return (
        f"{m.name} is a mixture of experts: memory holds all {format_count(pc.total)} parameters "
        f"({m.moe.num_experts} experts per layer), but each token runs through only "
        f"{m.moe.experts_per_token} of them, {format_count(pc.active)} parameters ({format_percent(share, decimals=1)} of the total)."
    )


def across_field(
    model: str, weights: str, kv: str = "bf16", context: int = 8192, batch: int = 1
) -> list[Sizing]:
    """One :class:`~descent.memory.Sizing` per catalog accelerator, fastest decode ceiling first.

    Args:
        model: catalog model id. weights: weight precision (``numerics.PRECISIONS``).
        kv: KV-cache precision (``numerics.KV_PRECISIONS``). context: tokens per sequence, 1 to
        10,000,000. batch: sequences, 1 to ``hardware.MAX_BATCH``.

    Returns:
        ``[Sizing, ...]`` sorted by ``decode_tokens_per_s`` (tokens/s per sequence), descending;
        ties keep catalog order. ``Sizing.fits`` is False for a chip whose memory is below the
        weights + KV cache + runtime allowance: its ceiling holds only "if it fit".

    Raises:
        ValueError: as :func:`descent.memory.size` (unknown id or precision, context or batch out
            of range).
    """
    rows = [size(model, a, weights, kv, context, batch) for a in catalog.accelerators()]
    return sorted(rows, key=lambda s: -s.decode_tokens_per_s)
