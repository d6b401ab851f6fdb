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

@quantity("kv_bytes_per_token_mha", "KV cache per token if every head had its own", "bytes", P.MODEL, P.KV)
def kv_bytes_per_token_mha(model: str, kv: str) -> float:
    """KV-cache bytes per token with one key/value head per query head (MHA), the yardstick of GQA (descent.transformer, Ainslie et al. 2023).

    Raises ParamError for an MLA model."""
    from descent import catalog, numerics, transformer

    m = catalog.model(model)
    if m.mla is not None:
        raise P.ParamError("model", f"{m.name} uses MLA: it caches a latent, not key/value heads; pick another model")
    return transformer.kv_elements_per_token_mha(m) * numerics.kv_precision(kv).bytes_per_weight

@quantity("gqa_kv_reduction", "KV cache smaller than MHA by", "number", P.MODEL)
def gqa_kv_reduction(model: str) -> float:
    """The KV cache per token with every query head's own keys and values, over the model's own (H / K for plain GQA).

    The precision cancels. Raises ParamError for an MLA model."""
    return kv_bytes_per_token_mha.func(model, "bf16") / kv_bytes_per_token.func(model, "bf16")

@quantity("kv_sequence_bytes", "KV cache of one sequence", "bytes", P.MODEL, P.KV, P.CONTEXT)
def kv_sequence_bytes(model: str, kv: str, context: int) -> float:
    """One sequence's KV cache at the context capped at the model's longest, windows and state counted (descent.transformer.kv_cache_bytes)."""
    from descent import catalog, numerics, transformer

    m = catalog.model(model)
    return transformer.kv_cache_bytes(m, min(context, m.max_context), numerics.kv_precision(kv).bits_per_weight)

@quantity("kv_sequence_bytes_freed", "KV cache freed against BF16", "bytes", P.MODEL, P.KV, P.CONTEXT)
def kv_sequence_bytes_freed(model: str, kv: str, context: int) -> float:
    """What storing one sequence's KV cache in this precision instead of BF16 frees: kv_sequence_bytes at BF16 minus at it."""
    return kv_sequence_bytes.func(model, "bf16", context) - kv_sequence_bytes.func(model, kv, context)

@quantity("params_in_layers", "Parameters in the layers", "params", P.MODEL)
def params_in_layers(model: str) -> int:
    """Parameters of the layer stack: attention, FFN or experts, shared experts, routers (descent.transformer.param_counts)."""
    from descent import catalog, transformer

    return transformer.param_counts(catalog.model(model)).in_layers

@quantity("params_embeddings", "Embeddings and output head", "params", P.MODEL)
def params_embeddings(model: str) -> int:
    """Parameters of the embedding table plus the output head (0 when tied; descent.transformer.param_counts)."""
    from descent import catalog, transformer

    return transformer.param_counts(catalog.model(model)).embeddings
