"""The sizing sandbox with your model and your chip, in a real browser.

Choosing "Your model" opens the config.json box (it starts with Qwen3-32B's) and the result is that
model's; pasting another config.json recomputes; a config.json the reader cannot take puts its
message on that box while the last good result stays. Choosing "Your chip" opens the three number
boxes and the result is descent.memory.size on descent.custom.accelerator of those numbers.
Going back to catalog entries hides the boxes again. axe finds no violations with the boxes open
(in the live state: in the error state the runtime fades the stale result on purpose).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import RECOMPUTE_TIMEOUT_MS, go_live, is_local, page_url, stat_number

from descent import custom, hfconfig
from descent.memory import size
from descent.widgets.part5 import DEFAULTS, EXAMPLE_CONFIG, rate_text

expect = pytest.importorskip("playwright.sync_api").expect

SANDBOX = '.descent-widget[data-widget="size_it_yourself"]'
PAGE = "part-5-the-whole-descent"
CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
PER_SEQ = "Decode ceiling per sequence"


def _field(w, name):
    return w.locator(f'.descent-field[data-field="{name}"]')


def _expect_rate(page, s) -> None:
    number = stat_number(page, SANDBOX, PER_SEQ, exact=False)
    expect(number).to_have_text(rate_text(s.decode_tokens_per_s), timeout=RECOMPUTE_TIMEOUT_MS)


def test_paste_a_config_and_type_a_chip(page, site_dir, server):
    w = go_live(page, page_url(site_dir, server, PAGE), SANDBOX)
    d = DEFAULTS
    box = _field(w, "config_json")
    expect(box).to_be_hidden()

    # Your model: the box opens with Qwen3-32B's config.json, and the result is that model's.
    _field(w, "model").locator("select").select_option("custom")
    expect(box).to_be_visible()
    assert box.locator("textarea").input_value() == EXAMPLE_CONFIG
    qwen = hfconfig.read_config(EXAMPLE_CONFIG)
    _expect_rate(page, size(qwen, d["accelerator"], d["weights"], d["kv"], d["context"], d["batch"]))
    out = w.locator(".descent-widget__output")
    assert "32.8 billion parameters" in out.inner_text()

    # Paste another model's config.json: gpt-oss-20b (as a reader would, replacing the text).
    text = (CONFIGS / "gpt-oss-20b.json").read_text(encoding="utf-8")
    box.locator("textarea").fill(text)
    oss = hfconfig.read_config(text)
    _expect_rate(page, size(oss, d["accelerator"], d["weights"], d["kv"], d["context"], d["batch"]))
    assert "is a mixture of experts" in out.inner_text()
    good = out.inner_text()

    # A config.json of an architecture it does not read: the message sits on the box, the last
    # good result stays.
    box.locator("textarea").fill('{"model_type": "falcon", "hidden_size": 4544}')
    page.wait_for_selector(f'{SANDBOX}[data-state="error"]', timeout=RECOMPUTE_TIMEOUT_MS)
    err = box.locator(".descent-field__error")
    assert re.search(r'model_type "falcon" is not an architecture .*allowed: llama, mistral', err.inner_text())
    assert box.locator("textarea").get_attribute("aria-invalid") == "true"
    assert out.inner_text() == good
    # Half-typed JSON: the message says where.
    box.locator("textarea").fill('{"model_type": "llama",')
    expect(err).to_contain_text("config.json must be valid JSON", timeout=RECOMPUTE_TIMEOUT_MS)

    # Back to a good config: the message clears.
    box.locator("textarea").fill(text)
    page.wait_for_selector(f'{SANDBOX}[data-state="live"]', timeout=RECOMPUTE_TIMEOUT_MS)
    assert err.inner_text() == ""

    # Your chip: three boxes open; the result is gpt-oss-20b on that chip.
    for name in ("memory_gb", "bandwidth_gbs", "tflops"):
        expect(_field(w, name)).to_be_hidden()
    _field(w, "accelerator").locator("select").select_option("custom")
    for name, value in (("memory_gb", "16"), ("bandwidth_gbs", "448"), ("tflops", "90")):
        expect(_field(w, name)).to_be_visible()
        _field(w, name).locator("input").fill(value)
    chip = custom.accelerator(16, 448, 90)
    # (The rate alone can show before the last box's reply: memory-bound, it does not depend on the
    # peak. The chip's name says all three numbers arrived.)
    expect(out).to_contain_text("your chip (16 GB, 448 GB/s, 90 TFLOP/s)", timeout=RECOMPUTE_TIMEOUT_MS)
    _expect_rate(page, size(oss, chip, d["weights"], d["kv"], d["context"], d["batch"]))

    # A bad number is reported on its own box.
    _field(w, "bandwidth_gbs").locator("input").fill("0")
    expect(_field(w, "bandwidth_gbs").locator(".descent-field__error")).to_have_text(
        "Memory bandwidth must be 1 to 100,000,000 GB/s, got 0", timeout=RECOMPUTE_TIMEOUT_MS)
    _field(w, "bandwidth_gbs").locator("input").fill("448")
    page.wait_for_selector(f'{SANDBOX}[data-state="live"]', timeout=RECOMPUTE_TIMEOUT_MS)

    # Catalog entries again: the boxes close and no longer count.
    _field(w, "model").locator("select").select_option("llama-3.1-8b")
    _field(w, "accelerator").locator("select").select_option("h100-sxm")
    expect(box).to_be_hidden()
    expect(_field(w, "memory_gb")).to_be_hidden()
    _expect_rate(page, size("llama-3.1-8b", "h100-sxm", d["weights"], d["kv"], d["context"], d["batch"]))

    assert all(is_local(u) for u in page.descent_requests), [u for u in page.descent_requests if not is_local(u)]
    assert not page.descent_console_errors, page.descent_console_errors


def test_open_boxes_have_no_axe_violations(page, site_dir, server):
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    w = go_live(page, page_url(site_dir, server, PAGE), SANDBOX)
    _field(w, "model").locator("select").select_option("custom")
    _field(w, "accelerator").locator("select").select_option("custom")
    expect(_field(w, "config_json")).to_be_visible()
    expect(_field(w, "tflops")).to_be_visible()
    page.wait_for_selector(f'{SANDBOX}[data-state="live"]', timeout=RECOMPUTE_TIMEOUT_MS)
    expect(w.locator(".descent-widget__output")).to_contain_text("your chip", timeout=RECOMPUTE_TIMEOUT_MS)
    results = axe_mod.Axe().run(page, context=SANDBOX, options={"resultTypes": ["violations"]})
    assert not results.response["violations"], results.generate_report()
