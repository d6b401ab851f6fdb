"""Value and table shortcodes for Part 1 ("The transformer"): embeddings, stacks, attention, MoE.

Imported at the bottom of :mod:`descent.site.values`. Every number comes from the core
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

import math
import random

from descent import catalog, numerics, transformer
from descent.site.shortcodes import Arg, table, value
from descent.site.values import MODEL, fmt_bytes, fmt_count, fmt_num, md_table
from descent.widgets.part1_model import embedding_data

__all__ = [
    "SATURATION_KEYS",
    "SATURATION_SEED",
    "embedding_fact",
    "gqa_savings",
    "part1_stacks",
    "saturation",
    "softmax_saturation",
    "stack_count",
]

#: Percent per unit fraction.
PERCENT = 100

#: The saturation demo: one query against this many keys, entries drawn from a standard normal
#: (mean 0, variance 1, the assumption of Vaswani et al. 2017, footnote 4), with this seed.
SATURATION_KEYS = 16
SATURATION_SEED = 7


def saturation(d: int) -> dict:
    """Softmax of one random query against :data:`SATURATION_KEYS` random keys of width ``d``.

    Returns ``score_std`` (standard deviation of the raw dot products: about sqrt(d)), and the
    largest softmax weight with the scores divided by sqrt(d) (``scaled_max``) and without
    (``unscaled_max``), plus the effective number of keys attended (2 to the entropy in bits) for
    each. Deterministic (``random.Random(SATURATION_SEED)``).

    Raises:
        ValueError: d not 1 to 16,384.
    """
    if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= 16384:
        raise ValueError(f"d must be 1 to 16,384, got {d!r}")
    rng = random.Random(SATURATION_SEED)
    q = [rng.gauss(0, 1) for _ in range(d)]
    keys = [[rng.gauss(0, 1) for _ in range(d)] for _ in range(SATURATION_KEYS)]
    zero = [[0.0] for _ in keys]
    scaled = transformer.attend(q, keys, zero, scale=True)
    raw = transformer.attend(q, keys, zero, scale=False)
    mean = sum(raw["scores"]) / len(keys)
    std = math.sqrt(sum((s - mean) ** 2 for s in raw["scores"]) / len(keys))

    def spread(w):
        return 2 ** -sum(x * math.log2(x) for x in w if x > 0)

    return {
        "score_std": std,
        "scaled_max": max(scaled["weights"]),
        "unscaled_max": max(raw["weights"]),
        "scaled_spread": spread(scaled["weights"]),
        "unscaled_spread": spread(raw["weights"]),
    }


@value(
    "softmax_saturation",
    Arg(
        "field",
        "score_std, scaled_max, unscaled_max (percent), scaled_spread, unscaled_spread (keys), keys",
        choices=["score_std", "scaled_max", "unscaled_max", "scaled_spread", "unscaled_spread", "keys"],
    ),
    Arg("d", "key width d_k", type=int, default=128, minimum=1, maximum=16384),
)
def softmax_saturation(field: str, d: int) -> str:
    if field == "keys":
        return str(SATURATION_KEYS)
    r = saturation(d)[field]
    if field.endswith("_max"):
        return f"{fmt_num(r * PERCENT)}%"
    return fmt_num(r)


_EMBED_FIELDS = ["pca1", "pca2", "pca12", "words", "vocab", "d_model"]


def _analogy(expected: str) -> dict:
    for a in embedding_data()["analogies"]:
        if a["expected"] == expected:
            return a
    raise ValueError(f"no analogy with expected answer {expected!r}")


@value(
    "embedding_fact",
    Arg(
        "field",
        "pca1, pca2, pca12 (percent of variance), words, vocab, d_model, rank_all, "
        "rank_excluding_inputs, cosine, top",
        choices=[*_EMBED_FIELDS, "rank_all", "rank_excluding_inputs", "cosine", "top"],
    ),
    Arg(
        "analogy",
        "expected answer of an analogy (for rank_*, cosine, top)",
        choices=lambda: ["", *(a["expected"] for a in embedding_data()["analogies"])],
        default="",
    ),
)
def embedding_fact(field: str, analogy: str) -> str:
    d = embedding_data()
    if field in _EMBED_FIELDS:
        if analogy:
            raise ValueError(
                f"analogy= applies only to rank_all, rank_excluding_inputs, cosine, top; not {field}"
            )
        ex = d["pca"]["explained"]
        return {
            "pca1": f"{fmt_num(ex[0] * PERCENT)}%",
            "pca2": f"{fmt_num(ex[1] * PERCENT)}%",
            "pca12": f"{fmt_num((ex[0] + ex[1]) * PERCENT)}%",
            "words": str(d["pca"]["words"]),
            "vocab": f"{d['vocab_size']:,}",
            "d_model": str(d["d_model"]),
        }[field]
    if not analogy:
        raise ValueError(f"field={field} needs analogy= (the expected answer, e.g. queen)")
    a = _analogy(analogy)
    if field == "cosine":
        return f"{a['cosine']:.2f}"
    if field == "top":
        return "“" + a["top"][0]["text"].strip() + "”"
    return str(a[field])


@value(
    "stack_count",
    Arg("layers", "L", type=int, default=12, minimum=1, maximum=1000),
    Arg("d_model", "D", type=int, default=768, minimum=1, maximum=100000),
    Arg("heads", "H", type=int, default=12, minimum=1, maximum=1000),
    Arg("ffn", "F", type=int, default=3072, minimum=1, maximum=1000000),
    Arg("gated", "yes or no", choices=["yes", "no"], default="no"),
    Arg("unit", "auto or exact", choices=["auto", "exact"], default="auto"),
)
def stack_count(layers: int, d_model: int, heads: int, ffn: int, gated: str, unit: str) -> str:
    n = transformer.stack_params(layers, d_model, heads, heads, ffn, gated == "yes").total
    return f"{n:,}" if unit == "exact" else fmt_count(n)


@value("moe_active_share", MODEL)
def moe_active_share(model: str) -> str:
    p = transformer.param_counts(catalog.model(model))
    return f"{fmt_num(p.active / p.total * PERCENT)}%"


@table("part1_stacks")
def part1_stacks() -> str:
    """Every catalog model's stack: L, D, H, K, d_head, FFN width, and its parameters by part."""
    rows = []
    for m in catalog.models().values():
        p = transformer.param_counts(m)
        if m.moe:
            ffn = f"{m.moe.num_experts} x {m.moe.expert_intermediate_size:,}"
            if m.moe.num_shared_experts:
                ffn += f" + {m.moe.num_shared_experts} shared"
        else:
            ffn = f"{m.intermediate_size:,}"
        layers_w = p.attention + p.dense_ffn + p.experts + p.shared_experts + p.router
        rows.append(
            [
                m.name,
                m.num_layers,
                f"{m.hidden_size:,}",
                m.num_heads,
                m.num_kv_heads,
                m.head_dim,
                ffn,
                fmt_count(layers_w),
                fmt_count(p.embedding + p.output_head),
                fmt_count(p.total),
                fmt_count(p.active),
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


@table(
    "gqa_savings",
    Arg("dtype", "KV-cache element format", choices=lambda: list(numerics.KV_PRECISIONS), default="bf16"),
)
def gqa_savings(dtype: str) -> str:
    """Query heads H against key/value heads K, and the KV cache per token with K heads vs with H."""
    per = numerics.kv_precision(dtype).bytes_per_weight
    rows = []
    for m in catalog.models().values():
        if m.mla is not None:
            continue  # MLA caches a latent, not K heads: see the kv-cache-per-token figure
        kv = transformer.kv_elements_per_token(m) * per
        mha = transformer.KV_TENSORS * m.num_layers * m.num_heads * m.head_dim * per
        kind = "MHA" if m.num_kv_heads == m.num_heads else ("MQA" if m.num_kv_heads == 1 else "GQA")
        rows.append(
            [
                m.name,
                m.num_heads,
                m.num_kv_heads,
                kind,
                fmt_bytes(kv, "KiB"),
                fmt_bytes(mha, "KiB"),
                f"{fmt_num(mha / kv)}x",
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
