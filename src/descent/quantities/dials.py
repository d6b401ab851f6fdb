"""Part 5's server dials: a model on N accelerators with tensor parallelism (descent.dials).

Every function calls the core module that owns the arithmetic. Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from typing import Any

from descent import params as P
from descent.quantities.registry import quantity

__all__: list[str] = []


#: The inputs of a tensor-parallel server.
DIALS_PARAMS = (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH, P.TP)

def _dials(**kw: Any):
    from descent import dials

    try:
        return dials.server_dials(**kw)
    except P.ParamError:
        raise
    except ValueError as exc:
        raise P.ParamError("tp" if "tp" in str(exc) else "model", str(exc)) from None

@quantity("ttft_s", "Time to first token", "seconds", *DIALS_PARAMS)
def ttft_s(**kw: Any) -> float:
    """Prefill roofline of a context-long prompt over tp devices plus its all-reduces, s (descent.dials)."""
    return _dials(**kw).ttft_s

@quantity("tokens_per_s_per_user", "Tokens per second per user", "tokens_per_s", *DIALS_PARAMS)
def tokens_per_s_per_user(**kw: Any) -> float:
    """One over a TP server's decode step, tokens/s (descent.dials)."""
    return _dials(**kw).tokens_per_s_per_user

@quantity("tokens_per_s_total", "Tokens per second, whole server", "tokens_per_s", *DIALS_PARAMS)
def tokens_per_s_total(**kw: Any) -> float:
    """The batch over a TP server's decode step, tokens/s (descent.dials)."""
    return _dials(**kw).tokens_per_s_total

@quantity("server_usd_per_million_tokens", "Dollars per million output tokens, whole server", "usd",
          *DIALS_PARAMS, P.PRICE)
def server_usd_per_million_tokens(**kw: Any) -> float:
    """tp x price per accelerator-hour over the server's tokens per hour, per million (descent.dials)."""
    return _dials(**kw).usd_per_million_tokens

@quantity("free_bytes_per_device", "Spare memory per accelerator", "bytes", *DIALS_PARAMS)
def free_bytes_per_device(**kw: Any) -> float:
    """Capacity less runtime allowance, weights and KV cache per device, bytes; negative if short."""
    return _dials(**kw).free_bytes
