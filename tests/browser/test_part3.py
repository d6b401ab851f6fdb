"""Part 3 in a real browser: each of the seven widgets goes live, recomputes when an input changes
(to the value descent.serving computes here), shows a bad value inline while keeping the last good
result, and has no axe violations. The ``page`` fixture fails any test whose page or worker asked a
host other than 127.0.0.1."""

from __future__ import annotations

import pytest
from helpers import RECOMPUTE_TIMEOUT_MS, go_live, is_local, page_url, stat_number

from descent import serving
from descent.units import format_number, format_percent, format_time

expect = pytest.importorskip("playwright.sync_api").expect

PAGE = "part-3-serving-software"
WIDGETS = ["prefill_decode", "batching", "prefix_cache", "paged_kv", "kv_transfer", "break_even", "speculative"]


def root(name: str) -> str:
    return f'.descent-widget[data-widget="{name}"]'


def _set_number(w, field: str, value: str) -> None:
    w.locator(f'.descent-field[data-field="{field}"] input[type=number]').fill(value)


def _assert_clean(page) -> None:
    assert all(is_local(u) for u in page.descent_requests), [u for u in page.descent_requests if not is_local(u)]
    assert not page.descent_console_errors, page.descent_console_errors


def test_speculative_goes_live_recomputes_and_rejects_bad_input(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), root("speculative"))
    _set_number(w, "acceptance", "1")
    # Acceptance 1: every drafted token survives, k + 1 = 5 tokens per pass (the limit, no division by zero).
    expect(stat_number(page, root("speculative"), "Tokens per target pass")).to_have_text(
        format_number(5.0, 3), timeout=RECOMPUTE_TIMEOUT_MS)
    good = w.locator(".descent-widget__output").inner_text()
    _set_number(w, "acceptance", "1.5")
    page.wait_for_selector(f'{root("speculative")}[data-state="error"]', timeout=RECOMPUTE_TIMEOUT_MS)
    err = w.locator('.descent-field[data-field="acceptance"] .descent-field__error')
    assert "Acceptance rate must be 0 to 1" in err.inner_text()
    assert w.locator(".descent-widget__output").inner_text() == good
    _set_number(w, "draft_cost", "2")
    _set_number(w, "acceptance", "0.1")
    r = serving.speculative(0.1, 4, 2.0)
    expect(stat_number(page, root("speculative"), "Speedup")).to_have_text(
        format_number(r.speedup, 3) + "×", timeout=RECOMPUTE_TIMEOUT_MS)
    assert "slows decoding down" in w.locator(".descent-widget__output").inner_text()
    _assert_clean(page)


def test_batching_switches_policy_on_the_same_trace(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), root("batching"))
    w.locator('.descent-field[data-field="policy"] input[value="static"]').check(force=True)
    kw = dict(model="llama-3.1-70b", accelerator="h200", weights="fp8", kv="bf16", requests=200, rate=4.0,
              prompt_mean=1000, output_mean=250, batch=32, chunk=0, seed=0)
    m = serving.metrics(serving.run(policy="static", **kw))
    expect(stat_number(page, root("batching"), "Slot use")).to_have_text(
        format_percent(m.slot_utilization), timeout=RECOMPUTE_TIMEOUT_MS)
    assert w.locator(".descent-cell.is-waste").count() > 0  # finished requests holding their slots
    _assert_clean(page)


@pytest.mark.parametrize(("name", "field", "value", "label"), [
    ("prefill_decode", "prompt_tokens", "4096", "Time to first token"),
    ("prefix_cache", "hit_rate", "0.5", "Expected TTFT"),
    ("paged_kv", "block_size", "64", "Pool holding tokens"),
    ("kv_transfer", "context", "65536", "KV cache of the sequence"),
    ("break_even", "utilization", "0.9", "Cost per million tokens"),
])
def test_widget_recomputes_when_an_input_changes(page, site_dir, server, name, field, value, label):
    w = go_live(page, page_url(site_dir, server, PAGE), root(name))
    before = stat_number(page, root(name), label).inner_text()
    _set_number(w, field, value)
    expect(stat_number(page, root(name), label)).not_to_have_text(before, timeout=RECOMPUTE_TIMEOUT_MS)
    assert w.get_attribute("data-state") == "live"
    _assert_clean(page)


def test_prefill_decode_value_matches_the_core(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), root("prefill_decode"))
    w.locator('.descent-field[data-field="model"] select').select_option("llama-3.1-8b")
    s = serving.server("llama-3.1-8b", "h200", "fp8", "bf16")
    expect(stat_number(page, root("prefill_decode"), "Time to first token")).to_have_text(
        format_time(serving.prefill(s, 1024).seconds), timeout=RECOMPUTE_TIMEOUT_MS)
    _assert_clean(page)


def test_part3_widgets_have_no_axe_violations(page, site_dir, server):
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    go_live(page, page_url(site_dir, server, PAGE), root("prefill_decode"))
    for name in WIDGETS:
        page.locator(root(name)).scroll_into_view_if_needed()
        page.wait_for_selector(f'{root(name)}[data-state="live"]', timeout=RECOMPUTE_TIMEOUT_MS)
        results = axe_mod.Axe().run(page, context=root(name), options={"resultTypes": ["violations"]})
        assert not results.response["violations"], (name, results.generate_report())
