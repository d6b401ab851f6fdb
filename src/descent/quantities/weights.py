"""Weights as numbers (Part 2): a value rounded to a float format, a model stored in one GGUF block
type, the GPTQ table's sizes and perplexities, and the rule of thumb "Q4 GB ~ 0.6 x billions of
parameters" checked against llama.cpp's mixes (descent.floats, descent.gguf_types, descent.weights,
descent.published).

Every function calls the core module that owns the arithmetic. Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from descent import floats, gguf_types, published
from descent import params as P
from descent.quantities.registry import quantity

__all__ = ["GPTQ_BITS", "GPTQ_COLUMN", "GPTQ_MODEL"]


@quantity("float_round_relative_error", "Relative rounding error", "fraction", floats.FLOAT_FORMAT,
          floats.FLOAT_VALUE)
def float_round_relative_error(format: str, value: str) -> float:
    """|stored - x| / |x| for a number rounded to the nearest value of a float format (descent.floats)."""
    f = floats.get(format)
    kind, x = floats.parse_value(f, value)
    if kind != "number":
        raise P.ParamError("value", "the relative error takes a number, not a code")
    if float(x) == 0:
        raise P.ParamError("value", "zero has no relative error; give a number other than 0")
    return abs(f.round(float(x)).error) / abs(float(x))


@quantity("gguf_type_bytes", "Every weight in one GGUF block type", "bytes", P.MODEL, gguf_types.QUANT_FORMAT)
def gguf_type_bytes(model: str, format: str) -> float:
    """Every parameter of a model stored in one GGUF block type, no mix: N x bits per weight / 8 (descent.gguf_types)."""
    from descent import catalog, transformer

    return gguf_types.bytes_for(transformer.param_counts(catalog.model(model)).total, format)


GPTQ_MODEL = P.declare(P.Param(
    "model", "LLaMA model of the GPTQ table", "choice", "LLaMa-65B", key="gptq_model",
    choices=[(m, m) for m in published.GPTQ_LLAMA], help="a row of the GPTQ README's LLaMA table",
))

GPTQ_COLUMN = P.declare(P.Param(
    "column", "GPTQ table column", "choice", "4bit-RTN", key="gptq_column",
    choices=[(c, c) for c in published.GPTQ_COLUMNS], help="a column of the GPTQ README's LLaMA table",
))

GPTQ_BITS = P.declare(P.Param(
    "bits", "Bits per weight", "int", 16, key="gptq_bits", min=1, max=32, help="bits per weight",
))


@quantity("gptq_weights_bytes", "GPTQ-table model's weights", "bytes", GPTQ_MODEL, GPTQ_BITS)
def gptq_weights_bytes(model: str, bits: int) -> float:
    """Weight bytes of a GPTQ-table LLaMA model at some bits per weight, from the billions in its name, scales not counted (descent.published)."""
    return published.gptq_weights_bytes(model, bits)


@quantity("gptq_perplexity_change", "Perplexity against FP16", "fraction", GPTQ_MODEL, GPTQ_COLUMN)
def gptq_perplexity_change(model: str, column: str) -> float:
    """How much a published GPTQ-table perplexity exceeds the same model's FP16 one (descent.published)."""
    return published.gptq_change(model, column)


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
