"""Figure recipes -> light and dark SVG files, with a cache, and the ``<figure>`` HTML for a page.

A recipe is ``figures/<id>.py`` defining:

* ``ALT``: the alt text (what the figure shows, for a reader who cannot see it);
* ``CAPTION``: the caption (Markdown-free text);
* either ``draw(ax, theme)`` (draw on a ready Axes) or ``make(theme) -> Figure``;
* optionally ``CACHE_KEY``: a string naming data the recipe reads from outside the package (a
  measurement of the build machine), added to the drawn SVG's cache key.
* optionally ``INPUTS() -> str``: a fingerprint of data the recipe reads from outside the package
  (a measurement taken at build), added to the cache key so the figure is redrawn when it changes.

``theme`` is a :class:`descent.plotting.Theme`. The numbers come from ``descent``; a recipe never
types one in. Drawn SVGs are cached under ``.cache/descent/figures/`` keyed by a hash of the
recipe's source, ``descent.plotting`` and every file of the ``descent`` package, so a rebuild
redraws only what changed.
"""

from __future__ import annotations

import hashlib
import html
import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import descent

__all__ = ["FigureBuilder", "FigureError", "Recipe", "figure_html", "load_recipe", "package_fingerprint"]

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


def render(recipe: Recipe, theme_name: str) -> bytes:
    """Draw ``recipe`` in one theme and return deterministic SVG bytes."""
    from descent import plotting

    theme = plotting.THEMES[theme_name]
    with plotting.style(theme):
        try:
            if recipe.make is not None:
                fig = recipe.make(theme)
            else:
                fig, ax = plotting.new_figure(theme)
                recipe.draw(ax, theme)
            return plotting.svg_bytes(fig)
        except Exception as e:  # a recipe bug must name the recipe
            raise FigureError(f"figures/{recipe.id}.py ({theme_name}): {type(e).__name__}: {e}") from e


class FigureBuilder:
    """Draws figures once per build into ``<site>/figures/<id>-light.svg`` and ``-dark.svg``.

    Args:
        figures_dir: the project's ``figures/`` folder.
        cache_dir: where drawn SVGs are kept between builds (None: no disk cache).
    """

    THEMES = ("light", "dark")

    def __init__(self, figures_dir: Path, cache_dir: Path | None = None):
        self.figures_dir = Path(figures_dir)
        self.cache_dir = Path(cache_dir) if cache_dir else None
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

    def svgs(self, fig_id: str) -> dict[str, bytes]:
        """``{"light": svg, "dark": svg}`` for a figure, drawn at most once per builder."""
        if fig_id in self.drawn:
            return self.drawn[fig_id]
        recipe = self.recipe(fig_id)
        key = self._key(recipe)
        out = {}
        for theme in self.THEMES:
            cached = self.cache_dir / f"{fig_id}-{theme}-{key}.svg" if self.cache_dir else None
            if cached is not None and cached.exists():
                out[theme] = cached.read_bytes()
                continue
            out[theme] = render(recipe, theme)
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                for old in cached.parent.glob(f"{fig_id}-{theme}-*.svg"):
                    old.unlink()
                cached.write_bytes(out[theme])
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


def figure_html(fig_id: str, alt: str, caption: str, prefix: str, width: int = 720, height: int = 400) -> str:
    """The page HTML: one ``<figure>`` with a light and a dark ``<img>`` and a caption.

    ``prefix`` is the relative path from the page to the site root (``""``, ``"../"``...);
    ``width`` and ``height`` (CSS px) reserve the space so the page does not jump as it loads.
    Material shows an image whose URL ends in ``#only-light`` / ``#only-dark`` only in that scheme.
    """
    a, c = html.escape(alt, quote=True), html.escape(caption)
    imgs = "".join(
        f'<img src="{prefix}figures/{fig_id}-{t}.svg#only-{t}" alt="{a}" width="{width}" height="{height}">'
        for t in FigureBuilder.THEMES
    )
    return f'\n\n<figure class="descent-figure" id="figure-{fig_id}">{imgs}<figcaption>{c}</figcaption></figure>\n\n'
