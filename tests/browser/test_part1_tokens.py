"""Part 1's token widgets in a real browser: the tokenizer and the sampling widget go live.

Typing text changes the chips and the count (compared with descent.tokenizer.tokens here); moving
temperature / top-k changes the survivors (compared with descent.sampling here); a bad value shows
the inline message. The ``page`` fixture fails the test if any request left 127.0.0.1.
"""

from __future__ import annotations

import pytest
from helpers import RECOMPUTE_TIMEOUT_MS, go_live, is_local, page_url, stat_number

from descent import sampling, tokenizer
from descent.widgets.part0 import prompt_trace

expect = pytest.importorskip("playwright.sync_api").expect

PAGE = "part-1-the-transformer"
TOKENIZER = '.descent-widget[data-widget="tokenizer"]'
SAMPLING = '.descent-widget[data-widget="sampling"]'


def test_tokenizer_live(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), TOKENIZER, check_static=False)
    text = "How many r's are in strawberry? 12345"
    w.locator(".descent-field textarea").fill(text)
    expected = tokenizer.tokens(text)
    expect(stat_number(page, TOKENIZER, "Tokens")).to_have_text(str(len(expected)), timeout=RECOMPUTE_TIMEOUT_MS)
    ids = [int(x) for x in w.locator(".descent-chip__id").all_inner_texts()]
    assert ids == [i for _, i in expected]
    # empty text: the inline message, the last good chips kept
    w.locator(".descent-field textarea").fill("")
    page.wait_for_selector(f'{TOKENIZER}[data-state="error"]', timeout=RECOMPUTE_TIMEOUT_MS)
    assert "Text is empty" in w.locator(".descent-field__error").inner_text()
    assert len(w.locator(".descent-chip__id").all_inner_texts()) == len(expected)
    assert all(is_local(u) for u in page.descent_requests)


def test_tokenizer_says_when_a_long_paste_is_cut(page, site_dir, server):
    # Issue 13: a 20,000-character paste was cut to 2,000 by the text box without a word.
    w = go_live(page, page_url(site_dir, server, PAGE), TOKENIZER, check_static=False)
    w.locator(".descent-field textarea").fill("word " * 4000)
    expect(w.locator(".descent-note--warn")).to_contain_text(
        "only the first 2,000 of its 20,000 characters are used", timeout=RECOMPUTE_TIMEOUT_MS
    )
    assert len(w.locator(".descent-field textarea").input_value()) == 20_000  # the box kept the whole paste


def test_sampling_live(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), SAMPLING, check_static=False)
    logits = [c["logit"] for c in prompt_trace("story")["next"]]
    w.locator('.descent-field[data-field="top_k"] input[type=number]').fill("5")
    n = len(sampling.distribution(logits, 1.0, 5, 1.0))
    expect(stat_number(page, SAMPLING, "Tokens left to draw from")).to_have_text(
        str(n), timeout=RECOMPUTE_TIMEOUT_MS
    )
    w.locator('.descent-field[data-field="temperature"] input[type=number]').fill("0")
    expect(stat_number(page, SAMPLING, "Tokens left to draw from")).to_have_text(
        "1", timeout=RECOMPUTE_TIMEOUT_MS
    )
    assert w.locator(".descent-bar--greyed").count() >= 19
    w.locator('.descent-field[data-field="top_p"] input[type=number]').fill("3")
    page.wait_for_selector(f'{SAMPLING}[data-state="error"]', timeout=RECOMPUTE_TIMEOUT_MS)
    assert (
        "Top-p must be 0.05 to 1"
        in w.locator('.descent-field[data-field="top_p"] .descent-field__error').inner_text()
    )
    assert all(is_local(u) for u in page.descent_requests)


@pytest.mark.slow
def test_part1_token_widgets_have_no_axe_violations(page, site_dir, server):
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    page.goto(page_url(site_dir, server, PAGE))
    for root in (TOKENIZER, SAMPLING, '.descent-widget[data-widget="autoregression"]'):
        page.locator(root).scroll_into_view_if_needed()
        results = axe_mod.Axe().run(page, context=root, options={"resultTypes": ["violations"]})
        assert not results.response["violations"], results.generate_report()
