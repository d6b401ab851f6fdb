"""The shortcode reference (the contributing page's table of every value, table, formula, figure and widget).
"""

from __future__ import annotations

import collections
import html
from typing import Any

from descent import formulas, widgets
from descent.site import figures
from descent.site.shortcodes import registry, table
from descent.site.values.text import md_table
from descent.units import format_int


@table("shortcodes")
def shortcodes_table() -> str:
    """Every value and table shortcode with its arguments (generated, so it cannot go stale).

    An argument that several shortcodes share with the same meaning (``model``, ``accelerator``,
    ``weights`` ...) is named in the row and explained once, in :func:`shortcode_arguments_table`;
    an argument of one shortcode alone is explained in its row. (Explaining every argument in every
    row made a narrow fourth column hundreds of pixels tall per row: the table was 60,000 px tall.)
    """
    shared = _shared_arguments()
    rows = []
    for kind in ("value", "table"):
        for name, e in sorted(registry(kind).items()):
            own = [f"`{a.name}`: {a.help}" for a in e.args if (a.name, a.help) not in shared]
            args = ", ".join(f"`{a.describe()}`" for a in e.args)
            gives = "<br>".join([e.doc, *([f"Arguments: {args}"] if args else []), *own])
            rows.append([kind, _breakable(name), gives])
    for kind, names in (("formula", _formula_names()), ("figure", figure_ids()), ("widget", _widget_names())):
        for name in names:
            rows.append([kind, _breakable(name), _describe_other(kind, name)])
    # Three columns, the arguments under the description: a fourth column of arguments pushed the
    # table past the page's column (it scrolled sideways) and stood hundreds of pixels tall beside
    # short descriptions. tests/browser/test_phone_layout.py bounds its width and height.
    return md_table(["kind", "name", "what it gives, and its arguments (name=default)"], rows, html=True)  # <br>: ours


def _breakable(name: str) -> str:
    """A registry name as code that may wrap after each underscore (``<wbr>``): the longest names
    (``allreduce_seconds_per_layer``) would otherwise set the column's width."""
    return "<code>" + "_<wbr>".join(html.escape(part) for part in name.split("_")) + "</code>"


#: How many shortcodes must share an argument (same name, same meaning) for it to be explained
#: once in the table of shared arguments rather than in each row.
SHARED_BY = 2


def _shared_arguments() -> dict[tuple[str, str], int]:
    """(argument name, help) -> how many value and table shortcodes take it, for those taken by at
    least ``SHARED_BY``."""
    count = collections.Counter((a.name, a.help) for kind in ("value", "table")
                                for e in registry(kind).values() for a in e.args)
    return {k: n for k, n in count.items() if n >= SHARED_BY}


@table("shortcode_arguments")
def shortcode_arguments_table() -> str:
    """The arguments several shortcodes share, each explained once (the rows of ``shortcodes`` name them)."""
    rows = [[f"`{name}`", help_, format_int(n)] for (name, help_), n in sorted(_shared_arguments().items())]
    return md_table(["argument", "what it is", "shortcodes that take it"], rows, "llr", html=True)


# Filled in by the site hook (on_config) with the project's figures/ folder.
FIGURES_DIR: list[Any] = []

def figure_ids() -> list[str]:
    """Ids of the figure recipes in ``figures/`` (file names without ``.py``)."""
    if not FIGURES_DIR:
        return []
    return sorted(p.stem for p in FIGURES_DIR[0].glob("*.py") if not p.name.startswith("_"))

def _formula_names() -> list[str]:
    return list(formulas.FORMULAS)

def _widget_names() -> list[str]:
    return widgets.names()

def _describe_other(kind: str, name: str) -> str:
    if kind == "formula":
        return formulas.FORMULAS[name].title
    if kind == "figure":
        return figures.load_recipe(FIGURES_DIR[0] / f"{name}.py").caption.split(". ")[0]
    return widgets.get(name).title
