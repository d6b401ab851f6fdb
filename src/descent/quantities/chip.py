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


# -- A GPU's internals and memory pyramid (Part 4; descent.memory_tiers) --------------------------

def _chip(accelerator: str):
    from descent import catalog

    return catalog.accelerator(accelerator)

def _recorded(a, *values):
    if any(v is None for v in values):
        raise P.ParamError("accelerator", f"{a.name}: the catalog does not record this for it; pick a GPU with "
                           "recorded internals")

@quantity("tensor_cores_total", "Tensor cores", "integer", P.ACCELERATOR)
def tensor_cores_total(accelerator: str) -> int:
    """Compute units x tensor cores per unit: every tensor core on the chip (catalog, vendor whitepapers)."""
    a = _chip(accelerator)
    _recorded(a, a.compute_units, a.tensor_cores_per_unit)
    return a.compute_units * a.tensor_cores_per_unit

@quantity("hbm_vs_shared_size", "Memory over shared memory", "ratio", P.ACCELERATOR)
def hbm_vs_shared_size(accelerator: str) -> float:
    """How many times the chip's memory holds all its shared memory together (descent.memory_tiers.tiers)."""
    from descent import memory_tiers

    a = _chip(accelerator)
    shared = memory_tiers.tiers(a)[1]
    _recorded(a, shared.size_vs_hbm)
    return 1 / shared.size_vs_hbm

@quantity("shared_vs_hbm_bandwidth", "Shared memory over memory bandwidth", "ratio", P.ACCELERATOR)
def shared_vs_hbm_bandwidth(accelerator: str) -> float:
    """How many times faster all the shared memory together reads than the chip's memory (descent.memory_tiers.tiers)."""
    from descent import memory_tiers

    a = _chip(accelerator)
    shared = memory_tiers.tiers(a)[1]
    _recorded(a, shared.bandwidth_vs_hbm)
    return shared.bandwidth_vs_hbm

@quantity("hbm_vs_l2_size", "Memory over L2 cache", "ratio", P.ACCELERATOR)
def hbm_vs_l2_size(accelerator: str) -> float:
    """How many times the chip's memory holds its L2 cache (catalog memory_bytes / l2_bytes)."""
    a = _chip(accelerator)
    _recorded(a, a.l2_bytes)
    return a.memory_bytes / a.l2_bytes

@quantity("hbm_vs_link_bandwidth", "Memory bandwidth over the chip-to-chip link", "ratio", P.ACCELERATOR)
def hbm_vs_link_bandwidth(accelerator: str) -> float:
    """How many times faster a chip reads its memory than it sends over its own scale-up link, one direction (catalog)."""
    a = _chip(accelerator)
    _recorded(a, a.scale_up_bandwidth or None)
    return a.memory_bandwidth / (a.scale_up_bandwidth / 2)
