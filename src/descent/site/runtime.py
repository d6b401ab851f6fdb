"""Build step for the widget runtime: the descent wheel and the vendored Pyodide core.

After MkDocs has written the site, :func:`on_post_build` puts into it:

* ``assets/descent/wheels/descent-<version>-py3-none-any.whl``: the core and the widgets of the
  ``descent`` package (pure Python, plus their data files), without the build side
  (:data:`BUILD_SIDE`), as a wheel, and ``assets/descent/wheels/manifest.json``
  (``{"wheel": name, "sha256": hex, "bytes": int, "version": str}``) that ``worker.js`` reads to find it;
* ``assets/pyodide/``: the Pyodide core files from the npm package ``pyodide`` pinned in
  package-lock.json (:data:`PYODIDE_FILES`), so no request leaves the site's origin;
* ``assets/pyodide/`` :data:`SNAPSHOT_FILE`: a memory snapshot of a booted interpreter
  (:func:`make_snapshot`), which ``worker.js`` hands to ``loadPyodide`` so the reader's browser
  skips the interpreter's start-up (Pyodide's ``_makeSnapshot`` / ``_loadSnapshot`` options).

The wheel is made by a standard PEP 517 build backend, ``flit_core`` (the ``build`` extra), called
in-process (:func:`flit_core.buildapi.build_wheel`) over a temporary source tree that holds a
generated minimal pyproject.toml and the selected modules and data files: no network (no isolated
build environment), nothing written into ``src/``, and the build side left out. It is
byte-for-byte reproducible: flit sorts the entries and normalises their modes, and the zip
timestamps come from ``SOURCE_DATE_EPOCH`` (1980-01-01 when unset); nothing in it depends on the
source directory's path, the files' mtimes or modes. Wheels are cached in
``.cache/descent-wheel/<key>/`` by a hash of the selected files, the generated pyproject.toml,
the timestamp and flit_core's version.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from descent.units import format_int

__all__ = ["BUILD_SIDE", "PYODIDE_FILES", "SNAPSHOT_FILE", "add_bytecode", "build_wheel", "copy_pyodide", "warm_caches",
           "make_snapshot", "on_post_build", "project_root", "wheel_files"]

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
#: <out file> <modules> <wheel or "">``. The option names are Pyodide 314's (node_modules/pyodide/pyodide.mjs).
#: The boot's entropy and clocks are fixed (a seeded generator for ``crypto.getRandomValues``,
#: counters for ``Date.now`` / ``performance.now``) so the snapshot is byte-for-byte reproducible:
#: Python's hash secret and ``random``'s global seed are therefore the same for every reader (the
#: site's widgets seed their own ``random.Random``; nothing here is security-relevant).
_SNAPSHOT_JS = """
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import nodeCrypto from "node:crypto";
const [dir, out, modules, wheel] = process.argv.slice(1);
// Under Node, Emscripten names the program (sys.executable, the `_` environment variable) after
// process.argv[1], here `dir`: an absolute path on the build machine that the snapshot would carry
// into every reader's browser. With argv cut to node alone it is "./this.program", as in a browser.
process.argv.length = 1;
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
// Pyodide restores a snapshot by copying it into the memory a new interpreter starts with, without
// growing it (API.restoreSnapshot in pyodide.asm.mjs): a snapshot of a memory that grew past that
// cannot be restored, and the worker would start without it (a second slower). Refused here.
const initial = pyodide._module.HEAP8.length;
pyodide.runPython(modules.split(",").map((m) => `import ${m}`).join("\\n"));
if (wheel) {
  // The widget runtime and every widget module imported too, the widgets run once at their defaults
  // (descent.widgets.warm, all but NOT_WARMED: the data files they read parsed, their caches filled): the browser's
  // worker finds all of it in memory and neither compiles a module nor reads a file for a first
  // change. The files are not in the snapshot (Emscripten keeps them outside the memory): the
  // worker unpacks the same wheel, where later imports and other data files are read.
  pyodide.unpackArchive(new Uint8Array(readFileSync(wheel)), "wheel");
  pyodide.runPython("import descent.widgets; descent.widgets.warm(); None");
}
const grown = pyodide._module.HEAP8.length;
if (grown > initial) {
  process.stderr.write(`the interpreter's memory grew from ${initial / 1048576} to ${grown / 1048576} MiB while ` +
    "the snapshot was prepared; Pyodide restores a snapshot only into its initial memory: import less, or " +
    "leave the widget whose first run grew it out of descent.widgets.warm (NOT_WARMED)\\n");
  process.exit(3);
}
writeFileSync(out, pyodide.makeMemorySnapshot());
"""

#: The node side of :func:`add_bytecode`: ``node --input-type=module -e _BYTECODE_JS <pyodide dir>
#: <out file> <wheel>``. Pyodide unpacks the wheel where the reader's browser does (site-packages),
#: compiles the package with its own Python, imports ``descent.widgets`` and writes the bytecode of
#: every ``descent`` module that import loaded into a zip (names as in the wheel). The bytecode is
#: "unchecked-hash": Python uses it without comparing it to the source's timestamp, which the
#: unpacked files do not keep.
_BYTECODE_JS = """
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [dir, out, wheel] = process.argv.slice(1);
process.argv.length = 1;
const { loadPyodide } = await import(pathToFileURL(dir + "/pyodide.mjs").href);
const pyodide = await loadPyodide({ indexURL: dir + "/" });
pyodide.unpackArchive(new Uint8Array(readFileSync(wheel)), "wheel");
pyodide.runPython(`
import compileall, os, py_compile, sys, zipfile
import descent
pkg = os.path.dirname(descent.__file__)
site = os.path.dirname(pkg)
if not compileall.compile_dir(pkg, quiet=1, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH):
    raise SystemExit("compileall failed")
import descent.widgets
with zipfile.ZipFile("/tmp/pyc.zip", "w") as z:
    for name, m in sorted(sys.modules.items()):
        if name.split(".")[0] == "descent" and getattr(m, "__cached__", None):
            z.write(m.__cached__, os.path.relpath(m.__cached__, site))
`);
writeFileSync(out, pyodide.FS.readFile("/tmp/pyc.zip"));
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

