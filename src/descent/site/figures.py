"""Figure recipes -> light and dark SVG files, with a cache, and the ``<figure>`` HTML for a page.

A recipe is ``figures/<id>.py`` defining:

* ``ALT``: the alt text (what the figure shows, for a reader who cannot see it);
* ``CAPTION``: the caption (Markdown-free text);
* either ``draw(ax, theme)`` (draw on a ready Axes) or ``make(theme) -> Figure``; a ``make`` that
  takes ``width`` (inches) is called with the wide and the phone width and lays itself out for it;
* optionally ``CACHE_KEY``: a string naming data the recipe reads from outside the package (a
  measurement of the build machine), added to the drawn SVG's cache key.
* optionally ``INPUTS() -> str``: a fingerprint of data the recipe reads from outside the package
  (a measurement taken at build), added to the cache key so the figure is redrawn when it changes.

Each figure is drawn twice per theme: wide (the recipe's size) and narrow, for phones
(:data:`descent.plotting.NARROW_FIGSIZE`; a ``make`` without ``width`` is narrowed to that width).
In both, every text is raised to the size that shows at least 11 px in the column it is shown in
(:func:`descent.plotting.enforce_min_font`), and the page's ``<picture>`` picks the narrow one
below :data:`descent.plotting.NARROW_BELOW_PX`.

``theme`` is a :class:`descent.plotting.Theme`. The numbers come from ``descent``; a recipe never
types one in. Drawn SVGs are cached under ``.cache/descent/figures/`` keyed by a hash of the
recipe's source, ``descent.plotting`` and every file of the ``descent`` package, so a rebuild
redraws only what changed.

In a clean build a second process draws the figures the pages will ask for while the build makes
the pages (:mod:`descent.site.figure_side`); the two share the work through :class:`Claims`: each
figure is drawn by whichever claims it first, and the other waits for its files.
"""

from __future__ import annotations

import ast
import hashlib
import html
import importlib.util
import inspect
import os
import re
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import descent

__all__ = ["Claims", "FigureBuilder", "FigureError", "MODEL_MODULES", "Recipe", "figure_html", "load_recipe",
           "package_fingerprint", "uses_model"]

_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class FigureError(ValueError):
    """A figure recipe is missing, malformed or failed to draw; the message names the recipe."""


@dataclass(frozen=True)
class Recipe:
    id: str
    path: Path
    alt: str
    caption: str
    draw: Callable | None
    make: Callable | None
    source: str
    cache_key: str = ""
    inputs: Callable[[], str] | None = None


