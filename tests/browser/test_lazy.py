"""What the build keeps out of the DOM until it is needed (issue 28; descent.site.lazy, lazy.js), on
one load of Part 3 (the page with the most of it) and one without JavaScript.

* At load, the bodies of closed boxes are undrawn: the DOM holds far fewer elements than the same
  page read without JavaScript, where every body is markup (the complete page).
* A click on a box's summary opens it on its body (KaTeX and all); an address naming an element
  inside an undrawn body draws it, opens its box and shows it; Ctrl+F (the browser's find) draws
  every body; long tables past the first screen are drawn once the reader has pressed a key.
"""

from __future__ import annotations

import re

import pytest
from helpers import page_url

expect = pytest.importorskip("playwright.sync_api").expect

PAGE = "part-3-serving-software"
COUNT = "() => document.getElementsByTagName('*').length"
UNDRAWN = "() => document.querySelectorAll('noscript.descent-lazy').length"
BODIES = "() => document.querySelectorAll('noscript.descent-lazy:not(.descent-lazy--near)').length"


def test_closed_boxes_and_far_tables_are_drawn_when_needed(page, make_page, site_dir, server):
    url = page_url(site_dir, server, PAGE)
    html = (site_dir / url.removeprefix(server)).read_text(encoding="utf-8")
    assert re.search(r'<details[^>]*>\s*<summary>.*?</summary><noscript class="descent-lazy">', html, re.S)

    plain = make_page(java_script_enabled=False)
    plain.goto(url)
    complete = plain.evaluate(COUNT)

    page.goto(url)
    undrawn = page.evaluate(BODIES)
    assert undrawn > 100  # Part 3's derivations alone are 162 closed boxes
    at_load = page.evaluate(COUNT)
    assert at_load < complete * 0.7, (at_load, complete)

    # A summary's click opens the box on its body.
    page.evaluate("""() => document.querySelector('details:has(> noscript.descent-lazy:not(.descent-lazy--near))')
                             .dataset.testBox = '1'""")
    box = page.locator("details[data-test-box]")
    box.scroll_into_view_if_needed()
    box.locator("summary").click()
    expect(box).to_have_attribute("open", "")
    assert box.locator(":scope > noscript").count() == 0
    expect(box.locator(":scope > :not(summary)").first).to_be_visible()
    assert page.evaluate(BODIES) == undrawn - 1

    # An address naming an element inside an undrawn body: drawn, its box opened, the element on
    # screen. (No body of Part 3 holds an id today; a box is added the way the parser leaves one.)
    page.evaluate("""() => {
        const box = document.createElement('details');
        box.innerHTML = '<summary>Added</summary>';
        const ns = document.createElement('noscript');
        ns.className = 'descent-lazy';
        ns.textContent = '<p id="descent-test-inside">Inside &amp; drawn</p>';
        box.append(ns);
        document.querySelector('.md-content article').append(box);
    }""")
    # (replaceState and the event, not location.hash: Material's instant navigation would reload the
    # page's content on the popstate a hash change also fires, and the added box with it.)
    page.evaluate("""() => {
        history.replaceState(history.state, '', '#descent-test-inside');
        dispatchEvent(new HashChangeEvent('hashchange'));
    }""")
    target = page.locator("#descent-test-inside")
    expect(target).to_be_in_viewport()
    assert target.text_content() == "Inside & drawn"
    assert target.evaluate("e => e.closest('details').open")

    # The browser's find: every body drawn first, so find sees all the text.
    page.locator("body").press("Control+f")
    assert page.evaluate(BODIES) == 0
    # Tables past the first screen: drawn one per idle moment once the reader has pressed a key.
    expect(page.locator("noscript.descent-lazy")).to_have_count(0, timeout=20_000)
    assert page.evaluate(COUNT) >= complete * 0.95
    assert not page.descent_console_errors


FAR_WIDGETS = "() => [...document.querySelectorAll('.md-content__inner > .descent-widget.descent-far')].map(w => w.dataset.widget)"


def test_far_widgets_arrive_skipped_and_are_drawn_after_the_load(page, site_dir, server):
    # decision 0025: a widget past the first blocks is marked descent-far by the build (the browser
    # skips it until it nears the screen); lazy.js draws them one per frame once the page has loaded.
    url = page_url(site_dir, server, PAGE)
    html = (site_dir / url.removeprefix(server)).read_text(encoding="utf-8")
    marked = re.findall(r'<div class="descent-widget descent-far"[^>]*data-widget="(\w+)"', html)
    assert len(marked) >= 5  # Part 3: ten widgets, all past its first blocks
    page.goto(url, wait_until="domcontentloaded")
    skipped_at_start = page.evaluate(FAR_WIDGETS)
    page.wait_for_load_state("load")
    page.wait_for_function(f"() => ({FAR_WIDGETS})().length === 0")
    # Whatever was still skipped when the script first looked is a widget the build marked.
    assert set(skipped_at_start) <= set(marked)
    # Drawn, each is where a reader sees it: below the one before it, not piled at a corner.
    tops = page.evaluate("() => [...document.querySelectorAll('.md-content__inner > .descent-widget')]"
                         ".map(w => w.getBoundingClientRect().top + scrollY)")
    assert tops == sorted(tops) and len(set(tops)) == len(tops)
