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


class _Execed(Exception):
    pass


def _no_exec(path, argv):
    raise AssertionError(f"the preview started: {argv}")


def test_main_becomes_mkdocs(monkeypatch):
    # MkDocs replaces the process (execv), so a SIGTERM sent to the preview stops the server itself.
    calls = []

    def execv(path, argv):
        calls.append((path, argv))
        raise _Execed

    monkeypatch.setattr(preview.os, "execv", execv)
    port = _free_port()
    with pytest.raises(_Execed):
        preview.main(["--port", str(port)])
    assert calls == [(sys.executable, preview.command(port))]


def test_without_mkdocs_it_says_how_to_get_it(monkeypatch, capsys):
    monkeypatch.setattr(preview.os, "execv", _no_exec)
    monkeypatch.setattr(preview.importlib.util, "find_spec", lambda name: None)
    assert preview.main(["--port", str(_free_port())]) == 2
    assert "MkDocs is not installed" in capsys.readouterr().err


def test_a_busy_port_is_said_before_any_build(monkeypatch, capsys):
    monkeypatch.setattr(preview.os, "execv", _no_exec)
    taken = serve.make_server(".", 0)
    port = taken.server_address[1]
    try:
        assert preview.main(["--port", str(port)]) == 2
    finally:
        taken.server_close()
    err = capsys.readouterr().err
    assert f"port {port} on 127.0.0.1 is busy" in err and f"nox -s preview -- --port {port + 1}" in err


def test_a_port_out_of_range_is_refused(monkeypatch, capsys):
    monkeypatch.setattr(preview.os, "execv", _no_exec)
    for bad in ("0", "65536"):
        assert preview.main(["--port", bad]) == 2
        assert f"--port must be a whole number from 1 to 65535, got {bad}" in capsys.readouterr().err


def test_nox_preview_hands_its_port_to_the_preview(monkeypatch):
    nf = _noxfile(monkeypatch)
    port = _free_port()
    s = _FakeSession(["--port", str(port)])
    nf.preview(s)
    assert s.runs == [(("python", "-m", "descent.site.preview", "--port", str(port)), {})]
