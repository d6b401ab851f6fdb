"""Output views of the widgets: plain-dict constructors and ONE HTML renderer per kind.

A widget's compute function returns a list of views (plain dicts with a ``"kind"`` key). The
renderers below turn them into accessible HTML. The same renderers run at build time (the
pre-rendered default result) and in the browser's Pyodide worker; the JavaScript never builds a
view itself. Every piece of text is escaped with :func:`html.escape`, except the ``svg`` view's
markup, which must come from descent's own code; and every piece of text shows Unicode's
bidirectional control characters as ``[U+202E]`` (:func:`visible_controls`), so text a reader
typed (a guess, a prompt, a token) stays the reader's and cannot reverse the site's sentence
around it.

Accessibility: every bar carries its value as text (the bar itself is ``aria-hidden``); tables
and grids have captions; the grid's cells carry their meaning as text (``title`` plus a
visually hidden label); stacked bars say the total against the capacity in words.

Clickable outputs: a chip or a cell built with ``set={"input": value, ...}`` renders as a
``<button data-set='{"input": "value"}'>``; in the browser a click writes those values into the
widget's form controls and recomputes (a bit you can flip, a token you can pick, a preset). The
values go through the same validation as typed input.

Kinds: ``stat``, ``bar_list``, ``stacked_bar``, ``table``, ``chips``, ``cell_grid``, ``note``,
``svg``, ``kv``, ``stream`` (a reply replayed at a rate by ``stream.js``; the full text without
JS), ``player`` (a sequence of frames computed once, stepped and played by ``player.js``; one frame
pre-rendered without JS), ``export`` (the result as data, hidden: share.js's "Copy as JSON"), and ``limits``, which shows nothing: it narrows a number input's range to what the
current result allows (the step slider of a 23-step reply ends at step 22), in the pre-rendered
form and, through ``data-limits``, in the browser. Bad view data raises ``ValueError`` naming the
view and the field.

Core rule: standard library only.
"""

from __future__ import annotations

import functools
import html
import json
import math
import re
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from descent.checks import is_int, is_real
from descent.units import DEFAULT_SIG, format_bytes, format_fixed, format_int, format_number

#: CSS class names are limited to these characters, so a class can never break out of the
#: attribute or inject another one.
_CLASS_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_ ")

#: Widest bar, in percent of the track: keeps the value text inside the track's box.
BAR_FULL_PERCENT = 100.0


#: Unicode's explicit bidirectional formatting characters (UAX #9, "Unicode Bidirectional
#: Algorithm", section 2: embeddings, overrides, isolates and the implicit marks ALM, LRM, RLM).
#: Invisible, and they reorder what follows them: a guess holding U+202E RIGHT-TO-LEFT OVERRIDE
#: would reverse the site's own sentence after it. Every text a view renders shows them instead.
BIDI_CONTROLS = {
    "\u061c": "ALM", "\u200e": "LRM", "\u200f": "RLM",
    "\u202a": "LRE", "\u202b": "RLE", "\u202c": "PDF", "\u202d": "LRO", "\u202e": "RLO",
    "\u2066": "LRI", "\u2067": "RLI", "\u2068": "FSI", "\u2069": "PDI",
}
_BIDI_TABLE = str.maketrans({c: f"[U+{ord(c):04X}]" for c in BIDI_CONTROLS})


def visible_controls(text: str) -> str:
    """``text`` with each bidirectional control character written as its code point, visibly
    (``"\u202eabc"`` -> ``"[U+202E]abc"``): text the reader typed keeps its letters and cannot
    reorder the sentence around it."""
    return text.translate(_BIDI_TABLE)


#: Texts up to this many characters keep their escaped form in :func:`_escaped`'s cache: a cell grid
#: or a chart repeats a few short texts thousands of times (issue 28: each recompute under 50 ms).
ESCAPE_CACHE_CHARS = 200


@functools.lru_cache(maxsize=4096)
def _escaped(text: str) -> str:
    return html.escape(text.translate(_BIDI_TABLE), quote=True)


def _e(x: Any) -> str:
    """Escaped text for HTML content or a quoted attribute; bidi controls shown (:func:`visible_controls`)."""
    text = x if type(x) is str else str(x)
    if len(text) <= ESCAPE_CACHE_CHARS:
        return _escaped(text)
    return html.escape(visible_controls(text), quote=True)


@functools.lru_cache(maxsize=1024)
def _class_ok(text: str) -> bool:
    return set(text) <= _CLASS_CHARS


def _cls(value: Any, view: str) -> str:
    text = "" if value is None else str(value)
    if not (len(text) <= ESCAPE_CACHE_CHARS and _class_ok(text)) and not set(text) <= _CLASS_CHARS:
        raise ValueError(f"{view}: class must be letters, digits, '-', '_' or spaces, got {text!r}")
    return text.strip()


def _finite(x: Any, view: str, field: str, *, positive: bool = False, nonneg: bool = False) -> float:
    if not is_real(x) or not math.isfinite(x):
        raise ValueError(f"{view}: {field} must be a finite number, got {x!r}")
    if positive and x <= 0:
        raise ValueError(f"{view}: {field} must be > 0, got {x!r}")
    if nonneg and x < 0:
        raise ValueError(f"{view}: {field} must be >= 0, got {x!r}")
    return float(x)


def fmt(x: Any, sig: int = DEFAULT_SIG) -> str:
    """Display a value: strings as given; ints with thousands separators; floats to ``sig``
    significant figures (:func:`descent.units.format_number`: no exponent between 1e-4 and 1e15)."""
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{format_int(x)}"
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"cannot display a non-finite number, got {x!r}")
        return format_number(x, sig)
    raise ValueError(f"cannot display a {type(x).__name__}")


def fmt_bytes_gb(n: float) -> str:
    """Bytes as GB (1e9 bytes), 3 significant figures, labelled: ``"16.1 GB"``
    (:func:`descent.units.format_bytes`)."""
    return format_bytes(n, "GB")


