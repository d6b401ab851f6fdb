"""A number opens its derivation (issue 26, docs/assets/descent/explain.js, descent.site.explain).

On every part, the first number that has a formula opens by mouse and by keyboard (Enter, Space)
into a role="dialog" holding KaTeX and a source link, whose formula's value is the quantity at the
number's arguments (``descent.quantities``, computed here); Escape closes it and focus returns to
the number. On the same page load, Parts 2 to 4 open a calculator's number (Part 5's are opened in
test_compare_in_browser): its derivation, computed in the worker at the inputs shown, has a formula
whose substituted value is the number printed. Without JavaScript the number is a link to its entry in the page's closing section; from
file:// the dialog opens too. axe finds nothing serious with the dialog open, light and dark.
"""

from __future__ import annotations

import math
import shlex

import pytest
from helpers import LIVE_TIMEOUT_MS, page_path, page_url
from test_compare_in_browser import check_widget_derivation

from descent import quantities as Q

expect = pytest.importorskip("playwright.sync_api").expect

PARTS = ["part-0-the-prompt", "part-1-the-transformer", "part-2-weights-as-numbers", "part-3-serving-software",
         "part-4-hardware", "part-5-the-whole-descent"]
#: A number whose entry shows a formula (a[data-quantity] pointing at a details with data-formula).
WITH_FORMULA = """() => {
  for (const a of document.querySelectorAll('a.descent-q[data-quantity]')) {
    const d = document.getElementById(a.hash.slice(1));
    if (d && d.dataset.formula) return a.hash;
  }
  return null;
}"""


#: A calculator on the part whose number has a formula at the page's inputs: (widget, stat label).
WIDGET_NUMBER = {
    "part-2-weights-as-numbers": ("size_it_yourself", "Decode ceiling per sequence"),
    "part-3-serving-software": ("break_even", "Break-even utilization"),
    "part-4-hardware": ("roofline_explorer", "Ridge point"),
}


def _value(name: str, args: str) -> float:
    q = Q.get(name)
    fmt = {p.name for p in Q.FORMAT_PARAMS[q.kind]}
    raw = dict(kv.split("=", 1) for kv in shlex.split(args))
    return q(**q.bind({k: v for k, v in raw.items() if k not in fmt}, parse=True))


def _number(page, hash_: str | None):
    """The first number linking to entry ``hash_`` (Material makes hrefs absolute), or the first number."""
    sel = f'a.descent-q[href$="{hash_}"]' if hash_ else "a.descent-q[data-quantity]"
    return page.locator(sel).first


def _dialog(page):
    """The derivation's dialog, found by its role (Material's search is a role="dialog" too)."""
    return page.get_by_role("dialog").and_(page.locator(".descent-how-dialog"))


def _check_dialog(page, formula: bool) -> None:
    dialog = _dialog(page)
    expect(dialog).to_be_visible()
    assert dialog.locator(".katex").count() > 0 or not formula
    assert dialog.locator('a[href^="http"]').count() >= 1
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert page.evaluate("() => document.activeElement.classList.contains('descent-q')")


@pytest.mark.parametrize("part", PARTS)
def test_a_number_opens_by_mouse_and_keyboard(part, page, site_dir, server):
    page.goto(page_url(site_dir, server, part))
    href = page.evaluate(WITH_FORMULA)
    number = _number(page, href)
    name, args = number.get_attribute("data-quantity"), number.get_attribute("data-args") or ""
    if href:  # the dialog's formula value is the quantity's, as printed in the entry's data-value
        entry = page.locator(href)
        assert math.isclose(float(entry.get_attribute("data-value")), _value(name, args), rel_tol=1e-9)
    number.scroll_into_view_if_needed()
    number.click()
    _check_dialog(page, bool(href))
    for key in ("Enter", " "):
        number.focus()
        page.keyboard.press(key)
        _check_dialog(page, bool(href))
    if part in WIDGET_NUMBER:
        widget, label = WIDGET_NUMBER[part]
        root = f'.descent-widget[data-widget="{widget}"]'
        page.locator(root).first.scroll_into_view_if_needed()
        page.wait_for_selector(f'{root}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
        check_widget_derivation(page, root, label)
    assert not page.descent_console_errors


def test_without_javascript_a_number_links_to_its_entry(make_page, site_dir, server):
    page = make_page(java_script_enabled=False)
    page.goto(page_url(site_dir, server, "part-4-hardware"))
    section = page.locator("#how-each-number")
    expect(section).to_contain_text("How each number on this page is computed")
    number = page.locator("a.descent-q[data-quantity]").first
    href = "#" + number.get_attribute("href").split("#", 1)[1]
    number.click()
    assert page.url.endswith(href)
    entry = page.locator(href)
    assert entry.evaluate("e => e.tagName") == "DETAILS"
    entry.locator("summary").click()
    assert entry.locator('a[href^="http"]').count() >= 1


def test_from_file_a_number_opens_its_dialog(make_page, site_dir):
    page = make_page()
    page.goto((site_dir / page_path(site_dir, "part-4-hardware")).as_uri())
    number = _number(page, page.evaluate(WITH_FORMULA))
    number.scroll_into_view_if_needed()
    number.click()
    dialog = _dialog(page)
    expect(dialog).to_be_visible()
    assert dialog.locator(".katex").count() > 0


def test_the_open_dialog_is_axe_clean(page, site_dir, server):
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.goto(page_url(site_dir, server, "part-4-hardware"))
        number = _number(page, page.evaluate(WITH_FORMULA))
        number.scroll_into_view_if_needed()
        number.click()
        expect(_dialog(page)).to_be_visible()
        page.wait_for_timeout(300)
        results = axe_mod.Axe().run(page, options={"resultTypes": ["violations"]})
        bad = [f"{v['id']}: {[n['target'] for n in v['nodes'][:3]]}" for v in results.response["violations"]
               if v["impact"] in ("serious", "critical")]
        assert not bad, f"{scheme}: {bad}"
