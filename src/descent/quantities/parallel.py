"""A model split over many chips: tensor, pipeline and expert parallelism (descent.parallel.plan).

Every function calls the core module that owns the arithmetic. Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from typing import Any

from descent import params as P
from descent.quantities.registry import quantity

__all__: list[str] = []


#: The inputs of a split over many chips.
PLAN_PARAMS = (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH, P.TP, P.PP, P.EP, P.MICROBATCHES,
               P.LINK)

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
    """Those bytes over one direction of the link plus NCCL's latency (base + per ring step, links.toml): a lower bound."""
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
    """Share of a step each pipeline stage idles in a serving engine's steady state: max(0, p - m) / p."""
    return _plan(**kw).bubble_fraction

@quantity("split_decode_tokens_per_s", "Decode speed, split", "tokens_per_s", *PLAN_PARAMS)
def split_decode_tokens_per_s(**kw: Any) -> float:
    """Tokens/s of the split model over the batch: reads stage after stage plus communication."""
    return _plan(**kw).decode_tokens_per_s
