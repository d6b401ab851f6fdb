"""Value and table shortcodes for Part 1 ("The transformer"): embeddings, stacks, attention, MoE.

Imported by :mod:`descent.site.values`. Every number comes from the core
(:mod:`descent.transformer`, the catalog) or from ``descent/data/embeddings.json`` (the real
SmolLM2 embedding table, exported by :mod:`descent.trace.embeddings`).

* ``<!-- descent:table part1_stacks -->``: the layer stack of every catalog model.
* ``<!-- descent:table gqa_savings -->``: query heads vs key/value heads and the KV-cache saving.
* ``<!-- descent:value embedding_fact field=... -->``: PCA variance, analogy ranks and cosines.
* ``<!-- descent:value stack_count ... -->``: :func:`descent.transformer.stack_params`.
* ``<!-- descent:value softmax_saturation field=... d=... -->``: why attention divides by sqrt(d).
* ``<!-- descent:value moe_active_share model=... -->``: active / total parameters, percent.
"""

from __future__ import annotations

from descent import catalog, transformer
from descent import params as P
from descent.recorded import embedding_data, pca_explained
from descent.site.shortcodes import table, value
from descent.site.values.quantities import show
from descent.site.values.text import fmt_num, md_table, md_text
from descent.units import format_count, format_int, format_number, format_percent

SATURATION_FIELD = P.declare(P.Param(
    "field", "Saturation field", "choice", key="saturation_field",
    choices=[(f, f) for f in ("score_std", "scaled_max", "unscaled_max", "scaled_spread", "unscaled_spread", "keys")],
    help="score_std, scaled_max, unscaled_max (percent), scaled_spread, unscaled_spread (keys), keys",
))

KEY_WIDTH = P.declare(P.Param("d", "Key width d_k", "int", 128, key="key_width", min=1, max=16384,
                              help="width of the query and key vectors"))

@value("softmax_saturation", SATURATION_FIELD, KEY_WIDTH)
def softmax_saturation(field: str, d: int) -> str:
    """Why attention divides by sqrt(d): :func:`descent.transformer.softmax_saturation`."""
    if field == "keys":
        return format_int(transformer.SATURATION_KEYS)
    r = transformer.softmax_saturation(d)[field]
    if field.endswith("_max"):
        return format_percent(r)
    return fmt_num(r)

_EMBED_FIELDS = ["pca1", "pca2", "pca12", "words", "vocab", "d_model"]

def _analogy(expected: str) -> dict:
    for a in embedding_data()["analogies"]:
        if a["expected"] == expected:
            return a
    raise ValueError(f"no analogy with expected answer {expected!r}")

EMBED_FIELD = P.declare(P.Param(
    "field", "Embedding fact", "choice", key="embedding_field",
    choices=[(f, f) for f in (*_EMBED_FIELDS, "rank_all", "rank_excluding_inputs", "cosine", "top")],
    help="pca1, pca2, pca12 (percent of variance), words, vocab, d_model, rank_all, rank_excluding_inputs, "
    "cosine, top",
))

EMBED_ANALOGY = P.declare(P.Param(
    "analogy", "Analogy answer", "choice", "", key="embedding_analogy",
    choices=lambda: [("", "none"), *((a["expected"], a["expected"]) for a in embedding_data()["analogies"])],
    help="expected answer of an analogy (for rank_*, cosine, top)",
))

@value("embedding_fact", EMBED_FIELD, EMBED_ANALOGY)
def embedding_fact(field: str, analogy: str) -> str:
    d = embedding_data()
    if field in _EMBED_FIELDS:
        if analogy:
            raise ValueError(
                f"analogy= applies only to rank_all, rank_excluding_inputs, cosine, top; not {field}"
            )
        ex = d["pca"]["explained"]
        return {
            "pca1": format_percent(ex[0]),
            "pca2": format_percent(ex[1]),
            "pca12": format_percent(pca_explained(2)),
            "words": format_int(d["pca"]["words"]),
            "vocab": format_int(d["vocab_size"]),
            "d_model": format_int(d["d_model"]),
        }[field]
    if not analogy:
        raise ValueError(f"field={field} needs analogy= (the expected answer, e.g. queen)")
    a = _analogy(analogy)
    if field == "cosine":
        return format_number(a["cosine"], 2)
    if field == "top":
        return "“" + a["top"][0]["text"].strip() + "”"
    return str(a[field])

_STACK = transformer.STACK_EXAMPLE

@value(
    "stack_count",
    P.LAYERS.but(default=_STACK["layers"]),
    P.D_MODEL.but(default=_STACK["d_model"]),
    P.HEADS.but(default=_STACK["heads"]),
    P.FFN.but(default=_STACK["ffn"]),
    P.GATED.but(default=_STACK["gated"]),
    P.COUNT_UNIT,
)
def stack_count(layers: int, d_model: int, heads: int, ffn: int, gated: bool, unit: str) -> str:
    """Weights in a stack of identical layers (:func:`descent.transformer.stack_params`), query heads
    as key/value heads (MHA)."""
    return format_count(transformer.stack_params(layers, d_model, heads, heads, ffn, gated).total, unit)

@table("part1_stacks")
def part1_stacks() -> str:
    """Every catalog model's stack: L, D, H, K, d_head, FFN width, and its parameters by part."""
    rows = []
    for m in catalog.models().values():
        if m.moe:
            ffn = f"{m.moe.num_experts} x {format_int(m.moe.expert_intermediate_size)}"
            if m.moe.num_shared_experts:
                ffn += f" + {m.moe.num_shared_experts} shared"
        else:
            ffn = format_int(m.intermediate_size)
        rows.append(
            [
                md_text(m.name),
                m.num_layers,
                format_int(m.hidden_size),
                m.num_heads,
                m.num_kv_heads,
                m.head_dim,
                ffn,
                show("params_in_layers", model=m.id),
                show("params_embeddings", model=m.id),
                show("params_total", model=m.id),
                show("params_active", model=m.id),
            ]
        )
    return md_table(
        [
            "model",
            "layers",
            "d_model",
            "heads",
            "KV heads",
            "d_head",
            "FFN width",
            "in the layers",
            "embeddings + head",
            "total",
            "active per token",
        ],
        rows,
        "lrrrrrrrrrr",
    )
