"""Serving software: the batching simulator's metrics, speculative decoding, steady throughput
(descent.serving).

Every function calls the core module that owns the arithmetic. Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from typing import Any

from descent import params as P
from descent.quantities.registry import quantity
from descent.quantities.step import SERVER_PARAMS

__all__: list[str] = []


#: The simulator's slots: the most sequences one step decodes (an engine's max batch size).
SLOTS = P.BATCH.but(label="Slots", default=32, max=4096,
                    help="The most sequences one step may hold (a serving engine's max batch size).")

_TRACE = (P.POLICY, P.REQUESTS, P.ARRIVAL_RATE, P.PROMPT_MEAN, P.OUTPUT_MEAN, SLOTS, P.CHUNK, P.SEED)

_SIMULATION = (*SERVER_PARAMS, *_TRACE)

def _metrics(ttft_target: float = P.TTFT_TARGET.default, itl_target: float = P.ITL_TARGET.default, **kw: Any) -> Any:
    from descent import serving

    return serving.metrics(serving.run(**kw), ttft_target, itl_target)

def _simulated(name: str, label: str, kind: str, doc: str, *extra: P.Param) -> None:
    def func(**kw: Any) -> float:
        return getattr(_metrics(**kw), name)

    func.__doc__ = doc
    quantity(name, label, kind, *_SIMULATION, *extra)(func)

_simulated("throughput_tokens_per_s", "Throughput", "tokens_per_s",
           "Output tokens per second over the whole simulated trace (descent.serving.simulate).")

_simulated("latency_p50_s", "Median latency", "seconds",
           "Median time from a request's arrival to its last token, in the simulated trace.")

_simulated("latency_p99_s", "99th-percentile latency", "seconds",
           "99th percentile of the time from arrival to last token, in the simulated trace.")

_simulated("ttft_p50_s", "Median TTFT", "seconds", "Median time to first token (queueing included), simulated.")

_simulated("ttft_p99_s", "99th-percentile TTFT", "seconds", "99th percentile of the time to first token, simulated.")

_simulated("itl_p50_s", "Median ITL", "seconds", "Median gap between two tokens of one reply, simulated.")

_simulated("itl_p99_s", "99th-percentile ITL", "seconds", "99th percentile of the gaps between tokens, simulated.")

_simulated("slot_utilization", "Slot use", "fraction",
           "Share of slot time spent serving a request while the server runs (descent.serving.metrics).")

_simulated("goodput_tokens_per_s", "Goodput", "tokens_per_s",
           "Output tokens per second from requests that met both latency targets, simulated.",
           P.TTFT_TARGET, P.ITL_TARGET)

@quantity("expected_tokens", "Tokens per target pass", "number", P.ACCEPTANCE, P.DRAFT_LENGTH, P.DRAFT_COST)
def expected_tokens(acceptance: float, draft_length: int, draft_cost: float) -> float:
    """Expected tokens one target pass yields with speculative decoding, (1 - a^(k+1)) / (1 - a) (Leviathan et al. 2023, eq. 1)."""
    from descent import serving

    return serving.speculative(acceptance, draft_length, draft_cost).expected_tokens

@quantity("speedup", "Speedup", "number", P.ACCEPTANCE, P.DRAFT_LENGTH, P.DRAFT_COST)
def speedup(acceptance: float, draft_length: int, draft_cost: float) -> float:
    """Speculative decoding's walltime speedup, E / (1 + k c) (Leviathan et al. 2023, theorem 3.8)."""
    from descent import serving

    return serving.speculative(acceptance, draft_length, draft_cost).speedup

STEADY_PARAMS = (*SERVER_PARAMS, SLOTS, P.PROMPT_TOKENS, P.OUTPUT_TOKENS)

@quantity("steady_tokens_per_s", "Output tokens/s at full load", "tokens_per_s", *STEADY_PARAMS)
def steady_tokens_per_s(model: str, accelerator: str, weights: str, kv: str, batch: int, prompt_tokens: int,
                        output_tokens: int) -> float:
    """Output tokens/s of one accelerator kept full: every prompt's prefill plus the batch's decode steps (descent.serving)."""
    from descent import serving

    return serving.steady_throughput(serving.server(model, accelerator, weights, kv), batch, prompt_tokens,
                                     output_tokens)
