"""Quantities: every number the site shows, as a core function of declared parameters.

A *quantity* is one number with a unit that a page prints, a widget shows and the command line
reports: the bytes of a model's weights, the KV cache per token, the decode ceiling. Each is a
:class:`Quantity`: a name, a kind of unit, the :mod:`descent.params` it takes, and the function
that computes it. From that one declaration:

* a page writes ``<!-- descent:value NAME param=value ... -->`` (the shortcode's arguments are the
  quantity's parameters plus how to print it: ``unit=`` for bytes and counts, ``sig=``);
* a widget labels its output with the quantity's name (``views.stat(..., quantity=NAME)``);
* ``descent size --json`` reports it under the same name.

Printing goes through :mod:`descent.units` (:meth:`Quantity.format`), the one formatter.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from descent import params as P
from descent.units import (
    format_bytes,
    format_count,
    format_int,
    format_number,
    format_percent,
    format_si,
    format_time,
)

__all__ = ["KINDS", "QUANTITIES", "Quantity", "get", "quantity"]

#: Kinds of quantity, each with its unit and how it prints.
KINDS = {
    "bytes": "bytes",
    "params": "parameters",
    "integer": "",
    "tokens_per_s": "tokens/s",
    "fraction": "",
    "bytes_per_s": "bytes/s",
    "flop_per_s": "FLOP/s",
    "flop": "FLOP",
    "usd": "USD",
    "joules": "J",
    "flop_per_byte": "FLOP/byte",
    "seconds": "s",
    "ratio": "times",
    "number": "",
}

#: The formatting parameters a page may add, by kind.
FORMAT_PARAMS: dict[str, tuple[P.Param, ...]] = {
    "bytes": (P.BYTE_UNIT, P.SIG),
    "params": (P.COUNT_UNIT, P.SIG),
    "integer": (),
    "tokens_per_s": (P.SIG,),
    "fraction": (P.SIG,),
    "bytes_per_s": (P.SIG,),
    "flop_per_s": (P.SIG,),
    "flop": (P.SIG,),
    "usd": (P.SIG,),
    "joules": (P.SIG,),
    "flop_per_byte": (P.SIG,),
    "seconds": (P.SIG,),
    "ratio": (P.SIG,),
    "number": (P.SIG,),
}


@dataclass(frozen=True)
class Quantity:
    """One number the site shows: ``func(**params) -> value`` in the unit of ``kind``.

    Attributes:
        name: the shortcode name, the widget output's ``data-quantity``, the CLI JSON key.
        label: a short phrase for a reader ("Weights").
        kind: a key of :data:`KINDS` (bytes, params, integer, tokens_per_s, fraction, ...).
        params: the parameters ``func`` takes, in order.
        func: computes the value from validated parameters.
        doc: one sentence: what it is and its source.
    """

    name: str
    label: str
    kind: str
    params: tuple[P.Param, ...]
    func: Callable[..., Any]
    doc: str

    @property
    def unit(self) -> str:
        return KINDS[self.kind]

    def __call__(self, **values: Any) -> Any:
        """The value for these parameters (missing ones take their defaults).

        Raises:
            ParamError: an unknown, missing or invalid parameter (:meth:`Param.check`).
        """
        return self.func(**self.bind(values, parse=False))

    def bind(self, values: Mapping[str, Any], *, parse: bool) -> dict[str, Any]:
        """Validated keyword arguments for ``func``: ``parse`` for typed text, else ``check``."""
        known = {p.name: p for p in self.params}
        for key in values:
            if key not in known:
                raise P.ParamError(key, f"{self.name} takes {', '.join(known) or 'no parameters'}; got {key!r}")
        out = {}
        for p in self.params:
            if p.name in values:
                out[p.name] = p.parse(values[p.name]) if parse else p.check(values[p.name])
            elif p.required:
                raise P.ParamError(p.name, f"{self.name} needs {p.name} ({p.allowed()})")
            else:
                out[p.name] = p.default
        return out

    def format(self, x: Any, unit: str = "auto", sig: int = 3) -> str:
        """``x`` as running text with its unit, through :mod:`descent.units`."""
        k = self.kind
        if k == "bytes":
            return format_bytes(x, unit, sig, trim=True, words=True)
        if k == "params":
            return format_count(x, unit, sig)
        if k == "integer":
            return format_int(x)
        if k == "tokens_per_s":
            return f"{format_number(x, sig, trim=True)} tokens/s"
        if k == "fraction":
            return format_percent(x, sig)
        if k == "bytes_per_s":
            return format_si(x, "B/s", sig, trim=True)
        if k == "usd":
            return f"${format_number(x, sig, trim=False)}"
        if k == "joules":
            return format_si(x, "J", sig, trim=True)
        if k == "flop":
            return format_si(x, "FLOP", sig, trim=True)
        if k == "flop_per_byte":
            return f"{format_number(x, sig, trim=True)} FLOP/byte"
        if k == "seconds":
            return format_time(x, sig)
        if k == "ratio":
            return f"{format_number(x, sig, trim=True)} times"
        if k == "number":
            return format_number(x, sig, trim=True)
        return format_si(x, "FLOP/s", sig, trim=True)


#: Every quantity, by name.
QUANTITIES: dict[str, Quantity] = {}


def quantity(name: str, label: str, kind: str, *params: P.Param) -> Callable[[Callable[..., Any]], Quantity]:
    """Decorator: register ``func`` as the quantity ``name`` taking ``params``.

    The docstring's first line is the quantity's description (shown on the contributing page).

    Raises:
        ValueError: an unknown kind, a name taken, or a parameter ``func`` does not take.
    """
    if kind not in KINDS:
        raise ValueError(f"quantity {name!r}: kind must be one of {', '.join(KINDS)}, got {kind!r}")

    def deco(func: Callable[..., Any]) -> Quantity:
        if name in QUANTITIES:
            raise ValueError(f"quantity {name!r} is declared twice")
        doc = (func.__doc__ or "").strip().split("\n")[0]
        q = Quantity(name, label, kind, tuple(params), func, doc)
        QUANTITIES[name] = q
        return q

    return deco


def get(name: str) -> Quantity:
    """The quantity ``name``. Raises ValueError listing the known names."""
    try:
        return QUANTITIES[name]
    except KeyError:
        raise ValueError(f"unknown quantity {name!r}; known: {', '.join(sorted(QUANTITIES))}") from None


# ---------------------------------------------------------------------------------------------
# The quantities. Each calls the core function that owns the arithmetic.
# ---------------------------------------------------------------------------------------------


def _sizing(**kw: Any) -> Any:
    from descent.memory import size

    return size(**kw)


_SIZING_PARAMS = (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH)


@quantity("params_total", "Parameters", "params", P.MODEL)
def params_total(model: str) -> int:
    """Every parameter the model stores (MoE: all experts), exact, from its config.json shapes."""
    from descent import catalog, transformer

    return transformer.param_counts(catalog.model(model)).total


@quantity("params_active", "Active parameters", "params", P.MODEL)
def params_active(model: str) -> int:
    """Parameters one token runs through (MoE: k of E experts; the embedding table included)."""
    from descent import catalog, transformer

    return transformer.param_counts(catalog.model(model)).active


@quantity("moe_active_share", "Active share", "fraction", P.MODEL)
def moe_active_share(model: str) -> float:
    """Active / total parameters of a mixture-of-experts model (descent.transformer.param_counts)."""
    from descent import catalog, transformer

    m = catalog.model(model)
    if m.moe is None:
        raise P.ParamError("model", f"{m.name} is dense: every parameter is active; pick a mixture-of-experts model")
    pc = transformer.param_counts(m)
    return pc.active / pc.total


@quantity("weights_bytes", "Weights", "bytes", P.MODEL, P.WEIGHTS)
def weights_bytes(model: str, weights: str) -> float:
    """Bytes to store every weight of the model (all experts): as released, a GGUF mix, or one
    precision for all (descent.weights.bytes_by_group)."""
    from descent.weights import bytes_by_group

    return sum(bytes_by_group(model, weights).values())


@quantity("kv_bytes_per_token", "KV cache per token", "bytes", P.MODEL, P.KV)
def kv_bytes_per_token(model: str, kv: str) -> float:
    """KV-cache bytes one token adds to one sequence: all layers, keys and values, no window cap."""
    from descent import catalog, numerics, transformer

    return transformer.kv_elements_per_token(catalog.model(model)) * numerics.kv_precision(kv).bytes_per_weight


@quantity("kv_cache_bytes", "KV cache", "bytes", *_SIZING_PARAMS)
def kv_cache_bytes(**kw: Any) -> float:
    """KV cache of the batch at this context (sliding windows capped), bytes (descent.memory.size)."""
    return _sizing(**kw).kv_cache_bytes


@quantity("runtime_bytes", "Runtime allowance", "bytes", *_SIZING_PARAMS)
def runtime_bytes(**kw: Any) -> float:
    """Memory kept back for activations, the runtime and fragmentation (descent.memory)."""
    return _sizing(**kw).runtime_bytes


@quantity("total_bytes", "Memory needed", "bytes", *_SIZING_PARAMS)
def total_bytes(**kw: Any) -> float:
    """Weights + KV cache + runtime allowance, bytes (descent.memory.size)."""
    return _sizing(**kw).total_bytes


@quantity("free_bytes", "Memory free", "bytes", *_SIZING_PARAMS)
def free_bytes(**kw: Any) -> float:
    """Capacity minus everything needed, bytes; negative when it does not fit."""
    return _sizing(**kw).free_bytes


@quantity("accelerators_needed", "Chips needed", "integer", *_SIZING_PARAMS)
def accelerators_needed(**kw: Any) -> int:
    """Fewest such chips whose usable memory holds weights + KV cache (memory only)."""
    return _sizing(**kw).accelerators_needed


@quantity("bytes_per_decode_step", "Bytes per decode step", "bytes", *_SIZING_PARAMS)
def bytes_per_decode_step(**kw: Any) -> float:
    """Bytes one decode step of the batch reads: active weights once, every sequence's KV cache."""
    return _sizing(**kw).bytes_per_decode_step


