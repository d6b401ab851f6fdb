"""Content-Security-Policy (``descent.site.csp``): present on every page, sufficient, and tight.

* Every built page carries one ``<meta http-equiv="Content-Security-Policy">``, before any
  script, stylesheet or link (a meta policy governs only what follows it), with the directives of
  ``descent.site.csp.DIRECTIVES`` and, in ``script-src``, the SHA-256 of every inline script the
  page executes -- recomputed here independently with ``html.parser`` -- and no ``'unsafe-inline'``
  or ``'unsafe-eval'``.
* In the browser, the suite's pages record every ``securitypolicyviolation`` event and CSP console
  message (conftest.py) and fail on any: test_all_pages.py (every page, widgets live, instant
  navigation) and test_offline_file.py (every page from ``file://``) are the wide checks.
* The page's policy has no ``'wasm-unsafe-eval'`` (the page compiles no WebAssembly) and has
  ``form-action 'none'``.
* Served by ``descent.site.serve`` (the site's header policies: the widget worker, which a
  ``<meta>`` policy does not reach, gets ``csp.WORKER_DIRECTIVES`` on its script), Pyodide starts
  and the widgets go live, so that policy is all the worker needs (no ``blob:`` worker, no
  ``eval``); without ``'wasm-unsafe-eval'`` in it the worker cannot compile its WebAssembly and
  the widget stays static (negative control). test_worker_policy.py shows what the worker is
  refused.
"""

from __future__ import annotations

import base64
import hashlib
import html.parser
import threading
from collections.abc import Iterator

import pytest

from descent.site import csp, serve

LIVE_TIMEOUT_MS = 90_000
#: A page with a widget (the runtime's demo; docs/contributing.md must keep it).
WIDGET_PAGE = "contributing.html"
#: Script types a browser runs (HTML Living Standard, "the script element").
JS_TYPES = {"", "module", "text/javascript", "application/javascript"}