# ---------------------------------------------------------------------------------------------
# Constructors (compute functions call these; they only build dicts)
# ---------------------------------------------------------------------------------------------


def stat(label: str, value: Any, unit: str = "", note: str = "", cls: str = "", quantity: str = "") -> dict:
    """A headline number: ``value`` (str, or a number shown with :func:`fmt`) with its unit.

    ``quantity`` names the :mod:`descent.quantities` entry the number is (``"decode_tokens_per_s"``),
    so a page shortcode, this widget output and the CLI's JSON key are one name; it is rendered as
    ``data-quantity`` (and checked against the registry by the vocabulary test).
    """
    return {"kind": "stat", "label": label, "value": value, "unit": unit, "note": note, "cls": cls,
            "quantity": quantity}


def bar(label: str, value: float, display: str | None = None, cls: str = "", greyed: bool = False,
        note: str = "") -> dict:
    """One row of a :func:`bar_list`; ``display`` is the value as text (default: :func:`fmt`)."""
    return {"label": label, "value": value, "display": display, "cls": cls, "greyed": greyed, "note": note}


def bar_list(rows: Sequence[dict], *, caption: str = "", log: bool = False, max: float | None = None,
             unit: str = "") -> dict:
    """Labelled horizontal bars. Widths are ``value / max`` (default max: the largest value), or
    on a log10 scale from the smallest positive value to ``max`` when ``log`` (values must be
    > 0). ``unit`` is appended to each default display text."""
    return {"kind": "bar_list", "rows": list(rows), "caption": caption, "log": log, "max": max, "unit": unit}


def segment(label: str, nbytes: float, cls: str = "", display: str | None = None) -> dict:
    """One part of a :func:`stacked_bar`, in bytes."""
    return {"label": label, "bytes": nbytes, "cls": cls, "display": display}


def stacked_bar(segments: Sequence[dict], capacity: float, *, caption: str = "",
                capacity_label: str = "capacity", fmt_bytes: Callable[[float], str] | None = None,
                summary: str = "") -> dict:
    """Segments (bytes) stacked against a capacity (bytes). When the total exceeds the capacity
    an "over capacity" band marks the excess; otherwise the free space is shown. Text is
    formatted with ``fmt_bytes`` (default GB, 1e9 bytes) at construction time. ``summary``, when
    given, replaces the line "TOTAL of CAPACITY LABEL" above the bar (the share filled follows it)."""
    f = fmt_bytes or fmt_bytes_gb
    segs = []
    for s in segments:
        s = dict(s)
        if s.get("display") is None:
            s["display"] = f(_finite(s.get("bytes"), "stacked_bar", "segment bytes", nonneg=True))
        segs.append(s)
    cap = _finite(capacity, "stacked_bar", "capacity", positive=True)
    total = sum(float(s["bytes"]) for s in segs)
    return {
        "kind": "stacked_bar", "segments": segs, "capacity": cap, "caption": caption,
        "capacity_label": capacity_label, "capacity_display": f(cap), "total_display": f(total),
        "diff_display": f(abs(total - cap)), "summary": summary,
    }


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]], *, caption: str = "",
          numeric: Sequence[bool] | None = None) -> dict:
    """A table; ``numeric[i]`` right-aligns column ``i`` (default: columns whose cells are numbers)."""
    return {"kind": "table", "columns": list(columns), "rows": [list(r) for r in rows], "caption": caption,
            "numeric": list(numeric) if numeric is not None else None}


def chip(text: str, id: int | str | None = None, cls: str = "", title: str = "",
         set: dict[str, Any] | None = None, goto: int | None = None, current: bool = False) -> dict:
    """One token chip: its text, its id (shown small under it) and a class. With ``set``
    (``{input name: value}``) the chip is a button that sets those inputs when clicked. With
    ``goto`` (a frame index, inside a :func:`player`'s frame) it is a button that shows that frame:
    ``disabled`` in the HTML, enabled by ``player.js`` (no round trip to Python); ``current``: it is
    the frame on show (``aria-current``)."""
    out = {"text": text, "id": id, "cls": cls, "title": title, "set": set}
    if goto is not None:
        out["goto"], out["current"] = goto, bool(current)
    return out


def chips(items: Sequence[dict], *, caption: str = "", tokens: bool = True) -> dict:
    """A row of chips. ``tokens`` (default): token chips, whose whitespace is shown as visible
    marks and which screen readers hear quoted (" Paris" and "Paris" differ); ``tokens=False``
    for chips that are plain names (presets)."""
    return {"kind": "chips", "chips": list(items), "caption": caption, "tokens": tokens}


def cell(cls: str = "", text: str = "", title: str = "", set: dict[str, Any] | None = None, span: int = 1) -> dict:
    """One cell of a :func:`cell_grid`: a class (its colour), short text and a title (tooltip).
    With ``set`` (``{input name: value}``) the cell is a button that sets those inputs. ``span``: how
    many of the grid's columns it covers (a run of equal columns drawn as one bar, ``colspan``)."""
    out = {"cls": cls, "text": text, "title": title, "set": set}
    if span != 1:
        out["span"] = span
    return out


def _set_attr(set_: Any, view: str) -> str:
    """``data-set`` attribute for a clickable chip/cell ('' when not clickable)."""
    if not set_:
        return ""
    if not isinstance(set_, dict) or not all(isinstance(k, str) and k.isidentifier() for k in set_):
        raise ValueError(f"{view}: set must be a dict of input name: value, got {set_!r}")
    values = {}
    for k, val in set_.items():
        if isinstance(val, bool):
            values[k] = "true" if val else "false"
        elif isinstance(val, (int, float, str)) and not (isinstance(val, float) and not math.isfinite(val)):
            values[k] = str(val)
        else:
            raise ValueError(f"{view}: set value for {k!r} must be a string, number or bool, got {val!r}")
    return f' data-set="{_e(json.dumps(values, sort_keys=True))}"'


