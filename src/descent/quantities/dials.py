"""Part 5's server dials: a model on N accelerators with tensor parallelism, straight from the step
model (descent.step), as descent.dials presents them to the widget and the command line.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from typing import Any

from descent import params as P
from descent.quantities.registry import quantity

__all__: list[str] = []


#: The inputs of a tensor-parallel server.
DIALS_PARAMS = (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH, P.TP)


def _scenario(**kw: Any):
    """The server as a scenario (descent.scenario.Scenario): one question, checked once."""
    from descent.scenario import Scenario

    try:
        return Scenario(**kw)
    except P.ParamError:
        raise
    except ValueError as exc:
        raise P.ParamError("tp" if "tp" in str(exc) else "model", str(exc)) from None


def _decode(**kw: Any):
    from descent import step

    return step.decode(_scenario(**kw))


@quantity("ttft_s", "Time to first token", "seconds", *DIALS_PARAMS)
def ttft_s(**kw: Any) -> float:
    """Prefill of a context-long prompt over tp devices with its all-reduces, s (descent.step.prefill)."""
    from descent import step

    sc = _scenario(**kw)
    return step.prefill(sc, prompt_tokens=sc.context).seconds


@quantity("tokens_per_s_per_user", "Tokens per second per user", "tokens_per_s", *DIALS_PARAMS)
def tokens_per_s_per_user(**kw: Any) -> float:
    """One over a TP server's decode step, tokens/s (descent.step.decode)."""
    return _decode(**kw).tokens_per_s_per_sequence


@quantity("tokens_per_s_total", "Tokens per second, whole server", "tokens_per_s", *DIALS_PARAMS)
def tokens_per_s_total(**kw: Any) -> float:
    """The batch over a TP server's decode step, tokens/s (descent.step.decode)."""
    return _decode(**kw).tokens_per_s_total


@quantity("server_usd_per_million_tokens", "Dollars per million output tokens, whole server", "usd",
          *DIALS_PARAMS, P.PRICE)
def server_usd_per_million_tokens(**kw: Any) -> float:
    """tp x price per accelerator-hour over the server's tokens per hour, per million
    (descent.economics.usd_per_million_tokens of descent.step.decode)."""
    from descent.economics import usd_per_million_tokens

    sc = _scenario(**kw)
    return usd_per_million_tokens(_decode(**kw).tokens_per_s_total, sc.devices, sc.price)


@quantity("free_bytes_per_device", "Spare memory per accelerator", "bytes", *DIALS_PARAMS)
def free_bytes_per_device(**kw: Any) -> float:
    """Capacity less runtime allowance, weights and KV cache per device, bytes; negative if short
    (descent.step.footprint)."""
    from descent import step

    return step.footprint(_scenario(**kw)).free_bytes