@quantity("decode_tokens_per_s", "Decode ceiling per sequence", "tokens_per_s", *_SIZING_PARAMS)
def decode_tokens_per_s(**kw: Any) -> float:
    """Memory-bandwidth ceiling on decode, tokens/s each sequence sees (descent.hardware)."""
    return _sizing(**kw).decode_tokens_per_s


@quantity("decode_tokens_per_s_total", "Decode ceiling in total", "tokens_per_s", *_SIZING_PARAMS)
def decode_tokens_per_s_total(**kw: Any) -> float:
    """Memory-bandwidth ceiling on decode over the whole batch, tokens/s (descent.hardware)."""
    return _sizing(**kw).decode_tokens_per_s_total


@quantity("decode_memory_tokens_per_s", "Memory ceiling per sequence", "tokens_per_s", *_SIZING_PARAMS)
def decode_memory_tokens_per_s(**kw: Any) -> float:
    """Bandwidth / bytes per decode step: the memory ceiling on each sequence's decode speed, tokens/s."""
    return _sizing(**kw).decode_memory_tokens_per_s


@quantity("decode_compute_tokens_per_s", "Compute ceiling per sequence", "tokens_per_s", *_SIZING_PARAMS)
def decode_compute_tokens_per_s(**kw: Any) -> float:
    """Dense peak FLOP/s / FLOPs of one decode step: the compute ceiling on each sequence's speed."""
    return _sizing(**kw).decode_compute_tokens_per_s


