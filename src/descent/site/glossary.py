"""The site's glossary: ONE file of abbreviations, ``docs/includes/abbreviations.md``.

``pymdownx.snippets`` appends that file to every page (``auto_append`` in mkdocs.yml), so the
``abbr`` extension gives each abbreviation a tooltip wherever a page uses it; the
``<!-- descent:table glossary -->`` shortcode shows the same entries as a table on the glossary
page. Adding a term is one line in that file.
"""

from __future__ import annotations

import re
from pathlib import Path

from descent.site.shortcodes import table
from descent.site.values.text import md_table

__all__ = ["GLOSSARY_FILE", "SOURCE", "entries", "glossary_table"]

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