def _parse_set(markup: str) -> dict[str, str]:
    """The inputs a clickable view element sets (for tests): its ``data-set`` JSON, unescaped."""
    start = markup.index('data-set="') + len('data-set="')
    return json.loads(html.unescape(markup[start:markup.index('"', start)]))


def cell_grid(cells: Sequence[Sequence[dict]], *, caption: str, row_labels: Sequence[str] | None = None,
              col_labels: Sequence[str] | None = None, legend: Iterable[tuple[str, str]] = ()) -> dict:
    """Rows x columns of classed cells (paged KV blocks, batching lanes, ...). ``legend`` is
    ``[(cls, meaning), ...]``; a cell with no text or title is announced by its class's meaning."""
    rows = list(cells)  # read once (a generator), and kept alive while their ids are compared
    copies: dict[int, list[dict]] = {}  # a row object given again stays one object (rendered once)
    for r in rows:
        if id(r) not in copies:
            copies[id(r)] = list(r)
    return {"kind": "cell_grid", "cells": [copies[id(r)] for r in rows], "caption": caption,
            "row_labels": list(row_labels) if row_labels is not None else None,
            "col_labels": list(col_labels) if col_labels is not None else None,
            "legend": [list(x) for x in legend]}


def note(text: str, tone: str = "info", *, link: str = "", href: str = "") -> dict:
    """A sentence under the results; ``tone`` is ``info`` or ``warn``. With ``link`` and ``href``
    the sentence ends with a link: ``link`` is its text, ``href`` an address on this site relative
    to the page (``"part-1-the-transformer.html#embeddings"``; see :func:`check_href`)."""
    out = {"kind": "note", "text": text, "tone": tone}
    if link or href:
        out |= {"link": link, "href": href}
    return out


def does_not_fit(what: str, accelerator_name: str) -> dict:
    """The one warning every widget that times a model on a chip shows when the model (and its
    KV cache) does not fit in the chip's memory (``descent.step.footprint(...).fits`` is False):
    ``what`` is the subject ("This batch", "Llama 3.1 70B with its KV cache")."""
    return note(f"{what} does not fit on one {accelerator_name}: the numbers are what the speed would give "
                f"if it did.", "warn")


#: A link a view may carry: a path relative to the page (lower-case letters, digits, ``.``, ``_``,
#: ``/`` and ``-``, not starting with ``/`` or ``.``) and an optional ``#anchor``. No scheme and no
#: ``//`` host, so it never leaves the site's origin, and nothing that needs escaping.
_HREF = re.compile(r"[a-z0-9][a-z0-9._/-]*(#[a-z0-9_-]+)?")


def check_href(href: Any, view: str) -> str:
    """``href`` if it is a relative address on this site (:data:`_HREF`).

    Raises:
        ValueError: anything else (a scheme, a host, an absolute path, other characters), naming the view.
    """
    if not isinstance(href, str) or not _HREF.fullmatch(href) or "//" in href:
        raise ValueError(f"{view}: href must be a relative address on this site such as "
                         f"'part-1-the-transformer.html#embeddings', got {href!r}")
    return href


def svg(markup: str, alt: str, *, narrow: str = "") -> dict:
    """A small pre-built SVG (from descent's own code; not escaped) with its text alternative.

    ``narrow``: the same chart drawn for a phone (``_svg.loglog_chart(..., narrow=True)``); the page
    shows it instead of ``markup`` on a screen narrower than 30em (descent.css), so a chart fits the
    phone at its natural size."""
    return {"kind": "svg", "svg": markup, "alt": alt, "narrow": narrow}


def kv(items: Sequence[tuple[str, Any]], *, caption: str = "") -> dict:
    """A definition list of (term, value) pairs."""
    return {"kind": "kv", "items": [list(x) for x in items], "caption": caption}


def stream(tokens: Sequence[str], tokens_per_s: float, delay_s: float = 0.0, *, caption: str = "") -> dict:
    """A reply written out token by token at ``tokens_per_s`` (tokens/s, > 0) after ``delay_s``
    seconds (>= 0, the time to first token). The whole text is in the page;
    ``docs/assets/descent/stream.js`` replays it from ``data-stream`` when JS runs."""
    return {"kind": "stream", "tokens": [str(t) for t in tokens], "rate": tokens_per_s, "delay": delay_s,
            "caption": caption}


def frame(label: str, views: Sequence[dict]) -> dict:
    """One frame of a :func:`player`: a sentence saying what happens at this step (the live region
    reads it: "step 3 of 12: ...") and the views drawn for it (any kinds but ``player``)."""
    return {"label": label, "views": list(views)}


def player(frames: Sequence[dict], *, caption: str, start: int = -1) -> dict:
    """A frame player: ``frames`` (built with :func:`frame`) computed once, in Python; the page steps
    through them (buttons, arrow keys) and plays them on request (``docs/assets/descent/player.js``)
    without asking Python again. Frame ``start`` (default the last, the complete picture; negative
    counts from the end) is the one in the page's HTML: readers without JavaScript, and the
    pre-rendered page, see it. Every frame is also in the page as compact data
    (:func:`player_data`), decoded by ``player.js`` on first use."""
    return {"kind": "player", "frames": list(frames), "caption": caption, "start": start}


def limits(**fields: dict[str, float]) -> dict:
    """Narrow number inputs to this result: ``limits(step={"max": 22})``. Each value is a dict with
    ``min`` and/or ``max`` inside the input's declared range (the declaration still validates what a
    reader types; this only sets the control's ends). Renders as a hidden element."""
    return {"kind": "limits", "fields": {k: dict(v) for k, v in fields.items()}}


def export(data: dict) -> dict:
    """The result as data, for the widget's "Copy as JSON" button (share.js; issue 26, Export): where
    the command line has the same calculation, the same keys as its ``--json``. Renders as a hidden
    element (``data-export``); an infinite value is written as null (strict JSON)."""
    return {"kind": "export", "data": dict(data)}


#: Characters of an action's name (``data-action``): lowercase words joined by hyphens.
_ACTION_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz-")


