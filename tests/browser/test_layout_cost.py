"""What the article's skipped blocks (``content-visibility: auto`` in docs/assets/site.css) may and
may not change for a reader.

The rule exists for speed: a phone lays out only the blocks near the screen, which took Reference >
Accelerators from about 2 s of blocked main thread to under 0.5 s under Lighthouse's mobile
throttling (``nox -s bench`` measures it). These tests pin what it must not cost:

* nothing on screen moves while a page loads (a block skipped at first and drawn a frame later would
  push the text below it: the rule leaves the first blocks of each page alone for that reason);
* every table that scrolls sideways is still reachable by keyboard, including the ones far below the
  screen that were never drawn (overrides/assets/overrides/a11y.js gives every table a tab stop until
  the browser draws it and reports its width);
* blocks far below the first screen are in fact skipped (the rule still applies).
"""

from __future__ import annotations

import pytest
from helpers import next_frames

from descent import catalog

#: Lighthouse's own viewports: its mobile form (Moto G Power, 412 x 823) and its desktop form.
VIEWPORTS = {
    "phone": {"viewport": {"width": 412, "height": 823}, "device_scale_factor": 1.75, "is_mobile": True, "has_touch": True},
    "desktop": {"viewport": {"width": 1350, "height": 940}},
}
#: The sum of the page's layout shifts while it loads (the CLS metric without its windowing).
#: web.dev calls under 0.1 good; a page that moves nothing scores 0, and 0.01 leaves room for
#: sub-pixel rounding only.
MAX_SHIFT = 0.01
SETTLE_MS = 300
SETTLED = """() => document.documentElement.hasAttribute('data-descent-started')
  && !document.querySelector('.md-content__inner > .descent-widget.descent-far')"""

#: Every shift counts: the test gives no input, yet headless Chromium with touch emulation marks
#: load-time shifts "hadRecentInput", which would hide them (Lighthouse counts them).
RECORD_SHIFTS = """
window.__shift = 0; window.__shifted = [];
new PerformanceObserver((list) => list.getEntries().forEach((e) => {
  window.__shift += e.value;
  window.__shifted.push((e.sources || []).map((s) => s.node
    ? `${s.node.nodeName} "${(s.node.textContent || '').trim().slice(0, 40)}"` : '?').join(', '));
})).observe({ type: 'layout-shift', buffered: true });
"""


@pytest.mark.parametrize("form", sorted(VIEWPORTS))
def test_nothing_moves_while_a_page_loads(form, server, make_page, all_page_paths):
    page = make_page(**VIEWPORTS[form])
    page.add_init_script(RECORD_SHIFTS)
    moved = []
    for path in all_page_paths:
        page.goto(server + path)
        page.wait_for_load_state("load")
        # Settled: the page's own scripts have started (start.js), lazy.js has drawn every far widget
        # (one per frame after the load), and a moment more for what they set off to be drawn.
        page.wait_for_function(SETTLED, timeout=30_000)
        next_frames(page)
        page.wait_for_timeout(SETTLE_MS)
        shift = page.evaluate("() => window.__shift")
        if shift > MAX_SHIFT:
            moved.append(f"{path}: {shift:.3f} ({page.evaluate('() => window.__shifted')[:3]})")
    assert not moved, f"content moved while loading at {form} size:\n" + "\n".join(moved)


