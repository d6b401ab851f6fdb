"""The site's workers reach nothing beyond the site's own origin (issue 15, section 2; issue 24,
section 2: the widget worker and the model's worker, with and without the header policy).

A ``<meta>`` policy does not reach a Web Worker: before this, a string ``setTimeout``, a
cross-origin ``fetch`` and a cross-origin ``import()`` all ran in the widget worker. Now:

* a host that sends headers (``descent.site.serve``: the ``server`` fixture, ``nox -s serve``)
  gives the worker's script its own Content-Security-Policy (``descent.site.csp.WORKER_DIRECTIVES``);
* each worker guards itself (``docs/assets/descent/guard.js``, called first by ``worker.js`` and,
  through ``guard-model.js``, by ``llm-worker.js``): fetch, XMLHttpRequest, WebSocket, EventSource,
  importScripts, nested workers and string timers are refused beyond the origin, which is all a
  host without headers (GitHub Pages: ``plain_server`` here) gets. Each URL is read once: an
  argument whose ``toString`` names the site first and another origin the second time (issue 24)
  reaches the site, never the other origin. The guards cannot be replaced.

The model's worker is started by the test itself, from the page (``new Worker(...)``, as
``llm.js`` does), and probed as soon as its module has been evaluated (its guard installed and
wllama imported), without loading the model (98 MB, minutes on a busy machine): the guard is in
place before the engine exists. A nested worker made from a Blob there (how wllama starts llama.cpp
and its threads) runs with the guard in front of its code; one from anything else is refused.

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
import time
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
    "fetch redefined": "async (o) => { try { Object.defineProperty(self, 'fetch', {value: () => 0}); } catch (e) {} "
                       "try { delete self.fetch; } catch (e) {} "
                       "try { await fetch(o + '/redefined'); return 'ran'; } catch (e) { return e.message; } }",
    "XMLHttpRequest.open redefined": "(o) => { const p = XMLHttpRequest.prototype; "
                                     "try { Object.defineProperty(p, 'open', {value: () => 0}); } catch (e) {} "
                                     "try { delete p.open; } catch (e) {} try { const x = new XMLHttpRequest(); "
                                     "x.open('GET', o + '/xhr-redefined'); x.send(); return 'ran'; } "
                                     "catch (e) { return e.message; } }",
    "fetch Request subclass": "async (o) => { class R extends Request { get url() { return '/x'; } } "
                              "try { await fetch(new R(o + '/subclass')); return 'ran'; } catch (e) { return e.message; } }",
    "WebSocket by prototype.constructor": "(o) => { try { new WebSocket.prototype.constructor("
                                          "o.replace('http', 'ws') + '/ws-ctor'); return 'ran'; } "
                                          "catch (e) { return e.message; } }",
    "EventSource by prototype.constructor": "(o) => { try { new EventSource.prototype.constructor(o + '/events-ctor'); "
                                            "return 'ran'; } catch (e) { return e.message; } }",
    "WebSocket, toString twice": "(o) => { let n = 0; const u = {toString() { "
                                 "return n++ ? o.replace('http', 'ws') + '/ws-twice' : self.location.origin.replace('http', 'ws') + '/x'; }}; "
                                 "try { new WebSocket(u); return 'ran'; } catch (e) { return e.message; } }",
    "importScripts, toString twice": "(o) => { let n = 0; const u = {toString() { return n++ ? o + '/classic-twice.js' : '/x.js'; }}; "
                                     "try { importScripts(u); return 'ran'; } catch (e) { return 'refused ' + e.message; } }",
    "FontFace": "async (o) => { try { await new FontFace('x', 'url(' + o + '/font)').load(); return 'ran'; } "
                "catch (e) { return e.message; } }",
}
#: An argument read twice (issue 24): ``toString`` names the site the first time, the other origin
#: after. Each probe returns the URL the request really went to: the site's ``/x``.
TWICE = {
    "fetch": "async (o) => { let n = 0; const u = {toString() { return n++ ? o + '/fetch-twice' : '/x'; }}; "
             "try { return (await fetch(u)).url; } catch (e) { return e.message; } }",
    "XMLHttpRequest.open": "(o) => new Promise((done) => { let n = 0; "
                           "const u = {toString() { return n++ ? o + '/xhr-twice' : '/x'; }}; "
                           "try { const x = new XMLHttpRequest(); x.open('GET', u); "
                           "x.onloadend = () => done(x.responseURL); x.send(); } catch (e) { done(e.message); } })",
    "EventSource": "(o) => { let n = 0; const u = {toString() { return n++ ? o + '/events-twice' : '/x'; }}; "
                   "try { const s = new EventSource(u); s.close(); return s.url; } catch (e) { return e.message; } }",
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


#: In the model's worker: a nested worker from a Blob made there runs, guarded (it posts what its
#: fetch of the other origin gave). ``type`` is "module" (wllama's engine) or "classic" (its threads).
NESTED_BLOB = """async ([o, type]) => {
  const code = `(async () => { let r; try { await fetch(${JSON.stringify(o + '/nested-blob')}); r = 'ran'; }
    catch (e) { r = e.message; } postMessage(r); })();`;
  const w = new Worker(URL.createObjectURL(new Blob([code], {type: 'text/javascript'})), {type});
  return await new Promise((done) => { w.onmessage = (e) => done(e.data); w.onerror = (e) => done('error ' + e.message); });
}"""
MODEL_WORKER = "/assets/descent/llm-worker.js"


def _live_worker(page, url: str):
    page.goto(url)
    page.locator(WIDGET).scroll_into_view_if_needed()
    page.wait_for_selector(f'{WIDGET}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    workers = [w for w in page.workers if w.url.endswith("/assets/descent/worker.js")]
    assert len(workers) == 1, [w.url for w in page.workers]
    return workers[0]


def _model_worker(page, url: str):
    """The model's worker, started from the page as llm.js starts it, once its module has run (its
    guard installed, wllama imported, its onmessage set); the model is not loaded."""
    page.goto(url)
    with page.expect_worker(lambda w: w.url.endswith(MODEL_WORKER)) as started:
        page.evaluate("(u) => { window.__descentModelWorker = new Worker(new URL(u, location.href), {type: 'module'}); }",
                      url.split("/contributing.html")[0] + MODEL_WORKER)
    worker = started.value
    deadline = time.monotonic() + LIVE_TIMEOUT_MS / 1000
    while not worker.evaluate("() => typeof self.onmessage === 'function'"):
        assert time.monotonic() < deadline, "the model's worker did not start"
        time.sleep(0.1)
    return worker


def _probe_guarded(worker, other: str, log: list[str]) -> None:
    origin = worker.url.split("/assets/")[0]
    refused = f"only this site's own files ({origin}) may be reached"
    for name, js in GUARDED.items():
        got = worker.evaluate(js, other)
        assert got != "ran", f"{name} was not refused"
        if name == "importScripts, toString twice":
            continue  # the site's /x.js passes the guard; a module worker's importScripts then throws
        assert refused in got or "(an eval) refused" in got, f"{name}: {got}"
    for name, js in TWICE.items():
        assert worker.evaluate(js, other) == origin + "/x", f"{name}: the URL read twice"
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


def test_the_server_sends_the_model_worker_its_own_policy(server):
    with urllib.request.urlopen(server + MODEL_WORKER.lstrip("/"), timeout=SOCKET_TIMEOUT_S) as r:
        assert r.headers["Content-Security-Policy"] == "; ".join(f"{k} {v}" for k, v in csp.MODEL_WORKER_DIRECTIVES)


def _probe_model_worker(worker, other: str, log: list[str]) -> None:
    origin = worker.url.split("/assets/")[0]
    _probe_guarded(worker, other, log)
    for kind in ("module", "classic"):
        got = worker.evaluate(NESTED_BLOB, [other, kind])
        assert f"only this site's own files ({origin}) may be reached" in got, f"nested {kind} blob worker: {got}"
    worker.evaluate("() => new Promise((r) => setTimeout(r, 300))")
    assert log == [], f"requests reached the other origin: {log}"


def test_with_headers_the_model_worker_reaches_no_other_origin(page, server, other_origin):
    other, log = other_origin
    worker = _model_worker(page, server + "contributing.html")
    _probe_model_worker(worker, other, log)
    worker.evaluate(RECORD_VIOLATIONS)
    got = worker.evaluate(IMPORT, other)
    assert got.startswith("Failed to fetch dynamically imported module"), got
    assert "unsafe-eval" in worker.evaluate(EVAL), "eval ran under the model worker's policy"
    assert log == [], f"requests reached the other origin: {log}"
    assert worker.evaluate("() => self.__descentViolations") == [
        f"script-src-elem {other}/module.mjs",
        "script-src eval",
    ]


def test_without_headers_the_model_worker_guards_itself(page, plain_server, other_origin):
    """As for the widget worker: every network API refused by the guard; a dynamic import() and
    eval, which no script can stop, run (only the header policy refuses them)."""
    other, log = other_origin
    worker = _model_worker(page, plain_server + "contributing.html")
    _probe_model_worker(worker, other, log)
    assert worker.evaluate(EVAL) == "ran 42"
    assert worker.evaluate(IMPORT, other) == "ran 1"
    assert log == ["/module.mjs"]
