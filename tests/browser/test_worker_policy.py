"""The widget worker reaches nothing beyond the site's own origin (issue 15, section 2).

A ``<meta>`` policy does not reach a Web Worker: before this, a string ``setTimeout``, a
cross-origin ``fetch`` and a cross-origin ``import()`` all ran in the widget worker. Now:

* a host that sends headers (``descent.site.serve``: the ``server`` fixture, ``nox -s serve``)
  gives the worker's script its own Content-Security-Policy (``descent.site.csp.WORKER_DIRECTIVES``);
* the worker guards itself (``docs/assets/descent/worker.js``): fetch, XMLHttpRequest, WebSocket,
  EventSource, importScripts, nested workers and string timers are refused beyond the origin,
  which is all a host without headers (GitHub Pages: ``plain_server`` here) gets.

The "other origin" is a second local server on another 127.0.0.1 port (loopback only, a free
port, shut down after the test) that answers everything with ``Access-Control-Allow-Origin: *``,
so only the guard or the policy can stop a request, and that logs every request it gets: the
proof that nothing left is its empty log. Code runs inside the worker through Playwright's
``Worker.evaluate`` (DevTools evaluation; a timer callback runs outside it, where the policy's eval
check applies). After the probes the widget still computes.
"""

from __future__ import annotations

import functools
import http.server
import threading
import urllib.request
from collections.abc import Iterator

import pytest
from helpers import LIVE_TIMEOUT_MS

from descent.site import csp

expect = pytest.importorskip("playwright.sync_api").expect

WIDGET = '.descent-widget[data-widget="kv_demo"]'
#: Seconds a server thread waits on a silent client before dropping it (keeps the servers bounded).
SOCKET_TIMEOUT_S = 5


class _Recorder(http.server.BaseHTTPRequestHandler):
    """The other origin: logs each request's path, answers 200 to anyone (CORS open)."""

    timeout = SOCKET_TIMEOUT_S
    log: list[str]

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.log.append(self.path)
        module = self.path.endswith(".mjs")
        body = b"self.__descentEvil = 1; export default 1;" if module else b"ok"
        self.send_response(200)
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Content-Type", "text/javascript" if module else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _start(handler) -> tuple[http.server.ThreadingHTTPServer, str]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}"


@pytest.fixture
def other_origin() -> Iterator[tuple[str, list[str]]]:
    log: list[str] = []
    srv, base = _start(type("Recorder", (_Recorder,), {"log": log}))
    # Positive control: the server answers and logs (so an empty log below means nothing came).
    with urllib.request.urlopen(base + "/control", timeout=SOCKET_TIMEOUT_S) as r:
        assert r.read() == b"ok"
    assert log == ["/control"]
    log.clear()
    try:
        yield base, log
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def plain_server(site_dir) -> Iterator[str]:
    """The built site from the standard library's http.server: no headers at all (GitHub Pages)."""

    class Plain(http.server.SimpleHTTPRequestHandler):
        timeout = SOCKET_TIMEOUT_S

        def log_message(self, *args):
            pass

    srv, base = _start(functools.partial(Plain, directory=str(site_dir)))
    try:
        yield base + "/"
    finally:
        srv.shutdown()
        srv.server_close()


#: Probes run in the worker: name -> (JavaScript arrow function of the other origin's URL).
GUARDED = {
    "fetch": "async (o) => { try { await fetch(o + '/fetch'); return 'ran'; } catch (e) { return e.message; } }",
    "fetch Request": "async (o) => { try { await fetch(new Request(o + '/request')); return 'ran'; } "
                     "catch (e) { return e.message; } }",
    "XMLHttpRequest": "(o) => { try { const x = new XMLHttpRequest(); x.open('GET', o + '/xhr'); x.send(); "
                      "return 'ran'; } catch (e) { return e.message; } }",
    "WebSocket": "(o) => { try { new WebSocket(o.replace('http', 'ws') + '/ws'); return 'ran'; } "
                 "catch (e) { return e.message; } }",
    "EventSource": "(o) => { try { new EventSource(o + '/events'); return 'ran'; } catch (e) { return e.message; } }",
    "importScripts": "(o) => { try { importScripts(o + '/classic.js'); return 'ran'; } catch (e) { return e.message; } }",
    "nested Worker": "(o) => { try { new Worker('data:text/javascript,fetch(\"' + o + '/nested\")'); return 'ran'; } "
                     "catch (e) { return e.message; } }",
    "string setTimeout": "(o) => { try { setTimeout('fetch(\"' + o + '/timer\")', 0); return 'ran'; } "
                         "catch (e) { return e.message; } }",
    "string setInterval": "(o) => { try { setInterval('fetch(\"' + o + '/interval\")', 10); return 'ran'; } "
                          "catch (e) { return e.message; } }",
    "fetch put back": "async (o) => { try { self.fetch = globalThis.__proto__.fetch || (() => 0); } catch (e) {} "
                      "try { await fetch(o + '/putback'); return 'ran'; } catch (e) { return e.message; } }",
}
#: A dynamic import() is a language form, not a function: no script can wrap it.
IMPORT = "async (o) => { try { await import(o + '/module.mjs'); return 'ran ' + self.__descentEvil; } " \
         "catch (e) { return e.message; } }"
