"""The KV cache: bytes per token for every model, one sequence at its longest context, growth with
the context, grouped-query savings, and quantized KV formats (:mod:`descent.transformer`).
"""

from __future__ import annotations

from descent import catalog, numerics, transformer
from descent import params as P
from descent.site.shortcodes import table
from descent.site.values.catalog import attention_kind
from descent.site.values.quantities import show
from descent.site.values.text import fmt_bytes, md_table, md_text
from descent.units import (
    format_int,
)


@table("kv_bytes_per_token", P.KV.but(default="bf16"), P.BYTE_UNIT.but(default="KiB"))
def kv_bytes_per_token_table(kv: str, unit: str) -> str:
    """KV-cache bytes per token for every catalog model."""
    rows = []
    for m in catalog.models().values():
        rows.append([md_text(m.name), attention_kind(m), format_int(transformer.kv_elements_per_token(m)),
                     show("kv_bytes_per_token", unit, model=m.id, kv=kv)])
    return md_table(["model", "attention", "elements per token", f"bytes per token ({kv})"], rows, "llrr")

#: Context lengths of the ``kv_growth`` table, tokens.
GROWTH_CONTEXTS = (1_024, 8_192, 32_768, 131_072)

def _kv_bytes(model_id: str, context: int, kv: str) -> float:
    m = catalog.model(model_id)
    return transformer.kv_cache_bytes(m, context, numerics.kv_precision(kv).bits_per_weight)

@table("context_windows", P.KV.but(default="bf16"))
def context_windows(kv: str) -> str:
    """Every catalog model's longest context (tokens) and one sequence's KV cache filled to it."""
    rows = []
    for m in catalog.models().values():
        rows.append([md_text(m.name), format_int(m.max_context), fmt_bytes(_kv_bytes(m.id, m.max_context, kv), "GiB")])
    label = numerics.kv_precision(kv).label
    return md_table(
        ["model", "longest context (tokens)", f"KV cache at that length, one sequence ({label})"], rows, "lrr"
    )

@table("kv_growth", P.MODEL.but(default="llama-3.1-8b"), P.KV.but(default="bf16"))
def kv_growth(model: str, kv: str) -> str:
    """One model's KV cache for one sequence at :data:`GROWTH_CONTEXTS` (capped at its longest context)."""
    m = catalog.model(model)
    rows = [
        [format_int(t), fmt_bytes(_kv_bytes(model, t, kv), "GiB")] for t in GROWTH_CONTEXTS if t <= m.max_context
    ]
    label = numerics.kv_precision(kv).label
    return md_table(["context (tokens)", f"{md_text(m.name)} KV cache, one sequence ({label})"], rows, "rr")

@table("gqa_savings", P.KV.but(default="bf16"))
def gqa_savings(kv: str) -> str:
    """Query heads H against key/value heads K, and the KV cache per token with K heads vs with H."""
    rows = []
    for m in catalog.models().values():
        if m.mla is not None:
            continue  # MLA caches a latent, not K heads: see the kv-cache-per-token figure
        kind = "MHA" if m.num_kv_heads == m.num_heads else ("MQA" if m.num_kv_heads == 1 else "GQA")
        rows.append(
            [
                md_text(m.name),
                m.num_heads,
                m.num_kv_heads,
                kind,
                show("kv_bytes_per_token", "KiB", model=m.id, kv=kv),
                show("kv_bytes_per_token_mha", "KiB", model=m.id, kv=kv),
                f"{show('gqa_kv_reduction', model=m.id)}x",
            ]
        )
    return md_table(
        [
            "model",
            "query heads H",
            "KV heads K",
            "kind",
            "KV per token",
            "if every head had its own K, V",
            "smaller by",
        ],
        rows,
        "lrrlrrr",
    )

#: KV precisions the KV table compares.
KV_COMPARED = ("bf16", "fp8", "int4")

@table("kv_quant", P.CONTEXT.but(default=131072))
def kv_quant(context: int) -> str:
    """KV cache of one sequence at a long context in BF16, FP8 and 4-bit, and what the smaller formats free."""
    rows = []
    for m in catalog.models().values():
        at = {"model": m.id, "context": context}
        rows.append([md_text(m.name), format_int(min(context, m.max_context)),
                     *(show("kv_sequence_bytes", "GB", kv=k, **at) for k in KV_COMPARED),
                     *(show("kv_sequence_bytes_freed", "GB", kv=k, **at) for k in KV_COMPARED[1:])])
    return md_table(["model", "tokens", "BF16", "FP8", "4-bit (g128)", "FP8 frees", "4-bit frees"], rows,
                    "lrrrrrr")