@quantity("flops_per_decode_step", "FLOPs per decode step", "flop", *_SIZING_PARAMS)
def flops_per_decode_step(**kw: Any) -> float:
    """FLOPs of one decode step of the batch: B x (2 x active matmul weights + attention)."""
    return _sizing(**kw).flops_per_decode_step


@quantity("decode_compute_tokens_per_s_total", "Compute roof in total", "tokens_per_s", *_SIZING_PARAMS)
def decode_compute_tokens_per_s_total(**kw: Any) -> float:
    """Dense peak FLOP/s / FLOPs per token: the most tokens/s over the batch the arithmetic allows."""
    s = _sizing(**kw)
    return s.decode_compute_tokens_per_s * s.batch


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


@quantity("memory_capacity", "Memory", "bytes", P.ACCELERATOR)
def memory_capacity(accelerator: str) -> int:
    """An accelerator's main memory in true bytes (a vendor's "80 GB" of HBM is often 80 GiB)."""
    from descent import catalog

    return catalog.accelerator(accelerator).memory_bytes


@quantity("capacity_bytes", "Memory", "bytes", P.ACCELERATOR)
def capacity_bytes(accelerator: str) -> int:
    """An accelerator's main memory in true bytes (the sizing's capacity; same as memory_capacity)."""
    from descent import catalog

    return catalog.accelerator(accelerator).memory_bytes


@quantity("memory_bandwidth", "Memory bandwidth", "bytes_per_s", P.ACCELERATOR)
def memory_bandwidth(accelerator: str) -> float:
    """An accelerator's main-memory bandwidth, bytes/s (TB/s = 1e12 bytes/s), from its datasheet."""
    from descent import catalog

    return catalog.accelerator(accelerator).memory_bandwidth


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


@quantity("chips_that_fit", "Chips that hold it", "integer", P.MODEL, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH)
def chips_that_fit(model: str, weights: str, kv: str, context: int, batch: int) -> int:
    """How many catalog accelerators hold the model (weights + KV cache + runtime allowance) alone."""
    from descent.memory import across_field

    return sum(1 for s in across_field(model, weights, kv, context, batch) if s.fits)


@quantity("runtime_allowance", "Runtime allowance", "fraction")
def runtime_allowance() -> float:
    """Share of an accelerator's memory the sizing keeps back for the runtime (descent.scenario)."""
    return P.RUNTIME.default / 100


