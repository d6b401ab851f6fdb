"""Part 1 widgets in a real browser: the attention fan and the MoE router go live and recompute,
the values equal the Python computation, only 127.0.0.1 is contacted, and axe finds no violations;
plus screenshots of Part 1 in light, dark and phone width for a human to look at
(written to $DESCENT_SCREENSHOTS when set)."""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path

import pytest
from helpers import RECOMPUTE_TIMEOUT_MS, go_live, is_local, page_url, stat_number

from descent import catalog, transformer
from descent.units import format_count
from descent.widgets import run

expect = pytest.importorskip("playwright.sync_api").expect

PAGE = "part-1-the-transformer"
FAN = '.descent-widget[data-widget="attention_fan"]'
ROUTER = '.descent-widget[data-widget="moe_router"]'
QKV = '.descent-widget[data-widget="qkv_example"]'
STACK = '.descent-widget[data-widget="stack_calculator"]'
EMB = '.descent-widget[data-widget="embedding_neighbours"]'
def _first_bar_value(inputs: dict) -> str:
    out = run("attention_fan", inputs)["html"]
    return html.unescape(re.search(r'descent-bar__value">(.*?)<', out).group(1))


def test_attention_fan_changes_with_layer_and_head(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), FAN)
    before = w.locator(".descent-widget__output").inner_text()
    w.locator('.descent-field[data-field="layer"] input[type=number]').fill("20")
    w.locator('.descent-field[data-field="head"] input[type=number]').fill("7")
    expected = run("attention_fan", {"layer": 20, "head": 7})["html"]
    want = html.unescape(re.search(r'class="descent-view__caption">(.*?)</figcaption>', expected).group(1))
    expect(w.locator(".descent-view__caption").first).to_have_text(want, timeout=RECOMPUTE_TIMEOUT_MS)
    expect(w.locator(".descent-bar__value").first).to_have_text(
        _first_bar_value({"layer": 20, "head": 7}), timeout=RECOMPUTE_TIMEOUT_MS
    )
    assert w.locator(".descent-widget__output").inner_text() != before
    # weights are there as text, not only as bar widths
    assert re.search(r"\d+\.\d%", w.locator(".descent-widget__output").inner_text())
    # out of range: inline message, last result kept
    kept = w.locator(".descent-widget__output").inner_text()
    w.locator('.descent-field[data-field="layer"] input[type=number]').fill("31")
    page.wait_for_selector(f'{FAN}[data-state="error"]', timeout=RECOMPUTE_TIMEOUT_MS)
    assert "1 to 30" in w.locator('.descent-field[data-field="layer"] .descent-field__error').inner_text()
    assert w.locator(".descent-widget__output").inner_text() == kept
    assert all(is_local(u) for u in page.descent_requests), [
        u for u in page.descent_requests if not is_local(u)
    ]


