"""Shared fixtures. ``site_dir``: the site, built once per test session for every test, the browser
tests included.

If ``DESCENT_SITE_DIR`` points at an already-built site (``nox -s tests`` builds it first and sets
it), that folder is used; otherwise the fixture runs ``mkdocs build --strict`` into a temporary
folder, once, with ``site_url`` naming ``server_port`` (the port tests/browser's ``server`` serves
on: Material's instant navigation only intercepts links listed in sitemap.xml, and it rewrites
their scheme and host but not the port), and every test that needs built HTML shares it.

Markers (registered in pyproject.toml): ``site`` is added here to every test that uses ``site_dir``
or calls ``build_site``;
``browser`` by tests/browser/conftest.py; ``peer``, ``pyodide`` and ``slow`` are written on the tests.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from sitebuild import build_site

ROOT = Path(__file__).resolve().parent.parent


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Every test that uses the built site (the ``site_dir`` fixture, directly or through another
    fixture) or calls ``build_site`` itself is marked ``site``, so ``-m "not site"`` (``nox -s fast``)
    never runs mkdocs."""
    for item in items:
        code = getattr(getattr(item, "function", None), "__code__", None)
        if "site_dir" in getattr(item, "fixturenames", ()) or (code and "build_site" in code.co_names):
            item.add_marker(pytest.mark.site)
    # A module whose tests share a costly module or session fixture runs on one worker: handed out
    # one test at a time, each of several workers paid for the fixture (test_peer_logits loaded the
    # model into transformers three times, about a minute each under the suite).
    # (Only where pytest-xdist runs: its mark is unknown elsewhere, inside Pyodide for one.)
    for item in items if config.pluginmanager.hasplugin("xdist") else ():
        module = Path(str(item.fspath)).stem
        if module in SHARED_FIXTURES:
            item.add_marker(pytest.mark.xdist_group(module))


def pytest_configure(config):
    config.pluginmanager.register(_LongestFirst(), "descent-longest-first")


class _LongestFirst:
    """The longest work units first. pytest-xdist's --dist loadgroup hands out work units (a group,
    or a test outside any group) in the order of their first test, and only with
    ``--no-loadscope-reorder`` (the noxfile passes it; by default it hands out the units with the
    most tests first, so a long test alone came last: the Pyodide run started six minutes into the
    suite, the cache-sharing test ten, test_reproducible after both). Order only: what runs, and
    where, is unchanged."""

    @pytest.hookimpl(trylast=True)  # after every xdist_group mark is placed (the browser groups' too)
    def pytest_collection_modifyitems(self, config, items):
        def unit(item):
            mark = item.get_closest_marker("xdist_group")
            return mark.args[0] if mark and mark.args else item.nodeid

        rank = {u: i for i, u in enumerate(LONGEST)}
        items.sort(key=lambda item: rank.get(unit(item), len(LONGEST)))


#: Work units that take minutes under `nox -s tests`, in the order they are handed out (pytest-xdist
#: work units: a test's id, or the group its module runs in). Their time in a clean clone's suite,
#: 2026-12-03, Intel Xeon, 2 cores, four workers (pytest's durations): each browser group about
#: 1,260 s of tests, the Pyodide run 945 s, the cache-sharing test 505 s, test_reproducible's cold
#: build 473 s, the peer-logits module's fixture 221 s, the tokenizer's 123 s.
LONGEST = ("tests/test_core_in_pyodide.py::test_core_tests_pass_in_pyodide", "browser-a", "browser-b",
           "tests/test_reproducible.py::test_two_clean_builds_are_byte_identical",
           "tests/test_cache_share.py::test_two_processes_write_the_bytes_one_writes", "test_peer_logits",
           "test_tokenizer", "test_trace", "test_trace_serving")

#: Modules whose tests share a fixture that takes seconds to minutes to make: transformers' copy of
#: the model, the reference tokenizer, every notebook run, the model's traces.
SHARED_FIXTURES = {"test_peer_logits", "test_tokenizer", "test_notebooks", "test_trace", "test_trace_serving",
                   "test_peer_params"}


@pytest.fixture(scope="session")
def server_host() -> str:
    """The loopback address tests/browser's ``server`` listens on: 127.0.0.1, or 127.0.0.(N + 1) on
    pytest-xdist's worker gwN. Every address of 127.0.0.0/8 is this machine, so each worker's server
    can take the port the sitemap names (Material's instant navigation rewrites a sitemap URL's
    host, not its port) and two workers can run browser tests at once."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    n = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    return f"127.0.0.{1 + n % 250}"


@pytest.fixture(scope="session")
def server_port(server_host) -> int:
    """The port tests/browser's ``server`` will use, chosen first so the build can name it in site_url.

    With ``$DESCENT_SITE_DIR`` (a site built beforehand, e.g. by nox at site_url
    http://127.0.0.1:8000/), the port its sitemap names when that port is free, so Material's
    instant navigation still intercepts links; otherwise any free port (on ``server_host``).
    """
    named = _sitemap_port(os.environ.get("DESCENT_SITE_DIR"))
    if named is not None:
        with socket.socket() as s:
            # As http.server binds (allow_reuse_address): a port left in TIME_WAIT by an earlier
            # run's server is free to listen on again.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((server_host, named))
                return named
            except OSError:
                pass
    return _free_port(server_host)


def _sitemap_port(site: str | None) -> int | None:
    """The 127.0.0.1 port of the first URL in ``site``/sitemap.xml, or None."""
    if not site or not (Path(site) / "sitemap.xml").is_file():
        return None
    text = (Path(site) / "sitemap.xml").read_text(encoding="utf-8")
    if "<loc>" not in text:
        return None
    loc = urlsplit(text.split("<loc>", 1)[1].split("</loc>", 1)[0].strip())
    if loc.hostname != "127.0.0.1":
        return None
    return loc.port or 80


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def site_dir(tmp_path_factory, server_port) -> Path:
    env_dir = os.environ.get("DESCENT_SITE_DIR")
    if env_dir:
        path = Path(env_dir)
        if not (path / "index.html").is_file():
            pytest.fail(f"DESCENT_SITE_DIR={env_dir} has no index.html: build the site first")
        return path
    if not (ROOT / "mkdocs.yml").is_file():
        pytest.skip("no mkdocs.yml yet: cannot build the site")
    out = tmp_path_factory.mktemp("site")
    proc = build_site(out, site_url=f"http://127.0.0.1:{server_port}/")
    if proc.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return out
