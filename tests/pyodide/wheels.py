"""The pytest and hypothesis wheels for Pyodide, fetched from PyPI once and cached.

Pyodide's npm package holds its core files only, without pytest or hypothesis. ``wheels(cache,
python)`` returns one pure-Python wheel for each distribution in the dependency closure of
:data:`ROOTS` (requirements read from the wheels themselves, markers evaluated for Pyodide:
CPython ``python`` on emscripten). Each is pinned to the version installed in this venv, so
CPython and Pyodide run the same test tools, unless that version is not pure Python: then
:data:`PURE_FALLBACK` names the release used instead, and why. A missing wheel is fetched with
``pip download --no-deps --only-binary=:all:`` into ``cache`` (``.cache/pyodide-wheels``,
git-ignored); later runs need no network.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

#: What the core's tests import inside Pyodide; their dependencies follow.
ROOTS = ("pytest", "hypothesis")

#: Distributions whose installed version is not pure Python: the release Pyodide uses instead.
PURE_FALLBACK = {
    # hypothesis 6.170 (this venv's) imports a compiled Rust module, hypothesis._native (maturin;
    # float bit tricks and cathetus), and PyPI has no pure-Python or emscripten wheel of it. 6.155.7
    # is the newest release with a py3-none-any wheel (pip download --platform any --abi none
    # --implementation py "hypothesis<=6.170.17", 2026-11-30).
    "hypothesis": "6.155.7",
}


def marker_environment(python: str) -> dict[str, str]:
    """PEP 508 marker values for Pyodide running CPython ``python`` (e.g. "3.14.2") on emscripten."""
    env = default_environment()
    env.update(
        python_version=".".join(python.split(".")[:2]),
        python_full_version=python,
        implementation_name="cpython",
        platform_python_implementation="CPython",
        sys_platform="emscripten",
        platform_system="Emscripten",
        platform_machine="wasm32",
        os_name="posix",
    )
    return env


def is_pure(dist: metadata.Distribution) -> bool:
    """Whether an installed distribution came from a pure-Python wheel (every tag ``*-none-any``)."""
    text = dist.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Tag:")]
    return bool(tags) and all(t.endswith("-none-any") for t in tags)


def pinned_version(name: str) -> str:
    """The version of ``name`` to load in Pyodide: the installed one, or its :data:`PURE_FALLBACK`.

    Raises:
        RuntimeError: ``name`` is not installed, or is not pure Python and has no fallback.
    """
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        raise RuntimeError(f"{name} is not installed in this venv (it should come with the test extra)") from None
    if is_pure(dist):
        return dist.version
    if name in PURE_FALLBACK:
        return PURE_FALLBACK[name]
    raise RuntimeError(
        f"the installed {name} {dist.version} is not a pure-Python wheel, so it cannot load in Pyodide: "
        "name a pure-Python release in tests/pyodide/wheels.py PURE_FALLBACK"
    )


def _find(cache: Path, name: str, version: str) -> Path | None:
    for whl in sorted(cache.glob("*.whl")):
        wname, wversion, _, tags = parse_wheel_filename(whl.name)
        if wname == name and wversion == Version(version) and all(t.platform == "any" for t in tags):
            return whl
    return None


def _download(cache: Path, pins: dict[str, str], python: str) -> None:
    missing = [f"{n}=={v}" for n, v in pins.items() if _find(cache, n, v) is None]
    if not missing:
        return
    # --platform any --abi none: only a pure-Python wheel will do (a compiled one cannot load).
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
           "--platform", "any", "--abi", "none", "--implementation", "py",
           "--python-version", ".".join(python.split(".")[:2]),
           "--dest", str(cache), *missing]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(
            f"pip download of {', '.join(missing)} failed (PyPI is needed once; the wheels are then kept "
            f"in {cache}):\n{proc.stderr[-2000:]}"
        )


def _requires(whl: Path) -> list[str]:
    with zipfile.ZipFile(whl) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(zf.read(name).decode("utf-8"))
    return meta.get_all("Requires-Dist") or []


def wheels(cache: Path, python: str) -> dict[str, Path]:
    """``{distribution: wheel}`` for :data:`ROOTS` and everything they require under Pyodide.

    Raises:
        RuntimeError: a wheel could not be downloaded (no network and no cached copy), a needed
            distribution is not installed, or a pinned version does not meet a requirement.
    """
    cache.mkdir(parents=True, exist_ok=True)
    env = {**marker_environment(python), "extra": ""}
    found: dict[str, Path] = {}
    needs: list[Requirement] = []
    level = [canonicalize_name(n) for n in ROOTS]
    while level:
        pins = {n: pinned_version(n) for n in dict.fromkeys(level) if n not in found}
        _download(cache, pins, python)
        level = []
        for name, version in pins.items():
            whl = _find(cache, name, version)
            if whl is None:
                raise RuntimeError(f"pip download left no pure-Python wheel of {name}=={version} in {cache}")
            found[name] = whl
            for line in _requires(whl):
                req = Requirement(line)
                if req.marker is None or req.marker.evaluate(env):
                    needs.append(req)
                    level.append(canonicalize_name(req.name))
    for req in needs:
        version = parse_wheel_filename(found[canonicalize_name(req.name)].name)[1]
        if not req.specifier.contains(version, prereleases=True):
            raise RuntimeError(f"{req.name} {version} does not meet the requirement {req}")
    return dict(sorted(found.items()))