def action(label: str, name: str, note: str = "", *, disabled: bool = True) -> dict:
    """A button a page script acts on (``<button data-action=NAME>``), with a message line under it
    (``data-action-message``, ``note`` until the script writes there).

    Used for what Python cannot do itself: ``llm.js`` loads or removes the in-browser model. The
    button is ``disabled`` by default, so the pre-rendered page (no script, or ``file:``) offers
    nothing that cannot work; the script enables it where it can act.
    """
    return {"kind": "action", "label": label, "name": name, "note": note, "disabled": disabled}


def progress(label: str) -> dict:
    """A progress bar a page script fills (``data-progress``; hidden until the script shows it)."""
    return {"kind": "progress", "label": label}


def limits_of(views: Iterable[dict]) -> dict[str, dict[str, float]]:
    """The merged ``limits`` views of a result, by input name (empty when there are none)."""
    out: dict[str, dict[str, float]] = {}
    for v in views:
        if isinstance(v, dict) and v.get("kind") == "limits":
            for name, lim in v["fields"].items():
                out.setdefault(name, {}).update(lim)
    return out


# ---------------------------------------------------------------------------------------------
# Renderers: one per kind
# ---------------------------------------------------------------------------------------------


def _caption(text: str, tag: str = "p") -> str:
    return f'<{tag} class="descent-view__caption">{_e(text)}</{tag}>' if text else ""


def render_stat(v: dict) -> str:
    cls = _cls(v.get("cls"), "stat")
    unit = f' <span class="descent-stat__unit">{_e(v["unit"])}</span>' if v.get("unit") else ""
    note_ = f'<p class="descent-stat__note">{_e(v["note"])}</p>' if v.get("note") else ""
    q = v.get("quantity") or ""
    if q and not q.replace("_", "").isalnum():
        raise ValueError(f"stat: quantity must be a quantity name, got {q!r}")
    data_q = f' data-quantity="{q}"' if q else ""
    return (
        f'<div class="descent-stat{" " + cls if cls else ""}"{data_q}>'
        f'<p class="descent-stat__label">{_e(v["label"])}</p>'
        f'<p class="descent-stat__value"><span class="descent-stat__number">{_e(fmt(v["value"]))}</span>{unit}</p>'
        f"{note_}</div>"
    )


def _bar_fractions(rows: list[dict], log: bool, vmax: float | None) -> list[float]:
    values = [_finite(r.get("value"), "bar_list", f"row {r.get('label')!r} value") for r in rows]
    if log:
        if any(x <= 0 for x in values):
            raise ValueError("bar_list: a log-scale bar list needs every value > 0")
        top = vmax if vmax is not None else max(values, default=1.0)
        low = min(values, default=1.0)
        # One decade below the smallest value, so the smallest bar is still visible.
        lo, hi = math.log10(low) - 1.0, math.log10(top)
        span = hi - lo if hi > lo else 1.0
        return [min(1.0, max(0.0, (math.log10(x) - lo) / span)) for x in values]
    if any(x < 0 for x in values):
        raise ValueError("bar_list: values must be >= 0 (use log=False and positive values)")
    top = vmax if vmax is not None else max(values, default=0.0)
    if top <= 0:
        return [0.0 for _ in values]
    return [min(1.0, x / top) for x in values]


def render_bar_list(v: dict) -> str:
    rows = v["rows"]
    vmax = v.get("max")
    if vmax is not None:
        vmax = _finite(vmax, "bar_list", "max", positive=True)
    fracs = _bar_fractions(rows, bool(v.get("log")), vmax)
    unit = v.get("unit") or ""
    items = []
    for r, f in zip(rows, fracs, strict=True):
        disp = r.get("display")
        if disp is None:
            disp = fmt(r["value"]) + (f" {unit}" if unit else "")
        cls = _cls(r.get("cls"), "bar_list")
        greyed = " descent-bar--greyed" if r.get("greyed") else ""
        note_ = f'<span class="descent-bar__note">{_e(r["note"])}</span>' if r.get("note") else ""
        items.append(
            f'<li class="descent-bar{greyed}{" " + cls if cls else ""}">'
            f'<span class="descent-bar__label">{_e(r["label"])}</span>'
            f'<span class="descent-bar__track" aria-hidden="true">'
            f'<span class="descent-bar__fill" style="width:{f * BAR_FULL_PERCENT:.2f}%"></span></span>'
            f'<span class="descent-bar__value">{_e(disp)}</span>{note_}</li>'
        )
    scale = " (log scale)" if v.get("log") else ""
    cap = (v.get("caption") or "") + scale if v.get("caption") else ""
    return (
        f'<figure class="descent-bars{" descent-bars--log" if v.get("log") else ""}">'
        f'{_caption(cap, "figcaption")}<ul class="descent-bars__list">{"".join(items)}</ul></figure>'
    )


