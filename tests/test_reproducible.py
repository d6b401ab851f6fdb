"""Reproducible builds: the same tree and SOURCE_DATE_EPOCH give byte-identical sites, wherever
the tree lies on disk.

Three ``mkdocs build --strict`` runs of the working tree, each from a fresh copy of the tracked
(and untracked, not ignored) files with its own copy of ``node_modules/`` (a copy, not a link: a
link would resolve to one real path for both) and its own ``src/`` on PYTHONPATH, so no build sees
another checkout's ``.cache/``, sources or npm packages:

* A: checkout 1, cold (empty ``.cache/``: figures drawn, wheel built, KaTeX rendered, Pyodide
  snapshot made from scratch; and an empty model cache, ``DESCENT_CACHE`` inside it: the GGUF
  dequantized, every trace, perplexity and token-level result computed anew);
* B: checkout 2 at another absolute path, cold (catches absolute paths leaking into the output);
* C: checkout 1 again, warm (its ``.cache/`` from A: catches cache-dependent output).

No file is left out of the comparison. The build machine's timings are not taken by a build: every
page reads them from the committed record (``descent/data/build_machine.json``), so the pages that
print them (Parts 0, 3 and 4, their figures, the roofline notebook) are byte-identical too (issue
22: two clean builds differed in eight files, all of them timings, when each build measured and a
shared ``~/.cache/descent`` hid it between builds of one machine).

Every file's sha256 must match across A, B and C; a failure lists the files that differ. And no
file of any build may hold the absolute path of a checkout, of its site folder or of this
repository (a grep of every byte, binary files included). Things that used to (or could) break
this: sitemap ``lastmod`` dates and the ``sitemap.xml.gz`` header time (MkDocs takes both from
SOURCE_DATE_EPOCH), matplotlib SVG ids and metadata (``descent.plotting`` fixes ``svg.hashsalt``
and clears metadata), the wheel's zip entry dates, modes and order
(``descent.site.runtime.build_wheel``), the search index order, and the Pyodide memory snapshot,
which held the node_modules/pyodide path as ``sys.executable`` (``runtime.make_snapshot`` now hides
node's argv from Emscripten).
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

needs_npm = pytest.mark.skipif(not (ROOT / "node_modules" / "pyodide").is_dir(), reason="node_modules missing: npm ci")


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
    # A real copy (19 MB): through a symlink, both checkouts would resolve to ROOT's node_modules.
    shutil.copytree(ROOT / "node_modules", dest / "node_modules", symlinks=True)
    return dest


def _start_build(checkout: Path, out: Path) -> subprocess.Popen:
    # The model cache of this checkout alone (empty on its first build), not the user's ~/.cache/descent.
    env = dict(os.environ, SOURCE_DATE_EPOCH=EPOCH, NO_MKDOCS_2_WARNING="1",
               DESCENT_CACHE=str(checkout / ".cache" / "descent-trace-cache"))
    env.pop("DESCENT_SITE_URL", None)  # the default site_url in mkdocs.yml for all three
    # This checkout's package, ahead of the editable install (which points at ROOT/src).
    env["PYTHONPATH"] = os.pathsep.join([str(checkout / "src"), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
    )


def _builds(*pairs: tuple[Path, Path]) -> None:
    """Build each (checkout, site) at the same time (separate directories and caches), and check each."""
    procs = [(checkout, _start_build(checkout, out)) for checkout, out in pairs]
    for checkout, proc in procs:
        try:
            _, err = proc.communicate(timeout=900)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError(f"build in {checkout} took more than 900 s") from None
        assert proc.returncode == 0, f"build in {checkout} failed:\n{err[-3000:]}"


def site_hashes(site: Path) -> dict[str, str]:
    """``{path relative to site: sha256 hex}`` for every file under ``site``."""
    return {
        p.relative_to(site).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(site.rglob("*"))
        if p.is_file()
    }


def path_leaks(site: Path, paths: list[Path]) -> list[str]:
    """``"file: path"`` for every file under ``site`` whose bytes contain one of ``paths``
    (as given and resolved), sorted."""
    needles = sorted({str(q) for p in paths for q in (p, p.resolve())})
    out = []
    for f in sorted(site.rglob("*")):
        if f.is_file():
            data = f.read_bytes()
            out += [f"{f.relative_to(site).as_posix()}: {n}" for n in needles if n.encode() in data]
    return out


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


def test_path_leaks_finds_paths_in_any_file(tmp_path):
    # The helper itself: a text and a binary file holding a path, one clean file (by hand).
    site = tmp_path / "site"
    (site / "a").mkdir(parents=True)
    (site / "index.html").write_text(f"<p>built in {tmp_path}/checkout</p>")
    (site / "a" / "blob.bin").write_bytes(b"\0\xff" + str(ROOT).encode() + b"\0")
    (site / "clean.txt").write_text("nothing here")
    assert path_leaks(site, [tmp_path, ROOT]) == [f"a/blob.bin: {ROOT}", f"index.html: {tmp_path}"]
    assert path_leaks(site, [tmp_path / "elsewhere"]) == []


def test_built_site_holds_no_build_path(site_dir):
    # The session's site (built in this repository): no file names the repository or the site folder.
    assert (site_dir / "assets" / "pyodide" / "pyodide-snapshot.bin").is_file()
    leaks = path_leaks(site_dir, [ROOT, site_dir, ROOT / "node_modules" / "pyodide"])
    assert leaks == [], "the built site holds build-machine paths:\n" + "\n".join(leaks)


@pytest.mark.slow
@pytest.mark.site
@needs_npm
def test_two_clean_builds_are_byte_identical(tmp_path):
    files = _tree_files()
    one = _checkout(tmp_path / "checkout-one", files)
    two = _checkout(tmp_path / "elsewhere" / "checkout-two", files)
    _builds((one, tmp_path / "A"), (two, tmp_path / "B"))  # the two cold builds side by side
    assert (one / ".cache").is_dir(), "the first build should have filled its .cache/"
    # Each cold build computed the model's results (perplexities, Part 3's token-level results) in
    # its own, empty cache; the timings it printed came from the committed record.
    for checkout in (one, two):
        for kind in ("quality", "measurements"):
            assert list((checkout / ".cache" / "descent-trace-cache" / kind).glob("*.json")), (checkout, kind)
    _builds((one, tmp_path / "C"))

    a, b, c = (site_hashes(tmp_path / s) for s in "ABC")
    assert "index.html" in a and "sitemap.xml" in a and "search/search_index.json" in a
    assert any(p.endswith(".whl") for p in a), "the site should ship the descent wheel"
    leaks = [f"{s}/{leak}" for s in "ABC" for leak in path_leaks(tmp_path / s, [tmp_path, ROOT])]
    assert leaks == [], "a build holds build-machine paths:\n" + "\n".join(leaks)
    diff_ab, diff_ac = differences(a, b), differences(a, c)
    assert not diff_ab, "two cold builds differ (A vs B):\n" + "\n".join(diff_ab)
    assert not diff_ac, "a cold and a warm build differ (A vs C):\n" + "\n".join(diff_ac)
    # The fixed date reached the sitemap (a build-time date would be today's).
    sitemap = (tmp_path / "A" / "sitemap.xml").read_text()
    assert "<lastmod>2023-11-14</lastmod>" in sitemap or "<lastmod>" not in sitemap
    # A copy without .git: every page is dated from SOURCE_DATE_EPOCH (the descent hook turns the
    # git-revision-date plugin off), not from the clock (issue 13).
    page = (tmp_path / "A" / "part-0-the-prompt.html").read_text(encoding="utf-8")
    assert 'git-revision-date-localized-plugin-date" title="November 14, 2023 22:13:20 UTC">November 14, 2023<' in page
