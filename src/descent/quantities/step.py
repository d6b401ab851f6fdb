"""One step of a model on a chip: the decode ceilings, the roofline of a step and Part 3's prefill
and decode timing, each straight from the step model (descent.step): page, quantity, step model,
catalog row. Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import math
from typing import Any

from descent import params as P
from descent.quantities.memory import SIZING_PARAMS
from descent.quantities.registry import quantity
from descent.units import format_int

__all__: list[str] = []


#: The inputs of a roofline step: the sizing's, plus the phase.
STEP_PARAMS = (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH, P.PHASE)

def _step(phase: str = P.PHASE.default, **kw: Any):
    """The step model's cost of one decode step of the batch, or of prefilling ``batch`` prompts of
    ``context`` tokens (descent.step.cost), on one device."""
    from descent import step

    sc = _scenario(**kw)
    if phase == "decode":
        return step.decode(sc)
    return step.cost(sc, prefill_spans=[(0, sc.context)] * sc.batch)

@quantity("flops_per_step", "FLOPs per step", "flop", *STEP_PARAMS)
def flops_per_step(**kw: Any) -> float:
    """Arithmetic of one decode or prefill step of the batch, FLOP (descent.step.cost)."""
    return _step(**kw).flops

@quantity("bytes_per_step", "Bytes per step", "bytes", *STEP_PARAMS)
def bytes_per_step(**kw: Any) -> float:
    """Memory traffic of one decode or prefill step: weights touched once, KV cache read or written."""
    return _step(**kw).bytes

@quantity("intensity", "Arithmetic intensity", "flop_per_byte", *STEP_PARAMS)
def intensity(**kw: Any) -> float:
    """FLOPs per byte of memory traffic of one step (Williams et al. 2009)."""
    return _step(**kw).intensity

@quantity("seconds_per_step", "Time per step", "seconds", *STEP_PARAMS)
def seconds_per_step(**kw: Any) -> float:
    """The slower of FLOPs / peak and bytes / bandwidth: a lower bound on one step's time."""
    return _step(**kw).seconds

@quantity("compute_share", "Share of peak FLOP/s used", "fraction", *STEP_PARAMS)
def compute_share(**kw: Any) -> float:
    """Attained FLOP/s over the dense peak: how much of the chip's arithmetic the step can use."""
    c = _step(**kw)
    return c.flops / c.seconds / c.peak_flops

@quantity("attained_flops", "Attained FLOP/s", "flop_per_s", *STEP_PARAMS)
def attained_flops(**kw: Any) -> float:
    """FLOPs per step over the time per step: the height of the step's point on the roofline."""
    c = _step(**kw)
    return c.flops / c.seconds

def _decode_step(**kw: Any) -> Any:
    from descent import step

    return step.decode(_scenario(**kw))

@quantity("decode_tokens_per_s", "Decode ceiling per sequence", "tokens_per_s", *SIZING_PARAMS)
def decode_tokens_per_s(**kw: Any) -> float:
    """Decode ceiling, tokens/s each sequence sees: 1 / the decode step's time (descent.step.decode)."""
    return _decode_step(**kw).tokens_per_s_per_sequence

@quantity("decode_tokens_per_s_total", "Decode ceiling in total", "tokens_per_s", *SIZING_PARAMS)
def decode_tokens_per_s_total(**kw: Any) -> float:
    """Decode ceiling over the whole batch, tokens/s: the batch / the step's time (descent.step.decode)."""
    return _decode_step(**kw).tokens_per_s_total

@quantity("decode_memory_tokens_per_s", "Memory ceiling per sequence", "tokens_per_s", *SIZING_PARAMS)
def decode_memory_tokens_per_s(**kw: Any) -> float:
    """Bandwidth / bytes per decode step: the memory ceiling on each sequence's decode speed, tokens/s."""
    return 1 / _decode_step(**kw).memory_seconds

@quantity("decode_compute_tokens_per_s", "Compute ceiling per sequence", "tokens_per_s", *SIZING_PARAMS)
def decode_compute_tokens_per_s(**kw: Any) -> float:
    """Dense peak FLOP/s / FLOPs of one decode step: the compute ceiling on each sequence's speed."""
    c = _decode_step(**kw)
    return 1 / c.compute_seconds if c.compute_seconds else math.inf  # a chip with no stated peak

@quantity("decode_compute_tokens_per_s_total", "Compute ceiling in total", "tokens_per_s", *SIZING_PARAMS)
def decode_compute_tokens_per_s_total(**kw: Any) -> float:
    """Dense peak FLOP/s / FLOPs per token: the most tokens/s over the batch the arithmetic allows."""
    c = _decode_step(**kw)
    return c.sequences / c.compute_seconds if c.compute_seconds else math.inf

