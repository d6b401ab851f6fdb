"""Reproducible builds: the same tree and SOURCE_DATE_EPOCH give byte-identical sites, wherever
the tree lies on disk.

Three sites built from the working tree, each from its own copy of the tracked (and untracked,
not ignored) files with its own copy of ``node_modules/`` (a copy, not a link: a link would resolve
to one real path for both) and its own ``src/`` on PYTHONPATH, so no build sees another checkout's
``.cache/``, sources or npm packages:

* A: under ``nox -s tests``, the session's own build of this repository (``DESCENT_SITE_DIR``, built
  at ``DESCENT_SITE_EPOCH``: cold in a fresh clone); otherwise checkout 1, cold (empty ``.cache/``:
  figures drawn, wheel built, KaTeX rendered, Pyodide snapshot made from scratch; and an empty model
  cache, ``DESCENT_CACHE`` inside it: the GGUF dequantized, every trace, perplexity and token-level
  result computed anew);
* B: checkout 2 at another absolute path, cold (catches absolute paths leaking into the output);
  under nox a clone of this repository (sharing its objects) with the working tree laid over it,
  so the git-dates plugin dates its pages from the same commits as A's;
* C: checkout 2 again, warm (its ``.cache/`` from B: catches cache-dependent output).

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
import time
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
    """The working tree's ``files`` and a copy of node_modules at ``dest`` (which may hold a clone)."""
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    # A real copy (19 MB): through a symlink, both checkouts would resolve to ROOT's node_modules.
    shutil.copytree(ROOT / "node_modules", dest / "node_modules", symlinks=True)
    return dest


def _clone(dest: Path, files: list[str]) -> Path:
    """A clone of this repository's HEAD (sharing its objects) at ``dest``, less the files the
    working tree has deleted; :func:`_checkout` then lays the working tree's files over it."""
    subprocess.run(["git", "clone", "-q", "--shared", str(ROOT), str(dest)], check=True, capture_output=True)
    keep = set(files)
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=dest, capture_output=True, check=True).stdout.decode()
    for rel in filter(None, tracked.split("\0")):
        if rel not in keep and (dest / rel).is_file():
            (dest / rel).unlink()
    return dest


