"""Figure: KV-cache bytes per token of context at BF16, every catalog model, log scale."""

from matplotlib.patches import Patch

from descent import catalog, numerics, transformer
from descent.units import BYTE_UNITS

ALT = (
    "Horizontal bar chart, logarithmic axis: KV-cache kibibytes each token of context adds, at "
    "BF16, for every model in the catalog, coloured by attention type (GQA, MLA, sliding window, "
    "chunks, hybrid with linear attention). The reference page lists the exact values."
)
CAPTION = (
    "KV-cache bytes per token of context at BF16 (2 bytes per value), all layers, keys and values, "
    "before any sliding-window or chunk cap. GQA models store K key/value heads, not one per query head; "
    "MLA (DeepSeek-V3, Kimi K2) stores one shared latent per layer. A hybrid (Qwen3-Next) adds keys and "
    "values only in its attention layers; its linear-attention layers keep a fixed state that no token "
    "adds to. KiB = 1,024 bytes."
)

#: KV-cache element format drawn: BF16 (2 bytes per value).
KV_FORMAT = "bf16"


def _group(m) -> str:
    if m.mla is not None:
        return "MLA"
    if m.linear_attention is not None:
        return "hybrid: GQA + linear attention"
    if m.sliding is not None:
        return "GQA + sliding window"
    if m.chunked is not None:
        return "GQA + chunks"
    return "GQA" if 1 < m.num_kv_heads < m.num_heads else ("MQA" if m.num_kv_heads == 1 else "MHA")


def draw(ax, theme):
    per_value = numerics.kv_precision(KV_FORMAT).bytes_per_weight
    rows = [(m.name, transformer.kv_elements_per_token(m) * per_value / BYTE_UNITS["KiB"], _group(m))
            for m in catalog.models().values()]
    rows.sort(key=lambda r: r[1])
    groups = sorted({g for _, _, g in rows})
    colors = {g: theme.color(i) for i, g in enumerate(groups)}
    ys = range(len(rows))
    ax.barh(list(ys), [v for _, v, _ in rows], color=[colors[g] for _, _, g in rows], zorder=3)
    for y, (_, v, _) in enumerate(rows):
        ax.annotate(f"{v:,.1f}" if v < 100 else f"{v:,.0f}", (v, y), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=8, color=theme.fg)
    ax.set_yticks(list(ys), [n for n, _, _ in rows])
    ax.set_xscale("log")
    ax.set_xlabel("KV cache per token of context, KiB (BF16)")
    ax.grid(axis="y", visible=False)
    ax.set_xlim(right=max(v for _, v, _ in rows) * 3)
    ax.legend(handles=[Patch(color=colors[g], label=g) for g in groups], loc="lower right", fontsize=8)
