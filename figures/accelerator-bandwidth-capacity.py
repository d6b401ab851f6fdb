"""Figure: memory capacity against memory bandwidth for the catalog's memory-fed accelerators."""

from descent import catalog
from descent.units import BYTE_UNITS

ALT = (
    "Scatter plot: each accelerator in the catalog that keeps weights in HBM, GDDR or LPDDR memory "
    "is a labelled point placed by its memory capacity in GB (horizontal) and its memory bandwidth "
    "in TB/s (vertical). Chips sharing the same two numbers share one point and one label."
)
CAPTION = (
    "Memory capacity against memory bandwidth, per chip. Capacity decides whether a model fits; "
    "bandwidth sets how fast it can decode. SRAM machines (Groq LPU, Cerebras WSE-3) are far off "
    "this scale and are listed in the table below. GB = 1e9 bytes, TB/s = 1e12 bytes/s."
)

#: Label offsets from a point, in typographic points: above-right, and below-right for a label
#: whose neighbour just above is already labelled above it.
LABEL_ABOVE_PT = (6, 4)
LABEL_BELOW_PT = (6, -11)
#: Two points closer than this, as a fraction of the axis span, count as neighbours.
NEIGHBOUR_FRACTION = 0.08


def _short(a) -> str:
    return a.name.removeprefix(a.vendor + " ").split(" (")[0]


def draw(ax, theme):
    accs = [a for a in catalog.accelerators().values() if a.kind != "sram"]
    points: dict[tuple[float, float], list] = {}
    for a in accs:
        points.setdefault((a.memory_bytes / BYTE_UNITS["GB"], a.memory_bandwidth / BYTE_UNITS["TB"]), []).append(a)
    kinds = sorted({a.kind for a in accs})
    for i, kind in enumerate(kinds):
        xy = [p for p, group in points.items() if group[0].kind == kind]
        ax.scatter([x for x, _ in xy], [y for _, y in xy], s=40, color=theme.color(i), label=kind.upper(), zorder=3)
    xspan = max(x for x, _ in points) - min(x for x, _ in points)
    yspan = max(y for _, y in points) - min(y for _, y in points)
    placed: list[tuple[float, float]] = []
    for (x, y), group in sorted(points.items(), key=lambda kv: (-kv[0][1], kv[0][0])):
        crowded = any(abs(x - px) < NEIGHBOUR_FRACTION * xspan and abs(y - py) < NEIGHBOUR_FRACTION * yspan
                      for px, py in placed)
        ax.annotate(" / ".join(_short(a) for a in group), (x, y),
                    xytext=LABEL_ABOVE_PT if not crowded else LABEL_BELOW_PT,
                    textcoords="offset points", fontsize=8, color=theme.fg)
        placed.append((x, y))
    ax.set_xlim(0, max(x for x, _ in points) * 1.3)
    ax.set_ylim(0, max(y for _, y in points) * 1.15)
    ax.set_xlabel("memory capacity (GB = 1e9 bytes)")
    ax.set_ylabel("memory bandwidth (TB/s = 1e12 bytes/s)")
    ax.legend(loc="lower right")
