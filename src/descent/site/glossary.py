"""The site's glossary: ONE file of abbreviations, ``docs/includes/abbreviations.md``.

``pymdownx.snippets`` appends that file to every page (``auto_append`` in mkdocs.yml), so the
``abbr`` extension gives each abbreviation a tooltip wherever a page uses it; the
``<!-- descent:table glossary -->`` shortcode shows the same entries as a table on the glossary
page. Adding a term is one line in that file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from descent.site.shortcodes import table
from descent.site.values.text import md_table

__all__ = ["GLOSSARY_FILE", "GLOSSARY_PAGE", "SOURCE", "TERMS_FILE", "Term", "entries", "glossary_table", "glossary_terms",
           "link_terms", "terms"]

#: Where the abbreviations live, relative to the docs folder (mkdocs.yml's snippets base_path).
GLOSSARY_FILE = Path("includes") / "abbreviations.md"

#: Filled in by the site hook (on_config) with the docs folder.
SOURCE: list[Path] = []

_ENTRY = re.compile(r"^\*\[(?P<term>[^\]]+)\]:\s*(?P<text>\S.*)$")


def entries(path: Path) -> list[tuple[str, str]]:
    """``[(term, definition), ...]`` in file order, from lines ``*[TERM]: definition``.

    Raises:
        ValueError: a line that starts like an entry but is malformed, a term given twice, or no entries.
    """
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("*["):
            continue
        m = _ENTRY.match(line)
        if not m:
            raise ValueError(f"{path}:{n}: a glossary entry is *[TERM]: definition, got {line!r}")
        term = m.group("term")
        if term in seen:
            raise ValueError(f"{path}:{n}: {term!r} is defined twice")
        seen.add(term)
        out.append((term, m.group("text").strip()))
    if not out:
        raise ValueError(f"{path}: no glossary entries (*[TERM]: definition)")
    return out


@table("glossary", doc="Every abbreviation of the site's glossary (docs/includes/abbreviations.md)")
def glossary_table() -> str:
    """The glossary as a table: abbreviation, then what it stands for and means."""
    if not SOURCE:
        raise ValueError("the glossary table needs the site build (the docs folder is set in on_config)")
    rows = []
    for term, text in entries(SOURCE[0] / GLOSSARY_FILE):
        name, _, meaning = text.partition(": ")
        rows.append([f"**{term}**", name, meaning])
    return md_table(["abbreviation", "stands for", "what it is"], rows, "lll")


# ---------------------------------------------------------------------------------------------
# Concepts: docs/includes/terms.toml, shown on the glossary page and linked at their first use
# ---------------------------------------------------------------------------------------------

#: The concepts a reader looks up (prefill, KV cache, roofline, ...), relative to the docs folder.
TERMS_FILE = Path("includes") / "terms.toml"

#: The page the terms link to, relative to the docs folder.
GLOSSARY_PAGE = "glossary.md"


@dataclass(frozen=True)
class Term:
    """One concept: ``id`` (its anchor on the glossary page), ``name``, ``match`` (the words linked
    to it), ``part`` (the page and heading that explain it, relative to the docs folder), ``text``."""

    id: str
    name: str
    match: tuple[str, ...]
    part: str
    text: str

    def pattern(self) -> str:
        """A regex alternative for its words: exact where a word has a capital, else any case; a
        space matches any run of white space (a line break in the Markdown source)."""
        alts = []
        for w in sorted(self.match, key=len, reverse=True):
            e = re.escape(w).replace(r"\ ", r"\s+")
            alts.append(e if any(c.isupper() for c in w) else f"(?i:{e})")
        return "|".join(alts)


_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def terms(path: Path) -> list[Term]:
    """The concepts of ``terms.toml`` in file order.

    Raises:
        ValueError: a missing or empty field, an id that is not a lower-case slug, an id or a word
            given twice, or no terms.
    """
    import tomllib

    data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    out: list[Term] = []
    ids: set[str] = set()
    words: set[str] = set()
    for n, row in enumerate(data.get("term", []), 1):
        missing = [k for k in ("id", "name", "match", "part", "text") if not row.get(k)]
        if missing:
            raise ValueError(f"{path}: term {n} has no {', '.join(missing)}")
        if not _ID.match(row["id"]) or row["id"] in ids:
            raise ValueError(f"{path}: term {n}: id {row['id']!r} must be a new lower-case slug")
        for w in row["match"]:
            if w.lower() in words:
                raise ValueError(f"{path}: term {row['id']!r}: the word {w!r} is matched twice")
            words.add(w.lower())
        ids.add(row["id"])
        out.append(Term(row["id"], row["name"], tuple(row["match"]), row["part"], row["text"]))
    if not out:
        raise ValueError(f"{path}: no terms ([[term]] tables)")
    return out


def _part_title(part: str) -> str:
    page = part.split("#")[0]
    m = re.match(r"part-(\d)-", page)
    return f"Part {m.group(1)}" if m else page


@table("glossary_terms", doc="Every concept of the site's glossary (docs/includes/terms.toml), with its part")
def glossary_terms() -> str:
    """The concepts as a definition list: name (its anchor), definition, and a link to its part."""
    if not SOURCE:
        raise ValueError("the glossary needs the site build (the docs folder is set in on_config)")
    out = []
    for t in terms(SOURCE[0] / TERMS_FILE):
        out.append(f'<dt id="{t.id}" markdown>{t.name}</dt>\n<dd markdown>{t.text} '
                   f"[Explained in {_part_title(t.part)}]({t.part}).</dd>")
    return '\n\n<dl class="descent-glossary" markdown>\n' + "\n".join(out) + "\n</dl>\n\n"


#: Elements whose text is never linked: headings, code, math, links, widgets' controls, asides'
#: titles, tables and figures (what shortcodes and widgets print).
_SKIP_TAGS = {"a", "code", "pre", "kbd", "samp", "h1", "h2", "h3", "h4", "h5", "h6", "script", "style", "svg",
              "math", "button", "label", "select", "option", "textarea", "summary", "figure", "figcaption",
              "table", "dt", "sup", "sub", "nav", "form"}
#: Classes whose element's text is never linked (KaTeX, widgets, figures, formulas, aside titles).
_SKIP_CLASS = re.compile(r"\b(katex|arithmatex|descent-widget|descent-figure|descent-math|descent-formula[-\w]*|"
                         r"descent-view|admonition-title|headerlink|md-[\w-]+)\b")
#: Running prose: text inside these, and in none of the above, is linked.
_PROSE_TAGS = {"p", "li", "dd"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_TOKEN = re.compile(r"(<!--.*?-->|<[^>]+>)", re.S)
_TAG = re.compile(r"<\s*(/)?\s*([a-zA-Z][\w-]*)([^>]*?)(/)?\s*>", re.S)
_CLASS = re.compile(r"""\bclass\s*=\s*(?:"([^"]*)"|'([^']*)')""")


