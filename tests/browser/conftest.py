"""Shared fixtures for the browser tests: the built site, a local server, headless chromium.

* ``site_dir`` and ``server_port``: from tests/conftest.py, shared with the other tests (one
  ``mkdocs build --strict`` per session, or ``$DESCENT_SITE_DIR`` when set: nox builds the site first).
* ``server``: ``python -m descent.site.serve`` (``http.server`` plus the site's header policies:
  the widget worker's script carries the worker's Content-Security-Policy, as on a host that
  sends headers; text gzip-compressed, as static hosts send it, so a page costs what it costs a
  reader of the hosted site) on ``server_host`` (127.0.0.1, or another loopback address on each pytest-xdist
  worker) and ``server_port`` (a site built by the session names it in
  ``site_url`` so instant navigation works), serving ``site_dir``; the fixture's value is the
  base URL (``http://HOST:PORT/``).
* ``browser``: Debian's chromium (``/usr/bin/chromium``; ``playwright install`` cannot download
  here) through ``playwright.sync_api``.
* ``page``: a fresh context and page. Every request of the context (page and workers) is
  recorded in ``page.descent_requests``; the test FAILS at teardown if any went to a host other
  than the loopback network 127.0.0.0/8 (``file:``, ``data:``, ``blob:`` and ``about:`` are local too). Console errors
  and page errors are collected in ``page.descent_console_errors``.
* ``make_page(**context_args)``: a factory for more pages (phone viewport, dark scheme, ...),
  with the same request check at teardown.
* ``requests``: the URLs ``page`` requested so far (the recorder's list).

* ``site_page``: a test that takes this argument is parametrised over every page the build makes
  (``page_paths()``: each Markdown/notebook source under docs/ as its built ``.html`` path, plus
  ``404.html``); tests/browser/test_all_pages.py checks the list equals the built site's pages.
* ``reader``: ONE page for a whole test module, moved from page to page by ``reader.visit(path)``
  the way a reader clicking links does (Material's instant navigation: the widget worker and
  Pyodide survive, so Pyodide loads once per module). ``reader.problems()`` lists what went wrong
  since the last visit (console/page errors, CSP violations, requests off the loopback network).
* Content-Security-Policy: every page made here records ``securitypolicyviolation`` events (and
  the console's CSP messages) in ``page.descent_csp_violations``; the test FAILS at teardown if any.

Every test under tests/browser/ is marked ``browser`` (deselect with ``-m "not browser"``).
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("DESCENT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: The loopback network: every server of the tests listens on one of its addresses.
LOOPBACK = ipaddress.ip_network("127.0.0.0/8")
LOCAL_SCHEMES = {"file", "data", "blob", "about", "chrome-extension", "devtools"}
#: Milliseconds an ``expect()`` waits by default (Playwright's own is 5,000): a recomputation waits on
#: a worker that shares two cores with the other test workers.
EXPECT_TIMEOUT_MS = 15_000

try:
    from playwright.sync_api import expect as _expect

    _expect.set_options(timeout=EXPECT_TIMEOUT_MS)
except ImportError:  # no playwright: the browser fixture skips
    pass
#: Seconds to wait for the local server to answer.
SERVER_START_TIMEOUT_S = 10.0


#: Browser test modules that run on the second browser worker (the rest run on the first): about
#: half the browser tests' time each, from ``pytest tests/browser --durations=0`` (2026-12-02,
#: evening: 460 s and 450 s on a quiet machine).
SECOND_GROUP = {
    "test_part3", "test_part4", "test_motion", "test_part2", "test_page_errors_in_browser",
    "test_widget_runtime", "test_part5", "test_part5_dials", "test_share", "test_part5_custom",
    "test_part1_model", "test_try_it", "test_part1_tokens", "test_explain_in_browser", "test_part0",
    "test_worker_policy", "test_compare_in_browser", "test_phone_layout", "test_offline_file",
}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)
            # Under pytest-xdist's --dist loadgroup, each of two groups of modules runs on one worker
            # (one server on the port the site's sitemap names, on that worker's own loopback address;
            # one chromium): two workers drive pages while the others compute. The groups are
            # balanced by measured time (pytest --durations), heaviest modules first.
            module = Path(str(item.fspath)).stem
            item.add_marker(pytest.mark.xdist_group("browser-b" if module in SECOND_GROUP else "browser-a"))


#: Folders of docs/ that hold no pages (theme overrides, assets, snippets such as the glossary, and
#: the decision records, which mkdocs.yml's exclude_docs keeps out of the site).
NOT_PAGES = {"overrides", "assets", "includes", "decisions"}


def page_paths() -> list[str]:
    """Built HTML path (relative to the site root) of every page source under docs/, plus 404.html.

    Computed from the sources at collection time, so tests can be parametrised before the build.
    The offline plugin turns directory URLs off: ``a/b.md`` becomes ``a/b.html``.
    """
    docs = ROOT / "docs"
    out = []
    for src in sorted(docs.rglob("*")):
        rel = src.relative_to(docs)
        if src.suffix not in (".md", ".ipynb") or rel.parts[0] in NOT_PAGES:
            continue
        if any(part.startswith((".", "_")) for part in rel.parts):
            continue
        name = "index.html" if rel.name in ("index.md", "README.md") else rel.with_suffix(".html").name
        out.append((rel.parent / name).as_posix().removeprefix("./"))
    return sorted(set(out)) + ["404.html"]


@pytest.fixture(scope="session")
def all_page_paths() -> list[str]:
    """``page_paths()``, for tests that check the list itself."""
    return page_paths()


def pytest_generate_tests(metafunc):
    if "site_page" in metafunc.fixturenames:
        metafunc.parametrize("site_page", page_paths())


@pytest.fixture(scope="session")
def server(site_dir, server_host, server_port) -> Iterator[str]:
    port = server_port
    proc = subprocess.Popen(
        [sys.executable, "-m", "descent.site.serve", "--port", str(port), "--bind", server_host,
         "--directory", str(site_dir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://{server_host}:{port}/"
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while True:
        try:
            with urllib.request.urlopen(base, timeout=1):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"descent.site.serve on {base} did not start")
            time.sleep(0.1)
    try:
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def is_local(url: str) -> bool:
    """A local scheme, or a host of 127.0.0.0/8 (the server of each worker has its own, conftest's
    ``server_host``)."""
    parts = urlsplit(url)
    return parts.scheme in LOCAL_SCHEMES or _loopback(parts.hostname)


def _loopback(host: str | None) -> bool:
    try:
        return host is not None and ipaddress.ip_address(host) in LOOPBACK
    except ValueError:
        return False


#: Init script: no early start of the widget runtime (docs/overrides/main.html starts it in a desktop
#: page's <head>). Most tests load pages whose widgets they never use: booting Python in each would
#: cost CI minutes. Tests of the early start itself pass ``early_start=True``.
_NO_EARLY_START = "window.descentNoEarlyStart = true;"


def _page(browser, early_start: bool = False, **context_args):
    context = browser.new_context(**context_args)
    if not early_start:
        context.add_init_script(_NO_EARLY_START)
    requests: list[str] = []
    errors: list[str] = []
    context.on("request", lambda req: requests.append(req.url))
    page = context.new_page()
    page.on("console", lambda msg: errors.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.on("worker", lambda worker: worker.on("console", lambda msg: errors.append(f"worker console: {msg.text}")
                                                  if msg.type == "error" else None))
    page.descent_requests = requests
    page.descent_console_errors = errors
    csp: list[str] = []
    context.expose_binding("__descentCspViolation", lambda _source, text: csp.append(text))
    context.add_init_script(_CSP_RECORDER)

    def on_console(msg):
        if "Content Security Policy" in msg.text or "Content-Security-Policy" in msg.text:
            csp.append(f"console {msg.type}: {msg.text}")

    page.on("console", on_console)
    page.on("worker", lambda worker: worker.on("console", on_console))
    page.descent_csp_violations = csp
    return context, page


#: Init script: report every securitypolicyviolation event of the page (and its frames) to Python.
_CSP_RECORDER = """
document.addEventListener("securitypolicyviolation", (e) => {
  window.__descentCspViolation(`${e.effectiveDirective} blocked ${e.blockedURI || "inline"} `
    + `at ${e.sourceFile}:${e.lineNumber} on ${e.documentURI}`);
});
"""


def _check_requests(page) -> None:
    outside = sorted({u for u in page.descent_requests if not is_local(u)})
    assert not outside, "requests left the loopback network:\n" + "\n".join(outside)
    assert not page.descent_csp_violations, (
        "Content-Security-Policy violations (a 'blocked eval' from a test: pass wait_for_function an"
        " arrow function, not a bare expression, which Playwright evals in the page):\n"
        + "\n".join(page.descent_csp_violations)
    )


@pytest.fixture
def page(browser):
    context, pg = _page(browser, viewport={"width": 1280, "height": 900})
    yield pg
    context.close()
    _check_requests(pg)


@pytest.fixture
def requests(page) -> list[str]:
    return page.descent_requests


@pytest.fixture
def make_page(browser):
    made = []

    def factory(**context_args):
        context, pg = _page(browser, **context_args)
        made.append((context, pg))
        return pg

    yield factory
    for context, _pg in made:
        context.close()
    for _context, pg in made:
        _check_requests(pg)


class Reader:
    """One browser page kept across a test module; see the module docstring (``reader``)."""

    def __init__(self, page, base: str) -> None:
        self.page = page
        self.base = base
        self._marks = (0, 0, 0)

    def visit(self, path: str) -> None:
        """Open ``base + path``: by a link click (instant navigation) once a page is shown."""
        page = self.page
        self._marks = (len(page.descent_requests), len(page.descent_console_errors), len(page.descent_csp_violations))
        url = self.base + path
        if not page.url.startswith(self.base):
            page.goto(url)
            return
        if page.url.split("#")[0].split("?")[0] == url:
            # A link to the page already shown is Material's same-page case (no new content to wait
            # for, and its handling races with a scroll): load it afresh instead.
            page.goto(url)
            return
        page.evaluate(
            """u => {
                for (const c of document.querySelectorAll('.md-content')) c.dataset.descentStale = '1';
                const a = document.createElement('a');
                a.href = u;
                a.textContent = u;
                (document.querySelector('.md-content') || document.body).append(a);
                a.click();
            }""",
            url,
        )
        page.wait_for_selector(".md-content:not([data-descent-stale])")
        page.wait_for_load_state()

    def problems(self) -> list[str]:
        """Console/page errors, CSP violations and non-local requests since the last ``visit``."""
        r, e, c = self._marks
        page = self.page
        out = list(page.descent_console_errors[e:]) + list(page.descent_csp_violations[c:])
        out += [f"request left the loopback network: {u}" for u in page.descent_requests[r:] if not is_local(u)]
        return out


@pytest.fixture(scope="module")
def reader(browser, server) -> Iterator[Reader]:
    context, pg = _page(browser, viewport={"width": 1280, "height": 900}, color_scheme="light")
    yield Reader(pg, server)
    context.close()