def render_stacked_bar(v: dict) -> str:
    segs = v["segments"]
    cap = _finite(v["capacity"], "stacked_bar", "capacity", positive=True)
    sizes = [_finite(s["bytes"], "stacked_bar", f"segment {s.get('label')!r} bytes", nonneg=True) for s in segs]
    total = sum(sizes)
    scale = max(total, cap)
    over = total > cap
    parts = []
    for s, b in zip(segs, sizes, strict=True):
        cls = _cls(s.get("cls"), "stacked_bar")
        parts.append(
            f'<span class="descent-stack__seg{" " + cls if cls else ""}" style="width:{b / scale * 100:.2f}%" '
            f'title="{_e(s["label"])}: {_e(s["display"])}"></span>'
        )
    if not over:
        parts.append(f'<span class="descent-stack__seg descent-stack__free" style="width:{(cap - total) / scale * 100:.2f}%" '
                     f'title="free: {_e(v["diff_display"])}"></span>')
    marker = ""
    band = ""
    if over:
        left = cap / scale * 100
        band = (f'<span class="descent-stack__over" style="left:{left:.2f}%;width:{100 - left:.2f}%" '
                f'title="over capacity by {_e(v["diff_display"])}"></span>')
        marker = f'<span class="descent-stack__cap" style="left:{left:.2f}%"></span>'
    legend = "".join(
        f'<li><span class="descent-stack__swatch{" " + _cls(s.get("cls"), "stacked_bar") if s.get("cls") else ""}" '
        f'aria-hidden="true"></span>{_e(s["label"])}: <strong>{_e(s["display"])}</strong></li>'
        for s in segs
    )
    if over:
        legend += (f'<li class="descent-stack__overitem"><span class="descent-stack__swatch descent-stack__over" '
                   f'aria-hidden="true"></span>over capacity by <strong>{_e(v["diff_display"])}</strong></li>')
    else:
        legend += (f'<li><span class="descent-stack__swatch descent-stack__free" aria-hidden="true"></span>'
                   f'free: <strong>{_e(v["diff_display"])}</strong></li>')
    pct = total / cap * 100
    head = v.get("summary") or f'{v["total_display"]} of {v["capacity_display"]} {v["capacity_label"]}'
    summary = f'{_e(head)} ({format_fixed(pct, 0)}%){": does not fit" if over else ""}'
    return (
        f'<figure class="descent-stack{" descent-stack--over" if over else ""}">'
        f'{_caption(v.get("caption") or "", "figcaption")}'
        f'<p class="descent-stack__summary">{summary}</p>'
        f'<div class="descent-stack__bar" aria-hidden="true">{"".join(parts)}{band}{marker}</div>'
        f'<ul class="descent-stack__legend">{legend}</ul></figure>'
    )


#: A widget table with this many columns or more is stacked row by row on a phone (descent.css): four
#: columns of numbers with their headings do not fit 340 px at the widget's type size.
STACK_COLUMNS = 4


