"""Timing of the trace for ``nox -s bench``."""

from __future__ import annotations

import time

from descent.trace.gguf_reader import load_model
from descent.trace.record import site_traces
from descent.units import format_fixed

#: Budget for a cold trace of the site's prompts on the 2-core build machine (seconds).
COLD_TRACE_BUDGET_S = 10.0


def cold_trace_seconds(include_model_load: bool = True) -> float:
    """Wall-clock seconds to trace every prompt in ``PROMPTS`` with the trace cache off.

    With ``include_model_load`` (the default) the in-process model cache is cleared first, so the time
    includes loading the weights (from the ``.npy`` cache if present, else reading and dequantizing
    the GGUF). Budget: :data:`COLD_TRACE_BUDGET_S`.
    """
    if include_model_load:
        load_model.cache_clear()
    start = time.perf_counter()
    site_traces(use_cache=False)
    return time.perf_counter() - start


if __name__ == "__main__":
    print(
        f"cold trace of the site's prompts: {format_fixed(cold_trace_seconds(), 2)} s (budget {COLD_TRACE_BUDGET_S:g} s)"
    )
