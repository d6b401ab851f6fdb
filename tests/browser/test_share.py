"""A calculator's state is a link (issue 26, docs/assets/descent/share.js).

On the served site, changing an input of Part 5's "Size it yourself" writes the widget's inputs
into the address (one query parameter named after the widget); opening that address in a fresh
browser context restores the inputs and the result, which equals ``descent.memory.size`` at those
inputs computed here. A link with a bad value shows the field's own message (the one
``descent.widgets.run`` gives for that input, asked here), never a broken page; a link naming a field
the widget does not have says so. From file:// the link's inputs are named and the page says the
results shown are the precomputed defaults. The Copy link button (``data-action="share"``) copies
the same address.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

import pytest
from helpers import LIVE_TIMEOUT_MS, RECOMPUTE_TIMEOUT_MS, go_live, page_path, page_url, stat_number

from descent import widgets
from descent.memory import size
from descent.widgets.part5 import DEFAULTS, rate_text

expect = pytest.importorskip("playwright.sync_api").expect

SANDBOX = '.descent-widget[data-widget="size_it_yourself"]'
PAGE = "part-5-the-whole-descent"
RATE = "Decode ceiling per sequence"


def _rate(page, expected: str) -> None:
    expect(stat_number(page, SANDBOX, RATE, exact=False)).to_have_text(expected, timeout=RECOMPUTE_TIMEOUT_MS)


def test_changed_inputs_go_into_the_address_and_a_fresh_context_restores_them(make_page, site_dir, server):
    page = make_page(permissions=["clipboard-read", "clipboard-write"])
    w = go_live(page, page_url(site_dir, server, PAGE), SANDBOX)
    d = DEFAULTS
    w.locator('.descent-field[data-field="model"] select').select_option("gpt-oss-120b")
    w.locator('.descent-field[data-field="context"] input[type=number]').fill("32768")
    s = size("gpt-oss-120b", d["accelerator"], d["weights"], d["kv"], 32768, d["batch"])
    _rate(page, rate_text(s.decode_tokens_per_s))
    expect(page).to_have_url(re.compile(r"size_it_yourself=[^&#]*context:32768"), timeout=RECOMPUTE_TIMEOUT_MS)
    state = unquote(page.url.split("size_it_yourself=", 1)[1].split("&")[0].split("#")[0])
    assert "model:gpt-oss-120b" in state and f"accelerator:{d['accelerator']}" in state

    # The Copy link button copies the same inputs, pointing at the widget.
    w.locator('[data-action="share"]').click()
    said = w.locator(".descent-share__said")
    expect(said).not_to_have_text("", timeout=5_000)
    copied = page.evaluate("() => navigator.clipboard.readText().catch(() => '')")
    box = w.locator(".descent-share__url")
    link = copied or box.input_value()
    assert "size_it_yourself=" in link and "context:32768" in link and link.endswith("#dw-size_it_yourself"), link

    # A fresh context (no shared storage) opens the link: same inputs, same result.
    fresh = make_page()
    fresh.goto(link)
    f = fresh.locator(SANDBOX)
    f.scroll_into_view_if_needed()
    fresh.wait_for_selector(f'{SANDBOX}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    assert f.locator('.descent-field[data-field="model"] select').input_value() == "gpt-oss-120b"
    assert f.locator('.descent-field[data-field="context"] input[type=number]').input_value() == "32768"
    expect(stat_number(fresh, SANDBOX, RATE, exact=False)).to_have_text(
        rate_text(s.decode_tokens_per_s), timeout=RECOMPUTE_TIMEOUT_MS)


@pytest.mark.parametrize("field,raw", [("context", "0"), ("model", "no-such-model")])
def test_a_bad_value_in_a_link_gets_the_fields_own_message(page, site_dir, server, field, raw):
    expected = widgets.run("size_it_yourself", {field: raw})
    assert not expected["ok"] and expected["field"] == field, expected  # the widget refuses it, here too
    page.goto(page_url(site_dir, server, PAGE) + f"?size_it_yourself={field}:{raw}")
    page.wait_for_selector(f'{SANDBOX}[data-state="error"]', timeout=LIVE_TIMEOUT_MS)
    err = page.locator(f'{SANDBOX} .descent-field[data-field="{field}"] .descent-field__error')
    assert err.inner_text() == expected["message"]
    # The last good result (the precomputed defaults) stays.
    assert page.locator(f"{SANDBOX} .descent-widget__output .descent-stat").count() > 0
    assert not page.descent_console_errors


def test_a_field_the_widget_does_not_have_is_named_and_ignored(page, site_dir, server):
    page.goto(page_url(site_dir, server, PAGE) + "?size_it_yourself=colour:blue;batch:4")
    w = page.locator(SANDBOX)
    expect(w.locator(".descent-share__note")).to_contain_text("colour")
    page.wait_for_selector(f'{SANDBOX}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    assert w.locator('.descent-field[data-field="batch"] input[type=number]').input_value() == "4"


def test_from_file_a_link_names_its_inputs_and_says_the_results_are_the_defaults(site_dir, make_page):
    page = make_page()
    page.goto((site_dir / page_path(site_dir, PAGE)).as_uri() + "?size_it_yourself=model:gpt-oss-120b")
    w = page.locator(SANDBOX)
    note = w.locator(".descent-share__note")
    expect(note).to_contain_text("model = gpt-oss-120b")
    expect(note).to_contain_text("precomputed for the defaults")
    assert w.get_attribute("data-state") == "static"
    assert w.locator('.descent-field[data-field="model"] select').is_disabled()
    assert w.locator('[data-action="share"]').is_enabled()