def render_table(v: dict) -> str:
    cols = v["columns"]
    rows = v["rows"]
    for i, r in enumerate(rows):
        if len(r) != len(cols):
            raise ValueError(f"table: row {i} has {len(r)} cells, expected {len(cols)} (one per column)")
    numeric = v.get("numeric")
    if numeric is None:
        numeric = [bool(rows) and all(is_real(r[i]) for r in rows)
                   for i in range(len(cols))]
    if len(numeric) != len(cols):
        raise ValueError(f"table: numeric has {len(numeric)} entries, expected {len(cols)}")
    num_attr = ' class="num"'
    head = "".join(f'<th scope="col"{num_attr if n else ""}>{_e(c)}</th>' for c, n in zip(cols, numeric, strict=True))
    # data-label: a table of STACK_COLUMNS or more columns is stacked on a phone (descent.css), each
    # cell under its column's name, instead of scrolling sideways or breaking its words.
    body = "".join(
        "<tr>" + "".join(
            (f'<th scope="row">{_e(fmt(c))}</th>' if i == 0 and not numeric[0] else
             f'<td{num_attr if numeric[i] else ""} data-label="{_e(cols[i])}">{_e(fmt(c))}</td>')
            for i, c in enumerate(r)
        ) + "</tr>"
        for r in rows
    )
    # The wrapper is the one scroller (the table's class keeps Material's own table scroller off),
    # and a scroller must take keyboard focus (axe: scrollable-region-focusable).
    label = v.get("caption") or "table"
    stack = " descent-table--stack" if len(cols) >= STACK_COLUMNS else ""
    return (
        f'<div class="descent-table{stack}" tabindex="0" role="group" aria-label="{_e(label)}">'
        f'<table class="descent-table__table">{_caption(v.get("caption") or "", "caption")}'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


#: Visible stand-ins for whitespace inside token chips (the text itself stays in the label).
_WS_MARKS = {" ": "\u2423", "\n": "\u21b5", "\t": "\u21e5"}


def shown_token(text: str) -> str:
    """A token's text with its whitespace drawn as marks (a space as an open box, a newline as a
    return arrow), as token chips show it: " Paris" and "Paris" differ at a glance."""
    return "".join(_WS_MARKS.get(ch, ch) for ch in str(text))


def render_chips(v: dict) -> str:
    items = []
    for c in v["chips"]:
        text = str(c.get("text", ""))
        tokens = v.get("tokens", True)
        shown = "".join(_WS_MARKS.get(ch, ch) for ch in text) if tokens else text
        cls = _cls(c.get("cls"), "chips")
        cid = c.get("id")
        id_html = f'<span class="descent-chip__id">{_e(cid)}</span>' if cid is not None else ""
        label = (f"{text!r}" if tokens else text) + (f", id {cid}" if cid is not None else "") + (f", {c['title']}" if c.get("title") else "")
        title = f' title="{_e(c["title"])}"' if c.get("title") else ""
        inner = (f'<span class="descent-chip__text" aria-hidden="true">{_e(shown)}</span>{id_html}'
                 f'<span class="descent-sr">{_e(label)}</span>')
        data_set = _set_attr(c.get("set"), "chips")
        goto = c.get("goto")
        if goto is not None:
            if data_set or not isinstance(goto, int) or isinstance(goto, bool) or goto < 0:
                raise ValueError(f"chips: goto must be a frame index >= 0 (and no set), got {goto!r}")
            # The current frame's chip says so (aria-current); player.js enables the buttons.
            current = ' aria-current="true"' if c.get("current") else ""
            data_set = f' data-player-goto="{goto}"{current} disabled'
        if data_set:
            inner = f'<button type="button" class="descent-chip__button"{data_set}>{inner}</button>'
        items.append(f'<li class="descent-chip{" " + cls if cls else ""}{" descent-chip--button" if data_set else ""}"'
                     f'{title}>{inner}</li>')
    return (
        f'<figure class="descent-chips{"" if v.get("tokens", True) else " descent-chips--names"}">{_caption(v.get("caption") or "", "figcaption")}'
        f'<ol class="descent-chips__list">{"".join(items)}</ol></figure>'
    )


def _span(c: Any) -> int:
    """The columns a cell covers (its ``span``, 1 unless set): a positive whole number."""
    span = c.get("span", 1) if isinstance(c, dict) else 1
    if type(span) is int and span >= 1:  # the usual case, without is_int's two calls
        return span
    if not is_int(span) or span < 1:
        raise ValueError(f"cell_grid: a cell's span must be a whole number of columns, 1 or more, got {span!r}")
    return span


def render_cell_grid(v: dict) -> str:
    cells = v["cells"]
    # A grid often repeats one row object (a row of tiles all in one state): each distinct row is
    # measured and written once per call, looked up by identity (the rows live in ``v`` throughout).
    row_width: dict[int, int] = {}
    for r in cells:
        if id(r) not in row_width:
            row_width[id(r)] = sum(_span(c) for c in r)
    widths = [row_width[id(r)] for r in cells]
    ncols = max(widths, default=0)
    if any(w != ncols for w in widths):
        raise ValueError("cell_grid: every row must cover the same number of columns (cells, counted by their span)")
    rl, cl = v.get("row_labels"), v.get("col_labels")
    if rl is not None and len(rl) != len(cells):
        raise ValueError(f"cell_grid: row_labels has {len(rl)} entries, expected {len(cells)}")
    if cl is not None and len(cl) != ncols:
        raise ValueError(f"cell_grid: col_labels has {len(cl)} entries, expected {ncols}")
    meaning = {str(c): str(m) for c, m in v.get("legend") or []}
    head = ""
    if cl is not None:
        head = ("<thead><tr>" + ('<td></td>' if rl is not None else "")
                + "".join(f'<th scope="col">{_e(x)}</th>' for x in cl) + "</tr></thead>")
    body = []
    # A grid repeats a few kinds of cell many times: each kind is written once (a cell that sets
    # inputs when clicked is written each time).
    written: dict[tuple, str] = {}
    # And a cell object used again (a widget that builds one cell per state) is looked up by identity
    # (the objects live in ``v`` throughout the call, so an id is not reused while this runs).
    same: dict[int, str] = {}

    def td_of(c: dict) -> str:
        td = same.get(id(c))
        if td is not None:
            return td
        key = None if c.get("set") else (c.get("cls"), c.get("title"), c.get("text"), c.get("span", 1))
        if key is not None:
            try:
                td = written.get(key)
            except TypeError:  # an unhashable value: the checks below report it
                key, td = None, None
            if td is not None:
                same[id(c)] = td
                return td
        cls = _cls(c.get("cls"), "cell_grid")
        spoken = c.get("title") or meaning.get(cls, "") or c.get("text", "")
        title = f' title="{_e(c["title"])}"' if c.get("title") else ""
        text = f'<span aria-hidden="true">{_e(c["text"])}</span>' if c.get("text") else ""
        sr = f'<span class="descent-sr">{_e(spoken)}</span>' if spoken else ""
        data_set = _set_attr(c.get("set"), "cell_grid")
        inner = f'<button type="button" class="descent-cell__button"{data_set}>{text}{sr}</button>' if data_set \
            else f"{text}{sr}"
        span = f' colspan="{c["span"]}"' if c.get("span", 1) != 1 else ""
        td = f'<td class="descent-cell{" " + cls if cls else ""}"{span}{title}>{inner}</td>'
        if key is not None:
            written[key] = td
            same[id(c)] = td
        return td

    row_html: dict[int, str] = {}
    for ri, row in enumerate(cells):
        joined = row_html.get(id(row))
        if joined is None:
            tds = [same.get(id(c)) for c in row]  # a row of cells all written before: looked up in one pass
            if None in tds:
                tds = [td_of(c) for c in row]
            joined = row_html[id(row)] = "".join(tds)
        th = f'<th scope="row">{_e(rl[ri])}</th>' if rl is not None else ""
        body.append(f"<tr>{th}{joined}</tr>")
    legend = "".join(
        f'<li><span class="descent-cell {_cls(c, "cell_grid")}" aria-hidden="true"></span>{_e(m)}</li>'
        for c, m in v.get("legend") or []
    )
    legend_html = f'<ul class="descent-grid__legend">{legend}</ul>' if legend else ""
    # The grid may be wider than the page (it scrolls): focusable, so a keyboard can scroll it too.
    # The table has a class, so Material neither styles it nor wraps it in a scroll container of its
    # own (the grid scrolls itself; a wrapper would be measured at start-up, laying out the skipped grid).
    # A grid with neither row nor column labels is a picture of cells, each named by its own label,
    # not a table of data: it is presented as such (axe's td-has-header asks data tables for headers).
    role = ' role="presentation"' if rl is None and cl is None else ""
    # Cells that span columns give the columns no width of their own: such a grid is laid out fixed,
    # its width shared equally by its columns (the row labels' column has its own), as a grid of
    # single cells shares it.
    cols, fixed = "", ""
    if any(len(r) != ncols for r in cells):
        label_col = '<col class="descent-grid__labels">' if rl is not None else ""
        cols, fixed = f'<colgroup>{label_col}<col span="{ncols}"></colgroup>', " descent-grid__table--spans"
    return (
        f'<div class="descent-grid" tabindex="0" role="group" aria-label="{_e(v["caption"])}">'
        f'<table class="descent-grid__table{fixed}"{role}>'
        f'{_caption(v["caption"], "caption")}{cols}{head}'
        f'<tbody>{"".join(body)}</tbody></table>{legend_html}</div>'
    )


def render_note(v: dict) -> str:
    tone = v.get("tone") or "info"
    if tone not in ("info", "warn"):
        raise ValueError(f"note: tone must be info or warn, got {tone!r}")
    link = ""
    if v.get("link") or v.get("href"):
        if not v.get("link"):
            raise ValueError("note: a link needs its text")
        link = f' <a href="{check_href(v.get("href"), "note")}">{_e(v["link"])}</a>'
    return f'<p class="descent-note descent-note--{tone}">{_e(v["text"])}{link}</p>'


def render_svg(v: dict) -> str:
    drawn = []
    for key in ("svg", "narrow"):
        markup = str(v.get(key) or "").strip()
        if key == "narrow" and not markup:
            continue
        if not markup.startswith("<svg") or not markup.endswith("</svg>") or markup.count("<svg") != 1:
            raise ValueError(f"svg: {'markup' if key == 'svg' else 'narrow'} must be one <svg>...</svg> element")
        if "<script" in markup.lower():
            raise ValueError("svg: markup must not contain <script>")
        drawn.append(markup)
    alt = str(v.get("alt") or "")
    if not alt:
        raise ValueError("svg: alt (a text alternative) is required")
    both = " descent-svg--both" if len(drawn) == 2 else ""
    return f'<figure class="descent-svg{both}" role="img" aria-label="{_e(alt)}">{"".join(drawn)}</figure>'


def render_kv(v: dict) -> str:
    items = "".join(f"<div><dt>{_e(k)}</dt><dd>{_e(fmt(val))}</dd></div>" for k, val in v["items"])
    return f'<div class="descent-kv">{_caption(v.get("caption") or "")}<dl>{items}</dl></div>'


def render_stream(v: dict) -> str:
    tokens = v["tokens"]
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) for t in tokens):
        raise ValueError("stream: tokens must be a non-empty list of strings")
    rate = _finite(v["rate"], "stream", "rate", positive=True)
    delay = _finite(v.get("delay", 0.0), "stream", "delay", nonneg=True)
    data = _e(json.dumps({"tokens": tokens, "rate": rate, "delay": delay}))
    return (f'<figure class="descent-stream">{_caption(v.get("caption") or "", "figcaption")}'
            f'<output class="descent-stream__text" data-stream="{data}" aria-live="off">'
            f'{_e("".join(tokens))}</output></figure>')


