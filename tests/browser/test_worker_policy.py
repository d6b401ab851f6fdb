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

The model's worker also refuses code made from text (eval, Function and its kin), with and
without the header policy, and its guards cannot be put back (issue 24: without headers eval ran
and ``self.fetch`` could be replaced). Playwright's ``Worker.evaluate`` runs its helper through
eval, so the model worker is probed through the DevTools protocol directly (``_DevToolsWorker``).
It is started by the test itself, from the page (``new Worker(...)``, as
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
import json
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


class _DevToolsWorker:
    """The model's worker, driven through the DevTools protocol directly (``Runtime.evaluate``).

    Its guard refuses eval (``evals: "refuse"``), and Playwright's ``Worker.evaluate`` with an
    argument runs its helper through ``globalThis.eval``: so the probes go in as DevTools
    expressions instead, which no script in the worker can intercept. ``evaluate(js, arg)`` calls
    the arrow function ``js`` with ``arg`` (JSON) and returns its (awaited) value."""

    def __init__(self, page, cdp, session_id: str, url: str):
        self.page, self.cdp, self.session_id, self.url = page, cdp, session_id, url
        self.replies: dict[int, dict] = {}
        self.next_id = 1
        cdp.on("Target.receivedMessageFromTarget", self._on_message)

    def _on_message(self, event) -> None:
        if event.get("sessionId") == self.session_id:
            msg = json.loads(event["message"])
            if "id" in msg:
                self.replies[msg["id"]] = msg

    def evaluate(self, js: str, arg=None):
        call_id, self.next_id = self.next_id, self.next_id + 1
        expression = f"({js})({json.dumps(arg)})"
        self.cdp.send("Target.sendMessageToTarget", {"sessionId": self.session_id, "message": json.dumps(
            {"id": call_id, "method": "Runtime.evaluate",
             "params": {"expression": expression, "awaitPromise": True, "returnByValue": True}})})
        deadline = time.monotonic() + LIVE_TIMEOUT_MS / 1000
        while call_id not in self.replies:
            assert time.monotonic() < deadline, f"no answer from the model's worker to {js[:80]}"
            self.page.wait_for_timeout(20)
        reply = self.replies.pop(call_id)
        assert "error" not in reply and "exceptionDetails" not in reply["result"], reply
        return reply["result"]["result"].get("value")


def _model_worker(page, url: str) -> _DevToolsWorker:
    """The model's worker, started from the page as llm.js starts it, once its module has run (its
    guard installed, wllama imported, its onmessage set); the model is not loaded."""
    page.goto(url)
    cdp = page.context.new_cdp_session(page)
    attached: list[dict] = []
    cdp.on("Target.attachedToTarget", lambda event: attached.append(event))
    cdp.send("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": False})
    page.evaluate("(u) => { window.__descentModelWorker = new Worker(new URL(u, location.href), {type: 'module'}); }",
                  url.split("/contributing.html")[0] + MODEL_WORKER)
    deadline = time.monotonic() + LIVE_TIMEOUT_MS / 1000
    while not [a for a in attached if a["targetInfo"]["url"].endswith(MODEL_WORKER)]:
        assert time.monotonic() < deadline, "the model's worker did not start"
        page.wait_for_timeout(50)
    info = [a for a in attached if a["targetInfo"]["url"].endswith(MODEL_WORKER)][0]
    worker = _DevToolsWorker(page, cdp, info["sessionId"], info["targetInfo"]["url"])
    while worker.evaluate("() => typeof self.onmessage") != "function":
        assert time.monotonic() < deadline, "the model's worker did not run its module"
        page.wait_for_timeout(100)
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


#: Code made from text, each way JavaScript offers, from a timer callback (outside any evaluation).
FROM_TEXT = "async () => { const ways = {" \
    "'eval': () => (0, eval)('6 * 7'), " \
    "'direct eval': () => eval('6 * 7'), " \
    "'Function': () => Function('return 6 * 7')(), " \
    "'new Function': () => new Function('return 6 * 7')(), " \
    "'a function\\'s constructor': () => (function () {}).constructor('return 6 * 7')(), " \
    "'AsyncFunction': () => (async function () {}).constructor('return 6 * 7'), " \
    "'GeneratorFunction': () => (function* () {}).constructor('yield 6 * 7'), " \
    "'AsyncGeneratorFunction': () => (async function* () {}).constructor('yield 6 * 7'), " \
    "}; const out = {}; await new Promise((done) => setTimeout(() => { for (const [k, f] of Object.entries(ways)) { " \
    "try { out[k] = 'ran ' + f(); } catch (e) { out[k] = e.message; } } done(); }, 0)); return out; }"
#: The guards cannot be taken back: each assignment or redefinition is tried, then eval again.
PUT_BACK = "async () => { const real = Object.getPrototypeOf(async function () {}).constructor; " \
    "try { self.eval = () => 42; } catch (e) {} " \
    "try { Object.defineProperty(self, 'eval', {value: () => 42}); } catch (e) {} " \
    "try { delete self.eval; } catch (e) {} " \
    "try { self.fetch = () => 'replaced'; } catch (e) {} " \
    "try { Object.defineProperty(self, 'fetch', {value: () => 'replaced'}); } catch (e) {} " \
    "try { Function.prototype.constructor = real; } catch (e) {} " \
    "let r; try { r = 'ran ' + (0, eval)('6 * 7'); } catch (e) { r = e.message; } " \
    "const f = Object.getOwnPropertyDescriptor(self, 'fetch'); " \
    "return [r, f.writable, f.configurable, String(self.fetch).includes('replaced')]; }"
REFUSED_FROM_TEXT = "refused: this worker runs no code made from text"


def _refuses_code_from_text(worker) -> None:
    got = worker.evaluate(FROM_TEXT)
    assert set(got) == {"eval", "direct eval", "Function", "new Function", "a function's constructor",
                        "AsyncFunction", "GeneratorFunction", "AsyncGeneratorFunction"}, got
    for way, message in got.items():
        assert REFUSED_FROM_TEXT in message, f"{way}: {message}"
    eval_after, writable, configurable, replaced = worker.evaluate(PUT_BACK)
    assert REFUSED_FROM_TEXT in eval_after
    assert (writable, configurable, replaced) == (False, False, False)


def test_with_headers_the_model_worker_reaches_no_other_origin(page, server, other_origin):
    other, log = other_origin
    worker = _model_worker(page, server + "contributing.html")
    _probe_model_worker(worker, other, log)
    worker.evaluate(RECORD_VIOLATIONS)
    got = worker.evaluate(IMPORT, other)
    assert got.startswith("Failed to fetch dynamically imported module"), got
    _refuses_code_from_text(worker)  # the guard refuses before the policy is asked
    assert log == [], f"requests reached the other origin: {log}"
    assert worker.evaluate("() => self.__descentViolations") == [f"script-src-elem {other}/module.mjs"]


def test_without_headers_the_model_worker_guards_itself(page, plain_server, other_origin):
    """As for the widget worker: every network API refused by the guard; and code made from text
    (eval, Function and kin), which before issue 24 ran here, refused by the guard, the guards
    non-writable. A dynamic import(), which no script can stop, runs (only the header policy
    refuses it)."""
    other, log = other_origin
    worker = _model_worker(page, plain_server + "contributing.html")
    _probe_model_worker(worker, other, log)
    _refuses_code_from_text(worker)
    assert worker.evaluate(IMPORT, other) == "ran 1"
    assert log == ["/module.mjs"]
