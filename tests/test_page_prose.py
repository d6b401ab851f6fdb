"""What the pages' own words say, where a test of the package pins a sentence to its numbers.

Host-only (tests/test_core_in_pyodide.py HOST_ONLY): the docs are not copied into Pyodide.
"""

from __future__ import annotations

from pathlib import Path

import pytest

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
    opening = part3.split("\n## ", 1)[0]  # the part's opening, before its first section
    assert "the site's running example through the engine's main tricks: Llama 3.1 70B" in " ".join(opening.split())
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


# --- Numbers per sentence (issue 23 §2: one idea per paragraph) -------------------------------------

#: The pages of the descent, read in order: the home page and Parts 0 to 5.
PROSE_PAGES = ["index.md", *sorted(p.name for p in DOCS.glob("part-*.md"))]
#: Issue 23: under 3% of a page's running-prose sentences carry more than three numbers, none more than five.
MAX_SHARE_OVER_THREE = 0.03
MAX_NUMBERS = 5


def test_the_counter_counts_as_the_review_tool_does():
    # Worked by hand against shared/tools/numbers-per-sentence's rules: only <p> in the <article>
    # outside tables, asides, widgets and code; sentences under four words dropped; "3.1" and
    # "1,024" are one number each, "-09" in "1.49e-09" another, "H200" and "FP8" none, "70B" one.
    from prose_numbers import sentences

    page = (
        "<p>Outside the article: 1 2 3 4 5.</p><article>"
        "<p>Llama 3.1 70B on an H200 reads 1,024 tokens. Short: 1 2. FP8 misses 0.1 by 1.49e-09.</p>"
        '<div class="admonition note"><p>An aside with 1 2 3 4 5 6.</p></div>'
        "<details><p>A fold-out with 1 2 3 4 5 6.</p></details>"
        '<div class="descent-widget" data-widget="x"><p>A widget with 1 2 3 4 5 6.</p></div>'
        "<table><tr><td><p>A cell with 1 2 3 4 5 6.</p></td></tr></table>"
        "<p>The p99 is <code>12 34</code> here, and 5 more.</p></article>"
    )
    assert sentences(page) == [
        ("Llama 3.1 70B on an H200 reads 1,024 tokens.", 3),
        ("FP8 misses 0.1 by 1.49e-09.", 3),
        ("The p99 is  here, and 5 more.", 1),
    ]


@pytest.mark.parametrize("page", PROSE_PAGES)
def test_sentences_carry_few_numbers(site_dir, page):
    # Issue 23 §2: a sentence of running prose carries the one or two numbers its idea needs; the
    # rest belong in the widget, a table or an aside. Counted on the built page as the review tool
    # counts (tests/prose_numbers.py), so a shortcode's printed value counts like a typed one.
    from prose_numbers import sentences

    counted = sentences((site_dir / page.replace(".md", ".html")).read_text(encoding="utf-8"))
    assert len(counted) >= 10, f"{page}: only {len(counted)} sentences of running prose found"
    dense = [(n, s) for s, n in counted if n > 3]
    share = len(dense) / len(counted)
    worst = max(n for _, n in counted)
    listing = "\n".join(f"  [{n}] {' '.join(s.split())}" for n, s in dense)
    assert share < MAX_SHARE_OVER_THREE and worst <= MAX_NUMBERS, (
        f"{page}: {len(dense)} of {len(counted)} sentences ({share:.1%}) carry more than three numbers "
        f"(allowed: under {MAX_SHARE_OVER_THREE:.0%}), the densest {worst} (allowed: {MAX_NUMBERS}):\n{listing}")
