"""The glossary's concepts (docs/includes/terms.toml): each defined in plain words from the terms
above it, each pointing at the part that explains it, and each linked at its first use in the
running prose of every page (issue 23, section 3).

The site check reads the built HTML with BeautifulSoup, independently of the build's own token
walk (descent.site.glossary.link_terms), and asks: is the first use of each term in a page's prose
inside a link to that term's entry, and does every link land on an id that exists?
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from descent.site import glossary

DOCS = Path(__file__).resolve().parent.parent / "docs"
TERMS = glossary.terms(DOCS / glossary.TERMS_FILE)

#: What issue 23 asks the glossary to cover (a Part 3 or 4 reader's look-ups and their siblings).
REQUIRED = {"prefill", "decode", "kv-cache", "roofline", "arithmetic-intensity", "ridge-point", "goodput",
            "all-reduce", "tensor-core", "sm", "hbm", "continuous-batching", "pagedattention",
            "speculative-decoding", "activations", "nccl", "micro-batch", "collective", "scale-up", "flops",
            "compute-bound", "memory-bound", "ttft", "itl", "quantization", "gqa", "moe"}


def _rx(term: glossary.Term) -> re.Pattern:
    return re.compile(r"(?<![\w-])(?:" + term.pattern() + r")(?![\w-])")


def test_the_glossary_covers_what_a_part_3_or_4_reader_looks_up():
    assert REQUIRED <= {t.id for t in TERMS}, REQUIRED - {t.id for t in TERMS}
    for t in TERMS:
        assert t.part.startswith("part-") and "#" in t.part, t
        assert (DOCS / t.part.split("#")[0]).is_file(), t.part


def test_each_definition_uses_only_the_terms_above_it():
    # Walk the list in order: a definition may name itself and the terms above, nothing below.
    for i, t in enumerate(TERMS):
        later = [u for u in TERMS[i + 1:] if _rx(u).search(t.text)]
        assert not later, f"{t.id} uses {[u.id for u in later]}, defined below it"


def test_link_terms_links_first_use_only_and_leaves_code_headings_math_and_widgets():
    href = {t.id: f"glossary.html#{t.id}" for t in TERMS}
    html = ('<h2>Prefill</h2><p><code>prefill</code> <span class="katex">prefill</span> then prefill, '
            'and prefill again; the <abbr title="x">KV</abbr> cache.</p>'
            '<div class="descent-widget"><p>roofline</p></div><details><summary>roofline</summary><p>roofline, '
            'prefill</p></details><p>roofline</p><details><p>roofline</p></details>')
    out = glossary.link_terms(html, TERMS, href)
    assert out.count('href="glossary.html#prefill"') == 1
    assert '<h2>Prefill</h2><p><code>prefill</code> <span class="katex">prefill</span> then <a class="descent-term" ' \
           'href="glossary.html#prefill">prefill</a>, and prefill again' in out
    assert '<a class="descent-term" href="glossary.html#kv-cache"><abbr title="x">KV</abbr> cache</a>' in out
    # the widget's roofline and the aside's title stay plain; an aside links its own first use of a
    # term the main flow has not linked above it (roofline, not prefill); the main flow links
    # roofline again, and a later aside does not
    assert ('<details><summary>roofline</summary><p><a class="descent-term" href="glossary.html#roofline">'
            'roofline</a>, prefill</p></details>') in out
    assert out.endswith('<p><a class="descent-term" href="glossary.html#roofline">roofline</a></p>'
                        '<details><p>roofline</p></details>')


# ---------------------------------------------------------------------------------------------
# Against the built site
# ---------------------------------------------------------------------------------------------

_SKIP = {"a", "code", "pre", "kbd", "samp", "h1", "h2", "h3", "h4", "h5", "h6", "script", "style", "svg", "math",
         "button", "label", "select", "option", "textarea", "summary", "figure", "figcaption", "table",
         "dt", "sup", "sub", "nav", "form"}
_SKIP_CLASS = re.compile(r"^(katex.*|arithmatex|descent-widget|descent-figure|descent-math|descent-formula.*|"
                         r"descent-view|admonition-title|headerlink|md-.*)$")


def _in_prose(node) -> bool:
    """Text in a <p>, <li> or <dd> of the article with no skipped ancestor (but a glossary link)."""
    prose = False
    for parent in node.parents:
        if parent.name is None or parent.name == "article":
            break
        classes = parent.get("class") or []
        if parent.name == "a" and "descent-term" in classes:
            continue
        if parent.name in _SKIP or any(_SKIP_CLASS.match(c) for c in classes):
            return False
        prose |= parent.name in ("p", "li", "dd")
    return prose


@functools.cache
def _soup(path: Path) -> BeautifulSoup:
    """A built page, parsed once per session (the tests only read it; the build does not change)."""
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _pages(site: Path) -> list[Path]:
    out = [p for p in sorted(site.rglob("*.html"))
           if p.name not in ("glossary.html", "404.html") and "notebooks" not in p.parts and "search" not in p.parts]
    assert any(p.name.startswith("part-3") for p in out), "the built site has no Part 3"
    return out


def _expected_links(soup: BeautifulSoup) -> list[tuple[str, object]]:
    """(term id, text node) for every use the build must link, in document order: the first use of
    each term in the main flow, and in each collapsible aside (<details>) the first use inside it of
    a term the main flow has not linked above it. Abbreviations sit in <abbr>; "KV cache" spans an
    <abbr> and the text after it, so an <abbr>'s text is read with the text that follows it."""
    out: list[tuple[str, object]] = []
    main: set[str] = set()
    asides: dict[int, set[str]] = {}
    for node in soup.find("article").find_all(string=True):
        if not _in_prose(node):
            continue
        aside = node.find_parent("details")
        seen = main if aside is None else asides.setdefault(id(aside), set())
        tail = str(node)
        sib = node.parent.next_sibling if node.parent.name == "abbr" else None
        if sib is not None and isinstance(sib, str):
            tail += str(sib)
        for t in TERMS:
            if t.id in main or t.id in seen:
                continue
            m = _rx(t).search(tail)
            if m and m.start() < len(str(node)):
                seen.add(t.id)
                out.append((t.id, node))
    return out


