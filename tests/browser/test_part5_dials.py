"""Part 5's server dials in a real browser: the widget goes live, the recorded reply streams into
its text box and ends as the whole reply, changing the accelerator count recomputes to
``descent.dials.server_dials``'s value, and axe finds no violations."""

from __future__ import annotations

import pytest
from helpers import RECOMPUTE_TIMEOUT_MS, go_live, is_local, page_url, stat_number

from descent import dials
from descent.units import format_number
from descent.widgets.part5_dials import reply_tokens

expect = pytest.importorskip("playwright.sync_api").expect

DIALS = '.descent-widget[data-widget="server_dials"]'
PAGE = "part-5-the-whole-descent"


def _per_user(tp: int) -> str:
    d = dials.server_dials("llama-3.1-70b", "h100-sxm", "fp8", "bf16", 8192, 1, tp)
    return format_number(d.tokens_per_s_per_user, 3)


def test_dials_live_stream_and_recompute(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), DIALS)
    w.scroll_into_view_if_needed()
    expect(stat_number(page, DIALS, "Per user")).to_have_text(_per_user(8), timeout=RECOMPUTE_TIMEOUT_MS)
    box = w.locator("[data-stream]")
    box.scroll_into_view_if_needed()  # it plays when it comes into view
    # 50 tokens at ~370 tokens/s after ~0.16 s: done well within the timeout, and the whole reply.
    expect(box).to_have_attribute("data-streaming", "done", timeout=RECOMPUTE_TIMEOUT_MS)
    assert box.inner_text() == "".join(reply_tokens())

    w.locator('.descent-field[data-field="tp"] input[type=number]').fill("2")
    expect(stat_number(page, DIALS, "Per user")).to_have_text(_per_user(2), timeout=RECOMPUTE_TIMEOUT_MS)
    assert _per_user(2) != _per_user(8)
    # The re-rendered box streams again.
    w.locator("[data-stream]").scroll_into_view_if_needed()
    expect(w.locator("[data-stream]")).to_have_attribute("data-streaming", "done", timeout=RECOMPUTE_TIMEOUT_MS)
    assert all(is_local(u) for u in page.descent_requests)
    assert not page.descent_console_errors, page.descent_console_errors


def test_dials_have_no_axe_violations(page, site_dir, server):
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    go_live(page, page_url(site_dir, server, PAGE), DIALS)
    page.locator(DIALS).scroll_into_view_if_needed()
    results = axe_mod.Axe().run(page, context=DIALS, options={"resultTypes": ["violations"]})
    assert not results.response["violations"], results.generate_report()
