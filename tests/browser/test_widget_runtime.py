"""The widget runtime in a real browser, on the demo widget (``kv_demo`` on docs/contributing.md).

static -> loading -> live; an input change recomputes in the Pyodide worker; a bad number shows
the inline message and keeps the last good result; instant navigation keeps the worker (Pyodide
loads once); from file:// the widget stays static and says how to make it live; the widget has
no axe-core violations and fits a 390 px phone in light and dark. The ``page`` fixture fails any
test whose page or worker requested a host other than 127.0.0.1.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from helpers import LIVE_TIMEOUT_MS, go_live, page_path

from descent import widgets

expect = pytest.importorskip("playwright.sync_api").expect
ROOT = Path(__file__).resolve().parents[2]

WIDGET = '.descent-widget[data-widget="kv_demo"]'

# Expected values, worked out by hand from the demo's formula 2 x L x K x d_head x bytes x T:
# defaults (32 layers, 8 KV heads, d_head 128, BF16 = 2 bytes, 8,192 tokens) -> 1,073,741,824 B;
# context 4,096 -> 536,870,912 B; context 1,000 -> 131,072,000 B.
DEFAULT_TOTAL = "1,073,741,824 bytes"
CTX_4096_TOTAL = "536,870,912 bytes"
CTX_1000_TOTAL = "131,072,000 bytes"


@pytest.fixture
def demo_url(site_dir, server) -> str:
    path = page_path(site_dir, "contributing")
    html = (site_dir / (path if path.endswith(".html") else path + "index.html")).read_text()
    if 'data-widget="kv_demo"' not in html:
        pytest.fail("docs/contributing.md must hold the line <!-- descent:widget kv_demo -->")
    return server + path


def _set_number(page, field: str, value: str) -> None:
    page.locator(f'{WIDGET} .descent-field[data-field="{field}"] input[type=number]').fill(value)


def test_static_then_live_then_recompute(page, demo_url):
    page.goto(demo_url)
    w = page.locator(WIDGET)
    # Before Python runs: the pre-rendered default result, and a status line that says it is ready
    # (issue 23 section 4: with JavaScript on, "Static ... precomputed" read as a failure).
    assert w.get_attribute("data-state") == "static"
    assert DEFAULT_TOTAL in w.locator(".descent-widget__output").inner_text()
    expect(w.locator(".descent-widget__status")).to_have_text(widgets.READY_STATUS)
    # Lazy: nothing of Pyodide is fetched until the widget is seen or touched.
    assert not [u for u in page.descent_requests if "/pyodide/" in u]

    w.scroll_into_view_if_needed()
    page.wait_for_selector(f'{WIDGET}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    assert "Live" in w.locator(".descent-widget__status").inner_text()
    assert DEFAULT_TOTAL in w.locator(".descent-widget__output").inner_text()
    fetched = page.descent_requests
    assert any("/assets/pyodide/gzip/pyodide.asm.wasm" in u for u in fetched)
    assert any("/assets/descent/wheels/descent-" in u for u in fetched)

    _set_number(page, "context", "4096")
    expect(page.locator(f"{WIDGET} .descent-widget__output")).to_contain_text(CTX_4096_TOTAL)
    # The number box moved the log slider: log10(4096) = 3.612..., on the slider's 0.01-decade steps 3.61.
    pos = float(page.locator(f'{WIDGET} [data-field="context"] input[type=range]').input_value())
    assert abs(pos - 3.61) < 1e-9

    # Dragging the log slider writes a 3-significant-figure value into the number box and recomputes:
    # slider at 3.0 -> 10**3 = 1,000 tokens.
    page.locator(f'{WIDGET} [data-field="context"] input[type=range]').evaluate(
        "el => { el.value = '3'; el.dispatchEvent(new Event('input', {bubbles: true})); }"
    )
    assert page.locator(f'{WIDGET} [data-field="context"] input[type=number]').input_value() == "1000"
    expect(page.locator(f"{WIDGET} .descent-widget__output")).to_contain_text(CTX_1000_TOTAL)
    assert w.get_attribute("data-state") == "live"
    assert page.descent_console_errors == []


def test_bad_number_shows_inline_message_and_keeps_last_result(page, demo_url):
    w = go_live(page, demo_url, WIDGET)
    _set_number(page, "context", "4096")
    expect(page.locator(f"{WIDGET} .descent-widget__output")).to_contain_text(CTX_4096_TOTAL)
    _set_number(page, "context", "-3")
    page.wait_for_selector(f'{WIDGET}[data-state="error"]', timeout=10_000)
    field = w.locator('.descent-field[data-field="context"]')
    # The message is Python's, word for word (descent.widgets.Input.coerce).
    assert field.locator(".descent-field__error").inner_text() == "Context must be 1 to 20,000,000 tokens, got -3"
    assert field.locator("input[type=number]").get_attribute("aria-invalid") == "true"
    assert CTX_4096_TOTAL in w.locator(".descent-widget__output").inner_text()  # last good result kept
    assert "Error" in w.locator(".descent-widget__status").inner_text()

    # A second bad field replaces the first message. (A number box reports non-numbers as "".)
    _set_number(page, "context", "4096")
    _set_number(page, "layers", "")
    expect(page.locator(f'{WIDGET} [data-field="layers"] .descent-field__error')).to_have_text(
        "Layers is empty: enter a number from 1 to 200"
    )
    assert field.locator(".descent-field__error").inner_text() == ""

    # Text the number box cannot parse reads as "" in the DOM; the reader still gets the range.
    _set_number(page, "layers", "32")
    box = w.locator('[data-field="context"] input[type=number]')
    box.fill("")
    box.press_sequentially("1e999")
    expect(field.locator(".descent-field__error")).to_have_text("Context must be a number from 1 to 20,000,000 tokens")

    _set_number(page, "context", "4096")
    page.wait_for_selector(f'{WIDGET}[data-state="live"]', timeout=10_000)
    assert w.locator(".descent-field__error").all_inner_texts() == [""] * 5
    assert field.locator("input[type=number]").get_attribute("aria-invalid") is None


def test_select_and_segmented_recompute(page, demo_url):
    w = go_live(page, demo_url, WIDGET)
    w.locator('[data-field="kv"] label:has-text("FP8")').click()
    # FP8 (1 byte) halves the BF16 default: 536,870,912 B.
    expect(page.locator(f"{WIDGET} .descent-widget__output")).to_contain_text(CTX_4096_TOTAL)
    w.locator('[data-field="head_dim"] select').select_option("64")
    # d_head 64 halves it again: 268,435,456 B.
    expect(page.locator(f"{WIDGET} .descent-widget__output")).to_contain_text("268,435,456 bytes")


def test_worker_boots_from_the_build_snapshot_and_package(page, demo_url):
    # worker.js falls back to a fresh boot with only a console warning when the snapshot cannot be
    # restored; the build's snapshot (made under node, argv hidden from Emscripten) must restore.
    worker_log: list[str] = []
    page.on("worker", lambda wk: wk.on("console", lambda msg: worker_log.append(f"{msg.type}: {msg.text}")))
    go_live(page, demo_url, WIDGET)
    fetched = page.descent_requests
    # Issue 28: the snapshot, the wasm and the package travel gzipped (the worker gunzips them: this
    # server sets no Content-Encoding, as a HEAD request for the wasm found); nothing the snapshot
    # holds is fetched: not the standard library (an empty zip stands in), not the lock file (the
    # manifest carries it cut).
    runtime = sorted(u.split("/assets/", 1)[1] for u in fetched if "/assets/pyodide/" in u or "/assets/descent/wheels/" in u)
    assert [u.split("?")[0] for u in runtime] == [
                       "descent/wheels/descent-0.1.0.tar.gz", "descent/wheels/manifest.json",
                       "pyodide/boot/pyodide.asm.wasm",  # Pyodide's own request: an empty module
                       "pyodide/gzip/pyodide.asm.wasm",
                       "pyodide/pyodide-snapshot.bin.gz", "pyodide/pyodide.asm.mjs", "pyodide/pyodide.asm.wasm",
                       "pyodide/pyodide.mjs", "pyodide/python_stdlib.empty.zip"], runtime
    assert "pyodide/pyodide.asm.wasm?encoding" in runtime  # the HEAD request, not the file
    assert [m for m in worker_log if "snapshot" in m] == []
    # The standard library comes when an import needs it, by a synchronous request from the worker:
    # its guard and its header policy let that through (the same origin).
    worker = next(w for w in page.workers if w.url.endswith("/assets/descent/worker.js"))
    size = worker.evaluate("""() => {
        const x = new XMLHttpRequest();
        x.open("GET", new URL("../pyodide/python_stdlib.zip", location.href).href, false);
        x.responseType = "arraybuffer";
        x.send();
        return x.response.byteLength;
    }""")
    assert size == (ROOT / "node_modules/pyodide/python_stdlib.zip").stat().st_size
    _set_number(page, "context", "4096")
    expect(page.locator(f"{WIDGET} .descent-widget__output")).to_contain_text(CTX_4096_TOTAL)
    assert page.descent_console_errors == []


def _wasm_fetches(page) -> int:
    # Pyodide's own request in boot/ is an 8-byte stand-in (worker.js compiles the real wasm itself).
    return len([u for u in page.descent_requests if u.endswith("pyodide.asm.wasm") and "/boot/" not in u])


def test_swapped_in_page_binds_on_document_emission_and_reuses_the_worker(page, demo_url):
    """What Material's instant navigation does, done by hand: replace the content with a freshly
    fetched copy of the page's static widget and emit on document$. The new widget must bind and
    go live on the worker already running (Pyodide fetched once)."""
    go_live(page, demo_url, WIDGET)
    assert _wasm_fetches(page) == 1
    page.evaluate(
        """async (url) => {
            const html = await (await fetch(url)).text();
            const fresh = new DOMParser().parseFromString(html, "text/html").querySelector('[data-widget="kv_demo"]');
            const old = document.querySelector('[data-widget="kv_demo"]');
            old.replaceWith(document.importNode(fresh, true));
            window.document$.next(document);
        }""",
        demo_url,
    )
    page.wait_for_selector(f'{WIDGET}[data-state="live"]', timeout=10_000)
    _set_number(page, "context", "4096")
    expect(page.locator(f"{WIDGET} .descent-widget__output")).to_contain_text(CTX_4096_TOTAL)
    assert _wasm_fetches(page) == 1


def test_instant_navigation_keeps_the_worker(page, demo_url):
    go_live(page, demo_url, WIDGET)
    page.evaluate("() => { window.__descentSamePage = true; }")
    href = page.evaluate(
        "() => [...document.querySelectorAll('a.md-nav__link[href]')].map(a => a.href)"
        ".find(h => h.startsWith(location.origin) && !h.includes('contributing'))"
    )
    assert href
    page.evaluate("h => [...document.querySelectorAll('a.md-nav__link[href]')].find(a => a.href === h).click()", href)
    page.wait_for_url(href)
    if not page.evaluate("() => window.__descentSamePage === true"):
        pytest.skip("Material's instant navigation did a full page load: the site's site_url does not name "
                    "this server's origin (sitemap.xml must list the served URLs, port included)")
    page.go_back()
    page.wait_for_url(demo_url)
    page.wait_for_selector(f'{WIDGET}[data-state="live"]', timeout=20_000)
    assert _wasm_fetches(page) == 1


def test_without_javascript_the_status_says_precomputed(make_page, demo_url):
    page = make_page(java_script_enabled=False, viewport={"width": 1280, "height": 900})
    page.goto(demo_url)
    w = page.locator(WIDGET)
    assert w.get_attribute("data-state") == "static"
    # Read where a reader reads it: a far widget is drawn as it nears the screen (decision 0025).
    w.scroll_into_view_if_needed()
    expect(w.locator(".descent-widget__status")).to_have_text(widgets.STATIC_STATUS, use_inner_text=True)
    assert DEFAULT_TOTAL in w.locator(".descent-widget__output").inner_text()


def test_file_url_stays_static_with_message(page, site_dir):
    path = page_path(site_dir, "contributing")
    url = (site_dir / (path if path.endswith(".html") else path + "index.html")).resolve().as_uri()
    page.goto(url)
    w = page.locator(WIDGET)
    expect(page.locator(f"{WIDGET} .descent-widget__status")).to_contain_text("Static copy")
    w.scroll_into_view_if_needed()
    # Issue 13: the controls are disabled, so none can show a value the results do not match, and
    # one plain sentence (no backticks, no developer command) says how to make them live.
    for c in w.locator("input:not(.descent-share__url), select, textarea:not(.descent-share__url)").all():  # the share box: a link to copy, not an input
        expect(c).to_be_disabled()
    page.wait_for_timeout(500)
    assert w.get_attribute("data-state") == "static"
    status = w.locator(".descent-widget__status").inner_text()
    assert status == (
        "Static copy: these results were computed when the site was built. Open the page from a web "
        "address (the published site or a local web server) rather than from a file to change the inputs."
    )
    assert "`" not in status and "nox" not in status
    assert DEFAULT_TOTAL in w.locator(".descent-widget__output").inner_text()
    assert not [u for u in page.descent_requests if "/pyodide/" in u or "worker.js" in u]
    assert page.descent_console_errors == []


def test_widget_has_no_axe_violations(page, demo_url):
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    go_live(page, demo_url, WIDGET)
    results = axe_mod.Axe().run(page, context=WIDGET, options={"resultTypes": ["violations"]})
    violations = results.response["violations"]
    assert not violations, results.generate_report()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_phone_layout_fits_and_screenshot(make_page, demo_url, scheme, tmp_path):
    page = make_page(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True,
                     has_touch=True, color_scheme=scheme, early_start=True)
    w = go_live(page, demo_url, WIDGET)
    # A phone (coarse pointer): the page's <head> started nothing (early_start=True: no opt-out);
    # widgets.js started the runtime only after the page's largest paint and load event (decisions
    # 0021 and 0028), and the widget still went live without a touch.
    assert page.evaluate("() => matchMedia('(pointer: coarse)').matches")
    started = page.evaluate("() => window.descentRuntime.startedAt")
    lcp = page.evaluate("""() => new Promise((r) => new PerformanceObserver((l) => r(l.getEntries().at(-1).startTime))
        .observe({type: "largest-contentful-paint", buffered: true}))""")
    load = page.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd")
    assert started >= max(lcp, load), (started, lcp, load)
    w.scroll_into_view_if_needed()
    # Nothing in the widget is wider than the phone's viewport.
    overflow = page.evaluate(
        f"() => [...document.querySelectorAll('{WIDGET} *')].filter(e => e.getBoundingClientRect().right > "
        "innerWidth + 1).map(e => e.className || e.tagName)"
    )
    assert overflow == []
    scheme_attr = page.evaluate("() => document.body.getAttribute('data-md-color-scheme')")
    assert scheme_attr == ("slate" if scheme == "dark" else "default")
    out_dir = Path(os.environ.get("DESCENT_SCREENSHOTS", tmp_path))
    out_dir.mkdir(parents=True, exist_ok=True)
    w.screenshot(path=str(out_dir / f"kv_demo-phone-{scheme}.png"))


def _script_ms(script: str, name: str) -> int:
    """The milliseconds ``const NAME = <integer>;`` sets in ``docs/assets/descent/<script>``."""
    m = re.search(rf"^const {name} = (\d+);$", (ROOT / "docs/assets/descent" / script).read_text(encoding="utf-8"), re.M)
    assert m, f"{script} must set {name}"
    return int(m.group(1))


#: widgets.js PHONE_QUIET_MS: on a phone, the runtime starts this long after the page has settled
#: when the reader has not touched the screen, turned a wheel or pressed a key (decision 0028).
PHONE_QUIET_MS = _script_ms("widgets.js", "PHONE_QUIET_MS")


def _phone(make_page):
    return make_page(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True)


def _runtime_requests(page) -> list[str]:
    return [u for u in page.descent_requests if "/pyodide/" in u or "/assets/descent/worker.js" in u]


def _started_and_load(page) -> tuple[float, float]:
    """When widgets.js started the runtime and when the page's load event ended (ms since navigation)."""
    return page.evaluate("""() => [window.descentRuntime.startedAt,
                                  performance.getEntriesByType('navigation')[0].loadEventEnd]""")


