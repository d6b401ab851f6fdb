"""The build machine's own roofline, with SmolLM2's real prefill and decode placed on it (Part 4).

Nothing is timed here. The timings are the build machine's record
(:func:`descent.recorded.machine_record`, written by ``python -m descent.trace.machine_record``):

* **Peak arithmetic** (``gemm``): the median float32 product of two square matrices with NumPy
  (``2 n^3`` FLOPs each).
* **Read bandwidth** (``stream``): the median BLAS dot product over a float32 array far larger than
  the CPU's caches (each pass reads the array once).
* **SmolLM2-135M-Instruct** (``prefill`` and ``decode``): the same prefill of the speed text and the
  same decode steps after it that Parts 0 and 3 print, so the three pages show one number each.
  Their FLOPs and bytes are the site's own counts for the catalog row ``smollm2-135m`` at FP32
  weights and an FP32 KV cache (the step model, :func:`descent.step.cost`), so the measured points
  sit where the site's arithmetic says the work is.

Everything ran with NumPy's BLAS on one thread, as the trace does: the roofline is one core's.
:func:`from_record` is the page's view of the committed record; :func:`measure` times this
computer now through the same recorder (for the notebook's reader who wants their own machine).

Build side: imports NumPy (through the recorder, only when :func:`measure` is called).
"""

from __future__ import annotations

import statistics

from descent import recorded, step
from descent.catalog import model as catalog_model
from descent.scenario import Scenario

__all__ = ["MODEL_ID", "PRECISION", "from_record", "layout", "measure"]

#: The catalog row of the model the trace runs.
MODEL_ID = "smollm2-135m"
#: Precision of the NumPy forward pass's weights and KV cache (dequantized to float32).
PRECISION = "fp32"


def layout(data: dict) -> dict:
    """Part 4's view of a machine record (``recorded.machine_record()``'s layout).

    Returns a JSON-ready dict: ``machine`` (cpu, cores, blas_threads, numpy, python, ...),
    ``measured_at`` (UTC date), ``repeats``, ``gemm`` (n, seconds, flops_per_s), ``stream`` (bytes,
    seconds, bytes_per_s), ``ridge`` (FLOP per byte), ``prefill`` and ``decode`` (seconds, FLOPs, bytes,
    intensity, attained FLOP/s, tokens/s; decode also its share of the bandwidth bound). Units: FLOP,
    bytes, seconds.
    """
    m = catalog_model(MODEL_ID)
    ms, st = data["measurements"], data["settings"]
    gemm, stream, pre, dec = ms["gemm"], ms["stream"], ms["prefill"], ms["decode"]
    gemm_flops = gemm["work"] / gemm["value"]
    bandwidth = stream["work"] / stream["value"]
    tokens, steps = st["prefill_tokens"], st["decode_steps"]
    # The step model's counts (descent.step) for the measured work: the prompt in one pass, then
    # decode steps with tokens .. tokens + steps - 1 tokens cached.
    sc = Scenario(model=m, weights=PRECISION, kv=PRECISION, context=tokens)
    pre_cost = step.cost(sc, prefill_spans=[(0, tokens)])
    pre_flops, pre_bytes = pre_cost.flops, pre_cost.bytes
    decs = [step.cost(sc, decode_contexts=[c]) for c in range(tokens, tokens + steps)]
    dec_flops = statistics.fmean(c.flops for c in decs)
    dec_bytes = statistics.fmean(c.bytes for c in decs)
    dec_s = dec["value"]
    bound_tps = bandwidth / dec_bytes
    return {
        "machine": data["machine"],
        "measured_at": data["date"],
        "repeats": data["repeats"],
        "gguf_sha256": data["model"]["sha256"],
        "gemm": {"n": st["gemm_n"], "repeats": data["repeats"], "seconds": gemm["value"], "flops_per_s": gemm_flops},
        "stream": {"bytes": stream["work"], "repeats": data["repeats"], "seconds": stream["value"],
                   "bytes_per_s": bandwidth},
        "ridge": gemm_flops / bandwidth,
        "prefill": {"tokens": tokens, "seconds": pre["value"], "flops": pre_flops, "bytes": pre_bytes,
                    "intensity": pre_flops / pre_bytes, "flops_per_s": pre_flops / pre["value"],
                    "tokens_per_s": tokens / pre["value"], "share_of_peak": pre_flops / pre["value"] / gemm_flops},
        "decode": {"steps": steps, "context_from": tokens + 1, "context_to": tokens + steps,
                   "seconds_per_step": dec_s, "flops_per_step": dec_flops, "bytes_per_step": dec_bytes,
                   "intensity": dec_flops / dec_bytes, "flops_per_s": dec_flops / dec_s, "tokens_per_s": 1 / dec_s,
                   "bandwidth_bound_tokens_per_s": bound_tps, "share_of_bandwidth_bound": (1 / dec_s) / bound_tps},
    }


def from_record() -> dict:
    """The build machine's roofline and SmolLM2 on it, from the committed record (times nothing)."""
    return layout(recorded.machine_record())


def measure(repeats: int = 3, **sizes) -> dict:
    """This computer's roofline and SmolLM2 on it, timed now (``repeats`` runs each, the median;
    about a minute), in :func:`layout`'s form. Stores nothing. ``sizes``: ``gemm_n``,
    ``stream_bytes``, ``batches`` of :func:`descent.trace.machine_record.record`."""
    from descent.trace.machine_record import record

    return layout(record(repeats, **{"batches": (1,), **sizes}))


if __name__ == "__main__":
    import json

    print(json.dumps(from_record(), indent=1, sort_keys=True))
