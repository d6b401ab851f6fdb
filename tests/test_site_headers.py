"""The header policies a host should send (descent.site.csp.header_policy / headers_file) and the
server that sends them (descent.site.serve): issue 15, section 2. What they make the browser do is
tested in tests/browser/test_worker_policy.py and test_csp.py."""

from __future__ import annotations

import threading
import urllib.request
from urllib.parse import urlsplit

import pytest

from descent.site import csp, serve

WORKER_POLICY = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'; worker-src 'none'"
PAGE_POLICY = "object-src 'none'; base-uri 'self'; form-action 'none'; frame-ancestors 'self'"


@pytest.mark.parametrize("path", ["assets/descent/worker.js", "/assets/descent/worker.js",
                                  "assets/descent/worker.js?v=3", "/assets/descent/worker.js#x"])
def test_the_worker_script_gets_the_worker_policy(path):
    assert csp.header_policy(path) == WORKER_POLICY


@pytest.mark.parametrize("path", ["index.html", "/", "/assets/descent/widgets.js", "assets/descent/worker.jsx",
                                  "/assets/pyodide/pyodide.mjs"])
def test_everything_else_gets_the_page_header_policy(path):
    assert csp.header_policy(path) == PAGE_POLICY
    assert "script-src" not in PAGE_POLICY  # scripts stay governed by each page's meta policy (its hashes)


def test_headers_file_for_a_root_and_a_sub_path():
    assert csp.headers_file("/") == (
        "# Security headers for hosts that read a _headers file (Netlify, Cloudflare Pages).\n"
        "# Written by descent.site.csp.headers_file: edit that, not this file.\n"
        "/*\n"
        f"  Content-Security-Policy: {PAGE_POLICY}\n"
        "  X-Content-Type-Options: nosniff\n"
        "/assets/descent/worker.js\n"
        f"  Content-Security-Policy: {WORKER_POLICY}\n"
    )
    sub = csp.headers_file("/descent")
    assert "\n/descent/*\n" in sub and "\n/descent/assets/descent/worker.js\n" in sub
    assert csp.headers_file("") == csp.headers_file("/")


def test_the_built_site_carries_its_headers_file(site_dir):
    import xml.etree.ElementTree as ET

    loc = ET.parse(site_dir / "sitemap.xml").getroot()[0][0].text  # a page URL under site_url
    base = urlsplit(loc).path.rsplit("/", 1)[0] + "/"
    assert (site_dir / "_headers").read_text(encoding="utf-8") == csp.headers_file(base)


def test_serve_sends_the_policies(tmp_path):
    (tmp_path / "index.html").write_text("<p>hi</p>")
    (tmp_path / "assets" / "descent").mkdir(parents=True)
    (tmp_path / "assets" / "descent" / "worker.js").write_text("// worker")
    srv = serve.make_server(str(tmp_path), 0)
    assert srv.server_address[0] == "127.0.0.1"  # loopback unless told otherwise
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_address[1]}/"
    try:
        with urllib.request.urlopen(base + "assets/descent/worker.js?v=1", timeout=5) as r:
            assert r.headers["Content-Security-Policy"] == WORKER_POLICY
            assert r.headers["X-Content-Type-Options"] == "nosniff"
        with urllib.request.urlopen(base, timeout=5) as r:
            assert r.headers["Content-Security-Policy"] == PAGE_POLICY
    finally:
        srv.shutdown()
        srv.server_close()


def test_serve_says_when_the_port_is_taken(capsys):
    taken = serve.make_server(".", 0)
    try:
        assert serve.main(["--port", str(taken.server_address[1]), "--directory", "."]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"serve: cannot listen on 127.0.0.1:{taken.server_address[1]}")
    finally:
        taken.server_close()