def render_limits(v: dict) -> str:
    fields = v["fields"]
    if not isinstance(fields, dict) or not fields:
        raise ValueError("limits: fields must name at least one input")
    clean: dict[str, dict[str, float]] = {}
    for name, lim in fields.items():
        if not isinstance(lim, dict) or not lim or set(lim) - {"min", "max"}:
            raise ValueError(f"limits: {name!r} must be a dict of min and/or max")
        vals = {k: _finite(x, "limits", f"{name}.{k}") for k, x in lim.items()}
        clean[str(name)] = {k: int(x) if x.is_integer() else x for k, x in vals.items()}
    return f'<div class="descent-limits" hidden data-limits="{_e(json.dumps(clean, sort_keys=True))}"></div>'


def _strict(x: Any) -> Any:
    """``x`` with every float that JSON cannot hold (infinity, NaN) as None, dicts and lists walked."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): _strict(y) for k, y in x.items()}
    if isinstance(x, (list, tuple)):
        return [_strict(y) for y in x]
    return x


def render_export(v: dict) -> str:
    data = json.dumps(_strict(v["data"]), allow_nan=False, ensure_ascii=False)
    return f'<div class="descent-export" hidden data-export="{_e(data)}"></div>'


def render_action(v: dict) -> str:
    name = str(v["name"])
    if not name or not set(name) <= _ACTION_CHARS:
        raise ValueError(f"action: name must be lowercase letters and '-', got {name!r}")
    disabled = " disabled" if v.get("disabled", True) else ""
    return (
        f'<div class="descent-action"><button type="button" class="descent-action__button" '
        f'data-action="{name}"{disabled}>{_e(v["label"])}</button>'
        f'<p class="descent-action__message" data-action-message aria-live="polite">{_e(v.get("note") or "")}</p></div>'
    )


def render_progress(v: dict) -> str:
    return (
        f'<div class="descent-progress" data-progress hidden><label class="descent-progress__label">'
        f'<span>{_e(v["label"])}</span> <progress max="1" value="0"></progress></label>'
        f'<span class="descent-progress__text" aria-live="polite"></span></div>'
    )


#: The player's buttons: (action, arrow drawn before the word, word, arrow after). The word is the
#: button's name; arrows are decoration (hidden from screen readers).
PLAYER_BUTTONS = (("first", "", "First", ""), ("prev", "\u25c0", "Back", ""), ("play", "\u25b6", "Play", ""),
                  ("next", "", "Next", "\u25b6"), ("last", "", "Last", ""))


def player_step_text(i: int, n: int, label: str) -> str:
    """The step line of a player at frame ``i`` (0-based) of ``n``: "Step 3 of 12: ..."."""
    return f"Step {format_int(i + 1)} of {format_int(n)}: {label}"


def render_player(v: dict) -> str:
    frames = v["frames"]
    if not isinstance(frames, list) or not frames:
        raise ValueError("player: frames must be a non-empty list of frame(label, views)")
    caption = str(v.get("caption") or "")
    if not caption:
        raise ValueError("player: caption is required (it names the controls)")
    n = len(frames)
    start = v.get("start", -1)
    if not isinstance(start, int) or isinstance(start, bool) or not -n <= start < n:
        raise ValueError(f"player: start must be a frame index from {-n} to {n - 1}, got {start!r}")
    start %= n
    parts = []
    for i, f in enumerate(frames):
        if not isinstance(f, dict) or not isinstance(f.get("label"), str) or not f["label"].strip():
            raise ValueError(f"player: frame {i} needs a label (a sentence saying what happens)")
        views = f.get("views")
        if not isinstance(views, list) or any(isinstance(x, dict) and x.get("kind") == "player" for x in views):
            raise ValueError(f"player: frame {i}'s views must be a list of views other than a player")
        parts.append((f["label"], render_all(views)))
    def arrow(a: str) -> str:
        return f'<span class="descent-player__arrow" aria-hidden="true">{a}</span>' if a else ""

    # Buttons start disabled: without JavaScript they could do nothing (player.js enables them).
    buttons = "".join(
        f'<button type="button" class="descent-player__button" data-player-do="{act}" disabled>'
        f'{arrow(before)}<span class="descent-player__word">{word}</span>{arrow(after)}</button>'
        for act, before, word, after in PLAYER_BUTTONS)
    data = player_data([label for label, _ in parts], [markup for _, markup in parts])
    # The same frames give the same key: widgets.js keeps a player (and the reader's place in it)
    # when a recomputation brings the very frames it already shows (the worker's first answer).
    key = f"{zlib.crc32(f'{caption}|{start}|{data}'.encode()):08x}"
    return (
        f'<figure class="descent-player" data-player data-key="{key}" data-start="{start}" data-frames="{n}">'
        f'{_caption(caption, "figcaption")}'
        f'<div class="descent-player__controls" role="group" aria-label="{_e(caption)}: steps">{buttons}</div>'
        f'<p class="descent-player__step" aria-live="polite" aria-atomic="true">'
        f'{_e(player_step_text(start, n, parts[start][0]))}</p>'
        f'<div class="descent-player__stage" tabindex="0" role="group" aria-live="off" '
        f'aria-label="{_e(caption)}: the left and right arrow keys step through it">'
        f'{parts[start][1]}</div>'
        f'<template class="descent-player__frames">{data}</template></figure>'
    )


#: One piece of a frame's HTML: a tag, or the text between two tags.
_PIECE = re.compile(r"<[^>]*>|[^<]+")


def player_data(labels: Sequence[str], frames: Sequence[str]) -> str:
    """The frames of a player as compact JSON for the page (``player.js`` decodes a frame when the
    reader first steps to it): ``{"l": labels, "p": pieces, "f": [[piece index, ...], ...]}``, each
    frame's HTML cut into tags and texts (:data:`_PIECE`), every distinct piece written once. Frames
    repeat the same few tags and words (a cell grid is one ``<td class=...>`` after another), so
    Part 3's players take about a sixth of the bytes of their HTML, and the page parses one text
    node instead of a template of every frame's elements. ``<``, ``>`` and ``&`` are written as JSON
    escapes (``\\u003c`` ...), so the text holds no markup (the pieces are few: this costs little).
    It goes in a ``<template>``, inert and left alone by Material's instant navigation, which
    re-creates every inline ``<script>`` of a new page as an executable one, ``type`` dropped (a
    JSON data block then breaks the Content-Security-Policy)."""
    index: dict[str, int] = {}

    def code(chunk: str) -> str:
        """The indices of ``chunk``'s pieces as JSON ("4,5,6"; "" for none), new pieces indexed."""
        return ",".join([str(index.setdefault(piece, len(index))) for piece in _PIECE.findall(chunk)])

    # Cut at each "<tr", then each row at each "<td": a cell grid's frames repeat the same rows and
    # the same cells, so each distinct row, and each distinct cell in it, is cut into pieces and
    # written as indices once (cutting just before a "<" gives the pieces a cut of the whole would).
    # A frame is then the join of its rows' texts: the JSON json.dumps writes for its list of
    # indices, without a call per number (flash_tiles' 122 frames of 11 rows of 11 cells).
    cells: dict[str, str] = {}

    def cell(chunk: str) -> str:
        known = cells[chunk] = code("<td" + chunk)  # never "": it holds "<td" at least
        return known

    rows: dict[str, str] = {}

    def row(chunk: str) -> str:
        first, *rest = chunk.split("<td")
        known = rows[chunk] = ",".join([code("<tr" + first), *[cells.get(c) or cell(c) for c in rest]])
        return known

    heads: dict[str, str] = {}  # what comes before a frame's first row
    coded = []
    for markup in frames:
        first, *rest = markup.split("<tr")
        head = heads.get(first)
        if head is None:
            head = heads[first] = code(first)
        texts = [rows.get(c) or row(c) for c in rest]
        coded.append("[" + ",".join([head, *texts] if head else texts) + "]")
    dump = functools.partial(json.dumps, ensure_ascii=False, separators=(",", ":"))
    text = f'{{"l":{dump(list(labels))},"p":{dump(list(index))},"f":[{",".join(coded)}]}}'
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def player_frames(markup: str) -> list[tuple[str, str]]:
    """``[(label, html)]`` of every frame of the first player in ``markup``, decoded as ``player.js``
    decodes them (for tests and tools)."""
    m = re.search(r'<template class="descent-player__frames">(.*?)</template>', markup, re.S)
    if m is None:
        raise ValueError("player_frames: no player in the markup")
    data = json.loads(m.group(1))
    return [(label, "".join(data["p"][i] for i in ids)) for label, ids in zip(data["l"], data["f"], strict=True)]


