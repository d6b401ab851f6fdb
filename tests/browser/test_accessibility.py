"""axe-core (bundled by axe-playwright-python) on every built page, light and dark: no serious or
critical violation.

The page is served (so widgets are checked in their live state: each is scrolled into view and
awaited) and visited once: axe runs in the light scheme, then the palette toggle (docs/overrides/partials/palette.html) switches
to dark (the test waits until the body carries the slate scheme) and axe's colour rules run again.
Theme fixes that axe asked for are in docs/overrides/ (search dialog name, link underlines, code
and footer contrast).
"""

from __future__ import annotations

import pytest
from helpers import next_frames

#: axe impact levels that fail the test (axe-core's scale: minor, moderate, serious, critical).
FAILING_IMPACTS = {"serious", "critical"}
#: Material's scheme names for the two ``prefers-color-scheme`` values (mkdocs.yml theme.palette).
SCHEMES = {"light": "default", "dark": "slate"}
LIVE_TIMEOUT_MS = 90_000
#: Only violations come back: serialising the passes of a long page costs seconds per run.
AXE_OPTIONS = {"resultTypes": ["violations"]}
#: The dark scheme changes colours only (the palette toggle sets one attribute on the body): axe's
#: rules that read colours run again there, not the whole set a second time on the same DOM.
#: (axe-core 4: color-contrast, and link-in-text-block, which compares a link's colour with the
#: text around it.)
COLOUR_RULES = ["color-contrast", "link-in-text-block"]
AXE_OPTIONS_BY_SCHEME = {"light": AXE_OPTIONS,
                         "dark": {**AXE_OPTIONS, "runOnly": {"type": "rule", "values": COLOUR_RULES}}}


def _report(violations: list[dict]) -> str:
    lines = []
    for v in violations:
        lines.append(f"{v['impact']}: {v['id']} ({v['help']}) on {len(v['nodes'])} node(s)")
        for node in v["nodes"][:3]:
            summary = " ".join(node.get("failureSummary", "").split())
            lines.append(f"    {node['target']}: {summary[:300]}")
    return "\n".join(lines)


def _toggle_to(page, scheme: str) -> None:
    """Click the palette toggle (docs/overrides/partials/palette.html) until the body carries ``SCHEMES[scheme]``."""
    want = SCHEMES[scheme]
    if page.evaluate("document.body.getAttribute('data-md-color-scheme')") != want:
        page.locator('form[data-descent-palette] label:not([hidden])').first.click()
        page.wait_for_function(f"() => document.body.getAttribute('data-md-color-scheme') === {want!r}")


#: True once both of Material's header titles (the site name, and the page title it slides in when
#: the reader scrolls past the first heading) have finished their fade: mid-fade the text is
#: partly transparent and axe measures a contrast no reader sees at rest.
HEADER_SETTLED = """() => [...document.querySelectorAll('.md-header__topic')].every(t => {
  const o = getComputedStyle(t).opacity; return o === '0' || o === '1'; })"""


#: Every skipped block drawn (an inline style wins over site.css; CSSOM writes are not subject to CSP),
#: and what the build kept out of the DOM until needed (descent.site.lazy) put in, so axe sees it all.
SHOW_SKIPPED = """() => { if (window.descentLazy) window.descentLazy.draw(document);
  document.querySelectorAll('.md-content__inner > *, .descent-grid').forEach(
  el => { el.style.contentVisibility = 'visible'; }); }"""


def test_no_serious_axe_violations_light_and_dark(site_page, reader):
    """One visit per page (instant navigation in one session: Pyodide loads once per module):
    axe in the light scheme, toggle, axe in the dark."""
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    reader.visit(site_page)
    page = reader.page
    widgets = page.locator(".descent-widget[data-widget]").all()
    for w in widgets:
        w.scroll_into_view_if_needed()
    for w in widgets:
        page.wait_for_function(
            "w => w.dataset.state === 'live'", arg=w.element_handle(), timeout=LIVE_TIMEOUT_MS
        )
    page.evaluate("window.scrollTo(0, 0)")
    # The article's off-screen blocks are skipped by the browser until they come near the viewport
    # (content-visibility: auto, docs/assets/site.css). A skipped block keeps the style it had when
    # it was last drawn, so after the toggle axe would read light colours beside dark ones, a mix no
    # reader sees: a block on screen is always drawn afresh. Draw them all.
    page.evaluate(SHOW_SKIPPED)
    failures = []
    for scheme in ("light", "dark"):
        _toggle_to(page, scheme)
        # Two frames: style changes and the theme's load-time fixes (overrides/assets/overrides/a11y.js) applied.
        next_frames(page)
        page.wait_for_function(HEADER_SETTLED)
        # The title's fade is a CSS transition of 250 ms that may not have begun when the check above
        # ran (the scroll back to the top fires it a frame later): let it finish.
        page.wait_for_timeout(700)
        results = axe_mod.Axe().run(page, options=AXE_OPTIONS_BY_SCHEME[scheme])
        bad = [v for v in results.response["violations"] if v["impact"] in FAILING_IMPACTS]
        if bad:
            failures.append(f"{site_page} ({scheme}):\n{_report(bad)}")
    _toggle_to(page, "light")
    assert not failures, "\n".join(failures)
    problems = reader.problems()
    assert not problems, "\n".join(problems)


def test_dark_scheme_follows_the_system_setting(server, make_page):
    """A reader whose system is dark gets the slate scheme without touching the toggle."""
    page = make_page(color_scheme="dark")
    page.goto(server + "index.html")
    assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == "slate"
