"""The view renderers: one per kind, escaped, accessible, with values as text."""

from __future__ import annotations

import math
import re

import pytest

from descent.widgets import views as v

EVIL = '<script>alert("x")</script>&'
ESCAPED = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;"


def _widths(html: str) -> list[float]:
    return [float(x) for x in re.findall(r"width:([0-9.]+)%", html)]


def test_fmt():
    # Hand-checked: thousands separators on ints; 3 significant figures on floats.
    assert v.fmt(1234567) == "1,234,567"
    assert v.fmt(1.0) == "1.00"
    assert v.fmt(0.5) == "0.500"
    # 1,234.5678 to 3 significant figures is 1,230 (descent.units.format_number rounds the integer
    # digits too; this test used to expect "1,235", four figures, against its own comment).
    assert v.fmt(1234.5678) == "1,230"
    assert v.fmt(0.000123456) == "0.000123"
    assert v.fmt(1.5e20) == "1.50e+20"
    assert v.fmt("as is") == "as is"
    with pytest.raises(ValueError, match="non-finite"):
        v.fmt(math.nan)


def test_stat():
    html = v.render(v.stat("KV cache", 1.0, "GiB", note="per sequence"))
    assert '<span class="descent-stat__number">1.00</span> <span class="descent-stat__unit">GiB</span>' in html
    assert "per sequence" in html


def test_bar_list_linear_widths_and_text_values():
    html = v.render(v.bar_list([v.bar("A", 50), v.bar("B", 100, display="100 tok/s"), v.bar("C", 0, greyed=True)],
                               caption="Speed", unit="tok/s"))
    # Widths: value / max = 50/100, 100/100, 0/100.
    assert _widths(html) == [50.0, 100.0, 0.0]
    assert ">50 tok/s<" in html and ">100 tok/s<" in html and ">0 tok/s<" in html
    assert "descent-bar--greyed" in html
    assert 'class="descent-bar__track" aria-hidden="true"' in html


def test_bar_list_explicit_max_and_log_scale():
    html = v.render(v.bar_list([v.bar("A", 25)], max=100))
    assert _widths(html) == [25.0]
    html = v.render(v.bar_list([v.bar("a", 1), v.bar("b", 10), v.bar("c", 1000)], log=True, caption="x"))
    # Log axis from one decade below the smallest (10**-1) to the largest (10**3): 4 decades.
    # log10(1)+1 = 1 -> 25 %, log10(10)+1 = 2 -> 50 %, 4 -> 100 %.
    assert _widths(html) == [25.0, 50.0, 100.0]
    assert "(log scale)" in html
    with pytest.raises(ValueError, match="log-scale bar list needs every value > 0"):
        v.render(v.bar_list([v.bar("a", 0)], log=True))
    with pytest.raises(ValueError, match="finite number"):
        v.render(v.bar_list([v.bar("a", math.nan)]))


def test_stacked_bar_fits():
    # 16e9 + 4e9 bytes in 80e9: 20/80 = 25 %, free 60e9 bytes.
    view = v.stacked_bar([v.segment("weights", 16e9, "is-weights"), v.segment("KV cache", 4e9, "is-kv")], 80e9,
                         caption="Memory")
    html = v.render(view)
    assert _widths(html) == [20.0, 5.0, 75.0]
    assert "20.0 GB of 80.0 GB capacity (25%)" in html
    assert "free: <strong>60.0 GB</strong>" in html
    assert "over capacity" not in html


def test_stacked_bar_over_capacity():
    # 100e9 bytes in 80e9: scale is the total, capacity mark at 80 %, 20e9 over.
    html = v.render(v.stacked_bar([v.segment("weights", 100e9)], 80e9))
    assert "descent-stack--over" in html
    assert "left:80.00%;width:20.00%" in html
    assert "over capacity by <strong>20.0 GB</strong>" in html
    assert "100 GB of 80.0 GB capacity (125%): does not fit" in html


def test_table():
    html = v.render(v.table(["Chip", "TB/s"], [["H100", 3.35], [EVIL, 8]], caption="Bandwidth"))
    assert "<caption" in html and '<th scope="col" class="num">TB/s</th>' in html
    # data-label: the column's name, shown beside the cell when a wide table is stacked on a phone.
    assert '<th scope="row">H100</th><td class="num" data-label="TB/s">3.35</td>' in html
    assert 'class="descent-table"' in html  # two columns: never stacked
    wide = v.render(v.table(["a", "b", "c", "d"], [["x", 1, 2, 3]]))
    assert 'class="descent-table descent-table--stack"' in wide  # four or more (views.STACK_COLUMNS)
    assert ESCAPED in html and "<script>" not in html
    with pytest.raises(ValueError, match="row 0 has 1 cells, expected 2"):
        v.render(v.table(["a", "b"], [["x"]]))


