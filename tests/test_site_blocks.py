"""descent.site.blocks: which of a page's top-level blocks the browser may leave undrawn.

The expected markup is written out by hand from the rules in the module's docstring (the first
eight blocks drawn, fewer when a second table comes earlier; headings and the last block
never marked; a table wrapped rather than given a class, because Material styles and wraps only
tables without one). The built pages are checked in
tests/browser/test_layout_cost.py.
"""

from __future__ import annotations

import pytest

from descent.site.blocks import FAR, FIRST_DRAWN, focusable_code, mark_far_blocks


def _paragraphs(n: int) -> str:
    return "\n".join(f"<p>p{i}</p>" for i in range(n))


def test_the_first_blocks_are_left_alone():
    html = _paragraphs(FIRST_DRAWN)
    assert mark_far_blocks(html) == html


def test_each_block_after_the_first_eight_is_marked_but_the_last():
    html = _paragraphs(FIRST_DRAWN) + '\n<p>far</p>\n<div class="admonition note"><p>x</p></div>\n<hr>\n<ul><li>last</li></ul>'
    out = mark_far_blocks(html)
    assert out == _paragraphs(FIRST_DRAWN) + (
        f'\n<p class="{FAR}">far</p>\n<div class="admonition note {FAR}"><p>x</p></div>\n<hr class="{FAR}">'
        "\n<ul><li>last</li></ul>"
    )


def test_headings_are_never_marked():
    tail = '<h2 id="a">A</h2><h3>B</h3><p>last</p>'
    html = _paragraphs(FIRST_DRAWN) + tail
    assert mark_far_blocks(html) == html


def test_a_widget_past_the_first_blocks_is_marked_and_one_before_is_not():
    # decision 0025: far widgets are skipped like any block (lazy.js draws them once the page loaded).
    widget = '<div class="descent-widget" data-widget="{}"><p>w</p></div>'
    html = widget.format("near") + _paragraphs(FIRST_DRAWN - 1) + widget.format("far") + "<p>last</p>"
    assert mark_far_blocks(html) == (
        widget.format("near") + _paragraphs(FIRST_DRAWN - 1)
        + f'<div class="descent-widget {FAR}" data-widget="far"><p>w</p></div><p>last</p>'
    )


def test_a_table_is_wrapped_not_classed():
    table = "<table>\n<thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody>\n</table>"
    out = mark_far_blocks(_paragraphs(FIRST_DRAWN) + table + "<p>after</p><p>last</p>")
    assert out == _paragraphs(FIRST_DRAWN) + (
        f'<div class="{FAR} {FAR}--table">{table}</div><p class="{FAR}">after</p><p>last</p>'
    )


def test_nested_elements_and_scripts_do_not_count_as_blocks():
    # Only top-level elements count: the 8 paragraphs are inside one <div>, so nothing is far yet.
    inner = "<div>" + _paragraphs(FIRST_DRAWN + 4) + "</div>"
    script = '<script>if (a < b && "</p>") {}</script>'
    html = inner + script + "<p>two</p>"
    assert mark_far_blocks(html) == html


def test_class_attributes_in_any_quoting_keep_their_classes():
    html = _paragraphs(FIRST_DRAWN) + "<div data-x='1' class='a b'>1</div><div class=c id=d>2</div><p>end</p>"
    out = mark_far_blocks(html)
    assert f"<div data-x='1' class='a b {FAR}'>1</div>" in out
    assert f'<div class="c {FAR}" id=d>2</div>' in out


def test_html_that_does_not_nest_is_returned_unchanged():
    html = _paragraphs(FIRST_DRAWN) + "<div><p>open</div></p><p>x</p>"
    assert mark_far_blocks(html) == html


def test_marking_twice_changes_nothing_more():
    html = _paragraphs(FIRST_DRAWN) + "<p>far</p><table><tr><td>1</td></tr></table><p>end</p>"
    once = mark_far_blocks(html)
    assert mark_far_blocks(once) == once


def test_a_negative_count_is_refused():
    with pytest.raises(ValueError, match="first_drawn must be 0 or more, got -1"):
        mark_far_blocks("<p>x</p>", first_drawn=-1)


def test_code_blocks_start_focusable():
    # The two shapes the site's code blocks take: pymdownx.highlight's and a notebook cell's.
    html = '<div class="highlight"><pre><span></span><code>x = 1</code></pre></div><pre><code class="a">y</code></pre>'
    assert focusable_code(html) == (
        '<div class="highlight"><pre><span></span><code tabindex="0">x = 1</code></pre></div>'
        '<pre><code tabindex="0" class="a">y</code></pre>'
    )
    # Inline code and a block already focusable are left alone.
    kept = '<p><code>z</code></p><pre><code tabindex="-1">w</code></pre><pre><codex>v</codex></pre>'
    assert focusable_code(kept) == kept


def test_a_second_table_ends_the_blocks_always_drawn():
    # h1, p, table, h2, p, table: the second table (block 6) is far although it is before the 9th.
    table = "<table><tr><td>1</td></tr></table>"
    html = "<h1>T</h1><p>a</p>" + table + "<h2>B</h2><p>b</p>" + table + "<p>c</p><p>end</p>"
    out = mark_far_blocks(html)
    assert out == ("<h1>T</h1><p>a</p>" + table + "<h2>B</h2><p>b</p>"
                   + f'<div class="{FAR} {FAR}--table">{table}</div><p class="{FAR}">c</p><p>end</p>')
