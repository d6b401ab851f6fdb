"""One accelerator's numbers from its catalog row: memory, bandwidth, peak, ridge point, links.

Every function calls the core module that owns the arithmetic. Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from descent import params as P
from descent.quantities.registry import blame, quantity

__all__: list[str] = []


@quantity("capacity_bytes", "Memory", "bytes", P.ACCELERATOR)
def capacity_bytes(accelerator: str) -> int:
    """An accelerator's main memory in true bytes (a vendor's "80 GB" of HBM is often 80 GiB): the sizing's capacity."""
    from descent import catalog

    return catalog.accelerator(accelerator).memory_bytes

@quantity("memory_bandwidth", "Memory bandwidth", "bytes_per_s", P.ACCELERATOR)
def memory_bandwidth(accelerator: str) -> float:
    """An accelerator's main-memory bandwidth, bytes/s (TB/s = 1e12 bytes/s), from its datasheet."""
    from descent import catalog

    return catalog.accelerator(accelerator).memory_bandwidth

@quantity("peak_flops", "Dense peak", "flop_per_s", P.MODEL, P.ACCELERATOR, P.WEIGHTS)
def peak_flops(model: str, accelerator: str, weights: str) -> float:
    """The chip's dense peak in the precision this model's weights compute in (descent.step)."""
    from descent import step

    return step.peak_flops(accelerator, step.compute_precision(model, accelerator, weights))

@quantity("ridge_point", "Ridge point", "flop_per_byte", P.MODEL, P.ACCELERATOR, P.WEIGHTS)
def ridge_point(model: str, accelerator: str, weights: str) -> float:
    """Dense peak FLOP/s over memory bandwidth: below this intensity a kernel is memory-bound (descent.step)."""
    from descent import step

    return step.ridge_point(accelerator, step.compute_precision(model, accelerator, weights))

@quantity("shared_memory_bandwidth", "Shared-memory bandwidth", "bytes_per_s", P.ACCELERATOR)
def shared_memory_bandwidth(accelerator: str) -> float:
    """SMs x bytes per clock x clock: the whole chip's shared-memory (LDS) bandwidth."""
    from descent import memory_tiers

    bw = blame("accelerator", memory_tiers.shared_memory_bandwidth, accelerator)
    if bw is None:
        raise P.ParamError("accelerator", f"{accelerator}: its shared-memory bytes per clock or its clock "
                           "are not published")
    return bw

@quantity("link_bandwidth", "Link bandwidth", "bytes_per_s", P.LINK)
def link_bandwidth(link: str) -> float:
    """Bytes/s one GPU sends over the link in one direction (vendor figures add both directions)."""
    from descent import catalog

    return catalog.link(link).bytes_per_s
