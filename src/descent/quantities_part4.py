"""Part 4's quantities: the roofline of a step, tiles, attention traffic, the memory pyramid and
the split of a model over many chips. Registered in :data:`descent.quantities.QUANTITIES` when
that module imports this one (at its end), so each is a value shortcode, a widget stat name and a
key of ``descent roofline --json`` / ``descent parallel --json``.

Every function calls the core module that owns the arithmetic: :mod:`descent.roofline`,
:mod:`descent.tiling`, :mod:`descent.attention_io`, :mod:`descent.memory_tiers`,
:mod:`descent.parallel`. Errors a reader can cause (a chip without recorded internals, a split the
model does not allow) come back as :class:`descent.params.ParamError` naming the input.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from typing import Any

from descent import params as P
from descent.quantities import quantity

__all__: list[str] = []

#: The inputs of a roofline step: the sizing's, plus the phase.
STEP_PARAMS = (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH, P.PHASE)
#: The inputs of a split over many chips.
PLAN_PARAMS = (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH, P.TP, P.PP, P.EP, P.MICROBATCHES,
               P.LINK)
#: The inputs of one head's attention traffic.
ATTENTION_PARAMS = (P.SEQ_LEN, P.HEAD_DIM, P.ELEMENT, P.ACCELERATOR)


def _blame(field: str, fn, *args: Any, **kw: Any) -> Any:
    """Call ``fn``; a ValueError becomes a ParamError on ``field`` (the input a reader changes)."""
    try:
        return fn(*args, **kw)
    except P.ParamError:
        raise
    except ValueError as exc:
        raise P.ParamError(field, str(exc)) from None


def _step(**kw: Any):
    from descent import roofline

    return roofline.step(**kw)


@quantity("flops_per_step", "FLOPs per step", "flop", *STEP_PARAMS)
def flops_per_step(**kw: Any) -> float:
    """Arithmetic of one decode or prefill step of the batch, FLOP (descent.roofline.step)."""
    return _step(**kw).flops_per_step


@quantity("bytes_per_step", "Bytes per step", "bytes", *STEP_PARAMS)
def bytes_per_step(**kw: Any) -> float:
    """Memory traffic of one decode or prefill step: weights touched once, KV cache read or written."""
    return _step(**kw).bytes_per_step


@quantity("intensity", "Arithmetic intensity", "flop_per_byte", *STEP_PARAMS)
def intensity(**kw: Any) -> float:
    """FLOPs per byte of memory traffic of one step (Williams et al. 2009)."""
    return _step(**kw).intensity


@quantity("ridge", "Ridge point", "flop_per_byte", *STEP_PARAMS)
def ridge(**kw: Any) -> float:
    """The chip's peak FLOP/s over its memory bandwidth, at the precision the step computes in."""
    return _step(**kw).ridge


@quantity("seconds_per_step", "Time per step", "seconds", *STEP_PARAMS)
def seconds_per_step(**kw: Any) -> float:
    """The slower of FLOPs / peak and bytes / bandwidth: a lower bound on one step's time."""
    return _step(**kw).seconds_per_step


@quantity("compute_share", "Share of peak FLOP/s used", "fraction", *STEP_PARAMS)
def compute_share(**kw: Any) -> float:
    """Attained FLOP/s over the dense peak: how much of the chip's arithmetic the step can use."""
    return _step(**kw).compute_share


@quantity("attained_flops", "Attained FLOP/s", "flop_per_s", *STEP_PARAMS)
def attained_flops(**kw: Any) -> float:
    """FLOPs per step over the time per step: the height of the step's point on the roofline."""
    return _step(**kw).attained_flops


@quantity("peak_flops", "Dense peak", "flop_per_s", P.MODEL, P.ACCELERATOR, P.WEIGHTS)
def peak_flops(model: str, accelerator: str, weights: str) -> float:
    """The chip's dense peak in the precision weights of this format compute in (descent.step)."""
    from descent import step

    return step.peak_flops(accelerator, step.compute_precision(model, accelerator, weights))


@quantity("ridge_point", "Ridge point", "flop_per_byte", P.MODEL, P.ACCELERATOR, P.WEIGHTS)
def ridge_point(model: str, accelerator: str, weights: str) -> float:
    """Dense peak FLOP/s over memory bandwidth: below this intensity a kernel is memory-bound."""
    from descent import step

    return step.ridge_point(accelerator, step.compute_precision(model, accelerator, weights))


# -- tiles ------------------------------------------------------------------------------------


@quantity("tile_intensity", "Intensity of a tile", "flop_per_byte", P.TILE, P.ELEMENT)
def tile_intensity(tile: int, element: str) -> float:
    """FLOPs per byte loaded by one square output tile: tile edge / bytes per element."""
    from descent import tiling

    return tiling.tile_intensity(tile, tiling.element_bytes(element))


# -- the memory pyramid ----------------------------------------------------------------------


@quantity("shared_memory_bandwidth", "Shared-memory bandwidth", "bytes_per_s", P.ACCELERATOR)
def shared_memory_bandwidth(accelerator: str) -> float:
    """SMs x bytes per clock x clock: the whole chip's shared-memory (LDS) bandwidth."""
    from descent import memory_tiers

    bw = _blame("accelerator", memory_tiers.shared_memory_bandwidth, accelerator)
    if bw is None:
        raise P.ParamError("accelerator", f"{accelerator}: its shared-memory bytes per clock or its clock "
                           "are not published")
    return bw


