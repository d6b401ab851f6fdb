"""Figure: memory capacity against memory bandwidth for the catalog's memory-fed accelerators.

Both axes are logarithmic: the catalog spans a 16 GB desktop card to a 512 GB Mac Studio and 0.3 to
8 TB/s, and on linear axes the consumer cards pile up in one corner. Labels are placed one by one,
largest chips first, at the first of a few candidate spots around the point where the text overlaps
no label already placed, no other point and stays inside the axes (:func:`place_labels`).
"""

from descent import catalog
from descent.units import BYTE_UNITS

ALT = (
    "Scatter plot on logarithmic axes: each accelerator in the catalog that keeps weights in HBM, "
    "GDDR or LPDDR memory is a labelled point placed by its memory capacity in GB (horizontal) and "
    "its memory bandwidth in TB/s (vertical), coloured by kind (GPU, TPU, other ASIC, Apple system "
    "on a chip). Chips sharing the same two numbers share one point and one label."
)
CAPTION = (
    "Memory capacity against memory bandwidth, per chip, on logarithmic axes. Capacity decides whether "
    "a model fits; bandwidth sets how fast it can decode. SRAM machines (Groq LPU, Cerebras WSE-3) are "
    "far off this scale and are listed in the table below. GB = 1e9 bytes, TB/s = 1e12 bytes/s."
)

#: Figure size, inches: taller than the default, for the labels of two dozen chips.
FIGSIZE_IN = (7.2, 5.6)
#: Axis limits: capacity in GB, bandwidth in TB/s (log scale), around the catalog's range.
X_LIMITS = (10, 2000)
Y_LIMITS = (0.2, 15)
#: Candidate label offsets from a point, typographic points, tried in this order.
OFFSETS_PT = ((6, 4), (6, -11), (-6, 4), (-6, -11), (6, 12), (6, -19), (-6, 12), (-6, -19),
              (14, -4), (-14, -4), (6, 20), (6, -27), (-6, 20), (-6, -27))
#: Points of a label's box kept free around each marker, pixels.
MARKER_CLEARANCE_PX = 5
LABEL_FONTSIZE = 7.5


def _short(a) -> str:
    return a.name.removeprefix(a.vendor + " ").removeprefix("GeForce ").split(" (")[0]


def place_labels(ax, points: list[tuple[float, float, str]], theme) -> list:
    """Annotate each ``(x, y, text)`` at the first offset of :data:`OFFSETS_PT` whose text box
    overlaps no earlier label and no marker and lies inside the axes; the last offset tried wins if
    none is free (so every point keeps its label). Returns the annotations, in order."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = ax.figure
    renderer = FigureCanvasAgg(fig).get_renderer()  # text extents (the SVG's metrics are the same fonts)
    axes_box = ax.get_window_extent(renderer)
    markers = [ax.transData.transform((x, y)) for x, y, _ in points]
    placed, out = [], []
    for x, y, text in points:
        for i, (dx, dy) in enumerate(OFFSETS_PT):
            ha = "left" if dx >= 0 else "right"
            ann = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha,
                              fontsize=LABEL_FONTSIZE, color=theme.fg)
            box = ann.get_window_extent(renderer)
            inside = (box.x0 >= axes_box.x0 and box.x1 <= axes_box.x1
                      and box.y0 >= axes_box.y0 and box.y1 <= axes_box.y1)
            clear = not any(box.overlaps(p) for p in placed) and not any(
                box.x0 - MARKER_CLEARANCE_PX <= mx <= box.x1 + MARKER_CLEARANCE_PX
                and box.y0 - MARKER_CLEARANCE_PX <= my <= box.y1 + MARKER_CLEARANCE_PX
                for mx, my in markers
            )
            if (inside and clear) or i == len(OFFSETS_PT) - 1:
                placed.append(box)
                out.append(ann)
                break
            ann.remove()
    return out


def make(theme):
    from descent import plotting

    fig, ax = plotting.new_figure(theme, figsize=FIGSIZE_IN)
    accs = [a for a in catalog.accelerators().values() if a.kind not in catalog.SHARDED_KINDS]
    points: dict[tuple[float, float], list] = {}
    for a in accs:
        points.setdefault((a.memory_bytes / BYTE_UNITS["GB"], a.memory_bandwidth / BYTE_UNITS["TB"]), []).append(a)
    kinds = sorted({a.kind for a in accs})
    for i, kind in enumerate(kinds):
        xy = [p for p, group in points.items() if group[0].kind == kind]
        ax.scatter([x for x, _ in xy], [y for _, y in xy], s=36, color=theme.color(i), label=kind.upper(), zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*X_LIMITS)
    ax.set_ylim(*Y_LIMITS)
    ax.set_xlabel("memory capacity, GB = 1e9 bytes (log scale)")
    ax.set_ylabel("memory bandwidth, TB/s = 1e12 bytes/s (log scale)")
    ax.legend(loc="lower right", fontsize=8)
    fig.draw_without_rendering()  # let the constrained layout settle the axes, then freeze it
    fig.set_layout_engine("none")  # so the labels measured below stay where they are put
    # the fastest and largest first: they sit where the space is
    ordered = sorted(points.items(), key=lambda kv: (-kv[0][1], -kv[0][0]))
    place_labels(ax, [(x, y, " / ".join(_short(a) for a in group)) for (x, y), group in ordered], theme)
    return fig
