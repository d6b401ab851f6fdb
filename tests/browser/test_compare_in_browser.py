"""Pin and compare, open a calculator's number, copy its result (issue 26) on Part 5, in a real browser.

One page load drives the three calculators that compare (the sizing sandbox, the server dials, Price
it out): the Pin button (``data-action="pin"``, share.js) holds the current inputs in the widget's
``pinned`` field; after an input changes, the results set both set-ups side by side with the values
``descent.memory.size``, ``descent.dials.server_dials`` and ``descent.economics.cost_by_batch`` give
here. On the same page a widget's number opens its derivation by mouse, Enter and Space (computed in
the worker at the inputs shown: its formula's value is the number printed; axe finds nothing serious
in its dialog), and "Copy as JSON" / "Copy as Markdown" copy the dials' result under ``descent dials
--json``'s keys. A second test opens
the sandbox's address in a fresh context and finds the same comparison.
"""

from __future__ import annotations

import json
import re

import pytest
from helpers import LIVE_TIMEOUT_MS, RECOMPUTE_TIMEOUT_MS, go_live, page_url

from descent import dials, economics
from descent.memory import size
from descent.units import format_number, format_time
from descent.widgets.part5 import DEFAULTS, rate_text

expect = pytest.importorskip("playwright.sync_api").expect

SANDBOX = '.descent-widget[data-widget="size_it_yourself"]'
DIALS = '.descent-widget[data-widget="server_dials"]'
PRICE = '.descent-widget[data-widget="price_it_out"]'
PAGE = "part-5-the-whole-descent"


def _row(w, label: str):
    """The cells of the comparison row ``label``: pinned, now, ratio, better."""
    return w.locator(".descent-widget__output table tr").filter(has_text=label).first.locator("td")


def _pin(w) -> None:
    """Press Pin: the Compare box, hidden while empty, shows with the inputs it holds."""
    box = w.locator('.descent-field[data-field="pinned"]')
    expect(box).to_be_hidden()  # a reader saw an empty "pinned" box before pressing Pin
    w.locator('[data-action="pin"]').click()
    expect(box.locator("textarea")).not_to_have_value("")
    expect(box).to_be_visible()


def _dialog(page):
    return page.get_by_role("dialog").and_(page.locator(".descent-how-dialog"))


def _read_back(text: str) -> tuple[float, float]:
    """A printed number (``"66.5"``, ``"1,234"``, ``"12.3%"``) and half a unit in its last digit."""
    m = re.fullmatch(r"\$?([0-9][0-9,]*)(?:\.([0-9]+))?(%?)", text.strip())
    assert m, text
    whole, frac = m[1].replace(",", ""), m[2] or ""
    value = float(f"{whole}.{frac}" if frac else whole)
    half = 0.5 * 10.0 ** (-len(frac) if frac else max(0, len(whole.lstrip("0")) - 3))
    scale = 0.01 if m[3] else 1.0
    return value * scale, half * scale


def check_widget_derivation(page, root: str, label: str) -> None:
    """Open the number labelled ``label`` in widget ``root`` by mouse, Enter and Space: a role="dialog"
    with KaTeX, a source link, and a formula whose value (substituted, at the inputs shown) is the
    number printed. Used on Parts 2 to 5 (test_explain_in_browser)."""
    stat = page.locator(f"{root} .descent-stat").filter(
        has=page.locator(".descent-stat__label", has_text=re.compile("^" + re.escape(label))))
    number = stat.locator(".descent-stat__number")
    expect(number).to_have_attribute("role", "button")
    printed, half = _read_back(number.inner_text())
    dialog = _dialog(page)
    for how in ("click", "Enter", " "):
        if how == "click":
            number.click()
        else:
            number.focus()
            page.keyboard.press(how)
        expect(dialog).to_be_visible()
        expect(dialog).not_to_have_attribute("aria-busy", "true", timeout=RECOMPUTE_TIMEOUT_MS)
        assert dialog.locator(".katex").count() >= 2, dialog.inner_text()
        assert dialog.locator('a[href^="http"]').count() >= 1
        value = float(dialog.get_attribute("data-value"))
        assert abs(value - printed) <= half * (1 + 1e-9), (label, value, printed)
        # The substituted formula (KaTeX keeps its LaTeX in the MathML annotation) ends in that value.
        tex = dialog.locator('annotation[encoding="application/x-tex"]').nth(1).text_content()
        last = tex.rsplit("=", 1)[1].split(r"\ ")[0].replace("{,}", "").strip()
        if r"\times" in last:
            mant, exp = last.split(r"\times 10^")
            last = f"{mant.strip()}e{exp.strip('{}')}"
        assert abs(float(last) - value) <= 1e-5 * abs(value), (tex, value)
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
        assert page.evaluate("() => document.activeElement.classList.contains('descent-q--widget')")


