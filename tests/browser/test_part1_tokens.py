"""Part 1's token widgets in a real browser: the tokenizer and the sampling widget go live.

Typing text changes the chips and the count (compared with descent.tokenizer.tokens here); moving
temperature / top-k changes the survivors (compared with descent.sampling here); a bad value shows
the inline message. The ``page`` fixture fails the test if any request left 127.0.0.1.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from descent import sampling, tokenizer
from descent.widgets.part0 import prompt_trace

expect = pytest.importorskip("playwright.sync_api").expect

LIVE_TIMEOUT_MS = 90_000
RECOMPUTE_TIMEOUT_MS = 15_000
PAGE = "part-1-the-transformer"
TOKENIZER = '.descent-widget[data-widget="tokenizer"]'
SAMPLING = '.descent-widget[data-widget="sampling"]'


def is_local(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in {"file", "data", "blob", "about"} or parts.hostname == "127.0.0.1"


def _url(site_dir: Path, server: str) -> str:
    return server + (f"{PAGE}.html" if (site_dir / f"{PAGE}.html").is_file() else f"{PAGE}/")


def _number(page, root: str, label: str):
    label_loc = page.locator(".descent-stat__label", has_text=re.compile("^" + re.escape(label) + "$"))
    return page.locator(f"{root} .descent-stat").filter(has=label_loc).locator(".descent-stat__number")


def _go_live(page, url: str, root: str):
    page.goto(url)
    w = page.locator(root)
    w.scroll_into_view_if_needed()
    page.wait_for_selector(f'{root}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    return w


def test_tokenizer_live(page, site_dir, server):
    w = _go_live(page, _url(site_dir, server), TOKENIZER)
    text = "How many r's are in strawberry? 12345"
    w.locator("textarea").fill(text)
    expected = tokenizer.tokens(text)
    expect(_number(page, TOKENIZER, "Tokens")).to_have_text(str(len(expected)), timeout=RECOMPUTE_TIMEOUT_MS)
    ids = [int(x) for x in w.locator(".descent-chip__id").all_inner_texts()]
    assert ids == [i for _, i in expected]
    # empty text: the inline message, the last good chips kept
    w.locator("textarea").fill("")
    page.wait_for_selector(f'{TOKENIZER}[data-state="error"]', timeout=RECOMPUTE_TIMEOUT_MS)
    assert "Text is empty" in w.locator(".descent-field__error").inner_text()
    assert len(w.locator(".descent-chip__id").all_inner_texts()) == len(expected)
    assert all(is_local(u) for u in page.descent_requests)


def test_sampling_live(page, site_dir, server):
    w = _go_live(page, _url(site_dir, server), SAMPLING)
    logits = [c["logit"] for c in prompt_trace("story")["next"]]
    w.locator('.descent-field[data-field="top_k"] input[type=number]').fill("5")
    n = len(sampling.distribution(logits, 1.0, 5, 1.0))
    expect(_number(page, SAMPLING, "Tokens left to draw from")).to_have_text(
        str(n), timeout=RECOMPUTE_TIMEOUT_MS
    )
    w.locator('.descent-field[data-field="temperature"] input[type=number]').fill("0")
    expect(_number(page, SAMPLING, "Tokens left to draw from")).to_have_text(
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


def test_part1_token_widgets_have_no_axe_violations(page, site_dir, server):
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    page.goto(_url(site_dir, server))
    for root in (TOKENIZER, SAMPLING, '.descent-widget[data-widget="autoregression"]'):
        page.locator(root).scroll_into_view_if_needed()
        results = axe_mod.Axe().run(page, context=root)
        assert not results.response["violations"], results.generate_report()