#: Parts of ``src/descent`` the browser wheel leaves out, as names directly inside the package:
#: the build side of DESIGN.md's line (``site/``, ``trace/``, ``formulas.py``, ``plotting.py`` may
#: import mkdocs, numpy, sympy, matplotlib, gguf) and the command line. ``cli/`` imports only the
#: core, but no browser runs a command, its ``trace`` subcommand reaches into ``descent.trace``
#: (not shipped), and its ``descent`` console script would name nothing a browser can start.
BUILD_SIDE = ("cli", "formulas.py", "plotting.py", "site", "trace")

_SKIP_DIRS = {"__pycache__"}
_SKIP_SUFFIXES = {".pyc", ".pyo"}

#: The build backend the generated pyproject.toml names (the ``build`` extra pins the same range).
FLIT_REQUIREMENT = "flit_core>=4.2,<5"


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


def wheel_files(pkg_dir: Path) -> list[tuple[str, Path]]:
    """The files of the browser wheel: ``[(name in the wheel, e.g. "descent/units.py", path)]``,
    sorted by name. Every file under ``pkg_dir`` (modules and data: catalog TOML, data/*) except
    :data:`BUILD_SIDE`, ``__pycache__``, bytecode and dot-files.
    """
    files = []
    for path in sorted(pkg_dir.rglob("*")):
        rel = path.relative_to(pkg_dir.parent)
        if path.is_dir() or any(p in _SKIP_DIRS for p in rel.parts) or path.suffix in _SKIP_SUFFIXES:
            continue
        if any(p.startswith(".") for p in rel.parts) or rel.parts[1] in BUILD_SIDE:
            continue
        files.append((rel.as_posix(), path))
    return files


