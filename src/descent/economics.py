"""What a token costs: dollars and joules, from the decode ceiling and the chip's price and power.

One accelerator rented at ``price`` dollars per hour and drawing ``power_watts`` while it decodes
at ``tokens_per_s_total`` (the roofline ceiling of :func:`descent.step.decode`, for
every sequence of the batch together) spends, per token:

    dollars per token = price / 3,600 / tokens_per_s_total
    joules per token  = power_watts x PUE / tokens_per_s_total

Both fall as the batch grows while decode is memory-bound (one weight read is shared by more
tokens), flatten once it is compute-bound (every token costs its own FLOPs), and stop where the
KV cache of the batch no longer fits next to the weights (:func:`max_batch`). These are floors:
a real server runs below the ceiling, is not busy every second, and needs host machines too.

Prompt tokens are cheaper than output tokens because prefill computes a whole prompt per weight
read (:func:`input_output_ratio`).

Sources: the ceilings are :mod:`descent.hardware`'s (Pope et al. 2022; Williams et al. 2009);
board power is the catalog's (datasheet TDP, the most the board may draw, so joules are an upper
estimate for the chip and a lower one for the whole server); PUE (power usage effectiveness) is
the data centre's total power over its IT power (The Green Grid, White Paper 49, 2012).

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from dataclasses import dataclass

from descent import params as P
from descent.catalog import resolve_model
from descent.compare import Compared
from descent.compare import compare as _compare
from descent.scenario import Scenario
from descent.step import check_weights, decode, footprint, prefill

__all__ = ["COMPARED", "DECODE_BATCHES", "NEEDS_FIT", "SECONDS_PER_HOUR", "compare", "TOKENS_PER_MILLION", "TokenCost", "cost_by_batch",
           "decode_batches", "input_output_ratio", "max_batch", "token_cost", "usd_per_million_tokens"]

SECONDS_PER_HOUR = 3600
TOKENS_PER_MILLION = 1_000_000


@dataclass(frozen=True)
class TokenCost:
    """The price and energy of output tokens at one batch (units in the names).

    Attributes:
        batch: B, sequences decoded together.
        tokens_per_s_total: decode ceiling over the batch, tokens/s.
        usd_per_million_tokens: price per GPU-hour / 3,600 / tokens_per_s_total x 1e6, dollars.
        joules_per_token: power x PUE / tokens_per_s_total, joules.
        bound: ``"memory"`` or ``"compute"`` (:func:`descent.step.decode`).
        fits: weights + KV cache + runtime allowance fit the chip's memory at this batch.
    """

    batch: int
    tokens_per_s_total: float
    usd_per_million_tokens: float
    joules_per_token: float
    bound: str
    fits: bool


#: What :func:`compare` sets side by side for ``descent cost --compare``: (field, label, which is
#: better). ``max_batch`` is :func:`max_batch`'s, beside the :class:`TokenCost` fields.
COMPARED = (
    ("tokens_per_s_total", "Output tokens in total", "higher"),
    ("usd_per_million_tokens", "Dollars per million output tokens", "lower"),
    ("joules_per_token", "Energy per token", "lower"),
    ("max_batch", "Largest batch that fits", "higher"),
    ("fits", "Fits", "higher"),
)


#: The outputs only a set-up that fits can reach (:func:`descent.compare.compare`).
NEEDS_FIT = ("tokens_per_s_total", "usd_per_million_tokens", "joules_per_token")


def compare(before, after, fields=COMPARED) -> list[Compared]:
    """Two set-ups' prices output by output (``fields``, default :data:`COMPARED`: faster, cheaper,
    less energy, more room and fitting are better); records or ``descent cost --json`` objects.
    For ``descent cost --compare`` and the price widget's pinned set-up (issue 26)."""
    has_fits = any(name == "fits" for name, _, _ in fields)  # a summary without it marks a set-up that does not fit by None
    return _compare(before, after, fields, needs_fit=NEEDS_FIT if has_fits else ())


def usd_per_million_tokens(tokens_per_s_total: float, devices: int, price: float) -> float:
    """Dollars per million tokens of ``devices`` accelerators at ``price`` dollars an hour each,
    producing ``tokens_per_s_total``: ``devices x price / 3,600 / tokens_per_s x 1e6``. THE price
    rule: the cost by batch, the server dials and the break-even all use it."""
    return devices * price / SECONDS_PER_HOUR / tokens_per_s_total * TOKENS_PER_MILLION


def _check(price: float, pue: float) -> None:
    P.PRICE.check(price)
    P.PUE.check(pue)