@quantity("compute_bound_batch", "Compute-bound from batch", "integer", P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV,
          P.CONTEXT)
def compute_bound_batch(model: str, accelerator: str, weights: str, kv: str, context: int) -> int:
    """The smallest batch at which a decode step is compute-bound (descent.hardware.compute_bound_batch)."""
    from descent import hardware

    b = hardware.compute_bound_batch(model, accelerator, weights, kv, context)
    if b is None:
        raise P.ParamError("context", f"at {format_int(context)} tokens no batch up to {format_int(P.BATCH.max)} is "
                           "compute-bound")
    return b

@quantity("verify_compute_bound_batch", "Verification compute-bound from batch", "integer", P.MODEL, P.ACCELERATOR,
          P.WEIGHTS, P.KV, P.CONTEXT, P.DRAFT_LENGTH)
def verify_compute_bound_batch(model: str, accelerator: str, weights: str, kv: str, context: int,
                               draft_length: int) -> int:
    """The smallest batch at which a speculative-decoding verification step (draft_length + 1
    positions per sequence, descent.step.StepModel.uniform_verify) is compute-bound
    (descent.hardware.compute_bound_batch with positions = draft_length + 1). Beyond it verifying
    the guesses costs time, so the speedup shrinks (vLLM's speculative decoding docs)."""
    from descent import hardware

    b = hardware.compute_bound_batch(model, accelerator, weights, kv, context, positions=draft_length + 1)
    if b is None:
        raise P.ParamError("context", f"at {format_int(context)} tokens no batch up to {format_int(P.BATCH.max)} "
                           f"verifies {format_int(draft_length + 1)} positions per sequence compute-bound")
    return b

MOE_ROUTING = P.declare(P.Param(
    "routing", "MoE routing", "choice", "uniform", choices=[("uniform", "uniform"), ("active", "active")],
    help="uniform: the expected share of experts a batch touches, 1 - (1 - k/E)^B; active: k of E.",
))

@quantity("moe_expert_share", "Experts read per step", "fraction", P.MODEL, P.BATCH, MOE_ROUTING)
def moe_expert_share(model: str, batch: int, routing: str) -> float:
    """Share of a MoE model's routed-expert weights one decode step of B sequences reads."""
    from descent import catalog, hardware

    m = catalog.model(model)
    if m.moe is None:
        raise P.ParamError("model", f"{m.name} is dense; moe_expert_share needs a mixture-of-experts model")
    return hardware.decode_step_bytes(m, "bf16", "bf16", 1, batch, routing).routed_expert_share

SERVER_PARAMS = (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV)

@quantity("prefill_s", "Prefill (TTFT with no queue)", "seconds", *SERVER_PARAMS, P.PROMPT_TOKENS)
def prefill_s(model: str, accelerator: str, weights: str, kv: str, prompt_tokens: int) -> float:
    """Time of the one step that reads a whole prompt: the larger of its FLOPs over the dense peak and its bytes over the bandwidth."""
    return _prefill(model, accelerator, weights, kv, prompt_tokens).seconds

@quantity("itl_s", "Time per output token", "seconds", *SERVER_PARAMS, P.CONTEXT, P.BATCH)
def itl_s(model: str, accelerator: str, weights: str, kv: str, context: int, batch: int) -> float:
    """Time of one decode step of the batch at this context: the inter-token latency each sequence sees (descent.step.decode)."""
    return _decode(model, accelerator, weights, kv, context, batch).seconds

@quantity("reasoning_wait_s", "Hidden thinking before the first visible token", "seconds",
          *SERVER_PARAMS, P.CONTEXT, P.BATCH, P.THINKING_TOKENS)
def reasoning_wait_s(model: str, accelerator: str, weights: str, kv: str, context: int, batch: int,
                     thinking_tokens: int) -> float:
    """Hidden thinking tokens x the time per output token: what a reasoning model adds before its first visible token."""
    return thinking_tokens * itl_s(model=model, accelerator=accelerator, weights=weights, kv=kv,
                                   context=context, batch=batch)


# -- Part 3: one prefill and one decode step (descent.step, the one step model) ------------------


def _scenario(model: str, accelerator: str, weights: str, kv: str, **more: Any) -> Any:
    from descent.scenario import Scenario

    return Scenario(model=model, accelerator=accelerator, weights=weights, kv=kv, **more)


def _server(model: str, accelerator: str, weights: str, kv: str) -> Any:
    from descent import step

    return step.model_for(_scenario(model, accelerator, weights, kv))


