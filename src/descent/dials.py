"""The server dials: one model served by N accelerators with tensor parallelism (TP).

A server of ``tp`` accelerators splits every weight matrix ``tp`` ways (Megatron-LM, Shoeybi et
al. 2019, section 3) and serves a batch of ``batch`` conversations of ``context`` tokens each.
Every number is the step model's (:mod:`descent.step`) for that scenario:

* **Time to first token (TTFT)**: the prefill of one prompt of ``context`` tokens on the ``tp``
  devices (each reads and multiplies a ``1 / tp`` share of every matrix), with each layer's two
  all-reduces of the prompt's activations (:func:`descent.step.prefill`).
* **Decode step**: one device's share of the reads and of the arithmetic, the longer of the two,
  plus every layer's all-reduces (:func:`descent.step.decode`). Tokens/s per user is one over the
  step (each step gives every conversation one token); in total, the batch over the step.
* **Cost**: ``tp x price`` dollars per hour over the total tokens per hour, per million tokens
  (:func:`descent.economics.usd_per_million_tokens`).
* **Spare memory**: what each device has left after its share of the weights and KV cache and the
  runtime allowance (:func:`descent.step.footprint`; negative when the split does not fit).

Reads and arithmetic are at the chip's peaks (lower bounds on time); the all-reduces are NCCL's
ring with its latency, not overlapped (an engine's own one-shot all-reduce is faster); TTFT is for
a prompt that has the server to itself.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from dataclasses import dataclass

from descent import step as S
from descent.compare import Compared
from descent.compare import compare as _compare
from descent.economics import usd_per_million_tokens
from descent.scenario import Scenario

__all__ = ["COMPARED", "Dials", "NEEDS_FIT", "compare", "server_dials"]


@dataclass(frozen=True)
class Dials:
    """What a TP server does for one batch (units in the names; seconds, bytes, dollars).

    Attributes:
        tp: devices sharing every matrix (the server's accelerator count).
        batch, context: conversations decoded together and tokens each (and the prompt's length).
        ttft_s: prefill roofline / tp plus the prompt's all-reduces, s.
        prefill_comm_s: the prompt's all-reduces over the link, s (part of ``ttft_s``).
        step_s: one decode step, s: max(read, compute) per device plus the all-reduces.
        comm_s: the decode step's all-reduces, s (part of ``step_s``).
        bound: ``"memory"`` or ``"compute"``: which of read and compute is longer on one device.
        tokens_per_s_per_user: ``1 / step_s``, tokens/s.
        tokens_per_s_total: ``batch / step_s``, tokens/s.
        usd_per_million_tokens: ``tp x price / 3,600 / tokens_per_s_total x 1e6``, dollars.
        free_bytes: capacity x (1 - runtime allowance) - (weights + KV cache) per device, bytes;
            negative when it does not fit.
        fits: ``free_bytes >= 0``.
        prefill_bound: ``"memory"`` or ``"compute"``: what bounds reading the prompt (``ttft_s``).
    """

    tp: int
    batch: int
    context: int
    ttft_s: float
    prefill_comm_s: float
    step_s: float
    comm_s: float
    bound: str
    tokens_per_s_per_user: float
    tokens_per_s_total: float
    usd_per_million_tokens: float
    free_bytes: float
    fits: bool
    prefill_bound: str


#: What :func:`compare` sets side by side: (Dials field, label, which is better).
COMPARED = (
    ("ttft_s", "Time to first token", "lower"),
    ("tokens_per_s_per_user", "Per user", "higher"),
    ("tokens_per_s_total", "Whole server", "higher"),
    ("usd_per_million_tokens", "Per million output tokens", "lower"),
    ("free_bytes", "Spare memory per accelerator", "higher"),
    ("fits", "Fits", "higher"),
)


#: The outputs of :data:`COMPARED` only a server that fits can reach (:func:`descent.compare.compare`).
NEEDS_FIT = ("ttft_s", "tokens_per_s_per_user", "tokens_per_s_total", "usd_per_million_tokens")


def compare(before, after) -> list[Compared]:
    """Two servers output by output (:data:`COMPARED`: sooner, faster, cheaper, more room and
    fitting are better); ``before`` and ``after`` are :class:`Dials` or ``descent dials --json``
    objects. For the dials' pinned set-up and ``descent dials --compare`` (issue 26)."""
    return _compare(before, after, COMPARED, needs_fit=NEEDS_FIT)


def server_dials(model, accelerator, weights: str = Scenario.weights, kv: str = Scenario.kv, context: int = Scenario.context, batch: int = Scenario.batch, tp: int = Scenario.tp,
                 price: float = Scenario.price, link_id: str = Scenario.link) -> Dials:
    """TTFT, tokens/s per user and in total, cost and spare memory of a ``tp``-way server.

    Args:
        model, accelerator: catalog ids or records. weights, kv: precision names.
        context: tokens per conversation (also the prompt prefilled for TTFT), 1 to 20,000,000.
        batch: conversations decoded together, 1 to 100,000. tp: devices, 1 to the model's query
        heads. price: dollars per accelerator-hour. link_id: a catalog link (``links.toml``).

    Raises:
        ValueError: any input out of range (messages from :class:`descent.scenario.Scenario`).
    """
    sc = Scenario(model=model, accelerator=accelerator, weights=S.check_weights(weights), kv=kv, context=context,
                  batch=batch, tp=tp, price=price, link=link_id)
    pre = S.prefill(sc, prompt_tokens=context)
    dec = S.decode(sc)
    fp = S.footprint(sc)
    return Dials(
        tp=tp, batch=batch, context=context, ttft_s=pre.seconds, prefill_comm_s=pre.comm_seconds,
        step_s=dec.seconds, comm_s=dec.comm_seconds, bound=dec.bound,
        tokens_per_s_per_user=dec.tokens_per_s_per_sequence, tokens_per_s_total=dec.tokens_per_s_total,
        usd_per_million_tokens=usd_per_million_tokens(dec.tokens_per_s_total, sc.devices, price),
        free_bytes=fp.free_bytes, fits=fp.fits, prefill_bound=pre.bound,
    )
