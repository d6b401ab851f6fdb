"""The reader's pages at a phone's width and the site's missing-page answers (issue 24, section 5).

* At 390 px (an iPhone 12 to 15), on every page: no widget, chart, figure or widget table is wider
  than the screen or scrolls sideways inside it (before, Part 4's accelerator chart hid the
  data-centre cluster and the ringed chip behind a sideways scroll, as did its tile matrices and
  roofline and Part 3's slot grid); and no word inside a table, a widget or a figure is broken
  across lines (Part 3's batching table read "conti/nuou/s"). Charts are drawn twice, wide and
  narrow, and the phone shows the narrow one (descent.widgets._svg, ``narrow=``); wide widget
  tables are stacked row by row; grids shrink their cells.
  A table of the article (Markdown, Material's ``md-typeset__scrollwrap``) may be wider than the
  phone: it scrolls inside its wrapper with a shadow on the side that has more (docs/assets/site.css),
  and the wrapper itself stays within the screen. Its words are not broken either.
* At 1280 px, the contributing page's "Every shortcode" table fits its column (before, a fourth
  column of arguments off to the right made each row hundreds of pixels tall: 64,812 px in all for
  268 rows) and no row is taller than ``MAX_ROW_LINES`` lines of its text.
* A page's address written as a folder (``/part-3-serving-software/``, ``/part-3-serving-software``)
  reaches the page (descent.site.serve redirects it), and a missing page shows the site's 404 page
  with a link home and one to each part, which work.

The article's off-screen blocks are drawn first (``content-visibility: auto`` skips their layout, so
nothing in them could be measured).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from helpers import LIVE_TIMEOUT_MS, next_frames

expect = pytest.importorskip("playwright.sync_api").expect

PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 1, "is_mobile": True, "has_touch": True}
#: Sub-pixel rounding allowed on a width, px.
SLACK_PX = 1
#: The tallest row the shortcode table may have, in lines of its text (a description of two or three
#: lines, the arguments, and the arguments of that shortcode alone explained: a ``field`` may list
#: twenty names), and the rows' average (before: 242 px, about 12 lines, mostly blank).
MAX_ROW_LINES = 13
MEAN_ROW_LINES = 5.5

#: Every skipped block drawn (as tests/browser/test_accessibility.py does).
#: Everything drawn: what the build kept out of the DOM (descent.site.lazy, lazy.js) put in, and the
#: browser's skipping (content-visibility) off.
SHOW_SKIPPED = """() => { if (window.descentLazy) window.descentLazy.draw(document);
  document.querySelectorAll('.md-content__inner > *, .descent-grid').forEach(
  el => { el.style.contentVisibility = 'visible'; }); }"""

#: What is wider than the screen, or scrolls sideways, among widgets and their parts, figures and
#: charts; and the article tables' scroll wrappers that stick out of the screen.
TOO_WIDE = """() => {
  const vw = document.documentElement.clientWidth;
  const shown = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  const name = (el) => {
    const w = el.closest('[data-widget]');
    return `${w ? w.dataset.widget + ' ' : ''}${el.tagName.toLowerCase()}.${String(el.className.baseVal ?? el.className).trim().split(/\\s+/).join('.')}`;
  };
  const out = [];
  const parts = '.md-content :is(.descent-widget, .descent-widget figure, .descent-widget svg, .descent-widget table, ' +
    '.descent-table, .descent-grid, .descent-svg, figure, figure img, figure svg, .md-typeset__scrollwrap)';
  for (const el of document.querySelectorAll(parts)) {
    if (!shown(el) || el.closest('.descent-sr')) continue;
    const r = el.getBoundingClientRect();
    if (r.left < -SLACK || r.right > vw + SLACK) out.push(`${name(el)} spans ${Math.round(r.left)} to ${Math.round(r.right)} px`);
    const scrolls = el.matches('.descent-table, .descent-grid, .descent-svg, .descent-widget');
    if (scrolls && el.scrollWidth > el.clientWidth + SLACK) out.push(`${name(el)} scrolls sideways: ${el.scrollWidth} px in ${el.clientWidth}`);
  }
  return out;
}""".replace("SLACK", str(SLACK_PX))

#: Words (two letters or more) in tables, widgets and figures that the browser broke across lines.
BROKEN_WORDS = """() => {
  const out = [];
  const roots = document.querySelectorAll('.md-content :is(table, .descent-widget, figure)');
  const seen = new Set();
  for (const root of roots) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      if (seen.has(node)) continue;
      seen.add(node);
      const el = node.parentElement;
      if (!el || el.closest('.descent-sr, [hidden], svg, .katex-mathml, script, style') || el.getClientRects().length === 0) continue;
      // A URL shown as a link's text may break anywhere (docs/assets/site.css): it is not a word.
      if (el.closest('a[href^="http"]') && /[/.]/.test(el.closest('a').textContent)) continue;
      for (const m of node.data.matchAll(/\\p{L}{2,}/gu)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (tops.size > 1) out.push(`"${m[0]}" in ${el.tagName.toLowerCase()} (${(el.closest('[data-widget]') || {dataset: {}}).dataset.widget || 'article'})`);
      }
    }
  }
  return out.slice(0, 20);
}"""


def test_every_page_fits_a_phone(site_page, server, make_page):
    page = make_page(**PHONE)
    page.goto(server + site_page)
    page.evaluate(SHOW_SKIPPED)
    next_frames(page)
    wide = page.evaluate(TOO_WIDE)
    assert not wide, f"{site_page} at 390 px:\n" + "\n".join(wide)
    broken = page.evaluate(BROKEN_WORDS)
    assert not broken, f"{site_page} at 390 px, words broken across lines:\n" + "\n".join(broken)


def test_the_charts_a_phone_shows_are_the_narrow_ones(server, make_page):
    """Part 4's accelerator landscape and roofline: the phone shows the chart drawn for it, at its
    natural size (330 user units: labels at 11 px), the ringed chip inside the screen."""
    page = make_page(**PHONE)
    page.goto(server + "part-4-hardware.html")
    page.mouse.wheel(0, 1)  # a reader's gesture: a phone starts the runtime at one (decision 0028)
    for widget in ("accelerator_landscape", "roofline_explorer"):
        fig = page.locator(f'.descent-widget[data-widget="{widget}"] figure.descent-svg')
        fig.scroll_into_view_if_needed()
        # Measured once the widget is live: its first result replaces the chart, and a box read
        # while the swap happens is None (a clean-clone run failed so, 2026-12-03).
        page.wait_for_selector(f'.descent-widget[data-widget="{widget}"][data-state="live"]', timeout=LIVE_TIMEOUT_MS)
        fig.scroll_into_view_if_needed()
        expect(fig.locator("svg.descent-svg__narrow")).to_be_visible()
        expect(fig.locator("svg.descent-svg__wide")).to_be_hidden()
        box = fig.locator("svg.descent-svg__narrow").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, (widget, box)
        assert box["width"] == pytest.approx(330, abs=1), (widget, box)  # natural size: not shrunk
        if widget == "accelerator_landscape":
            # Measured while its chart is on screen: once the page scrolls on to the roofline, a
            # block far above may be skipped again (content-visibility), and a skipped element has
            # no box (CI once read None here).
            ring = fig.locator('svg.descent-svg__narrow circle[r="11.0"]')
            ring.scroll_into_view_if_needed()
            rb = ring.bounding_box()
            assert rb is not None and 0 <= rb["x"] and rb["x"] + rb["width"] <= 390, rb


def test_the_shortcode_table_fits_its_column(server, make_page):
    page = make_page(viewport={"width": 1280, "height": 900})
    page.goto(server + "contributing.html")
    page.evaluate(SHOW_SKIPPED)
    next_frames(page)
    got = page.evaluate("""() => {
      const t = document.querySelector('#every-shortcode ~ div table');
      const wrap = t.closest('.md-typeset__scrollwrap');
      const line = parseFloat(getComputedStyle(t.querySelector('tbody td')).lineHeight);
      const rows = [...t.tBodies[0].rows];
      const tallest = rows.reduce((a, r) => r.offsetHeight > a.h ? {h: r.offsetHeight, name: r.cells[1].textContent} : a, {h: 0});
      return {width: t.offsetWidth, room: wrap.clientWidth, scroll: wrap.scrollWidth, height: t.offsetHeight,
              rows: rows.length, line, tallest};
    }""")
    assert got["rows"] > 200, got  # every value, table, formula, figure and widget
    assert got["scroll"] <= got["room"] + SLACK_PX and got["width"] <= got["room"] + SLACK_PX, got
    assert got["tallest"]["h"] <= MAX_ROW_LINES * got["line"] + 20, got  # 20 px: the cell's padding
    assert got["height"] <= got["rows"] * (MEAN_ROW_LINES * got["line"] + 20), got


@pytest.mark.parametrize("path", ["part-3-serving-software/", "part-3-serving-software"])
def test_a_page_written_as_a_folder_reaches_the_page(server, page, path):
    response = page.goto(server + path)
    assert response.status == 200 and page.url == server + "part-3-serving-software.html"
    expect(page.locator("h1")).to_contain_text("Serving software")


def test_a_missing_page_links_home_and_to_the_parts(server, page):
    response = page.goto(server + "part-9-no-such-part/")
    assert response.status == 404
    expect(page.locator("article h1")).to_have_text("404 - Not found")
    links = page.locator("article a")
    # Absolute links (MkDocs renders the 404 page with the site's own address): right at any depth.
    hrefs = [urlsplit(a.get_attribute("href")).path for a in links.all()]
    assert hrefs[0] in ("/", "/index.html"), hrefs
    parts = [h for h in hrefs if re.fullmatch(r"/part-[0-5]-[a-z-]+\.html", h)]
    assert len(parts) == 6, hrefs
    page.locator("article a", has_text="Hardware").click()
    expect(page.locator("h1").first).to_contain_text("Hardware")
    page.goto(server + "part-9-no-such-part/")
    links.first.click()
    expect(page).to_have_url(re.compile(re.escape(server) + r"(index\.html)?$"))
