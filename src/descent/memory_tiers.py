"""A GPU's memory pyramid: each tier's size and bandwidth from the catalog, and the ratios.

From the tensor cores outwards (sizes for the whole chip; bandwidths in bytes/s):

* **registers**: ``register_file_per_unit_bytes x compute_units``. Bandwidth: not published.
* **shared memory** (NVIDIA) / LDS (AMD): the scratchpad a kernel loads its tiles into,
  ``shared_memory_per_unit_bytes x compute_units``; bandwidth
  ``compute_units x shared_memory_bytes_per_clock x clock_hz`` (NVIDIA: 32 banks of 4 bytes per
  clock per SM, CUDA C++ Programming Guide). For the A100 (108 SMs at 1.41 GHz) this rule gives
  19.5 TB/s, the "around 19 TB/s" of Dao et al. 2022, section 2.1.
* **L2 cache**: ``l2_bytes``, shared by every SM. Bandwidth: not published by the vendors.
* **Infinity Cache** (AMD only): ``last_level_cache_bytes``.
* **HBM** (or GDDR): ``memory_bytes`` at ``memory_bandwidth``: where the weights and KV cache live.
* **the wires below HBM**: the chip's scale-up link (``scale_up_bandwidth``, halved: one
  direction) and a 400 Gb/s InfiniBand port (catalog ``links.toml``), the next tiers when
  a model spans many chips.

A tier whose value is not published has ``None``: the pyramid says so rather than guessing.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from dataclasses import dataclass

from descent import catalog
from descent.catalog import Accelerator, links, resolve_accelerator

__all__ = ["ARRANGEMENTS", "Arrangement", "Tier", "arrangement", "gpus", "shared_memory_bandwidth", "tiers"]

#: The scale-out link shown below a chip's scale-up link.
SCALE_OUT_LINK = "ib-ndr"


@dataclass(frozen=True)
class Tier:
    """One level of the pyramid.

    Attributes:
        name: "registers", "shared memory", "L2 cache", ...
        size_bytes: capacity of the whole chip at this level, bytes (None: not published, or a
            link, which stores nothing).
        bandwidth: bytes/s the level delivers to the chip (None: not published).
        per_unit_bytes: capacity per SM/CU where the level is per unit (else None).
        managed: ``"software"`` (the kernel decides what lives there), ``"hardware"`` (a cache),
            ``"main memory"`` or ``"link"``.
        size_vs_hbm: ``size_bytes / memory_bytes`` (None when either is unknown).
        bandwidth_vs_hbm: ``bandwidth / memory_bandwidth`` (None when unknown).
        source: the catalog field(s) or link it comes from.
    """

    name: str
    size_bytes: float | None
    bandwidth: float | None
    per_unit_bytes: int | None
    managed: str
    size_vs_hbm: float | None
    bandwidth_vs_hbm: float | None
    source: str


def gpus() -> list[Accelerator]:
    """Catalog GPUs whose internals are recorded (shared memory per SM/CU), in catalog order."""
    return [a for a in catalog.accelerators().values()
            if a.kind == "gpu" and a.shared_memory_per_unit_bytes is not None]


def _gpu(accelerator: str | Accelerator) -> Accelerator:
    a = resolve_accelerator(accelerator)
    if a.kind != "gpu" or a.shared_memory_per_unit_bytes is None:
        raise ValueError(f"{a.name} is not a GPU with recorded internals; allowed: {', '.join(g.id for g in gpus())}")
    return a


def shared_memory_bandwidth(accelerator: str | Accelerator) -> float | None:
    """Shared memory (LDS) bandwidth of the whole chip, bytes/s, or None when not derivable.

    ``compute_units x shared_memory_bytes_per_clock x clock_hz`` (H100 SXM: 132 x 128 x 1.83e9 =
    30.9 TB/s). Source: the per-clock figure's catalog source (CUDA C++ Programming Guide for
    NVIDIA: 32 banks, 32 bits each per clock).

    Raises:
        ValueError: unknown accelerator, or not a GPU with recorded internals.
    """
    a = _gpu(accelerator)
    if a.shared_memory_bytes_per_clock is None or a.clock_hz is None:
        return None
    return a.compute_units * a.shared_memory_bytes_per_clock * a.clock_hz


def tiers(accelerator: str | Accelerator) -> list[Tier]:
    """The pyramid of one GPU, innermost tier first (see the module docstring).

    Raises:
        ValueError: unknown accelerator, or not a GPU with recorded internals (:func:`gpus`).
    """
    a = _gpu(accelerator)
    units = a.compute_units
    unit = a.compute_units_name

    def tier(name, size, bw, per_unit, managed, source):
        return Tier(name, size, bw, per_unit, managed,
                    None if size is None else size / a.memory_bytes,
                    None if bw is None else bw / a.memory_bandwidth, source)

    rf = a.register_file_per_unit_bytes
    out = [
        tier("registers", None if rf is None else rf * units, None, rf, "software",
             f"register_file_per_unit_bytes x {units} {unit}s"),
        tier("shared memory" if a.vendor == "NVIDIA" else "LDS (shared memory)",
             a.shared_memory_per_unit_bytes * units, shared_memory_bandwidth(a), a.shared_memory_per_unit_bytes,
             "software", f"shared_memory_per_unit_bytes x {units} {unit}s; bandwidth {unit}s x bytes per clock x clock"),
        tier("L2 cache", a.l2_bytes, None, None, "hardware", "l2_bytes"),
    ]
    if a.last_level_cache_bytes is not None:
        out.append(tier("Infinity Cache", a.last_level_cache_bytes, None, None, "hardware", "last_level_cache_bytes"))
    out.append(tier(a.memory_type, a.memory_bytes, a.memory_bandwidth, None, "main memory",
                    "memory_bytes, memory_bandwidth"))
    if a.scale_up_bandwidth is not None:
        out.append(tier(f"{a.scale_up_name} to other GPUs", None, a.scale_up_bandwidth / 2, None, "link",
                        "scale_up_bandwidth / 2 (one direction)"))
    net = links()[SCALE_OUT_LINK]
    out.append(tier(f"{net.label.split(',')[0]} to other servers", None, net.bytes_per_s, None, "link", net.source))
    return out


@dataclass(frozen=True)
class Arrangement:
    """How a kind of accelerator arranges its memory, in words, with the source.

    Attributes:
        on_chip: what sits on the chip next to the arithmetic.
        off_chip: where the weights and the KV cache live.
        managed: who decides what is on chip: a hardware cache, the kernel, or the compiler.
        source: where this is stated.
    """

    on_chip: str
    off_chip: str
    managed: str
    source: str


#: By catalog id first, then by ``Accelerator.kind``.
ARRANGEMENTS: dict[str, Arrangement] = {
    "gpu": Arrangement(
        "registers and a shared memory in every SM (CU), and an L2 cache all of them share",
        "HBM stacks beside the die on the same package (GDDR chips on the board for a desktop card)",
        "the kernel fills shared memory itself; L2 is a hardware cache",
        "NVIDIA H100 Tensor Core GPU Architecture whitepaper (SM and memory hierarchy); AMD CDNA 3 whitepaper",
    ),
    "tpu": Arrangement(
        "a vector memory (VMEM) in each TensorCore, feeding its systolic matrix units (MXUs)",
        "HBM beside the chip",
        "software: the compiler moves tiles between HBM and VMEM; no cache hierarchy for tensors",
        "Austin et al., How to Scale Your Model, 'How to Think About TPUs' (jax-ml.github.io/scaling-book/tpus)",
    ),
    "asic": Arrangement(
        "a state buffer (SBUF) and a partial-sum buffer (PSUM) in each NeuronCore, beside its tensor engine",
        "HBM beside the chip",
        "software: the compiler (or an NKI kernel) moves data between HBM and SBUF",
        "AWS Neuron documentation, 'NeuronCore-v4 Architecture' and 'Trainium3 Architecture'",
    ),
    "soc": Arrangement(
        "caches shared by the CPU and GPU cores (sizes not published)",
        "one unified LPDDR5 pool shared by the CPU, the GPU and the operating system",
        "hardware caches",
        "Apple Mac Studio (2025) technical specifications",
    ),
    "sram": Arrangement(
        "SRAM on the chip (or wafer) is the main memory",
        "none: a model is spread over as many chips as its weights need",
        "software: the compiler places every tensor",
        "the chip's catalog sources (descent.catalog: notes of each SRAM machine)",
    ),
    "gaudi-3": Arrangement(
        "96 MB of SRAM cache, 24 MB in each of 4 deep-learning cores (DCOREs) beside their 2 matrix "
        "engines (MMEs) and 16 tensor processor cores (TPCs)",
        "HBM2e stacks beside the two dies, one address space",
        "hardware caches: each DCORE's SRAM serves it alone as L2 or all four together as L3, a mode "
        "the software platform may switch",
        "Kaplan, 'Intel Gaudi 3 AI Accelerator: Architected for Gen AI Training and Inference', Hot Chips 2024 "
        "(spec table and block diagram)",
    ),
    "groq-lpu": Arrangement(
        "220 MiB (231 MB) of SRAM, the chip's only memory, spread across its functional slices",
        "none: a model is spread over hundreds of chips linked chip to chip",
        "the compiler schedules every transfer in advance (no caches, deterministic timing)",
        "Abts et al., 'Think Fast: A Tensor Streaming Processor', ISCA 2020, sections 2-3",
    ),
    "cerebras-wse-3": Arrangement(
        "44 GB of SRAM on one wafer, 48 KB beside each of its 900,000 cores",
        "none for a model that fits in the wafers it is spread over; larger ones stream weights from "
        "external MemoryX units",
        "software: each core computes on the data held beside it",
        "Cerebras WSE-3 / CS-3 announcement (cerebras.ai/product-chip, March 2024)",
    ),
}


def arrangement(accelerator: str | Accelerator) -> Arrangement:
    """How ``accelerator`` arranges its memory (:data:`ARRANGEMENTS`, by id, else by kind).

    Raises:
        ValueError: unknown accelerator.
    """
    a = resolve_accelerator(accelerator)
    return ARRANGEMENTS.get(a.id) or ARRANGEMENTS[a.kind]
