"""Record the build machine's timings once: ``python -m descent.trace.machine_record``.

Every timing the site prints (SmolLM2's prefill and decode tokens/s in Parts 0, 3 and 4, decode
at batch 1 to 16, speculative decoding's wall time, the float32 roofs of Part 4's measured
roofline) is taken here, by this one explicit command, and written to
``src/descent/data/build_machine.json`` (:data:`descent.recorded.MACHINE_FILE`), which is
committed. The site's build measures nothing: every page reads that record through
:func:`descent.recorded.measurement`, so two clean builds give identical bytes and the same
physical quantity (SmolLM2's prefill tokens/s on the build machine) is one number on every page.

What is timed (SmolLM2-135M-Instruct, the Q4_1 GGUF dequantized to float32, the site's NumPy forward
pass on one BLAS thread; :data:`REPEATS` runs of each, interleaved so that a busy minute slows every
workload alike, and the **median** kept):

* ``prefill``: one forward pass over :data:`descent.engine.SPEED_TEXT` (the text the reader's
  browser times in Part 0's load panel);
* ``decode`` and ``decode_batch_<b>``: :data:`descent.engine.SPEED_DECODE_STEPS` greedy decode
  steps after that prefill (:func:`descent.trace.batched.forward_batch`) for 1, 2, 4, 8 and 16
  sequences holding the same prompt; the value is the mean step time of a run. ``decode`` is batch 1;
* ``greedy_reply`` and ``speculative_reply``: Part 3's copying task written by plain greedy decoding
  and by prompt-lookup speculative decoding (:mod:`descent.trace.speculative`), prefill included;
* ``gemm``: one float32 product of two :data:`GEMM_N` x :data:`GEMM_N` matrices (2 n^3 FLOPs);
* ``stream``: one BLAS dot product over a float32 array of :data:`STREAM_BYTES` bytes (read once).

Each entry holds the median seconds of one run (``value``, unit ``s``), the work a run does
(``work`` in ``work_unit``: tokens, FLOP or bytes) and what was timed; the file holds the machine
(CPU, cores, system, Python, NumPy and its BLAS), the date, the 1-minute load average before and
after, the number of repeats and the statistic. Token-level results (the replies, acceptance)
do not depend on the machine and stay computed at build (:mod:`descent.trace.measure`).

Build side: imports NumPy. About three minutes on the 2-core build machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from descent import engine, recorded, tokenizer
from descent.trace import speculative
from descent.trace.batched import forward_batch
from descent.trace.blas import use_one_thread
from descent.trace.forward import KVCache, forward, generate
from descent.trace.gguf_reader import load_model
from descent.trace.measure import BATCHES, SETTINGS
from descent.trace.record import MODEL_NAME, stop_ids
from descent.units import format_number, format_time

__all__ = ["BATCHES", "FORMAT", "GEMM_N", "REPEATS", "STREAM_BYTES", "blas_library", "cpu_model",
           "machine", "main", "record", "write"]

#: Version of the file's layout (:func:`descent.recorded.measurements` refuses another).
FORMAT = recorded.MACHINE_FORMAT
#: Runs of every workload; the median is kept.
REPEATS = 5
#: Edge of the square float32 matrices multiplied for the arithmetic roof (2.1 GFLOP a product).
GEMM_N = 1024
#: Bytes of the float32 array read for the memory ceiling (256 MiB: far beyond any CPU cache).
STREAM_BYTES = 256 * 2**20
#: Part 3's copying task for speculative decoding (the prompt and the reply's length cap).
SPECULATIVE_PROMPT = SETTINGS["speculative_prompt"]
SPECULATIVE_MAX_TOKENS = SETTINGS["speculative_max_tokens"]


def cpu_model() -> str:
    """The CPU's name from /proc/cpuinfo ("model name"), else ``platform.processor()``, else "unknown"."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def blas_library() -> str:
    """NumPy's BLAS as "name version" (``numpy.show_config``), or "unknown"."""
    try:
        info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{info.get('name', 'unknown')} {info.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 (older NumPy, another layout: the name is only a label)
        return "unknown"


def _load() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def machine() -> dict:
    """Where the timings run: CPU model, logical cores, system, Python, NumPy, its BLAS and threads."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.machine()}",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": blas_library(),
        "blas_threads": 1 if use_one_thread() else os.environ.get("OPENBLAS_NUM_THREADS", "library default"),
    }


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _decode_steps(model, prompt: KVCache, first: int, batch: int, steps: int) -> float:
    """Mean seconds of one greedy decode step for ``batch`` sequences holding ``prompt``."""
    caches = [KVCache(keys=[k.copy() for k in prompt.keys], values=[v.copy() for v in prompt.values])
              for _ in range(batch)]
    tokens = [first] * batch
    total = 0.0
    for _ in range(steps):
        start = time.perf_counter()
        logits = forward_batch(model, tokens, caches)
        tokens = [int(i) for i in np.argmax(logits, axis=-1)]
        total += time.perf_counter() - start
    return total / steps


def _runs(repeats: int, gemm_n: int, stream_bytes: int, batches: tuple[int, ...]) -> tuple[dict[str, list[float]], dict[str, tuple[float, str, str]]]:
    """Every workload ``repeats`` times, interleaved: ``({name: [seconds, ...]}, {name: (work, unit, what)})``."""
    use_one_thread()
    model = load_model()
    tok = tokenizer.smollm2()
    ids = tok.encode(engine.SPEED_TEXT)
    steps = engine.SPEED_DECODE_STEPS
    copy_ids = tok.encode(tok.apply_chat_template([{"role": "user", "content": SPECULATIVE_PROMPT}]))
    stops = stop_ids()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((gemm_n, gemm_n), dtype=np.float32)
    b = rng.standard_normal((gemm_n, gemm_n), dtype=np.float32)
    x = np.ones(stream_bytes // 4, dtype=np.float32)
    np.dot(x, x)  # first touch: the pages are mapped before timing
    forward(model, ids[:4])  # warm up: pages the memory-mapped weights in

    prompt = KVCache()
    first = int(np.argmax(forward(model, ids, prompt).logits[-1]))
    greedy = [s.token for s in generate(copy_ids, SPECULATIVE_MAX_TOKENS, stop_ids=stops, model=model)]
    spec = speculative.speculative_greedy(copy_ids, SPECULATIVE_MAX_TOKENS, stops, model, SETTINGS["ngram_max"], SETTINGS["draft_max"])
    if spec["tokens"] != greedy:
        raise RuntimeError("speculative decoding did not reproduce greedy decoding: nothing recorded")
    n = len(ids)
    work = {
        "prefill": (n, "tokens", f"{MODEL_NAME} prefill: one forward pass over the {n}-token speed text "
                                 "(descent.engine.SPEED_TEXT)"),
        "greedy_reply": (len(greedy), "tokens", f"{MODEL_NAME} greedy decoding of Part 3's copying task, "
                                                f"{len(greedy)} tokens, prefill included"),
        "speculative_reply": (len(greedy), "tokens", f"{MODEL_NAME} prompt-lookup speculative decoding of the same "
                                                     f"task (the same {len(greedy)} tokens), prefill included"),
        "gemm": (2 * gemm_n**3, "FLOP", f"one float32 product of two {gemm_n} x {gemm_n} matrices (NumPy)"),
        "stream": (x.nbytes, "bytes", f"one BLAS dot product over a float32 array of {x.nbytes} bytes "
                                      "(read once)"),
    }
    for bt in batches:
        name = "decode" if bt == 1 else f"decode_batch_{bt}"
        who = "one sequence" if bt == 1 else f"{bt} sequences decoded together"
        work[name] = (bt, "tokens", f"{MODEL_NAME} decode step, {who}, mean of {steps} greedy steps after the "
                                    f"{n}-token speed-text prefill (context {n + 1} to {n + steps})")

    runs: dict[str, list[float]] = {k: [] for k in work}
    for _ in range(repeats):
        runs["prefill"].append(_timed(lambda: forward(model, ids, KVCache())))
        for bt in batches:
            runs["decode" if bt == 1 else f"decode_batch_{bt}"].append(_decode_steps(model, prompt, first, bt, steps))
        runs["greedy_reply"].append(_timed(
            lambda: list(generate(copy_ids, SPECULATIVE_MAX_TOKENS, stop_ids=stops, model=model))))
        runs["speculative_reply"].append(_timed(
            lambda: speculative.speculative_greedy(copy_ids, SPECULATIVE_MAX_TOKENS, stops, model, SETTINGS["ngram_max"], SETTINGS["draft_max"])))
        runs["gemm"].append(_timed(lambda: a @ b))
        runs["stream"].append(_timed(lambda: np.dot(x, x)))
    return runs, work


def record(repeats: int = REPEATS, *, gemm_n: int = GEMM_N, stream_bytes: int = STREAM_BYTES,
           batches: tuple[int, ...] = BATCHES) -> dict:
    """Time every workload now (see the module docstring) and return the record, JSON-ready.

    Args:
        repeats: runs of every workload (the median is kept).
        gemm_n, stream_bytes, batches: the sizes (tests use small ones; ``settings`` records them).
    """
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    if 1 not in batches:
        raise ValueError("the batches must include 1 (decode)")
    load_before = _load()
    runs, work = _runs(repeats, gemm_n, stream_bytes, tuple(batches))
    load_after = _load()
    model = load_model()
    return {
        "format": FORMAT,
        "model": {"name": MODEL_NAME, "file": model.meta.get("file"), "sha256": model.sha256},
        "machine": machine(),
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "load_average": {"before": load_before, "after": load_after},
        "repeats": repeats,
        "statistic": "median",
        "settings": {"prefill_tokens": int(work["prefill"][0]), "decode_steps": engine.SPEED_DECODE_STEPS,
                     "batches": list(batches), "gemm_n": gemm_n, "stream_bytes": int(work["stream"][0])},
        "measurements": {
            name: {"value": statistics.median(runs[name]), "unit": "s", "work": w, "work_unit": unit, "what": what,
                   "runs": [float(t) for t in runs[name]]}
            for name, (w, unit, what) in work.items()
        },
    }


def write(data: dict, path: Path) -> None:
    """Write the record as sorted, indented JSON with a final newline."""
    path.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """``python -m descent.trace.machine_record [--repeats N] [--out PATH]``."""
    ap = argparse.ArgumentParser(prog="python -m descent.trace.machine_record", description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=REPEATS, help=f"runs of each workload (default {REPEATS})")
    ap.add_argument("--out", type=Path, default=recorded.machine_path(),
                    help="where to write (default: the package's data/build_machine.json)")
    args = ap.parse_args(argv)
    data = record(args.repeats)
    write(data, args.out)
    for name, m in data["measurements"].items():
        print(f"{name.ljust(18)} {format_time(m['value'], 4)}  ({format_number(m['work'], 4, trim=True)} {m['work_unit']} a run)")
    print(f"written to {args.out} ({data['machine']['cpu']}, load {data['load_average']})")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
