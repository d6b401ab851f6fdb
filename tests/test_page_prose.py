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


def test_part4_names_the_part_that_introduced_the_running_example():
    # Issue 23: Part 4 said the running example "stays the same as in Part 5" (Part 3 introduces it,
    # in its first paragraph) and spoke of "the guide's example", never introduced.
    part3, part4 = _page("part-3-serving-software.md"), _page("part-4-hardware.md")
    assert "the running example of the site, Llama 3.1 70B" in " ".join(part3.split("\n\n")[1].split())
    assert "The running example stays the same as in Part 3:" in " ".join(part4.split())
    for page in sorted(DOCS.glob("*.md")):
        assert "guide's example" not in page.read_text(encoding="utf-8"), page.name


def test_constrained_decoding_does_not_say_the_mask_forces_one_token():
    # Issue 23: the prose said the mask "forces '{'" at a step where it allowed two tokens. The
    # first step's count of allowed tokens is the build's (serving_measured first_allowed); the
    # section names it and never says a token is forced.
    import re

    from descent.site.shortcodes import resolve

    page = _page("part-3-serving-software.md")
    section = page.split("## Constrained decoding", 1)[1].split("\n## ", 1)[0]
    assert "<!-- descent:value serving_measured field=first_allowed -->" in section
    allowed = int(resolve("<!-- descent:value serving_measured field=first_allowed -->").replace(",", ""))
    if allowed > 1:
        assert not re.search(r"\bforce[sd]?\b", section), "a step with several allowed tokens forces none"
