"""The header policies a host should send (descent.site.csp.header_policy / headers_file) and the
server that sends them (descent.site.serve): issue 15, section 2. What they make the browser do is
tested in tests/browser/test_worker_policy.py and test_csp.py."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from descent.site import csp, serve

WORKER_POLICY = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'; worker-src 'none'"
PAGE_POLICY = "object-src 'none'; base-uri 'self'; form-action 'none'; frame-ancestors 'self'"
MODEL_WORKER_POLICY = ("default-src 'self'; script-src 'self' 'wasm-unsafe-eval' blob:; connect-src 'self'; "
                       "worker-src blob:")


@pytest.mark.parametrize("path", ["assets/descent/worker.js", "/assets/descent/worker.js",
                                  "assets/descent/worker.js?v=3", "/assets/descent/worker.js#x"])
def test_the_worker_script_gets_the_worker_policy(path):
    assert csp.header_policy(path) == WORKER_POLICY


def test_the_model_worker_gets_its_policy():
    # wllama makes llama.cpp's worker from a Blob (issue 14): blob: scripts and workers, nothing else.
    assert csp.header_policy("assets/descent/llm-worker.js") == MODEL_WORKER_POLICY
    assert csp.header_policy("/assets/descent/llm.js") == PAGE_POLICY


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
        "/assets/descent/llm-worker.js\n"
        f"  Content-Security-Policy: {MODEL_WORKER_POLICY}\n"
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


def test_serve_answers_a_missing_page_with_the_sites_own_404(tmp_path):
    # Issue 13: `nox -s serve` showed http.server's bare error page; a host shows the site's 404.html.
    (tmp_path / "index.html").write_text("<p>hi</p>")
    (tmp_path / "404.html").write_text("<h1>404 - Not found</h1><p>the site's own page</p>")
    srv = serve.make_server(str(tmp_path), 0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(f"http://127.0.0.1:{srv.server_address[1]}/no/such/page.html", timeout=5)
        assert exc.value.code == 404
        assert exc.value.read().decode() == "<h1>404 - Not found</h1><p>the site's own page</p>"
        assert exc.value.headers["Content-Type"] == "text/html; charset=utf-8"
        assert exc.value.headers["Content-Security-Policy"] == PAGE_POLICY
    finally:
        srv.shutdown()
        srv.server_close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # let the 301 itself come back as an HTTPError


@pytest.mark.parametrize(("path", "location"), [
    ("/part-3-serving-software/", "/part-3-serving-software.html"),
    ("/part-3-serving-software", "/part-3-serving-software.html"),
    ("/part-3-serving-software/?x=1", "/part-3-serving-software.html?x=1"),
    ("/reference/models/", "/reference/models.html"),
])
def test_serve_redirects_a_page_written_as_a_folder(tmp_path, path, location):
    # Issue 24, section 5: a directory URL (how sites with directory URLs, and readers, write a
    # page's address) got a bare 404; the page exists as part-3-serving-software.html.
    (tmp_path / "part-3-serving-software.html").write_text("<p>part 3</p>")
    (tmp_path / "reference").mkdir()
    (tmp_path / "reference" / "models.html").write_text("<p>models</p>")
    srv = serve.make_server(str(tmp_path), 0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        opener = urllib.request.build_opener(_NoRedirect)
        with pytest.raises(urllib.error.HTTPError) as exc:
            opener.open(f"http://127.0.0.1:{srv.server_address[1]}{path}", timeout=5)
        exc.value.close()
        assert exc.value.code == 301
        assert exc.value.headers["Location"] == location
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.server_address[1]}{path}", timeout=5) as r:
            assert r.read().decode().startswith("<p>")  # followed: the page itself
    finally:
        srv.shutdown()
        srv.server_close()


def test_serve_answers_a_folder_without_index_with_the_404_page_not_a_listing(tmp_path):
    (tmp_path / "404.html").write_text("<h1>404 - Not found</h1>")
    (tmp_path / "reference").mkdir()
    (tmp_path / "reference" / "models.html").write_text("<p>models</p>")
    srv = serve.make_server(str(tmp_path), 0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        for path in ("/reference/", "/no-such-part/", "/no-such-part"):
            with pytest.raises(urllib.error.HTTPError) as exc:
                urllib.request.urlopen(f"http://127.0.0.1:{srv.server_address[1]}{path}", timeout=5)
            with exc.value:
                assert exc.value.code == 404, path
                assert exc.value.read().decode() == "<h1>404 - Not found</h1>", path  # not "Directory listing for"
    finally:
        srv.shutdown()
        srv.server_close()


def test_serve_says_the_port_is_busy_and_how_to_pick_another(capsys):
    taken = serve.make_server(".", 0)
    port = taken.server_address[1]
    try:
        assert serve.port_busy(port)
        assert serve.main(["--port", str(port), "--directory", "."]) == 2
        err = capsys.readouterr().err
        assert "the port is busy" in err and f"nox -s serve -- --port {port + 1}" in err
    finally:
        taken.server_close()
    assert not serve.port_busy(port)


def test_ctrl_c_stops_serve_quietly(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "index.html").write_text("<p>hi</p>")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(serve.__file__).parents[2]), os.environ.get("PYTHONPATH", "")]))
    # Started as a background job would be: with SIGINT ignored, which Python then leaves alone
    # unless the server installs its own handler (a CI runner under nohup hung here for 20 s).
    proc = subprocess.Popen([sys.executable, "-m", "descent.site.serve", "--port", "0", "--directory", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        assert proc.stdout.readline().startswith("Serving ")
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert out.strip() == "Stopped."


class _Stop(Exception):
    pass


class _FakeSession:
    """Just enough of a nox Session to run noxfile.serve without nox."""

    def __init__(self, posargs):
        self.posargs, self.runs, self.logs = posargs, [], []

    def install(self, *a, **k):
        pass

    def run(self, *args, env=None, **k):
        self.runs.append((args, env or {}))

    def log(self, msg):
        self.logs.append(msg)

    def error(self, msg):
        raise _Stop(msg)


def _noxfile(monkeypatch):
    import importlib.util
    import sys
    import types

    fake = types.ModuleType("nox")
    fake.options = types.SimpleNamespace()
    fake.Session = object
    fake.session = lambda *a, **k: (lambda f: f)
    monkeypatch.setitem(sys.modules, "nox", fake)
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("descent_noxfile", root / "noxfile.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "_npm", lambda session: None)
    return mod


def test_nox_serve_takes_a_port_and_builds_for_it(monkeypatch):
    nf = _noxfile(monkeypatch)
    free = serve.make_server(".", 0)
    port = free.server_address[1]
    free.server_close()  # a port nothing listens on now
    s = _FakeSession(["--port", str(port)])
    nf.serve(s)
    (build, build_env), (srv, _) = s.runs
    assert build[:3] == ("mkdocs", "build", "--strict")
    assert build_env["DESCENT_SITE_URL"] == f"http://127.0.0.1:{port}/"  # instant navigation on that origin
    assert srv == ("python", "-m", "descent.site.serve", "--directory", "site", "--port", str(port))


@pytest.mark.parametrize("session", ["serve", "preview"])
def test_nox_serve_and_preview_say_the_port_is_busy_before_building(monkeypatch, session):
    # Both sessions check the port (the noxfile's _free_port_arg) before installing or building.
    nf = _noxfile(monkeypatch)
    taken = serve.make_server(".", 0)
    port = taken.server_address[1]
    try:
        s = _FakeSession(["--port", str(port)])
        with pytest.raises(_Stop, match=rf"port {port} on 127.0.0.1 is busy.*nox -s {session} -- --port {port + 1}"):
            getattr(nf, session)(s)
        assert s.runs == []  # nothing built for nothing
    finally:
        taken.server_close()


def _get(url: str, accept_encoding: str | None):
    req = urllib.request.Request(url)
    if accept_encoding is not None:
        req.add_header("Accept-Encoding", accept_encoding)
    return urllib.request.urlopen(req, timeout=5)


def test_serve_gzips_text_to_a_client_that_accepts_it_as_a_static_host_does(tmp_path):
    # Issue 28: a page's Lighthouse score depended on which server a contributor used (0.72-0.76
    # uncompressed against 0.94-0.97 gzipped, Parts 1-4). The expected bytes are the files' own.
    import gzip

    page = "<!doctype html><p>" + "the same sentence again. " * 400 + "</p>"
    (tmp_path / "index.html").write_text(page)
    (tmp_path / "app.js").write_text("console.log(1);\n" * 300)
    (tmp_path / "core.wasm").write_bytes(b"\0asm" + bytes(range(256)) * 40)
    srv = serve.make_server(str(tmp_path), 0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_address[1]}/"
    try:
        for path, name in (("index.html", "index.html"), ("", "index.html"), ("app.js", "app.js")):
            with _get(base + path, "gzip, deflate, br") as r:
                raw = r.read()
                assert r.headers["Content-Encoding"] == "gzip", path
                assert r.headers["Vary"] == "Accept-Encoding"
                assert int(r.headers["Content-Length"]) == len(raw) < (tmp_path / name).stat().st_size / 10
                assert gzip.decompress(raw) == (tmp_path / name).read_bytes()
                assert r.headers["Content-Security-Policy"] == PAGE_POLICY  # the policy still comes along
        assert _get(base + "index.html", "gzip").headers["Content-Type"].startswith("text/html")
        assert _get(base + "app.js", "gzip").headers["Content-Type"] == "text/javascript"
        # No Accept-Encoding, or gzip refused: the file as it is.
        for accept in (None, "identity", "gzip;q=0, deflate", "br"):
            with _get(base + "index.html", accept) as r:
                assert "Content-Encoding" not in r.headers, accept
                assert r.read() == page.encode()
        # WebAssembly goes as stored (hosts differ; a measurement must not count on it).
        with _get(base + "core.wasm", "gzip") as r:
            assert "Content-Encoding" not in r.headers
            assert r.headers["Content-Type"] == "application/wasm"
            assert r.read() == (tmp_path / "core.wasm").read_bytes()
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.parametrize(("header", "accepted"), [
    ("gzip", True), ("deflate, gzip;q=0.5", True), ("*", True), ("x-gzip", True), ("GZIP", True),
    (None, False), ("", False), ("br", False), ("gzip;q=0", False), ("*, gzip;q=0", False), ("gzip;q=nope", False),
])
def test_accept_encoding_is_read_with_its_weights(header, accepted):
    assert serve.accepts_gzip(header) is accepted


_PAGE = ('<html><head><meta charset="utf-8"><script>var a = 1;</script></head>'
         '<body><script src="x.js"></script></body></html>')


def test_a_built_page_names_its_inline_scripts_by_hash():
    # script-src: 'self', the page's one inline script by its SHA-256, the iframe-worker boot's.
    (script_src,) = [d for d in csp.policy(_PAGE).split("; ") if d.startswith("script-src ")]
    assert script_src.split()[1] == "'self'"
    assert csp._sha256("var a = 1;") in script_src and "'unsafe-inline'" not in script_src


def test_mkdocs_dev_server_pages_let_its_live_reload_script_run():
    # mkdocs serve (nox -s preview) adds an inline script that changes with every response: its pages
    # allow inline scripts and list no hash (a hash would make browsers ignore 'unsafe-inline').
    (script_src,) = [d for d in csp.policy(_PAGE, live_reload=True).split("; ") if d.startswith("script-src ")]
    assert script_src == "script-src 'self' 'unsafe-inline'"
    assert csp.inject(_PAGE, live_reload=True).count("'unsafe-inline'") == 2  # script-src and style-src
    # Everything else is the build's policy.
    rest = [d for d in csp.policy(_PAGE).split("; ") if not d.startswith("script-src ")]
    assert [d for d in csp.policy(_PAGE, live_reload=True).split("; ") if not d.startswith("script-src ")] == rest


def test_the_hooks_relax_the_policy_under_mkdocs_serve_only():
    from descent.site import hooks

    try:
        hooks.on_startup(command="serve", dirty=True)
        assert "script-src 'self' 'unsafe-inline'" in hooks.on_post_template(_PAGE, "404.html", None)
        hooks.on_startup(command="build", dirty=False)
        assert "script-src 'self' 'unsafe-inline'" not in hooks.on_post_template(_PAGE, "404.html", None)
    finally:
        hooks._state.live_reload = False
