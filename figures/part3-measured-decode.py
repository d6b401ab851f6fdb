"""Figure: SmolLM2 decode on the build machine at batch 1 to 16: tokens/s and time per step (measured)."""

import hashlib
import json

from descent.trace.measure import measurements
from descent.units import format_number

ALT = (
    "Two bar charts measured on the machine that built this site with SmolLM2-135M: decode tokens per "
    "second at batch 1, 2, 4, 8 and 16, and the time of one decode step at each batch. The table in the "
    "text lists the same numbers."
)
CAPTION = (
    "SmolLM2-135M decoding with the site's NumPy forward pass on the build machine, one BLAS thread: "
    "tokens per second (left) and time per step (right) by batch. Every sequence holds the same cached "
    "prompt; one step gives each of them one token."
)


def INPUTS() -> str:  # noqa: N802 (the figure builder's name for it)
    return hashlib.sha256(json.dumps(measurements()["batched"], sort_keys=True).encode()).hexdigest()


def make(theme):
    from matplotlib.figure import Figure

    from descent import plotting

    rows = measurements()["batched"]
    fig = Figure(figsize=plotting.FIGSIZE, layout="constrained")
    left, right = fig.subplots(1, 2)
    labels = [str(r["batch"]) for r in rows]
    tps = [r["tokens_per_s"] for r in rows]
    ms = [r["seconds_per_step"] * 1000 for r in rows]
    left.bar(labels, tps, color=theme.color(0), zorder=3)
    right.bar(labels, ms, color=theme.color(1), zorder=3)
    for ax, vals in ((left, tps), (right, ms)):
        for i, v in enumerate(vals):
            ax.annotate(format_number(v, 3), (i, v), xytext=(0, 3), textcoords="offset points", ha="center",
                        fontsize=8, color=theme.fg)
        ax.set_xlabel("batch (sequences decoded together)")
        ax.grid(axis="x", visible=False)
        ax.set_ylim(top=max(vals) * 1.15)
    left.set_ylabel("tokens/s (all sequences)")
    right.set_ylabel("time per step, ms")
    return fig
