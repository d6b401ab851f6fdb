"""Content tables arrive already in Material's scroll wrapper, so Material's start-up leaves them be.

Material's start-up takes every content table without a class (``table:not([class])``) out of the
page and puts it back inside two ``<div>`` (``.md-typeset__scrollwrap`` > ``.md-typeset__table``),
so a wide table scrolls sideways inside the column. Moving a table throws away its layout: the
browser restyles and lays it out again, and Material then asks for the header's height, which does
that at once, inside its start-up task. On Reference > Accelerators (a 22-row table first, 22 more
below) and the Glossary (a 51-row table first) that task was Lighthouse's longest under its 4x
mobile slowdown, and their mobile scores sat around 0.90 (0.84-0.94 over runs).

So the build writes the wrapper itself (:func:`prewrap`) and gives each table the class
:data:`CLASS`: Material's query then finds no table to move. A class also takes the table out of
Material's table stylesheet, which is written for ``table:not([class])``; :func:`material_table_css`
copies those rules for the class from Material's own stylesheet at build time, so a Material upgrade
brings its table style along (``assets/descent/content-tables.css``, listed in mkdocs.yml).

A table :func:`prewrap` leaves bare (in HTML whose tables do not nest cleanly) is still wrapped and
styled by Material at start-up, as before, and site.css names both kinds: slower, never unstyled.
"""

from __future__ import annotations

import functools
import re
from html.parser import HTMLParser
from pathlib import Path

import tinycss2

__all__ = ["CLASS", "CSS_PATH", "TableCssError", "material_stylesheet", "material_table_css", "prewrap", "table_css"]

#: The class every content table gets at build time (Material wraps only tables without one).
CLASS = "descent-content-table"
#: Where the generated table stylesheet goes in the site (mkdocs.yml's extra_css lists it).
CSS_PATH = "assets/descent/content-tables.css"
#: The selector Material's stylesheet and its start-up use for content tables.
MATERIAL_SELECTOR = "table:not([class])"

#: Elements whose content is text (HTML's RCDATA; Python's parser still reports tags inside them).
_TEXT_ONLY = {"textarea", "title"}
#: Material's selector where it stands as a whole compound start (not the tail of another name).
_SELECTOR = re.compile(r"(?<![\w-])table:not\(\[class\]\)")

#: What Material's start-up puts around a table (its ``renderTable``, templates/table/index.tsx).
_OPEN = '<div class="md-typeset__scrollwrap"><div class="md-typeset__table">'
_CLOSE = "</div></div>"


class TableCssError(ValueError):
    """Material's stylesheet cannot be found, or has no rule for ``table:not([class])``."""