def _start_build(checkout: Path, out: Path, epoch: str) -> subprocess.Popen:
    # The model cache of this checkout alone (empty on its first build), not the user's ~/.cache/descent.
    env = dict(os.environ, SOURCE_DATE_EPOCH=epoch, NO_MKDOCS_2_WARNING="1",
               DESCENT_CACHE=str(checkout / ".cache" / "descent-trace-cache"))
    env.pop("DESCENT_SITE_URL", None)  # the default site_url in mkdocs.yml for all three
    # This checkout's package, ahead of the editable install (which points at ROOT/src).
    env["PYTHONPATH"] = os.pathsep.join([str(checkout / "src"), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
    )


def _builds(*pairs: tuple[Path, Path], epoch: str = EPOCH) -> None:
    """Build each (checkout, site) at the same time (separate directories and caches), and check each."""
    procs = [(checkout, _start_build(checkout, out, epoch)) for checkout, out in pairs]
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


def first_line_difference(one: Path, two: Path, limit: int = 300) -> str:
    """Where two text files first differ: ``line N: <one's line> | <two's line>``, each cut to
    ``limit`` characters around the first differing character (a binary file: its sizes)."""
    try:
        a, b = one.read_text().splitlines(), two.read_text().splitlines()
    except UnicodeDecodeError:
        return f"binary, {one.stat().st_size} vs {two.stat().st_size} bytes"
    for n, (x, y) in enumerate(zip(a, b, strict=False), 1):
        if x != y:
            at = next(i for i, (c, d) in enumerate(zip(x + "\0", y + "\1", strict=False)) if c != d)
            lo = max(0, at - limit // 2)
            return f"line {n}: {x[lo:lo + limit]!r} | {y[lo:lo + limit]!r}"
    return f"{len(a)} vs {len(b)} lines"


def test_differences_reports_each_kind():
    # The helper itself: one file missing on each side and one changed (worked out by hand).
    a = {"x": "1", "y": "2", "z": "3"}
    b = {"x": "1", "y": "9", "w": "4"}
    assert differences(a, b) == ["only in first: z", "only in second: w", "differs: y"]
    assert differences(a, dict(a)) == []


def test_first_line_difference_shows_where(tmp_path):
    # The helper itself (by hand): the second line differs at its fourth character.
    one, two, blob = tmp_path / "one.txt", tmp_path / "two.txt", tmp_path / "b.bin"
    one.write_text("same\nabc1def\n")
    two.write_text("same\nabc2def\n")
    assert first_line_difference(one, two) == "line 2: 'abc1def' | 'abc2def'"
    assert first_line_difference(one, two, limit=4) == "line 2: 'bc1d' | 'bc2d'"
    two.write_text("same\nabc1def\nmore\n")
    assert first_line_difference(one, two) == "2 vs 3 lines"
    blob.write_bytes(b"\xff\xfe")
    assert first_line_difference(blob, one) == "binary, 2 vs 13 bytes"


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


#: Set by ``nox -s tests`` beside ``DESCENT_SITE_DIR``: the SOURCE_DATE_EPOCH its build used. The
#: session's build (in this repository, with this repository's model cache, both empty in a fresh
#: clone) is then build A, and only B and C are built here.
SESSION_EPOCH = "DESCENT_SITE_EPOCH"


@pytest.mark.slow
@pytest.mark.site
@needs_npm
def test_two_clean_builds_are_byte_identical(tmp_path):
    files = _tree_files()
    session_site, epoch = os.environ.get("DESCENT_SITE_DIR"), os.environ.get(SESSION_EPOCH)
    in_git = session_site and epoch and (ROOT / ".git").exists()
    if in_git:
        # A is the session's build of this tree (nox built it in ROOT; cold in a fresh clone). B is
        # built from a clone, so that the git-dates plugin dates its pages from the same commits.
        site_a, dated = Path(session_site), epoch
        two = _checkout(_clone(tmp_path / "elsewhere" / "checkout-two", files), files)
        _builds((two, tmp_path / "B"), epoch=epoch)  # B: cold, at another path
    else:
        one = _checkout(tmp_path / "checkout-one", files)
        two = _checkout(tmp_path / "elsewhere" / "checkout-two", files)
        site_a, dated = tmp_path / "A", EPOCH
        _builds((one, site_a), (two, tmp_path / "B"))  # the two cold builds side by side
    # The cold build computed the model's results (perplexities, Part 3's token-level results) in its
    # own, empty cache; the timings it printed came from the committed record.
    for kind in ("quality", "measurements"):
        assert list((two / ".cache" / "descent-trace-cache" / kind).glob("*.json")), kind
    _builds((two, tmp_path / "C"), epoch=dated)  # C: B's checkout again, warm

    a, b, c = (site_hashes(d) for d in (site_a, tmp_path / "B", tmp_path / "C"))
    assert "index.html" in a and "sitemap.xml" in a and "search/search_index.json" in a
    assert any(p.endswith(".whl") for p in a), "the site should ship the descent wheel"
    leaks = [f"{d.name}/{leak}" for d in (site_a, tmp_path / "B", tmp_path / "C")
             for leak in path_leaks(d, [tmp_path, ROOT])]
    assert leaks == [], "a build holds build-machine paths:\n" + "\n".join(leaks)
    sites = {"A": site_a, "B": tmp_path / "B", "C": tmp_path / "C"}
    diff_ab, diff_bc = (
        [d + (f" ({first_line_difference(sites[x] / d[9:], sites[y] / d[9:])})" if d.startswith("differs: ") else "")
         for d in differences(h1, h2)]
        for x, y, h1, h2 in (("A", "B", a, b), ("B", "C", b, c))
    )
    assert not diff_ab, "two builds from two directories differ (A vs B):\n" + "\n".join(diff_ab)
    assert not diff_bc, "a cold and a warm build differ (B vs C):\n" + "\n".join(diff_bc)
    # The fixed date reached the sitemap (a build-time date would be today's).
    day = time.strftime("%Y-%m-%d", time.gmtime(int(dated)))
    sitemap = (tmp_path / "B" / "sitemap.xml").read_text()
    assert f"<lastmod>{day}</lastmod>" in sitemap or "<lastmod>" not in sitemap
    if in_git:
        return
    # A copy without .git: every page is dated from SOURCE_DATE_EPOCH (the descent hook turns the
    # git-revision-date plugin off), not from the clock (issue 13).
    page = (tmp_path / "B" / "part-0-the-prompt.html").read_text(encoding="utf-8")
    shown = time.strftime("%B %-d, %Y", time.gmtime(int(dated)))
    stamp = time.strftime("%B %-d, %Y %H:%M:%S UTC", time.gmtime(int(dated)))
    assert f'git-revision-date-localized-plugin-date" title="{stamp}">{shown}<' in page
