"""Shared matplotlib style for the site's figures: light and dark themes, deterministic SVG.

Build side only (imports matplotlib). A figure recipe in ``figures/<id>.py`` draws on an Axes
with a :class:`Theme`; :func:`svg_bytes` writes it as SVG that is byte-for-byte the same on every
run: a fixed ``svg.hashsalt`` (element ids), text as paths (``svg.fonttype = "path"``, so no font
is needed in the browser) and no metadata (no date, no creator string).

Colours: the Okabe-Ito palette (Okabe & Ito 2008, "Color Universal Design"), distinguishable with
the common colour-vision deficiencies; the dark theme uses lighter members first so marks keep
contrast on Material's dark ("slate") background. Backgrounds are transparent so a figure sits on
the page's own colour.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import matplotlib
from matplotlib.figure import Figure

__all__ = ["THEMES", "Theme", "arrow", "box", "diagram", "new_figure", "rc_params", "style", "svg_bytes"]

#: Okabe-Ito colours by name (Okabe & Ito 2008).
OKABE_ITO = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "sky": "#56B4E9",
    "pink": "#CC79A7",
    "yellow": "#F0E442",
    "black": "#000000",
}

#: Salt for SVG element ids; any fixed string makes ids identical from run to run.
SVG_HASHSALT = "descent"

#: Default figure size, inches (at 100 dpi: 720 x 400 px before CSS scales it to the column).
FIGSIZE = (7.2, 4.0)

#: The phone version of every figure (``<picture>`` picks it below :data:`NARROW_BELOW_PX`): inches.
NARROW_FIGSIZE = (4.0, 3.4)

#: Smallest text a reader should have to read, CSS px (issue 13: labels were about 5 px at 390 px).
MIN_TEXT_PX = 11
#: The page column the wide figure must stay legible in: Material's content column is at least this
#: wide from :data:`NARROW_BELOW_PX` up (about 686 px at 1280, 640 px at 672).
WIDE_COLUMN_PX = 640
#: The phone column the narrow figure must stay legible in: 390 px wide, less Material's margins.
NARROW_COLUMN_PX = 358
#: Viewports narrower than this get the narrow figure.
NARROW_BELOW_PX = 672
#: Points per inch; an SVG from matplotlib is sized in pt, and CSS has 96 px per inch.
PT_PER_IN = 72


def min_font_pt(fig_width_in: float, column_px: float) -> float:
    """The smallest font size, pt, that shows at :data:`MIN_TEXT_PX` or more when a figure
    ``fig_width_in`` inches wide is scaled to ``column_px`` CSS px: s pt is drawn at
    s x column / (72 x width) px."""
    return MIN_TEXT_PX * PT_PER_IN * fig_width_in / column_px


def text_px(fig: Figure, column_px: float) -> list[tuple[str, float]]:
    """``[(text, displayed size in CSS px)]`` for every visible, non-empty text of ``fig`` when it is
    scaled to ``column_px`` (what tests/test_figures.py checks against :data:`MIN_TEXT_PX`)."""
    from matplotlib.text import Text

    scale = column_px / (PT_PER_IN * fig.get_figwidth())
    return [(t.get_text(), t.get_fontsize() * scale) for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible()]


def enforce_min_font(fig: Figure, column_px: float) -> None:
    """Raise every text of ``fig`` to at least :func:`min_font_pt` for that column (recipes set
    sizes for the wide figure; the phone figure gets the same texts, legible)."""
    from matplotlib.text import Text

    least = min_font_pt(fig.get_figwidth(), column_px)
    for t in fig.findobj(Text):
        if t.get_fontsize() < least:
            t.set_fontsize(least)


@dataclass(frozen=True)
class Theme:
    """Colours for one colour scheme.

    Attributes:
        name: ``"light"`` or ``"dark"`` (the file suffix and Material's ``#only-light`` fragment).
        fg: text, ticks and axis lines.
        muted: secondary text and spines.
        grid: grid lines.
        colors: mark colours in order of use (the axes' property cycle).
    """

    name: str
    fg: str
    muted: str
    grid: str
    colors: tuple[str, ...]

    def color(self, i: int) -> str:
        """The i-th mark colour (cycling)."""
        return self.colors[i % len(self.colors)]


THEMES: dict[str, Theme] = {
    "light": Theme(
        "light", fg="#1f2328", muted="#57606a", grid="#d0d7de",
        colors=tuple(OKABE_ITO[c] for c in ("blue", "orange", "green", "vermillion", "pink", "sky")),
    ),
    "dark": Theme(
        "dark", fg="#e6edf3", muted="#9da7b3", grid="#3d444d",
        colors=tuple(OKABE_ITO[c] for c in ("sky", "orange", "green", "pink", "yellow", "vermillion")),
    ),
}


def rc_params(theme: Theme) -> dict:
    """The rcParams for ``theme``: transparent background, theme colours, deterministic SVG."""
    return {
        "svg.hashsalt": SVG_HASHSALT,
        "svg.fonttype": "path",
        "font.family": "DejaVu Sans",
        "font.size": 10,
        "figure.facecolor": "none",
        "axes.facecolor": "none",
        "savefig.facecolor": "none",
        "savefig.transparent": True,
        "text.color": theme.fg,
        "axes.labelcolor": theme.fg,
        "axes.edgecolor": theme.muted,
        "axes.titlecolor": theme.fg,
        "xtick.color": theme.muted,
        "ytick.color": theme.muted,
        "xtick.labelcolor": theme.fg,
        "ytick.labelcolor": theme.fg,
        "grid.color": theme.grid,
        "grid.linewidth": 0.6,
        "axes.grid": True,
        "axes.axisbelow": True,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.prop_cycle": matplotlib.cycler(color=list(theme.colors)),
        "legend.frameon": False,
        "path.simplify": True,
    }


@contextmanager
def style(theme: Theme) -> Iterator[None]:
    """Apply ``theme``'s rcParams for the duration (drawing and saving must both be inside)."""
    with matplotlib.rc_context(rc_params(theme)):
        yield


def new_figure(theme: Theme, figsize: tuple[float, float] = FIGSIZE) -> tuple[Figure, object]:
    """A new Figure and its single Axes (call inside :func:`style`). No pyplot global state."""
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    return fig, ax


def svg_bytes(fig: Figure) -> bytes:
    """``fig`` as SVG bytes with no metadata (no date, creator or title): deterministic output."""
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------
# Diagrams: boxes and arrows on an axes in diagram units (figures/part3-*.py)
# ---------------------------------------------------------------------------------------------

#: Fill opacity of a diagram box (its edge is the full colour).
BOX_FILL_ALPHA = 0.16


def diagram(width_in: float, height_in: float, units_wide: float, units_high: float) -> tuple[Figure, object]:
    """A Figure of ``width_in`` x ``height_in`` inches whose one Axes, with no frame or ticks, spans
    0..``units_wide`` across and 0..``units_high`` up (y up). Call inside :func:`style`."""
    # Constrained layout with no padding: the axes fill the figure, and the site's phone pass
    # (site.figures._fit_narrow, which wants a constrained layout) finds one already.
    fig = Figure(figsize=(width_in, height_in), layout="constrained")
    fig.get_layout_engine().set(w_pad=0, h_pad=0, wspace=0, hspace=0)
    ax = fig.add_subplot()
    ax.set_xlim(0, units_wide)
    ax.set_ylim(0, units_high)
    ax.axis("off")
    return fig, ax


def box(ax, theme: Theme, x: float, y: float, w: float, h: float, text: str = "", *, color: str | None = None,
        fontsize: float = 9, weight: str = "normal", fill: bool = True, dashed: bool = False, va: str = "center"):
    """A rounded box with its lower left corner at (x, y), lightly filled with ``color`` (default
    the theme's text colour), and ``text`` centred in it."""
    from matplotlib.patches import FancyBboxPatch

    c = color or theme.fg
    pad = min(w, h) * 0.08
    ax.add_patch(FancyBboxPatch((x + pad, y + pad), w - 2 * pad, h - 2 * pad, boxstyle=f"round,pad={pad}",
                                facecolor=c if fill else "none", alpha=None, edgecolor=c, linewidth=1.2,
                                linestyle="--" if dashed else "-"))
    if fill:  # the fill is light; the edge stays the full colour
        ax.patches[-1].set_facecolor(matplotlib.colors.to_rgba(c, BOX_FILL_ALPHA))
    if text:
        ty = y + h / 2 if va == "center" else y + h - pad * 2
        ax.text(x + w / 2, ty, text, ha="center", va=va, fontsize=fontsize, color=theme.fg, weight=weight,
                linespacing=1.25)


def arrow(ax, theme: Theme, x0: float, y0: float, x1: float, y1: float, text: str = "", *,
          color: str | None = None, fontsize: float = 9, text_side: str = "above", rad: float = 0.0):
    """An arrow from (x0, y0) to (x1, y1), optionally curved (``rad``), with ``text`` beside its middle."""
    from matplotlib.patches import FancyArrowPatch

    c = color or theme.muted
    ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle="-|>", mutation_scale=12, color=c, linewidth=1.5,
                                 connectionstyle=f"arc3,rad={rad}", shrinkA=2, shrinkB=2))
    if text:
        mx, my = (x0 + x1) / 2, (y0 + y1) / 2
        ax.annotate(text, (mx, my), xytext=(0, 6 if text_side == "above" else -6), textcoords="offset points",
                    ha="center", va="bottom" if text_side == "above" else "top", fontsize=fontsize, color=theme.fg,
                    linespacing=1.25)