def _walk(html: str):
    """Yield (token, where) over ``html``: ``where`` is None for tags, comments and text outside
    running prose (see ``_SKIP_TAGS``, ``_SKIP_CLASS``, ``_PROSE_TAGS``); for prose text it is 0 in
    the page's main flow and n > 0 inside the n-th collapsible aside (``<details>``)."""
    stack: list[tuple[str, bool, bool, int]] = []  # (tag, skips, is prose, opens an aside)
    skip = prose = 0
    asides: list[int] = []
    count = 0
    for tok in _TOKEN.split(html):
        if not tok:
            continue
        if tok.startswith("<!--"):
            yield tok, None
            continue
        m = _TAG.match(tok) if tok.startswith("<") else None
        if m is None:
            yield tok, (asides[-1] if asides else 0) if skip == 0 and prose > 0 else None
            continue
        closing, name, attrs, selfclose = m.group(1), m.group(2).lower(), m.group(3), m.group(4)
        if closing:
            while stack:
                tag, s, p, a = stack.pop()
                skip -= s
                prose -= p
                if a:
                    asides.pop()
                if tag == name:
                    break
        elif name not in _VOID and not selfclose:
            cm = _CLASS.search(attrs)
            s = name in _SKIP_TAGS or bool(cm and _SKIP_CLASS.search(cm.group(1) or cm.group(2) or ""))
            p = name in _PROSE_TAGS
            a = name == "details"
            if a:
                count += 1
                asides.append(count)
            stack.append((name, s, p, a))
            skip += s
            prose += p
        yield tok, None


def link_terms(html: str, all_terms: list[Term], href: dict[str, str]) -> str:
    """``html`` with the first use of each term in running prose linked to its glossary entry.

    The main flow links a term once. A collapsible aside (``<details>``), which a reader may never
    open, links the first use inside it of a term the main flow has not linked above it.
    ``href`` maps a term's id to the link's target (the glossary page's URL relative to this page,
    with the anchor). A term inside an ``<abbr>`` (the abbreviation tooltips) is linked around it,
    together with the words after it that complete the term ("<abbr>KV</abbr> cache"). Text in
    headings, code, math, links, widgets, figures and tables is never touched.
    """
    if not all_terms:
        return html
    by_group = {f"t{i}": t for i, t in enumerate(all_terms)}
    rx = re.compile(r"(?<![\w-])(?:" + "|".join(f"(?P<{g}>{t.pattern()})" for g, t in by_group.items())
                    + r")(?![\w-])")
    linked: dict[int, set[str]] = {0: set()}  # the main flow's links, and each aside's
    out: list[str] = []
    toks = list(_walk(html))
    i = 0

    def link(term: Term, inner: str) -> str:
        return f'<a class="descent-term" href="{href[term.id]}">{inner}</a>'

    def fresh(term: Term, where: int) -> bool:
        """Not linked yet where the reader is: in the main flow, or in this aside or above it."""
        here = linked.setdefault(where, set())
        if term.id in linked[0] or term.id in here:
            return False
        here.add(term.id)
        return True

    def text(s: str, where: int) -> str:
        parts, pos = [], 0
        for m in rx.finditer(s):
            term = by_group[m.lastgroup]
            if fresh(term, where):
                parts += [s[pos:m.start()], link(term, m.group(0))]
                pos = m.end()
        return "".join(parts) + s[pos:]

    while i < len(toks):
        tok, where = toks[i]
        # <abbr ...>X</abbr> in prose, followed by text: link X (and the words completing a term)
        if (tok.lower().startswith("<abbr") and i + 2 < len(toks) and toks[i + 1][1] is not None
                and toks[i + 2][0].lower() == "</abbr>"):
            word, where = toks[i + 1]
            after = toks[i + 3][0] if i + 3 < len(toks) and toks[i + 3][1] is not None else ""
            m = rx.match(word + after)
            if m and m.end() >= len(word) and fresh(by_group[m.lastgroup], where):
                rest = m.end() - len(word)
                out.append(link(by_group[m.lastgroup], tok + word + toks[i + 2][0] + after[:rest]))
                if after:
                    out.append(text(after[rest:], where))
                    i += 4
                else:
                    i += 3
                continue
            out += [tok, word, toks[i + 2][0]]
            i += 3
            continue
        out.append(text(tok, where) if where is not None else tok)
        i += 1
    return "".join(out)