class _Head(html.parser.HTMLParser):
    """Collects the CSP metas, the order of head elements, and every inline script's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.policies: list[str] = []
        self.order: list[str] = []  # tag names in document order, up to </head>
        self.in_head = False
        self.done_head = False
        self.inline: list[str] = []
        self._script: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "head":
            self.in_head = True
        elif self.in_head and not self.done_head:
            label = "csp" if (a.get("http-equiv") or "").lower() == "content-security-policy" else tag
            self.order.append(label)
        if tag == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy":
            self.policies.append(a.get("content") or "")
        if tag == "script" and "src" not in a and (a.get("type") or "").lower() in JS_TYPES:
            self._script = []

    def handle_endtag(self, tag):
        if tag == "head":
            self.done_head = True
        if tag == "script" and self._script is not None:
            self.inline.append("".join(self._script))
            self._script = None

    def handle_data(self, data):
        if self._script is not None:
            self._script.append(data)


def _directives(policy: str) -> dict[str, list[str]]:
    out = {}
    for part in policy.split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_every_page_has_a_policy_that_allows_exactly_its_inline_scripts(site_page, site_dir):
    p = _Head()
    p.feed((site_dir / site_page).read_text(encoding="utf-8"))
    assert len(p.policies) == 1, f"{site_page}: {len(p.policies)} CSP metas"
    first_loads = [t for t in p.order if t in ("csp", "script", "link", "style", "base")]
    assert first_loads[0] == "csp", f"{site_page}: the policy comes after {first_loads[:3]}"
    d = _directives(p.policies[0])
    for name, value in csp.DIRECTIVES:
        fixed = value.split()
        assert d.get(name, [])[: len(fixed)] == fixed, f"{site_page}: {name} is {d.get(name)}"
    assert set(d) == {name for name, _ in csp.DIRECTIVES}
    script_src = d["script-src"]
    assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src
    assert "'wasm-unsafe-eval'" not in script_src  # only the worker compiles WebAssembly
    assert d["form-action"] == ["'none'"]
    hashes = set(script_src[len(dict(csp.DIRECTIVES)["script-src"].split()):])
    assert p.inline, f"{site_page}: no inline script found (Material has some)"
    missing = [s[:80] for s in p.inline if _sha(s) not in hashes]
    assert not missing, f"{site_page}: inline scripts not allowed by hash: {missing}"
    # Nothing else is allowed: the page's own scripts and the iframe-worker boot script.
    assert hashes == {_sha(s) for s in p.inline} | {_sha(csp.IFRAME_WORKER_BOOT)}


# --- descent.site.csp on its own ---------------------------------------------------------------

# Hash of "alert(1)": SHA-256 = 6e0f0c... ; base64 of the digest, worked out with hashlib above
# and also published as the CSP3 spec's example form 'sha256-<base64>'.
ALERT_HASH = "'sha256-" + base64.b64encode(hashlib.sha256(b"alert(1)").digest()).decode() + "'"


def test_inject_puts_the_policy_after_charset_and_hashes_only_executed_scripts():
    page = (
        '<html><head><meta charset="utf-8"><title>t</title>'
        '<script>alert(1)</script><script type="application/json">{"a": 1}</script>'
        '<script src="x.js"></script><script>alert(1)</script></head><body></body></html>'
    )
    out = csp.inject(page)
    assert out.startswith(
        '<html><head><meta charset="utf-8">\n      <meta http-equiv="Content-Security-Policy"'
    )
    assert csp.inline_script_hashes(page) == [
        ALERT_HASH
    ]  # JSON data block and src script skipped, deduplicated
    assert f"script-src 'self' {ALERT_HASH} " in out
    assert csp.inject(out) == out  # idempotent: the old meta is replaced, not doubled


def test_inject_refuses_a_page_without_head():
    with pytest.raises(ValueError, match="no <head>"):
        csp.inject("<p>fragment</p>")


def test_iframe_worker_patch_is_exact_and_refuses_another_version(site_dir):
    from descent.site.hooks import SHIM_PATH

    built = (site_dir / SHIM_PATH).read_text(encoding="utf-8")
    assert f"<script>{csp.IFRAME_WORKER_BOOT}<\\/script>" in built
    assert "r.dataset.src=e," in built and 'filename:"${e}"' not in built
    assert csp.patch_iframe_worker(built) == built
    with pytest.raises(ValueError, match="iframe-worker"):
        csp.patch_iframe_worker("window.IFrameWorker=class{}")


# --- the header policies (reach the worker) ---------------------------------------------------


@pytest.fixture
def serve_site(site_dir) -> Iterator:
    """Start ``descent.site.serve`` on a free loopback port; returns the base URL."""
    servers = []

    def start() -> str:
        srv = serve.make_server(str(site_dir), 0)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}/"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def test_widgets_go_live_with_the_header_policies(serve_site, make_page):
    base = serve_site()
    page = make_page()
    page.goto(base + WIDGET_PAGE)
    w = page.locator(".descent-widget[data-widget]").first
    w.scroll_into_view_if_needed()
    page.wait_for_selector('.descent-widget[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    assert any(u.endswith("pyodide.asm.wasm") for u in page.descent_requests)
    assert not page.descent_console_errors, page.descent_console_errors
    # make_page's teardown fails the test on any CSP violation, in the page or the worker.


def test_without_wasm_unsafe_eval_pyodide_cannot_start(serve_site, make_page, monkeypatch):
    """Negative control: the worker's policy is in force. Drop 'wasm-unsafe-eval' from it and the
    worker cannot compile Pyodide's WebAssembly (a CSP violation is recorded) and no widget goes live."""
    worker = tuple((k, v.replace(" 'wasm-unsafe-eval'", "")) for k, v in csp.WORKER_DIRECTIVES)
    monkeypatch.setattr(csp, "WORKER_DIRECTIVES", worker)  # the server thread reads it per request
    base = serve_site()
    page = make_page()
    try:
        page.goto(base + WIDGET_PAGE)
        w = page.locator(".descent-widget[data-widget]").first
        w.scroll_into_view_if_needed()
        for _ in range(60):  # up to 30 s for the worker to try
            if any("WebAssembly" in v for v in page.descent_csp_violations):
                break
            page.wait_for_timeout(500)
        assert any("WebAssembly" in v for v in page.descent_csp_violations), page.descent_csp_violations
        page.wait_for_timeout(1000)
        assert w.get_attribute("data-state") != "live"
    finally:
        page.descent_csp_violations.clear()  # expected here; the teardown check is for the real policy
        page.descent_console_errors.clear()
