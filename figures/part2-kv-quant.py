"""Figure: one sequence's KV cache at a long context, BF16 vs FP8 vs 4-bit, every catalog model."""

import numpy as np

from descent import catalog, numerics, transformer
from descent.units import BYTE_UNITS, format_int, format_number

#: The context drawn (tokens), capped at each model's own maximum.
CONTEXT = 131072
#: KV formats compared.
FORMATS = ("bf16", "fp8", "int4")

ALT = (
    f"Grouped horizontal bar chart: for every catalog model, the KV cache of one conversation at "
    f"{format_int(CONTEXT)} tokens (or the model's maximum if smaller), in GB, stored as BF16, FP8 and "
    "4-bit integers. FP8 halves every bar and 4-bit roughly quarters it."
)
CAPTION = (
    f"KV cache of one sequence at {format_int(CONTEXT)} tokens (capped at each model's maximum context), "
    "keys and values of every layer. FP8 is one byte per value; the 4-bit format keeps one FP16 scale per "
    f"{numerics.INT4_GROUP} values, {format_number(numerics.kv_precision('int4').bits_per_weight, 4, trim=True)} "
    "bits per value. GB = 10^9 bytes."
)


def draw(ax, theme):
    models = list(catalog.models().values())
    n = len(FORMATS)
    h = 0.8 / n
    ys = np.arange(len(models))
    for i, k in enumerate(FORMATS):
        p = numerics.kv_precision(k)
        vals = [transformer.kv_cache_elements(m, min(CONTEXT, m.max_context)) * p.bytes_per_weight / BYTE_UNITS["GB"]
                for m in models]
        ax.barh(ys + (i - (n - 1) / 2) * h, vals, height=h, color=theme.color(i), label=p.label, zorder=3)
    ax.set_yticks(list(ys), [m.name for m in models], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("KV cache of one sequence, GB")
    ax.grid(axis="y", visible=False)
    ax.legend(fontsize=8, loc="lower right")