@pytest.mark.parametrize("form", sorted(VIEWPORTS))
def test_tables_far_below_are_skipped_yet_reachable_by_keyboard(form, server, make_page):
    """Reference > Accelerators: its last tables are skipped when the page opens, yet every table
    wrapper there takes focus until it is drawn; once drawn, the tables wider than the column keep
    their tab stop and a name, and the ones that fit lose it (a11y.js, told the sizes by a
    ResizeObserver: nothing is laid out just to measure it). At phone width most tables scroll; at
    desktop width some fit."""
    page = make_page(**VIEWPORTS[form])
    page.goto(server + "reference/accelerators.html")
    page.wait_for_load_state("load")
    next_frames(page)
    before = page.evaluate(
        """() => { const far = [...document.querySelectorAll('.md-content__inner > .descent-far--table')];
                   const last = far[far.length - 1];
                   return { cv: getComputedStyle(last).contentVisibility, far: far.length,
                            wraps: [...last.querySelectorAll('.md-typeset__scrollwrap')].map((w) => w.tabIndex) }; }"""
    )
    assert before["cv"] == "auto" and before["far"] > 10, f"the rule no longer applies to the page's last tables: {before}"
    assert before["wraps"] and all(t == 0 for t in before["wraps"]), f"an undrawn table has no tab stop: {before}"
    # Every block drawn: the browser's skipping off, and the long tables the build kept out of the DOM
    # until they near the screen (descent.site.lazy) put in.
    page.evaluate("() => { window.descentLazy.draw(document); document.querySelectorAll('.descent-far').forEach((el) => { el.style.contentVisibility = 'visible'; }); }")
    next_frames(page)
    wraps = page.evaluate(
        """() => [...document.querySelectorAll('.md-typeset__scrollwrap')].map((w) => ({
             scrolls: w.scrollWidth > w.clientWidth + 1, focusable: w.tabIndex === 0,
             named: !!w.getAttribute('aria-label') }))"""
    )
    assert len(wraps) > 10
    scrolling = [w for w in wraps if w["scrolls"]]
    fitting = [w for w in wraps if not w["scrolls"]]
    if form == "phone":  # the source columns make most field tables wider than a phone's column
        assert len(scrolling) > 10, f"expected wide tables at phone width, found {len(scrolling)}"
    else:
        assert fitting, "expected some tables that fit at desktop width"
    assert all(w["focusable"] and w["named"] for w in scrolling), [i for i, w in enumerate(wraps) if w["scrolls"] and not w["focusable"]]
    assert not any(w["focusable"] for w in fitting), "a table that fits kept a tab stop after it was drawn"


#: Counts the tables taken out of the page once it is parsed (Material's start-up moves every
#: table:not([class]) into its scroll wrapper, and a moved table is laid out again). Tables put in
#: without being taken out are lazy.js drawing the long ones past the first screen (descent.site.lazy).
RECORD_TABLE_MOVES = """
window.__tableMoves = [];
new MutationObserver((list) => list.forEach((m) => {
  if (document.readyState === 'loading') return;  // the parser adding the page
  for (const n of m.removedNodes)
    if (n.nodeName === 'TABLE') window.__tableMoves.push(n.className || '(no class)');
})).observe(document, { subtree: true, childList: true });
"""


def test_tables_arrive_wrapped_and_styled_as_material_would(server, make_page):
    """descent.site.tables: the build writes Material's scroll wrapper and a class on every content
    table, so Material's start-up moves none (on Reference > Accelerators, a summary and one table
    per chip; each move was a relayout inside its longest start-up task); and the copied rules give a
    table exactly the style
    Material's own rules give a bare one (compared with a bare copy placed beside it; not the width,
    which site.css's no-break rules for names change on purpose)."""
    page = make_page(viewport={"width": 1280, "height": 800})
    page.add_init_script(RECORD_TABLE_MOVES)
    page.goto(server + "reference/accelerators.html")
    page.wait_for_load_state("load")
    next_frames(page)
    assert page.evaluate("() => window.__tableMoves") == []
    # The page's tables: the summary, then one per chip of the catalog (the far ones drawn first).
    tables = page.evaluate("() => { window.descentLazy.draw(document); "
                           "return document.querySelectorAll('article table.descent-content-table').length; }")
    assert tables == 1 + len(catalog.accelerators())
    ours, materials = page.evaluate(
        """() => {
          const t = document.querySelector('article table.descent-content-table');
          const wrap = t.closest('.md-typeset__scrollwrap');
          const bare = t.cloneNode(true);
          bare.removeAttribute('class');
          const copy = wrap.cloneNode(false), inner = t.parentElement.cloneNode(false);
          inner.append(bare); copy.append(inner); wrap.after(copy);
          const pick = (el) => {
            const s = getComputedStyle(el), td = getComputedStyle(el.querySelector('td')), th = getComputedStyle(el.querySelector('th'));
            return [s.display, s.fontSize, s.borderTopWidth, s.borderTopStyle, s.borderRadius,
                    td.padding, td.borderTopWidth, td.verticalAlign, td.textAlign, th.fontWeight, th.minWidth, th.padding];
          };
          return [pick(t), pick(bare)];
        }"""
    )
    assert ours == materials
    assert ours[1] == "12.8px"  # Material's .64rem at its 125% root size (20 px)


#: Records each stylesheet link whose address changes once the body has content: a rewrite the page
#: pays for with a full restyle. (The head script's own rewrite runs before the body exists.)
RECORD_LATE_REWRITES = """
window.__lateHrefs = [];
new MutationObserver((list) => list.forEach((m) => {
  if (m.target.rel === 'stylesheet' && document.body && document.body.childElementCount)
    window.__lateHrefs.push(m.target.getAttribute('href'));
})).observe(document, { subtree: true, attributes: true, attributeFilter: ['href'] });
"""


