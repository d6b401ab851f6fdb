"""Figure: one real SmolLM2 matrix rounded to 8, 4, 3 and 2-bit integers with one scale for the whole
tensor: the histogram turns into a few stair steps (descent.trace.quality)."""

import matplotlib.pyplot as plt
import numpy as np

from descent import plotting
from descent.trace import quality
from descent.units import format_int, format_number

_T = quality.TABLE_TENSOR
_ROWS = {(r["bits"], r["symmetric"]): r for r in quality.tensor_table()}
#: Widths drawn, one panel each.
BITS = (8, 4, 3, 2)
#: Histogram bins across the drawn range.
BINS = 160
#: The drawn range, in standard deviations of the weights (the outliers beyond it are few).
SPAN_STD = 4

ALT = (
    f"Four histograms of the {format_int(int(quality.tensor_values().size))} weights of SmolLM2's {_T}. "
    "In each, the real weights form a smooth bell; the same weights rounded to integers with one scale "
    "for the whole matrix pile onto a few levels: many at 8 bits, a handful at 4, three or so at 3 bits, "
    "and at 2 bits almost every weight becomes zero."
)
CAPTION = (
    f"SmolLM2-135M's {_T} (as shipped, Q4_1), rounded again with one symmetric scale for the whole matrix. "
    "Grey: the weights; blue: after rounding (log scale of counts). Its largest weight is "
    f"{format_number(float(np.abs(quality.tensor_values()).max() / quality.tensor_values().std()), 3)} standard "
    "deviations out, so that one weight sets the step and the bulk of the bell shares a few levels. "
    + "; ".join(f"{b} bits: SQNR {format_number(_ROWS[(b, True)]['sqnr_db'], 3)} dB" for b in BITS) + "."
)


def make(theme):
    w = quality.tensor_values()
    lim = SPAN_STD * w.std()
    edges = np.linspace(-lim, lim, BINS + 1)
    fig, axes = plt.subplots(2, 2, figsize=(plotting.FIGSIZE[0], 5.2), sharex=True, sharey=True)
    for ax, bits in zip(axes.ravel(), BITS, strict=True):
        q = quality.tensor_rounded(bits)
        ax.hist(w, bins=edges, histtype="stepfilled", color=theme.muted, alpha=0.45, label="weights")
        ax.hist(q, bins=edges, histtype="stepfilled", color=theme.color(0), label=f"rounded, {bits} bits")
        ax.set_yscale("log")
        r = _ROWS[(bits, True)]
        ax.set_title(f"{bits} bits: {format_int(r['levels'])} levels, step {format_number(r['step'], 2)}", fontsize=9)
        ax.legend(fontsize=7, loc="upper right")
    for ax in axes[1]:
        ax.set_xlabel("weight value")
    for ax in axes[:, 0]:
        ax.set_ylabel("count")
    fig.tight_layout()
    return fig
