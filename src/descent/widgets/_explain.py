"""A calculator's number opens its derivation (issue 26, Explain), for the reader's inputs.

A widget's number that names its quantity (``views.stat(..., quantity=NAME)``, ``data-quantity`` in
the page) opens, on click, Enter or Space (``explain.js``), a dialog computed here in the Pyodide
worker at the widget's current inputs: what the number is, the formula with those inputs
substituted (:func:`descent.derivation.derive`, over the table the build wrote from the sympy
expressions), each input with its value, unit and source, the assumptions, and the ``descent``
command and the Python call that give the same number. Nothing is computed until a number is
opened, so a recomputation of the widget costs nothing more.

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

from descent import derivation as D
from descent import params as P
from descent import quantities as Q
from descent.units import format_int, format_number

__all__ = ["explain"]


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


_MD_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^)\s]+)\)")
_MD_CODE = re.compile(r"`([^`]+)`")


def _md(text: str) -> str:
    """A line of Markdown (links and code spans only) as HTML, everything else escaped."""
    out, at = [], 0
    for m in _MD_LINK.finditer(text):
        out.append(_MD_CODE.sub(r"<code>\1</code>", _e(text[at:m.start()])))
        out.append(f'<a href="{_e(m[2])}">{_e(m[1])}</a>')
        at = m.end()
    out.append(_MD_CODE.sub(r"<code>\1</code>", _e(text[at:])))
    return "".join(out)


def _source(text: str) -> str:
    """A catalog source as HTML: a URL becomes a link named by its host and last part."""
    text = text.strip()
    if re.fullmatch(r"https?://\S+", text):
        host = text.split("//", 1)[1].split("/", 1)[0]
        return f'<a href="{_e(text)}">{_e(host)} ({_e(text.rstrip("/").rsplit("/", 1)[-1])})</a>'
    return _md(text)


def _value_text(p: P.Param, value: Any) -> str:
    if p.type == "choice":
        label = dict(p.options()).get(value, "")
        return f"{_e(label)} (<code>{_e(value)}</code>)" if label and label != value else f"<code>{_e(value)}</code>"
    if p.type == "bool":
        return "yes" if value else "no"
    if p.type == "text":
        return f"<code>{_e(value)}</code>"
    text = format_int(value) if isinstance(value, int) else format_number(float(value), 6, trim=True)
    return _e(f"{text} {p.unit}".strip())


def explain(widget: str, values: Mapping[str, Any], quantity: str, table: Mapping[str, Any]) -> dict:
    """The derivation of ``quantity`` at a widget's inputs ``values`` (already checked by
    :func:`descent.widgets.coerce`), as ``{"ok": True, "html", "tex": [LaTeX, ...], "value",
    "formula"}``; the HTML holds an empty ``<div class="descent-how__math" data-slot="i">`` for each
    LaTeX string (the worker renders them with KaTeX). ``{"ok": False, "message"}`` when these inputs
    are not ones the quantity takes (a model from a pasted config.json, a chip typed in).

    Raises:
        ValueError: ``quantity`` is not a quantity (a page bug, not the reader's input).
    """
    q = Q.get(quantity)
    given = {p.name: values[p.name] for p in q.params if p.name in values}
    try:
        inputs = q.bind(given, parse=False)
        value = q(**inputs)
    except ValueError as exc:  # ParamError too
        message = getattr(exc, "message", str(exc))
        return {"ok": False, "message": f"This number's derivation covers the catalog's models and chips: {message}"}
    d = None
    try:
        d = D.derive(quantity, inputs, table)
    except (ValueError, KeyError, ZeroDivisionError, TypeError):
        d = None  # no formula for this case: the inputs, assumptions and code below still say where it comes from
    doc = " ".join((q.func.__doc__ or q.doc).strip().split("\n\n")[0].split())
    parts = [f"<p>{_md(doc)}</p>"]
    tex: list[str] = []
    if d is not None:
        tex = [d.latex, d.substituted]
        parts.append('<div class="descent-how__math" data-slot="0"></div><div class="descent-how__math" data-slot="1"></div>'
                     f"<p><em>Formula source: {_md(d.source)}.</em></p>")
    else:
        parts.append("<p>No one-line formula gives this number at these inputs: the step model computes it "
                     "from the inputs below, in the code named at the end.</p>")
    rows = []
    for p in q.params:
        where = "set in this calculator" if p.name in given else "the default (the site's running example)"
        src = D.source_of(p.name, inputs[p.name])
        rows.append(f"<li>{_e(p.label)}: {_value_text(p, inputs[p.name])}; {where}"
                    + (f"; source: {_source(src)}" if src else "") + "</li>")
    parts.append(f"<p><strong>Inputs</strong></p><ul>{''.join(rows)}</ul>")
    parts.append(f"<p><strong>Assumptions.</strong> {_e(D.assumption(q))}</p>")
    module = q.func.__module__
    parts.append(
        "<p><strong>The same number elsewhere.</strong> On the command line: "
        f"<code>{_e(D.command_line(quantity, {k: v for k, v in given.items()}))}</code>. In Python: "
        f"<code>{_e(D.python_call(quantity, given))}</code>. Code: "
        f'<a href="{_e(D.CODE_URL + module.replace(".", "/") + ".py")}">{_e(module)}</a>.</p>')
    return {"ok": True, "html": "".join(parts), "tex": tex, "value": d.value if d is not None else value,
            "formula": d.formula if d is not None else "", "label": q.label, "printed": q.format(value)}
