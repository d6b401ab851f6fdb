"""The built wheel in Pyodide (npm package, under Node) and the core-only import rule.

The browser runs ``descent.widgets`` from the wheel that ``descent.site.runtime`` writes into the
site; these tests build that same wheel and load it the way ``worker.js`` does
(``pyodide.unpackArchive(bytes, "wheel")``), with Node's Buffer wrapped in a Uint8Array.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from descent.site import runtime

ROOT = Path(__file__).resolve().parents[1]
PYODIDE = ROOT / "node_modules" / "pyodide"
NODE = shutil.which("node")

#: Build-side parts of the package, allowed to import anything (DESIGN.md, "the core rule").
BUILD_SIDE = ("descent/formulas.py", "descent/plotting.py", "descent/trace/", "descent/site/")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return runtime.build_wheel(ROOT, tmp_path_factory.mktemp("wheel"))


def _core_modules(whl: Path) -> dict[str, str]:
    with zipfile.ZipFile(whl) as zf:
        return {
            n: zf.read(n).decode()
            for n in zf.namelist()
            if n.startswith("descent/") and n.endswith(".py") and not n.startswith(BUILD_SIDE)
        }


def test_wheel_is_deterministic_and_complete(wheel, tmp_path, monkeypatch):
    again = runtime.build_wheel(ROOT, tmp_path)
    assert again.read_bytes() == wheel.read_bytes()
    assert wheel.name == "descent-0.1.0-py3-none-any.whl"  # version from pyproject.toml
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        assert "descent/widgets/__init__.py" in names and "descent/widgets/views.py" in names
        assert "descent/catalog/models.toml" in names  # package data ships too
        assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
        record = zf.read("descent-0.1.0.dist-info/RECORD").decode().splitlines()
        assert len(record) == len(names)  # every entry, RECORD itself included
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}  # no SOURCE_DATE_EPOCH
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # 2023-11-14 22:13:20 UTC
    with zipfile.ZipFile(runtime.build_wheel(ROOT, tmp_path / "e")) as zf:
        assert {i.date_time for i in zf.infolist()} == {(2023, 11, 14, 22, 13, 20)}


def test_core_modules_import_only_stdlib_and_descent(wheel):
    allowed = set(sys.stdlib_module_names) | {"descent", "__future__"}
    bad = []
    core = _core_modules(wheel)
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
@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.skipif(not (PYODIDE / "pyodide.mjs").is_file(), reason="node_modules/pyodide missing: run npm ci")
def test_widgets_run_in_pyodide(wheel, tmp_path):
    import descent.widgets as w

    script = tmp_path / "run.mjs"
    script.write_text(_SCRIPT)
    modules = sorted(
        n[:-3].replace("/", ".").removesuffix(".__init__") for n in _core_modules(wheel)
    )
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
    assert res["bad"] == {"ok": False, "field": "context", "message": "Context must be 1 to 10,000,000 tokens, got -3"}
    assert res["nan"] == {"ok": False, "field": "layers", "message": "Layers must be a number from 1 to 200 layers"}
    assert res["numpy_loaded"] is False
    assert res["import_errors"] == {}, res["import_errors"]


def test_on_post_build_writes_wheel_manifest_and_pyodide(tmp_path):
    if not (PYODIDE / "pyodide.mjs").is_file():
        pytest.skip("node_modules/pyodide missing: run npm ci")
    site = tmp_path / "site"
    runtime.on_post_build({"site_dir": str(site), "config_file_path": str(ROOT / "mkdocs.yml")})
    manifest = json.loads((site / "assets/descent/wheels/manifest.json").read_text())
    whl = site / "assets/descent/wheels" / manifest["wheel"]
    assert whl.is_file() and manifest["bytes"] == whl.stat().st_size and len(manifest["sha256"]) == 64
    for f in runtime.PYODIDE_FILES:
        assert (site / "assets/pyodide" / f).read_bytes() == (PYODIDE / f).read_bytes()
    assert (site / "assets/pyodide" / runtime.SNAPSHOT_FILE).stat().st_size > 0


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
  preimported: py.runPython(`import sys; sorted(m for m in %s if m in sys.modules)`).toJs(),
}));
"""


@pytest.mark.slow
@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.skipif(not (PYODIDE / "pyodide.mjs").is_file(), reason="node_modules/pyodide missing: run npm ci")
def test_snapshot_is_reproducible_and_boots(tmp_path):
    # Two roots sharing node_modules, each with its own empty .cache/: two independent snapshots.
    made = []
    for name in ("a", "b"):
        root = tmp_path / name
        root.mkdir()
        (root / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
        made.append(runtime.make_snapshot(root, root / "site"))
    assert made[0].name == runtime.SNAPSHOT_FILE
    assert made[0].read_bytes() == made[1].read_bytes(), "the snapshot must be byte-for-byte reproducible"
    script = tmp_path / "boot.mjs"
    script.write_text(_SNAPSHOT_BOOT % json.dumps(list(runtime.SNAPSHOT_PREIMPORTS)))
    proc = subprocess.run([NODE, str(script), str(PYODIDE), str(made[0])], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout)
    assert res["sum"] == 42
    # Restored, not re-imported: every pre-imported module is already in sys.modules (a plain boot of
    # Pyodide 314 lacks html, importlib.resources, pkgutil and tomllib: checked under node).
    assert res["preimported"] == sorted(runtime.SNAPSHOT_PREIMPORTS)
