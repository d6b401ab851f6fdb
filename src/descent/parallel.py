"""Splitting a model over many chips: tensor, pipeline, expert and data parallelism, and the wires.

* **Tensor parallelism (TP, t devices)**: every weight matrix is cut t ways (attention by heads,
  the FFN by its inner width); each layer ends its attention and its FFN with an all-reduce that
  sums the t partial results: two all-reduces per layer in the forward pass, each of the
  activations of the step's tokens, ``tokens x D`` values (Shoeybi et al. 2019, "Megatron-LM",
  arXiv:1909.08053, section 3, figure 3).
* **Ring all-reduce** of a message of S bytes over p devices: each device sends (and receives)
  ``2 (p - 1) / p x S`` bytes, half in the reduce-scatter and half in the all-gather (Patarasuk &
  Yuan 2009, "Bandwidth optimal all-reduce algorithms for clusters of workstations", JPDC 69(2);
  NCCL's nccl-tests ``doc/PERFORMANCE.md``: bus bandwidth = algorithm bandwidth x 2 (n - 1) / n).
  Its time is that many bytes over one direction of the link plus NCCL's latency (catalog
  ``links.toml``), which dominates the kilobyte messages of small-batch decode.
* **Pipeline parallelism (PP, p stages)**: each device holds L / p consecutive layers and passes
  the activations on. A serving engine keeps m micro-batches cycling through the stages: with
  m >= p every stage stays busy, with m < p each idles a share 1 - m / p, the *bubble*
  (:mod:`descent.step` gives the schedule; a training pipeline's flush idles ``(p - 1) / (m + p - 1)``
  instead: Huang et al. 2019, "GPipe", arXiv:1811.06965, section 2.2). One token still crosses
  every stage in turn, so PP does not shorten a decode step; it raises the throughput.
* **Expert parallelism (EP, e devices)**: a mixture of experts' routed experts are spread over e
  devices (E / e each), the other weights are copied to each, and each device takes 1 / e of the
  batch. Every MoE layer sends each token's hidden vector to the devices holding its k experts and
  brings the results back: two all-to-alls, in which a device sends ``2 x tokens x k x D x b x
  (e - 1) / e`` bytes when routing is uniform (Lepikhin et al. 2020, "GShard", arXiv:2006.16668,
  section 2.2, dispatch and combine; DeepSeek-V3 Technical Report, arXiv:2412.19437, section 3.2).
* **Data parallelism (DP)**: whole copies, each serving its own requests; no communication during
  inference, throughput times the copies, memory per device unchanged.

The wires (catalog ``links.toml``) carry a per-GPU bandwidth in ONE direction (a vendor's NVLink
"900 GB/s" adds both directions). Weights and KV cache are split evenly; real frameworks keep small
tensors (norms, routers) on every device, which this ignores. Every number here is the step
model's (:func:`descent.step.cost`, :func:`descent.step.footprint`) for the split scenario.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from dataclasses import dataclass

from descent import catalog
from descent import step as S
from descent.catalog import Accelerator, Model
from descent.scenario import Scenario

__all__ = ["Plan", "RingStep", "plan", "ring_allreduce"]


@dataclass(frozen=True)
class Plan:
    """A model split over ``devices`` accelerators for decode. Units: bytes, seconds.

    Attributes:
        model, accelerator, weights, kv, link: ids. context, batch: per replica's decode step.
        tp, pp, ep, microbatches: the degrees and the pipeline's micro-batches.
        devices: ``tp x pp x ep``.
        weights_bytes: every weight once, bytes (``descent.weights.bytes_by_group``).
        weights_bytes_per_device, kv_bytes_per_device, memory_bytes_per_device, free_bytes, fits:
            :class:`descent.step.Footprint`'s.
        allreduce_message_bytes: one all-reduce's message: ``(batch / (ep m)) x D x 2`` bytes.
        allreduce_bytes_per_layer: bytes each device sends per layer in TP's two all-reduces.
        allreduce_seconds_per_layer: their time over the link, bandwidth and latency, s.
        alltoall_bytes_per_layer: bytes each device sends per MoE layer in EP's all-to-alls.
        alltoall_seconds_per_layer: their time, s.
        read_seconds_per_layer: one layer's share of a device's reads over its memory bandwidth, s:
            what the communication competes with.
        bubble_fraction: the share of the step each stage idles (:attr:`descent.step.StepCost.bubble`).
        decode_step_seconds: the time between a sequence's tokens, s (``StepCost.seconds``).
        decode_tokens_per_s: ``batch / decode_step_seconds`` over the replica, tokens/s.
        step: the :class:`descent.step.StepCost` itself.
    """

    model: str
    accelerator: str
    weights: str
    kv: str
    link: str
    context: int
    batch: int
    tp: int
    pp: int
    ep: int
    microbatches: int
    devices: int
    weights_bytes: float
    weights_bytes_per_device: float
    kv_bytes_per_device: float
    memory_bytes_per_device: float
    free_bytes: float
    fits: bool
    allreduce_message_bytes: float
    allreduce_bytes_per_layer: float
    allreduce_seconds_per_layer: float
    alltoall_bytes_per_layer: float
    alltoall_seconds_per_layer: float
    read_seconds_per_layer: float
    bubble_fraction: float
    decode_step_seconds: float
    decode_tokens_per_s: float
    step: S.StepCost


def plan(model: str | Model, accelerator: str | Accelerator, weights: str = Scenario.weights, kv: str = Scenario.kv, context: int = Scenario.context, batch: int = Scenario.batch,
         tp: int = 1, pp: int = 1, ep: int = 1, microbatches: int = 1, link_id: str = Scenario.link) -> Plan:
    """Memory per device, communication per layer and the pipeline bubble of one split.

    Raises:
        ValueError: as :class:`descent.scenario.Scenario` (unknown ids or precisions; context or
            batch out of range; a degree not 1 to 4,096; tp above the model's query heads, pp above
            its layers, ep above its experts or on a dense model; a batch that ep does not divide;
            more micro-batches than sequences).
    """
    sc = Scenario(model=model, accelerator=accelerator, weights=S.check_weights(weights), kv=kv, context=context,
                  batch=batch, tp=tp, pp=pp, ep=ep, microbatches=microbatches, link=link_id)
    m = sc.model_row
    fp = S.footprint(sc)
    c = S.decode(sc)
    by_kind = {x.kind: x for x in c.collectives}
    ar, a2a = by_kind.get("all-reduce"), by_kind.get("all-to-all")
    layers = m.num_layers
    moe_layers = m.num_layers - (min(m.moe.first_dense_layers, m.num_layers) if m.moe else m.num_layers)
    return Plan(
        model=m.id, accelerator=sc.chip.id, weights=weights, kv=kv, link=link_id, context=context, batch=batch,
        tp=tp, pp=pp, ep=ep, microbatches=microbatches, devices=sc.devices,
        weights_bytes=fp.weights_bytes, weights_bytes_per_device=fp.weights_bytes_per_device,
        kv_bytes_per_device=fp.kv_bytes_per_device, memory_bytes_per_device=fp.need_bytes,
        free_bytes=fp.free_bytes, fits=fp.fits,
        allreduce_message_bytes=ar.message_bytes if ar else 0.0,
        allreduce_bytes_per_layer=S.ALLREDUCES_PER_LAYER * ar.bytes_each if ar else 0.0,
        allreduce_seconds_per_layer=ar.seconds / layers if ar else 0.0,
        alltoall_bytes_per_layer=a2a.bytes_each if a2a else 0.0,
        alltoall_seconds_per_layer=a2a.seconds / moe_layers if a2a and moe_layers else 0.0,
        read_seconds_per_layer=c.memory_seconds / layers,
        bubble_fraction=c.bubble, decode_step_seconds=c.seconds, decode_tokens_per_s=c.tokens_per_s_total, step=c,
    )


#: The most devices a ring schedule is drawn for (:func:`ring_allreduce`): 2 (p - 1) steps each.
RING_MAX_DEVICES = 64


@dataclass(frozen=True)
class RingStep:
    """The state of a ring all-reduce after one of its steps (step 0: before any). Units: bytes, s.

    Attributes:
        step: 0 to 2 (p - 1). phase: ``"start"``, ``"reduce-scatter"`` or ``"all-gather"``.
        sends: ``(device, to, shard)`` for each link this step (devices and shards from 0); empty at 0.
        summed: ``summed[d][c]``, how many devices' parts device d's copy of shard c adds up (p: done).
        shard_bytes: the bytes on each link in one step (the message / p).
        sent_bytes: bytes each device has sent so far. seconds: the time so far (bandwidth and
            NCCL's latency, :func:`descent.step.allreduce_seconds` at the end).
    """

    step: int
    phase: str
    sends: tuple[tuple[int, int, int], ...]
    summed: tuple[tuple[int, ...], ...]
    shard_bytes: float
    sent_bytes: float
    seconds: float


def ring_allreduce(message_bytes: float, devices: int, link_id: str = Scenario.link) -> list[RingStep]:
    """A ring all-reduce of ``message_bytes`` over ``devices`` on link ``link_id``, step by step.

    Each device starts with its own partial result (the message), cut into p shards. In each of the
    p - 1 steps of the reduce-scatter, device i sends shard (i - s) mod p to device i + 1, which adds
    its own part; then device i holds the whole sum of shard (i + 1) mod p. In each of the p - 1
    steps of the all-gather it passes a finished shard on (Patarasuk & Yuan 2009; NCCL's ring).
    Every step moves message / p bytes over every link at once. The last step's ``sent_bytes`` is
    :func:`descent.step.ring_allreduce_bytes` and its ``seconds`` :func:`descent.step.allreduce_seconds`
    (the base latency counted at the start, one step latency per step).

    Raises:
        ValueError: a message not a finite number >= 0, devices not 2 to 64, an unknown link or a
            storage link (no collectives).
    """
    total = S.ring_allreduce_bytes(message_bytes, devices)  # checks the message and the device count
    if devices < 2 or devices > RING_MAX_DEVICES:
        raise ValueError(f"devices must be 2 to {RING_MAX_DEVICES} for a ring, got {devices!r}")
    wire = catalog.link(link_id)
    if wire.scope == "storage":
        raise ValueError(f"link must join accelerators; {wire.label} is storage")
    p = devices
    shard = message_bytes / p
    per_step = shard / wire.bytes_per_s + wire.step_latency_s
    summed = [[1] * p for _ in range(p)]
    out = [RingStep(0, "start", (), tuple(map(tuple, summed)), shard, 0.0, 0.0)]
    for k in range(1, 2 * (p - 1) + 1):
        rs = k <= p - 1
        s = k - 1 if rs else k - p
        sends = tuple((i, (i + 1) % p, (i - s) % p if rs else (i + 1 - s) % p) for i in range(p))
        before = [row[:] for row in summed]
        for i, to, c in sends:
            summed[to][c] = before[i][c] + before[to][c] if rs else p
        out.append(RingStep(k, "reduce-scatter" if rs else "all-gather", sends, tuple(map(tuple, summed)),
                            shard, k * shard, wire.base_latency_s + k * per_step))
    assert abs(out[-1].sent_bytes - total) <= 1e-9 * max(1.0, total)
    assert all(x == p for row in summed for x in row)
    return out

