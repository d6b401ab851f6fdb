"""The bodies of closed ``<details>`` boxes, kept out of the page's DOM until they are opened.

A page's collapsed asides (the math of a section, "How each number on this page is computed") hold
most of its elements: on Part 3, 6,400 of 13,000, mostly KaTeX's spans, all parsed, styled and
walked by Material's start-up although a closed box shows none of them. :func:`lazy_details`
puts the body of each closed box (everything after its ``<summary>``) inside
``<noscript class="descent-lazy">``:

* **without JavaScript** (and in any tool that reads the HTML) a ``<noscript>`` is ordinary markup:
  the box opens on its body, as before;
* **with JavaScript** the parser keeps a ``<noscript>``'s content as one text node (HTML Living
  Standard, "parsing main inbody", the ``noscript`` start tag with scripting enabled): no elements
  until ``lazy.js`` draws the body, when the box is opened, when the reader searches the page
  (Ctrl/Cmd+F, F3) or prints it, when an address or a number's link points inside it, or when
  another script asks (``window.descentLazy.draw(element)``: ``explain.js`` before it copies an
  entry into its dialog).

Left as they are: a box that is open, one whose body is short (:data:`MIN_BODY`, not worth a
script's work), and one whose body holds a code block (Material mounts its copy button at start-up),
a widget, a frame player, a script, a template or a ``<noscript>`` (which cannot nest).

Build side (standard library only); called last from ``on_page_content`` (:mod:`descent.site.hooks`).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from descent.site import blocks

__all__ = ["CLASS", "FORM", "MIN_BODY", "MIN_CELLS", "NEAR", "lazy_details", "lazy_far_forms", "lazy_far_tables"]

#: The class of the ``<noscript>`` that ``lazy.js`` draws.
CLASS = "descent-lazy"
#: A body shorter than this (characters of HTML) stays in the page.
MIN_BODY = 600
#: The extra class of a table drawn when it nears the screen (:func:`lazy_far_tables`).
NEAR = "descent-lazy--near"
#: A table with fewer cells than this stays in the page.
MIN_CELLS = 60
#: What a body may not hold (see the module docstring).
_KEEP = re.compile(r"<pre\b|descent-widget|data-player|<script\b|<template\b|<noscript\b|</noscript", re.IGNORECASE)
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


#: The extra class of a far widget's controls (:func:`lazy_far_forms`).
FORM = "descent-lazy--form"
_NO_NEST = re.compile(r"<script\b|<template\b|<noscript\b|</noscript", re.IGNORECASE)
_FORM = re.compile(r'<form\b[^>]*\bclass="[^"]*\bdescent-widget__form\b[^"]*"[^>]*>.*?</form>', re.IGNORECASE | re.DOTALL)


def lazy_far_forms(html: str) -> str:
    """``html`` with the controls (``<form class="descent-widget__form">``) of each widget the build
    marked far (:func:`descent.site.blocks.mark_far_blocks`) in a
    ``<noscript class="descent-lazy descent-lazy--near descent-lazy--form">``.

    Why: a form control anywhere in the page makes Chromium lay out the skipped block that holds it
    at DOMContentLoaded, so a far widget's skip saved nothing: on Part 1 the task at DOMContentLoaded
    measured 67-132 ms unthrottled with the far widgets' controls in the page and 23-56 ms without
    them (traces of six loads each, phone viewport; decision 0026). ``lazy.js`` draws the controls when
    the widget nears the screen or is drawn after the load, and says so with a ``descent:drawn`` event
    on the widget, which binds it (``widgets.js``, ``share.js``). Without JavaScript the
    ``<noscript>`` is ordinary markup: the controls are there, as before. A form holding a
    ``<noscript>``, a script or a template is left in place (they cannot nest)."""
    parser = blocks._TopLevel(html)
    parser.feed(html)
    parser.close()
    if not parser.balanced or parser.open:
        return html
    taken = [(m.start(), m.end()) for m in _LAZY_SPAN.finditer(html)]
    out, pos = [], 0
    for _tag, cls, start, _tag_end, end in parser.blocks:
        classes = (cls or "").split()
        if "descent-widget" not in classes or blocks.FAR not in classes:
            continue
        m = _FORM.search(html, start, end)
        if not m or _NO_NEST.search(m.group(0)) or any(a <= m.start() < b for a, b in taken):
            continue
        out += [html[pos:m.start()], f'<noscript class="{CLASS} {NEAR} {FORM}">', m.group(0), "</noscript>"]
        pos = m.end()
    out.append(html[pos:])
    return "".join(out)


_TABLE = re.compile(r"<table\b.*?</table>", re.IGNORECASE | re.DOTALL)
_CELL = re.compile(r"<t[dh]\b", re.IGNORECASE)
_LAZY_SPAN = re.compile(r'<noscript class="descent-lazy[^"]*">.*?</noscript>', re.DOTALL)


def lazy_far_tables(html: str, min_cells: int = MIN_CELLS) -> str:
    """``html`` with each table of :data:`MIN_CELLS` cells or more that lies past the first screen in
    a ``<noscript class="descent-lazy descent-lazy--near">``, drawn by ``lazy.js`` when it nears the
    screen, and the others a table per idle moment from the reader's first scroll, key, pointer or
    touch (or ten seconds after the load), so that a screen reader's table list and the browser's
    find see every one. Past the first screen is: in a top-level
    block the build marked far (:mod:`descent.site.blocks`, ``descent-far``), or in a widget after
    the first such block or after the page's first widget (a widget is about a screen tall: the
    first may be on the first screen, the second is not). A table already inside a lazy body is left alone. Call it after
    :func:`descent.site.blocks.mark_far_blocks` and :func:`lazy_details`."""
    parser = blocks._TopLevel(html)
    parser.feed(html)
    parser.close()
    if not parser.balanced or parser.open:
        return html
    far = False
    widgets = 0
    spans = []
    for _tag, cls, start, _tag_end, end in parser.blocks:
        classes = (cls or "").split()
        far = far or blocks.FAR in classes
        widget = "descent-widget" in classes
        if (far and blocks.FAR in classes) or (widget and (far or widgets)):
            spans.append((start, end))
        widgets += widget
    taken = [(m.start(), m.end()) for m in _LAZY_SPAN.finditer(html)]
    out, pos = [], 0
    for start, end in spans:
        for m in _TABLE.finditer(html, start, end):
            if len(_CELL.findall(m.group(0))) < min_cells or _KEEP.search(m.group(0)):
                continue
            if any(a <= m.start() < b for a, b in taken):
                continue
            out += [html[pos:m.start()], f'<noscript class="{CLASS} {NEAR}">', m.group(0), "</noscript>"]
            pos = m.end()
    out.append(html[pos:])
    return "".join(out)


class _Details(HTMLParser):
    """Each outermost closed ``<details>``: ``(end of its </summary>, start of its </details>)``."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=False)
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", html)]
        self.stack: list[str] = []
        self.outer: int | None = None  # stack depth of the closed <details> being read
        self.summary_end: int | None = None
        self.found: list[tuple[int, int]] = []
        self.balanced = True

    def _offset(self) -> int:
        line, col = self.getpos()
        return self.line_starts[line - 1] + col

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            return
        if tag == "details" and self.outer is None and "open" not in dict(attrs):
            self.outer = len(self.stack)
            self.summary_end = None
        self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in _VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.balanced = False
            return
        self.stack.pop()
        if self.outer is None:
            return
        if tag == "summary" and len(self.stack) == self.outer + 1 and self.summary_end is None:
            self.summary_end = self._offset() + len("</summary>")
        elif tag == "details" and len(self.stack) == self.outer:
            if self.summary_end is not None:
                self.found.append((self.summary_end, self._offset()))
            self.outer = None


def lazy_details(html: str, min_body: int = MIN_BODY) -> str:
    """``html`` with the body of each outermost closed ``<details>`` in a ``<noscript class="descent-lazy">``
    (see the module docstring for which are left alone). HTML whose elements do not nest cleanly is
    returned unchanged: the page is then only heavier, never broken."""
    parser = _Details(html)
    parser.feed(html)
    parser.close()
    if not parser.balanced or parser.stack:
        return html
    out, pos = [], 0
    for start, end in parser.found:
        body = html[start:end]
        if len(body) < min_body or _KEEP.search(body):
            continue
        out += [html[pos:start], f'<noscript class="{CLASS}">', body, "</noscript>"]
        pos = end
    out.append(html[pos:])
    return "".join(out)
