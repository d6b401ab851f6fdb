"""Figure: decode-speed ceiling per sequence for one model on every catalog accelerator, log scale.

The model and precisions are the sandbox's defaults (the declared defaults of ``descent.params``:
Llama 3.1 70B, FP8 weights, BF16 KV cache, 8,192 tokens, one sequence); the rows come from
``descent.memory.across_field``, the function behind the page's table and widget.
"""

from matplotlib.patches import Patch

from descent import catalog, numerics
from descent import params as P
from descent.memory import across_field
from descent.units import format_int, format_number

FIELD_DEFAULTS = {p.name: p.default for p in (P.MODEL, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH)}

_M = catalog.model(FIELD_DEFAULTS["model"])
_W = numerics.precision(FIELD_DEFAULTS["weights"]).label
_KV = numerics.kv_precision(FIELD_DEFAULTS["kv"]).label

ALT = (
    f"Horizontal bar chart, logarithmic axis: the most tokens per second one conversation can get "
    f"from {_M.name} ({_W} weights, {_KV} KV cache, {format_int(FIELD_DEFAULTS['context'])} tokens of context) "
    f"on each accelerator of the catalog, set by its memory bandwidth. Chips whose memory cannot hold "
    f"the model are grey and labelled won't fit. Groq's and Cerebras's machines, which hold a model only "
    f"across many chips, are left out. The table below the figure lists the same numbers."
)
CAPTION = (
    f"Decode-speed ceiling per sequence: memory bandwidth divided by the bytes one decode step reads, "
    f"for {_M.name} with {_W} weights and a {_KV} KV cache at {format_int(FIELD_DEFAULTS['context'])} tokens, "
    f"batch 1. Grey bars: the weights, KV cache and runtime allowance do not fit in that chip's memory, "
    f"so the bar is what its bandwidth would allow if they did. Machines that keep weights in on-chip SRAM "
    f"(Groq, Cerebras) serve a model across many chips and are not drawn. Real engines reach a fraction of "
    f"these ceilings."
)

#: Figure height per accelerator row, inches, plus the fixed part (axis and labels).
ROW_HEIGHT_IN = 0.32
BASE_HEIGHT_IN = 1.0
#: Headroom to the right of the largest bar for its label (log axis: a factor, not an offset).
LABEL_HEADROOM = 40


#: Below this width (inches) the chips' names go above their bars instead of beside them.
NARROW_IN = 5
#: Row height on a phone: a name line above each bar.
ROW_HEIGHT_NARROW_IN = 0.5


def make(theme, width=None):
    from descent import plotting

    width = width or plotting.FIGSIZE[0]
    narrow = width < NARROW_IN
    rows = [s for s in across_field(**FIELD_DEFAULTS)  # no SRAM machines (they serve across many chips)
            if catalog.accelerator(s.accelerator).single_chip_comparable][::-1]  # fastest on top
    fig, ax = plotting.new_figure(
        theme, figsize=(width, BASE_HEIGHT_IN + (ROW_HEIGHT_NARROW_IN if narrow else ROW_HEIGHT_IN) * len(rows))
    )
    fits_color, grey = theme.color(0), theme.grid
    ys = list(range(len(rows)))
    speeds = [s.decode_tokens_per_s for s in rows]
    ax.barh(
        ys,
        speeds,
        color=[fits_color if s.fits else grey for s in rows],
        edgecolor=[fits_color if s.fits else theme.muted for s in rows],
        linewidth=0.6,
        zorder=3,
    )
    for y, s in zip(ys, rows, strict=True):
        text = format_number(s.decode_tokens_per_s, 3) + ("" if s.fits else "   won't fit")
        ax.annotate(
            text,
            (s.decode_tokens_per_s, y),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
            color=theme.fg if s.fits else theme.muted,
        )
    names = [catalog.accelerator(s.accelerator).name for s in rows]
    ax.set_xscale("log")
    ax.set_xlim(min(speeds) / 2, max(speeds) * LABEL_HEADROOM)
    if narrow:  # names above the bars, so the bars get the whole width
        ax.set_yticks(ys, [""] * len(ys))
        ax.tick_params(axis="y", length=0)
        for y, name, s in zip(ys, names, rows, strict=True):
            ax.annotate(name, (0, y + 0.32), xycoords=("axes fraction", "data"), va="bottom", fontsize=8,
                        color=theme.fg if s.fits else theme.muted)
        ax.set_ylim(-0.6, len(rows) - 0.1)
    else:
        ax.set_yticks(ys, names)
        for label, s in zip(ax.get_yticklabels(), rows, strict=True):
            if not s.fits:
                label.set_color(theme.muted)
    ax.set_xlabel("tokens/s per sequence (log scale)" if narrow else "decode ceiling, tokens/s per sequence (log scale)")
    ax.grid(axis="y", visible=False)
    handles = [
        Patch(color=fits_color, label="fits on one chip"),
        Patch(facecolor=grey, edgecolor=theme.muted, label="won't fit (ceiling if it did)"),
    ]
    if narrow:
        fig.legend(handles=handles, loc="outside lower center", fontsize=8)
    else:
        ax.legend(handles=handles, loc="lower right", fontsize=8)
    return fig