def test_start_up_marks_are_set_before_the_body_is_styled(server, make_page):
    """overrides/main.html's head script: <html> says js (and carries the focus-visible polyfill's
    marks) before Material's bundle runs, and every stylesheet link holds its absolute address
    before the body exists, so Material's instant navigation, which rewrites relative addresses as
    absolute ones once the page is drawn, leaves the stylesheets alone (a rewritten stylesheet is
    parsed again and the whole page restyled)."""
    page = make_page()
    page.add_init_script(RECORD_LATE_REWRITES)
    page.goto(server + "part-3-serving-software.html")
    page.wait_for_load_state("load")
    next_frames(page)
    state = page.evaluate(
        """() => ({ classes: [...document.documentElement.classList],
                    polyfill: document.documentElement.hasAttribute('data-js-focus-visible'),
                    hrefs: [...document.querySelectorAll('link[rel="stylesheet"]')].map((l) => l.getAttribute('href')),
                    late: window.__lateHrefs })"""
    )
    assert "js" in state["classes"] and "no-js" not in state["classes"] and "js-focus-visible" in state["classes"]
    assert state["polyfill"]
    assert len(state["hrefs"]) == 3, state["hrefs"]  # Material's two and the site's one (descent.site.bundle)
    assert all(h.startswith(server) for h in state["hrefs"]), state["hrefs"]
    assert state["late"] == [], f"stylesheets rewritten after the page was drawn: {state['late']}"


def test_code_blocks_get_their_copy_button_when_they_come_into_view(server, make_page):
    """content.lazy (mkdocs.yml): Material mounts a code block (its copy button, its scroll check)
    when the block is first seen, not all at start-up. Contributing has code blocks far below the
    first screen: they have no button until scrolled to, then each has one."""
    page = make_page(viewport={"width": 1280, "height": 800})
    page.goto(server + "contributing.html")
    page.wait_for_load_state("load")
    next_frames(page)
    blocks = page.locator("pre > code")
    total = blocks.count()
    assert total >= 3
    at_load = page.locator(".md-code__button[data-md-type='copy']").count()
    assert at_load < total, f"every code block was mounted at start-up ({at_load} of {total})"
    for i in range(total):
        blocks.nth(i).scroll_into_view_if_needed()
        next_frames(page)
    page.wait_for_function(
        "n => document.querySelectorAll(\".md-code__button[data-md-type='copy']\").length === n", arg=total
    )


def test_a_far_widgets_controls_arrive_with_its_drawing(server, make_page):
    # Decision 0026: a form control in a skipped block makes Chromium lay the block out at
    # DOMContentLoaded, so a far widget's controls ship in a <noscript> until lazy.js draws the widget.
    page = make_page(**VIEWPORTS["phone"])
    # Counted at DOMContentLoaded itself (a busy machine may answer an evaluate after the load, when
    # lazy.js has begun drawing).
    page.add_init_script("""document.addEventListener('DOMContentLoaded', () => { window.__atDcl = {
        far: document.querySelectorAll('.md-content__inner > .descent-widget.descent-far').length,
        lazy: document.querySelectorAll('.descent-widget.descent-far > noscript.descent-lazy--form').length,
        controls: document.querySelectorAll('.descent-widget.descent-far :is(input, select, textarea)').length}; });""")
    page.goto(server + "part-1-the-transformer.html", wait_until="domcontentloaded")
    before = page.evaluate("() => window.__atDcl")
    assert before["far"] >= 5 and before["lazy"] == before["far"] and before["controls"] == 0
    page.wait_for_load_state("load")
    page.wait_for_function(SETTLED, timeout=30_000)
    after = page.evaluate("""() => [...document.querySelectorAll('.md-content__inner > .descent-widget')].map((w) => ({
        lazy: w.querySelectorAll('noscript.descent-lazy--form').length,
        form: !!w.querySelector('.descent-widget__form .descent-field'),
        shared: !!w.querySelector(".descent-share"), state: w.dataset.state, name: w.dataset.widget}))""")
    # Every far widget's controls are drawn; each widget with fields is bound (share.js adds its bar);
    # none went live unseen (a widget bound late waits to be seen).
    assert all(w["lazy"] == 0 for w in after), after
    fields = [w for w in after if w["form"]]
    assert len(fields) >= 5 and all(w["shared"] for w in fields), fields
    assert [w["state"] for w in after[1:]] == ["static"] * (len(after) - 1), after
