"""Part 5's replay stepper in a real browser (first on the page, so it may already be loading when
checked: the static check is skipped): it goes live, stepping to another stage changes the
output to that stage's recorded numbers, a token chip opens that token's embedding row with its
link to Part 1, and axe finds no violations."""

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


def test_a_token_chip_opens_its_embedding_row(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), REPLAY, check_static=False)
    out = w.locator(".descent-widget__output")
    expect(out).to_contain_text("Stage 1 of 10, Tokenize", timeout=RECOMPUTE_TIMEOUT_MS)
    # Stage 1's fourth chip is " France"; embedding_rows.json: its row is 4649, length 2.2826.
    out.locator("button[data-set]").nth(3).click()
    expect(out).to_contain_text("Stage 2 of 10, Embed", timeout=RECOMPUTE_TIMEOUT_MS)
    expect(w.locator('.descent-field[data-field="token"] select')).to_have_value("4")
    expect(out.locator(".descent-stat__number").first).to_have_text("4,649")
    expect(out).to_contain_text("2.283")
    expect(out.locator(".descent-note a")).to_have_attribute("href", "part-1-the-transformer.html#embeddings")
    assert not page.descent_console_errors, page.descent_console_errors


def test_replay_has_no_axe_violations(page, site_dir, server):
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    go_live(page, page_url(site_dir, server, PAGE), REPLAY, check_static=False)
    page.locator(REPLAY).scroll_into_view_if_needed()
    results = axe_mod.Axe().run(page, context=REPLAY, options={"resultTypes": ["violations"]})
    assert not results.response["violations"], results.generate_report()
