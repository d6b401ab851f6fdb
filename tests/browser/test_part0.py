"""Part 0 in a real browser: the guess widget goes live and ranks a typed guess; the loop steps.

Expected values come from the committed traces (descent.widgets.part0). The ``page`` fixture fails
the test if any request left 127.0.0.1.
"""

from __future__ import annotations

import pytest
from helpers import LIVE_TIMEOUT_MS, RECOMPUTE_TIMEOUT_MS, page_url, stat_number

from descent.widgets.part0 import prompt_trace, show

expect = pytest.importorskip("playwright.sync_api").expect

PAGE = "part-0-the-prompt"
GUESS = '.descent-widget[data-widget="next_token_guess"]'
LOOP = '.descent-widget[data-widget="generation_loop"]'


def test_guess_and_loop_live(page, site_dir, server):
    page.goto(page_url(site_dir, server, PAGE))
    w = page.locator(GUESS)
    w.scroll_into_view_if_needed()
    page.wait_for_selector(f'{GUESS}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    w.locator('.descent-field[data-field="guess"] textarea').fill("Paris")
    expect(stat_number(page, GUESS, "Your guess")).to_have_text("#1", timeout=RECOMPUTE_TIMEOUT_MS)
    # Issue 13: "paris" is not " Paris": the widget says which token the guess became.
    w.locator('.descent-field[data-field="guess"] textarea').fill("paris")
    expect(w).to_contain_text("case and the leading space make that a different token", timeout=RECOMPUTE_TIMEOUT_MS)
    assert stat_number(page, GUESS, "Your guess").inner_text() != "#1"
    w.locator("button.descent-chip__button", has_text="Story opener").click()  # a recorded prompt
    top = prompt_trace("story")["next"][0]["text"]
    expect(stat_number(page, GUESS, "The model's top pick")).to_have_text(show(top), timeout=RECOMPUTE_TIMEOUT_MS)

    loop = page.locator(LOOP)
    loop.scroll_into_view_if_needed()
    page.wait_for_selector(f'{LOOP}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    loop.locator("button.descent-chip__button", has_text="A chat question").click()
    expect(loop.locator('.descent-field[data-field="chat"] input[type=checkbox]')).to_be_checked()
    steps = prompt_trace("chat")["generation"]["steps"]
    loop.locator('.descent-field[data-field="step"] input[type=number]').fill("3")
    expect(stat_number(page, LOOP, "Token chosen")).to_have_text(
        show(steps[3]["token"]["text"]), timeout=RECOMPUTE_TIMEOUT_MS
    )
    # Wait for step 3's own caption: the chosen token's text alone can repeat across steps.
    expect(loop).to_contain_text(
        f"Step 3: the model reads {steps[3]['context_length']} tokens", timeout=RECOMPUTE_TIMEOUT_MS
    )
    assert loop.locator(".descent-chip__id").count() == steps[3]["context_length"]
    # the "next step" button moves one token on
    loop.locator("button.descent-chip__button", has_text="next step").click()
    expect(stat_number(page, LOOP, "Token chosen")).to_have_text(
        show(steps[4]["token"]["text"]), timeout=RECOMPUTE_TIMEOUT_MS
    )
    assert loop.locator('.descent-field[data-field="step"] input[type=number]').input_value() == "4"
    loop.locator('.descent-field[data-field="step"] input[type=number]').fill("99")
    page.wait_for_selector(f'{LOOP}[data-state="error"]', timeout=RECOMPUTE_TIMEOUT_MS)
    assert (
        "Step must be 0 to 63"
        in loop.locator('.descent-field[data-field="step"] .descent-field__error').inner_text()
    )
    assert not page.descent_console_errors, page.descent_console_errors
