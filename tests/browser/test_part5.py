"""Part 5 in a real browser: the "Size it yourself" sandbox and "Decode speed across the field".

The served page's sandbox goes live (Pyodide worker); changing the model and the accelerator
recomputes, and the values shown equal ``descent.memory.size`` computed here; a bad context shows
the inline message while the last good result stays; the won't-fit rows of the field widget are the
ones ``descent.widgets.part5.across_field`` marks. The ``page`` fixture (conftest.py) fails any test
whose page or worker requested a host other than 127.0.0.1; the tests also check it directly.
"""

from __future__ import annotations

import pytest
from helpers import RECOMPUTE_TIMEOUT_MS, go_live, is_local, page_url, stat_number

from descent import catalog, predict
from descent.memory import size, split_field
from descent.units import format_number
from descent.widgets.part5 import DEFAULTS, across_field, rate_text

expect = pytest.importorskip("playwright.sync_api").expect

SANDBOX = '.descent-widget[data-widget="size_it_yourself"]'
FIELD = '.descent-widget[data-widget="decode_across_field"]'
PAGE = "part-5-the-whole-descent"
def _wait_stat(page, root: str, label: str, expected: str) -> None:
    """Wait until the stat in ``root`` whose label starts with ``label`` shows ``expected``."""
    expect(stat_number(page, root, label, exact=False)).to_have_text(expected, timeout=RECOMPUTE_TIMEOUT_MS)


def test_sandbox_live_recomputes_and_keeps_last_good(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), SANDBOX)
    d = DEFAULTS
    s0 = size(d["model"], d["accelerator"], d["weights"], d["kv"], d["context"], d["batch"])
    _wait_stat(page, SANDBOX, "Decode ceiling per sequence", rate_text(s0.decode_tokens_per_s))

    # Change the model: gpt-oss-120b on the default H200, FP8 weights.
    w.locator('.descent-field[data-field="model"] select').select_option("gpt-oss-120b")
    s1 = size("gpt-oss-120b", d["accelerator"], d["weights"], d["kv"], d["context"], d["batch"])
    _wait_stat(page, SANDBOX, "Decode ceiling per sequence", rate_text(s1.decode_tokens_per_s))
    assert s1.decode_tokens_per_s != s0.decode_tokens_per_s
    out = w.locator(".descent-widget__output")
    assert "is a mixture of experts" in out.inner_text()
    assert w.get_attribute("data-state") == "live"

    # Change the accelerator: an RTX 5090 (32 GiB) cannot hold gpt-oss-120b's FP8 weights.
    w.locator('.descent-field[data-field="accelerator"] select').select_option("rtx-5090")
    s2 = size("gpt-oss-120b", "rtx-5090", d["weights"], d["kv"], d["context"], d["batch"])
    assert not s2.fits
    _wait_stat(page, SANDBOX, "Decode ceiling per sequence (if it fit)", rate_text(s2.decode_tokens_per_s))
    # Beside the ceiling, the expected range from the consumer-GPU memory-bound measurements, read in
    # the browser from the wheel's record (descent.predict.expected_range, computed here).
    e = predict.expected_range(s2.decode_tokens_per_s, "rtx-5090", s2.bound)
    _wait_stat(page, SANDBOX, f"Decode per sequence (if it fit), expected (from {e.measurements} public measurements)",
               f"{format_number(e.low, 3)} to {format_number(e.high, 3)}")
    good = out.inner_text()
    assert "Does not fit on one NVIDIA GeForce RTX 5090" in good
    assert f"at least {s2.accelerators_needed:,} such chips" in good

    # A bad context: inline message on the context field, last good result kept.
    w.locator('.descent-field[data-field="context"] input[type=number]').fill("0")
    page.wait_for_selector(f'{SANDBOX}[data-state="error"]', timeout=RECOMPUTE_TIMEOUT_MS)
    err = w.locator('.descent-field[data-field="context"] .descent-field__error')
    assert "Context must be 1 to 20,000,000 tokens" in err.inner_text()
    assert out.inner_text() == good

    # A good value again recomputes and clears the message.
    w.locator('.descent-field[data-field="context"] input[type=number]').fill("32768")
    s3 = size("gpt-oss-120b", "rtx-5090", d["weights"], d["kv"], 32768, d["batch"])
    _wait_stat(page, SANDBOX, "Decode ceiling per sequence (if it fit)", rate_text(s3.decode_tokens_per_s))
    page.wait_for_selector(f'{SANDBOX}[data-state="live"]', timeout=RECOMPUTE_TIMEOUT_MS)
    assert err.inner_text() == ""

    assert page.descent_requests, "no request recorded"
    assert all(is_local(u) for u in page.descent_requests), [
        u for u in page.descent_requests if not is_local(u)
    ]
    assert not page.descent_console_errors, page.descent_console_errors


def test_field_widget_greys_the_chips_that_cannot_hold_it(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), FIELD)
    w.locator('.descent-field[data-field="model"] select').select_option("llama-3.1-8b")
    # The bars are the chips a one-chip comparison shows (split_field leaves out the SRAM machines).
    rows, _ = split_field(across_field("llama-3.1-8b", "fp8"))
    expected = sorted(catalog.accelerator(s.accelerator).name for s in rows if not s.fits)
    fastest = f"{rate_text(rows[0].decode_tokens_per_s)} tokens/s"
    expect(w.locator(".descent-bar__value").first).to_have_text(fastest, timeout=RECOMPUTE_TIMEOUT_MS)
    greyed = sorted(w.locator(".descent-bar--greyed .descent-bar__label").all_inner_texts())
    assert greyed == expected
    assert all(is_local(u) for u in page.descent_requests)


def test_part5_widgets_have_no_axe_violations(page, site_dir, server):
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    url = page_url(site_dir, server, PAGE)
    go_live(page, url, SANDBOX)
    # Over capacity (warn note, hatched band) as well as the default fitting state.
    page.locator(f'{SANDBOX} .descent-field[data-field="accelerator"] select').select_option("rtx-5090")
    page.wait_for_selector(f"{SANDBOX} .descent-stack--over", timeout=RECOMPUTE_TIMEOUT_MS)
    for root in (SANDBOX, FIELD):
        page.locator(root).scroll_into_view_if_needed()
        results = axe_mod.Axe().run(page, context=root, options={"resultTypes": ["violations"]})
        assert not results.response["violations"], results.generate_report()
