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

_simulated("tpot_mean_s", "Mean TPOT", "seconds",
           "Per request (last token - first token) / (tokens - 1), averaged over requests (vLLM's benchmark TPOT), simulated.")

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


# -- Part 3's worked examples: the trace, the batching exception, the chat, the allocator --------

TRACE_PARAMS = (P.REQUESTS, P.ARRIVAL_RATE, P.PROMPT_MEAN, P.OUTPUT_MEAN, P.SEED)

def _trace_summary(**kw: Any) -> dict[str, float]:
    from descent import serving

    return serving.trace_summary(serving.make_trace(**kw))

@quantity("trace_duration_s", "Trace duration", "seconds", *TRACE_PARAMS)
def trace_duration_s(requests: int, rate: float, prompt_mean: int, output_mean: int, seed: int) -> float:
    """Seconds from the first arrival to the last of the seeded trace (descent.serving.make_trace, trace_summary)."""
    return _trace_summary(requests=requests, rate=rate, prompt_mean=prompt_mean, output_mean=output_mean,
                          seed=seed)["duration_s"]

@quantity("trace_mean_prompt_tokens", "Mean prompt", "integer", *TRACE_PARAMS)
def trace_mean_prompt_tokens(requests: int, rate: float, prompt_mean: int, output_mean: int, seed: int) -> int:
    """The seeded trace's mean prompt, rounded to whole tokens (descent.serving.trace_summary)."""
    return round(_trace_summary(requests=requests, rate=rate, prompt_mean=prompt_mean, output_mean=output_mean,
                                seed=seed)["mean_prompt"])

@quantity("trace_mean_reply_tokens", "Mean reply", "integer", *TRACE_PARAMS)
def trace_mean_reply_tokens(requests: int, rate: float, prompt_mean: int, output_mean: int, seed: int) -> int:
    """The seeded trace's mean reply, rounded to whole tokens (descent.serving.trace_summary)."""
    return round(_trace_summary(requests=requests, rate=rate, prompt_mean=prompt_mean, output_mean=output_mean,
                                seed=seed)["mean_reply"])

_BATCHING = (*SERVER_PARAMS, P.REQUESTS, P.ARRIVAL_RATE, P.PROMPT_MEAN, P.OUTPUT_MEAN, SLOTS, P.CHUNK, P.SEED)

@quantity("continuous_loss", "Continuous batching's loss against static", "fraction", *_BATCHING)
def continuous_loss(**kw: Any) -> float:
    """1 - continuous / static throughput on the same simulated trace: what continuous batching loses (negative: gains)."""
    from descent import serving

    tps = {p: serving.metrics(serving.run(policy=p, **kw)).throughput_tokens_per_s for p in ("static", "continuous")}
    return 1 - tps["continuous"] / tps["static"]

@quantity("decode_weight_share", "Weights a decode step reads, against a prefill", "fraction", *SERVER_PARAMS,
          SLOTS, P.PROMPT_TOKENS)
def decode_weight_share(model: str, accelerator: str, weights: str, kv: str, batch: int, prompt_tokens: int) -> float:
    """Weight bytes a decode step of a batch of tokens reads, over those a prompt's step reads (MoE: the experts touched; descent.step).

    An MoE step reads only the experts its tokens touch (descent.step.StepModel.step_weight_bytes)."""
    from descent import serving

    s = serving.server(model, accelerator, weights, kv)
    return s.step_weight_bytes(batch) / s.step_weight_bytes(prompt_tokens)

#: A chat turn of the multi-turn example: a question and a reply, tokens (example sizes).
TURN_QUESTION = P.PROMPT_TOKENS.but(default=150, label="Question")

TURN_REPLY = P.OUTPUT_TOKENS.but(default=300, label="Reply")

@quantity("multi_turn_prefill_ratio", "Prefill tokens without a cache, against with one", "number", *SERVER_PARAMS,
          P.TURNS, P.PREFIX_TOKENS, TURN_QUESTION, TURN_REPLY)
def multi_turn_prefill_ratio(model: str, accelerator: str, weights: str, kv: str, turns: int, prefix_tokens: int,
                             prompt_tokens: int, output_tokens: int) -> float:
    """Prompt tokens prefilled over a whole chat without a prefix cache, over those with one (descent.serving.multi_turn)."""
    from descent import serving

    last = serving.multi_turn(serving.server(model, accelerator, weights, kv), turns, prefix_tokens, prompt_tokens,
                              output_tokens)[-1]
    return last["prefill_tokens_no_cache"] / last["prefill_tokens_cached"]

@quantity("alloc_pool_tokens", "KV pool", "integer", P.BLOCK_SIZE)
def alloc_pool_tokens(block_size: int) -> int:
    """The allocator example's KV pool, token slots in whole blocks (descent.serving.alloc_pool_tokens)."""
    from descent import serving

    return serving.alloc_pool_tokens(block_size)
