"""Part 5's replay stepper in a real browser (first on the page, so it may already be loading when
checked: the static check is skipped): it goes live, stepping to another stage changes the
output to that stage's recorded numbers, and axe finds no violations."""

from __future__ import annotations

import pytest
from helpers import RECOMPUTE_TIMEOUT_MS, go_live, page_url

expect = pytest.importorskip("playwright.sync_api").expect

REPLAY = '.descent-widget[data-widget="one_token_replayed"]'
PAGE = "part-5-the-whole-descent"


def test_replay_steps_through_the_stages(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), REPLAY, check_static=False)
    out = w.locator(".descent-widget__output")
    expect(out).to_contain_text("Stage 1 of 10, Tokenize", timeout=RECOMPUTE_TIMEOUT_MS)
    w.locator('.descent-field[data-field="stage"] input[type=number]').fill("5")
    # traces.json, capital: " Paris" has logit 17.371, probability 0.77253.
    expect(out).to_contain_text("Stage 5 of 10, Logits and probabilities", timeout=RECOMPUTE_TIMEOUT_MS)
    expect(out).to_contain_text("77.3%")
    assert not page.descent_console_errors, page.descent_console_errors


def test_replay_has_no_axe_violations(page, site_dir, server):
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    go_live(page, page_url(site_dir, server, PAGE), REPLAY, check_static=False)
    page.locator(REPLAY).scroll_into_view_if_needed()
    results = axe_mod.Axe().run(page, context=REPLAY)
    assert not results.response["violations"], results.generate_report()
