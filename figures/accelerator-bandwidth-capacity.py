"""Figure: memory capacity against memory bandwidth for every catalog accelerator (log-log)."""

from descent import catalog
from descent.site.values import BYTE_UNITS

ALT = (
    "Scatter plot, both axes logarithmic: each catalog accelerator is a labelled point placed by "
    "its main-memory capacity in GB (horizontal) and its memory bandwidth in TB/s (vertical)."
)
CAPTION = (
    "Memory capacity against memory bandwidth for every accelerator in the catalog. Capacity "
    "decides whether a model fits; bandwidth sets how fast it can decode. GB = 1e9 bytes, "
    "TB/s = 1e12 bytes/s; values and sources on the accelerators reference page."
)

#: Annotation offset from each point, in points (typographic, 1/72 inch).
LABEL_OFFSET_PT = (6, 4)


def draw(ax, theme):
    accs = list(catalog.accelerators().values())
    kinds = sorted({a.kind for a in accs})
    for i, kind in enumerate(kinds):
        pts = [a for a in accs if a.kind == kind]
        ax.scatter([a.memory_bytes / BYTE_UNITS["GB"] for a in pts],
                   [a.memory_bandwidth / BYTE_UNITS["TB"] for a in pts],
                   s=36, color=theme.color(i), label=kind.upper(), zorder=3)
        for a in pts:
            ax.annotate(a.name, (a.memory_bytes / BYTE_UNITS["GB"], a.memory_bandwidth / BYTE_UNITS["TB"]),
                        xytext=LABEL_OFFSET_PT, textcoords="offset points", fontsize=8, color=theme.fg)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("memory capacity (GB = 1e9 bytes)")
    ax.set_ylabel("memory bandwidth (TB/s = 1e12 bytes/s)")
    ax.margins(0.25)
    if len(kinds) > 1:
        ax.legend(loc="lower right")
