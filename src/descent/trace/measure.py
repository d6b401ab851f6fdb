"""Part 3's results on the real model: the token-level ones computed at build, the timings recorded.

SmolLM2-135M-Instruct (the Q4_1 GGUF, dequantized to float32, the NumPy forward pass):

* ``constrained``: greedy decoding under a JSON-shaped pattern (:mod:`descent.trace.constrained`),
  with the unconstrained greedy reply to the same prompt beside it;
* ``speculative``: prompt-lookup drafting (:mod:`descent.trace.speculative`) on a copying task:
  acceptance, tokens per target pass, and whether the output equals plain greedy decoding.

These do not depend on the machine: :func:`compute` runs them, and :func:`measurements` caches
them (:func:`descent.trace.cache.cached_json`, ``cache_dir()/measurements/serving-<key>.json``, the
key made of the GGUF's SHA-256, :data:`MEASURE_VERSION` and :data:`SETTINGS`).

The timings beside them (prefill and decode tokens/s, decode at batch 1 to 16, the speculative and
greedy replies' wall time) are never taken by a build: :func:`measurements` reads them from the
build machine's record (:func:`descent.recorded.measurement`, written by ``python -m
descent.trace.machine_record``), the same record Parts 0 and 4 read, and returns everything in one
dict. ``python -m descent.trace.measure`` prints it.
"""

from __future__ import annotations

import json
import sys

from descent import recorded, tokenizer
from descent.trace import constrained, speculative
from descent.trace.cache import cached_json, digest
from descent.trace.forward import generate
from descent.trace.gguf_reader import load_model
from descent.trace.record import MODEL_NAME, stop_ids

__all__ = ["BATCHES", "MEASURE_VERSION", "SETTINGS", "compute", "measurements", "timings"]

#: Bump when what is measured, or how, changes: cached measurements are then taken again.
MEASURE_VERSION = 2

#: What is measured. Part of the cache key, so a change here measures again.
SETTINGS = {
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


#: Sequences decoded together in the recorded batch sweep (batch 1 is ``decode``).
BATCHES = (1, 2, 4, 8, 16)


def compute() -> dict:
    """The token-level results now (about ten seconds here): ``{"version", "model", "constrained",
    "speculative"}``. Depends on the model and :data:`SETTINGS` only, not on the machine or the clock."""
    s = SETTINGS
    model = load_model()
    tok = tokenizer.smollm2()
    chat = tok.encode(tok.apply_chat_template([{"role": "user", "content": s["constrained_prompt"]}]))
    free = [st.token for st in generate(chat, s["constrained_max_tokens"], stop_ids=stop_ids(), model=model)]
    cons = constrained.generate(chat, s["constrained_regex"], s["constrained_max_tokens"], model)
    cons["free_text"] = tok.decode([t for t in free if t not in stop_ids()])
    cons["prompt"] = s["constrained_prompt"]

    copy_ids = tok.encode(tok.apply_chat_template([{"role": "user", "content": s["speculative_prompt"]}]))
    greedy = [st.token for st in generate(copy_ids, s["speculative_max_tokens"], stop_ids=stop_ids(), model=model)]
    spec = speculative.speculative_greedy(copy_ids, s["speculative_max_tokens"], stop_ids(), model,
                                          s["ngram_max"], s["draft_max"])
    n = len(spec["tokens"])
    return {
        "version": MEASURE_VERSION,
        "model": {"name": MODEL_NAME, "file": model.meta.get("file"), "sha256": model.sha256},
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
            "ngram_max": s["ngram_max"],
            "draft_max": s["draft_max"],
        },
    }


def timings() -> dict:
    """Part 3's timings, read from the build machine's record (nothing is timed):
    ``{"machine" (with the load average before recording), "date", "repeats", "statistic", "prefill",
    "decode", "batched", "batch_context", "seconds_greedy", "seconds_speculative", "wall_speedup"}``.

    The ratios the page prints come ready (:func:`descent.recorded.ratio`): ``prefill.speed_vs_decode``
    (prefill's tokens/s over decode's), each batch row's ``vs_batch_1`` and ``vs_batch_2`` (its
    ``tokens_per_s``, ``seconds_per_step`` and ``batch`` over batch 1's and batch 2's), and
    ``wall_speedup`` (greedy decoding's wall time over speculative decoding's)."""
    pre, dec = recorded.measurement("prefill"), recorded.measurement("decode")
    names = [_batch_name(b) for b in BATCHES]
    rows = [recorded.measurement(n) for n in names]

    def against(name: str, base: str) -> dict:
        return {"tokens_per_s": recorded.ratio(name, base), "seconds_per_step": recorded.ratio(name, base, "value"),
                "batch": recorded.ratio(name, base, "work")}

    return {
        "machine": {**pre.machine, "load_average": pre.load_average.get("before")},
        "date": pre.date,
        "repeats": pre.repeats,
        "statistic": pre.statistic,
        "prefill": {"tokens": int(pre.work), "seconds": pre.value, "tokens_per_s": pre.rate,
                    "speed_vs_decode": recorded.ratio("prefill", "decode")},
        "decode": {"context": int(pre.work), "seconds_per_token": dec.value, "tokens_per_s": dec.rate},
        "batched": [{"batch": int(r.work), "seconds_per_step": r.value, "tokens_per_s": r.rate,
                     "vs_batch_1": against(n, _batch_name(1)), "vs_batch_2": against(n, _batch_name(2))}
                    for n, r in zip(names, rows, strict=True)],
        "batch_context": int(pre.work),
        "seconds_greedy": recorded.measurement("greedy_reply").value,
        "seconds_speculative": recorded.measurement("speculative_reply").value,
        "wall_speedup": recorded.ratio("greedy_reply", "speculative_reply", "value"),
    }


def _batch_name(b: int) -> str:
    """The recording of the decode step at batch ``b`` (batch 1 is ``decode``)."""
    return "decode" if b == 1 else f"decode_batch_{b}"


def _key(sha: str) -> str:
    return digest({"gguf": sha, "version": MEASURE_VERSION, "settings": SETTINGS}, 32)


def measurements(use_cache: bool = True) -> dict:
    """:func:`compute` (cached in ``cache_dir()/measurements/serving-<key>.json``) with :func:`timings`
    merged in: the layout Part 3's values and figures read. Times nothing."""
    d = cached_json("measurements", f"serving-{_key(load_model().sha256)}.json", compute, use_cache)
    t = timings()
    return {
        **d,
        **{k: t[k] for k in ("machine", "date", "repeats", "statistic", "prefill", "decode", "batched",
                             "batch_context")},
        "speculative": {**d["speculative"], "seconds_greedy": t["seconds_greedy"],
                        "seconds_speculative": t["seconds_speculative"], "wall_speedup": t["wall_speedup"]},
    }


if __name__ == "__main__":  # pragma: no cover
    json.dump(measurements(), sys.stdout, indent=1, ensure_ascii=False)
    print()
