"""descent.site.tables: content tables are written inside Material's scroll wrapper with a class, and
Material's table rules are copied for that class.

The expected wrapper is Material's own (``renderTable`` in Material's
src/templates/assets/javascripts/templates/table/index.tsx: ``div.md-typeset__scrollwrap >
div.md-typeset__table > table``); the expected rules are Material's, read from its installed
stylesheet.
"""

from __future__ import annotations

import re

import pytest

from descent.site import tables

WRAP = '<div class="md-typeset__scrollwrap"><div class="md-typeset__table">'
CLOSE = "</div></div>"


def test_a_bare_table_is_wrapped_and_classed():
    html = "<p>a</p>\n<table>\n<tr><td>1</td></tr>\n</table>\n<p>b</p>"
    assert tables.prewrap(html) == (
        f'<p>a</p>\n{WRAP}<table class="descent-content-table">\n<tr><td>1</td></tr>\n</table>{CLOSE}\n<p>b</p>'
    )


def test_attributes_are_kept_and_case_does_not_matter():
    html = '<TABLE id="t" style="x">\n<tr><td>1</td></tr></TABLE>'
    assert tables.prewrap(html) == (
        f'{WRAP}<TABLE class="descent-content-table" id="t" style="x">\n<tr><td>1</td></tr></TABLE>{CLOSE}'
    )


def test_a_table_with_a_class_is_left_alone():
    """Widget tables carry their own class; Material leaves them unwrapped, and so does the build."""
    html = '<div class="descent-table"><table class="descent-table__table"><tr><td>1</td></tr></table></div>'
    assert tables.prewrap(html) == html


def test_nested_and_sibling_tables_each_close_their_own_wrapper():
    inner = "<table><tr><td>i</td></tr></table>"
    html = f"<table><tr><td>{inner}</td></tr></table><table><tr><td>2</td></tr></table>"
    c = 'class="descent-content-table"'
    expected = (
        f"{WRAP}<table {c}><tr><td>{WRAP}<table {c}><tr><td>i</td></tr></table>{CLOSE}</td></tr></table>{CLOSE}"
        f"{WRAP}<table {c}><tr><td>2</td></tr></table>{CLOSE}"
    )
    assert tables.prewrap(html) == expected


def test_tables_inside_far_blocks_and_details_are_wrapped_too():
    """Material wraps every content table wherever it is; a far table's <div> holds the wrapper."""
    html = '<div class="descent-far descent-far--table"><table><tr><td>1</td></tr></table></div>'
    out = tables.prewrap(html)
    assert out.startswith(f'<div class="descent-far descent-far--table">{WRAP}<table class="descent-content-table">')
    assert out.endswith(f"</table>{CLOSE}</div>")


def test_table_text_in_scripts_comments_and_code_is_not_a_table():
    html = (
        '<script>const s = "<table></table>";</script><!-- <table> --><pre><code>&lt;table&gt;</code></pre>'
        "<table><tr><td>1</td></tr></table>"
    )
    out = tables.prewrap(html)
    assert out.count(WRAP) == 1
    assert out.startswith('<script>const s = "<table></table>";</script><!-- <table> -->')


def test_table_text_in_a_textarea_is_text():
    """A widget's text box may hold "<table>" as text: it neither counts as a table nor unpairs the
    page's real ones (Python's parser reports tags inside a textarea; HTML does not)."""
    html = "<textarea><table></textarea><table><tr><td>1</td></tr></table>"
    assert tables.prewrap(html) == (
        f'<textarea><table></textarea>{WRAP}<table class="descent-content-table"><tr><td>1</td></tr></table>{CLOSE}'
    )


@pytest.mark.parametrize(
    "html",
    [
        "<table><tr><td>1</td></tr>",  # never closed
        "<p>x</p></table>",  # closed, never opened
        "<table/>",  # not HTML
    ],
)
def test_tables_that_do_not_pair_up_leave_the_page_unchanged(html):
    """Material then wraps at start-up as before: the page is slower, never broken."""
    assert tables.prewrap(html) == html