def load_recipe(path: Path) -> Recipe:
    """Import ``figures/<id>.py`` and check it. Raises FigureError naming the file and what is missing."""
    path = Path(path)
    if not path.exists():
        raise FigureError(f"no figure recipe {path}")
    if not _ID.match(path.stem):
        raise FigureError(f"{path}: figure ids use lowercase letters, digits and '-'")
    spec = importlib.util.spec_from_file_location(f"descent_figure_{path.stem.replace('-', '_')}", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    alt, caption = getattr(mod, "ALT", None), getattr(mod, "CAPTION", None)
    draw, make = getattr(mod, "draw", None), getattr(mod, "make", None)
    for name, v in (("ALT", alt), ("CAPTION", caption)):
        if not isinstance(v, str) or not v.strip():
            raise FigureError(f"{path}: {name} must be a non-empty string")
    if (draw is None) == (make is None):
        raise FigureError(f"{path}: define exactly one of draw(ax, theme) or make(theme) -> Figure")
    cache_key = getattr(mod, "CACHE_KEY", "")
    if not isinstance(cache_key, str):
        raise FigureError(f"{path}: CACHE_KEY must be a string")
    inputs = getattr(mod, "INPUTS", None)
    if inputs is not None and not callable(inputs):
        raise FigureError(f"{path}: INPUTS must be a function returning a string")
    return Recipe(path.stem, path, alt.strip(), caption.strip(), draw, make, path.read_text(encoding="utf-8"),
                  cache_key, inputs)


#: The modules that run the real model at build time (Part 2's perplexities, Part 3's results): a
#: recipe that imports one is drawn by the build's own process, which shares that work with
#: :mod:`descent.trace.prefetch`; a third process would compute it again.
MODEL_MODULES = ("descent.trace.quality", "descent.trace.measure")


def uses_model(source: str) -> bool:
    """Whether a recipe's ``source`` imports one of :data:`MODEL_MODULES` (``import m``, ``from m
    import x``, or ``from descent.trace import quality``). Read from the text: loading such a recipe
    computes the model's results it shows.

    Raises:
        SyntaxError: the source is not Python.
    """
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        if any(n in MODEL_MODULES for n in names):
            return True
    return False


class Claims:
    """Which of two processes draws a figure: a file ``<id>.claim`` made exclusively in ``folder``
    (one per build) holds the name of the process that claimed it first.

    Args:
        folder: the build's claims folder (made by the build, removed when it ends).
        role: this process's name (``"main"`` or ``"side"``).
        other_alive: whether the other process still runs (a wait for its figure ends when not).
    """

    #: Seconds between two looks for the other process's files.
    POLL_S = 0.05

    def __init__(self, folder: Path, role: str, other_alive: Callable[[], bool]):
        self.folder, self.role, self.other_alive = Path(folder), role, other_alive

    def claim(self, fig_id: str) -> bool:
        """True when this process is to draw ``fig_id``: it claimed it now or before, or the claims
        folder is gone (the build is over); False when the other process holds it."""
        f = self.folder / f"{fig_id}.claim"
        try:
            fd = os.open(f, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            try:
                return f.read_text(encoding="utf-8") == self.role
            except OSError:
                return True
        except OSError:
            return True
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(self.role)
        return True

    def wait(self, paths: list[Path]) -> None:
        """Wait until every file of ``paths`` exists or the other process has ended."""
        while not all(p.exists() for p in paths) and self.other_alive():
            time.sleep(self.POLL_S)


@cache
def package_fingerprint() -> str:
    """sha256 over every source and data file of the installed ``descent`` package."""
    root = Path(descent.__file__).parent
    h = hashlib.sha256(descent.__version__.encode() if hasattr(descent, "__version__") else b"")
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts and p.suffix in {".py", ".toml", ".json", ".txt"}:
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def draw_figure(recipe: Recipe, theme_name: str, narrow: bool = False):
    """Draw ``recipe`` in one theme, wide or narrow (call inside :func:`descent.plotting.style`),
    with every text raised to the legible minimum for its column. Returns the matplotlib Figure."""
    from descent import plotting

    theme = plotting.THEMES[theme_name]
    width = plotting.NARROW_FIGSIZE[0] if narrow else plotting.FIGSIZE[0]
    if recipe.make is not None:
        if "width" in inspect.signature(recipe.make).parameters:
            fig = recipe.make(theme, width=width)
        else:
            fig = recipe.make(theme)
            if narrow:
                fig.set_size_inches(width, fig.get_figheight())
    else:
        fig, ax = plotting.new_figure(theme, plotting.NARROW_FIGSIZE if narrow else plotting.FIGSIZE)
        recipe.draw(ax, theme)
    if narrow:
        _fit_narrow(fig)
    plotting.enforce_min_font(fig, plotting.NARROW_COLUMN_PX if narrow else plotting.WIDE_COLUMN_PX)
    return fig


#: On a phone figure, a legend with an entry longer than this (characters) takes one column.
NARROW_LEGEND_CHARS = 22
#: On a phone figure, a y tick label longer than this (characters) goes above its bar.
NARROW_TICK_CHARS = 14
#: There: the share of a bar's height it keeps, how far (in bar heights) it moves down to leave
#: room for the name, and how much taller (inches) the figure gets per bar.
NARROW_BAR_SHARE, NARROW_BAR_SHIFT, NARROW_ROW_EXTRA_IN = 0.5, 0.2, 0.12
#: With names wrapped instead (grouped bars): inches per name (two lines of text), plus the axis.
NARROW_WRAPPED_ROW_IN, NARROW_AXIS_IN = 0.32, 1.4


def _fit_narrow(fig) -> None:
    """Phone layout for any recipe: a legend inside the axes moves below the figure (on a narrow
    figure it would cover the data) and axis labels, titles and annotations wrap instead of running
    off the edge."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    if not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        fig.set_layout_engine("constrained")  # what makes room for a legend "outside" the axes
    handles, labels, size = [], [], None
    for ax in fig.axes:  # every axes' legend becomes one legend below the figure (same names once)
        leg = ax.get_legend()
        if leg is not None:
            for h, t in zip(leg.legend_handles, leg.get_texts(), strict=False):
                if t.get_text() not in labels:
                    handles.append(h)
                    labels.append(t.get_text())
                    size = size or t.get_fontsize()
            leg.remove()
    if handles:
        wide = any(len(lbl) > NARROW_LEGEND_CHARS for lbl in labels)
        fig.legend(handles, labels, loc="outside lower center", ncols=1 if wide else 2, fontsize=size)
    for ax in fig.axes:
        for text in (ax.xaxis.label, ax.yaxis.label, ax.title, *ax.texts):
            text.set_wrap(True)
        labels = ax.get_yticklabels()
        names = [t.get_text() for t in labels]
        if any(len(n) > NARROW_TICK_CHARS and not n.startswith("$") for n in names):  # not a $10^{3}$ tick
            _names_above_bars(fig, ax, labels)


def _names_above_bars(fig, ax, labels) -> None:
    """Long category names beside a horizontal bar chart would squeeze the bars to nothing on a
    phone: thinner bars, each name on a line above its bar, a taller figure. Without bars the
    names are wrapped onto more lines instead."""
    from matplotlib.patches import Rectangle

    bars = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_x() == 0 and p.get_height() < 1]
    if len(bars) != len(labels):  # no bars, or several per name (grouped): wrap the names instead
        ax.set_yticks(ax.get_yticks(), [textwrap.fill(t.get_text(), NARROW_TICK_CHARS) for t in labels])
        fig.set_figheight(max(fig.get_figheight(), len(labels) * NARROW_WRAPPED_ROW_IN + NARROW_AXIS_IN))
        return
    from matplotlib.text import Annotation

    h = bars[0].get_height()
    for b in bars:
        centre = b.get_y() + b.get_height() / 2
        b.set_height(b.get_height() * NARROW_BAR_SHARE)
        b.set_y(centre - b.get_height() / 2 - h * NARROW_BAR_SHIFT)
    for a in ax.texts:  # the values written beside the bars move down with them
        if isinstance(a, Annotation) and a.xycoords == "data":
            a.xy = (a.xy[0], a.xy[1] - h * NARROW_BAR_SHIFT)
    top_gap = bars[0].get_height() / 2 - bars[0].get_height() / NARROW_BAR_SHARE * NARROW_BAR_SHIFT
    for y, t in zip(ax.get_yticks(), labels, strict=False):
        ax.annotate(t.get_text(), (0, y + top_gap), xycoords=("axes fraction", "data"), va="bottom",
                    fontsize=t.get_fontsize(), color=t.get_color(), wrap=True)
    ax.set_yticks(ax.get_yticks(), [""] * len(labels))
    ax.tick_params(axis="y", length=0)
    lo, hi = ax.get_ylim()
    ax.set_ylim(min(lo, hi), max(lo, hi) + 0.3)
    fig.set_figheight(fig.get_figheight() + len(labels) * NARROW_ROW_EXTRA_IN)


def render(recipe: Recipe, theme_name: str, narrow: bool = False) -> bytes:
    """Draw ``recipe`` in one theme (wide, or ``narrow`` for phones) and return deterministic SVG bytes."""
    from descent import plotting

    with plotting.style(plotting.THEMES[theme_name]):
        try:
            return plotting.svg_bytes(draw_figure(recipe, theme_name, narrow))
        except Exception as e:  # a recipe bug must name the recipe
            raise FigureError(f"figures/{recipe.id}.py ({theme_name}{', narrow' if narrow else ''}): "
                              f"{type(e).__name__}: {e}") from e


class FigureBuilder:
    """Draws figures once per build into ``<site>/figures/<id>-light.svg`` and ``-dark.svg``.

    Args:
        figures_dir: the project's ``figures/`` folder.
        cache_dir: where drawn SVGs are kept between builds (None: no disk cache).
    """

    THEMES = ("light", "dark")
    #: The files drawn per figure: ``<id>-<key>.svg``.
    KEYS = ("light", "dark", "light-narrow", "dark-narrow")

    def __init__(self, figures_dir: Path, cache_dir: Path | None = None, claims: Claims | None = None):
        self.figures_dir = Path(figures_dir)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        #: Shared with another process drawing into the same cache (None: this one draws alone).
        self.claims = claims
        self._recipes: dict[str, Recipe] = {}
        self.drawn: dict[str, dict[str, bytes]] = {}

    def ids(self) -> list[str]:
        return sorted(p.stem for p in self.figures_dir.glob("*.py") if not p.name.startswith("_"))

    def recipe(self, fig_id: str) -> Recipe:
        if fig_id not in self._recipes:
            if fig_id not in self.ids():
                raise FigureError(f"unknown figure {fig_id!r}; allowed: {', '.join(self.ids()) or 'none yet'}")
            self._recipes[fig_id] = load_recipe(self.figures_dir / f"{fig_id}.py")
        return self._recipes[fig_id]

    def _key(self, recipe: Recipe) -> str:
        from descent import plotting

        h = hashlib.sha256(recipe.source.encode())
        h.update(recipe.cache_key.encode())
        h.update(Path(plotting.__file__).read_bytes())
        h.update(package_fingerprint().encode())
        if recipe.inputs is not None:
            h.update(recipe.inputs().encode())
        return h.hexdigest()[:20]

    def cache_paths(self, fig_id: str) -> dict[str, Path]:
        """``{variant: file}`` of ``fig_id``'s cache entries at its current key (:data:`KEYS`);
        empty without a cache folder."""
        if self.cache_dir is None:
            return {}
        key = self._key(self.recipe(fig_id))
        return {v: self.cache_dir / f"{fig_id}-{v}-{key}.svg" for v in self.KEYS}

    def cached(self, fig_id: str) -> bool:
        """Whether every variant of ``fig_id`` is in the cache at its current key."""
        paths = self.cache_paths(fig_id)
        return bool(paths) and all(p.exists() for p in paths.values())

    def svgs(self, fig_id: str, wait: bool = True) -> dict[str, bytes] | None:
        """``{"light": svg, "dark": svg, "light-narrow": svg, "dark-narrow": svg}`` for a figure,
        drawn at most once per builder. When another process has claimed it (:class:`Claims`), waits
        for its files, or with ``wait=False`` returns None at once."""
        if fig_id in self.drawn:
            return self.drawn[fig_id]
        recipe = self.recipe(fig_id)
        paths = self.cache_paths(fig_id)
        if self.claims is not None and paths and not all(p.exists() for p in paths.values()) \
                and not self.claims.claim(fig_id):
            if not wait:
                return None
            self.claims.wait(list(paths.values()))  # what it did not finish is drawn below
        out = {}
        for variant in self.KEYS:
            theme, narrow = variant.split("-")[0], variant.endswith("-narrow")
            cached = paths.get(variant)
            if cached is not None and cached.exists():
                out[variant] = cached.read_bytes()
                continue
            out[variant] = render(recipe, theme, narrow)
            if cached is not None:
                for old in cached.parent.glob(f"{fig_id}-{variant}-*.svg"):
                    if old.name[len(f"{fig_id}-{variant}-"):].count("-") == 0:  # not light-narrow's
                        old.unlink(missing_ok=True)
                _write_atomic(cached, out[variant])
        self.drawn[fig_id] = out
        return out

    def write(self, site_dir: Path) -> list[Path]:
        """Write every figure drawn so far into ``site_dir/figures``; returns the paths written."""
        written = []
        for fig_id, svgs in self.drawn.items():
            for theme, data in svgs.items():
                p = Path(site_dir) / "figures" / f"{fig_id}-{theme}.svg"
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)
                written.append(p)
        return written


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename: another process reading the
    cache sees the whole file or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def figure_html(fig_id: str, alt: str, caption: str, prefix: str, width: int = 720, height: int = 400,
                narrow: tuple[int, int] | None = None) -> str:
    """The page HTML: one ``<figure>`` with a light and a dark ``<picture>`` and a caption.

    ``prefix`` is the relative path from the page to the site root (``""``, ``"../"``...);
    ``width`` and ``height`` (CSS px) reserve the space so the page does not jump as it loads, and
    ``narrow`` gives the phone version's size: below :data:`descent.plotting.NARROW_BELOW_PX` the
    ``<picture>`` shows ``<id>-<theme>-narrow.svg``, whose labels stay legible on a phone.
    Material shows an image whose URL ends in ``#only-light`` / ``#only-dark`` only in that scheme.
    Both images load lazily: the browser fetches a figure only when it nears the screen, and never
    the scheme's hidden one (``display: none``), which halved the figure bytes of Part 2's first view.
    """
    from descent.plotting import NARROW_BELOW_PX

    a, c = html.escape(alt, quote=True), html.escape(caption)
    pics = []
    for t in FigureBuilder.THEMES:
        src = ""
        if narrow is not None:
            src = (f'<source media="(max-width: {NARROW_BELOW_PX - 1}px)" srcset="{prefix}figures/{fig_id}-{t}-narrow.svg" '
                   f'width="{narrow[0]}" height="{narrow[1]}">')
        pics.append(f'<picture>{src}<img src="{prefix}figures/{fig_id}-{t}.svg#only-{t}" alt="{a}" '
                    f'width="{width}" height="{height}" loading="lazy" decoding="async"></picture>')
    return f'\n\n<figure class="descent-figure" id="figure-{fig_id}">{"".join(pics)}<figcaption>{c}</figcaption></figure>\n\n'
