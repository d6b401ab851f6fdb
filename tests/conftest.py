"""Shared fixtures. ``site_dir``: the site, built once per test session.

If ``DESCENT_SITE_DIR`` points at an already-built site (``nox -s tests`` builds it first and sets
it), that folder is used; otherwise the fixture runs ``mkdocs build --strict`` into a temporary
folder, once, and every test that needs built HTML shares it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def build_site(out: Path, config: Path = ROOT / "mkdocs.yml") -> subprocess.CompletedProcess:
    """Run ``mkdocs build --strict`` for ``config`` into ``out``; returns the finished process."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(out)],
        cwd=config.parent, capture_output=True, text=True, env=env,
    )


@pytest.fixture(scope="session")
def site_dir(tmp_path_factory) -> Path:
    env_dir = os.environ.get("DESCENT_SITE_DIR")
    if env_dir:
        path = Path(env_dir)
        if not (path / "index.html").is_file():
            pytest.fail(f"DESCENT_SITE_DIR={env_dir} has no index.html: build the site first")
        return path
    out = tmp_path_factory.mktemp("site")
    proc = build_site(out)
    if proc.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return out