def test_stack_sliders_offer_valid_values_and_errors_land_where_touched(page, site_dir, server):
    # Issue 13: with 12 heads, 34 of 52 d_model slider positions showed "Query heads must divide
    # d_model", under Query heads. Now every slider position is a valid stack, and a typed value
    # that breaks the rule is reported under the box the reader typed in.
    w = go_live(page, page_url(site_dir, server, PAGE), STACK)
    d_range = w.locator('.descent-field[data-field="d_model"] input[type=range]')
    d_num = w.locator('.descent-field[data-field="d_model"] input[type=number]')
    allowed = run("stack_calculator", {})["allowed"]["d_model"]
    for _ in range(3):  # three steps right: 768 -> 960 -> 1,152 -> 1,344 (multiples of 192)
        d_range.press("ArrowRight")
    expect(d_num).to_have_value(str(allowed[allowed.index(768) + 3]), timeout=RECOMPUTE_TIMEOUT_MS)
    page.wait_for_selector(f'{STACK}[data-state="live"]', timeout=RECOMPUTE_TIMEOUT_MS)
    assert int(d_num.input_value()) % 12 == 0
    # Typing 1,000: the message is under d_model, about d_model, with the nearest allowed values.
    d_num.fill("1000")
    page.wait_for_selector(f'{STACK}[data-state="error"]', timeout=RECOMPUTE_TIMEOUT_MS)
    err = w.locator('.descent-field[data-field="d_model"] .descent-field__error')
    expect(err).to_have_text(re.compile(r"^d_model must be a multiple of the query heads \(12\).*Nearest allowed: 960 or 1,152\.$"))
    assert w.locator('.descent-field[data-field="heads"] .descent-field__error').inner_text() == ""
    # Back to a valid width; then the heads slider offers only divisors of it (that 12 KV heads divide).
    d_num.fill("768")
    page.wait_for_selector(f'{STACK}[data-state="live"]', timeout=RECOMPUTE_TIMEOUT_MS)
    h_range = w.locator('.descent-field[data-field="heads"] input[type=range]')
    assert json.loads(h_range.get_attribute("data-values")) == [12, 24, 48, 96, 192]
    h_range.press("ArrowRight")
    expect(w.locator('.descent-field[data-field="heads"] input[type=number]')).to_have_value("24")
    page.wait_for_selector(f'{STACK}[data-state="live"]', timeout=RECOMPUTE_TIMEOUT_MS)
    # The "Try this" list is there, from the declaration.
    assert w.locator(".descent-widget__tries li").count() >= 3


def test_router_changes_with_the_model(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), ROUTER)
    w.locator('.descent-field[data-field="model"] select').select_option("mixtral-8x7b")
    p = transformer.param_counts(catalog.model("mixtral-8x7b"))
    number = stat_number(page, ROUTER, "Active per token", exact=False)
    expect(number).to_have_text(format_count(p.active), timeout=RECOMPUTE_TIMEOUT_MS)
    assert w.locator("td.descent-cell.is-used").count() == 2  # Mixtral: 2 of 8
    assert w.locator("td.descent-cell").count() == 8
    w.locator('.descent-field[data-field="k"] input[type=number]').fill("9")
    page.wait_for_selector(f'{ROUTER}[data-state="error"]', timeout=RECOMPUTE_TIMEOUT_MS)
    assert "0 to 8" in w.locator('.descent-field[data-field="k"] .descent-field__error').inner_text()
    assert all(is_local(u) for u in page.descent_requests)
    assert not page.descent_console_errors, page.descent_console_errors


@pytest.mark.slow
def test_part1_widgets_have_no_axe_violations(page, site_dir, server):
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    page.goto(page_url(site_dir, server, PAGE))
    for root in (EMB, STACK, FAN, QKV, ROUTER):
        page.locator(root).scroll_into_view_if_needed()
        results = axe_mod.Axe().run(page, context=root, options={"resultTypes": ["violations"]})
        assert not results.response["violations"], (root, results.generate_report())


@pytest.mark.parametrize("kind", ["light", "dark", "phone"])
def test_part1_screenshots(make_page, site_dir, server, kind):
    out = os.environ.get("DESCENT_SCREENSHOTS")
    args = (
        {"viewport": {"width": 390, "height": 844}}
        if kind == "phone"
        else {"viewport": {"width": 1280, "height": 900}}
    )
    if kind == "dark":
        args["color_scheme"] = "dark"
    pg = make_page(**args)
    pg.goto(page_url(site_dir, server, PAGE))
    # no widget or table overflows the page horizontally
    overflow = pg.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, f"{kind}: page scrolls sideways by {overflow}px"
    if out:
        for root in (EMB, STACK, FAN, QKV, ROUTER):
            pg.locator(root).screenshot(path=str(Path(out) / f"{kind}-{root.split('=')[1][1:-2]}.png"))
        pg.screenshot(path=str(Path(out) / f"{kind}-page.png"), full_page=True)
