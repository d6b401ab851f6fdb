"""Every built page, as a reader meets it on the served site, in headless chromium.

Parametrised over every page the build makes (``site_page``, conftest.py), with the widgets found
on the page at run time (``.descent-widget[data-widget]``), never from a list typed here:

* the page loads with no console error, no page error, no Content-Security-Policy violation and no
  request to a host other than 127.0.0.1 (``reader.problems()``, conftest.py);
* every widget goes ``live`` (``data-state``) and its output HTML changes when one of its inputs
  changes (the first field whose change changes the result: a select picks another option, a
  segmented choice another button, a range slider moves, a number box takes another valid value,
  a toggle flips, a text field gets more text);
* a bad value in a number box (below its ``min``, or empty) shows the message in that field's
  ``aria-live`` slot, sets ``data-state="error"`` and keeps the last good output;
* light and dark: the palette toggle (docs/overrides/partials/palette.html) swaps the scheme, the body's text and background
  colours change, and each figure shows its ``#only-dark`` image (loaded) instead of ``#only-light``;
* at phone width (390 px) the page does not scroll sideways and every widget fits the screen.

A last test walks every page through Material's instant navigation in one page session: widgets
on later pages go live on the same worker (Pyodide's wasm fetched once), with no error or
CSP violation.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from helpers import next_frames
from playwright.sync_api import expect

#: Milliseconds to wait for Pyodide + the descent wheel (about 3 s here; CI machines are slower).
LIVE_TIMEOUT_MS = 90_000
#: Milliseconds to wait for one recomputation in the worker.
RECOMPUTE_TIMEOUT_MS = 10_000
#: Milliseconds to wait for an input change that does not change the output before trying the next.
NO_CHANGE_MS = 3_000
WIDGET = ".descent-widget[data-widget]"
VIEWPORT = {"width": 1280, "height": 900}

#: Non-HTML page folders of the built site.
NOT_PAGE_DIRS = {"assets", "search", "figures"}


def built_pages(site_dir: Path) -> list[str]:
    out = []
    for p in site_dir.rglob("*.html"):
        rel = p.relative_to(site_dir)
        if rel.parts[0] not in NOT_PAGE_DIRS:
            out.append(rel.as_posix())
    return sorted(out)


def test_parametrised_pages_are_the_built_pages(site_dir, all_page_paths):
    """The per-page tests cover exactly the pages the build wrote (and those in sitemap.xml)."""
    assert sorted(all_page_paths) == built_pages(site_dir)
    sitemap = (site_dir / "sitemap.xml").read_text()
    locs = [line.split("<loc>")[1].split("</loc>")[0] for line in sitemap.splitlines() if "<loc>" in line]
    in_sitemap = sorted(urlsplit(u).path.lstrip("/") or "index.html" for u in locs)
    assert set(in_sitemap) <= set(all_page_paths), in_sitemap


# --- widgets ---------------------------------------------------------------------------------

_OUTPUT_JS = "w => w.querySelector('.descent-widget__output').innerHTML"


def _output(w) -> str:
    return w.evaluate(_OUTPUT_JS)


def go_live(page, timeout_ms: int = LIVE_TIMEOUT_MS) -> list:
    """Scroll each widget into view and wait until all are live; return their locators."""
    widgets = page.locator(WIDGET).all()
    for w in widgets:
        w.scroll_into_view_if_needed()
    for w in widgets:
        name = w.get_attribute("data-widget")
        try:
            page.wait_for_function(
                "w => w.dataset.state === 'live'", arg=w.element_handle(), timeout=timeout_ms
            )
        except Exception:  # noqa: BLE001  (report the widget's own status line)
            status = w.locator(".descent-widget__status").inner_text()
            pytest.fail(
                f"widget {name!r} did not go live: data-state={w.get_attribute('data-state')!r}, {status!r}"
            )
    return widgets


def _perturbations(w):
    """(description, action) for each field of widget ``w``: one change of that field's value."""
    live = w.get_attribute("data-engine") is not None
    for field in w.locator(".descent-field").all():
        name = field.get_attribute("data-field")
        kind = field.get_attribute("data-kind")
        if live and name in ("prompt", "chat"):
            # Without the model loaded a live widget has results for the recorded prompts only; typed
            # prompts are tested with the model in tests/browser/test_model_in_browser.py.
            continue
        if kind == "select":
            sel = field.locator("select")
            opts = sel.evaluate(
                "s => [...s.options].filter(o => !o.selected && !o.disabled).map(o => o.value)"
            )
            if opts:
                yield f"{name}: select {opts[0]!r}", lambda sel=sel, v=opts[0]: sel.select_option(v)
        elif kind == "segmented":
            radios = field.locator("input[type=radio]")
            free = radios.evaluate_all("rs => rs.map((r, i) => [i, r.checked, r.disabled, r.value])")
            free = [(i, v) for i, checked, disabled, v in free if not checked and not disabled]
            if free:
                i, v = free[0]
                radio = radios.nth(i)
                # A click on the radio itself, as a click on its (styled) label would do.
                yield f"{name}: choose {v!r}", lambda r=radio: r.evaluate("r => r.click()")
        elif kind == "range":
            rng = field.locator(".descent-field__range")
            yield (
                f"{name}: move the slider",
                lambda r=rng: r.evaluate(
                    """r => { const lo = Number(r.min), hi = Number(r.max), v = Number(r.value);
                          const to = v < (lo + hi) / 2 ? lo + 0.75 * (hi - lo) : lo + 0.25 * (hi - lo);
                          r.value = String(to); r.dispatchEvent(new Event('input', {bubbles: true})); }"""
                ),
            )
        elif kind == "number":
            num = field.locator("input[type=number]")
            new = num.evaluate(
                """n => { const v = Number(n.value), lo = n.min === '' ? -Infinity : Number(n.min),
                                hi = n.max === '' ? Infinity : Number(n.max), s = Number(n.step) || 1;
                          return String(v + s <= hi ? v + s : v - s >= lo ? v - s : v); }"""
            )
            yield f"{name}: number {new}", lambda n=num, v=new: n.fill(v)
        elif kind == "toggle":
            box = field.locator("input[type=checkbox]")
            yield f"{name}: toggle", lambda b=box: b.click()
        elif kind == "text":
            box = field.locator("textarea, input").first
            yield f"{name}: type", lambda b=box: (b.click(), b.press("End"), b.type(" and then"))