RENDERERS: dict[str, Callable[[dict], str]] = {
    "stat": render_stat,
    "bar_list": render_bar_list,
    "stacked_bar": render_stacked_bar,
    "table": render_table,
    "chips": render_chips,
    "cell_grid": render_cell_grid,
    "note": render_note,
    "svg": render_svg,
    "kv": render_kv,
    "limits": render_limits,
    "export": render_export,
    "stream": render_stream,
    "action": render_action,
    "progress": render_progress,
    "player": render_player,
}


def render(view: dict) -> str:
    """HTML for one view.

    Raises:
        ValueError: unknown kind, or a missing/invalid field (the message names the view).
    """
    if not isinstance(view, dict):
        raise ValueError(f"a view must be a dict with a 'kind', got {type(view).__name__}")
    kind = view.get("kind")
    if kind not in RENDERERS:
        raise ValueError(f"unknown view kind {kind!r}; known: {', '.join(RENDERERS)}")
    try:
        return RENDERERS[kind](view)
    except KeyError as exc:
        raise ValueError(f"{kind}: missing field {exc.args[0]!r}") from None


def render_all(views: Iterable[dict]) -> str:
    """HTML for a widget's output region: stats are grouped in one row, then the other views."""
    out: list[str] = []
    stats: list[str] = []
    for v in views:
        if isinstance(v, dict) and v.get("kind") == "stat":
            stats.append(render(v))
            continue
        if stats:
            out.append(f'<div class="descent-stats">{"".join(stats)}</div>')
            stats = []
        out.append(render(v))
    if stats:
        out.append(f'<div class="descent-stats">{"".join(stats)}</div>')
    return "".join(out)
