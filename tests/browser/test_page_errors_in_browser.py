"""Issue 8, section 3 in a real browser: the step slider follows the chosen reply, the stack
calculator's norm choice, the autoregression widget's attention stat, the MoE router on the new
models; axe finds nothing on the changed widgets (screenshots for the eye: tools/screenshots.py).
The ``page`` fixture fails a test if any request left the loopback network.
"""

from __future__ import annotations

import pytest
from helpers import LIVE_TIMEOUT_MS, RECOMPUTE_TIMEOUT_MS, go_live, is_local, page_url, stat_number

from descent.widgets.part0 import prompt_trace

expect = pytest.importorskip("playwright.sync_api").expect

P0, P1 = "part-0-the-prompt", "part-1-the-transformer"
LOOP = '.descent-widget[data-widget="generation_loop"]'
AUTO = '.descent-widget[data-widget="autoregression"]'
STACK = '.descent-widget[data-widget="stack_calculator"]'
MOE = '.descent-widget[data-widget="moe_router"]'


def _last(prompt: str) -> str:
    return str(len(prompt_trace(prompt)["generation"]["steps"]) - 1)


def test_step_slider_follows_the_chosen_reply(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, P0), LOOP)
    step = w.locator('.descent-field[data-field="step"]')
    number, slider = step.locator("input[type=number]"), step.locator("input[type=range]")
    assert slider.get_attribute("max") == _last("story") == "23"  # pre-rendered for the default reply
    w.locator("button.descent-chip__button", has_text="A chat question").click()
    expect(slider).to_have_attribute("max", _last("chat"), timeout=RECOMPUTE_TIMEOUT_MS)
    expect(number).to_have_attribute("max", _last("chat"))
    number.fill("40")
    expect(stat_number(page, LOOP, "Token chosen")).to_have_text(
        prompt_trace("chat")["generation"]["steps"][40]["token"]["text"].replace(" ", "\u2423"),
        timeout=RECOMPUTE_TIMEOUT_MS)
    # back to the 24-step story: the slider ends at 23 and the value moves to that end; the note says so
    w.locator("button.descent-chip__button", has_text="Story opener").click()
    expect(slider).to_have_attribute("max", "23", timeout=RECOMPUTE_TIMEOUT_MS)
    expect(number).to_have_value("23")
    expect(w).to_contain_text("This continuation has only 24 steps (0 to 23); showing the last one.")
    assert all(is_local(u) for u in page.descent_requests)


def test_autoregression_says_attention_reads_the_cache(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, P1), AUTO, check_static=False)
    w.locator('.descent-field[data-field="step"] input[type=number]').fill("20")
    prompt = len(prompt_trace("chat")["tokens"])
    expect(stat_number(page, AUTO, "Keys and values its attention reads")).to_have_text(
        str(prompt + 20), timeout=RECOMPUTE_TIMEOUT_MS)
    expect(stat_number(page, AUTO, "This step, with a KV cache")).to_have_text("1")


def test_stack_norm_and_moe_router_new_models(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, P1), STACK, check_static=False)
    expect(w).to_contain_text("LayerNorm, gain and bias (not in the total)")
    w.locator('.descent-field[data-field="norm"] select').select_option("rmsnorm")
    expect(w).to_contain_text("RMSNorm, gain only (not in the total)", timeout=RECOMPUTE_TIMEOUT_MS)
    m = page.locator(MOE)
    m.scroll_into_view_if_needed()
    m.locator('.descent-field[data-field="model"] select').select_option("qwen3-next-80b-a3b")
    expect(m).to_contain_text("leaves out the embedding table and the output head", timeout=RECOMPUTE_TIMEOUT_MS)
    assert m.locator("td.descent-cell.is-used").count() == 10
    m.locator('.descent-field[data-field="model"] select').select_option("llama-4-scout")
    expect(m).to_contain_text("not rescaled to add up to 1", timeout=RECOMPUTE_TIMEOUT_MS)


def test_changed_widgets_have_no_axe_violations(page, site_dir, server):
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    for name, roots in ((P0, (LOOP,)), (P1, (STACK, MOE, AUTO))):
        page.goto(page_url(site_dir, server, name))
        for root in roots:
            page.locator(root).scroll_into_view_if_needed()
            # Checked as a reader sees it once it settles: live, no recompute in flight (a busy
            # widget dims its output on purpose for a moment; CI once caught that moment).
            page.wait_for_selector(f'{root}[data-state="live"]:not(.descent-widget--busy)', timeout=LIVE_TIMEOUT_MS)
            results = axe_mod.Axe().run(page, context=root, options={"resultTypes": ["violations"]})
            assert not results.response["violations"], results.generate_report()

