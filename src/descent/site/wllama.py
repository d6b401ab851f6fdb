"""Build step for the model in the reader's browser: the engine (wllama) and the model file, copied into the site.

After MkDocs has written the site, :func:`on_post_build` (called from ``descent.site.hooks``) puts:

* ``assets/vendor/wllama/``: llama.cpp compiled to WebAssembly, from the npm package
  ``@wllama/wllama`` pinned in package-lock.json (:data:`ENGINE_FILES`: its self-contained ES
  module and the one ``wllama.wasm`` that runs single- or multi-threaded), and its licence;
* ``assets/models/``: the SmolLM2-135M-Instruct GGUF the build traces (:func:`descent.trace.gguf_reader.gguf_path`),
  cut into parts of at most :data:`descent.trace.gguf_split.MAX_PART_BYTES` in llama.cpp's
  split layout, and ``manifest.json`` (:func:`manifest`): the parts with their sizes and SHA-256,
  the engine's version and the settings ``llm-worker.js`` loads the model with.

Nothing is fetched from another origin: the reader's browser downloads these files from the site
only when the reader presses the load button. The parts are byte-identical across builds and
machines (a function of the GGUF alone) and cached in ``.cache/descent-model/``.

``descent/data/model_file.json`` (read by :func:`descent.recorded.model_file`) records what the
site ships, so pages and the Python widgets can state the download size without the GGUF (in the
reader's browser there is none). The build checks the fresh parts against it and fails when it is
stale: ``python -m descent.site.wllama`` rewrites it (``--check`` only compares).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from descent import engine
from descent.trace import gguf_split
from descent.trace.gguf_reader import GGUF_FILENAME, file_sha256, gguf_path

__all__ = [
    "ENGINE_FILES",
    "ENGINE_PACKAGE",
    "ENGINE_SETTINGS",
    "MODEL_DIR",
    "VENDOR_DIR",
    "copy_engine",
    "engine_version",
    "manifest",
    "model_file_record",
    "model_parts",
    "on_post_build",
]

#: The npm package of the engine (llama.cpp in WebAssembly), pinned in package-lock.json.
ENGINE_PACKAGE = "@wllama/wllama"
#: Its licence (the package's LICENCE file, copied beside it).
ENGINE_LICENSE = "MIT"
#: Files copied from ``node_modules/@wllama/wllama``: source path -> name in :data:`VENDOR_DIR`.
#: ``esm/index.js`` is one ES module (the engine's own worker code is inside it as text); since
#: wllama 3.1 one ``wllama.wasm`` serves single- and multi-threaded use (``guides/intro-v3.1.md``).
ENGINE_FILES = {"esm/index.js": "index.js", "esm/wasm/wllama.wasm": "wllama.wasm", "LICENCE": "LICENCE"}
#: Where the engine and the model go in the site (``llm-worker.js`` resolves the same paths).
VENDOR_DIR = Path("assets/vendor/wllama")
MODEL_DIR = Path("assets/models")
#: The manifest ``llm-worker.js`` reads, in :data:`MODEL_DIR`.
MANIFEST = "manifest.json"
#: The stem of the parts' names (``<stem>-00001-of-00002.gguf``).
PART_STEM = GGUF_FILENAME.removesuffix(".gguf")
#: Bump when the parts' layout changes (the cache key; the parts are then cut again).
SPLIT_LAYOUT = 1

#: How ``llm-worker.js`` loads the model (wllama ``LoadModelParams``, llama.cpp's names).
#: ``flash_attn`` off and a float32 KV cache keep the engine's arithmetic close to the build's
#: NumPy forward pass: with llama.cpp's defaults (flash attention on the CPU rounds queries to
#: float16, the KV cache is float16) "The capital of France is" ranks " La" fourth instead of sixth
#: (measured in Chromium 156, wllama 3.8.1; see DESIGN.md). ``n_gpu_layers`` 0: the CPU only, so
#: every reader's browser computes the same numbers (WebGPU would round differently again).
#: ``n_parallel`` 1: one request at a time, whose prompt stays cached for the next request.
ENGINE_SETTINGS = {
    "n_ctx": engine.CONTEXT_TOKENS,
    "flash_attn": False,
    "cache_type_k": {"fp32": "f32"}[engine.KV_CACHE],
    "cache_type_v": {"fp32": "f32"}[engine.KV_CACHE],
    "n_gpu_layers": 0,
    "n_parallel": 1,
}
#: Most threads the engine uses when the page is cross-origin isolated (else 1: a static host
#: without the COOP/COEP headers gives no SharedArrayBuffer, hence no threads).
MAX_THREADS = 4

#: ``descent/data/model_file.json``, in the source tree.
MODEL_FILE_PATH = Path(__file__).resolve().parents[1] / "data" / "model_file.json"


def engine_version(node_modules: Path) -> str:
    """The installed ``@wllama/wllama`` version (its package.json).

    Raises:
        FileNotFoundError: the package is not installed (run ``npm ci``).
    """
    pkg = node_modules / ENGINE_PACKAGE / "package.json"
    if not pkg.is_file():
        raise FileNotFoundError(f"{pkg} not found: run `npm ci` (package-lock.json pins {ENGINE_PACKAGE})")
    return json.loads(pkg.read_text(encoding="utf-8"))["version"]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_parts(root: Path, source: Path | None = None) -> list[Path]:
    """The GGUF's parts (:func:`descent.trace.gguf_split.write_parts`), cut once and cached in
    ``<root>/.cache/descent-model/<sha256 of the GGUF>-<SPLIT_LAYOUT>/``.

    Raises:
        FileNotFoundError: no GGUF (see :func:`descent.trace.gguf_reader.gguf_path`).
        ValueError: the file is not a GGUF the splitter reads.
    """
    source = Path(source) if source is not None else gguf_path()
    cache = root / ".cache" / "descent-model" / f"{file_sha256(source)[:16]}-{SPLIT_LAYOUT}"
    done = cache / "parts.json"
    if done.is_file():
        names = json.loads(done.read_text())
        if all((cache / n).is_file() for n in names):
            return [cache / n for n in names]
    paths = gguf_split.write_parts(source, cache, PART_STEM)
    done.write_text(json.dumps([p.name for p in paths]))
    return paths


def model_file_record(root: Path, node_modules: Path, source: Path | None = None) -> dict:
    """What ``descent/data/model_file.json`` must hold for this GGUF and this engine (see the module docstring)."""
    source = Path(source) if source is not None else gguf_path()
    parts = model_parts(root, source)
    return {
        "file": GGUF_FILENAME,
        "bytes": source.stat().st_size,
        "sha256": file_sha256(source),
        "max_part_bytes": gguf_split.MAX_PART_BYTES,
        "parts": [{"name": p.name, "bytes": p.stat().st_size, "sha256": _sha256(p)} for p in parts],
        "engine": {"package": ENGINE_PACKAGE, "version": engine_version(node_modules), "license": ENGINE_LICENSE},
    }


def _dumps(record: dict) -> str:
    return json.dumps(record, indent=1, sort_keys=True) + "\n"


def manifest(record: dict) -> dict:
    """``assets/models/manifest.json``: the parts to download (names relative to the manifest), their
    sizes and SHA-256, the engine and the settings :data:`ENGINE_SETTINGS` and :data:`MAX_THREADS`."""
    return {
        "file": record["file"],
        "bytes": record["bytes"],
        "sha256": record["sha256"],
        "parts": record["parts"],
        "engine": record["engine"],
        "settings": ENGINE_SETTINGS,
        "max_threads": MAX_THREADS,
    }


def _copy(src: Path, target: Path) -> None:
    """Copy unless ``target`` already holds the same bytes (a rebuild into the same site)."""
    if target.is_file() and target.stat().st_size == src.stat().st_size and target.read_bytes() == src.read_bytes():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, target)


def copy_engine(node_modules: Path, dest: Path) -> list[Path]:
    """Copy :data:`ENGINE_FILES` from ``node_modules/@wllama/wllama`` into ``dest``.

    Raises:
        FileNotFoundError: a file is missing (run ``npm ci``).
    """
    src = node_modules / ENGINE_PACKAGE
    missing = [f for f in ENGINE_FILES if not (src / f).is_file()]
    if missing:
        raise FileNotFoundError(f"node_modules/{ENGINE_PACKAGE} lacks {', '.join(missing)}: run `npm ci`")
    out = []
    for f, name in ENGINE_FILES.items():
        _copy(src / f, dest / name)
        out.append(dest / name)
    return out


def on_post_build(config: Any) -> None:
    """MkDocs ``on_post_build``: write the engine, the model's parts and the manifest into the site.

    Raises:
        FileNotFoundError: node_modules or the GGUF is missing.
        RuntimeError: ``descent/data/model_file.json`` does not describe these parts and this engine
            (the message says how to rewrite it).
    """
    from descent.site.runtime import project_root

    root = project_root(config)
    site = Path(config["site_dir"])
    node_modules = root / "node_modules"
    record = model_file_record(root, node_modules)
    recorded = MODEL_FILE_PATH.read_text(encoding="utf-8") if MODEL_FILE_PATH.is_file() else ""
    if recorded != _dumps(record):
        raise RuntimeError(
            f"{MODEL_FILE_PATH.name} does not describe the model file and engine this build ships (the GGUF or "
            f"{ENGINE_PACKAGE} changed): run `python -m descent.site.wllama` and commit src/descent/data/model_file.json"
        )
    copy_engine(node_modules, site / VENDOR_DIR)
    for p in model_parts(root):
        _copy(p, site / MODEL_DIR / p.name)
    (site / MODEL_DIR / MANIFEST).write_text(_dumps(manifest(record)), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """``python -m descent.site.wllama [--check]``: write (or compare) ``descent/data/model_file.json``."""
    from descent.site.runtime import project_root

    ap = argparse.ArgumentParser(prog="python -m descent.site.wllama", description=main.__doc__)
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 when the file is stale")
    args = ap.parse_args(argv)
    root = project_root()
    text = _dumps(model_file_record(root, root / "node_modules"))
    if args.check:
        same = MODEL_FILE_PATH.is_file() and MODEL_FILE_PATH.read_text(encoding="utf-8") == text
        print(f"{MODEL_FILE_PATH}: {'up to date' if same else 'STALE: run python -m descent.site.wllama'}")
        return 0 if same else 1
    MODEL_FILE_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {MODEL_FILE_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