def check_recomputes(page, w) -> str:
    """Change the widget's fields one at a time until the output HTML changes; return which change did."""
    name = w.get_attribute("data-widget")
    tried = []
    for what, act in _perturbations(w):
        before = _output(w)
        act()
        try:
            page.wait_for_function(
                f"([w, b]) => ({_OUTPUT_JS})(w) !== b && w.dataset.state === 'live'",
                arg=[w.element_handle(), before],
                timeout=NO_CHANGE_MS,
            )
            return what
        except Exception:  # noqa: BLE001  (this change left the output alone: try the next field)
            tried.append(what)
            assert w.get_attribute("data-state") != "error", f"{name}: {what} was refused: {_field_errors(w)}"
    pytest.fail(f"widget {name!r}: no input change changed the output (tried {tried})")


def _field_errors(w) -> list[str]:
    return [t for t in w.locator(".descent-field__error").all_inner_texts() if t]


def check_bad_number(page, w) -> bool:
    """A bad value in the widget's first number box: inline message, error state, last output kept.

    Returns False when the widget has no number box.
    """
    name = w.get_attribute("data-widget")
    num = w.locator("input[type=number]").first
    if num.count() == 0:
        return False
    field_name = num.evaluate("n => n.closest('.descent-field').dataset.field")
    field = w.locator(f'.descent-field[data-field="{field_name}"]')
    good = num.input_value()
    low = num.get_attribute("min")
    bad = "" if low in (None, "") else repr(float(low) - 1 - abs(float(low)))
    before = _output(w)
    num.fill(bad)
    page.wait_for_function(
        "w => w.dataset.state === 'error'", arg=w.element_handle(), timeout=RECOMPUTE_TIMEOUT_MS
    )
    slot = field.locator(".descent-field__error")
    message = slot.inner_text()
    assert message.strip(), f"{name}: bad value {bad!r} gave no inline message"
    live = slot.evaluate("s => s.closest('[aria-live]') !== null")
    assert live, f"{name}: the error slot is not in an aria-live region"
    assert num.get_attribute("aria-invalid") == "true"
    assert _output(w) == before, f"{name}: the output changed on a bad value"
    # Back to the good value: live again, message cleared.
    num.fill(good)
    page.wait_for_function(
        "w => w.dataset.state === 'live'", arg=w.element_handle(), timeout=RECOMPUTE_TIMEOUT_MS
    )
    assert slot.inner_text() == ""
    return True


