"""Figure: SmolLM2's perplexity on the evaluation text, as shipped and re-quantized, measured at build
(descent.trace.quality)."""

from descent.trace import quality
from descent.units import format_int, format_number, format_percent

_Q = quality.measure()
_BASE = next(r["perplexity"] for r in _Q["variants"] if r["id"] == "shipped")

ALT = (
    "Horizontal bar chart, logarithmic axis: SmolLM2-135M's perplexity on a passage of the Python "
    "documentation for the shipped 4-bit file and for its weights rounded again seven ways. 8-bit "
    "integers stay next to the shipped file; MXFP4, 4-bit integers with one scale per row and 3-bit "
    "integers with a scale per 32 roughly double it; 3-bit with one scale per row and 2-bit "
    "integers make it hundreds of times worse."
)
CAPTION = (
    f"Perplexity of SmolLM2-135M over {format_int(_Q['tokens'])} tokens ({_Q['text']}), lower is better, "
    "with the 210 attention and feed-forward matrices stored each way; the embedding stays as shipped (Q8_0). "
    "Every bar is relative to the shipped 4-bit file (Q4_1), not to the original BF16 model. "
    f"Computed with this site's NumPy forward pass on {_Q['machine']} when the site is built."
)


def draw(ax, theme):
    rows = list(reversed(_Q["variants"]))
    ys = range(len(rows))
    colors = [theme.color(1) if r["id"] == "shipped" else theme.color(0) for r in rows]
    ax.barh(list(ys), [r["perplexity"] for r in rows], color=colors, zorder=3)
    for y, r in enumerate(rows):
        extra = "" if r["id"] == "shipped" else f"  (+{format_percent(r['perplexity'] / _BASE - 1, 2)})"
        ax.annotate(format_number(r["perplexity"], 3) + extra, (r["perplexity"], y), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=8, color=theme.fg)
    ax.set_yticks(list(ys), [f"{r['label'].split(':')[0]} ({format_number(r['bits_per_weight'], 3, trim=True)} bits)"
                             for r in rows], fontsize=8)
    ax.set_xscale("log")
    ax.set_xlim(right=max(r["perplexity"] for r in rows) * 20)
    ax.set_xlabel("perplexity, log scale (lower is better)")
    ax.grid(axis="y", visible=False)