def _prefill(model: str, accelerator: str, weights: str, kv: str, prompt_tokens: int) -> Any:
    from descent import step

    return step.prefill(_scenario(model, accelerator, weights, kv), prompt_tokens)


def _decode(model: str, accelerator: str, weights: str, kv: str, context: int, batch: int) -> Any:
    from descent import step

    return step.decode(_scenario(model, accelerator, weights, kv, context=context, batch=batch))


@quantity("prefill_tokens_per_s", "Prefill speed", "tokens_per_s", *SERVER_PARAMS, P.PROMPT_TOKENS)
def prefill_tokens_per_s(prompt_tokens: int, **kw: Any) -> float:
    """Prompt tokens over the time of the one step that reads them (descent.step.prefill)."""
    return prompt_tokens / _prefill(**kw, prompt_tokens=prompt_tokens).seconds


@quantity("prefill_decode_ratio", "Prefill faster than decode by", "number", *SERVER_PARAMS, P.PROMPT_TOKENS,
          P.CONTEXT, P.BATCH)
def prefill_decode_ratio(model: str, accelerator: str, weights: str, kv: str, prompt_tokens: int, context: int,
                         batch: int) -> float:
    """Prefill tokens/s over decode tokens/s (the batch's): how much faster a prompt is read than a reply written."""
    server = {"model": model, "accelerator": accelerator, "weights": weights, "kv": kv}
    return (prefill_tokens_per_s.func(prompt_tokens=prompt_tokens, **server)
            / _decode(context=context, batch=batch, **server).tokens_per_s_total)


@quantity("prefill_bound", "Prefill is bound by", "text", *SERVER_PARAMS, P.PROMPT_TOKENS)
def prefill_bound(**kw: Any) -> str:
    """Which roof binds the prefill step: "compute" or "memory" (descent.step.prefill)."""
    return _prefill(**kw).bound


@quantity("prefill_flops", "Prefill arithmetic", "flop_count", *SERVER_PARAMS, P.PROMPT_TOKENS)
def prefill_flops(**kw: Any) -> float:
    """FLOPs of the step that reads the whole prompt (descent.step.prefill)."""
    return _prefill(**kw).flops


@quantity("prefill_compute_s", "Prefill's arithmetic at peak", "seconds", *SERVER_PARAMS, P.PROMPT_TOKENS)
def prefill_compute_s(**kw: Any) -> float:
    """The prefill step's FLOPs over the dense peak, s (descent.step.prefill)."""
    return _prefill(**kw).compute_seconds


@quantity("prefill_memory_s", "Prefill's reads at full bandwidth", "seconds", *SERVER_PARAMS, P.PROMPT_TOKENS)
def prefill_memory_s(**kw: Any) -> float:
    """The prefill step's bytes over the memory bandwidth, s (descent.step.prefill)."""
    return _prefill(**kw).memory_seconds


@quantity("decode_bound", "Decode is bound by", "text", *SERVER_PARAMS, P.CONTEXT, P.BATCH)
def decode_bound(**kw: Any) -> str:
    """Which roof binds one decode step of the batch: "compute" or "memory" (descent.step.decode)."""
    return _decode(**kw).bound


@quantity("decode_step_bytes", "Bytes one decode step reads", "bytes", *SERVER_PARAMS, P.CONTEXT, P.BATCH)
def decode_step_bytes(**kw: Any) -> float:
    """Bytes one decode step of the batch reads in the serving step model (descent.step.decode)."""
    return _decode(**kw).bytes


@quantity("decode_compute_s", "Decode's arithmetic at peak", "seconds", *SERVER_PARAMS, P.CONTEXT, P.BATCH)
def decode_compute_s(**kw: Any) -> float:
    """One decode step's FLOPs over the dense peak, s (descent.step.decode)."""
    return _decode(**kw).compute_seconds


@quantity("compute_precision", "Matmuls run in", "text", *SERVER_PARAMS)
def compute_precision(**kw: Any) -> str:
    """The precision a server's matmuls run in, upper case ("FP8"): its peak is the chip's in it (descent.step)."""
    return _server(**kw).precision.upper()


@quantity("kv_capacity_bytes", "Memory left for the KV cache", "bytes", *SERVER_PARAMS)
def kv_capacity_bytes(**kw: Any) -> float:
    """A chip's memory after the weights and the runtime allowance: what the KV cache may fill (descent.step)."""
    return _server(**kw).kv_capacity


@quantity("kv_capacity_tokens", "Tokens of context that fit", "integer", *SERVER_PARAMS)
def kv_capacity_tokens(**kw: Any) -> int:
    """Whole tokens of KV cache the memory left holds, shared by every sequence (descent.step)."""
    s = _server(**kw)
    return int(s.kv_capacity // s.kv_bytes(1))
