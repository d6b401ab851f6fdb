"""What the pages' own words say, where a test of the package pins a sentence to its numbers.

Host-only (tests/test_core_in_pyodide.py HOST_ONLY): the docs are not copied into Pyodide.
"""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).parents[1] / "docs"


def _page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_part3_times_decode_at_the_widgets_context():
    # Issue 23: the prose beside "Prefill and decode" times the step the widget shows, at the
    # prompt's 1,024 tokens (tests/test_widgets_part3.py checks the widget's numbers).
    page = _page("part-3-serving-software.md")
    assert "<!-- descent:value itl_s context=1024 -->" in page
    assert "<!-- descent:value prefill_decode_ratio context=1024 sig=3 -->" in page


def test_part5_does_not_promise_linear_scaling():
    # Issue 23: four times the chips give less than four times the speed once the all-reduces'
    # latency is counted (tests/test_widgets_part5.py checks the numbers).
    page = _page("part-5-the-whole-descent.md")
    assert "four times faster" not in page and "a quarter of the chips for a quarter of the speed" not in page
