"""Part 3's measurements on the real model, taken on the machine that builds the site.

Four things are measured with SmolLM2-135M-Instruct (the Q4_1 GGUF, dequantized to float32, run by
the NumPy forward pass on one BLAS thread):

* ``prefill`` against ``decode``: tokens per second reading a prompt in one pass, and writing one
  token per pass with the KV cache;
* ``batched``: decode tokens per second at batch 1, 2, 4, 8 and 16 (:func:`forward_batch`: one
  read of each weight matrix per step, whatever the batch);
* ``constrained``: greedy decoding under a JSON-shaped pattern (:mod:`descent.trace.constrained`),
  with the unconstrained greedy reply to the same prompt beside it;
* ``speculative``: prompt-lookup drafting (:mod:`descent.trace.speculative`) on a copying task:
  acceptance, tokens per target pass, wall time, and whether the output equals plain greedy decoding.

Timings are the fastest of a few repeats (other jobs on a shared machine only ever slow a run
down) and depend on the machine: every result carries ``machine`` (CPU, cores, load average when
measured, NumPy and Python versions) and ``date``. The token-level results (the constrained
reply, the speculative acceptance) do not depend on the machine.

:func:`measurements` caches the result in ``cache_dir()/measurements/`` under a key made of the
GGUF's SHA-256, :data:`MEASURE_VERSION` and :data:`SETTINGS`, so the site's later builds read a
file. Bump :data:`MEASURE_VERSION` when the measuring code changes. ``python -m
descent.trace.measure`` prints a fresh measurement.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import sys
import tempfile
import time

import numpy as np

from descent import tokenizer
from descent.trace import constrained, speculative
from descent.trace.batched import forward_batch
from descent.trace.forward import KVCache, forward, generate
from descent.trace.gguf_reader import cache_dir, load_model
from descent.trace.record import MODEL_NAME, stop_ids

__all__ = ["MEASURE_VERSION", "SETTINGS", "machine", "measure", "measurements"]

#: Bump when what is measured, or how, changes: cached measurements are then taken again.
MEASURE_VERSION = 1

#: What is measured. Part of the cache key, so a change here measures again.
SETTINGS = {
    "text": (
        "The history of the harbour town begins with a few fishing huts on a sandy bay. Over three "
        "centuries the huts became a market, the market a port, and the port a city whose ships "
        "carried grain, timber and wool to every coast of the northern sea. "
    ),
    "prefill_tokens": 256,
    "decode_steps": 8,
    "batches": [1, 2, 4, 8, 16],
    "batch_context": 128,
    "batch_steps": 5,
    "repeats": 3,
    "constrained_prompt": "Describe a person as a JSON object with a name and an age.",
    "constrained_regex": r'\{"name": "[A-Z][a-z]{1,12}", "age": [1-9][0-9]?\}',
    "constrained_max_tokens": 40,
    "speculative_prompt": (
        "Copy this text exactly, word for word:\nThe old lighthouse keeper climbed the stairs every "
        "evening, lit the lamp, wound the clock and wrote the weather in his book. Then he sat by the "
        "window and watched the ships pass in the dark."
    ),
    "speculative_max_tokens": 64,
    "ngram_max": speculative.NGRAM_MAX,
    "draft_max": speculative.DRAFT_MAX,
}


def machine() -> dict:
    """Where a measurement runs: CPU model, logical cores, OS, load average, Python, NumPy."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.machine()}",
        "load_average": round(load, 2) if load is not None else None,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas_threads": 1,
    }