def test_pin_compare_explain_and_export_on_part_5(make_page, site_dir, server):
    page = make_page(permissions=["clipboard-read", "clipboard-write"])
    d = DEFAULTS
    w = go_live(page, page_url(site_dir, server, PAGE), SANDBOX)

    # The sizing sandbox: the H200 pinned, the H100 now.
    _pin(w)
    assert f"accelerator:{d['accelerator']}" in w.locator('.descent-field[data-field="pinned"] textarea').input_value()
    w.locator('.descent-field[data-field="accelerator"] select').select_option("h100-sxm")
    before = size(d["model"], d["accelerator"], d["weights"], d["kv"], d["context"], d["batch"])
    after = size(d["model"], "h100-sxm", d["weights"], d["kv"], d["context"], d["batch"])
    row = _row(w, "Decode ceiling per sequence")
    expect(row.nth(1)).to_have_text(rate_text(after.decode_tokens_per_s), timeout=RECOMPUTE_TIMEOUT_MS)
    assert row.nth(0).inner_text() == rate_text(before.decode_tokens_per_s)
    assert row.nth(3).inner_text() == "pinned"  # the H200 reads its memory faster

    # Its decode ceiling opens its derivation, at the H100 now shown; axe finds nothing serious in it.
    check_widget_derivation(page, SANDBOX, "Decode ceiling per sequence")
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    w.locator(".descent-q--widget").first.click()
    expect(_dialog(page)).not_to_have_attribute("aria-busy", "true")
    results = axe_mod.Axe().run(page, context=".descent-how-dialog", options={"resultTypes": ["violations"]})
    bad = [f"{v['id']}: {[n['target'] for n in v['nodes'][:3]]}" for v in results.response["violations"]
           if v["impact"] in ("serious", "critical")]
    assert not bad, bad
    page.keyboard.press("Escape")

    # The server dials: eight H100s pinned, four now.
    s = page.locator(DIALS)
    s.scroll_into_view_if_needed()
    page.wait_for_selector(f'{DIALS}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    _pin(s)
    s.locator('.descent-field[data-field="tp"] input[type=number]').fill("4")
    eight = dials.server_dials("llama-3.1-70b", "h100-sxm", "fp8", "bf16", 8192, 1, 8, 3.0)
    four = dials.server_dials("llama-3.1-70b", "h100-sxm", "fp8", "bf16", 8192, 1, 4, 3.0)
    row = _row(s, "Time to first token")
    expect(row.nth(1)).to_have_text(format_time(four.ttft_s), timeout=RECOMPUTE_TIMEOUT_MS)
    assert row.nth(0).inner_text() == format_time(eight.ttft_s)
    assert row.nth(3).inner_text() == "pinned"  # eight chips prefill sooner
    cost = _row(s, "Per million output tokens")
    assert [cost.nth(i).inner_text() for i in (0, 1, 3)] == [
        format_number(eight.usd_per_million_tokens, 3), format_number(four.usd_per_million_tokens, 3), "now"]

    # Copy as JSON: descent dials --json's keys, at the four chips shown.
    s.locator('[data-action="copy-json"]').click()
    expect(s.locator(".descent-share__said")).to_contain_text("Copied as JSON", timeout=5_000)
    data = json.loads(page.evaluate("() => navigator.clipboard.readText()"))
    assert data["tp"] == 4 and data["ttft_s"] == pytest.approx(four.ttft_s, rel=1e-12)
    assert data["usd_per_million_tokens"] == pytest.approx(four.usd_per_million_tokens, rel=1e-12)
    # Copy as Markdown: the inputs and both tables, to paste into an issue.
    s.locator('[data-action="copy-markdown"]').click()
    expect(s.locator(".descent-share__said")).to_contain_text("Copied as Markdown", timeout=5_000)
    md = page.evaluate("() => navigator.clipboard.readText()")
    assert "| Accelerators (tensor parallel) (devices) | 4 |" in md
    assert f"| Time to first token | {format_time(eight.ttft_s)} | {format_time(four.ttft_s)} |" in md

    # Price it out: the H200 pinned, the H100 now.
    p = page.locator(PRICE)
    p.scroll_into_view_if_needed()
    page.wait_for_selector(f'{PRICE}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    _pin(p)
    p.locator('.descent-field[data-field="accelerator"] select').select_option("h100-sxm")
    h200 = economics.cost_by_batch("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 3.0)
    h100 = economics.cost_by_batch("llama-3.1-70b", "h100-sxm", "fp8", "bf16", 8192, 3.0)
    row = _row(p, "At one conversation")
    expect(row.nth(1)).to_have_text(format_number(h100[0].usd_per_million_tokens, 3), timeout=RECOMPUTE_TIMEOUT_MS)
    assert row.nth(0).inner_text() == format_number(h200[0].usd_per_million_tokens, 3)
    assert row.nth(3).inner_text() == "pinned"  # the H200's faster reads make each token cheaper
    assert not page.descent_console_errors


def test_a_pinned_comparison_reopens_from_its_address(make_page, site_dir, server):
    page = make_page()
    d = DEFAULTS
    w = go_live(page, page_url(site_dir, server, PAGE), SANDBOX)
    _pin(w)
    w.locator('.descent-field[data-field="accelerator"] select').select_option("h100-sxm")
    after = size(d["model"], "h100-sxm", d["weights"], d["kv"], d["context"], d["batch"])
    expect(page).to_have_url(re.compile(r"size_it_yourself=[^&#]*accelerator:h100-sxm"), timeout=RECOMPUTE_TIMEOUT_MS)
    fresh = make_page()
    fresh.goto(page.url)
    f = fresh.locator(SANDBOX)
    f.scroll_into_view_if_needed()
    fresh.wait_for_selector(f'{SANDBOX}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    expect(_row(f, "Decode ceiling per sequence").nth(1)).to_have_text(
        rate_text(after.decode_tokens_per_s), timeout=RECOMPUTE_TIMEOUT_MS)


def test_without_javascript_no_compare_box_shows(make_page, site_dir, server):
    # No script, no Pin button: the box could never be filled, so it is never shown.
    page = make_page(java_script_enabled=False)
    page.goto(page_url(site_dir, server, PAGE))
    for root in (SANDBOX, DIALS, PRICE):
        box = page.locator(f'{root} .descent-field[data-field="pinned"]')
        expect(box).to_have_count(1)
        expect(box).to_be_hidden()
        expect(page.locator(f'{root} .descent-field[data-field="model"]')).to_be_visible()  # the others show
