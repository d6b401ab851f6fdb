"""Figure: the memory pyramid of the running example's GPU, each tier's size and bandwidth from the
catalog (descent.memory_tiers), with the ratios to HBM computed."""

from matplotlib.figure import Figure

from descent import catalog, memory_tiers
from descent import params as P
from descent.units import format_bytes, format_number, format_si

_A = catalog.accelerator(P.ACCELERATOR.default)
_TIERS = memory_tiers.tiers(_A)

ALT = (
    f"Two bar charts on logarithmic axes, one row per level of the {_A.name}'s memory, from the registers "
    f"at the top down to HBM and then the links to other GPUs and servers. Left: how many bytes each level "
    f"holds across the whole chip. Right: how many bytes per second it delivers, where the vendor publishes "
    f"it or the catalog's clock and bank width give it. Each bar is labelled with its value and its ratio to HBM."
)
CAPTION = (
    f"The memory pyramid of one {_A.name}: sizes for the whole chip ({_A.compute_units} "
    f"{_A.compute_units_name}s), bandwidths where they are published or follow from the catalog "
    f"(shared memory: SMs x 128 bytes per clock x clock). Fast memory is small: the shared memory holds "
    f"a few thousandths of a percent of HBM's bytes, yet delivers several times its bandwidth. "
    f"Below HBM the links to other chips are slower still. Sources: the catalog (reference page)."
)

#: Figure size, inches: two panels side by side, one row per tier.
FIGSIZE = (7.2, 3.6)


def _ratio(x: float) -> str:
    return f"{format_number(x, 2, trim=True)}x HBM"


def make(theme):
    fig = Figure(figsize=FIGSIZE, layout="constrained")
    size_ax, bw_ax = fig.subplots(1, 2, sharey=True)
    rows = list(range(len(_TIERS)))[::-1]  # innermost tier on top
    names = [t.name for t in _TIERS]
    for ax, attr, ratio, fmt, color, title in (
        (size_ax, "size_bytes", "size_vs_hbm", lambda v: format_bytes(v, "auto", 3, trim=True), theme.color(0),
         "bytes held (whole chip)"),
        (bw_ax, "bandwidth", "bandwidth_vs_hbm", lambda v: format_si(v, "B/s", 3, trim=True), theme.color(1),
         "bytes per second delivered"),
    ):
        values = [getattr(t, attr) for t in _TIERS]
        known = [v for v in values if v is not None]
        lo, hi = min(known) / 30, max(known) * 400
        for y, t, v in zip(rows, _TIERS, values, strict=True):
            if v is None:
                text = "not published" if t.managed != "link" else "stores nothing"
                ax.annotate(text, (lo, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=8,
                            color=theme.muted)
                continue
            ax.barh([y], [v], left=lo, color=color, height=0.6, zorder=3)
            label = fmt(v) + ("" if getattr(t, ratio) == 1 else f" ({_ratio(getattr(t, ratio))})")
            ax.annotate(label, (v, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=7.5,
                        color=theme.fg)
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        ax.set_title(title, fontsize=9)
        ax.grid(axis="y", visible=False)
        ax.tick_params(axis="x", labelsize=7)
    size_ax.set_yticks(rows, names, fontsize=8)
    return fig