def test_the_rules_are_copied_with_their_media_conditions():
    css = (
        ".md-typeset table:not([class]){display:inline-block;font-size:.64rem}"
        "@media print{.md-typeset table:not([class]){display:table}.other{color:red}}"
        ".md-typeset table:not([class]) td,.x table:not([class]) th{padding:1em}"
        ".md-typeset__table{padding:0 .8rem}"
    )
    assert tables.material_table_css(css) == (
        ".md-typeset table.descent-content-table{display:inline-block;font-size:.64rem}\n"
        "@media print{.md-typeset table.descent-content-table{display:table}}\n"
        ".md-typeset table.descent-content-table td,.x table.descent-content-table th{padding:1em}\n"
    )


def test_only_the_selectors_naming_the_table_are_copied():
    """Of a selector list, the other selectors stay Material's alone; a longer name that ends in
    "table" (``.my-table:not([class])``) is not Material's selector."""
    css = ".a table:not([class]),.b p{color:red}.c .my-table:not([class]){color:blue}"
    assert tables.material_table_css(css) == ".a table.descent-content-table{color:red}\n"


def test_a_rule_the_copy_cannot_reach_fails_the_build():
    """A table rule under @layer (or @container, or nested) would be dropped without a word."""
    css = ".a table:not([class]){color:red}@layer base{.b table:not([class]){color:blue}}"
    with pytest.raises(tables.TableCssError, match=r"names table:not\(\[class\]\) 2 times but descent.site.tables copied 1"):
        tables.material_table_css(css)


def test_a_stylesheet_without_material_table_rules_fails_the_build():
    with pytest.raises(tables.TableCssError, match=r"no rule for table:not\(\[class\]\)"):
        tables.material_table_css(".md-typeset table.other{display:block}")


def test_the_installed_material_stylesheet_gives_every_table_rule():
    """Against the real stylesheet: as many rules as Material has for table:not([class]), each with
    the same declarations (counted by the selector's occurrences, outside and inside @media)."""
    css = tables.material_stylesheet().read_text(encoding="utf-8")
    out = tables.material_table_css(css)
    assert "table:not([class])" not in out
    assert out.count("table.descent-content-table") == css.count("table:not([class])")
    # Material's base rule: the table scrolls in its own box and uses the smaller table font.
    assert re.search(r"\.md-typeset table\.descent-content-table\{display:inline-block;[^}]*font-size:\.64rem", out)
    assert "@media print{.md-typeset table.descent-content-table{display:table}}" in out


def test_the_build_copy_is_computed_once_per_stylesheet():
    """What the build writes is the copy of the installed stylesheet, and a rebuild reuses it."""
    first = tables.table_css()
    assert first == tables.material_table_css(tables.material_stylesheet().read_text(encoding="utf-8"))
    assert tables.table_css() is first


def test_every_content_table_of_the_built_site_is_prewrapped(site_dir):
    """No page leaves a table for Material to move at start-up (its query is table:not([class]))."""
    bare = []
    wrapped = 0
    for page in sorted(site_dir.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        for tag in re.findall(r"<table\b[^>]*>", html, flags=re.IGNORECASE):
            if "class=" not in tag:
                bare.append(f"{page.relative_to(site_dir)}: {tag}")
        # A far table is held back in a <noscript class="descent-lazy"> inside its wrapper
        # (descent.site.lazy: drawn when near), the wrapper still around it.
        wrapped += len(re.findall(re.escape(WRAP) + r'(?:<noscript class="descent-lazy[^"]*">)?'
                                  r'<table class="descent-content-table"', html))
    assert not bare, bare[:5]
    assert wrapped >= 50  # the reference pages alone hold more (one table per chip and per model)
    css = (site_dir / tables.CSS_PATH).read_text(encoding="utf-8")
    assert css == tables.material_table_css(tables.material_stylesheet().read_text(encoding="utf-8"))
