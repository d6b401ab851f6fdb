"""Part 2 in a real browser: each widget goes live, recomputes when an input changes (the value
shown equals what the core computes here), clickable cells and chips set their inputs, and axe
finds no violations. The page's size_it_yourself instance (id=part2) is live too."""

from __future__ import annotations

import pytest
from helpers import RECOMPUTE_TIMEOUT_MS, go_live, is_local, page_url, stat_number

from descent import floats, quant
from descent import weights_sample as ws
from descent.widgets import views as v

expect = pytest.importorskip("playwright.sync_api").expect

PAGE = "part-2-weights-as-numbers"
ZOOM = '.descent-widget[data-widget="weight_zoom"]'
BITS = '.descent-widget[data-widget="float_bits"]'
QUANT = '.descent-widget[data-widget="quantize_weights"]'
BLOCKS = '.descent-widget[data-widget="block_scaling"]'
NAMES = '.descent-widget[data-widget="gguf_name"]'
SANDBOX = '.descent-widget[data-widget="size_it_yourself"]'
ALL = (ZOOM, BITS, QUANT, BLOCKS, NAMES, SANDBOX)


def _wait(page, root: str, label: str, expected: str) -> None:
    expect(stat_number(page, root, label)).to_have_text(expected, timeout=RECOMPUTE_TIMEOUT_MS)


def test_zoom_layer_and_click(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), ZOOM, check_static=False)  # in view at load
    w.locator('.descent-field[data-field="layer"] input[type=number]').fill("15")
    d, m, codes = ws.block(15, "attn_q")
    _wait(page, ZOOM, "Its value", v.fmt(d * codes[4] + m, 4))
    # Click the cell of weight 9: the weight box and the value follow.
    w.locator("button.descent-cell__button").nth(9).click()
    _wait(page, ZOOM, "Its code", str(codes[9]))
    expect(w.locator('.descent-field[data-field="weight"] input[type=number]')).to_have_value("9")
    assert all(is_local(u) for u in page.descent_requests)
    assert not page.descent_console_errors, page.descent_console_errors


def test_float_bits_type_and_flip(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), BITS)
    w.locator('input[type=radio][value="fp8_e4m3"]').check(force=True)
    _wait(page, BITS, "Stored value", floats.value_text(floats.get("fp8_e4m3").round(0.1).value))
    w.locator(".descent-field textarea").fill("470")
    _wait(page, BITS, "Rounding error", "overflow")
    w.locator(".descent-field textarea").fill("1")
    _wait(page, BITS, "Stored value", "1.0")
    # Flip the sign bit (the first cell): -1.0.
    w.locator("button.descent-cell__button").first.click()
    _wait(page, BITS, "Stored value", "-1.0")
    # A bad value: the message, and the last good result stays.
    w.locator(".descent-field textarea").fill("0b1")
    page.wait_for_selector(f'{BITS}[data-state="error"]', timeout=RECOMPUTE_TIMEOUT_MS)
    assert "has 8 bits" in w.locator('.descent-field[data-field="value"] .descent-field__error').inner_text()
    expect(stat_number(page, BITS, "Stored value")).to_have_text("-1.0")


def test_quantize_bits(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), QUANT)
    vals = ws.sample_values()
    w.locator('input[type=radio][value="2"]').check(force=True)
    q = quant.int_quantize(vals, 2)
    _wait(page, QUANT, "RMSE", v.fmt(quant.error_stats(vals, q.values).rmse))
    w.locator('input[type=checkbox]').check(force=True)
    q = quant.int_quantize(vals, 2, symmetric=False)
    _wait(page, QUANT, "Levels used", f"{len(set(q.codes))} of {q.levels}")


def test_block_scaling_outlier(page, site_dir, server):
    from descent.widgets.part2 import block_scaling_compute

    w = go_live(page, page_url(site_dir, server, PAGE), BLOCKS)
    w.locator('.descent-field[data-field="outlier"] input[type=number]').fill("30")
    r = block_scaling_compute(30.0, 100)
    _wait(page, BLOCKS, "RMSE, one scale", v.fmt(r["tensor"]["rmse"]))
    _wait(page, BLOCKS, "RMSE, NVFP4", v.fmt(r["nvfp4"]["rmse"]))


def test_gguf_name_preset_and_typing(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), NAMES)
    w.locator("button.descent-chip__button", has_text="Q8_0").click()
    _wait(page, NAMES, "Bits per weight", "8.5")
    w.locator(".descent-field textarea").fill("my-model.IQ4_XS.gguf")
    _wait(page, NAMES, "Bits per weight", "4.25")


def test_sandbox_instance_is_live(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), SANDBOX)
    w.locator('.descent-field[data-field="accelerator"] select').select_option("m3-ultra")
    expect(w.locator(".descent-note").first).to_contain_text("M3 Ultra", timeout=RECOMPUTE_TIMEOUT_MS)


def test_part2_widgets_have_no_axe_violations(page, site_dir, server):
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    go_live(page, page_url(site_dir, server, PAGE), ZOOM, check_static=False)
    for root in ALL:
        page.locator(root).scroll_into_view_if_needed()
        page.wait_for_selector(f'{root}[data-state="live"]', timeout=60_000)
        results = axe_mod.Axe().run(page, context=root, options={"resultTypes": ["violations"]})
        assert not results.response["violations"], results.generate_report()