def _fastest(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _copy(cache: KVCache) -> KVCache:
    return KVCache(keys=[k.copy() for k in cache.keys], values=[v.copy() for v in cache.values])


def measure() -> dict:
    """Take every measurement now (about half a minute on a 2-core machine). See the module docstring."""
    s = SETTINGS
    model = load_model()
    tok = tokenizer.smollm2()
    ids = (tok.encode(s["text"] * 8))[: s["prefill_tokens"]]
    if len(ids) < s["prefill_tokens"]:
        raise ValueError("the measurement text is shorter than the prefill length")
    forward(model, ids[:16])  # warm up: pages the memory-mapped weights in

    pre = _fastest(lambda: forward(model, ids), s["repeats"])
    cache = KVCache()
    nxt = int(np.argmax(forward(model, ids, cache).logits[-1]))
    steps = []
    for _ in range(s["decode_steps"]):
        t = time.perf_counter()
        nxt = int(np.argmax(forward(model, [nxt], cache).logits[-1]))
        steps.append(time.perf_counter() - t)
    dec = min(steps)

    base = KVCache()
    forward(model, ids[: s["batch_context"]], base)
    batched = []
    for b in s["batches"]:
        caches = [_copy(base) for _ in range(b)]
        step = _fastest(lambda caches=caches, b=b: forward_batch(model, [nxt] * b, caches), s["batch_steps"])
        batched.append({"batch": b, "seconds_per_step": step, "tokens_per_s": b / step})

    chat = tok.encode(tok.apply_chat_template([{"role": "user", "content": s["constrained_prompt"]}]))
    free = [st.token for st in generate(chat, s["constrained_max_tokens"], stop_ids=stop_ids(), model=model)]
    cons = constrained.generate(chat, s["constrained_regex"], s["constrained_max_tokens"], model)
    cons["free_text"] = tok.decode([t for t in free if t not in stop_ids()])
    cons["prompt"] = s["constrained_prompt"]

    copy_ids = tok.encode(tok.apply_chat_template([{"role": "user", "content": s["speculative_prompt"]}]))
    t = time.perf_counter()
    greedy = [st.token for st in generate(copy_ids, s["speculative_max_tokens"], stop_ids=stop_ids(), model=model)]
    greedy_s = time.perf_counter() - t
    spec = speculative.speculative_greedy(copy_ids, s["speculative_max_tokens"], stop_ids(), model,
                                          s["ngram_max"], s["draft_max"])
    n = len(spec["tokens"])
    return {
        "version": MEASURE_VERSION,
        "model": {"name": MODEL_NAME, "file": model.meta.get("file"), "sha256": model.sha256},
        "machine": machine(),
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "prefill": {"tokens": len(ids), "seconds": pre, "tokens_per_s": len(ids) / pre},
        "decode": {"context": len(ids), "seconds_per_token": dec, "tokens_per_s": 1 / dec},
        "batched": batched,
        "batch_context": s["batch_context"],
        "constrained": cons,
        "speculative": {
            "prompt": s["speculative_prompt"],
            "text": tok.decode([t for t in spec["tokens"] if t not in stop_ids()]),
            "tokens": n,
            "passes": spec["passes"],
            "drafted": spec["drafted"],
            "accepted": spec["accepted"],
            "acceptance": spec["accepted"] / spec["drafted"] if spec["drafted"] else 0.0,
            "tokens_per_pass": n / spec["passes"],
            "equals_greedy": spec["tokens"] == greedy,
            "seconds_greedy": greedy_s,
            "seconds_speculative": spec["seconds"],
            "ngram_max": s["ngram_max"],
            "draft_max": s["draft_max"],
        },
    }


def _key(sha: str) -> str:
    blob = json.dumps({"gguf": sha, "version": MEASURE_VERSION, "settings": SETTINGS}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def measurements(use_cache: bool = True) -> dict:
    """:func:`measure`, read from / written to ``cache_dir()/measurements/serving-<key>.json``."""
    if not use_cache:
        return measure()
    path = cache_dir() / "measurements" / f"serving-{_key(load_model().sha256)}.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    result = measure()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, indent=1)
    os.replace(tmp, path)
    return result


if __name__ == "__main__":  # pragma: no cover
    json.dump(measure(), sys.stdout, indent=1, ensure_ascii=False)
    print()
