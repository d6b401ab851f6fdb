"""The build's second process: SmolLM2's work done beside the pages, so that both cores compute.

Most of a clean build's time went to the real model: Part 2's perplexities of seven re-quantized
variants (:mod:`descent.trace.quality`), Part 3's token-level results (:mod:`descent.trace.measure`)
and the float32 copy of the GGUF. The site hook calls :func:`start` as the build begins; when the
cache lacks any of these it starts ``python -m descent.trace.prefetch``, which does :data:`JOBS` in
order: reads the model (each process reads the GGUF itself, 1.4 s here), takes its share of the
perplexities (:func:`descent.trace.quality.measure_share`: from the last variant back, while the
build takes them from the first), computes Part 3's results, and last writes the model's float32
copy for later builds (:func:`descent.trace.gguf_reader.save_float32`), which nobody waits for.
Each result goes through the function the page calls, so it is cached the same way (atomically,
under the same key: :func:`descent.trace.cache.cached_json`), and the two processes never compute
one entry twice: a process that needs an entry the other has claimed waits for it
(:func:`descent.trace.cache.wait_for`). If this process fails, or is killed, the build computes
what is missing itself, where it needs it, and so fails with the error it gives without this
process. :func:`stop` (after the build, and at exit) ends it and removes the build's claims.

Build side: standard library; the jobs import NumPy.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

from descent.trace import cache

__all__ = ["FINISH_S", "JOBS", "MAIN", "SIDE", "child_env", "end_helper", "needed", "running", "start", "stop"]

#: The two processes' names in their claims.
MAIN, SIDE = "main", "side"
#: What the second process does, in this order: read the model (each process reads the GGUF itself:
#: 1.4 s here, less than waiting for a copy), its share of the perplexities, Part 3's results, and
#: last the model's float32 copy for later builds (2.5 s of writing that nobody waits for).
JOBS = ("model", "quality", "measure", "save")
#: Seconds :func:`stop` gives the process to end after SIGTERM before killing it.
STOP_GRACE_S = 5.0
#: Seconds the build, once done, lets the process finish its last job (writing 540 MB: 2.5 s here),
#: and the file in the claims folder that says it has begun it.
FINISH_S, SAVING = 60.0, "saving"


class _Side:
    proc: subprocess.Popen | None = None
    folder: Path | None = None
    at_exit: bool = False  # stop() registered to run at exit


_side = _Side()


def needed() -> bool:
    """Whether the cache lacks any result of :data:`JOBS` for the GGUF in use (the model's float32
    copy, :func:`descent.trace.quality.measure`'s entry, :func:`descent.trace.measure.measurements`'s).

    Raises:
        FileNotFoundError: no GGUF (:func:`descent.trace.gguf_reader.gguf_path`).
    """
    from descent.trace import measure, quality
    from descent.trace.gguf_reader import CACHE_LAYOUT, file_sha256, gguf_path

    sha = file_sha256(gguf_path())
    root = cache.cache_dir()
    wanted = (root / "gguf" / f"{sha}-v{CACHE_LAYOUT}" / "index.json",
              root / "quality" / f"{quality._key(sha)}.json",
              root / "measurements" / f"serving-{measure._key(sha)}.json")
    return not all(p.is_file() for p in wanted)


def running() -> bool:
    """Whether the second process of this build is still computing."""
    return _side.proc is not None and _side.proc.poll() is None


#: glibc's allocator settings for the second process (``mallopt``; other C libraries ignore them):
#: keep freed memory for the next array instead of handing it back to the system and taking it
#: again, page by page. Each variant's forward pass and re-quantization allocate and free hundreds of
#: MB; measured here, the 7 perplexities one after another took 20.4 and 21.1 s (4.4 s of it in the
#: kernel) with glibc's defaults, 16.9 and 18.5 s (0.7 and 1.7 s) with these. The build's own process
#: keeps the defaults. Values the user has set are kept.
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(32 * 2**20), "MALLOC_TRIM_THRESHOLD_": str(4 * 2**30)}


def child_env() -> dict[str, str]:
    """This process's environment with ``PYTHONPATH`` led by the folder ``descent`` came from, so the
    second process runs the same package (a checkout's ``src``, an editable install, a copy), and
    :data:`MALLOC_ENV`."""
    import descent

    here = str(Path(descent.__file__).resolve().parent.parent)
    paths = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**MALLOC_ENV, **os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys([here, *paths]))}


def start() -> bool:
    """Start the second process when the cache lacks any of its results (True if started).

    Starts nothing when all are cached, or when the GGUF or the cache folder cannot be found or
    made: the build then meets that error where it needs the model, as it would without this."""
    stop()
    try:
        if not needed():
            return False
    except (OSError, ValueError):  # FileNotFoundError, CacheError: said by the page that needs it
        return False
    folder = Path(tempfile.mkdtemp(prefix="descent-build-"))
    with open(folder / "side.log", "wb") as log:
        proc = subprocess.Popen(_command(folder), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=child_env())
    _side.proc, _side.folder = proc, folder
    cache.share_work(folder, MAIN, lambda: proc.poll() is None, give_up=_end_process)
    if not _side.at_exit:
        atexit.register(stop)
        _side.at_exit = True
    return True


def _command(folder: Path) -> list[str]:
    """The second process's command line (:func:`main`)."""
    return [sys.executable, "-m", "descent.trace.prefetch", str(folder), str(os.getpid())]


def _end_process(proc: subprocess.Popen | None = None) -> None:
    proc = proc or _side.proc
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def stop(wait: float = 0.0) -> str:
    """End the second process and the sharing of work; remove the build's claims. A process at its
    last job, writing the model's float32 copy, is given up to ``wait`` seconds to finish it; one
    still computing what this build did not need (a build of a few pages) is terminated at once (its
    files are written whole or not at all).

    Returns "" when it was not started or ended well, else a line saying how it ended and the last
    line of its output (the build computed its share itself)."""
    cache.stop_sharing()
    proc, folder = _side.proc, _side.folder
    _side.proc = _side.folder = None
    if proc is None:
        return ""
    if wait > 0 and folder is not None and (folder / SAVING).exists():
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            pass
    return end_helper(proc, folder, "the build's second process (descent.trace.prefetch)",
                      "the build computed its share itself")


def end_helper(proc: subprocess.Popen, folder: Path | None, name: str, instead: str) -> str:
    """End a build helper process ``proc`` (SIGTERM, then SIGKILL after :data:`STOP_GRACE_S`) and
    remove its ``folder`` (claims and ``side.log``). Shared with :mod:`descent.site.figure_side`.

    Returns "" when it was still running or had exited with 0, else "``name`` ended with exit code
    N: <the last line of side.log>; ``instead``"."""
    code = proc.poll()
    _end_process(proc)
    note = ""
    if code not in (0, None):
        try:
            lines = (folder / "side.log").read_text(encoding="utf-8", errors="replace").strip().splitlines()
        except (OSError, TypeError):
            lines = []
        note = f"{name} ended with exit code {code}" + (f": {lines[-1]}" if lines else "") + f"; {instead}"
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
    return note


def _run_jobs(folder: Path) -> int:
    from descent.trace import measure, quality
    from descent.trace.gguf_reader import load_model, save_float32

    jobs = {"model": load_model, "quality": quality.measure_share, "measure": measure.measurements,
            "save": lambda: save_float32(load_model())}
    failed = 0
    for name in JOBS:
        if name == "save":
            (folder / SAVING).touch()
        try:
            jobs[name]()
        except Exception:  # noqa: BLE001 (the build computes it again where needed, and says what is wrong)
            traceback.print_exc()
            failed = 1
            if name == "model":
                break
    return failed


def main(argv: list[str] | None = None) -> int:
    """``python -m descent.trace.prefetch CLAIMS_FOLDER BUILD_PID``: compute :data:`JOBS`, sharing
    the claims in ``CLAIMS_FOLDER`` with the build process ``BUILD_PID`` (waiting on its claims while it
    lives). Exit 1 when a job failed."""
    folder, parent = (argv if argv is not None else sys.argv[1:])[:2]
    cache.share_work(Path(folder), SIDE, lambda: os.getppid() == int(parent))
    # Terminated by stop(): unwind, so that a half-written copy of the model is removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    return _run_jobs(Path(folder))


if __name__ == "__main__":
    sys.exit(main())
