"""Every built page opened from disk (``file://``), as a reader of the downloaded folder meets it.

* The pre-rendered content is complete: every content image is loaded (the figures drawn at build
  time), math is already typeset (KaTeX HTML), and every widget shows its default result.
* Each widget stays ``static`` and says plainly, in its status line, that it is a static copy and
  that a web server makes it live; nothing of Pyodide is fetched.
* No console error, no page error, no Content-Security-Policy violation (Chromium applies the
  page's ``'self'`` to ``file:`` URLs: the policy must not break the offline copy), and no request
  to anything but ``file:`` (or ``data:``) URLs.
* Material's offline search still works under the policy (its worker runs in an iframe shim).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from helpers import next_frames

#: Schemes a page opened from disk may request.
OFFLINE_SCHEMES = {"file", "data", "about"}
#: Words the static status line must contain (descent widget runtime, widgets.js MSG.file).
STATIC_WORDS = ("Static", "web server")


def _open(make_page, site_dir, site_page):
    page = make_page(viewport={"width": 1280, "height": 900})
    page.goto((site_dir / site_page).as_uri())
    page.wait_for_load_state("load")
    return page


def _offline_only(page) -> None:
    outside = sorted({u for u in page.descent_requests if urlsplit(u).scheme not in OFFLINE_SCHEMES})
    assert not outside, "requests outside file://:\n" + "\n".join(outside)


def test_page_from_disk_is_complete_and_static(site_page, site_dir, make_page):
    if site_page == "404.html":
        # MkDocs writes 404.html with root-absolute URLs (/assets/...), since a server may show it
        # for any missing path; from disk those name the file system's root. No reader opens it there.
        pytest.skip("404.html uses root-absolute URLs by design; it is only ever served")
    page = _open(make_page, site_dir, site_page)
    widgets = page.locator(".descent-widget[data-widget]").all()
    for w in widgets:
        w.scroll_into_view_if_needed()  # what would start the runtime when served
    page.wait_for_timeout(300)
    for w in widgets:
        # Back on screen to read it: a block far off screen is skipped by the browser
        # (content-visibility, docs/assets/site.css) and its rendered text (innerText) reads empty until
        # the next frame draws it.
        w.scroll_into_view_if_needed()
        next_frames(page)
        name = w.get_attribute("data-widget")
        assert w.get_attribute("data-state") == "static", name
        status = w.locator(".descent-widget__status").inner_text()
        assert all(word in status for word in STATIC_WORDS), f"{name}: status says {status!r}"
        out = w.locator(".descent-widget__output")
        assert out.inner_text().strip(), f"{name}: no pre-rendered result"
        # Issue 13: every control is disabled from file:, so none can disagree with the results. A
        # frame player's buttons (player.js) are the exception: they show frames that are all in the
        # page, so they work from a file too (and so do a frame's chips that jump to a frame); so are the
        # Copy link, Copy as Markdown and Copy as JSON buttons (share.js: the results they copy are the
        # ones shown).
        enabled = w.locator("input:enabled:not(.descent-share__url), select:enabled, "
                            "textarea:enabled:not(.descent-share__url), button:enabled:not([data-player-do])"
                            ":not([data-player-goto]):not([data-action=share]):not([data-action=copy-markdown])"
                            ":not([data-action=copy-json])").count()
        assert enabled == 0, f"{name}: {enabled} controls still enabled from file://"
    # Figures load lazily (descent.site.figures.figure_html): a reader scrolls past each one.
    for img in page.locator(".md-content img").all():
        if img.is_visible():
            img.scroll_into_view_if_needed()
    page.wait_for_function(
        """() => [...document.querySelectorAll('.md-content img')]
            .filter(i => getComputedStyle(i).display !== 'none').every(i => i.complete)""", timeout=10_000)
    images = page.evaluate(
        """() => [...document.querySelectorAll('.md-content img')]
            .filter(i => getComputedStyle(i).display !== 'none')
            .map(i => ({src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0}))"""
    )
    assert all(i["ok"] for i in images), [i for i in images if not i["ok"]]
    raw = (site_dir / site_page).read_text(encoding="utf-8")
    if 'class="arithmatex"' in raw or "\\(" in raw:
        assert page.locator(".katex").count() > 0, "math on the page is not typeset"
    assert not [u for u in page.descent_requests if "/pyodide/" in u]
    assert not page.descent_console_errors, page.descent_console_errors
    _offline_only(page)


def test_offline_search_works_under_the_policy(site_dir, make_page):
    """Search from file:// runs Material's worker through the iframe-worker shim; under the page's
    Content-Security-Policy it must still find pages (descent.site.csp patches the shim)."""
    page = _open(make_page, site_dir, "index.html")
    page.locator(".md-search__input").click()
    page.keyboard.type("KV cache")
    page.wait_for_function(
        "() => (document.querySelector('.md-search-result__meta') || {}).textContent?.match(/\\d+ matching/)",
        timeout=15_000,
    )
    assert page.locator(".md-search-result__item").count() > 0
    assert not page.descent_console_errors, page.descent_console_errors
    _offline_only(page)
