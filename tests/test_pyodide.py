"""The browser wheel in Pyodide (npm package, under Node) and the core-only import rule.

The browser runs ``descent.widgets`` from the wheel that ``descent.site.runtime`` builds (with
flit_core) into the site; these tests build that same wheel, check what it holds (the core and
the widgets, none of the build side) and that it is byte-reproducible, and load it the way
``worker.js`` does (``pyodide.unpackArchive(bytes, "wheel")``), with Node's Buffer wrapped in a
Uint8Array.
"""

from __future__ import annotations

import ast
import base64
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from descent.site import runtime

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "descent"
PYODIDE = ROOT / "node_modules" / "pyodide"
NODE = shutil.which("node")

#: What the browser wheel must not carry (issue 7), written out here rather than read from
#: runtime.BUILD_SIDE so a change there has to change this too: the build side of DESIGN.md's
#: line (may import numpy, matplotlib, sympy, gguf, mkdocs) and the command line.
BUILD_SIDE = ("descent/site/", "descent/trace/", "descent/formulas.py", "descent/plotting.py", "descent/cli/")

#: dist-info files flit_core writes for this project (no entry points, no licence file).
DIST_INFO = {"descent-0.1.0.dist-info/" + n for n in ("WHEEL", "METADATA", "RECORD")}

#: A fixed SOURCE_DATE_EPOCH for the reproducibility tests: 2023-11-14 22:13:20 UTC.
EPOCH = "1700000000"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return runtime.build_wheel(ROOT, tmp_path_factory.mktemp("wheel"))


def _wheel_modules(whl: Path) -> dict[str, str]:
    """``{name: source}`` of every Python module in the wheel."""
    with zipfile.ZipFile(whl) as zf:
        return {n: zf.read(n).decode() for n in zf.namelist() if n.endswith(".py")}


def _source_files() -> set[str]:
    """Every file the wheel should carry, walked from src/descent independently of runtime.py."""
    out = set()
    for path in PKG.rglob("*"):
        rel = path.relative_to(PKG.parent).as_posix()
        if path.is_file() and "__pycache__" not in rel and not rel.startswith(BUILD_SIDE):
            out.add(rel)
    return out