def test_chips_show_whitespace_and_speak_the_text():
    html = v.render(v.chips([v.chip(" Paris", 12366, "is-new"), v.chip(EVIL)], caption="Tokens"))
    assert "\u2423Paris" in html  # visible space mark
    assert "&#x27; Paris&#x27;, id 12366" in html  # screen-reader text quotes the real text
    assert '<span class="descent-chip__id">12366</span>' in html
    assert "<script>" not in html


def test_cell_grid():
    cells = [[v.cell("is-used"), v.cell("is-free")], [v.cell("is-used", "A"), v.cell("is-free", title="block 3")]]
    html = v.render(v.cell_grid(cells, caption="Blocks", row_labels=["seq 0", "seq 1"], col_labels=["0", "1"],
                                legend=[("is-used", "used"), ("is-free", "free")]))
    assert html.count("<tr>") == 3 and '<th scope="row">seq 1</th>' in html
    assert '<span class="descent-sr">used</span>' in html  # meaning from the legend
    assert '<span class="descent-sr">block 3</span>' in html
    # A class of its own: Material styles and wraps only tables without one (the grid scrolls itself).
    assert '<table class="descent-grid__table">' in html
    # Without row or column labels the grid is a picture of named cells, not a table of data.
    bare = v.render(v.cell_grid([[v.cell("is-used"), v.cell("is-free")]], caption="Tiles"))
    assert '<table class="descent-grid__table" role="presentation">' in bare
    with pytest.raises(ValueError, match="same number of columns"):
        v.render(v.cell_grid([[v.cell()], []], caption="x"))
    with pytest.raises(ValueError, match="class must be letters"):
        v.render(v.cell_grid([[v.cell('x" onclick="y')]], caption="x"))


def test_cell_grid_runs_span_columns():
    # Row 1: one bar over three columns; row 2: three single cells. Both cover three columns.
    cells = [[v.cell("is-used", title="request 1, 0 s to 3 s", span=3)],
             [v.cell("is-used"), v.cell("is-free"), v.cell("is-used")]]
    html = v.render(v.cell_grid(cells, caption="Slots", row_labels=["1", "2"]))
    assert '<td class="descent-cell is-used" colspan="3" title="request 1, 0 s to 3 s">' in html
    assert html.count("colspan") == 1  # single cells carry none
    # A fixed layout shares the width among the three columns; the labels' column has its own.
    assert '<table class="descent-grid__table descent-grid__table--spans">' in html
    assert '<colgroup><col class="descent-grid__labels"><col span="3"></colgroup>' in html
    # A grid without spans keeps the automatic layout and no colgroup.
    plain = v.render(v.cell_grid(cells[1:], caption="Slots"))
    assert "colgroup" not in plain and "--spans" not in plain
    with pytest.raises(ValueError, match="same number of columns"):
        v.render(v.cell_grid([[v.cell(span=2)], [v.cell()]], caption="x"))
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match=r"span must be a whole number of columns, 1 or more, got"):
            v.render(v.cell_grid([[{"cls": "", "text": "", "title": "", "set": None, "span": bad}]], caption="x"))


def test_note_with_a_link_on_this_site():
    html = v.render(v.note(EVIL, link=EVIL, href="part-1-the-transformer.html#embeddings"))
    assert html == (f'<p class="descent-note descent-note--info">{ESCAPED} '
                    f'<a href="part-1-the-transformer.html#embeddings">{ESCAPED}</a></p>')
    # Only a relative address on the site: no scheme, host, absolute path, or characters to escape.
    for bad in ("https://example.com/", "//example.com/x", "/part-1.html", "javascript:alert(1)",
                'a.html" onclick="x', "../up.html", "a.html#x y", "", None):
        with pytest.raises(ValueError, match="href must be a relative address on this site"):
            v.render({"kind": "note", "text": "t", "link": "l", "href": bad})
    with pytest.raises(ValueError, match="a link needs its text"):
        v.render(v.note("t", href="a.html"))


