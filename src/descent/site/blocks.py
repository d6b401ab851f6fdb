"""Mark the blocks of a page that the browser may leave undrawn until they come near the screen.

A long page costs a phone one full style and layout pass each time a script asks for a size, and
Material's start-up asks several times. ``docs/assets/site.css`` lets the browser skip every block
of the article marked here (``content-visibility: auto``) until it nears the viewport; the block
stays in the accessibility tree, in find-in-page and in the tab order.

Why a class written at build time, not a CSS selector such as ``:nth-child(n+10)``: a positional
selector makes every child of the article depend on its siblings, so each time Material's start-up
moves one child (it wraps every table in a scroll container) the browser restyles the whole
article. On Part 3 that was one extra full style pass, 40-50 ms on a phone under Lighthouse's 4x
slowdown (measured with Chromium's invalidation tracing).

Which blocks are marked (:func:`mark_far_blocks`):

* the top-level blocks of the page's content from the ninth on (:data:`FIRST_DRAWN`), or from the
  second table on if that comes first: the first ones fill more than a phone's or a desktop's first
  screen (a table with its rows is more than a screen's share: the reference pages open with a
  summary table, then one table per model or chip), and a block on screen when the page opens is
  drawn a frame late, which shifts the text below it (``tests/browser/test_layout_cost.py``);
* never a heading (the table of contents' scroll tracking measures them);
* a widget past the first blocks is marked like any other block (decision 0025): a page's widgets
  are most of its elements (Part 4: 1,575 of 3,877), and drawn at load they made the parser's
  rendering steps and Material's start-up restyle and lay out all of them. A tool that measures a
  skipped block's controls without drawing it first finds them piled at the block's corner
  (Lighthouse's accessibility audit reported overlapping targets and a label "over" a slider), so
  ``lazy.js`` draws the far widgets one per idle moment once the page has loaded;
* never the last block: a skipped block is laid out at its placeholder height (site.css), so the
  text of a tall last block would sit over the footer when a tool lays it out without drawing it
  (Lighthouse's contrast check read a closing list of links against the footer's dark background);
* a table is wrapped in a marked ``<div class="descent-far descent-far--table">`` rather than
  given the class itself: the skipped box must hold the table's scroll wrapper
  (:mod:`descent.site.tables` writes it inside the ``<div>`` afterwards), or the wrapper's reach past
  the text would be clipped.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["FAR", "FIRST_DRAWN", "focusable_code", "mark_far_blocks"]

#: The class that site.css skips while the block is far from the screen.
FAR = "descent-far"
#: How many top-level blocks of the content are always drawn (the ninth block on may be skipped).
FIRST_DRAWN = 8

_NEVER = {"h1", "h2", "h3", "h4", "h5", "h6", "script", "style", "template"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _TopLevel(HTMLParser):
    """Finds each top-level element: ``[tag, class attribute or None, start, end of start tag, end]``."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=False)
        self.html = html
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", html)]
        self.open: list[str] = []  # the elements open at this point, outermost first
        self.blocks: list[list] = []
        self.balanced = True

    def _offset(self) -> int:
        line, col = self.getpos()
        return self.line_starts[line - 1] + col

    def handle_startendtag(self, tag, attrs):
        if not self.open:
            start = self._offset()
            tag_end = start + len(self.get_starttag_text() or "")
            self.blocks.append([tag, dict(attrs).get("class"), start, tag_end, tag_end])

    def handle_starttag(self, tag, attrs):
        self.handle_startendtag(tag, attrs)
        if tag not in _VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        if tag in _VOID:
            return
        if not self.open or self.open[-1] != tag:
            self.balanced = False  # a stray or implied close: leave the page as it is
            return
        self.open.pop()
        if not self.open:
            self.blocks[-1][4] = self.html.index(">", self._offset()) + 1


def mark_far_blocks(html: str, first_drawn: int = FIRST_DRAWN) -> str:
    """``html`` (a page's content) with its top-level blocks after the first ``first_drawn`` (or from
    the second top-level table, if that is earlier) marked.

    Headings and the last block are never marked; a table is wrapped in a marked ``<div>``. HTML whose elements do not nest cleanly (a close tag that does not
    match the open element) is returned unchanged: the page is then only slower, never broken.

    Raises:
        ValueError: ``first_drawn`` is negative.
    """
    if first_drawn < 0:
        raise ValueError(f"first_drawn must be 0 or more, got {first_drawn}")
    parser = _TopLevel(html)
    parser.feed(html)
    parser.close()
    if not parser.balanced or parser.open:
        return html
    drawn = first_drawn
    tables = [i for i, b in enumerate(parser.blocks) if b[0] == "table"]
    if len(tables) > 1:
        drawn = min(drawn, tables[1])
    out = []
    pos = 0
    for tag, cls, start, tag_end, end in parser.blocks[drawn:-1]:
        classes = (cls or "").split()
        if tag in _NEVER or FAR in classes:
            continue
        out.append(html[pos:start])
        if tag == "table":
            out.append(f'<div class="{FAR} {FAR}--table">{html[start:end]}</div>')
            pos = end
            continue
        open_tag = html[start:tag_end]
        if cls is None:
            name_end = 1 + len(tag)
            out.append(f'{open_tag[:name_end]} class="{FAR}"{open_tag[name_end:]}')
        else:
            out.append(_add_class(open_tag, FAR))
        pos = tag_end
    out.append(html[pos:])
    return "".join(out)


def _add_class(open_tag: str, name: str) -> str:
    """``open_tag`` (``<tag ... class="a b" ...>``) with ``name`` added to its class attribute."""
    lower = open_tag.lower()
    i = lower.find("class=")
    while i > 0 and not open_tag[i - 1].isspace():
        i = lower.find("class=", i + 1)
    if i < 0:
        raise ValueError(f"no class attribute in {open_tag[:80]!r}")
    j = i + len("class=")
    quote = open_tag[j]
    if quote in "\"'":
        close = open_tag.index(quote, j + 1)
        return f"{open_tag[:close]} {name}{open_tag[close:]}"
    k = j
    while k < len(open_tag) and not open_tag[k].isspace() and open_tag[k] not in ">/":
        k += 1
    return f'{open_tag[:j]}"{open_tag[j:k]} {name}"{open_tag[k:]}'


_CODE_IN_PRE = re.compile(r"(<pre\b[^>]*>(?:<span></span>)?<code)(?![^>]*\btabindex=)(?=[\s>])")


def focusable_code(html: str) -> str:
    """``html`` with every code block's ``<code>`` focusable (``tabindex="0"``).

    Material gives a code block that scrolls sideways a tab stop (and takes it from one that fits)
    when it mounts the block; with ``content.lazy`` (mkdocs.yml) that happens when the block is
    first seen, so a block far down the page would be out of a keyboard's reach until then (axe:
    scrollable-region-focusable). Starting focusable, a block keeps its tab stop until Material
    measures it: one extra stop at worst, never a block out of reach (as a11y.js does for tables).
    """
    return _CODE_IN_PRE.sub(r'\1 tabindex="0"', html)