def test_phone_starts_the_runtime_at_the_readers_first_gesture(make_page, demo_url):
    page = _phone(make_page)
    page.goto(demo_url)
    page.wait_for_load_state("load")
    page.wait_for_timeout(1000)
    # Settled (load event and largest paint), and no touch, wheel or key yet: nothing fetched.
    assert _runtime_requests(page) == [], _runtime_requests(page)
    wheeled_at = page.evaluate("() => performance.now()")
    page.mouse.wheel(0, 300)
    w = page.locator(WIDGET)
    w.scroll_into_view_if_needed()
    page.wait_for_selector(f'{WIDGET}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    started, load = _started_and_load(page)
    # Started by the wheel: after it, and well before the quiet timer would have fired.
    assert wheeled_at <= started < load + PHONE_QUIET_MS, (wheeled_at, started, load)


def test_phone_remembers_a_gesture_made_before_the_page_settled(make_page, demo_url):
    page = _phone(make_page)
    page.goto(demo_url, wait_until="domcontentloaded")
    page.mouse.wheel(0, 300)
    page.locator(WIDGET).scroll_into_view_if_needed()
    page.wait_for_selector(f'{WIDGET}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    started, load = _started_and_load(page)
    # Not before the page settled, and without the quiet spell's wait.
    assert load <= started < load + PHONE_QUIET_MS, (started, load)


def test_phone_starts_the_runtime_after_a_quiet_spell_without_the_reader(make_page, demo_url):
    page = _phone(make_page)
    # The address's fragment puts the widget on screen with no gesture of the reader's.
    page.goto(demo_url + "#dw-kv_demo")
    page.wait_for_selector(f'{WIDGET}[data-state="live"]', timeout=LIVE_TIMEOUT_MS + PHONE_QUIET_MS)
    started, load = _started_and_load(page)
    assert started >= load + PHONE_QUIET_MS, (started, load)


def _stays_static_and_says_why(page, demo_url) -> None:
    page.goto(demo_url)
    w = page.locator(WIDGET)
    w.scroll_into_view_if_needed()
    expect(page.locator(f"{WIDGET} .descent-widget__status")).to_contain_text("could not start", timeout=LIVE_TIMEOUT_MS)
    assert w.get_attribute("data-state") == "static"
    assert DEFAULT_TOTAL in w.locator(".descent-widget__output").inner_text()


def test_runtime_that_cannot_start_keeps_static_values_and_says_why(page, demo_url):
    # The wheel's manifest is missing (a broken deployment): the widget must not hang in "loading".
    page.route("**/assets/descent/wheels/**", lambda route: route.fulfill(status=404, body="missing"))
    _stays_static_and_says_why(page, demo_url)


def test_runtime_whose_wasm_is_broken_says_why(page, demo_url):
    # Pyodide's wasm arrives damaged: Pyodide itself only logs a failed instantiation and waits for
    # ever; worker.js must give up and say so, not leave the widget loading.
    for pattern in ("**/assets/pyodide/gzip/pyodide.asm.wasm*", "**/assets/pyodide/pyodide.asm.wasm"):
        page.route(pattern, lambda route: route.fulfill(status=200, body=b"not a wasm module",
                                                        headers={"Content-Type": "application/wasm"}))
    _stays_static_and_says_why(page, demo_url)


#: Init script: note the document's readyState when a page script makes the widget worker.
_WORKER_MADE = """
(() => {
  const Made = window.Worker;
  window.__workerMade = [];
  window.Worker = function Worker(url, options) {
    if (String(url).includes("/assets/descent/worker.js")) window.__workerMade.push(document.readyState);
    return new Made(url, options);
  };
})();
"""


def test_desktop_starts_the_runtime_while_the_page_is_parsed(make_page, demo_url):
    # A desktop (fine pointer), no test opt-out: the page's <head> makes the worker before the body
    # is parsed (docs/overrides/main.html), widgets.js adopts it, and the widget goes live once seen.
    page = make_page(early_start=True, viewport={"width": 1280, "height": 900})
    page.add_init_script(_WORKER_MADE)
    page.goto(demo_url)
    assert page.evaluate("() => window.__workerMade") == ["loading"]
    w = page.locator(WIDGET)
    assert DEFAULT_TOTAL in w.locator(".descent-widget__output").inner_text()
    w.scroll_into_view_if_needed()
    page.wait_for_selector(f'{WIDGET}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    # Adopted, not doubled: one worker, one download of the wasm, nothing left aside.
    assert page.evaluate("() => window.descentEarlyWorker") is None
    assert page.evaluate("() => window.__workerMade") == ["loading"]
    assert len([wk for wk in page.workers if wk.url.endswith("/assets/descent/worker.js")]) == 1
    assert _wasm_fetches(page) == 1
    _set_number(page, "context", "4096")
    expect(w.locator(".descent-widget__output")).to_contain_text(CTX_4096_TOTAL)
    assert page.descent_console_errors == []


def test_a_page_without_widgets_starts_no_runtime(make_page, site_dir, server):
    page = make_page(early_start=True, viewport={"width": 1280, "height": 900})
    page.goto(server + page_path(site_dir, "glossary"))
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)
    assert page.evaluate("() => window.descentEarlyWorker") is None
    assert not [u for u in page.descent_requests if "/pyodide/" in u or "worker.js" in u]


def test_early_runtime_that_cannot_start_says_why(make_page, demo_url):
    # The worker the <head> started fails (a broken deployment: no wheel) before or after widgets.js
    # adopts it: the widget says so and keeps its precomputed values; it never hangs in "loading".
    page = make_page(early_start=True, viewport={"width": 1280, "height": 900})
    page.route("**/assets/descent/wheels/**", lambda route: route.fulfill(status=404, body="missing"))
    page.goto(demo_url)
    w = page.locator(WIDGET)
    w.scroll_into_view_if_needed()
    expect(w.locator(".descent-widget__status")).to_contain_text("could not start", timeout=LIVE_TIMEOUT_MS)
    assert w.get_attribute("data-state") == "static"
    assert DEFAULT_TOTAL in w.locator(".descent-widget__output").inner_text()


def test_a_focused_chip_keeps_the_focus_when_the_first_live_result_replaces_it(page, demo_url):
    # A keyboard reader reaches a chip of the precomputed output before Python has started (no early
    # start in this test: focusing it scrolls the widget into view, which starts the runtime). The
    # live result replaces every node of the output; the same chip in it has the focus.
    page.goto(demo_url)
    chip = page.locator(f"{WIDGET} .descent-chip__button", has_text="Llama 3.1 70B")
    chip.focus()
    assert page.locator(WIDGET).get_attribute("data-state") != "live"
    page.wait_for_selector(f'{WIDGET}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    assert page.evaluate("() => document.activeElement.classList.contains('descent-chip__button')")
    assert "Llama 3.1 70B" in page.evaluate("() => document.activeElement.textContent")
    page.keyboard.press("Enter")
    expect(page.locator(f"{WIDGET} .descent-widget__output")).to_contain_text("327,680 bytes")


def test_clickable_output_sets_inputs_and_recomputes(page, demo_url):
    w = go_live(page, demo_url, WIDGET)
    w.locator(".descent-chip__button", has_text="Llama 3.1 70B").click()
    # Llama 3.1 70B's config.json: 80 layers, 8 KV heads, head_dim 128; in BF16 that is
    # 2 x 80 x 8 x 128 x 2 = 327,680 bytes per token (by hand).
    expect(w.locator(".descent-widget__output")).to_contain_text("327,680 bytes")
    assert w.locator('[data-field="layers"] input[type=number]').input_value() == "80"
    assert w.locator('[data-field="layers"] input[type=range]').input_value() == "80"
    expect(w.locator(".descent-chip.is-selected")).to_contain_text("Llama 3.1 70B")


# Records what the page posts to the worker and holds each reply back for DELAY_MS once
# window.__delay is set, so that newer inputs arrive while a request is out.
_SLOW_WORKER = """
(() => {
  window.__posts = [];
  window.__delay = 0;
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (msg, ...rest) {
    if (msg && msg.widget) window.__posts.push(JSON.parse(JSON.stringify(msg)));
    return post.call(this, msg, ...rest);
  };
  const add = Worker.prototype.addEventListener;
  Worker.prototype.addEventListener = function (type, fn, ...rest) {
    if (type !== "message") return add.call(this, type, fn, ...rest);
    const slow = (ev) => {
      const d = window.__delay;
      if (d && ev.data && ev.data.type === "result") setTimeout(() => fn(ev), d);
      else fn(ev);
    };
    return add.call(this, type, slow, ...rest);
  };
})();
"""
DELAY_MS = 1500


def test_latest_input_wins_busy_and_no_stale_error(page, demo_url):
    """Issue 24: while a request is out the widget is busy; inputs typed meanwhile wait and only the
    newest is sent; the older reply is never shown; an error for an older input is cleared at once."""
    page.add_init_script(_SLOW_WORKER)
    w = go_live(page, demo_url, WIDGET)
    root = page.locator(WIDGET)
    field = w.locator('.descent-field[data-field="context"]')
    page.evaluate(f"() => {{ window.__delay = {DELAY_MS}; }}")
    _set_number(page, "context", "-3")
    expect(root).to_have_attribute("aria-busy", "true")
    page.wait_for_selector(f'{WIDGET}[data-state="error"]', timeout=10_000)
    assert field.locator(".descent-field__error").inner_text().startswith("Context must be")
    expect(root).not_to_have_attribute("aria-busy", "true")

    page.evaluate("""() => {
      window.__outs = [];
      const out = document.querySelector('.descent-widget[data-widget="kv_demo"] .descent-widget__output');
      new MutationObserver(() => window.__outs.push(out.innerText)).observe(out, {childList: true, subtree: true});
    }""")
    sent = page.evaluate("() => window.__posts.length")
    _set_number(page, "context", "1000")
    # The error was for -3: it goes at once, before the reply for 1000 arrives.
    expect(field.locator(".descent-field__error")).to_have_text("", timeout=DELAY_MS // 2)
    expect(root).to_have_class(re.compile(r"\bdescent-widget--busy\b"))
    # The stale result stays readable (axe's contrast rule runs on it whenever a check lands while
    # a widget is busy): outlined, not faded.
    assert page.evaluate(f"() => getComputedStyle(document.querySelector('{WIDGET} .descent-widget__output')).opacity") == "1"
    page.wait_for_timeout(100)
    _set_number(page, "context", "5000")
    page.wait_for_timeout(100)
    _set_number(page, "context", "4096")
    expect(page.locator(f"{WIDGET} .descent-widget__output")).to_contain_text(CTX_4096_TOTAL, timeout=4 * DELAY_MS)
    expect(root).to_have_attribute("data-state", "live")
    expect(root).not_to_have_attribute("aria-busy", "true")
    expect(root).not_to_have_class(re.compile(r"\bdescent-widget--busy\b"))
    posts = page.evaluate("() => window.__posts")[sent:]
    # 1000 went at once; 5000 was replaced while it waited; 4096 went when 1000's reply came.
    assert [p["inputs"]["context"] for p in posts] == ["1000", "4096"]
    assert not any(CTX_1000_TOTAL in t for t in page.evaluate("() => window.__outs"))
    assert page.descent_console_errors == []


# Records how many widgets the worker has run at their defaults in the background (`warmed`, their
# names in order) as each result reply says, and the latest list of names.
_WARMED = """
(() => {
  window.__warmed = [];
  window.__warmedNames = [];
  const add = Worker.prototype.addEventListener;
  Worker.prototype.addEventListener = function (type, fn, ...rest) {
    if (type === "message") {
      add.call(this, "message", (ev) => {
        if (ev.data && ev.data.type === "result") {
          window.__warmed.push((ev.data.warmed || []).length);  // an error reply carries none
          window.__warmedNames = ev.data.warmed || [];
        }
      });
    }
    return add.call(this, type, fn, ...rest);
  };
})();
"""


def test_warming_waits_while_the_reader_changes_inputs(page, demo_url):
    """Issue 28: the worker warms the other widgets only after the reader has sent nothing for
    WARM_QUIET_MS, so a change never waits behind a warm-up while the reader is moving a control."""
    quiet = _script_ms("worker.js", "WARM_QUIET_MS")
    page.add_init_script(_WARMED)
    go_live(page, demo_url, WIDGET)
    # A change every fifth of the quiet spell, for three spells.
    page.evaluate(
        """async ([every, total]) => {
          const input = document.querySelector(
            '.descent-widget[data-widget="kv_demo"] .descent-field[data-field="context"] input[type=number]');
          for (let t = 0, i = 0; t < total; t += every, i++) {
            input.value = String(4000 + i);
            input.dispatchEvent(new Event("input", {bubbles: true}));
            await new Promise((r) => setTimeout(r, every));
          }
        }""",
        [quiet // 5, 3 * quiet],
    )
    busy = page.evaluate("() => window.__warmed.slice()")
    # Fifteen changes sent; one sent while another is out waits and only the newest goes (the test
    # above), so fewer replies may come, but not a handful. The first reply (the widget going live)
    # may follow a warm-up begun before the changes; none ran between the changes' replies.
    assert len(busy) >= 6, busy
    assert len(set(busy[1:])) == 1, busy
    page.wait_for_timeout(2 * quiet)
    _set_number(page, "context", "1000")
    expect(page.locator(f"{WIDGET} .descent-widget__output")).to_contain_text(CTX_1000_TOTAL)
    assert page.evaluate("() => window.__warmed.at(-1)") > busy[-1]


def test_the_pages_own_widgets_are_warmed_first(page, site_dir, server):
    """Issue 28: the page names its widgets to the worker, which warms those first, in page order,
    so a widget further down is warm before the reader reaches it. Part 3's widgets are not the
    first in the registry's order (which starts with accelerator_landscape), so this can fail."""
    path = page_path(site_dir, "part-3-serving-software")
    html = (site_dir / (path if path.endswith(".html") else path + "index.html")).read_text()
    on_page = list(dict.fromkeys(re.findall(r'<div[^>]*class="descent-widget[^"]*"[^>]*data-widget="([a-z0-9_]+)"', html)))
    assert len(on_page) >= 5, on_page
    quiet = _script_ms("worker.js", "WARM_QUIET_MS")
    page.add_init_script(_WARMED)
    first = page.locator(f'.descent-widget[data-widget="{on_page[0]}"]')
    go_live(page, server + path, f'.descent-widget[data-widget="{on_page[0]}"]')
    # Idle while the warm-up runs, then change a number for a result that carries the list.
    number = first.locator("input[type=number]").first
    start = int(number.input_value())
    warmed = []
    for i in range(1, 6):
        page.wait_for_timeout(3 * quiet)
        sent = len(page.evaluate("() => window.__warmed"))
        number.fill(str(start + (i % 2)))
        page.wait_for_function(f"() => window.__warmed.length > {sent}", timeout=LIVE_TIMEOUT_MS)
        warmed = page.evaluate("() => window.__warmedNames")
        if len(warmed) >= len(on_page):
            break
    assert warmed[:len(on_page)] == on_page, warmed
    assert page.descent_console_errors == []
