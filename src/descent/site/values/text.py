"""Running-text and Markdown formatting for the value and table shortcodes: thin names over
:mod:`descent.units` (the one formatter) and escaping for text from the catalog.
"""

from __future__ import annotations

import re
from typing import Any

from descent.units import format_bytes, format_number


def fmt_bytes(n: float, unit: str = "auto", sig: int = 3) -> str:
    """Bytes with a labelled unit in running text: :func:`descent.units.format_bytes` with
    trailing zeros dropped and a plain byte count spelled out ("512 bytes")."""
    return format_bytes(n, unit, sig, trim=True, words=True)

def fmt_num(x: float, sig: int = 3) -> str:
    """``x`` to ``sig`` significant figures, trailing zeros dropped (:func:`descent.units.format_number`)."""
    return format_number(x, sig, trim=True)

#: Characters with a meaning in the site's Markdown (Python-Markdown: escapes, code, emphasis,
#: links; tables: |; attr_list: {...}; arithmatex: $...$) or in HTML (<, &), written as numeric
#: character references by :func:`md_text`. (No extension that reads ~ ^ = + : is enabled.)
_MD_SPECIAL = re.compile(r"[\\`*_{}\[\]<>|$&]")

def md_text(text: Any) -> str:
    """``text`` as literal Markdown: every character that Markdown, a table, an attribute list,
    arithmatex or HTML would read as markup is a character reference (``<`` is ``&#60;``), so the
    reader sees exactly the text. For text from the catalog (names, notes, sources), which is data,
    never markup. Line breaks become spaces."""
    return _MD_SPECIAL.sub(lambda m: f"&#{ord(m.group(0))};", " ".join(str(text).split("\n")))

#: Backtick code spans inside a table cell (left as they are: a character reference there is literal).
_CELL_CODE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")

def _md_cell(x: Any, html: bool = False) -> str:
    text = str(x).replace("|", "\\|").replace("\n", " ")
    if html:
        return text
    # No raw HTML in a cell, whatever the cell's text came from: < and > outside code spans are
    # written as references (the reader sees them; the browser never parses a tag).
    out, last = [], 0
    for m in _CELL_CODE.finditer(text):
        out.append(text[last:m.start()].replace("<", "&lt;").replace(">", "&gt;"))
        out.append(m.group(0))
        last = m.end()
    out.append(text[last:].replace("<", "&lt;").replace(">", "&gt;"))
    return "".join(out)

def md_table(header: list[str], rows: list[list[Any]], align: str | None = None, *, html: bool = False) -> str:
    """A Markdown table, surrounded by blank lines. ``align``: one char per column, ``l`` or ``r``.

    Cells are Markdown (links, code spans), but never raw HTML: ``<`` and ``>`` outside code spans
    are escaped, unless ``html`` (for a table whose every cell is written by descent's own code).
    Text from the catalog should still go through :func:`md_text`, which also neutralises Markdown.
    """
    align = align or "l" * len(header)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(_md_cell(h, html) for h in header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(_md_cell(c, html) for c in row) + " |" for row in rows]
    return "\n\n" + "\n".join(lines) + "\n\n"

_URL = re.compile(r"https?://[^\s;,()\[\]<>\"'`\\|]+[^\s;,()\[\]<>\"'`\\|.]")

def md_link_source(src: str) -> str:
    """A source string as Markdown: every URL in it becomes a link, the rest stays text (escaped
    with :func:`md_text`: a source is data from the catalog)."""
    out, last = [], 0
    for m in _URL.finditer(src):
        out.append(md_text(src[last:m.start()]))
        out.append(f"[{md_text(m.group(0).split('://', 1)[1])}]({m.group(0)})")
        last = m.end()
    out.append(md_text(src[last:]))
    return "".join(out)