def token_cost(model, accelerator, weights: str = Scenario.weights, kv: str = Scenario.kv, context: int = Scenario.context,
               batch: int = Scenario.batch, price: float = P.PRICE.default, pue: float = P.PUE.default,
               runtime_percent: float = P.RUNTIME.default) -> TokenCost:
    """Dollars and joules per output token for one model on one accelerator at one batch.

    Args:
        model, accelerator: catalog ids or records. weights, kv: as :func:`descent.memory.size`.
        context: tokens per sequence. batch: B. price: dollars per accelerator-hour.
        pue: data-centre power usage effectiveness (1 = no overhead). runtime_percent: as
            :func:`descent.memory.size`.

    Raises:
        ValueError: any input out of its declared range (descent.params).
    """
    _check(price, pue)
    sc = Scenario(model=model, accelerator=accelerator, weights=check_weights(weights), kv=kv, context=context,
                  batch=batch, price=price, pue=pue, runtime_percent=float(runtime_percent))
    c = decode(sc)
    rate = c.tokens_per_s_total
    return TokenCost(
        batch=batch,
        tokens_per_s_total=rate,
        usd_per_million_tokens=usd_per_million_tokens(rate, sc.devices, price),
        joules_per_token=sc.chip.power_watts * pue / rate,
        bound=c.bound,
        fits=footprint(sc).fits,
    )


def max_batch(model, accelerator, weights: str = Scenario.weights, kv: str = Scenario.kv, context: int = Scenario.context,
              runtime_percent: float = P.RUNTIME.default) -> int:
    """The largest batch whose KV cache fits beside the weights and the runtime allowance, or 0 when
    not even one sequence fits. Sequences at ``context`` tokens each.

    Raises:
        ValueError: inputs out of range (as :func:`descent.memory.size`).
    """
    sc = Scenario(model=model, accelerator=accelerator, weights=check_weights(weights), kv=kv, context=context,
                  runtime_percent=float(runtime_percent))
    one = footprint(sc)  # the step model's: weights and one sequence's KV cache against usable memory
    room = one.usable_bytes - one.weights_bytes
    if room < one.kv_bytes:
        return 0
    b = min(int(room // one.kv_bytes), P.BATCH.max)
    # The KV cache is exactly linear in B, so the floor is the answer; check it with the footprint itself.
    while b > 1 and not footprint(sc.but(batch=b)).fits:
        b -= 1
    return b


#: Batches :func:`decode_batches` samples below the largest that fits: powers of four.
DECODE_BATCHES = (1, 4, 16, 64, 256, 1024, 4096)


def decode_batches(model, accelerator, weights: str = Scenario.weights, kv: str = Scenario.kv,
                   context: int = Scenario.context) -> list[int]:
    """The batches a decode-by-batch table shows: each of :data:`DECODE_BATCHES` below
    :func:`max_batch`, then :func:`max_batch` itself; empty when not one sequence fits.

    Raises:
        ValueError: inputs out of range (as :func:`max_batch`).
    """
    limit = max_batch(model, accelerator, weights, kv, context)
    if limit == 0:
        return []
    return [b for b in DECODE_BATCHES if b < limit] + [limit]


#: Batches the cost curve samples: powers of two (and the largest that fits).
def _batches(limit: int) -> list[int]:
    out, b = [], 1
    while b <= limit:
        out.append(b)
        b *= 2
    if out and out[-1] != limit:
        out.append(limit)
    return out


def cost_by_batch(model, accelerator, weights: str = Scenario.weights, kv: str = Scenario.kv, context: int = Scenario.context,
                  price: float = P.PRICE.default, pue: float = P.PUE.default,
                  runtime_percent: float = P.RUNTIME.default) -> list[TokenCost]:
    """:func:`token_cost` at batches 1, 2, 4, ... up to :func:`max_batch` (which closes the list).

    Empty when not one sequence fits.

    Raises:
        ValueError: inputs out of range.
    """
    limit = max_batch(model, accelerator, weights, kv, context, runtime_percent)
    return [token_cost(model, accelerator, weights, kv, context, b, price, pue, runtime_percent)
            for b in _batches(limit)]


def input_output_ratio(model, accelerator, weights: str = Scenario.weights, kv: str = Scenario.kv,
                       prompt_tokens: int = 8192, batch: int = Scenario.batch) -> float:
    """How many times cheaper a prompt token is than an output token: the time per output token
    (one decode step of ``batch`` sequences at ``prompt_tokens`` of context, divided by the batch)
    over the time per prompt token (the prefill of ``prompt_tokens`` tokens in one pass, divided by
    their number).

    Prefill reads every weight once for the whole prompt and is compute-bound; decode reads them
    again for every step. Batching shares a decode step's reads, so the ratio falls with the batch.

    Raises:
        ValueError: bad inputs (as :func:`descent.memory.size`).
    """
    sc = Scenario(model=resolve_model(model), accelerator=accelerator, weights=check_weights(weights), kv=kv,
                  context=prompt_tokens, batch=batch)
    per_output = decode(sc).seconds / batch  # one decode step at the prompt's length, on one device
    per_input = prefill(sc, prompt_tokens).seconds / prompt_tokens
    return per_output / per_input
