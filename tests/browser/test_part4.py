"""Part 4 in a real browser: every Part 4 widget goes live (Pyodide worker), changing an input
changes its output to the value the Python computes here, a bad input shows the inline message
while the last good result stays, only 127.0.0.1 is contacted, axe finds no violations; plus the
page at phone width does not scroll sideways, with screenshots in light, dark and phone width
written to $DESCENT_SCREENSHOTS when set.

One page is kept for the module (the ``reader`` fixture): Pyodide loads once, as for a reader.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from helpers import LIVE_TIMEOUT_MS, RECOMPUTE_TIMEOUT_MS, page_path, page_url, stat_number

from descent import attention_io, catalog, parallel, roofline
from descent.memory import size
from descent.units import format_bytes, format_int, format_number, format_percent

expect = pytest.importorskip("playwright.sync_api").expect

PAGE = "part-4-hardware"
W = {name: f'.descent-widget[data-widget="{name}"]' for name in (
    "gpu_anatomy", "accelerator_landscape", "tiled_gemm", "layer_matmuls", "flash_attention",
    "roofline_explorer", "parallelism", "decode_across_field")}


def _live(reader, site_dir, name: str):
    """The widget ``name`` on the Part 4 page, live (the page is opened once per module)."""
    path = page_path(site_dir, PAGE)
    if not reader.page.url.endswith(path):
        reader.visit(path)
    w = reader.page.locator(W[name]).first
    w.scroll_into_view_if_needed()
    reader.page.wait_for_selector(f'{W[name]}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    return w


def _stat(reader, name, label, expected, exact=True):
    expect(stat_number(reader.page, W[name], label, exact=exact)).to_have_text(expected, timeout=RECOMPUTE_TIMEOUT_MS)


def _field(w, name, kind="number"):
    sel = {"number": "input[type=number]", "select": "select"}[kind]
    return w.locator(f'.descent-field[data-field="{name}"] {sel}')


def test_gpu_anatomy_live(reader, site_dir):
    w = _live(reader, site_dir, "gpu_anatomy")
    _field(w, "accelerator", "select").select_option("mi300x")
    # AMD Instinct MI300X: 304 compute units x 4 matrix cores (CDNA 3 whitepaper).
    _stat(reader, "gpu_anatomy", "CUs", "304")
    _stat(reader, "gpu_anatomy", "Tensor cores", format_int(304 * 4))
    assert "Infinity Cache" in w.locator(".descent-widget__output").inner_text()
    assert not reader.problems(), reader.problems()


def test_landscape_live(reader, site_dir):
    w = _live(reader, site_dir, "accelerator_landscape")
    _field(w, "accelerator", "select").select_option("cerebras-wse-3")
    needed = size("llama-3.1-70b", "cerebras-wse-3", "fp8", "bf16", 8192, 1).accelerators_needed
    _stat(reader, "accelerator_landscape", "Chips to hold it", format_int(needed))
    assert "Decode ceiling" not in w.locator(".descent-widget__output").inner_text()
    _field(w, "accelerator", "select").select_option("rtx-5090")
    s = size("llama-3.1-70b", "rtx-5090", "fp8", "bf16", 8192, 1)
    _stat(reader, "accelerator_landscape", "Decode ceiling per sequence (if it fit)",
          format_number(s.decode_tokens_per_s, 3))
    assert not reader.problems(), reader.problems()


def test_tiled_gemm_live_and_clickable(reader, site_dir):
    w = _live(reader, site_dir, "tiled_gemm")
    # Click the tenth output tile: the step field follows and the grid moves on.
    w.locator("td.descent-cell button").nth(10).click()
    expect(_field(w, "step")).to_have_value("10", timeout=RECOMPUTE_TIMEOUT_MS)
    expect(w.locator(".descent-grid caption")).to_contain_text("step 10 of 16", timeout=RECOMPUTE_TIMEOUT_MS)
    # A 128 x 128 tile: 128 / 2 = 64 FLOP per byte; step 10 no longer exists (2 x 2 tiles): the last
    # tile is shown, a note says so, and the step control ends at 3 and moves there (issue 24).
    w.locator('.descent-field[data-field="tile"] input[value="128"]').check()
    expect(w.locator(".descent-widget__output")).to_contain_text("step 10 is past the last", timeout=RECOMPUTE_TIMEOUT_MS)
    expect(_field(w, "step")).to_have_value("3")
    assert _field(w, "step").get_attribute("max") == "3"
    assert w.get_attribute("data-state") == "live"
    _field(w, "step").fill("2")
    _stat(reader, "tiled_gemm", "Arithmetic intensity", "64")
    assert not reader.problems(), reader.problems()


def test_layer_matmuls_live(reader, site_dir):
    w = _live(reader, site_dir, "layer_matmuls")
    _field(w, "batch").fill("256")
    # At 256 tokens the Q projection crosses the H200's FP8 ridge and K does not (test_widgets_part4).
    expect(w.locator("caption")).to_have_text("One layer of Llama 3.1 70B, 256 tokens", timeout=RECOMPUTE_TIMEOUT_MS)
    cells = w.locator("td").all_inner_texts()
    assert "compute" in cells and "memory" in cells
    assert not reader.problems(), reader.problems()


def test_flash_attention_live(reader, site_dir):
    w = _live(reader, site_dir, "flash_attention")
    _field(w, "head_dim").fill("64")
    t = attention_io.traffic(2048, 64, 2, "h200")
    _stat(reader, "flash_attention", "Naive / FlashAttention", format_number(t.ratio, 3, trim=True))
    _field(w, "seq_len").fill("0")
    reader.page.wait_for_selector(f'{W["flash_attention"]}[data-state="error"]', timeout=RECOMPUTE_TIMEOUT_MS)
    assert "Sequence length must be 1 to 10,000,000" in w.locator(".descent-field__error").first.inner_text()
    assert format_number(t.ratio, 3, trim=True) in w.locator(".descent-widget__output").inner_text()
    assert not reader.problems(), reader.problems()


def test_roofline_explorer_live(reader, site_dir):
    w = _live(reader, site_dir, "roofline_explorer")
    _field(w, "context").fill("128")
    _field(w, "batch").fill("1024")
    s = roofline.step("llama-3.1-70b", "h200", "fp8", "bf16", 128, 1024)
    _stat(reader, "roofline_explorer", "Decode intensity", format_number(s.intensity, 3, trim=True))
    _stat(reader, "roofline_explorer", "Decode uses", format_percent(s.compute_share))
    b = roofline.crossover_batch("llama-3.1-70b", "h200", "fp8", "bf16", 128)
    expect(w.locator(".descent-note")).to_contain_text(f"from a batch of {format_int(b)}", timeout=RECOMPUTE_TIMEOUT_MS)
    assert not reader.problems(), reader.problems()


def test_parallelism_live(reader, site_dir):
    w = _live(reader, site_dir, "parallelism")
    _field(w, "tp").fill("8")
    p = parallel.plan("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1, tp=8)
    _stat(reader, "parallelism", "Devices", "8")
    _stat(reader, "parallelism", "Weights per device", format_bytes(p.weights_bytes_per_device, "GB", 3, trim=True))
    good = w.locator(".descent-widget__output").inner_text()
    _field(w, "pp").fill("99")
    reader.page.wait_for_selector(f'{W["parallelism"]}[data-state="error"]', timeout=RECOMPUTE_TIMEOUT_MS)
    assert "Pipeline parallel must be 1 to 64" in w.locator('.descent-field[data-field="pp"] .descent-field__error').inner_text()
    assert w.locator(".descent-widget__output").inner_text() == good
    assert not reader.problems(), reader.problems()


def test_decode_across_field_reused_with_a_moe_model(reader, site_dir):
    w = _live(reader, site_dir, "decode_across_field")
    expect(_field(w, "model", "select")).to_have_value("gpt-oss-120b")
    _field(w, "model", "select").select_option("deepseek-v3")
    expect(w.locator(".descent-view__caption")).to_contain_text("DeepSeek", timeout=RECOMPUTE_TIMEOUT_MS)
    assert not reader.problems(), reader.problems()


def test_part4_widgets_have_no_axe_violations(page, site_dir, server):
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    page.goto(page_url(site_dir, server, PAGE))
    for root in W.values():
        page.locator(root).first.scroll_into_view_if_needed()
        results = axe_mod.Axe().run(page, context=root, options={"resultTypes": ["violations"]})
        assert not results.response["violations"], (root, results.generate_report())


@pytest.mark.parametrize("kind", ["light", "dark", "phone"])
def test_part4_screenshots(make_page, site_dir, server, kind):
    out = os.environ.get("DESCENT_SCREENSHOTS")
    args = {"viewport": {"width": 390, "height": 844}} if kind == "phone" else {"viewport": {"width": 1280, "height": 900}}
    if kind == "dark":
        args["color_scheme"] = "dark"
    pg = make_page(**args)
    pg.goto(page_url(site_dir, server, PAGE))
    overflow = pg.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, f"{kind}: page scrolls sideways by {overflow}px"
    if out:
        for name, root in W.items():
            pg.locator(root).first.screenshot(path=str(Path(out) / f"part4-{kind}-{name}.png"))
        pg.screenshot(path=str(Path(out) / f"part4-{kind}-page.png"), full_page=True)


def test_every_catalog_gpu_with_internals_is_offered(reader, site_dir):
    w = _live(reader, site_dir, "gpu_anatomy")
    offered = w.locator('.descent-field[data-field="accelerator"] option').evaluate_all("os => os.map(o => o.value)")
    from descent import memory_tiers

    assert offered == [a.id for a in memory_tiers.gpus()]
    assert re.fullmatch(r"[a-z0-9-]+", catalog.accelerator(offered[0]).id)
