"""Reproducible builds: the same tree and SOURCE_DATE_EPOCH give byte-identical sites.

Three ``mkdocs build --strict`` runs of the working tree, each from a fresh copy of the tracked
(and untracked, not ignored) files, so no build sees another checkout's ``.cache/``:

* A: checkout 1, cold (empty ``.cache/``: figures drawn, wheel zipped, KaTeX rendered from scratch);
* B: checkout 2 at another absolute path, cold (catches absolute paths leaking into the output);
* C: checkout 1 again, warm (its ``.cache/`` from A: catches cache-dependent output).

Every file's sha256 must match across A, B and C; a failure lists the files that differ. Things
that used to (or could) break this: sitemap ``lastmod`` dates and the ``sitemap.xml.gz`` header
time (MkDocs takes both from SOURCE_DATE_EPOCH), matplotlib SVG ids and metadata
(``descent.plotting`` fixes ``svg.hashsalt`` and clears metadata), the wheel's zip entry dates
and order (``descent.site.runtime.build_wheel``), and the search index order.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: A fixed build date for all three builds: 2023-11-14 22:13:20 UTC (any fixed value works).
EPOCH = "1700000000"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.site,
    pytest.mark.skipif(
        not (ROOT / "node_modules" / "pyodide").is_dir(), reason="node_modules missing: npm ci"
    ),
]


def _tree_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [p for p in out.split("\0") if p and (ROOT / p).is_file()]


def _checkout(dest: Path, files: list[str]) -> Path:
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    (dest / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
    return dest


def _build(checkout: Path, out: Path) -> None:
    env = dict(os.environ, SOURCE_DATE_EPOCH=EPOCH, NO_MKDOCS_2_WARNING="1")
    env.pop("DESCENT_SITE_URL", None)  # the default site_url in mkdocs.yml for all three
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=checkout,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, f"build in {checkout} failed:\n{proc.stderr[-3000:]}"


def site_hashes(site: Path) -> dict[str, str]:
    """``{path relative to site: sha256 hex}`` for every file under ``site``."""
    return {
        p.relative_to(site).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(site.rglob("*"))
        if p.is_file()
    }


def differences(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """Human-readable list of files missing on one side or with different contents."""
    out = [f"only in first: {p}" for p in sorted(a.keys() - b.keys())]
    out += [f"only in second: {p}" for p in sorted(b.keys() - a.keys())]
    out += [f"differs: {p}" for p in sorted(a.keys() & b.keys()) if a[p] != b[p]]
    return out


def test_differences_reports_each_kind():
    # The helper itself: one file missing on each side and one changed (worked out by hand).
    a = {"x": "1", "y": "2", "z": "3"}
    b = {"x": "1", "y": "9", "w": "4"}
    assert differences(a, b) == ["only in first: z", "only in second: w", "differs: y"]
    assert differences(a, dict(a)) == []


def test_two_clean_builds_are_byte_identical(tmp_path):
    files = _tree_files()
    one = _checkout(tmp_path / "checkout-one", files)
    two = _checkout(tmp_path / "elsewhere" / "checkout-two", files)
    _build(one, tmp_path / "A")
    _build(two, tmp_path / "B")
    assert (one / ".cache").is_dir(), "the first build should have filled its .cache/"
    _build(one, tmp_path / "C")

    a, b, c = (site_hashes(tmp_path / s) for s in "ABC")
    assert "index.html" in a and "sitemap.xml" in a and "search/search_index.json" in a
    assert any(p.endswith(".whl") for p in a), "the site should ship the descent wheel"
    diff_ab, diff_ac = differences(a, b), differences(a, c)
    assert not diff_ab, "two cold builds differ (A vs B):\n" + "\n".join(diff_ab)
    assert not diff_ac, "a cold and a warm build differ (A vs C):\n" + "\n".join(diff_ac)
    # The fixed date reached the sitemap (a build-time date would be today's).
    sitemap = (tmp_path / "A" / "sitemap.xml").read_text()
    assert "<lastmod>2023-11-14</lastmod>" in sitemap or "<lastmod>" not in sitemap
