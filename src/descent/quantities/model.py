"""A model's own numbers: parameters, weight bytes, KV bytes per token (descent.transformer, descent.weights).

Every function calls the core module that owns the arithmetic. Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from descent import params as P
from descent.quantities.registry import quantity

__all__: list[str] = []


@quantity("params_total", "Parameters", "params", P.MODEL)
def params_total(model: str) -> int:
    """Every parameter the model stores (MoE: all experts), exact, from its config.json shapes."""
    from descent import catalog, transformer

    return transformer.param_counts(catalog.model(model)).total

@quantity("params_active", "Active parameters", "params", P.MODEL)
def params_active(model: str) -> int:
    """Parameters one token runs through (MoE: k of E experts; the embedding table included)."""
    from descent import catalog, transformer

    return transformer.param_counts(catalog.model(model)).active

@quantity("moe_active_share", "Active share", "fraction", P.MODEL)
def moe_active_share(model: str) -> float:
    """Active / total parameters of a mixture-of-experts model (descent.transformer.param_counts)."""
    from descent import catalog, transformer

    m = catalog.model(model)
    if m.moe is None:
        raise P.ParamError("model", f"{m.name} is dense: every parameter is active; pick a mixture-of-experts model")
    pc = transformer.param_counts(m)
    return pc.active / pc.total

@quantity("weights_bytes", "Weights", "bytes", P.MODEL, P.WEIGHTS)
def weights_bytes(model: str, weights: str) -> float:
    """Bytes to store every weight of the model (all experts): as released, a GGUF mix, or one
    precision for all (descent.weights.bytes_by_group)."""
    from descent.weights import bytes_by_group

    return sum(bytes_by_group(model, weights).values())

@quantity("kv_bytes_per_token", "KV cache per token", "bytes", P.MODEL, P.KV)
def kv_bytes_per_token(model: str, kv: str) -> float:
    """KV-cache bytes one token adds to one sequence: all layers, keys and values, no window cap."""
    from descent import catalog, numerics, transformer

    return transformer.kv_elements_per_token(catalog.model(model)) * numerics.kv_precision(kv).bytes_per_weight
