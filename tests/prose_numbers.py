"""Numbers per sentence in a built page's running prose (issue 23: one idea per paragraph).

The same counting as the project's review tool (shared/tools/numbers-per-sentence, which CI's clean
checkout does not have): the ``<p>`` elements inside the page's ``<article>`` that are not inside a
table, an aside (``<details>``, an admonition), a widget, a figure, code or navigation; each split
into sentences at ``.``, ``!`` or ``?`` followed by space and a capital; sentences under four words
dropped; a number is a run of digits (with ``,`` or ``.`` inside) not glued to a word or a dot.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

SKIP_TAGS = {"table", "details", "figure", "pre", "code", "script", "style", "nav", "header", "footer", "aside"}
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")


class _Prose(HTMLParser):
    """Collects the text of the article's running-prose paragraphs."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, bool]] = []
        self.paras: list[str] = []
        self.cur: list[str] | None = None
        self.skip = 0
        self.in_article = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = a.get("class", "") or ""
        if tag == "article":
            self.in_article += 1
        bad = (tag in SKIP_TAGS or "admonition" in cls or "descent-widget" in cls
               or a.get("data-widget") or "md-typeset__scrollwrap" in cls)
        self.stack.append((tag, bool(bad)))
        if bad:
            self.skip += 1
        if tag == "p" and self.in_article and not self.skip:
            self.cur = []

    def handle_endtag(self, tag):
        while self.stack:
            t, bad = self.stack.pop()
            if bad:
                self.skip -= 1
            if t == "p" and self.cur is not None and t == tag:
                self.paras.append("".join(self.cur))
                self.cur = None
            if t == "article":
                self.in_article -= 1
            if t == tag:
                break

    def handle_data(self, data):
        if self.cur is not None and not self.skip:
            self.cur.append(data)


def sentences(page_html: str) -> list[tuple[str, int]]:
    """Each running-prose sentence of ``page_html`` (four words or more) with its count of numbers."""
    parser = _Prose()
    parser.feed(page_html)
    out = []
    for para in parser.paras:
        for s in SENTENCE_END.split(html.unescape(para)):
            if len(s.split()) < 4:
                continue
            out.append((s, len(NUMBER.findall(s))))
    return out
