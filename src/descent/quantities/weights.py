"""Weights as numbers (Part 2): bits per parameter of a stored model, and the rule of thumb
"Q4 GB ~ 0.6 x billions of parameters" checked against llama.cpp's mixes (descent.weights).

Every function calls the core module that owns the arithmetic. Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from descent import params as P
from descent.quantities.registry import quantity

__all__: list[str] = []


@quantity("q4_rule_bytes", "Rule of thumb: 0.6 GB per billion", "bytes", P.MODEL)
def q4_rule_bytes(model: str) -> float:
    """The rule of thumb "Q4 GB ~ 0.6 x billions of parameters" at a model's published size (descent.weights.q4_rule_bytes)."""
    from descent import weights

    return weights.q4_rule_bytes(model)


@quantity("q4_rule_gap", "Rule against Q4_K_M", "fraction", P.MODEL)
def q4_rule_gap(model: str) -> float:
    """The rule of thumb's size over the model's Q4_K_M file (llama.cpp's per-tensor types), minus one (descent.weights)."""
    from descent import weights

    return weights.q4_rule_bytes(model) / weights.total_bytes(model, "q4_k_m") - 1


@quantity("q4_rule_verdict", "Rule against Q4_K_M, in words", "text", P.MODEL)
def q4_rule_verdict(model: str) -> str:
    """q4_rule_gap said the way prose says it, by its size and its direction: "falls 22% short of the
    file" or "overshoots the file by 12%" (never a signed percentage in a sentence; issue 23)."""
    from descent.units import format_percent

    gap = q4_rule_gap(model=model)
    size = format_percent(abs(gap), 2)
    if size == format_percent(0.0, 2):
        return "matches the file"
    return f"falls {size} short of the file" if gap < 0 else f"overshoots the file by {size}"


@quantity("q4_rule_bits", "Bits per weight the rule means", "number")
def q4_rule_bits() -> float:
    """Bits per weight the rule of thumb's 0.6 GB per billion parameters means: 0.6 x 8 (descent.weights)."""
    from descent import weights

    return weights.Q4_RULE_BITS_PER_WEIGHT


@quantity("weights_bits_per_param", "Bits per parameter", "number", P.MODEL, P.WEIGHTS)
def weights_bits_per_param(model: str, weights: str) -> float:
    """A model's weight bytes x 8 over its parameters: bits per weight, scales and mixes included (descent.weights)."""
    from descent import weights as W

    return W.bits_per_param(model, weights)
