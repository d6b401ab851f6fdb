"""The build's on-disk caches of work done with the real model, in one place.

Everything the build computes from SmolLM2 that takes seconds (the traces, Part 3's token-level
results, Part 2's perplexities, a file's sha256, the dequantized weights) is kept under
:func:`cache_dir` (``$DESCENT_CACHE``, else ``~/.cache/descent``), one folder per kind, one JSON
file per key. :func:`cached_json` reads a result back or computes and writes it (atomically: a
reader never sees half a file; a torn or unreadable file is computed again). Keys are made by the
callers (:func:`digest` of what the result depends on: the GGUF's sha256, a version, the
settings), so a change to any of them computes anew.

Two processes can share the work of one build (:mod:`descent.trace.prefetch`: the build starts a
side process, so both cores compute). Each entry is then computed once: before computing it, a
process *claims* it (:func:`claim`: a file made with ``O_EXCL`` in the build's own claims folder,
so claims never outlive the build); a process that finds it claimed by the other waits for it
(:func:`wait_for`) until the file is there, the claim is released (the computation raised), or
the other process has ended, and computes it itself when it is still missing. So a failure in the
other process gives the error computing it here gives; nothing waits on a process that is gone.

Timings are not cached here: the build measures nothing. They are recorded once in
``descent/data/build_machine.json`` by ``python -m descent.trace.machine_record``
(:func:`descent.recorded.measurement`).

Build side: standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ENV_CACHE", "CacheError", "atomic_write_text", "cache_dir", "cached_json", "claim", "digest",
           "release", "share_work", "sharing", "stop_sharing", "wait_for"]

#: Environment variable naming the cache directory.
ENV_CACHE = "DESCENT_CACHE"


class CacheError(ValueError):
    """The cache directory cannot be made or written: the message says which and how to fix it."""


def cache_dir() -> Path:
    """Cache directory: ``$DESCENT_CACHE`` if set, else ``~/.cache/descent``. Created on demand.

    Raises:
        CacheError: it cannot be made (a regular file is in the way, no permission), naming the
            path and how to fix it.
    """
    given = os.environ.get(ENV_CACHE)
    path = Path(given or Path.home() / ".cache" / "descent")
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not path.is_dir():
            raise NotADirectoryError(20, "not a directory", str(path))
    except OSError as e:
        what = "a file is in the way" if isinstance(e, (FileExistsError, NotADirectoryError)) else e.strerror
        source = f"{ENV_CACHE}={given}" if given else f"the cache directory {path}"
        fix = (f"set {ENV_CACHE} to a directory you can write, or unset it to use ~/.cache/descent" if given
               else f"remove what is in the way, or set {ENV_CACHE} to a directory you can write")
        raise CacheError(f"{source}: cannot make the cache directory ({what}); {fix}") from None
    return path


def digest(obj: Any, chars: int = 64) -> str:
    """The first ``chars`` hex digits of sha256 over ``obj`` as sorted-key JSON."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode("utf-8")).hexdigest()[:chars]


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file in its folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cached_json(folder: str, name: str, compute: Callable[[], Any], use_cache: bool = True) -> Any:
    """``cache_dir()/folder/name`` read as JSON, or ``compute()`` written there and returned.

    ``use_cache=False`` computes and writes nothing. A file that is not valid JSON (torn by a
    killed process) is computed again and replaced. While another process shares the build's work
    (:func:`share_work`), an entry it has claimed is waited for, not computed twice (:func:`wait_for`).
    """
    if not use_cache:
        return compute()
    path = cache_dir() / folder / name
    found, value = _read_json(path)
    if found:
        return value
    if not claim(path):  # the other process is computing it
        wait_for(path)
        found, value = _read_json(path)
        if found:
            return value
    try:
        value = compute()
        atomic_write_text(path, json.dumps(value, ensure_ascii=False, indent=1))
    finally:
        release(path)
    return value


def _read_json(path: Path) -> tuple[bool, Any]:
    """``(True, value)`` for a file that holds JSON, else ``(False, None)`` (missing, or torn)."""
    if path.is_file():
        try:
            return True, json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            pass
    return False, None


# -- one build's work shared by two processes ------------------------------------------------------

#: Seconds a process waits for an entry the other one claimed before computing it itself (the
#: longest entry, Part 2's perplexities, takes about half a minute here).
SHARE_WAIT_S = 900.0
#: Seconds between looks at a claimed entry.
_POLL_S = 0.02


@dataclass
class _Share:
    folder: Path  # the build's claims
    role: str  # this process's name in its claims
    other_alive: Callable[[], bool]
    give_up: Callable[[], None] | None  # called when a wait times out


_share: _Share | None = None


def share_work(folder: Path, role: str, other_alive: Callable[[], bool],
               give_up: Callable[[], None] | None = None) -> None:
    """From now on, claim entries in ``folder`` (one per build, made by the build) as ``role``
    (``"main"`` or ``"side"``); ``other_alive()`` says whether the other process still runs;
    ``give_up()`` is called when a wait for it times out (then this process computes alone)."""
    global _share
    _share = _Share(Path(folder), role, other_alive, give_up)


def sharing() -> bool:
    """Whether another process shares this one's work (:func:`share_work`)."""
    return _share is not None


def stop_sharing() -> None:
    """Compute alone again: claims are no longer made or honoured."""
    global _share
    _share = None


def _claim_file(share: _Share, path: Path) -> Path:
    return share.folder / (digest(str(path), 32) + ".claim")


def claim(path: Path) -> bool:
    """Whether this process is to compute the entry at ``path``: True when no other process shares
    the work, when this process claimed it already, or when it makes the claim now; False when the
    other process holds it."""
    share = _share
    if share is None:
        return True
    f = _claim_file(share, path)
    try:
        fd = os.open(f, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        try:
            return f.read_text(encoding="utf-8") == share.role
        except OSError:  # released between the two calls: try again
            return claim(path)
    except OSError:  # the claims folder is gone (the build is over): work alone
        return True
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(share.role)
    return True


def release(path: Path) -> None:
    """Drop this process's claim on ``path`` (its file is written, or computing it failed)."""
    share = _share
    if share is None:
        return
    f = _claim_file(share, path)
    try:
        if f.read_text(encoding="utf-8") == share.role:
            f.unlink()
    except OSError:
        pass


def wait_for(path: Path, timeout: float | None = None) -> bool:
    """Wait while the other process holds the claim on ``path``: until the file exists (True), the
    claim is released, the other process has ended, or ``timeout`` seconds (default
    :data:`SHARE_WAIT_S`) have passed (False: the caller computes it; after a timeout this process
    stops sharing and calls the ``give_up`` given to :func:`share_work`)."""
    share = _share
    if share is None:
        return path.is_file()
    f = _claim_file(share, path)
    end = time.monotonic() + (SHARE_WAIT_S if timeout is None else timeout)
    while not path.is_file():
        if not f.exists() or not share.other_alive():
            return path.is_file()
        if time.monotonic() > end:
            stop_sharing()
            if share.give_up is not None:
                share.give_up()
            return path.is_file()
        time.sleep(_POLL_S)
    return True
