"""What the article's skipped blocks (``content-visibility: auto`` in docs/assets/site.css) may and
may not change for a reader.

The rule exists for speed: a phone lays out only the blocks near the screen, which took Reference >
Accelerators from about 2 s of blocked main thread to under 0.5 s under Lighthouse's mobile
throttling (``nox -s bench`` measures it). These tests pin what it must not cost:

* nothing on screen moves while a page loads (a block skipped at first and drawn a frame later would
  push the text below it: the rule leaves the first blocks of each page alone for that reason);
* every table that scrolls sideways is still reachable by keyboard, including the ones far below the
  screen that were never drawn (overrides/assets/overrides/a11y.js measures them while idle);
* blocks far below the first screen are in fact skipped (the rule still applies).
"""

from __future__ import annotations

import pytest

#: Lighthouse's own viewports: its mobile form (Moto G Power, 412 x 823) and its desktop form.
VIEWPORTS = {
    "phone": {"viewport": {"width": 412, "height": 823}, "device_scale_factor": 1.75, "is_mobile": True, "has_touch": True},
    "desktop": {"viewport": {"width": 1350, "height": 940}},
}
#: The sum of the page's layout shifts while it loads (the CLS metric without its windowing).
#: web.dev calls under 0.1 good; a page that moves nothing scores 0, and 0.01 leaves room for
#: sub-pixel rounding only.
MAX_SHIFT = 0.01
SETTLE_MS = 2500

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
        page.wait_for_timeout(SETTLE_MS)
        shift = page.evaluate("() => window.__shift")
        if shift > MAX_SHIFT:
            moved.append(f"{path}: {shift:.3f} ({page.evaluate('() => window.__shifted')[:3]})")
    assert not moved, f"content moved while loading at {form} size:\n" + "\n".join(moved)


def test_tables_far_below_are_skipped_yet_reachable_by_keyboard(server, make_page):
    """Reference > Accelerators at phone width: its last tables are skipped when the page opens, and
    once a11y.js has measured every table, the ones wider than the column take focus."""
    page = make_page(**VIEWPORTS["phone"])
    page.goto(server + "reference/accelerators.html")
    skipped = page.evaluate(
        """() => { const blocks = [...document.querySelectorAll('.md-content__inner > *')];
                   const last = blocks[blocks.length - 2];
                   return [getComputedStyle(last).contentVisibility, blocks.length]; }"""
    )
    assert skipped[0] == "auto", f"the rule no longer applies to the page's last blocks: {skipped}"
    page.wait_for_function("() => document.documentElement.dataset.descentTables === 'measured'")
    wraps = page.evaluate(
        """() => [...document.querySelectorAll('.md-typeset__scrollwrap')].map((w) => {
             w.style.contentVisibility = 'visible';
             return { scrolls: w.scrollWidth > w.clientWidth + 1, focusable: w.tabIndex === 0,
                      named: !!w.getAttribute('aria-label') }; })"""
    )
    assert len(wraps) > 10
    scrolling = [w for w in wraps if w["scrolls"]]
    # At 412 px the source columns make most field tables wider than the column.
    assert len(scrolling) > 10, f"expected wide tables at phone width, found {len(scrolling)}"
    assert all(w["focusable"] and w["named"] for w in scrolling), [i for i, w in enumerate(wraps) if w["scrolls"] and not w["focusable"]]
    assert not any(w["focusable"] for w in wraps if not w["scrolls"]), "a table that fits took a tab stop"