def test_note_kv_svg():
    assert v.render(v.note(EVIL)) == f'<p class="descent-note descent-note--info">{ESCAPED}</p>'
    html = v.render(v.kv([("Layers", 32), ("Name", EVIL)]))
    assert "<dt>Layers</dt><dd>32</dd>" in html and ESCAPED in html
    html = v.render(v.svg('<svg viewBox="0 0 1 1"><rect/></svg>', alt="a square"))
    assert 'role="img" aria-label="a square"' in html
    with pytest.raises(ValueError, match="must not contain <script>"):
        v.render(v.svg("<svg><script>x</script></svg>", alt="x"))
    with pytest.raises(ValueError, match="alt"):
        v.render(v.svg("<svg></svg>", alt=""))
    # A chart drawn twice (issue 24): both in one figure, which the phone's stylesheet picks from.
    both = v.render(v.svg('<svg class="descent-svg__wide"></svg>', alt="c", narrow='<svg class="descent-svg__narrow"></svg>'))
    assert both == ('<figure class="descent-svg descent-svg--both" role="img" aria-label="c">'
                    '<svg class="descent-svg__wide"></svg><svg class="descent-svg__narrow"></svg></figure>')
    with pytest.raises(ValueError, match="narrow must be one"):
        v.render(v.svg("<svg></svg>", alt="c", narrow="<svg></svg><svg></svg>"))


def test_every_text_field_is_escaped():
    views = [
        v.stat(EVIL, EVIL, EVIL, note=EVIL),
        v.bar_list([v.bar(EVIL, 1, display=EVIL, note=EVIL)], caption=EVIL),
        v.stacked_bar([v.segment(EVIL, 1e9)], 2e9, caption=EVIL, capacity_label=EVIL),
        v.chips([v.chip(EVIL, EVIL, title=EVIL)], caption=EVIL),
        v.cell_grid([[v.cell("", EVIL, EVIL)]], caption=EVIL, row_labels=[EVIL], col_labels=[EVIL]),
    ]
    html = v.render_all(views)
    assert "<script>" not in html and 'alert("x")' not in html


def test_unknown_kind_and_missing_field():
    with pytest.raises(ValueError, match="unknown view kind 'pie'"):
        v.render({"kind": "pie"})
    with pytest.raises(ValueError, match="stat: missing field 'label'"):
        v.render({"kind": "stat", "value": 1})


def test_render_all_groups_stats():
    html = v.render_all([v.stat("a", 1), v.stat("b", 2), v.note("n"), v.stat("c", 3)])
    assert html.count('<div class="descent-stats">') == 2
    assert html.index("descent-note") < html.rindex("descent-stats")


def test_clickable_chips_and_cells_carry_the_inputs_they_set():
    html = v.render(v.chips([v.chip("Llama", set={"layers": 80, "fast": True, "name": "a\"b"})], tokens=False))
    assert '<button type="button" class="descent-chip__button" data-set="' in html
    # Values are sent as the strings a form control would hold; quotes are escaped in the attribute.
    assert v._parse_set(html) == {"fast": "true", "layers": "80", "name": 'a"b'}
    assert "\u2423" not in v.render(v.chips([v.chip("two words")], tokens=False))  # names: no space marks
    assert v.render(v.chips([v.chip("a")])).count("<button") == 0  # not clickable without set
    cell_html = v.render(v.cell_grid([[v.cell("is-used", "1", "sign bit", set={"bits": "0x8000"})]], caption="bits"))
    assert v._parse_set(cell_html) == {"bits": "0x8000"}
    with pytest.raises(ValueError, match="set value for 'x' must be a string, number or bool"):
        v.render(v.chips([v.chip("a", set={"x": [1]})]))
    with pytest.raises(ValueError, match="set must be a dict of input name: value"):
        v.render(v.chips([v.chip("a", set={"not an id": 1})]))


# Issue 15: text the reader typed stays the reader's. Every renderer writes Unicode's bidi
# controls (UAX #9, section 2) visibly, so an override in a guess cannot reverse what follows.
@pytest.mark.parametrize("control", sorted(v.BIDI_CONTROLS))
def test_every_view_shows_bidi_controls(control):
    s = f"a{control}b"
    shown = f"a[U+{ord(control):04X}]b"
    views = [
        v.stat(s, s, unit=s, note=s),
        v.bar_list([v.bar(s, 1.0, note=s)], caption=s),
        v.stacked_bar([v.segment(s, 1.0, display=s)], 2.0, caption=s, capacity_label=s),
        v.table([s], [[s]], caption=s),
        v.chips([v.chip(s, id=1, title=s)], caption=s),
        v.chips([v.chip(s)], tokens=False),
        v.cell_grid([[v.cell(text=s, title=s)]], caption=s, row_labels=[s], col_labels=[s], legend=[("x", s)]),
        v.note(s),
        v.kv([(s, s)], caption=s),
        v.svg("<svg></svg>", alt=s),
    ]
    for view in views:
        out = v.render(view)
        assert control not in out, view["kind"]
        assert shown in out, view["kind"]
    assert v.visible_controls("\u202eParis is") == "[U+202E]Paris is"
    assert v.visible_controls("שלום \U0001f642 e\u0301") == "שלום \U0001f642 e\u0301"  # letters, emoji, marks stay