_COST_PARAMS = (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH)


@quantity("usd_per_million_tokens", "Dollars per million output tokens", "usd", *_COST_PARAMS, P.PRICE)
def usd_per_million_tokens(**kw: Any) -> float:
    """Price per accelerator-hour / 3,600 / decode tokens per second x 1e6 (descent.economics)."""
    from descent import economics

    return economics.token_cost(**kw).usd_per_million_tokens


@quantity("joules_per_token", "Joules per output token", "joules", *_COST_PARAMS, P.PUE)
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
# Part 4's quantities (roofline, tiles, attention traffic, parallelism) live in their own module;
# importing it registers them here, before any page or widget reads QUANTITIES.
from descent import quantities_part4  # noqa: E402,F401,I001
# ---------------------------------------------------------------------------------------------
# Part 3 (serving software): timing, the batching simulator, speculative decoding, the price of a
# token. The arithmetic is descent.serving's.
# ---------------------------------------------------------------------------------------------

#: The simulator's slots: the most sequences one step decodes (an engine's max batch size).
SLOTS = P.BATCH.but(label="Slots", default=32, max=4096,
                    help="The most sequences one step may hold (a serving engine's max batch size).")
_SERVER = (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV)
_TRACE = (P.POLICY, P.REQUESTS, P.ARRIVAL_RATE, P.PROMPT_MEAN, P.OUTPUT_MEAN, SLOTS, P.CHUNK, P.SEED)
_SIMULATION = (*_SERVER, *_TRACE)


@quantity("prefill_s", "Prefill (TTFT with no queue)", "seconds", *_SERVER, P.PROMPT_TOKENS)
def prefill_s(model: str, accelerator: str, weights: str, kv: str, prompt_tokens: int) -> float:
    """Time of the one step that reads a whole prompt: the larger of its FLOPs over the dense peak and its bytes over the bandwidth."""
    from descent import serving

    return serving.prefill(serving.server(model, accelerator, weights, kv), prompt_tokens).seconds


@quantity("itl_s", "Time per output token", "seconds", *_SERVER, P.CONTEXT, P.BATCH)
def itl_s(model: str, accelerator: str, weights: str, kv: str, context: int, batch: int) -> float:
    """Time of one decode step of the batch at this context: the inter-token latency each sequence sees (descent.serving)."""
    from descent import serving

    return serving.decode_step(serving.server(model, accelerator, weights, kv), batch, context).seconds


@quantity("reasoning_wait_s", "Hidden thinking before the first visible token", "seconds",
          *_SERVER, P.CONTEXT, P.BATCH, P.THINKING_TOKENS)
def reasoning_wait_s(model: str, accelerator: str, weights: str, kv: str, context: int, batch: int,
                     thinking_tokens: int) -> float:
    """Hidden thinking tokens x the time per output token: what a reasoning model adds before its first visible token."""
    return thinking_tokens * itl_s(model=model, accelerator=accelerator, weights=weights, kv=kv,
                                   context=context, batch=batch)


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


_STEADY = (*_SERVER, SLOTS, P.PROMPT_TOKENS, P.OUTPUT_TOKENS)


@quantity("steady_tokens_per_s", "Output tokens/s at full load", "tokens_per_s", *_STEADY)
def steady_tokens_per_s(model: str, accelerator: str, weights: str, kv: str, batch: int, prompt_tokens: int,
                        output_tokens: int) -> float:
    """Output tokens/s of one accelerator kept full: every prompt's prefill plus the batch's decode steps (descent.serving)."""
    from descent import serving

    return serving.steady_throughput(serving.server(model, accelerator, weights, kv), batch, prompt_tokens,
                                     output_tokens)


@quantity("cost_per_million_usd", "Self-hosted cost per million tokens", "usd", *_STEADY, P.GPU_PRICE, P.UTILIZATION)
def cost_per_million_usd(gpu_price: float, utilization: float, **kw: Any) -> float:
    """Dollars per million output tokens: GPU price per hour / (3600 x tokens/s at full load x utilization) x 1e6."""
    from descent import serving

    return serving.cost_per_million(gpu_price, steady_tokens_per_s(**kw), utilization)


@quantity("break_even_utilization", "Break-even utilization", "fraction", *_STEADY, P.GPU_PRICE, P.API_PRICE)
def break_even_utilization(gpu_price: float, api_price: float, **kw: Any) -> float:
    """Utilization at which the accelerator costs what the API charges per million tokens (above 1: never)."""
    from descent import serving

    return serving.break_even_utilization(api_price, gpu_price, steady_tokens_per_s(**kw))


from descent import quantities_part5  # noqa: E402,F401,I001
