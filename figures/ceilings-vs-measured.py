"""Figure: every public measurement of the catalog against the step model's ceiling for the same
configuration (descent.predict), on logarithmic axes, with the diagonal where the two would agree.

One marker shape per engine, one colour per chip class. Times are drawn as their speeds (a TTFT as
prompt tokens / TTFT), so both axes are tokens/s. Guide lines mark half and a quarter of the ceiling.
Wide, the lines are named along themselves; on a phone the names would cross the lines and the
points, so the key below the plot names them, chips in one column and engines in the other.
"""

from descent import predict
from descent.catalog import measurements as M

ALT = (
    "Scatter plot on logarithmic axes: each public measurement of inference speed in the catalog is a "
    "point, placed by the step model's ceiling for its configuration (horizontal, tokens per second) and "
    "by what was measured (vertical, tokens per second). A diagonal line marks where measured equals the "
    "ceiling, two dashed lines where it is half and a quarter of it. Marker shapes tell the engines apart "
    "(llama.cpp, vLLM, SGLang, TensorRT-LLM, NVIDIA NIM, the site's own NumPy code) and colours the chip classes "
    "(consumer GPU, Apple Silicon, data-centre GPU, CPU). Most points lie between the diagonal and the "
    "half line; the table below the figure lists every point."
)
CAPTION = (
    "Measured speed against the step model's ceiling, one point per published measurement, tokens/s on "
    "both axes (log scale). On the solid diagonal a measurement would reach its ceiling; the dashed lines "
    "are half and a quarter of it. Shape: the engine. Colour: the chip class."
)

#: Marker per engine, in :data:`descent.catalog.measurements.ENGINES` order.
MARKERS = ("o", "s", "D", "^", "v", "P")
#: Guide lines: measured = this share of the ceiling.
GUIDES = (0.5, 0.25)
#: Where along the lines their labels start, tokens/s of ceiling.
LABEL_AT = 150.0
#: The wide figure's size, inches; below :data:`NARROW_IN` wide the key goes below the plot.
WIDE_SIZE, NARROW_IN = (6.4, 5.6), 5.0
#: The phone figure's height, inches (a square plot over a key of six rows).
NARROW_HEIGHT_IN = 5.5


def make(theme, width=None):
    from descent import plotting

    narrow = width is not None and width < NARROW_IN
    fig, ax = plotting.new_figure(theme, figsize=(width, NARROW_HEIGHT_IN) if narrow else WIDE_SIZE)
    rows = predict.predictions()
    lo = min(min(p.ceiling_rate, p.measured_rate) for p in rows) / 2
    hi = max(max(p.ceiling_rate, p.measured_rate) for p in rows) * 2
    ax.plot([lo, hi], [lo, hi], color=theme.fg, linewidth=1.2, zorder=2)
    for share in GUIDES:
        ax.plot([lo, hi], [lo * share, hi * share], color=theme.fg, linewidth=0.8, linestyle="--", alpha=0.6, zorder=2)
        if narrow:
            continue
        # along its line (equal aspect: 45 degrees), just below it, where no point lies
        ax.annotate({0.5: "half the ceiling", 0.25: "a quarter"}[share], (LABEL_AT, LABEL_AT * share), xytext=(3, -3),
                    textcoords="offset points", ha="left", va="top", rotation=45, rotation_mode="anchor",
                    fontsize=8, color=theme.fg)
    if not narrow:
        ax.annotate("measured = ceiling", (LABEL_AT, LABEL_AT), xytext=(-3, 3), textcoords="offset points",
                    ha="left", va="bottom", rotation=45, rotation_mode="anchor", fontsize=8, color=theme.fg)
    classes = [c for c in M.CHIP_CLASSES if any(p.chip_class == c for p in rows)]
    engines = [e for e in M.ENGINES if any(p.engine == e for p in rows)]
    for p in rows:
        ax.scatter([p.ceiling_rate], [p.measured_rate], s=34, marker=MARKERS[M.ENGINES.index(p.engine)],
                   color=theme.color(classes.index(p.chip_class)), edgecolors=theme.fg, linewidths=0.4, zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_xlabel("ceiling, tokens/s (step model, log scale)")
    ax.set_ylabel("measured, tokens/s (log scale)")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], linestyle="", marker="o", markersize=7, color=theme.color(i), label=c)
               for i, c in enumerate(classes)]
    handles += [Line2D([], [], linestyle="", marker=MARKERS[M.ENGINES.index(e)], markersize=7, color=theme.fg,
                       markerfacecolor="none", label=e) for e in engines]
    if not narrow:
        ax.legend(handles=handles, loc="upper left", fontsize=8, ncols=1, frameon=False)
        return fig
    # The phone's key, below the plot in two columns filled top to bottom: the chip classes (colour)
    # and the lines, then the engines (shape); an empty entry evens the columns.
    lines = [Line2D([], [], color=theme.fg, linewidth=1.2, label="measured = ceiling"),
             Line2D([], [], color=theme.fg, linewidth=0.8, linestyle="--", alpha=0.6, label="half, a quarter")]
    left, right = handles[:len(classes)] + lines, handles[len(classes):]
    blank = Line2D([], [], linestyle="", label=" ")
    left += [blank] * (len(right) - len(left))
    right += [blank] * (len(left) - len(right))
    fig.legend(handles=left + right, loc="outside lower center", ncols=2, fontsize=8, frameon=False)
    return fig