class _Tables(HTMLParser):
    """Each ``<table>``: ``[start, end of start tag, has a class, end]`` (end None while open)."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=False)
        self.html = html
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", html)]
        self.tables: list[list] = []
        self.open: list[int] = []  # indexes into tables, innermost last
        self.balanced = True
        self.text_only: str | None = None  # inside <textarea> or <title>: what looks like a tag is text

    def _offset(self) -> int:
        line, col = self.getpos()
        return self.line_starts[line - 1] + col

    def handle_starttag(self, tag, attrs):
        if self.text_only is None and tag in _TEXT_ONLY:
            self.text_only = tag
        if tag != "table" or self.text_only is not None:
            return
        start = self._offset()
        has_class = any(name == "class" for name, _ in attrs)
        self.tables.append([start, start + len(self.get_starttag_text() or ""), has_class, None])
        self.open.append(len(self.tables) - 1)

    def handle_startendtag(self, tag, attrs):
        if tag == "table" and self.text_only is None:
            self.balanced = False  # <table/> is not HTML: leave the page to Material

    def handle_endtag(self, tag):
        if tag == self.text_only:
            self.text_only = None
        if tag != "table" or self.text_only is not None:
            return
        if not self.open:
            self.balanced = False
            return
        start = self._offset()
        self.tables[self.open.pop()][3] = self.html.index(">", start) + 1


def prewrap(html: str) -> str:
    """``html`` (a page's content) with every table that has no class attribute given the class
    :data:`CLASS` and put inside Material's scroll wrapper, as Material's start-up would.

    Tables with a class (the widgets' own) are left alone, as Material leaves them. HTML whose
    ``<table>`` tags do not pair up is returned unchanged: Material then wraps its tables at start-up.
    """
    parser = _Tables(html)
    parser.feed(html)
    parser.close()
    if not parser.balanced or parser.open:
        return html
    # (start, end, replacement): a start tag replaced, or a wrapper's close inserted after </table>.
    # Sorted by position; at one offset the insertion (empty span) comes first, so "</table>" +
    # close of one table precedes the next table's opening.
    edits: list[tuple[int, int, str]] = []
    for start, tag_end, has_class, end in parser.tables:
        if has_class:
            continue
        open_tag = html[start:tag_end]
        edits.append((start, tag_end, f'{_OPEN}{open_tag[:6]} class="{CLASS}"{open_tag[6:]}'))
        edits.append((end, end, _CLOSE))
    out, pos = [], 0
    for start, end, text in sorted(edits):
        out += [html[pos:start], text]
        pos = end
    out.append(html[pos:])
    return "".join(out)


def material_stylesheet() -> Path:
    """The path of Material's main stylesheet (``material/templates/assets/stylesheets/main.*.min.css``).

    Raises:
        TableCssError: Material is not installed, or the folder holds no such file or more than one.
    """
    try:
        import material
    except ImportError as e:
        raise TableCssError(f"mkdocs-material is not installed ({e}); pip install 'descent[build]'") from None
    folder = Path(material.__file__).parent / "templates" / "assets" / "stylesheets"
    found = sorted(folder.glob("main.*.min.css"))
    if len(found) != 1:
        raise TableCssError(f"expected one main.*.min.css in {folder}, found {[p.name for p in found]}")
    return found[0]


def material_table_css(css: str, selector: str = f"table.{CLASS}") -> str:
    """Every rule of ``css`` (Material's stylesheet) that styles ``table:not([class])``, with that
    selector replaced by ``selector``; rules inside ``@media`` and ``@supports`` keep their
    condition; of a rule's selector list only the selectors that name ``table:not([class])`` are
    kept. One rule per line.

    ``table.descent-content-table`` has the same specificity as ``table:not([class])`` (one type, one
    class or attribute). The copy is loaded after Material's stylesheet (mkdocs.yml's extra_css), so
    a rule of equal specificity elsewhere that styles the same property of these tables would now
    lose to it: none does (a copied table's computed style equals a bare one's under Material's
    rules: tests/browser/test_layout_cost.py).

    Raises:
        TableCssError: ``css`` has no rule for ``table:not([class])`` (Material renamed its selector:
            the copy would silently leave the tables unstyled), or has one where this copy does not
            look (``@layer``, ``@container``, nested rules): a rule would be silently dropped.
    """
    out: list[str] = []
    copied = 0

    def selectors(prelude) -> list[str]:
        """The prelude's selector list, split at its top-level commas."""
        items, current = [], []
        for token in prelude:
            if token.type == "literal" and token.value == ",":
                items.append(current)
                current = []
            else:
                current.append(token)
        items.append(current)
        return [tinycss2.serialize(item).strip() for item in items]

    def walk(rules, acc: list[str]) -> None:
        nonlocal copied
        for rule in rules:
            if rule.type == "qualified-rule":
                kept = [_SELECTOR.sub(selector, item) for item in selectors(rule.prelude) if _SELECTOR.search(item)]
                if kept:
                    copied += len(kept)
                    acc.append(f"{','.join(kept)}{{{tinycss2.serialize(rule.content)}}}")
            elif rule.type == "at-rule" and rule.content is not None and rule.lower_at_keyword in ("media", "supports"):
                inner: list[str] = []
                walk(tinycss2.parse_blocks_contents(rule.content, skip_whitespace=True, skip_comments=True), inner)
                if inner:
                    acc.append(f"@{rule.at_keyword} {tinycss2.serialize(rule.prelude).strip()}{{{''.join(inner)}}}")

    walk(tinycss2.parse_stylesheet(css, skip_whitespace=True, skip_comments=True), out)
    if not out:
        raise TableCssError(
            f"Material's stylesheet has no rule for {MATERIAL_SELECTOR}: descent.site.tables copies "
            "those rules for its pre-wrapped tables; check how this Material version styles tables")
    present = len(_SELECTOR.findall(re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)))
    if copied != present:
        raise TableCssError(
            f"Material's stylesheet names {MATERIAL_SELECTOR} {present} times but descent.site.tables "
            f"copied {copied} (a rule under @layer, @container or nesting?): extend material_table_css")
    return "\n".join(out) + "\n"


def table_css() -> str:
    """:func:`material_table_css` of the installed Material's stylesheet (what the build writes to
    :data:`CSS_PATH`), computed once per stylesheet file: a ``mkdocs serve`` rebuild reuses it
    (reading the stylesheet takes about 0.1 s).

    Raises:
        TableCssError: as :func:`material_stylesheet` and :func:`material_table_css`.
    """
    path = material_stylesheet()
    return _table_css_of(path, path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _table_css_of(path: Path, mtime_ns: int) -> str:
    return material_table_css(path.read_text(encoding="utf-8"))
