"""Memory sizing: what a model needs (weights + KV cache) against what a chip offers after its runtime allowance (descent.memory.size).

Every function calls the core module that owns the arithmetic. Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from typing import Any

from descent import params as P
from descent.quantities.registry import quantity

__all__: list[str] = []


SIZING_PARAMS = (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH)

def sizing(**kw: Any) -> Any:
    from descent.memory import size

    return size(**kw)

def footprint(**kw: Any) -> Any:
    from descent import step
    from descent.scenario import Scenario

    return step.footprint(Scenario(**kw))

@quantity("kv_cache_bytes", "KV cache", "bytes", *SIZING_PARAMS)
def kv_cache_bytes(**kw: Any) -> float:
    """KV cache of the batch at this context (sliding windows capped), bytes: the step model's
    footprint (descent.step.footprint), the bytes a decode step at this context reads."""
    return footprint(**kw).kv_bytes

@quantity("runtime_bytes", "Runtime allowance", "bytes", *SIZING_PARAMS)
def runtime_bytes(**kw: Any) -> float:
    """Memory kept back for activations, the runtime and fragmentation (descent.memory)."""
    return sizing(**kw).runtime_bytes

@quantity("need_bytes", "Memory needed", "bytes", *SIZING_PARAMS)
def need_bytes(**kw: Any) -> float:
    """Weights + KV cache, bytes: what the model needs, the same on every chip (descent.memory.size;
    the runtime allowance is kept back from the chip, not added to the need)."""
    return sizing(**kw).need_bytes

@quantity("usable_bytes", "Memory usable", "bytes", P.ACCELERATOR)
def usable_bytes(accelerator: str) -> float:
    """What one chip offers the weights and the KV cache: its memory less the runtime allowance,
    bytes (descent.scenario.Scenario.usable_bytes, the one runtime-allowance rule)."""
    from descent.scenario import Scenario

    return Scenario(accelerator=accelerator).usable_bytes

@quantity("free_bytes", "Memory free", "bytes", *SIZING_PARAMS)
def free_bytes(**kw: Any) -> float:
    """Usable memory minus what the model needs, bytes; negative when it does not fit."""
    return sizing(**kw).free_bytes

@quantity("accelerators_needed", "Chips needed", "integer", *SIZING_PARAMS)
def accelerators_needed(**kw: Any) -> int:
    """Fewest such chips whose usable memory holds weights + KV cache (memory only)."""
    return sizing(**kw).accelerators_needed

@quantity("chips_that_fit", "Chips that hold it", "integer", P.MODEL, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH)
def chips_that_fit(model: str, weights: str, kv: str, context: int, batch: int) -> int:
    """How many catalog accelerators hold the model (weights + KV cache within their usable memory) alone."""
    from descent.memory import across_field

    return sum(1 for s in across_field(model, weights, kv, context, batch) if s.fits)

@quantity("runtime_allowance", "Runtime allowance", "fraction")
def runtime_allowance() -> float:
    """Share of an accelerator's memory the sizing keeps back for the runtime (descent.memory)."""
    return P.RUNTIME.default / 100
