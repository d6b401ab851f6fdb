"""``build_site``: one ``mkdocs build --strict`` run, shared by conftest.py's session-wide
``site_dir`` fixture and test_shortcodes.py's one-page projects. Import it with
``from sitebuild import build_site`` (pytest puts tests/ on ``sys.path``; it has no ``__init__.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build_site(out: Path, config: Path = ROOT / "mkdocs.yml", site_url: str | None = None) -> subprocess.CompletedProcess:
    """Run ``mkdocs build --strict`` for ``config`` into ``out``; returns the finished process.

    ``site_url``, when given, is passed as ``DESCENT_SITE_URL`` (mkdocs.yml reads it with ``!ENV``).
    """
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    if site_url is not None:
        env["DESCENT_SITE_URL"] = site_url
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(out)],
        cwd=config.parent, capture_output=True, text=True, env=env,
    )
