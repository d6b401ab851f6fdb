"""Pin a set-up and compare (issue 26) on Part 5's "Size it yourself" in a real browser.

The Pin button (``data-action="pin"``, share.js) holds the current inputs in the sandbox's
``pinned`` field; after the accelerator changes, the results set the pinned H200 beside the H100,
with the values ``descent.memory.size`` gives here, and the address carries the pinned set-up, so a
fresh context opening it shows the same comparison.
"""

from __future__ import annotations

import pytest
from helpers import LIVE_TIMEOUT_MS, RECOMPUTE_TIMEOUT_MS, go_live, page_url

from descent.memory import size
from descent.widgets.part5 import DEFAULTS, rate_text

expect = pytest.importorskip("playwright.sync_api").expect

SANDBOX = '.descent-widget[data-widget="size_it_yourself"]'
PAGE = "part-5-the-whole-descent"


def _row(w, label: str):
    return w.locator(".descent-widget__output table tr").filter(has_text=label).first.locator("td")


def test_pin_then_change_shows_both_set_ups(page, make_page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), SANDBOX)
    d = DEFAULTS
    w.locator('[data-action="pin"]').click()
    pinned = w.locator('.descent-field[data-field="pinned"] textarea')
    assert f"accelerator:{d['accelerator']}" in pinned.input_value()
    w.locator('.descent-field[data-field="accelerator"] select').select_option("h100-sxm")
    before = size(d["model"], d["accelerator"], d["weights"], d["kv"], d["context"], d["batch"])
    after = size(d["model"], "h100-sxm", d["weights"], d["kv"], d["context"], d["batch"])
    row = _row(w, "Decode ceiling per sequence")
    expect(row.nth(1)).to_have_text(rate_text(after.decode_tokens_per_s), timeout=RECOMPUTE_TIMEOUT_MS)
    assert row.nth(0).inner_text() == rate_text(before.decode_tokens_per_s)
    assert row.nth(3).inner_text() == "pinned"  # the H200 reads its memory faster

    fresh = make_page()
    page.wait_for_timeout(400)  # the address is written once the inputs rest
    fresh.goto(page.url)
    f = fresh.locator(SANDBOX)
    f.scroll_into_view_if_needed()
    fresh.wait_for_selector(f'{SANDBOX}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    expect(_row(f, "Decode ceiling per sequence").nth(1)).to_have_text(
        rate_text(after.decode_tokens_per_s), timeout=RECOMPUTE_TIMEOUT_MS)
