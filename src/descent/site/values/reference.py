"""The shortcode reference (the contributing page's table of every value, table, formula, figure and widget).
"""

from __future__ import annotations

from typing import Any

from descent import formulas, widgets
from descent.site import figures
from descent.site.shortcodes import registry, table
from descent.site.values.text import md_table


@table("shortcodes")
def shortcodes_table() -> str:
    """Every value and table shortcode with its arguments (generated, so it cannot go stale)."""
    rows = []
    for kind in ("value", "table"):
        for name, e in sorted(registry(kind).items()):
            args = "<br>".join(f"`{a.describe()}`: {a.help}" for a in e.args) or "none"
            rows.append([kind, f"`{name}`", e.doc, args])
    for kind, names in (("formula", _formula_names()), ("figure", figure_ids()), ("widget", _widget_names())):
        for name in names:
            rows.append([kind, f"`{name}`", _describe_other(kind, name), "none" if kind != "widget" else "see the widget"])
    return md_table(["kind", "name", "what it gives", "arguments (name=default)"], rows, html=True)  # <br>: ours

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
