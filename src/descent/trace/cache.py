"""The build's on-disk caches of work done with the real model, in one place.

Everything the build computes from SmolLM2 that takes seconds (the traces, Part 3's token-level
results, Part 2's perplexities, a file's sha256, the dequantized weights) is kept under
:func:`cache_dir` (``$DESCENT_CACHE``, else ``~/.cache/descent``), one folder per kind, one JSON
file per key. :func:`cached_json` reads a result back or computes and writes it (atomically: a
reader never sees half a file; a torn or unreadable file is computed again). Keys are made by the
callers (:func:`digest` of what the result depends on: the GGUF's sha256, a version, the
settings), so a change to any of them computes anew.

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["ENV_CACHE", "CacheError", "atomic_write_text", "cache_dir", "cached_json", "digest"]

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
    killed process) is computed again and replaced.
    """
    if not use_cache:
        return compute()
    path = cache_dir() / folder / name
    if path.is_file():
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            pass
    result = compute()
    atomic_write_text(path, json.dumps(result, ensure_ascii=False, indent=1))
    return result