def test_every_terms_first_use_on_every_page_is_linked(site_dir):
    misses, total = [], 0
    for page in _pages(site_dir):
        soup = _soup(page)
        expected = _expected_links(soup)
        total += len(expected)
        for tid, node in expected:
            link = node.find_parent("a")
            ok = link is not None and "descent-term" in (link.get("class") or []) and \
                link["href"].endswith(f"glossary.html#{tid}")
            if not ok:
                misses.append(f"{page.relative_to(site_dir)}: {tid!r} in {str(node)[:60]!r} is not linked")
        # and nothing more is linked than those uses
        links = soup.select("article a.descent-term")
        if len(links) != len(expected):
            misses.append(f"{page.relative_to(site_dir)}: {len(links)} links for {len(expected)} first uses")
    assert not misses, "\n".join(misses[:30])
    assert total > 60  # the parts use most terms: a walk that found nothing would pass vacuously


def test_term_links_and_part_links_resolve(site_dir):
    gloss = _soup(site_dir / "glossary.html")
    ids = {el["id"] for el in gloss.find_all(id=True)}
    assert {t.id for t in TERMS} <= ids
    # each term's link to its part lands on a heading that exists there
    for t in TERMS:
        dd = gloss.find(id=t.id).find_next_sibling("dd")
        (a,) = [a for a in dd.find_all("a") if a.get("href", "").startswith("part-")]
        page, anchor = a["href"].split("#")
        target = _soup(site_dir / page)
        assert target.find(id=anchor) is not None, f"{t.id}: {a['href']} has no such heading"
    # every glossary link on every page names an entry that exists
    for page in _pages(site_dir):
        soup = _soup(page)
        for a in soup.select("a.descent-term"):
            assert a["href"].split("#")[1] in ids, (page.name, a["href"])


@pytest.mark.parametrize("tid", ["prefill", "kv-cache", "roofline", "ttft"])
def test_part_3_and_4_link_the_core_terms(site_dir, tid):
    text = (site_dir / "part-3-serving-software.html").read_text(encoding="utf-8") + \
        (site_dir / "part-4-hardware.html").read_text(encoding="utf-8")
    assert f'glossary.html#{tid}"' in text


def test_a_term_broken_over_two_source_lines_is_still_found():
    # Markdown keeps the source's line breaks: "grouped-query\nattention" is Part 1's first GQA.
    href = {t.id: f"g.html#{t.id}" for t in TERMS}
    out = glossary.link_terms("<p>heads: <em>grouped-query\nattention</em> and the <abbr>KV</abbr>\ncache</p>",
                              TERMS, href)
    assert '<a class="descent-term" href="g.html#gqa">grouped-query\nattention</a>' in out
    assert '<a class="descent-term" href="g.html#kv-cache"><abbr>KV</abbr>\ncache</a>' in out
