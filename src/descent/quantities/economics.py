"""The price and energy of a token (descent.economics) and the self-hosting break-even (descent.serving).

Every function calls the core module that owns the arithmetic. Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from typing import Any

from descent import params as P
from descent.quantities.registry import quantity
from descent.quantities.serving import STEADY_PARAMS, steady_tokens_per_s

__all__: list[str] = []


COST_PARAMS = (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH)

@quantity("usd_per_million_tokens", "Dollars per million output tokens", "usd", *COST_PARAMS, P.PRICE)
def usd_per_million_tokens(**kw: Any) -> float:
    """Price per accelerator-hour / 3,600 / decode tokens per second x 1e6 (descent.economics)."""
    from descent import economics

    return economics.token_cost(**kw).usd_per_million_tokens

@quantity("joules_per_token", "Joules per output token", "joules", *COST_PARAMS, P.PUE)
def joules_per_token(**kw: Any) -> float:
    """Board power x PUE / decode tokens per second (descent.economics)."""
    from descent import economics

    return economics.token_cost(**kw).joules_per_token

@quantity("max_batch", "Largest batch that fits", "integer", P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT)
def max_batch(**kw: Any) -> int:
    """The most sequences whose KV caches fit beside the weights and the runtime allowance."""
    from descent import economics

    return economics.max_batch(**kw)

@quantity("input_output_ratio", "Prompt tokens cheaper by", "ratio", P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV,
          P.CONTEXT, P.BATCH)
def input_output_ratio(model: str, accelerator: str, weights: str, kv: str, context: int, batch: int) -> float:
    """Time per output token over time per prompt token (descent.economics.input_output_ratio)."""
    from descent import economics

    return economics.input_output_ratio(model, accelerator, weights, kv, context, batch)

@quantity("usd_per_million_tokens_at_max_batch", "Dollars per million output tokens, batch full", "usd",
          P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT, P.PRICE)
def usd_per_million_tokens_at_max_batch(model: str, accelerator: str, weights: str, kv: str, context: int,
                                        price: float) -> float:
    """The price per million output tokens at the largest batch that fits (descent.economics)."""
    from descent import economics

    b = economics.max_batch(model, accelerator, weights, kv, context)
    if b == 0:
        raise P.ParamError("model", "not one sequence fits beside the weights: there is nothing to price")
    return economics.token_cost(model, accelerator, weights, kv, context, b, price).usd_per_million_tokens

@quantity("input_output_ratio_at_max_batch", "Prompt tokens cheaper by, batch full", "ratio", P.MODEL,
          P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT)
def input_output_ratio_at_max_batch(model: str, accelerator: str, weights: str, kv: str, context: int) -> float:
    """Time per output token over time per prompt token at the largest batch that fits."""
    from descent import economics

    b = max(1, economics.max_batch(model, accelerator, weights, kv, context))
    return economics.input_output_ratio(model, accelerator, weights, kv, context, b)

@quantity("cost_per_million_usd", "Self-hosted cost per million tokens", "usd", *STEADY_PARAMS, P.GPU_PRICE, P.UTILIZATION)
def cost_per_million_usd(gpu_price: float, utilization: float, **kw: Any) -> float:
    """Dollars per million output tokens: GPU price per hour / (3600 x tokens/s at full load x utilization) x 1e6."""
    from descent import serving

    return serving.cost_per_million(gpu_price, steady_tokens_per_s(**kw), utilization)

@quantity("api_bill_per_million_output", "API bill per million output tokens, prompts included", "usd",
          P.API_PRICE, P.API_INPUT_PRICE, P.PROMPT_TOKENS, P.OUTPUT_TOKENS)
def api_bill_per_million_output(api_price: float, api_input_price: float, prompt_tokens: int,
                                output_tokens: int) -> float:
    """Output price + input price x prompt tokens / output tokens (descent.serving.api_bill_per_million_output)."""
    from descent import serving

    return serving.api_bill_per_million_output(api_price, api_input_price, prompt_tokens, output_tokens)

@quantity("break_even_utilization", "Break-even utilization", "fraction", *STEADY_PARAMS, P.GPU_PRICE, P.API_PRICE,
          P.API_INPUT_PRICE)
def break_even_utilization(gpu_price: float, api_price: float, api_input_price: float, **kw: Any) -> float:
    """Utilization at which the accelerator costs what the API bills per million output tokens, the
    requests' prompts included (above 1: never)."""
    from descent import serving

    bill = serving.api_bill_per_million_output(api_price, api_input_price, kw["prompt_tokens"], kw["output_tokens"])
    return serving.break_even_utilization(bill, gpu_price, steady_tokens_per_s(**kw))