def _pyproject(root: Path) -> tuple[str, str, str]:
    """``(name, version, text)`` of the minimal pyproject.toml flit builds the browser wheel from:
    the project's name, version, description, Python floor and licence; no dependencies (the core
    needs none), no scripts, no readme."""
    with open(root / "pyproject.toml", "rb") as fh:
        project = tomllib.load(fh)["project"]
    name, version = project["name"], project["version"]
    fields = {
        "name": name,
        "version": version,
        "description": project.get("description", ""),
        "requires-python": project.get("requires-python", ">=3.11"),
    }
    if isinstance(project.get("license"), str):  # an SPDX expression (PEP 639)
        fields["license"] = project["license"]
    # json.dumps(ensure_ascii=False) writes a valid TOML basic string: the same escapes for quotes,
    # backslashes and control characters, other characters as UTF-8 (TOML has no surrogate pairs).
    text = (
        "# Generated by descent.site.runtime.build_wheel: the browser wheel (core and widgets).\n"
        "[build-system]\n"
        f"requires = [{json.dumps(FLIT_REQUIREMENT)}]\n"
        'build-backend = "flit_core.buildapi"\n\n'
        "[project]\n"
        + "".join(f"{k} = {json.dumps(v, ensure_ascii=False)}\n" for k, v in fields.items())
        + "dependencies = []\n"
    )
    return name, version, text


def _epoch() -> int:
    try:
        return max(ZIP_EPOCH, int(os.environ.get("SOURCE_DATE_EPOCH", ZIP_EPOCH)))
    except ValueError:
        raise ValueError(
            f"SOURCE_DATE_EPOCH must be a whole number of seconds, got {os.environ['SOURCE_DATE_EPOCH']!r}"
        ) from None


@contextlib.contextmanager
def _environ(key: str, value: str) -> Iterator[None]:
    old = os.environ.get(key)
    os.environ[key] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[key]
        else:
            os.environ[key] = old


