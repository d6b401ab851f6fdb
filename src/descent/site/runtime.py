"""Build step for the widget runtime: the descent wheel and the vendored Pyodide core.

After MkDocs has written the site, :func:`on_post_build` puts into it:

* ``assets/descent/wheels/descent-<version>-py3-none-any.whl``: the whole ``descent`` package
  (pure Python, plus its data files) as a wheel, and ``assets/descent/wheels/manifest.json``
  (``{"wheel": name, "sha256": hex, "version": str}``) that ``worker.js`` reads to find it;
* ``assets/pyodide/``: the Pyodide core files from the npm package ``pyodide`` pinned in
  package-lock.json (:data:`PYODIDE_FILES`), so no request leaves the site's origin;
* ``assets/pyodide/`` :data:`SNAPSHOT_FILE`: a memory snapshot of a booted interpreter
  (:func:`make_snapshot`), which ``worker.js`` hands to ``loadPyodide`` so the reader's browser
  skips the interpreter's start-up (Pyodide's ``_makeSnapshot`` / ``_loadSnapshot`` options).

The wheel is written directly with :mod:`zipfile` (a wheel is a zip with a ``.dist-info``
directory: PEP 427, PEP 491) rather than by ``python -m build``: it needs no network for an
isolated build environment, writes nothing into ``src/``, takes milliseconds, and is
byte-for-byte deterministic (entries sorted, timestamps from ``SOURCE_DATE_EPOCH``). Wheels are
cached in ``.cache/descent-wheel/`` by a hash of ``src/descent`` and the project metadata.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import time
import tomllib
import zipfile
from pathlib import Path
from typing import Any

from descent.units import format_int

__all__ = ["PYODIDE_FILES", "SNAPSHOT_FILE", "build_wheel", "copy_pyodide", "make_snapshot", "on_post_build",
           "project_root"]

#: The files Pyodide 314.0.7 loads at start-up (checked in node_modules/pyodide/pyodide.mjs:
#: it imports ``pyodide.asm.mjs`` and fetches ``pyodide.asm.wasm``, ``python_stdlib.zip`` and
#: ``pyodide-lock.json`` relative to ``indexURL``).
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")

#: The memory snapshot of a booted Pyodide, next to the core files (worker.js fetches this name).
#: Measured on the 2-core build machine, idle, Chromium, cold first live widget on Part 0 (the
#: bench's measure): 2.4-2.6 s without it, 1.3-1.5 s with it. Cost: 31 MB (6.2 MB gzip) more for
#: the reader to download on the first live widget of a visit.
SNAPSHOT_FILE = "pyodide-snapshot.bin"

#: Standard-library modules the descent package imports, imported before the snapshot is taken so
#: the browser has them already (stdlib only: the snapshot must not depend on src/descent).
SNAPSHOT_PREIMPORTS = ("dataclasses", "functools", "html", "importlib.resources", "json", "math", "pkgutil",
                       "random", "tomllib", "zlib")

#: Longest a snapshot may take to make (seconds): Pyodide boots in about 5 s on the build machine.
SNAPSHOT_TIMEOUT_S = 300

#: The node side of :func:`make_snapshot`: ``node --input-type=module -e _SNAPSHOT_JS <pyodide dir>
#: <out file> <modules>``. The option names are Pyodide 314's (node_modules/pyodide/pyodide.mjs).
#: The boot's entropy and clocks are fixed (a seeded generator for ``crypto.getRandomValues``,
#: counters for ``Date.now`` / ``performance.now``) so the snapshot is byte-for-byte reproducible:
#: Python's hash secret and ``random``'s global seed are therefore the same for every reader (the
#: site's widgets seed their own ``random.Random``; nothing here is security-relevant).
_SNAPSHOT_JS = """
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import nodeCrypto from "node:crypto";
const [dir, out, modules] = process.argv.slice(1);
let seed = 1;
const fill = (a) => {
  const u = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  for (let i = 0; i < u.length; i++) { seed = (seed * 1103515245 + 12345) >>> 0; u[i] = seed >>> 24; }
  return a;
};
globalThis.crypto.getRandomValues = fill;
nodeCrypto.randomFillSync = fill;
let clock = 1700000000000;
Date.now = () => (clock += 1);
let ticks = 0;
performance.now = () => (ticks += 1);
const { loadPyodide } = await import(pathToFileURL(dir + "/pyodide.mjs").href);
const pyodide = await loadPyodide({ indexURL: dir + "/", _makeSnapshot: true });
pyodide.runPython(modules.split(",").map((m) => `import ${m}`).join("\\n"));
writeFileSync(out, pyodide.makeMemorySnapshot());
"""

#: The earliest timestamp a zip entry can hold (1980-01-01, the DOS epoch), in Unix seconds.
ZIP_EPOCH = 315532800

#: Where, under the site directory, the wheel and the Pyodide core go (worker.js resolves the
#: same paths relative to itself: ``./wheels/`` and ``../pyodide/``).
WHEEL_DIR = Path("assets/descent/wheels")
PYODIDE_DIR = Path("assets/pyodide")

#: Largest wheel the site will ship, in bytes (20 MB, SI). The browser downloads it on a reader's
#: first live widget, next to Pyodide's ~13 MB core; a bigger wheel means a cache or model file
#: landed in src/descent by mistake, and the build fails rather than ship it.
MAX_WHEEL_BYTES = 20 * 10**6

#: Cached wheels older than this many seconds (1 hour) are deleted when a new one is built.
CACHE_KEEP_S = 3600

_SKIP_DIRS = {"__pycache__"}
_SKIP_SUFFIXES = {".pyc", ".pyo"}


def project_root(config: Any | None = None) -> Path:
    """The repository root: the nearest directory holding ``pyproject.toml`` and ``src/descent``,
    searched upwards from mkdocs.yml's directory when known, else from this file.

    Raises:
        FileNotFoundError: no such directory.
    """
    starts = []
    if config is not None and hasattr(config, "get") and config.get("config_file_path"):
        starts.append(Path(config["config_file_path"]).resolve().parent)
    starts.append(Path(__file__).resolve().parent)
    for start in starts:
        for parent in (start, *start.parents):
            if (parent / "pyproject.toml").is_file() and (parent / "src" / "descent").is_dir():
                return parent
    raise FileNotFoundError(f"no pyproject.toml with src/descent above {', '.join(map(str, starts))}")


def _package_files(pkg_dir: Path) -> list[tuple[str, Path]]:
    files = []
    for path in sorted(pkg_dir.rglob("*")):
        rel = path.relative_to(pkg_dir.parent)
        if path.is_dir() or any(p in _SKIP_DIRS for p in rel.parts) or path.suffix in _SKIP_SUFFIXES:
            continue
        if path.name.startswith("."):
            continue
        files.append((rel.as_posix(), path))
    return files


def _metadata(root: Path) -> tuple[str, str, str]:
    with open(root / "pyproject.toml", "rb") as fh:
        project = tomllib.load(fh)["project"]
    name, version = project["name"], project["version"]
    meta = (
        "Metadata-Version: 2.1\n"
        f"Name: {name}\n"
        f"Version: {version}\n"
        f"Summary: {project.get('description', '')}\n"
        f"Requires-Python: {project.get('requires-python', '>=3.11')}\n"
    )
    return name, version, meta


def _epoch() -> int:
    try:
        return max(ZIP_EPOCH, int(os.environ.get("SOURCE_DATE_EPOCH", ZIP_EPOCH)))
    except ValueError:
        raise ValueError(
            f"SOURCE_DATE_EPOCH must be a whole number of seconds, got {os.environ['SOURCE_DATE_EPOCH']!r}"
        ) from None


def build_wheel(root: Path | None = None, out_dir: Path | None = None) -> Path:
    """Write the pure-Python ``descent`` wheel and return its path.

    Args:
        root: the repository root (default: :func:`project_root`).
        out_dir: where to write it (default: ``<root>/.cache/descent-wheel/<hash>/``, reused when
            the hash of ``src/descent``, pyproject.toml and SOURCE_DATE_EPOCH is unchanged).

    Returns:
        The wheel's path, named ``<name>-<version>-py3-none-any.whl``.

    Raises:
        FileNotFoundError: no ``src/descent`` under ``root``.
        ValueError: the wheel would exceed :data:`MAX_WHEEL_BYTES`; SOURCE_DATE_EPOCH is not an integer.
    """
    root = Path(root) if root is not None else project_root()
    pkg = root / "src" / "descent"
    if not pkg.is_dir():
        raise FileNotFoundError(f"no package directory at {pkg}")
    name, version, meta = _metadata(root)
    epoch = _epoch()
    files = _package_files(pkg)
    digest = hashlib.sha256()
    digest.update(meta.encode())
    digest.update(str(epoch).encode())
    for rel, path in files:
        digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    key = digest.hexdigest()[:16]
    wheel_name = f"{name}-{version}-py3-none-any.whl"
    cached = out_dir is None
    if out_dir is None:
        out_dir = root / ".cache" / "descent-wheel" / key
        if (out_dir / wheel_name).is_file():
            return out_dir / wheel_name
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / wheel_name
    dist_info = f"{name}-{version}.dist-info"
    stamp = time.gmtime(epoch)[:6]
    entries: list[tuple[str, bytes]] = [(rel, path.read_bytes()) for rel, path in files]
    entries.append((f"{dist_info}/METADATA", meta.encode()))
    entries.append((f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: descent.site.runtime\n"
                    b"Root-Is-Purelib: true\nTag: py3-none-any\n"))
    entries.append((f"{dist_info}/top_level.txt", f"{name}\n".encode()))
    record = []
    for arc, data in entries:
        h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={h},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    tmp = target.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arc, data in entries:
            info = zipfile.ZipInfo(arc, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    size = tmp.stat().st_size
    if size > MAX_WHEEL_BYTES:
        tmp.unlink()
        biggest = sorted(files, key=lambda f: f[1].stat().st_size, reverse=True)[:3]
        raise ValueError(
            f"the descent wheel would be {format_int(size)} bytes, over the {format_int(MAX_WHEEL_BYTES)}-byte limit for the browser; "
            f"largest files: {', '.join(f'{rel} ({format_int(p.stat().st_size)} B)' for rel, p in biggest)}"
        )
    tmp.replace(target)
    if cached:
        # Drop wheels built from older sources (not the ones a concurrent build may be writing).
        now = time.time()
        for old in out_dir.parent.iterdir():
            if old != out_dir and old.is_dir() and now - old.stat().st_mtime > CACHE_KEEP_S:
                shutil.rmtree(old, ignore_errors=True)
    return target


def copy_pyodide(root: Path, dest: Path) -> list[Path]:
    """Copy :data:`PYODIDE_FILES` from ``<root>/node_modules/pyodide`` into ``dest``.

    Raises:
        FileNotFoundError: the npm package is missing (run ``npm ci``; nox does it).
    """
    src = root / "node_modules" / "pyodide"
    missing = [f for f in PYODIDE_FILES if not (src / f).is_file()]
    if missing:
        raise FileNotFoundError(
            f"node_modules/pyodide lacks {', '.join(missing)}: run `npm ci` (package-lock.json pins pyodide)"
        )
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for f in PYODIDE_FILES:
        target = dest / f
        if not (target.is_file() and target.stat().st_size == (src / f).stat().st_size
                and target.read_bytes() == (src / f).read_bytes()):
            shutil.copyfile(src / f, target)
        out.append(target)
    return out


def make_snapshot(root: Path, dest: Path) -> Path:
    """Write :data:`SNAPSHOT_FILE` into ``dest``: boot ``node_modules/pyodide`` under node, import
    :data:`SNAPSHOT_PREIMPORTS` and save the interpreter's memory. Cached in
    ``.cache/pyodide-snapshot/<hash>/`` by the Pyodide files, the module list and the script.

    Raises:
        FileNotFoundError: node or node_modules/pyodide is missing.
        RuntimeError: node failed or ran past :data:`SNAPSHOT_TIMEOUT_S` (its stderr is in the message).
    """
    import subprocess

    src = root / "node_modules" / "pyodide"
    node = shutil.which("node")
    if node is None:
        raise FileNotFoundError("node is not on PATH: the Pyodide snapshot is made with node (as KaTeX runs)")
    digest = hashlib.sha256(_SNAPSHOT_JS.encode() + ",".join(SNAPSHOT_PREIMPORTS).encode())
    for f in PYODIDE_FILES:
        if not (src / f).is_file():
            raise FileNotFoundError(f"node_modules/pyodide lacks {f}: run `npm ci`")
        digest.update(f.encode() + b"\0" + (src / f).read_bytes())
    cached = root / ".cache" / "pyodide-snapshot" / digest.hexdigest()[:16] / SNAPSHOT_FILE
    if not cached.is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(".tmp")
        try:
            proc = subprocess.run(
                [node, "--input-type=module", "-e", _SNAPSHOT_JS, str(src.resolve()), str(tmp),
                 ",".join(SNAPSHOT_PREIMPORTS)],
                capture_output=True, text=True, timeout=SNAPSHOT_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"making the Pyodide snapshot took over {SNAPSHOT_TIMEOUT_S} s") from None
        if proc.returncode != 0 or not tmp.is_file():
            raise RuntimeError(f"making the Pyodide snapshot failed: {(proc.stderr or proc.stdout)[-800:]}")
        tmp.replace(cached)
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / SNAPSHOT_FILE
    if not (target.is_file() and target.stat().st_size == cached.stat().st_size
            and target.read_bytes() == cached.read_bytes()):
        shutil.copyfile(cached, target)
    return target


def on_post_build(config: Any) -> None:
    """MkDocs ``on_post_build``: write the wheel + manifest, the Pyodide core and its snapshot into the site.

    Raises:
        FileNotFoundError: src/descent, node or node_modules/pyodide is missing.
        RuntimeError: the snapshot could not be made.
    """
    root = project_root(config)
    site = Path(config["site_dir"])
    wheel = build_wheel(root)
    wdir = site / WHEEL_DIR
    wdir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(wheel, wdir / wheel.name)
    data = wheel.read_bytes()
    manifest = {"wheel": wheel.name, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                "version": wheel.name.split("-")[1]}
    (wdir / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    copy_pyodide(root, site / PYODIDE_DIR)
    make_snapshot(root, site / PYODIDE_DIR)
