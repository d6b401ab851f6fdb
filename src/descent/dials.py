"""The server dials: one model served by N accelerators with tensor parallelism (TP).

A server of ``tp`` accelerators splits every weight matrix ``tp`` ways (:mod:`descent.parallel`,
Megatron-LM, Shoeybi et al. 2019, section 3) and serves a batch of ``batch`` conversations of
``context`` tokens each. From the same core functions as the rest of the site:

* **Time to first token (TTFT)**: the roofline time of prefilling one prompt of ``context``
  tokens (:func:`descent.hardware.prefill_time`) divided over the ``tp`` devices (each reads and
  multiplies a ``1 / tp`` share of every matrix), plus each layer's two all-reduces of the
  prompt's activations (``context x D x 2`` bytes, a ring over ``tp`` devices) over the link.
* **Decode step**: the longer of one device's share of the reads
  (:func:`descent.parallel.plan`: weights / tp, KV cache / min(tp, K)) over its bandwidth and its
  share of the arithmetic (``batch x`` :func:`descent.transformer.flops_per_token` ``/ tp`` over
  its peak), plus every layer's all-reduces (``plan.allreduce_seconds_per_layer x L``). Tokens/s
  per user is one over the step (each step gives every conversation one token); in total, the
  batch over the step.
* **Cost**: ``tp x price`` dollars per hour over the total tokens per hour, per million tokens.
* **Spare memory**: what each device has left after its share of the weights and KV cache and the
  runtime allowance (negative when the split does not fit).

All are ceilings (lower bounds on times): nothing overlaps, the collectives' fixed latency
(microseconds each) is ignored, and TTFT is for a prompt that has the server to itself.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from dataclasses import dataclass

from descent import params as P
from descent import transformer
from descent.economics import SECONDS_PER_HOUR, TOKENS_PER_MILLION
from descent.hardware import compute_precision, peak_flops, prefill_time, resolve_accelerator, resolve_model
from descent.memory import RUNTIME_ALLOWANCE
from descent.parallel import ACTIVATION_BYTES, ALLREDUCES_PER_LAYER, link, plan, ring_allreduce_bytes

__all__ = ["Dials", "server_dials"]


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


def server_dials(model, accelerator, weights: str = "fp8", kv: str = "bf16", context: int = 8192,
                 batch: int = 1, tp: int = 8, price: float = P.PRICE.default,
                 link_id: str = "nvlink4") -> Dials:
    """TTFT, tokens/s per user and in total, cost and spare memory of a ``tp``-way server.

    Args:
        model, accelerator: catalog ids or records. weights, kv: precision names.
        context: tokens per conversation (also the prompt prefilled for TTFT), 1 to 20,000,000.
        batch: conversations decoded together, 1 to 100,000. tp: devices, 1 to the model's query
        heads. price: dollars per accelerator-hour. link_id: :data:`descent.parallel.LINKS`.

    Raises:
        ValueError: any input out of range (messages from :func:`descent.parallel.plan`,
            :func:`descent.hardware.prefill_time` and ``descent.params.PRICE``).
    """
    P.PRICE.check(price)
    m = resolve_model(model)
    a = resolve_accelerator(accelerator)
    pl = plan(m, a, weights, kv, context, batch, tp=tp, link_id=link_id)
    wire = link(link_id)
    L = m.num_layers

    pre = prefill_time(m, a, weights, kv, context)
    prompt_msg = context * m.hidden_size * ACTIVATION_BYTES
    prefill_comm = L * ALLREDUCES_PER_LAYER * ring_allreduce_bytes(prompt_msg, tp) / wire.bytes_per_s
    ttft = pre.seconds / tp + prefill_comm

    read_s = pl.read_seconds_per_layer * L
    peak = peak_flops(a, compute_precision(m, a, weights))
    compute_s = batch * transformer.flops_per_token(m, context) / tp / peak
    comm = L * pl.allreduce_seconds_per_layer
    step = max(read_s, compute_s) + comm
    total = batch / step
    free = a.memory_bytes * (1 - RUNTIME_ALLOWANCE) - pl.memory_bytes_per_device
    return Dials(
        tp=tp, batch=batch, context=context, ttft_s=ttft, prefill_comm_s=prefill_comm,
        step_s=step, comm_s=comm, bound="compute" if compute_s > read_s else "memory",
        tokens_per_s_per_user=1 / step, tokens_per_s_total=total,
        usd_per_million_tokens=tp * price / SECONDS_PER_HOUR / total * TOKENS_PER_MILLION,
        free_bytes=free, fits=free >= 0,
    )
