"""``nox -s preview`` / ``python -m descent.site.preview``: MkDocs' dev server rebuilding only the
pages that changed (issue 28: the bench's rebuild goal is this preview's, 3 s)."""

from __future__ import annotations

import sys

import pytest
from test_site_headers import _FakeSession, _noxfile

from descent.site import preview, serve


def _free_port() -> int:
    probe = serve.make_server(".", 0)
    port = probe.server_address[1]
    probe.server_close()
    return port


def test_the_preview_is_mkdocs_serve_dirty_on_the_port():
    assert preview.command(8123) == [sys.executable, "-m", "mkdocs", "serve", "--dirty", "--no-strict",
                                     "--dev-addr", "127.0.0.1:8123"]
    # the sitemap (and Material's instant navigation) name the preview's own origin
    assert preview.environment(8123)["DESCENT_SITE_URL"] == "http://127.0.0.1:8123/"


class _Execed(Exception):
    pass


def _no_exec(path, argv, env):
    raise AssertionError(f"the preview started: {argv}")


def test_main_becomes_mkdocs(monkeypatch):
    # MkDocs replaces the process (execve), so the bench's terminate() stops the server itself.
    calls = []

    def execve(path, argv, env):
        calls.append((path, argv, env))
        raise _Execed

    monkeypatch.setattr(preview.os, "execve", execve)
    port = _free_port()
    with pytest.raises(_Execed):
        preview.main(["--port", str(port)])
    (path, argv, env), = calls
    assert path == sys.executable and argv == preview.command(port)
    assert env["DESCENT_SITE_URL"] == f"http://127.0.0.1:{port}/"


def test_a_busy_port_is_said_before_any_build(monkeypatch, capsys):
    monkeypatch.setattr(preview.os, "execve", _no_exec)
    taken = serve.make_server(".", 0)
    port = taken.server_address[1]
    try:
        assert preview.main(["--port", str(port)]) == 2
    finally:
        taken.server_close()
    err = capsys.readouterr().err
    assert f"port {port} on 127.0.0.1 is busy" in err and f"nox -s preview -- --port {port + 1}" in err


def test_a_port_out_of_range_is_refused(monkeypatch, capsys):
    monkeypatch.setattr(preview.os, "execve", _no_exec)
    for bad in ("0", "65536"):
        assert preview.main(["--port", bad]) == 2
        assert f"--port must be a whole number from 1 to 65535, got {bad}" in capsys.readouterr().err


def test_nox_preview_hands_its_arguments_to_the_preview(monkeypatch):
    nf = _noxfile(monkeypatch)
    s = _FakeSession(["--port", "8001"])
    nf.preview(s)
    assert s.runs == [(("python", "-m", "descent.site.preview", "--port", "8001"), {})]
