"""Search over http: the index is requested only when the reader reaches for search
(docs/overrides/main.html holds Material's request), and search then works as Material's does.

Why it waits: the index is 141 KB gzip of a page's first download and, on a 2-core machine, about
half a second of CPU (parsed on the main thread, indexed in Material's search worker) taken from the
page and from the widgets' Python while they start (DESIGN.md, "The search index waits").
"""

from __future__ import annotations

import pytest
from helpers import next_frames

PAGE = "part-1-the-transformer.html"
#: How long a page is left alone to show that nothing asks for the index by itself (ms): longer
#: than Material's start-up, which requested it at once before.
IDLE_MS = 1500


def _index_requests(page) -> list[str]:
    return [u for u in page.descent_requests if u.split("?")[0].endswith("/search/search_index.json")]


def _results(page) -> int:
    page.wait_for_function(
        "() => (document.querySelector('.md-search-result__meta') || {}).textContent?.match(/\\d+ matching/)",
        timeout=15_000,
    )
    return page.locator(".md-search-result__item").count()


@pytest.mark.parametrize("how", ["slash key", "click", "tap on a phone"])
def test_the_index_loads_when_search_is_opened_and_finds_pages(how, server, make_page):
    phone = how == "tap on a phone"
    page = make_page(**({"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True} if phone else {}))
    page.goto(server + PAGE)
    page.wait_for_load_state("load")
    page.wait_for_timeout(IDLE_MS)
    assert _index_requests(page) == [], "the search index was requested before the reader reached for search"
    if how == "slash key":
        page.keyboard.press("/")  # Material's shortcut: focuses the search box
    elif how == "click":
        page.locator(".md-search__input").click()
    else:  # the phone's header shows a search button (a label for Material's toggle)
        page.locator('.md-header label[for="__search"]').first.tap()
        next_frames(page)
    page.keyboard.type("KV cache")
    assert _results(page) > 0
    assert len(_index_requests(page)) == 1
    assert not page.descent_console_errors, page.descent_console_errors


def test_a_search_hit_opened_with_h_is_highlighted_at_once(server, make_page):
    """Material highlights the searched words on a page opened from a result (?h=...): that needs
    the index at load, so the request is not held."""
    page = make_page()
    page.goto(server + PAGE + "?h=attention")
    page.wait_for_load_state("load")
    page.wait_for_function("() => document.querySelectorAll('mark[data-md-highlight]').length > 0", timeout=15_000)
    assert len(_index_requests(page)) == 1


def test_search_works_on_the_next_page_after_instant_navigation(server, make_page):
    """The held request is released once per page load: after instant navigation (no new page
    load, the head script does not run again) search still finds pages. (Material itself may
    request the index again on the next page; the HTTP cache answers it.)"""
    page = make_page()
    page.goto(server + PAGE)
    page.wait_for_load_state("load")
    page.locator(".md-search__input").click()
    page.keyboard.type("roofline")
    assert _results(page) > 0
    page.keyboard.press("Escape")
    page.locator('a[href$="part-4-hardware.html"]').first.click()
    page.wait_for_url("**/part-4-hardware.html")
    # The box keeps the last query (Material's behaviour): replace it, typing as a reader does, and
    # wait for hits of the new word (the result list's count line could still be the last query's).
    # Material's search worker may still be building its index after the navigation on a loaded
    # machine, and a query typed before it is ready is answered only at the next keystroke: a
    # reader who sees nothing types again, and so does this test (three tries, 15 s each).
    box = page.locator(".md-search__input")
    hits = "() => [...document.querySelectorAll('.md-search-result mark')].some((m) => m.textContent.toLowerCase() === 'gqa')"
    for attempt in range(3):
        box.fill("")
        box.press_sequentially("GQA", delay=50)
        try:
            page.wait_for_function(hits, timeout=15_000)
            break
        except Exception:  # playwright's TimeoutError
            if attempt == 2:
                raise
    assert page.locator(".md-search-result__item").count() > 0
    assert not page.descent_console_errors, page.descent_console_errors
