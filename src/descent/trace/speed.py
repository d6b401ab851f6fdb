"""The build machine's speed on the work the reader's browser times, for the two to be shown side by side.

The load panel (:mod:`descent.widgets.model`) has the engine in the reader's browser time one
prefill of :data:`descent.engine.SPEED_TEXT` and :data:`descent.engine.SPEED_DECODE_STEPS` decode
steps. :func:`measure` times the same work on the machine that builds the site, with the site's own
NumPy forward pass (:func:`descent.trace.forward.forward`, float32 weights dequantized from the same
GGUF, one BLAS thread): the same tokens, another engine and another machine.

Timings are the fastest of :data:`REPEATS` runs (other jobs on a shared machine only slow a run
down) and carry where and when they were taken (:func:`descent.trace.measure.machine`, Part 3's). :func:`build_speed` caches the
result in ``cache_dir()/speed/`` under a key of the GGUF's SHA-256 and :data:`SPEED_VERSION`, so
later builds read a file; bump the version when the measuring code changes.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import tempfile
import time

import numpy as np

from descent import engine, tokenizer
from descent.trace.blas import use_one_thread
from descent.trace.forward import KVCache, forward
from descent.trace.gguf_reader import cache_dir, load_model
from descent.trace.measure import machine

__all__ = ["REPEATS", "SPEED_VERSION", "build_speed", "measure"]

#: Bump when what is measured, or how, changes: cached measurements are then taken again.
SPEED_VERSION = 1
#: Runs of each measurement; the fastest is kept.
REPEATS = 3


def measure() -> dict:
    """Time a prefill of :data:`descent.engine.SPEED_TEXT` and :data:`descent.engine.SPEED_DECODE_STEPS`
    greedy decode steps after it, now (a few seconds).

    Returns:
        ``{"version", "model": {"sha256"}, "machine", "date", "prefill": {"tokens", "seconds",
        "tokens_per_s"}, "decode": {"tokens", "seconds_per_token", "tokens_per_s"}}``; the decode
        rate is one over the fastest step.
    """
    use_one_thread()
    model = load_model()
    ids = tokenizer.smollm2().encode(engine.SPEED_TEXT)
    forward(model, ids[:4])  # warm up: pages the memory-mapped weights in
    prefill = float("inf")
    decode = float("inf")
    for _ in range(REPEATS):
        cache = KVCache()
        t = time.perf_counter()
        nxt = int(np.argmax(forward(model, ids, cache).logits[-1]))
        prefill = min(prefill, time.perf_counter() - t)
        for _ in range(engine.SPEED_DECODE_STEPS):
            t = time.perf_counter()
            nxt = int(np.argmax(forward(model, [nxt], cache).logits[-1]))
            decode = min(decode, time.perf_counter() - t)
    return {
        "version": SPEED_VERSION,
        "model": {"sha256": model.sha256},
        "machine": machine(),
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "prefill": {"tokens": len(ids), "seconds": prefill, "tokens_per_s": len(ids) / prefill},
        "decode": {"tokens": engine.SPEED_DECODE_STEPS, "seconds_per_token": decode, "tokens_per_s": 1 / decode},
    }


def _key(sha: str) -> str:
    blob = json.dumps({"gguf": sha, "version": SPEED_VERSION, "text": engine.SPEED_TEXT,
                       "steps": engine.SPEED_DECODE_STEPS}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def build_speed(use_cache: bool = True) -> dict:
    """:func:`measure`, read from (or written to) ``cache_dir()/speed/speed-<key>.json``."""
    if not use_cache:
        return measure()
    path = cache_dir() / "speed" / f"speed-{_key(load_model().sha256)}.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    result = measure()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, path)
    return result