def _copy_project(dest: Path) -> Path:
    """The project files the wheel is built from (pyproject.toml and src/descent), copied to ``dest``."""
    dest.mkdir(parents=True)
    shutil.copyfile(ROOT / "pyproject.toml", dest / "pyproject.toml")
    shutil.copytree(PKG, dest / "src" / "descent", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_wheel_holds_the_core_and_widgets_and_no_build_side(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    assert len(names) == len(set(names))
    assert not [n for n in names if n.startswith(BUILD_SIDE)], "build-side modules leaked into the browser wheel"
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    # Exactly the source files outside the build side, plus flit's dist-info.
    assert set(names) == _source_files() | DIST_INFO
    # Spelled out, so an empty or shrunken source walk cannot pass: every widget module and the core.
    widgets = {f"descent/widgets/{p.name}" for p in (PKG / "widgets").glob("*.py")}
    assert {"descent/widgets/__init__.py", "descent/widgets/views.py", "descent/widgets/part0.py",
            "descent/widgets/part5.py"} <= widgets <= set(names)
    core = {"descent/__init__.py", "descent/units.py", "descent/transformer.py", "descent/tokenizer.py",
            "descent/sampling.py", "descent/numerics.py", "descent/memory.py", "descent/hardware.py",
            "descent/catalog/__init__.py", "descent/catalog/models.toml", "descent/catalog/accelerators.toml",
            "descent/data/smollm2_tokenizer.json.gz", "descent/data/traces.json", "descent/data/embeddings.json",
            "descent/data/embedding_rows.json"}
    assert core <= set(names)


def test_wheel_metadata_is_flits_from_pyproject(wheel):
    assert wheel.name == "descent-0.1.0-py3-none-any.whl"  # name and version from pyproject.toml
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read("descent-0.1.0.dist-info/METADATA").decode()
        whl = zf.read("descent-0.1.0.dist-info/WHEEL").decode()
        record = list(csv.reader(io.StringIO(zf.read("descent-0.1.0.dist-info/RECORD").decode())))
        names = zf.namelist()
        data = {n: zf.read(n) for n in names}
    assert "Name: descent\n" in meta and "Version: 0.1.0\n" in meta and "Requires-Python: >=3.11\n" in meta
    assert "Requires-Dist" not in meta  # the core needs nothing beyond the standard library
    assert whl.startswith("Wheel-Version: 1.0\nGenerator: flit ") and "Tag: py3-none-any\n" in whl
    # RECORD lists every entry (itself last, unhashed) with its real sha256 and size.
    assert [r[0] for r in record] == names[: len(record)] and len(record) == len(names)
    assert record[-1] == ["descent-0.1.0.dist-info/RECORD", "", ""]
    for name, digest, size in record[:-1]:
        b64 = base64.urlsafe_b64encode(hashlib.sha256(data[name]).digest()).rstrip(b"=").decode()
        assert (digest, int(size)) == (f"sha256={b64}", len(data[name])), name


def test_wheel_is_byte_identical_across_builds_and_directories(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    one = _copy_project(tmp_path / "one")
    two = _copy_project(tmp_path / "somewhere else" / "two")
    # The second copy differs in what a checkout does not fix: mtimes, modes, bytecode lying around.
    for path in (two / "src").rglob("*"):
        os.utime(path, (1_000_000_000, 1_000_000_000))
    (two / "src/descent/units.py").chmod(0o755)
    (two / "src/descent/__pycache__").mkdir(exist_ok=True)
    (two / "src/descent/__pycache__/units.cpython-311.pyc").write_bytes(b"stale")
    builds = [runtime.build_wheel(one, tmp_path / "a"), runtime.build_wheel(one, tmp_path / "b"),
              runtime.build_wheel(two, tmp_path / "c"), runtime.build_wheel(ROOT, tmp_path / "d")]
    first = builds[0].read_bytes()
    assert [b.read_bytes() == first for b in builds] == [True] * 4
    with zipfile.ZipFile(builds[0]) as zf:
        assert {i.date_time for i in zf.infolist()} == {(2023, 11, 14, 22, 13, 20)}
        assert {i.external_attr >> 16 for i in zf.infolist()} == {0o100644}
    assert [str(r) for r in (one, two, ROOT) if str(r).encode() in first] == []  # no source path inside
    # No SOURCE_DATE_EPOCH: the DOS epoch, not the files' mtimes or today.
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    with zipfile.ZipFile(runtime.build_wheel(two, tmp_path / "e")) as zf:
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_wheel_cache_is_keyed_by_the_shipped_files(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    root = _copy_project(tmp_path / "proj")
    first = runtime.build_wheel(root)
    assert first.parent.parent == root / ".cache" / "descent-wheel"
    assert runtime.build_wheel(root) == first  # unchanged sources: the cached wheel
    # A build-side edit does not touch the browser wheel; a core edit does.
    with open(root / "src/descent/site/csp.py", "a") as fh:
        fh.write("# build-side edit\n")
    assert runtime.build_wheel(root) == first
    with open(root / "src/descent/units.py", "a") as fh:
        fh.write("# core edit\n")
    second = runtime.build_wheel(root)
    assert second != first and second.parent.parent == first.parent.parent
    with zipfile.ZipFile(second) as zf:
        assert zf.read("descent/units.py").endswith(b"# core edit\n")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000001")
    assert runtime.build_wheel(root).parent != second.parent  # the date is in the key


def test_wheel_metadata_survives_awkward_text(tmp_path):
    # The generated pyproject.toml quotes whatever the project's description holds.
    root = _copy_project(tmp_path / "proj")
    text = (root / "pyproject.toml").read_text()
    awkward = 'Quotes \\" and \\\\ backslash, tab\\t, naïve — 😀'  # TOML source: \" \\ \t are escapes
    (root / "pyproject.toml").write_text(text.replace(
        'description = "How an LLM answers you: the inference arithmetic behind the descent site"',
        f'description = "{awkward}"'))
    with zipfile.ZipFile(runtime.build_wheel(root, tmp_path / "out")) as zf:
        meta = zf.read("descent-0.1.0.dist-info/METADATA").decode()
    assert 'Summary: Quotes " and \\ backslash, tab\t, naïve — 😀\n' in meta


def test_wheel_needs_flit_core(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "flit_core", None)  # as if not installed
    with pytest.raises(ImportError, match=r"built with flit_core, which is in the build extra"):
        runtime.build_wheel(ROOT, tmp_path)


def test_core_modules_import_only_stdlib_and_descent(wheel):
    allowed = set(sys.stdlib_module_names) | {"descent", "__future__"}
    bad = []
    core = _wheel_modules(wheel)
    assert "descent/widgets/__init__.py" in core and "descent/widgets/demo.py" in core
    for name, src in core.items():
        for node in ast.walk(ast.parse(src, name)):
            if isinstance(node, ast.Import):
                tops = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                tops = [] if node.level else [(node.module or "").split(".")[0]]
            else:
                continue
            bad += [f"{name}:{node.lineno} imports {t}" for t in tops if t not in allowed]
    assert not bad, "core modules must import only the standard library and descent:\n" + "\n".join(bad)


_SCRIPT = r"""
const [pyodideDir, wheelPath] = process.argv.slice(2);
const { loadPyodide } = await import(pyodideDir + "/pyodide.mjs");
const { readFileSync } = await import("node:fs");
const pyodide = await loadPyodide({ indexURL: pyodideDir + "/" });
pyodide.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel");
const out = pyodide.runPython(`
import json, sys, importlib
import descent.widgets as w
res = {
  "python": sys.version.split()[0],
  "default": w.run("kv_demo", {}),
  "changed": json.loads(w.run_json("kv_demo", json.dumps({"context": "4096", "kv": "fp8"}))),
  "bad": w.run("kv_demo", {"context": "-3"}),
  "nan": w.run("kv_demo", {"layers": float("nan")}),
  "numpy_loaded": "numpy" in sys.modules,
  "static": w.render_static("kv_demo") == STATIC,
}
import_errors = {}
for mod in MODULES:
    try:
        importlib.import_module(mod)
    except Exception as exc:
        import_errors[mod] = f"{type(exc).__name__}: {exc}"
res["import_errors"] = import_errors
json.dumps(res)
`.replace("STATIC", JSON.stringify(process.env.DESCENT_STATIC)).replace("MODULES", process.env.DESCENT_MODULES));
process.stdout.write(out);
"""


@pytest.mark.slow
@pytest.mark.pyodide
@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.skipif(not (PYODIDE / "pyodide.mjs").is_file(), reason="node_modules/pyodide missing: run npm ci")
def test_widgets_run_in_pyodide(wheel, tmp_path):
    import descent.widgets as w

    script = tmp_path / "run.mjs"
    script.write_text(_SCRIPT)
    # Every module the wheel holds must import in Pyodide (no numpy there).
    modules = sorted(n[:-3].replace("/", ".").removesuffix(".__init__") for n in _wheel_modules(wheel))
    assert "descent.widgets.part5" in modules and "descent.catalog" in modules
    env = {"PATH": "/usr/bin:/bin", "DESCENT_STATIC": w.render_static("kv_demo"), "DESCENT_MODULES": json.dumps(modules)}
    proc = subprocess.run([NODE, str(script), str(PYODIDE), str(wheel)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout)
    assert res["python"].startswith("3.")
    # Same HTML in Pyodide as in CPython: the build-time and browser renderings are one implementation.
    assert res["default"] == w.run("kv_demo", {})
    assert res["static"] is True
    # FP8: 2 x 32 x 8 x 128 x 1 B = 65,536 B per token; x 4,096 tokens = 268,435,456 B (by hand).
    assert res["changed"]["ok"] and "268,435,456 bytes" in res["changed"]["html"]
    assert res["bad"] == {"ok": False, "field": "context", "message": "Context must be 1 to 20,000,000 tokens, got -3"}
    assert res["nan"] == {"ok": False, "field": "layers", "message": "Layers must be a number from 1 to 200 layers"}
    assert res["numpy_loaded"] is False
    assert res["import_errors"] == {}, res["import_errors"]


def _worker_source(start: str, end: str) -> str:
    """The text of docs/assets/descent/worker.js from the line starting with ``start`` to the first
    line after it that starts with ``end`` (inclusive): the worker's own code, run here under node."""
    lines = (ROOT / "docs/assets/descent/worker.js").read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith(start))
    j = next(n for n in range(i + 1, len(lines)) if lines[n].startswith(end))
    return "\n".join(lines[i:j + 1])


#: The worker's boot from the site's files, under node: the package's files written by the worker's
#: own untar/writeFiles once the boot is done (as worker.js does), the standard library an empty
#: zip, the lock file the manifest's, and the worker's on-demand finder for the standard library.
_WORKER_BOOT = """
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { pathToFileURL } from "node:url";
const [site, code, finder] = process.argv.slice(2);
process.argv.length = 1;
(0, eval)(code); // untar and writeFiles, from worker.js
const pdir = site + "/assets/pyodide/";
const wdir = site + "/assets/descent/wheels/";
const manifest = JSON.parse(readFileSync(wdir + "manifest.json", "utf8"));
const files = untar(new Uint8Array(gunzipSync(readFileSync(wdir + manifest.pack + ".gz"))));
const snapshot = gunzipSync(readFileSync(pdir + "pyodide-snapshot.bin.gz"));
const { loadPyodide } = await import(pathToFileURL(pdir + "pyodide.mjs").href);
const py = await loadPyodide({ indexURL: pdir, stdLibURL: pdir + "python_stdlib.empty.zip",
  lockFileContents: manifest.lock, _loadSnapshot: snapshot });
writeFiles(py.FS, files);
let loads = 0;
py.registerJsModule("_descent_stdlib", { load(path) { loads += 1; py.FS.writeFile(path, readFileSync(pdir + "python_stdlib.zip")); } });
py.runPython(finder);
// Every file a widget's first run opens and every module it imports (Python's audit events).
const widgets = py.runPython(`
import json, sys, descent.widgets as w
loaded, on = [], [True]
sys.addaudithook(lambda e, a: loaded.append(f"{e} {str(a[0]).rsplit('/', 1)[-1]}") if on[0] and e in ("open", "import") else None)
ok = {n: json.loads(w.run_json(n, "{}", ""))["ok"] for n in w.names()}
on[0] = False
json.dumps({"ok": ok, "loaded": loaded})`);
const before = loads;
// colorsys: a module of the standard library nothing of descent imports (checked below).
const absent = py.runPython("import sys; 'colorsys' not in sys.modules");
const hsv = py.runPython("import colorsys; colorsys.rgb_to_hsv(1.0, 0.0, 0.0)").toJs();
console.log(JSON.stringify({ widgets: JSON.parse(widgets), before, after: loads, absent, hsv }));
"""


@pytest.mark.slow
@pytest.mark.site
@pytest.mark.pyodide  # the hook boots Pyodide under node for the snapshot
@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_on_post_build_writes_the_runtime_and_the_worker_boots_from_it(tmp_path):
    if not (PYODIDE / "pyodide.mjs").is_file():
        pytest.skip("node_modules/pyodide missing: run npm ci")
    import gzip
    import tarfile

    site = tmp_path / "site"
    runtime.on_post_build({"site_dir": str(site), "config_file_path": str(ROOT / "mkdocs.yml")})
    wdir, pdir = site / "assets/descent/wheels", site / "assets/pyodide"
    manifest = json.loads((wdir / "manifest.json").read_text())
    whl = wdir / manifest["wheel"]
    # The contract worker.js reads: the package's tar (gzipped beside it) and the hash it puts in the
    # query string; Pyodide's lock file without packages; the wheel as before.
    assert set(manifest) == {"wheel", "sha256", "bytes", "version", "pack", "pack_sha256", "lock"}
    assert manifest["wheel"] == "descent-0.1.0-py3-none-any.whl" and manifest["version"] == "0.1.0"
    assert manifest["bytes"] == whl.stat().st_size and manifest["sha256"] == hashlib.sha256(whl.read_bytes()).hexdigest()
    lock = json.loads((PYODIDE / "pyodide-lock.json").read_text())
    assert manifest["lock"] == {"info": lock["info"], "packages": {}}
    pack = wdir / manifest["pack"]
    assert manifest["pack"] == "descent-0.1.0.tar"
    assert manifest["pack_sha256"] == hashlib.sha256(pack.read_bytes()).hexdigest()
    assert gzip.decompress((wdir / "descent-0.1.0.tar.gz").read_bytes()) == pack.read_bytes()
    # The wheel's package files, byte for byte, without bytecode or metadata (the snapshot has the
    # modules imported): every member a plain file in ustar's own format, the names worker.js reads.
    with zipfile.ZipFile(whl) as zf, tarfile.open(pack) as tar:
        members = tar.getmembers()
        expected = sorted(n for n in zf.namelist() if "__pycache__" not in n and ".dist-info/" not in n)
        assert [m.name for m in members] == expected
        assert all(m.isfile() and m.mtime == 0 and m.mode == 0o644 for m in members)
        assert all(tar.extractfile(m).read() == zf.read(m.name) for m in members)
    assert (pack.read_bytes()[257:263]) == b"ustar\x00"
    for f in runtime.PYODIDE_FILES:
        assert (pdir / f).read_bytes() == (PYODIDE / f).read_bytes()
    # The gzipped copies gunzip to the files (the wasm keeps its name in gzip/, where indexURL points).
    assert gzip.decompress((pdir / "gzip/pyodide.asm.wasm").read_bytes()) == (PYODIDE / "pyodide.asm.wasm").read_bytes()
    snap = pdir / runtime.SNAPSHOT_FILE
    assert gzip.decompress((pdir / (runtime.SNAPSHOT_FILE + ".gz")).read_bytes()) == snap.read_bytes()
    with zipfile.ZipFile(pdir / runtime.EMPTY_STDLIB) as zf:
        assert zf.namelist() == []
    # Pyodide's own request for the wasm (worker.js answers it with the wasm it compiled): the empty
    # module, magic number and version 1 (WebAssembly core spec, section 5.5.16).
    assert (pdir / "boot/pyodide.asm.wasm").read_bytes() == b"\0asm\1\0\0\0"
    # The worker's own code boots Pyodide from these files: every widget runs with the empty standard
    # library (the snapshot holds every module they import); the first import of another module of
    # the standard library loads the real zip once, and works.
    script = tmp_path / "boot.mjs"
    script.write_text(_WORKER_BOOT)
    code = _worker_source("function untar(", "}") + "\n" + _worker_source("function writeFiles(", "}")
    finder = _worker_source("import sys", "del _StdlibOnDemand")
    proc = subprocess.run([NODE, str(script), str(site), code, finder], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    from descent import tokenizer, widgets

    assert res["widgets"]["ok"] == dict.fromkeys(widgets.names(), True)
    # The snapshot was made after descent.widgets.warm: a widget's first run reads no file and
    # imports no module, but the tokenizer's table (widgets.NOT_WARMED says why).
    assert res["widgets"]["loaded"] == [f"open {tokenizer.DATA_FILE}"]
    # Red is hue 0, saturation 1, value 1 (colorsys's HSV: Smith 1978).
    assert (res["before"], res["absent"], res["after"], res["hsv"]) == (0, True, 1, [0.0, 1.0, 1.0])


def test_wheel_size_limit_and_bad_epoch(tmp_path, monkeypatch):
    # The real wheel is ~0.5 MB (mostly the SmolLM2 tokenizer table): a 1,000-byte limit must trip.
    monkeypatch.setattr(runtime, "MAX_WHEEL_BYTES", 1000)
    with pytest.raises(ValueError, match=r"over the 1,000-byte limit for the browser; largest files: descent/"):
        runtime.build_wheel(ROOT, tmp_path)
    assert not list(tmp_path.iterdir())  # nothing half-written left behind
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(ValueError, match="SOURCE_DATE_EPOCH must be a whole number of seconds, got 'yesterday'"):
        runtime.build_wheel(ROOT, tmp_path)


_SNAPSHOT_BOOT = """
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [dir, snap] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(dir + "/pyodide.mjs").href);
const py = await loadPyodide({ indexURL: dir + "/", _loadSnapshot: readFileSync(snap) });
console.log(JSON.stringify({
  sum: py.runPython("6 * 7"),
  executable: py.runPython("import sys; sys.executable"),
  preimported: py.runPython(`import sys; sorted(m for m in %s if m in sys.modules)`).toJs(),
}));
"""


@pytest.mark.slow
@pytest.mark.pyodide
@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.skipif(not (PYODIDE / "pyodide.mjs").is_file(), reason="node_modules/pyodide missing: run npm ci")
def test_snapshot_is_reproducible_and_boots(wheel, tmp_path):
    # Two roots, each with its own copy of the Pyodide files (real copies: make_snapshot resolves
    # symlinks) at different absolute paths and its own empty .cache/: two independent snapshots,
    # with the site's wheel (its widgets run once before the memory is saved: descent.widgets.warm).
    made, dirs = [], []
    for name in ("a", "another-place/b"):
        root = tmp_path / name
        src = root / "node_modules" / "pyodide"
        src.mkdir(parents=True)
        for f in runtime.PYODIDE_FILES:
            shutil.copyfile(PYODIDE / f, src / f)
        made.append(runtime.make_snapshot(root, root / "site", wheel))
        dirs.append(src)
    assert made[0].name == runtime.SNAPSHOT_FILE
    data = made[0].read_bytes()
    # No build-machine path inside (Emscripten named sys.executable after node's argv[1], the
    # Pyodide directory, before make_snapshot cut argv).
    leaks = [str(d) for d in (*dirs, PYODIDE, tmp_path) if str(d).encode() in data]
    assert leaks == [], "the snapshot holds build-machine paths"
    assert data == made[1].read_bytes(), "the snapshot must be byte-for-byte reproducible across directories"
    script = tmp_path / "boot.mjs"
    script.write_text(_SNAPSHOT_BOOT % json.dumps(list(runtime.SNAPSHOT_PREIMPORTS)))
    proc = subprocess.run([NODE, str(script), str(PYODIDE), str(made[0])], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout)
    assert res["sum"] == 42
    # Emscripten's browser default "./this.program" in Pyodide's working directory, not a build-machine path.
    assert res["executable"] == "/home/pyodide/this.program"
    # Restored, not re-imported: every pre-imported module is already in sys.modules (a plain boot of
    # Pyodide 314 lacks html, importlib.resources, pkgutil and tomllib: checked under node).
    assert res["preimported"] == sorted(runtime.SNAPSHOT_PREIMPORTS)


_SNAPSHOT_WHEEL_BOOT = """
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [dir, snap, whl] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(dir + "/pyodide.mjs").href);
const py = await loadPyodide({ indexURL: dir + "/", _loadSnapshot: readFileSync(snap) });
// The descent.widgets modules in memory before any file of the package exists here.
const before = JSON.parse(py.runPython(
  "import json, sys; json.dumps(sorted(m for m in sys.modules if m.startswith('descent.widgets')))"));
py.unpackArchive(new Uint8Array(readFileSync(whl)), "wheel");  // as the worker does after the boot
console.log(JSON.stringify({ before, out: py.runPython(`
import json, descent.widgets as w
json.loads(w.run_json("next_token_guess", "{}", ""))["ok"]`) }));
"""


@pytest.mark.slow
@pytest.mark.pyodide
@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.skipif(not (PYODIDE / "pyodide.mjs").is_file(), reason="node_modules/pyodide missing: run npm ci")
def test_snapshot_with_the_wheel_starts_with_the_widget_runtime_imported(tmp_path):
    # The site's snapshot (runtime.on_post_build passes the wheel): descent.widgets and every widget
    # module are in sys.modules as soon as the snapshot is restored (the first result on Part 0 then
    # takes 7-19 ms in the worker, not 107-164 ms), and once the worker has unpacked the same wheel,
    # a widget runs (the data files it reads come from the wheel).
    wheel = runtime.add_bytecode(ROOT, runtime.build_wheel(ROOT))
    snap = runtime.make_snapshot(ROOT, tmp_path, wheel)
    assert snap.read_bytes() != runtime.make_snapshot(ROOT, tmp_path / "plain").read_bytes()
    script = tmp_path / "boot.mjs"
    script.write_text(_SNAPSHOT_WHEEL_BOOT)
    proc = subprocess.run([NODE, str(script), str(PYODIDE), str(snap), str(wheel)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Every module of the package's widgets folder (the sources in this checkout).
    expected = sorted(["descent.widgets"] + [f"descent.widgets.{p.stem}" for p in (ROOT / "src/descent/widgets").glob("*.py")
                                             if p.stem != "__init__"])
    assert json.loads(proc.stdout) == {"before": expected, "out": True}


_BYTECODE_BOOT = """
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [dir, whl] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(dir + "/pyodide.mjs").href);
const py = await loadPyodide({ indexURL: dir + "/" });
py.unpackArchive(new Uint8Array(readFileSync(whl)), "wheel");
console.log(py.runPython(`
import importlib.util, json, os, sys
site = os.path.dirname(importlib.util.find_spec("descent").submodule_search_locations[0])
# Spoil the sources of two modules: one with bytecode in the wheel (units), one without (part0).
for rel in ("descent/units.py", "descent/widgets/part0.py"):
    with open(os.path.join(site, rel), "w") as f:
        f.write("raise ImportError('the source was read')\\\\n")
import descent.widgets
out = {"units_from_bytecode": "descent.units" in sys.modules}
try:
    import descent.widgets.part0
    out["part0"] = "imported"
except ImportError as e:
    out["part0"] = str(e)
json.dumps(out)
`));
"""


@pytest.mark.slow
@pytest.mark.pyodide
@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.skipif(not (PYODIDE / "pyodide.mjs").is_file(), reason="node_modules/pyodide missing: run npm ci")
def test_wheel_bytecode_is_pyodides_reproducible_and_used(wheel, tmp_path):
    # Two roots with their own .cache/: two independent compilations of the same wheel.
    made = []
    for name in ("a", "b"):
        root = tmp_path / name
        (root / "node_modules").mkdir(parents=True)
        (root / "node_modules" / "pyodide").symlink_to(PYODIDE)
        made.append(runtime.add_bytecode(root, wheel))
    assert made[0].name == wheel.name
    data = made[0].read_bytes()
    assert data == made[1].read_bytes(), "the wheel with bytecode must be byte-for-byte reproducible"
    assert str(tmp_path).encode() not in data and str(ROOT).encode() not in data
    with zipfile.ZipFile(made[0]) as zf, zipfile.ZipFile(wheel) as plain:
        names = zf.namelist()
        # Everything the plain wheel holds, byte for byte (RECORD aside, which gains the bytecode).
        record = "descent-0.1.0.dist-info/RECORD"
        assert all(zf.read(n) == plain.read(n) for n in plain.namelist() if n != record)
        pycs = sorted(n for n in names if n.endswith(".pyc"))
        rows = {r[0]: r for r in csv.reader(io.StringIO(zf.read(record).decode()))}
        for n in pycs:
            body = zf.read(n)
            digest = base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()
            assert rows[n][1:] == [f"sha256={digest}", str(len(body))], n
        assert set(rows) == set(names)
    # The widget runtime's own modules get bytecode (its import closure under Pyodide); a widget's
    # module does not (compiled when first used).
    stems = {n.split("/__pycache__/")[0] + "/" + n.rsplit("/", 1)[1].split(".")[0] for n in pycs}
    assert {"descent/widgets/__init__", "descent/widgets/views", "descent/units", "descent/params"} <= stems
    assert "descent/widgets/part0" not in stems
    assert all(".cpython-3" in n for n in pycs)
    script = tmp_path / "boot.mjs"
    script.write_text(_BYTECODE_BOOT)
    proc = subprocess.run([NODE, str(script), str(PYODIDE), str(made[0])], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    # units.py's source raises, yet the runtime imports: Pyodide ran the bytecode without reading it.
    assert res["units_from_bytecode"] is True
    # part0 has no bytecode: its (spoiled) source is what Python compiles.
    assert res["part0"] == "the source was read"