# -- attention traffic -----------------------------------------------------------------------


def _traffic(seq_len: int, head_dim: int, element: str, accelerator: str):
    from descent import attention_io, tiling

    return _blame("accelerator", attention_io.traffic, seq_len, head_dim, tiling.element_bytes(element), accelerator)


@quantity("attention_naive_bytes", "Naive attention traffic", "bytes", *ATTENTION_PARAMS)
def attention_naive_bytes(**kw: Any) -> float:
    """Memory traffic of one head's naive attention, 4Nd + 4N^2 elements (Dao et al. 2022, Alg. 0)."""
    return _traffic(**kw).naive_bytes


@quantity("attention_flash_bytes", "FlashAttention traffic", "bytes", *ATTENTION_PARAMS)
def attention_flash_bytes(**kw: Any) -> float:
    """Memory traffic of one head's FlashAttention with one SM's shared memory (Dao et al. 2022, Alg. 1)."""
    return _traffic(**kw).flash_bytes


@quantity("attention_io_ratio", "Naive over FlashAttention traffic", "ratio", *ATTENTION_PARAMS)
def attention_io_ratio(**kw: Any) -> float:
    """How many times more bytes naive attention moves than FlashAttention."""
    return _traffic(**kw).ratio


@quantity("decode_attention_intensity", "Decode attention intensity", "flop_per_byte", P.MODEL, P.CONTEXT, P.KV)
def decode_attention_intensity(model: str, context: int, kv: str) -> float:
    """FLOPs per byte of the KV cache read by one decode step's attention (any batch)."""
    from descent import attention_io

    return attention_io.decode_attention(model, context, kv).intensity


# -- many chips ------------------------------------------------------------------------------


def _plan(**kw: Any):
    from descent import parallel

    link_id = kw.pop("link")
    try:
        return parallel.plan(**kw, link_id=link_id)
    except P.ParamError:
        raise
    except ValueError as exc:
        msg = str(exc)
        field = next((f for f in ("tp", "pp", "ep", "Micro-batches") if msg.startswith(f)), None)
        raise P.ParamError({"Micro-batches": "microbatches"}.get(field, field), msg) from None


@quantity("devices", "Devices", "integer", *PLAN_PARAMS)
def devices(**kw: Any) -> int:
    """Accelerators one copy of the model runs on: tp x pp x ep."""
    return _plan(**kw).devices


@quantity("weights_bytes_per_device", "Weights per device", "bytes", *PLAN_PARAMS)
def weights_bytes_per_device(**kw: Any) -> float:
    """Each device's share of the weights: non-expert weights / (tp pp), experts / (tp pp ep)."""
    return _plan(**kw).weights_bytes_per_device


@quantity("kv_bytes_per_device", "KV cache per device", "bytes", *PLAN_PARAMS)
def kv_bytes_per_device(**kw: Any) -> float:
    """Each device's share of the batch's KV cache (heads split up to the KV heads; MLA not split)."""
    return _plan(**kw).kv_bytes_per_device


@quantity("allreduce_bytes_per_layer", "All-reduce bytes per layer", "bytes", *PLAN_PARAMS)
def allreduce_bytes_per_layer(**kw: Any) -> float:
    """Bytes each device sends per layer in tensor parallelism's two ring all-reduces, 2(p-1)/p each."""
    return _plan(**kw).allreduce_bytes_per_layer


@quantity("allreduce_seconds_per_layer", "All-reduce time per layer", "seconds", *PLAN_PARAMS)
def allreduce_seconds_per_layer(**kw: Any) -> float:
    """Those bytes over one direction of the link (latency not modelled: a lower bound)."""
    return _plan(**kw).allreduce_seconds_per_layer


@quantity("read_seconds_per_layer", "Time to read one layer", "seconds", *PLAN_PARAMS)
def read_seconds_per_layer(**kw: Any) -> float:
    """One layer's share of a device's decode reads over its memory bandwidth: what communication competes with."""
    return _plan(**kw).read_seconds_per_layer


@quantity("alltoall_bytes_per_layer", "All-to-all bytes per MoE layer", "bytes", *PLAN_PARAMS)
def alltoall_bytes_per_layer(**kw: Any) -> float:
    """Bytes each device sends per MoE layer in expert parallelism's dispatch and combine."""
    return _plan(**kw).alltoall_bytes_per_layer


@quantity("bubble_fraction", "Pipeline bubble", "fraction", *PLAN_PARAMS)
def bubble_fraction(**kw: Any) -> float:
    """Share of the schedule each pipeline stage idles: (p - 1) / (m + p - 1) (GPipe)."""
    return _plan(**kw).bubble_fraction


@quantity("split_decode_tokens_per_s", "Decode speed, split", "tokens_per_s", *PLAN_PARAMS)
def split_decode_tokens_per_s(**kw: Any) -> float:
    """Tokens/s of the split model over the batch: reads stage after stage plus communication."""
    return _plan(**kw).decode_tokens_per_s


@quantity("link_bandwidth", "Link bandwidth", "bytes_per_s", P.LINK)
def link_bandwidth(link: str) -> float:
    """Bytes/s one GPU sends over the link in one direction (vendor figures add both directions)."""
    from descent import catalog

    return catalog.link(link).bytes_per_s