#: eval from a timer callback: outside DevTools' evaluation, so the worker's policy applies.
EVAL = "async () => { await new Promise((done) => setTimeout(() => { " \
       "try { self.__descentEval = 'ran ' + (0, eval)('6 * 7'); } catch (e) { self.__descentEval = e.message; } " \
       "done(); }, 0)); return self.__descentEval; }"


#: Collects the worker's own Content-Security-Policy violation events.
RECORD_VIOLATIONS = """() => {
  self.__descentViolations = [];
  self.addEventListener("securitypolicyviolation",
    (e) => self.__descentViolations.push(`${e.effectiveDirective} ${e.blockedURI}`));
}"""


def _live_worker(page, url: str):
    page.goto(url)
    page.locator(WIDGET).scroll_into_view_if_needed()
    page.wait_for_selector(f'{WIDGET}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    workers = [w for w in page.workers if w.url.endswith("/assets/descent/worker.js")]
    assert len(workers) == 1, [w.url for w in page.workers]
    return workers[0]


def _probe_guarded(worker, other: str, log: list[str]) -> None:
    origin = worker.url.split("/assets/")[0]
    for name, js in GUARDED.items():
        got = worker.evaluate(js, other)
        assert got != "ran", f"{name} was not refused"
        assert f"only this site's own files ({origin}) may be reached" in got or "(an eval) refused" in got, \
            f"{name}: {got}"
    worker.evaluate("() => new Promise((r) => setTimeout(r, 300))")  # anything late would arrive now
    assert log == [], f"requests reached the other origin: {log}"


def _still_computes(page) -> None:
    page.locator(f'{WIDGET} .descent-field[data-field="context"] input[type=number]').fill("4096")
    # 2 x 32 layers x 8 KV heads x 128 x 2 bytes x 4,096 tokens = 536,870,912 bytes (test_widget_runtime.py).
    expect(page.locator(f"{WIDGET} .descent-widget__output")).to_contain_text("536,870,912 bytes")
    assert page.locator(WIDGET).get_attribute("data-state") == "live"


def test_the_server_sends_the_worker_its_own_policy(server):
    with urllib.request.urlopen(server + "assets/descent/worker.js", timeout=SOCKET_TIMEOUT_S) as r:
        worker_policy = r.headers["Content-Security-Policy"]
    with urllib.request.urlopen(server + "contributing.html", timeout=SOCKET_TIMEOUT_S) as r:
        page_policy = r.headers["Content-Security-Policy"]
        assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert worker_policy == "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'; worker-src 'none'"
    assert page_policy == "; ".join(f"{k} {v}" for k, v in csp.PAGE_HEADER_DIRECTIVES)


def test_with_headers_the_worker_reaches_no_other_origin(page, server, other_origin):
    other, log = other_origin
    worker = _live_worker(page, server + "contributing.html")
    _probe_guarded(worker, other, log)
    # What only the header policy stops: a dynamic import() and eval. The worker's own
    # securitypolicyviolation events say it was the policy (Playwright does not pass a worker's
    # CSP reports to the page's console recorder).
    worker.evaluate(RECORD_VIOLATIONS)
    got = worker.evaluate(IMPORT, other)
    assert got.startswith("Failed to fetch dynamically imported module"), got
    assert "unsafe-eval" in worker.evaluate(EVAL), "eval ran under the worker's policy"
    assert log == [], f"requests reached the other origin: {log}"
    assert worker.evaluate("() => self.__descentViolations") == [
        f"script-src-elem {other}/module.mjs",
        "script-src eval",
    ]
    _still_computes(page)


def test_without_headers_the_worker_guards_itself(page, plain_server, other_origin):
    """What a host without headers (GitHub Pages) still gets: every network API refused by the
    worker's own guard. Not a dynamic import(), which no script can wrap: it reaches the other
    origin here (DESIGN.md says so; test_with_headers... shows the header policy stopping it)."""
    other, log = other_origin
    worker = _live_worker(page, plain_server + "contributing.html")
    _probe_guarded(worker, other, log)
    _still_computes(page)
    assert worker.evaluate(IMPORT, other) == "ran 1"
    assert log == ["/module.mjs"]
