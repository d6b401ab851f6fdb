"""Any chip from its numbers: an :class:`~descent.catalog.Accelerator` record from three figures.

Sizing a model needs three numbers about a chip: how much memory it has (does it fit?), how fast
it reads that memory (the decode ceiling: Pope et al. 2022, "Efficiently Scaling Transformer
Inference", arXiv:2211.05102, section 2) and, for the compute ceiling, its dense peak arithmetic
rate (the roofline of Williams, Waterman & Patterson 2009, CACM 52(4)). :func:`accelerator`
builds the same record a catalog row is from those three, so every calculator takes a reader's
own card: ``descent size MODEL --memory-gb 24 --bandwidth-gbs 1008 --tflops 165``.

Units: memory in **GB of 1e9 bytes** (a vendor's "24 GB" of GDDR or "80 GB" of HBM is often
GiB, 2**30 bytes: 24 GiB = 25.8 GB; the number to give here is the true byte count / 1e9 when it
is known), bandwidth in GB/s (1e9 bytes per second), peak in TFLOP/s (1e12 FLOP per second),
dense (not the 2:4-sparse figure datasheets often print first), at the precision the weights are
multiplied in: the one peak is recorded for BF16, FP8 and FP4 alike, so whichever precision the
math runs in (:func:`descent.step.peak_flops`) gets it.

Without a peak the chip has no compute ceiling: its peaks are infinite and a step takes as long as
its memory traffic (the memory-bandwidth ceiling, an upper bound on speed either way).

The inputs are validated by their declarations (:data:`descent.params.MEMORY_GB`,
:data:`~descent.params.BANDWIDTH_GBS`, :data:`~descent.params.TFLOPS`): the same ranges and
messages as the command line's flags and the sandbox's fields.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from descent import params as P
from descent.catalog import Accelerator
from descent.units import GB, GB_PER_S, TFLOPS, format_number

__all__ = ["CUSTOM_ID", "accelerator"]

#: The id a chip described by its numbers gets (it is not a catalog row).
CUSTOM_ID = "custom"

#: Placeholder for a field of the record the three numbers say nothing about, by field type.
_BLANK = {"int": 0, "float": 0.0, "str": "", "bool": False}


def accelerator(memory_gb: float, bandwidth_gbs: float, tflops: float | None = None, *, name: str = "") -> Accelerator:
    """An Accelerator from a chip's memory, bandwidth and (optionally) dense peak.

    Args:
        memory_gb: memory in GB (1e9 bytes), 0.01 to 100,000.
        bandwidth_gbs: memory bandwidth in GB/s, 1 to 100,000,000.
        tflops: dense peak in TFLOP/s at the weight precision, 0.001 to 10,000,000, or None (no
            compute ceiling: the peaks are infinite).
        name: display name; default ``"your chip (24 GB, 1,008 GB/s)"``.

    Returns:
        An Accelerator with id :data:`CUSTOM_ID`: ``memory_bytes = round(memory_gb x 1e9)``,
        ``memory_bandwidth = bandwidth_gbs x 1e9`` bytes/s, ``bf16_flops = fp8_flops = fp4_flops
        = tflops x 1e12`` FLOP/s. Fields the numbers do not give (power, compute units, caches,
        year) are 0 or empty, and ``notes`` says so.

    Raises:
        ParamError: a number out of range or not a number, naming it ("Memory must be 0.01 to
            100,000 GB, got 0").
    """
    mem = P.MEMORY_GB.check(memory_gb)
    bw = P.BANDWIDTH_GBS.check(bandwidth_gbs)
    peak = math.inf if tflops is None else P.TFLOPS.check(tflops) * TFLOPS
    shown = f"{format_number(mem, 4, trim=True)} GB, {format_number(bw, 4, trim=True)} GB/s"
    if tflops is not None:
        shown += f", {format_number(tflops, 4, trim=True)} TFLOP/s"
    given: dict[str, Any] = {
        "id": CUSTOM_ID,
        "name": name or f"your chip ({shown})",
        "vendor": "",
        "kind": "gpu",
        "memory_bytes": round(mem * GB),
        "memory_type": "memory",  # its kind (HBM3e, GDDR7, LPDDR5X...) is not given
        "memory_marketed": f"{format_number(mem, 4, trim=True)} GB",
        "memory_marketed_unit_is_gib": False,
        "memory_bandwidth": bw * GB_PER_S,
        "bf16_flops": peak,
        "fp8_flops": peak,
        "fp4_flops": peak,
        "notes": "Described by its numbers: memory, bandwidth"
        + (" and one dense peak for every precision" if tflops is not None else " (no peak given: no compute ceiling)")
        + "; power, compute units, caches and links are not known.",
        "sources": {"default": "the numbers typed in (memory GB, bandwidth GB/s, peak TFLOP/s)"},
    }
    fields = {f.name: f for f in dataclasses.fields(Accelerator)}
    for f in fields.values():  # every other required field: a blank of its type
        if f.name not in given and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            given[f.name] = _BLANK[str(f.type).split("|")[0].strip()]
    return Accelerator(**{k: v for k, v in given.items() if k in fields})
