"""The "Try it" button of a hint (descent.widgets.render_tries, widgets.js ``onTry``), on one widget
of every part: it appears once the widget can recompute, puts the form back to the values the widget
was drawn with, sets the hint's inputs and recomputes. The number it shows is the package's at those
inputs (computed here by the same Python). Part 5's replay also shows its token, layer and chip
controls only at the stages they change (issue 23), in the browser as in the pre-rendered page.
"""

from __future__ import annotations

import pytest
from helpers import LIVE_TIMEOUT_MS, RECOMPUTE_TIMEOUT_MS, page_path, stat_number
from playwright.sync_api import expect

from descent.widgets import _compute, _form_value, coerce, get

#: (page, widget, the hint, the stat whose number the test follows, a number the reader changed
#: first that Try it puts back); one widget per part.
CASES = [
    ("part-0-the-prompt", "next_token_guess", "Guess Paris, then paris.", "Your guess", None),
    ("part-1-the-transformer", "stack_calculator", "Double the layers.", "Attention + FFN weights", ("d_model", "1536")),
    ("part-2-weights-as-numbers", "quantize_weights", "Go from 8 bits to 4, then to 2.", "RMSE", None),
    ("part-3-serving-software", "speculative", "Raise the draft cost.", "Speedup", ("acceptance", "0.3")),
    ("part-4-hardware", "tiled_gemm", "Double the tile size.", "Arithmetic intensity", None),
    ("part-5-the-whole-descent", "one_token_replayed", "At stage 9, pick another chip.", "Time", None),
]


def _stat(name: str, inputs: dict, label: str) -> str:
    """The stat's number as the package computes it at ``inputs`` (strings, as the form sends them)."""
    w = get(name)
    views = _compute(w, coerce(w, inputs))
    return str(next(v["value"] for v in views if v["kind"] == "stat" and v["label"] == label))


def _field(root, name: str):
    return root.locator(f'.descent-field[data-field="{name}"]')


@pytest.mark.parametrize("page_name,name,hint,label,own", CASES, ids=[c[1] for c in CASES])
def test_try_it_sets_the_hints_inputs_and_recomputes(reader, site_dir, page_name, name, hint, label, own):
    w = get(name)
    inputs = next(d for (what, _), d in zip(w.tries, w.try_inputs, strict=True) if what == hint)
    sent = {k: _form_value(w.input(k).coerce(v)) for k, v in inputs.items()}  # as the form writes them
    reader.visit(page_path(site_dir, page_name))
    page = reader.page
    sel = f'.descent-widget[data-widget="{name}"]'
    root = page.locator(sel).first
    root.scroll_into_view_if_needed()
    expect(root).to_have_attribute("data-state", "live", timeout=LIVE_TIMEOUT_MS)
    button = root.get_by_role("button", name=f"Try it: {hint}")
    expect(button).to_be_visible()
    # A reader's own change first: Try it starts from the values the widget was drawn with, not from it.
    if own is not None:
        box = _field(root, own[0]).locator(".descent-field__number")
        box.fill(own[1])
        expect(stat_number(page, sel, label)).to_have_text(_stat(name, {own[0]: own[1]}, label),
                                                           timeout=RECOMPUTE_TIMEOUT_MS)
    button.click()
    for key, value in sent.items():
        f = _field(root, key)
        kind = f.get_attribute("data-kind")
        if kind in ("range", "number"):
            expect(f.locator(".descent-field__number")).to_have_value(value)
        elif kind == "select":
            expect(f.locator("select")).to_have_value(value)
        elif kind == "segmented":
            expect(f.locator(f'input[value="{value}"]')).to_be_checked()
        elif kind == "text":
            expect(f.locator("textarea")).to_have_value(value)
    if own is not None:
        default = _form_value(w.input(own[0]).default)
        expect(_field(root, own[0]).locator(".descent-field__number")).to_have_value(default)
    want = _stat(name, sent, label)
    expect(stat_number(page, sel, label)).to_have_text(want, timeout=RECOMPUTE_TIMEOUT_MS)
    expect(root).to_have_attribute("data-state", "live")
    assert not reader.problems()


def test_the_replay_offers_a_control_only_where_it_changes_something(reader, site_dir):
    reader.visit(page_path(site_dir, "part-5-the-whole-descent"))
    page = reader.page
    root = page.locator('.descent-widget[data-widget="one_token_replayed"]').first
    root.scroll_into_view_if_needed()
    expect(root).to_have_attribute("data-state", "live", timeout=LIVE_TIMEOUT_MS)
    w = get("one_token_replayed")
    stage = _field(root, "stage").locator(".descent-field__number")
    for n in ("1", "2", "3", "8", "10"):
        stage.fill(n)
        for name in ("token", "layer", "accelerator"):
            shown = n in w.input(name).when_values
            if shown:
                expect(_field(root, name)).to_be_visible()
            else:
                expect(_field(root, name)).to_be_hidden()
        expect(root.locator(".descent-widget__output")).to_contain_text(f"Stage {n} of 10",
                                                                         timeout=RECOMPUTE_TIMEOUT_MS)
    # The slider moves the stage too, and the fields follow it.
    stage.fill("1")
    expect(_field(root, "accelerator")).to_be_hidden()
    root.locator("#" + root.get_attribute("id") + "-stage-range").fill("9")
    expect(_field(root, "accelerator")).to_be_visible()
    assert not reader.problems()
