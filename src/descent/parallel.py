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
  Its time here is that many bytes over one direction of the link; the fixed latency of each
  collective (microseconds, which dominates the kilobyte messages of small-batch decode) is not
  modelled, so the time is a lower bound.
* **Pipeline parallelism (PP, p stages)**: each device holds L / p consecutive layers and passes
  the activations on. With m micro-batches in flight, each stage idles for a share
  ``(p - 1) / (m + p - 1)`` of the schedule, the *bubble* (Huang et al. 2019, "GPipe",
  arXiv:1811.06965, section 2.2; Narayanan et al. 2021, "Efficient Large-Scale Language Model
  Training on GPU Clusters Using Megatron-LM", arXiv:2104.04473, section 2.2). One token still
  crosses every stage in turn, so PP does not shorten a decode step.
* **Expert parallelism (EP, e devices)**: a mixture of experts' routed experts are spread over e
  devices (E / e each), the other weights are copied to each, and each device takes 1 / e of the
  batch. Every MoE layer sends each token's hidden vector to the devices holding its k experts and
  brings the results back: two all-to-alls, in which a device sends ``2 x tokens x k x D x b x
  (e - 1) / e`` bytes when routing is uniform (Lepikhin et al. 2020, "GShard", arXiv:2006.16668,
  section 2.2, dispatch and combine; DeepSeek-V3 Technical Report, arXiv:2412.19437, section 3.2).
* **Data parallelism (DP)**: whole copies, each serving its own requests; no communication during
  inference, throughput times the copies, memory per device unchanged.

The wires (:data:`LINKS`) carry a per-GPU bandwidth in ONE direction (a vendor's NVLink "900 GB/s"
adds both directions). Weights and KV cache are split evenly; real frameworks keep small tensors
(norms, routers) on every device, which this ignores.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from dataclasses import dataclass

from descent import params, transformer
from descent.catalog import Accelerator, Model
from descent.checks import is_finite, is_int
from descent.hardware import check_inputs, decode_step_bytes, kv_cache_bytes, resolve_accelerator
from descent.memory import RUNTIME_ALLOWANCE
from descent.numerics import kv_precision, weight_bytes

__all__ = [
    "ACTIVATION_BYTES",
    "ALLREDUCES_PER_LAYER",
    "LINKS",
    "Link",
    "Plan",
    "all_to_all_bytes",
    "link",
    "pipeline_bubble",
    "plan",
    "ring_allreduce_bytes",
]

#: Bytes per activation value sent between devices: BF16 (Megatron-LM and vLLM all-reduce in the
#: model's 16-bit dtype).
ACTIVATION_BYTES = 2

#: All-reduces per transformer layer in tensor parallelism's forward pass: after the attention
#: output projection and after the FFN down projection (Shoeybi et al. 2019, section 3, figure 3).
ALLREDUCES_PER_LAYER = 2


@dataclass(frozen=True)
class Link:
    """A kind of wire between accelerators.

    Attributes:
        id: ``"nvlink4"``, ... label: display name.
        bytes_per_s: per GPU, one direction, bytes/s.
        scope: ``"scale-up"`` (inside a server or rack, GPU to GPU) or ``"scale-out"`` (between
            servers, through a network card per GPU).
        domain: how many GPUs it joins directly (0: a network, no fixed limit).
        source: where the figure comes from.
    """

    id: str
    label: str
    bytes_per_s: float
    scope: str
    domain: int
    source: str


#: The wires, fastest first.
LINKS: dict[str, Link] = {x.id: x for x in (
    Link("nvlink5", "NVLink 5 (Blackwell, NVL72)", 900e9, "scale-up", 72,
         "NVIDIA GB200 NVL72 and HGX B200 pages: fifth-generation NVLink, 1.8 TB/s per GPU (both directions); "
         "NVL72 joins 72 GPUs in one NVLink domain (130 TB/s in all)"),
    Link("nvlink4", "NVLink 4 (H100, H200)", 450e9, "scale-up", 8,
         "NVIDIA H100 and H200 datasheets: NVLink 900 GB/s per GPU (both directions); HGX H100/H200 join 8 GPUs"),
    Link("ib-xdr", "InfiniBand XDR, 800 Gb/s per GPU", 100e9, "scale-out", 0,
         "NVIDIA Quantum-X800 InfiniBand and ConnectX-8 SuperNIC announcements (2024): 800 Gb/s per port"),
    Link("ib-ndr", "InfiniBand NDR, 400 Gb/s per GPU", 50e9, "scale-out", 0,
         "NVIDIA DGX H100 user guide: eight ConnectX-7 adapters, one 400 Gb/s InfiniBand NDR port per GPU"),
    Link("pcie5", "PCIe 5.0 x16", 64e9, "scale-out", 0,
         "NVIDIA H100 datasheet: PCIe Gen5 128 GB/s (both directions); 32 GT/s x 16 lanes, 63 GB/s "
         "each way after 128b/130b encoding (PCI-SIG, PCI Express Base Specification 5.0)"),
)}


def link(link_id: str) -> Link:
    """The link ``link_id``. Raises ValueError listing the allowed ids."""
    try:
        return LINKS[link_id]
    except (KeyError, TypeError):
        raise ValueError(f"link must be one of {', '.join(LINKS)}, got {link_id!r}") from None


def _degree(name: str, x: object, limit: int) -> int:
    if not is_int(x) or not 1 <= x <= limit:
        raise ValueError(f"{name} must be a whole number of devices from 1 to {limit}, got {x!r}")
    return x


def ring_allreduce_bytes(message_bytes: float, devices: int) -> float:
    """Bytes each device sends in a ring all-reduce of ``message_bytes`` over ``devices``.

    ``2 (p - 1) / p x S`` (Patarasuk & Yuan 2009; nccl-tests doc/PERFORMANCE.md). 0 for one device.

    Raises:
        ValueError: message not a finite number >= 0, devices not 1 to 100,000.
    """
    if not (is_finite(message_bytes) and message_bytes >= 0):
        raise ValueError(f"message must be a number of bytes >= 0, got {message_bytes!r}")
    p = _degree("devices", devices, params.BATCH.max)
    return 2 * (p - 1) / p * message_bytes


def pipeline_bubble(stages: int, microbatches: int) -> float:
    """Share of a pipeline schedule each stage idles: ``(p - 1) / (m + p - 1)`` (GPipe, section 2.2).

    Raises:
        ValueError: stages or micro-batches not whole numbers from 1 to 100,000.
    """
    p = _degree("stages", stages, params.BATCH.max)
    m = _degree("Micro-batches", microbatches, params.BATCH.max)
    return (p - 1) / (m + p - 1)


def all_to_all_bytes(tokens: float, experts_per_token: int, d_model: int, bytes_per_value: float,
                     devices: int) -> float:
    """Bytes one device sends in one MoE layer's dispatch and combine all-to-alls.

    ``2 x tokens x k x D x b x (e - 1) / e``: each of the device's tokens goes to its k experts,
    of which (e - 1) / e live elsewhere under uniform routing, and comes back (GShard, section
    2.2). 0 for one device.

    Raises:
        ValueError: a count not a positive number, devices not 1 to 100,000.
    """
    for name, x in (("tokens", tokens), ("d_model", d_model), ("bytes per value", bytes_per_value)):
        if not (is_finite(x) and x > 0):
            raise ValueError(f"{name} must be a positive number, got {x!r}")
    if not is_int(experts_per_token) or experts_per_token < 1:
        raise ValueError(f"experts per token must be a whole number >= 1, got {experts_per_token!r}")
    e = _degree("devices", devices, params.BATCH.max)
    return 2 * tokens * experts_per_token * d_model * bytes_per_value * (e - 1) / e


@dataclass(frozen=True)
class Plan:
    """A model split over ``devices`` accelerators for decode. Units: bytes, seconds.

    Attributes:
        model, accelerator, weights, kv, link: ids. context, batch: per replica's decode step.
        tp, pp, ep, microbatches: the degrees and the pipeline's micro-batches.
        devices: ``tp x pp x ep``.
        weights_bytes: every weight once, bytes (:func:`descent.numerics.weight_bytes`).
        weights_bytes_per_device: non-expert weights / (tp pp) + routed experts / (tp pp ep), bytes.
        kv_bytes_per_device: the batch's KV cache / (pp x ep x KV split), bytes; the KV split is
            min(tp, K) (heads beyond K are copies), 1 for MLA (one latent shared by all heads).
        memory_bytes_per_device: weights + KV cache per device, bytes.
        fits: memory per device within the chip's capacity less the runtime allowance.
        allreduce_message_bytes: one all-reduce's message: ``(batch / ep) x D x 2`` bytes.
        allreduce_bytes_per_layer: bytes each device sends per layer in TP's two all-reduces.
        allreduce_seconds_per_layer: that over the link, s (bandwidth only; a lower bound).
        alltoall_bytes_per_layer: bytes each device sends per MoE layer in EP's all-to-alls
            (0 for a dense model or ep = 1).
        alltoall_seconds_per_layer: that over the link, s.
        read_seconds_per_layer: one layer's share of a device's decode reads over its memory
            bandwidth, s: what the communication competes with.
        bubble_fraction: ``(pp - 1) / (microbatches + pp - 1)``.
        decode_step_seconds: one decode step of the batch, s: what one device of each stage reads
            (its share of :func:`descent.hardware.decode_step_bytes`: non-expert weights / (tp pp),
            experts touched / (tp pp ep), KV cache / (pp ep KV split)) over its bandwidth, the
            stages one after another, plus every layer's communication; nothing overlapped,
            latency ignored.
        decode_tokens_per_s: ``batch / decode_step_seconds`` over the replica, tokens/s.
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


#: Largest degree of one kind of parallelism accepted (NVIDIA's NVL576 is the largest NVLink
#: domain announced; past a few thousand a typo is likelier than a plan).
MAX_DEGREE = 4096


def plan(
    model: str | Model,
    accelerator: str | Accelerator,
    weights: str = "bf16",
    kv: str = "bf16",
    context: int = 8192,
    batch: int = 1,
    tp: int = 1,
    pp: int = 1,
    ep: int = 1,
    microbatches: int = 1,
    link_id: str = "nvlink4",
) -> Plan:
    """Memory per device, communication per layer and the pipeline bubble of one split.

    See the module docstring for each rule. Decode only: each step gives every sequence one token.

    Raises:
        ValueError: unknown ids or precisions; context or batch out of range; a degree not 1 to
            4,096; tp above the model's query heads, pp above its layers, ep above its experts
            (or ep > 1 on a dense model); a batch that ep does not divide; more micro-batches
            than sequences.
    """
    m, _wp, _kp = check_inputs(model, weights, kv, context, batch)
    a = resolve_accelerator(accelerator)
    wire = link(link_id)
    tp, pp, ep = (_degree(n, x, MAX_DEGREE) for n, x in (("tp", tp), ("pp", pp), ("ep", ep)))
    mb = _degree("Micro-batches", microbatches, params.BATCH.max)
    if tp > m.num_heads:
        raise ValueError(f"tp must be at most {m.num_heads} ({m.name}'s query heads), got {tp}")
    if pp > m.num_layers:
        raise ValueError(f"pp must be at most {m.num_layers} ({m.name}'s layers), got {pp}")
    if ep > 1 and m.moe is None:
        raise ValueError(f"ep must be 1 for {m.name}: it is dense, it has no experts to spread")
    if m.moe is not None and ep > m.moe.num_experts:
        raise ValueError(f"ep must be at most {m.moe.num_experts} ({m.name}'s experts), got {ep}")
    if mb > batch:
        raise ValueError(f"Micro-batches must be at most the batch ({batch}): each holds at least one sequence, got {mb}")
    if batch % ep:
        raise ValueError(f"ep ({ep}) must divide the batch ({batch}): each device takes batch / ep sequences")

    pc = transformer.param_counts(m)
    total_w = weight_bytes(pc.total, weights)
    expert_w = weight_bytes(pc.experts, weights) if pc.experts else 0.0
    w_dev = (total_w - expert_w) / (tp * pp) + expert_w / (tp * pp * ep)
    kv_split = 1 if m.mla is not None else min(tp, m.num_kv_heads)
    kv_all = kv_cache_bytes(m, kv_precision(kv), context, batch)
    kv_dev = kv_all / (pp * ep * kv_split)
    need = w_dev + kv_dev
    fits = need <= a.memory_bytes * (1 - RUNTIME_ALLOWANCE)

    tokens = batch / ep
    message = tokens * m.hidden_size * ACTIVATION_BYTES
    ar_bytes = ALLREDUCES_PER_LAYER * ring_allreduce_bytes(message, tp)
    ar_s = ar_bytes / wire.bytes_per_s
    a2a = 0.0
    if m.moe is not None and ep > 1:
        a2a = all_to_all_bytes(tokens, m.moe.experts_per_token, m.hidden_size, ACTIVATION_BYTES, ep)
    a2a_s = a2a / wire.bytes_per_s

    # What one device of each stage reads per step; the stages run one after another.
    step = decode_step_bytes(m, weights, kv, context, batch)
    routed = step.routed_expert_share * expert_w
    per_device = ((step.weights_bytes - routed) / (tp * pp) + routed / (tp * pp * ep)
                  + step.kv_cache_bytes / (pp * ep * kv_split))
    read_s = pp * per_device / a.memory_bandwidth
    moe_layers = m.num_layers - (min(m.moe.first_dense_layers, m.num_layers) if m.moe else m.num_layers)
    comm_s = m.num_layers * ar_s + moe_layers * a2a_s
    step_s = read_s + comm_s
    return Plan(
        model=m.id, accelerator=a.id, weights=weights, kv=kv, link=wire.id, context=context, batch=batch,
        tp=tp, pp=pp, ep=ep, microbatches=mb, devices=tp * pp * ep,
        weights_bytes=total_w, weights_bytes_per_device=w_dev, kv_bytes_per_device=kv_dev,
        memory_bytes_per_device=need, fits=fits,
        allreduce_message_bytes=message, allreduce_bytes_per_layer=ar_bytes, allreduce_seconds_per_layer=ar_s,
        alltoall_bytes_per_layer=a2a, alltoall_seconds_per_layer=a2a_s,
        read_seconds_per_layer=read_s / m.num_layers, bubble_fraction=pipeline_bubble(pp, mb),
        decode_step_seconds=step_s, decode_tokens_per_s=batch / step_s,
    )
