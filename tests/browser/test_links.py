"""Every internal link and ``#anchor`` in the built HTML resolves.

Parsed with the standard library's ``html.parser`` (no browser): for every built page, each
``<a href>``, ``<link href>`` and ``src`` (img, script, source, iframe) that stays on the site must
name a file the build wrote (a folder URL means its ``index.html``), and a ``#fragment`` must be
an ``id`` (or an ``<a name>``) on the target page. Links to other sites are not followed: no test
may reach the network, and the browser suite's request log already proves nothing is loaded from
elsewhere.
"""

from __future__ import annotations

import html.parser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

#: Attributes that name a URL, per tag.
URL_ATTRS = {
    "a": ("href",),
    "link": ("href",),
    "img": ("src",),
    "script": ("src",),
    "source": ("src",),
    "iframe": ("src",),
}
#: ``<link rel>`` values whose href may point outside the built files (the canonical URL names site_url).
UNCHECKED_LINK_RELS = {"canonical"}
#: A fake origin to resolve relative URLs against (only the path matters).
BASE = "http://site.invalid/"


class _Collect(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.urls: list[tuple[str, str]] = []  # (tag, url)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        if tag == "link" and (a.get("rel") or "").lower() in UNCHECKED_LINK_RELS:
            return
        for attr in URL_ATTRS.get(tag, ()):
            if a.get(attr):
                self.urls.append((tag, a[attr]))


def _parse(path: Path) -> _Collect:
    c = _Collect()
    c.feed(path.read_text(encoding="utf-8"))
    return c


def _target(site_dir: Path, page: str, url: str) -> tuple[Path, str] | None:
    """(file, fragment) that ``url`` on ``page`` names, or None when it leaves the site."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc:
        return None  # http(s):, mailto:, data:, javascript: ...: not a file of this site
    resolved = urlsplit(urljoin(BASE + page, url))
    path = unquote(resolved.path).lstrip("/")
    target = site_dir / path
    if path == "" or path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target, unquote(parts.fragment)


def _parsed(cache: dict[Path, _Collect], path: Path) -> _Collect:
    """``path`` parsed once (``dict.setdefault`` would parse it again for every link to it)."""
    if path not in cache:
        cache[path] = _parse(path)
    return cache[path]


def broken_links(site_dir: Path, site_page: str, cache: dict[Path, _Collect]) -> list[str]:
    """One line per internal URL on ``site_page`` whose file or ``#fragment`` does not exist."""
    page_file = site_dir / site_page
    page = _parsed(cache, page_file)
    broken = []
    for tag, url in page.urls:
        hit = _target(site_dir, site_page, url)
        if hit is None:
            continue
        target, fragment = hit
        if not target.is_file():
            broken.append(f"<{tag}> {url}: no file {target.relative_to(site_dir)}")
            continue
        if (
            fragment
            and target.suffix == ".html"
            and fragment not in _parsed(cache, target).ids
        ):
            broken.append(f"<{tag}> {url}: no id {fragment!r} on {target.relative_to(site_dir)}")
    return broken


@pytest.fixture(scope="module")
def parsed() -> dict[Path, _Collect]:
    return {}


def test_every_internal_link_and_anchor_resolves(site_page, site_dir, parsed):
    page_file = site_dir / site_page
    assert page_file.is_file(), f"{site_page} was not built"
    broken = broken_links(site_dir, site_page, parsed)
    assert parsed[page_file].urls, f"{site_page}: no links at all (the parser found nothing)"
    assert not broken, f"{site_page}: {len(broken)} broken link(s):\n" + "\n".join(broken)


def test_link_checker_catches_a_missing_file_and_a_missing_anchor(tmp_path):
    """The checker itself: a missing page and a missing id are reported; good links, a folder
    URL (its index.html) and other sites are not."""
    (tmp_path / "a.html").write_text(
        '<p id="here">x</p><a href="b.html#nope">b</a><a href="c.html">c</a><a href="#here">self</a>'
        '<a href="b.html#yes">ok</a><a href="sub/">folder</a><a href="https://example.org/x">out</a>'
    )
    (tmp_path / "b.html").write_text('<h2 id="yes">b</h2>')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "index.html").write_text("<p>sub</p>")
    assert broken_links(tmp_path, "a.html", {}) == [
        "<a> b.html#nope: no id 'nope' on b.html",
        "<a> c.html: no file c.html",
    ]