def build_wheel(root: Path | None = None, out_dir: Path | None = None) -> Path:
    """Build the browser's ``descent`` wheel (core and widgets, :func:`wheel_files`) with flit_core
    and return its path.

    The selected files are copied (mode 644) with a generated pyproject.toml into a temporary
    directory, and :func:`flit_core.buildapi.build_wheel` runs there in this process, with
    ``SOURCE_DATE_EPOCH`` set for the zip timestamps (1980-01-01 when the caller has not set it).

    Args:
        root: the repository root (default: :func:`project_root`).
        out_dir: where to write it (default: ``<root>/.cache/descent-wheel/<key>/``, reused when the
            key, a hash of the selected files, the generated pyproject.toml, SOURCE_DATE_EPOCH and
            flit_core's version, is unchanged).

    Returns:
        The wheel's path, named ``<name>-<version>-py3-none-any.whl``.

    Raises:
        FileNotFoundError: no ``src/descent`` under ``root``.
        ImportError: flit_core is not installed (it is in the ``build`` extra).
        ValueError: the wheel would exceed :data:`MAX_WHEEL_BYTES`; SOURCE_DATE_EPOCH is not an integer.
    """
    root = Path(root) if root is not None else project_root()
    pkg = root / "src" / "descent"
    if not pkg.is_dir():
        raise FileNotFoundError(f"no package directory at {pkg}")
    try:
        import flit_core
        from flit_core import buildapi
    except ImportError:
        raise ImportError(
            "the browser wheel is built with flit_core, which is in the build extra: pip install -e '.[build]'"
        ) from None
    name, version, pyproject = _pyproject(root)
    epoch = _epoch()
    files = wheel_files(pkg)
    digest = hashlib.sha256()
    digest.update(f"{pyproject}\0{epoch}\0flit_core {flit_core.__version__}\0".encode())
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
    with tempfile.TemporaryDirectory(prefix="descent-wheel-") as tmp:
        tree, dist = Path(tmp) / "tree", Path(tmp) / "dist"
        for rel, path in files:
            target = tree / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
            target.chmod(0o644)  # flit keeps an executable bit (755); none belongs in the wheel
        (tree / "pyproject.toml").write_text(pyproject, encoding="utf-8")
        dist.mkdir()
        # PEP 517 runs a backend in the source tree: flit reads ./pyproject.toml.
        with contextlib.chdir(tree), _environ("SOURCE_DATE_EPOCH", str(epoch)):
            built = dist / buildapi.build_wheel(str(dist))
        if built.name != wheel_name:
            raise RuntimeError(f"flit_core named the wheel {built.name}, expected {wheel_name}")
        size = built.stat().st_size
        if size > MAX_WHEEL_BYTES:
            biggest = sorted(files, key=lambda f: f[1].stat().st_size, reverse=True)[:3]
            raise ValueError(
                f"the descent wheel would be {format_int(size)} bytes, over the {format_int(MAX_WHEEL_BYTES)}-byte "
                f"limit for the browser; largest files: "
                f"{', '.join(f'{rel} ({format_int(p.stat().st_size)} B)' for rel, p in biggest)}"
            )
        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / wheel_name
        tmp_target = _tmp_beside(target)
        shutil.copyfile(built, tmp_target)
        tmp_target.replace(target)
    if cached:
        # Drop wheels built from older sources (not the ones a concurrent build may be writing).
        now = time.time()
        for old in out_dir.parent.iterdir():
            if old != out_dir and old.is_dir() and now - old.stat().st_mtime > CACHE_KEEP_S:
                shutil.rmtree(old, ignore_errors=True)
    return target


def _tmp_beside(path: Path) -> Path:
    """A temporary name beside ``path`` that no other process or thread writes: test workers and
    builds share ``<root>/.cache``, and with one ``.tmp`` name one of them renamed the other's
    half-made file away (CI: "making the Pyodide snapshot failed" with nothing on stderr)."""
    return path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")