# --- light and dark --------------------------------------------------------------------------

_SCHEME_JS = """() => {
  const content = document.querySelector('.md-content') || document.body;
  return {
    scheme: document.body.getAttribute('data-md-color-scheme'),
    bg: getComputedStyle(document.body).backgroundColor,
    fg: getComputedStyle(content).color,
    figures: [...document.querySelectorAll('img[src*="#only-dark"]')].map(i => ({
      src: i.getAttribute('src'),
      shown: getComputedStyle(i).display !== 'none',
      loaded: i.complete && i.naturalWidth > 0,
      light_shown: [...(i.closest('figure') || i.parentElement).querySelectorAll('img[src*="#only-light"]')]
        .some(l => getComputedStyle(l).display !== 'none'),
    })),
  };
}"""


def toggle_scheme(page) -> None:
    page.locator('form[data-descent-palette] label:not([hidden])').first.click()


def check_schemes(page) -> None:
    if page.evaluate("document.body.getAttribute('data-md-color-scheme')") != "default":
        toggle_scheme(page)  # a stored choice from an earlier page of the same session
        page.wait_for_function("() => document.body.getAttribute('data-md-color-scheme') === 'default'")
    light = page.evaluate(_SCHEME_JS)
    assert light["scheme"] == "default", light
    for f in light["figures"]:
        assert not f["shown"] and f["light_shown"], f"light scheme shows the dark figure {f['src']}"
    toggle_scheme(page)
    page.wait_for_function("() => document.body.getAttribute('data-md-color-scheme') === 'slate'")
    # Figures load lazily (descent.site.figures.figure_html): a reader scrolls to each one.
    for img in page.locator('img[src*="#only-dark"]').all():
        img.scroll_into_view_if_needed()
    page.wait_for_function(
        "() => [...document.querySelectorAll('img[src*=\"#only-dark\"]')].every(i => i.complete)",
        timeout=10_000,
    )
    dark = page.evaluate(_SCHEME_JS)
    assert dark["bg"] != light["bg"] and dark["fg"] != light["fg"], (light, dark)
    for f in dark["figures"]:
        assert f["shown"] and f["loaded"] and not f["light_shown"], f"dark scheme figure not swapped: {f}"
    toggle_scheme(page)
    page.wait_for_function("() => document.body.getAttribute('data-md-color-scheme') === 'default'")


# --- phone width -----------------------------------------------------------------------------

#: A common phone viewport in CSS px (iPhone 12-15: 390 x 844).
PHONE = {"width": 390, "height": 844}


def check_phone_width(page) -> None:
    """At phone width the page itself does not scroll sideways (wide tables scroll in their own
    wrapper); widgets fit inside the content column."""
    page.set_viewport_size(PHONE)
    try:
        next_frames(page)
        over = page.evaluate(
            """() => ({
                page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
                widgets: [...document.querySelectorAll('.descent-widget[data-widget]')]
                  .filter(w => w.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
                  .map(w => w.dataset.widget),
                // Elements that stick out and no scrolling/clipping ancestor contains, for the message.
                culprits: [...document.querySelectorAll('body *')]
                  .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
                  .filter(e => { for (let p = e.parentElement; p; p = p.parentElement)
                                   if (getComputedStyle(p).overflowX !== 'visible') return false;
                                 return true; })
                  .slice(-5)
                  .map(e => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')} in `
                            + `${(e.closest('[class*="descent-"]') || {}).className} `
                            + `(right ${Math.round(e.getBoundingClientRect().right)} px)`),
            })"""
        )
        assert over["page"] <= 1, (
            f"the page scrolls sideways by {over['page']} px at {PHONE['width']} px: {over['culprits']}"
        )
        assert not over["widgets"], f"widgets wider than a {PHONE['width']} px screen: {over['widgets']}"
    finally:
        page.set_viewport_size(VIEWPORT)


# --- the tests -------------------------------------------------------------------------------


def test_page(site_page, site_dir, reader):
    """Visited by instant navigation in one page session per module (``reader``, conftest.py), so
    Pyodide loads once for all the pages; problems are counted per visit."""
    assert (site_dir / site_page).is_file(), f"{site_page} was not built"
    reader.visit(site_page)
    page = reader.page
    assert page.url.endswith(site_page), page.url
    for w in go_live(page):
        if w.locator(".descent-field").count():  # the model's load panel has no inputs
            check_recomputes(page, w)
        check_bad_number(page, w)
    check_schemes(page)
    check_phone_width(page)
    problems = reader.problems()
    assert not problems, "\n".join(problems)


def _wasm_fetches(page) -> int:
    # Pyodide's own request in boot/ is an 8-byte stand-in (worker.js compiles the real wasm itself).
    return len([u for u in page.descent_requests if u.endswith("pyodide.asm.wasm") and "/boot/" not in u])


@pytest.mark.slow
def test_instant_navigation_through_every_page(site_dir, server, make_page, all_page_paths):
    """Start at the home page and follow Material's footer "Next" link to the end; instant
    navigation swaps pages in place, so the widget worker (and Pyodide) survives across pages."""
    sitemap = (site_dir / "sitemap.xml").read_text()
    loc = urlsplit(sitemap.split("<loc>", 1)[1].split("</loc>", 1)[0]) if "<loc>" in sitemap else None
    # Material's instant navigation rewrites a sitemap URL's scheme and host, not its port.
    if loc is None or loc.port != urlsplit(server).port:
        pytest.skip(f"the site was built for another port than {server}'s (site_url): no instant navigation")
    page = make_page(viewport=VIEWPORT)
    page.goto(server + "index.html")
    seen = [page.url]
    while True:
        go_live(page)
        nxt = page.locator("a.md-footer__link--next")
        if nxt.count() == 0:
            break
        target = nxt.evaluate("a => a.href")
        title = page.locator("article h1").first.inner_text()
        # A click dispatched on the link itself, as Reader.visit does: Playwright's mouse click aims
        # at where the link was, and a far table drawn as the footer scrolls into view (lazy.js) can
        # move it (the click then lands elsewhere and the address never changes: seen once in CI).
        nxt.evaluate("a => a.click()")
        # The address changes before Material swaps the new content in: wait for the new page's
        # own heading, or the next click would follow the old page's footer link again.
        expect(page).to_have_url(target)
        expect(page.locator("article h1").first).not_to_have_text(title)
        page.wait_for_load_state()
        # The page's own scripts have started (start.js), and a frame drawn, before the next click.
        expect(page.locator("html")).to_have_attribute("data-descent-started", urlsplit(target).path)
        next_frames(page)
        seen.append(page.url)
    visited = sorted(urlsplit(u).path.lstrip("/") or "index.html" for u in seen)
    assert set(visited) == {p for p in all_page_paths if p != "404.html"}, visited
    # Instant navigation really happened: one document load (the bundle's script fetched once).
    assert len([u for u in page.descent_requests if "/assets/javascripts/bundle." in u]) == 1, [u for u in page.descent_requests if "/assets/javascripts/bundle." in u or u.endswith(".html")]
    assert _wasm_fetches(page) <= 1
    assert not page.descent_console_errors, page.descent_console_errors