def _under_node(root: Path, script: str, args: list[str], key: bytes, cache: str, name: str, what: str) -> Path:
    """Run ``script`` (an ES module) under node with ``node_modules/pyodide``, once per ``key``: the
    file it writes is kept as ``<root>/.cache/<cache>/<hash>/<name>``, the hash covering the script,
    ``key`` and the Pyodide files. node gets ``<pyodide dir> <out file> *args``. Other entries of
    ``.cache/<cache>/`` older than :data:`CACHE_KEEP_S` are deleted.

    Raises:
        FileNotFoundError: node or node_modules/pyodide is missing.
        RuntimeError: node failed or ran past :data:`SNAPSHOT_TIMEOUT_S` (its stderr is in the message),
            named by ``what``.
    """
    import subprocess

    src = root / "node_modules" / "pyodide"
    node = shutil.which("node")
    if node is None:
        raise FileNotFoundError(f"node is not on PATH: {what} is made by Pyodide under node (as KaTeX runs)")
    digest = hashlib.sha256(script.encode() + b"\0" + key)
    for f in PYODIDE_FILES:
        if not (src / f).is_file():
            raise FileNotFoundError(f"node_modules/pyodide lacks {f}: run `npm ci`")
        digest.update(f.encode() + b"\0" + (src / f).read_bytes())
    cached = root / ".cache" / cache / digest.hexdigest()[:16] / name
    if cached.is_file():
        return cached
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_beside(cached)
    try:
        proc = subprocess.run([node, "--input-type=module", "-e", script, str(src.resolve()), str(tmp), *args],
                              capture_output=True, text=True, timeout=SNAPSHOT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{what} took over {SNAPSHOT_TIMEOUT_S} s") from None
    if proc.returncode != 0 or not tmp.is_file():
        raise RuntimeError(f"{what} failed: {(proc.stderr or proc.stdout)[-800:]}")
    tmp.replace(cached)
    now = time.time()
    for old in cached.parent.parent.iterdir():
        if old != cached.parent and old.is_dir() and now - old.stat().st_mtime > CACHE_KEEP_S:
            shutil.rmtree(old, ignore_errors=True)
    return cached


def _record_line(name: str, body: bytes) -> str:
    """A wheel RECORD row (PEP 376/427): ``name,sha256=<urlsafe base64, unpadded>,<size>``."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(body)}"


def add_bytecode(root: Path, wheel: Path) -> Path:
    """The wheel with bytecode, compiled by the browser's own Python (Pyodide's), beside the sources.

    Without bytecode, Pyodide compiles every module the first time it is imported, in the reader's
    browser: about two thirds of importing the widget runtime (105 ms of 160 ms under node; three
    times that in a phone's worker). Only the modules every start imports get bytecode
    (``descent.widgets`` and what it imports, :data:`_BYTECODE_JS`); the others compile when first
    used, mostly while the worker warms up, and bytecode for the whole package would add 560 KB to
    the download. The bytecode is made under node with ``node_modules/pyodide`` (the files the site
    ships, so its magic number is the browser's) and cached by the wheel's bytes; the wheel is
    written again with the bytecode added under ``__pycache__`` and listed in RECORD, in a fixed
    order with the DOS epoch as each new entry's date, so the same wheel and Pyodide give the same
    bytes. The sources stay: tracebacks and ``descent.widgets.get`` read them.

    Args:
        root: the repository root (node_modules/pyodide, .cache).
        wheel: a wheel from :func:`build_wheel`.

    Returns:
        The path of the wheel with bytecode (in the cache), with the same file name as ``wheel``.

    Raises:
        FileNotFoundError: node or node_modules/pyodide is missing.
        RuntimeError: node failed or ran past :data:`SNAPSHOT_TIMEOUT_S` (its stderr is in the message).
    """
    import zipfile

    pycs = _under_node(root, _BYTECODE_JS, [str(wheel.resolve())], wheel.read_bytes(), "descent-wheel-pyc",
                       "bytecode.zip", "compiling the wheel's bytecode")
    target = pycs.with_name(wheel.name)
    if target.is_file():
        return target
    tmp = _tmp_beside(target)
    with zipfile.ZipFile(wheel) as zin, zipfile.ZipFile(pycs) as zpyc, \
            zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
        record = next(n for n in zin.namelist() if n.endswith(".dist-info/RECORD"))
        for info in zin.infolist():
            if info.filename != record:
                zout.writestr(info, zin.read(info))
        rows = []
        for name in sorted(zpyc.namelist()):
            body = zpyc.read(name)
            info = zipfile.ZipInfo(name, date_time=time.gmtime(ZIP_EPOCH)[:6])
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zout.writestr(info, body)
            rows.append(_record_line(name, body))
        kept = [r for r in zin.read(record).decode().splitlines() if not r.startswith(record + ",")]
        zout.writestr(zin.getinfo(record), "\n".join(kept + rows + [record + ",,"]) + "\n")
    tmp.replace(target)
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


def make_snapshot(root: Path, dest: Path, wheel: Path | None = None) -> Path:
    """Write :data:`SNAPSHOT_FILE` into ``dest``: boot ``node_modules/pyodide`` under node, import
    :data:`SNAPSHOT_PREIMPORTS` and, given the site's ``wheel``, unpack it and import
    ``descent.widgets`` (the worker's first import: 140 to 280 ms of the cold start in the browser
    on a 2-core machine) and every widget module (the first widget's import and compilation: about
    100-150 ms before its first result) and run each widget once (:func:`descent.widgets.warm`:
    the data files a first change would read, parsed; 8.09 to 8.11 MB gzipped), then save the
    interpreter's memory: 31.5 MB raw, Pyodide's initial memory, which the snapshot must not outgrow
    (a restore copies it into that memory without growing it; a snapshot that grew is refused). Cached in
    ``.cache/pyodide-snapshot/<hash>/`` by the Pyodide files, the module list, the wheel's bytes and
    the script.

    Raises:
        FileNotFoundError: node or node_modules/pyodide is missing.
        RuntimeError: node failed or ran past :data:`SNAPSHOT_TIMEOUT_S`, or the interpreter's memory
            grew past its initial size (the message says so; stderr is in it).
    """
    modules = ",".join(SNAPSHOT_PREIMPORTS)
    key = modules.encode() + (b"\0" + wheel.read_bytes() if wheel is not None else b"")
    cached = _under_node(root, _SNAPSHOT_JS, [modules, str(wheel.resolve()) if wheel is not None else ""], key, "pyodide-snapshot", SNAPSHOT_FILE,
                         "making the Pyodide snapshot")
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / SNAPSHOT_FILE
    if not (target.is_file() and target.stat().st_size == cached.stat().st_size
            and target.read_bytes() == cached.read_bytes()):
        shutil.copyfile(cached, target)
    return target


#: What the reader's browser fetches instead of the raw files when it has DecompressionStream:
#: gzip files that ``worker.js`` gunzips itself, so they travel compressed from any static host
#: (one that sets no Content-Encoding too). Measured on the built site: the snapshot 31.5 MB ->
#: 7.7 MB, the wasm 9.6 MB -> 3.5 MB. Level 6 (zlib's default): level 9 saves 1 % for 5 s of build.
GZIP_LEVEL = 6

#: The gzipped wasm keeps its name in this folder under :data:`PYODIDE_DIR` (``worker.js`` fetches
#: it when the host does not compress the raw one itself).
WASM_GZIP_DIR = "gzip"

#: The folder ``worker.js`` gives Pyodide as ``indexURL``: ``pyodide.mjs`` fetches
#: ``<indexURL>pyodide.asm.wasm`` as it starts, and the worker, which has fetched and compiled the
#: real wasm already (raw or gzipped), answers its instantiation; here that name is an empty
#: module (:data:`_EMPTY_WASM`, 8 bytes), so Pyodide's own request costs nothing.
WASM_BOOT_DIR = "boot"
_EMPTY_WASM = b"\x00asm\x01\x00\x00\x00"

#: An empty zip (its end record alone): the standard library ``worker.js`` gives Pyodide when it
#: boots from the snapshot, which holds every module the widgets import. The real
#: ``python_stdlib.zip`` is fetched only when Python asks for a module that is not in memory.
EMPTY_STDLIB = "python_stdlib.empty.zip"
_EMPTY_ZIP = b"PK\x05\x06" + bytes(18)


def gzip_file(src: Path, dest: Path, root: Path) -> Path:
    """Write ``src`` gzipped (:data:`GZIP_LEVEL`, no name, mtime 0: the same bytes every build) to
    ``dest``, cached in ``<root>/.cache/descent-gzip/`` by ``src``'s sha256."""
    import gzip

    data = src.read_bytes()
    cached = root / ".cache" / "descent-gzip" / f"{hashlib.sha256(data).hexdigest()[:24]}.gz"
    if not cached.is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = _tmp_beside(cached)
        tmp.write_bytes(gzip.compress(data, GZIP_LEVEL, mtime=0))
        tmp.replace(cached)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cached, dest)
    return dest


def pack_files(wheel: Path) -> list[tuple[str, bytes]]:
    """The files ``worker.js`` writes into Pyodide's file system: the package's files in ``wheel``
    (modules and data) without bytecode (the snapshot has every module of the widget runtime
    imported already) and without the wheel's metadata (``.dist-info``), sorted by name."""
    import zipfile

    with zipfile.ZipFile(wheel) as z:
        return [(n, z.read(n)) for n in sorted(z.namelist())
                if not n.endswith("/") and "/__pycache__/" not in n and ".dist-info/" not in n]


def write_pack(wheel: Path, dest: Path) -> Path:
    """Write :func:`pack_files` as a POSIX ustar archive ``dest`` (``worker.js`` reads that format:
    512-byte headers, no extensions), byte-for-byte reproducible (mode 644, owner 0, mtime 0).

    Raises:
        ValueError: a name too long for ustar (100 characters, or 155 + 100 split at a slash).
    """
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, body in pack_files(wheel):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(body), 0o644, 0
            tar.addfile(info, io.BytesIO(body))
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(buf.getvalue())
    return dest


def warm_caches(root: Path, plain: Path) -> None:
    """Make what :func:`on_post_build` writes into the site in their caches under ``<root>/.cache``,
    given the ``plain`` wheel (:func:`build_wheel`): its bytecode, the snapshot and the gzipped
    copies. None of it depends on a page, so the site hook runs this in a thread as the build begins
    (:func:`descent.site.hooks.start_early_work`): in a clean build its node processes (about 10 s)
    run beside the pages instead of after them. It changes nothing of the process (no folder, no
    environment variable: :func:`build_wheel` does both, so the hook calls that first, itself).
    Raises as :func:`on_post_build`, which then meets the same error."""
    wheel = add_bytecode(root, plain)
    with tempfile.TemporaryDirectory(prefix="descent-runtime-") as tmp:
        gzip_file(write_pack(plain, Path(tmp) / "pack.tar"), Path(tmp) / "pack.tar.gz", root)
        gzip_file(make_snapshot(root, Path(tmp), wheel), Path(tmp) / "snapshot.gz", root)
        gzip_file(root / "node_modules" / "pyodide" / "pyodide.asm.wasm", Path(tmp) / "wasm.gz", root)


def on_post_build(config: Any) -> None:
    """MkDocs ``on_post_build``: write the wheel, the package's files for the worker + manifest, the
    Pyodide core, its snapshot and the gzipped copies ``worker.js`` fetches into the site.

    Raises:
        FileNotFoundError: src/descent, node or node_modules/pyodide is missing.
        RuntimeError: the snapshot could not be made.
    """
    root = project_root(config)
    site = Path(config["site_dir"])
    plain = build_wheel(root)
    wheel = add_bytecode(root, plain)
    wdir = site / WHEEL_DIR
    wdir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(wheel, wdir / wheel.name)
    data = wheel.read_bytes()
    version = wheel.name.split("-")[1]
    pack = write_pack(plain, wdir / f"descent-{version}.tar")
    gzip_file(pack, pack.with_name(pack.name + ".gz"), root)
    with open(root / "node_modules" / "pyodide" / "pyodide-lock.json", "rb") as fh:
        lock_info = json.load(fh)["info"]
    manifest = {"wheel": wheel.name, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                "version": version, "pack": pack.name, "pack_sha256": hashlib.sha256(pack.read_bytes()).hexdigest(),
                # Pyodide's lock file without its packages: the runtime loads none (the whole file is 119 KB).
                "lock": {"info": lock_info, "packages": {}}}
    (wdir / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    pdir = site / PYODIDE_DIR
    copy_pyodide(root, pdir)
    snap = make_snapshot(root, pdir, wheel)
    gzip_file(snap, snap.with_name(snap.name + ".gz"), root)
    gzip_file(pdir / "pyodide.asm.wasm", pdir / WASM_GZIP_DIR / "pyodide.asm.wasm", root)
    (pdir / EMPTY_STDLIB).write_bytes(_EMPTY_ZIP)
    (pdir / WASM_BOOT_DIR).mkdir(exist_ok=True)
    (pdir / WASM_BOOT_DIR / "pyodide.asm.wasm").write_bytes(_EMPTY_WASM)
