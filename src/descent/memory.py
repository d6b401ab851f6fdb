"""The memory budget: what a model needs (weights + KV cache) against what a chip offers.

    need     = weights + KV cache                             (the model's own bytes: no chip in it)
    weights  = sum over groups of params x bits / 8            (MoE: ALL experts are stored;
               descent.weights.bytes_by_group: as released, a GGUF mix, or one precision)
    KV cache = kv_cache_elements(model, context) x batch x kv_bits / 8
    usable   = capacity x (1 - runtime allowance)             (Scenario.usable_bytes; 10% by default)
    fits     = need <= usable  (capacity in true bytes: H100's "80 GB" is 80 GiB)

The runtime allowance is a choice, shown as one: a share of the accelerator's memory kept back
for what is neither weights nor KV cache. It reduces what the chip offers; it is not part of what
the model needs, so a model's need is the same on every chip. vLLM's ``gpu_memory_utilization`` (default 0.9, vLLM
engine arguments documentation) caps the share of the GPU's memory the engine may use at all; the
rest is left to the CUDA/ROCm context and anything else on the GPU. Inside the engine's share,
vLLM profiles a forward pass and sets the activations and workspace aside before it gives the
remainder to the KV cache. So the 10% default is a round stand-in for "the memory that is neither
weights nor KV cache" (context, activations, workspace, allocator fragmentation), not a
measurement; readers can change it (``runtime_percent``), and it is its own segment of the bar.
Against vLLM at 0.9 the KV room computed here is an upper bound: the activation peak, CUDA graphs
and non-torch memory (a few GB) come out of vLLM's 90% too, and are not subtracted.

Decode speed comes along (``bytes_per_decode_step``, ``decode_tokens_per_s``) from
:mod:`descent.step` (its decode step on one device); it reads only the *active* weights, while memory holds all of them.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from descent import catalog, params, transformer
from descent import step as S
from descent.catalog import Accelerator, Model, resolve_accelerator, resolve_model
from descent.checks import is_real
from descent.compare import Compared
from descent.compare import compare as _compare
from descent.numerics import BITS_PER_BYTE, kv_precision
from descent.scenario import Scenario
from descent.step import footprint
from descent.units import format_bytes, format_count, format_int, format_percent
from descent.weights import bytes_by_group

__all__ = ["COMPARED", "JSON_NAMES", "NEEDS_FIT", "Compared", "Sizing", "as_json", "across_field", "compare", "fit_cell", "fit_sentence", "fits_in", "moe_line", "size",
           "smallest_capacity"]


@dataclass(frozen=True)
class Sizing:
    """Result of :func:`size`. Units: parameters, bytes, bytes/s, tokens/s.

    Attributes:
        model: model id.
        accelerator: accelerator id.
        weights: weight choice (``released``, a GGUF mix or a precision name).
        kv: KV-cache precision name.
        context: tokens per sequence in the KV cache.
        batch: B, sequences held at once.
        params_total: all parameters (MoE: every expert), stored in memory.
        params_active: parameters used per token (MoE: k of E experts; embedding table included).
        weights_bytes: every stored weight, bytes: the sum of ``weights_bytes_by_group``.
        weights_bytes_by_group: bytes of each weight group (``descent.weights.GROUPS``).
        kv_bytes_per_token: KV cache per token of one sequence, all layers (no window cap), bytes.
        kv_cache_bytes: KV cache of B sequences at ``context`` (sliding windows capped), bytes.
        runtime_percent: the runtime allowance, percent of capacity.
        runtime_bytes: ``runtime_percent / 100 x capacity_bytes``, bytes: kept back from the chip.
        need_bytes: weights + KV cache, bytes: what the model needs, the same on every chip.
        usable_bytes: ``capacity_bytes - runtime_bytes`` (``Scenario.usable_bytes``), bytes: what
            the chip offers the weights and the KV cache.
        capacity_bytes: accelerator memory, true bytes.
        free_bytes: usable - need (= capacity - need - runtime), bytes; negative = over by that much.
        fits: ``need_bytes <= usable_bytes``.
        accelerators_needed: fewest such chips whose usable memory (capacity x (1 - allowance))
            holds weights + KV cache, ignoring parallelism overheads; 1 when it fits.
        beyond_max_context: ``context`` exceeds the model's published ``max_context``.
        memory_bandwidth: accelerator memory bandwidth, bytes/s.
        peak_flops: dense peak FLOP/s in ``compute_precision``.
        compute_precision: the precision the matmuls run in (``step.compute_precision``).
        bytes_per_decode_step: bytes one decode step of B sequences reads (the step model), bytes.
        flops_per_decode_step: FLOPs of one decode step of B sequences, FLOP.
        decode_memory_tokens_per_s: bandwidth / bytes_per_decode_step, tokens/s per sequence.
        decode_compute_tokens_per_s: peak / flops_per_decode_step, tokens/s per sequence.
        decode_tokens_per_s: ceiling per sequence, the lower of the two, tokens/s.
        decode_tokens_per_s_total: ceiling over the batch, B x per sequence, tokens/s.
        bound: ``"memory"`` or ``"compute"``: which ceiling binds at this batch.
        compute_bound_batch: smallest batch at which decode is compute-bound (None: none up to
            the batch limit, e.g. at long contexts where each sequence's KV cache dominates).
    """

    model: str
    accelerator: str
    weights: str
    kv: str
    context: int
    batch: int
    params_total: int
    params_active: int
    weights_bytes: float
    weights_bytes_by_group: dict[str, float]
    kv_bytes_per_token: float
    kv_cache_bytes: float
    runtime_percent: float
    runtime_bytes: float
    need_bytes: float
    usable_bytes: float
    capacity_bytes: int
    free_bytes: float
    fits: bool
    accelerators_needed: int
    beyond_max_context: bool
    memory_bandwidth: float
    peak_flops: float
    compute_precision: str
    bytes_per_decode_step: float
    flops_per_decode_step: float
    decode_memory_tokens_per_s: float
    decode_compute_tokens_per_s: float
    decode_tokens_per_s: float
    decode_tokens_per_s_total: float
    bound: str
    compute_bound_batch: int | None

    def segments(self) -> list[tuple[str, float]]:
        """The stacked bar against ``capacity_bytes``: (label, bytes) for weights, KV cache, runtime."""
        return [
            ("weights", self.weights_bytes),
            ("KV cache", self.kv_cache_bytes),
            ("runtime allowance", self.runtime_bytes),
        ]


def fits_in(total_bytes: float, accelerator: str | Accelerator) -> bool:
    """True when ``total_bytes`` (already including any runtime allowance) fit in the chip's memory.

    Compares true bytes: a need of 141.1 GB (141.1e9 bytes) fits in H200's "141 GB", which is
    141 GiB = 151.4e9 bytes. Raises ValueError for an unknown id or a negative/non-finite size.
    """
    if not is_real(total_bytes) or not 0 <= total_bytes < math.inf:
        raise ValueError(f"total_bytes must be a number of bytes >= 0, got {total_bytes!r}")
    return total_bytes <= resolve_accelerator(accelerator).memory_bytes


def size(
    model: str | Model,
    accelerator: str | Accelerator,
    weights: str = Scenario.weights,
    kv: str = Scenario.kv,
    context: int = Scenario.context,
    batch: int = Scenario.batch,
    runtime_percent: float = params.RUNTIME.default,
) -> Sizing:
    """Size a model on one accelerator: memory segments, fit, and the decode ceiling.

    Args:
        model: model or catalog id (``descent.catalog.models()``).
        accelerator: accelerator or catalog id (``descent.catalog.accelerators()``).
        weights: ``released`` (the published checkpoint's precision per group), a GGUF mix
            (``q4_k_m`` ...), or one precision for every weight (``numerics.PRECISIONS``).
        kv: KV-cache precision (``numerics.KV_PRECISIONS``).
        context: tokens per sequence, 1 to 20,000,000 (beyond the model's max_context is allowed
            and flagged in ``beyond_max_context``).
        batch: sequences, 1 to ``step.MAX_BATCH`` (100,000).
        runtime_percent: memory kept back for the runtime, percent of capacity (0 to 50).

    Returns:
        :class:`Sizing`.

    Raises:
        ValueError: unknown model/accelerator id or precision (message lists the allowed values),
            context, batch or runtime allowance out of range.
    """
    mod = resolve_model(model)
    a = resolve_accelerator(accelerator)
    sc = Scenario(model=mod, weights=S.check_weights(weights), kv=kv, context=context, batch=batch)
    mod, w, kp = sc.model_row, sc.weights, kv_precision(sc.kv)
    params.RUNTIME.check(float(runtime_percent) if is_real(runtime_percent) else runtime_percent)
    sc = sc.but(accelerator=a, runtime_percent=float(runtime_percent))
    allowance = runtime_percent / 100

    pc = transformer.param_counts(mod)
    by_group = bytes_by_group(mod, w)
    fp = footprint(sc)  # the step model's: what one device holds
    w_bytes, kv_bytes = fp.weights_bytes, fp.kv_bytes
    kv_per_token = transformer.kv_elements_per_token(mod) * kp.bits_per_weight / BITS_PER_BYTE
    capacity = a.memory_bytes
    runtime = allowance * capacity
    need = fp.need_bytes  # weights + KV cache: the model's own bytes
    usable = sc.usable_bytes
    needed = max(1, math.ceil(need / usable))

    c = S.decode(sc)  # the step model's decode step on one device
    return Sizing(
        model=mod.id,
        accelerator=a.id,
        weights=w,
        kv=kp.name,
        context=context,
        batch=batch,
        params_total=pc.total,
        params_active=pc.active,
        weights_bytes=w_bytes,
        weights_bytes_by_group=by_group,
        kv_bytes_per_token=kv_per_token,
        kv_cache_bytes=kv_bytes,
        runtime_percent=float(runtime_percent),
        runtime_bytes=runtime,
        need_bytes=need,
        usable_bytes=usable,
        capacity_bytes=capacity,
        free_bytes=usable - need,
        fits=need <= usable,
        accelerators_needed=needed,
        beyond_max_context=context > mod.max_context,
        memory_bandwidth=a.memory_bandwidth,
        peak_flops=c.peak_flops,
        compute_precision=c.compute_precision,
        bytes_per_decode_step=c.bytes,
        flops_per_decode_step=c.flops,
        decode_memory_tokens_per_s=1 / c.memory_seconds,
        # A chip described without a peak (descent.custom) has no compute ceiling: infinite.
        decode_compute_tokens_per_s=1 / c.compute_seconds if c.compute_seconds else math.inf,
        decode_tokens_per_s=c.tokens_per_s_per_sequence,
        decode_tokens_per_s_total=c.tokens_per_s_total,
        bound=c.bound,
        compute_bound_batch=S.compute_bound_batch(sc),
    )


def smallest_capacity(need_bytes: float, runtime_percent: float = params.RUNTIME.default) -> float:
    """The smallest chip memory whose usable share holds ``need_bytes``: need / (1 - allowance), bytes.

    A chip of at least this capacity holds the model alone (``Sizing.fits``). Raises ValueError for
    a negative or non-finite need or an allowance outside ``params.RUNTIME``."""
    if not (is_real(need_bytes) and 0 <= need_bytes < math.inf):
        raise ValueError(f"need must be a number of bytes >= 0, got {need_bytes!r}")
    params.RUNTIME.check(float(runtime_percent) if is_real(runtime_percent) else runtime_percent)
    return need_bytes / (1 - runtime_percent / 100)


def fit_sentence(s: Sizing, fmt=None, on: str = "") -> str:
    """THE sentence every page and widget uses for a fit: whether the model (weights and KV cache,
    the same on every chip) fits in what the chip offers once its runtime allowance is kept back,
    and by how much. Its one idea carries one number (two without a fit: the shortfall and the chips
    it would take); the need, the allowance and the capacity are the widget's stats and bar.

    ``fmt`` formats bytes (default: GB to 3 figures); ``on`` names the chip ("one H200") after
    "Fits"/"Does not fit"."""
    fmt = fmt or (lambda n: format_bytes(n, "GB", 3, trim=True))
    where = f" on {on}" if on else ""
    if s.fits:
        return f"Fits{where}, with {fmt(s.free_bytes)} to spare after the runtime allowance."
    chips = format_int(s.accelerators_needed)
    return (f"Does not fit{where}: it needs {fmt(-s.free_bytes)} more than the chip offers after the runtime "
            f"allowance. It would take at least {chips} such chips, before what splitting a model across chips costs.")


def fit_cell(s: Sizing, fmt=None) -> str:
    """The short form of :func:`fit_sentence` for a table cell or a bar's note: "fits" or
    "won't fit: needs X, Y usable"."""
    fmt = fmt or (lambda n: format_bytes(n, "GB", 3, trim=True))
    if s.fits:
        return "fits"
    return f"won't fit: needs {fmt(s.need_bytes)}, {fmt(s.usable_bytes)} usable"


def moe_line(model: str | Model) -> str | None:
    """For a mixture-of-experts model: stored vs per-token parameters, as one sentence; else None.

    Uses :func:`descent.transformer.param_counts` (``total`` counts every expert, ``active`` the
    k of E experts one token runs through, plus everything shared). Raises ValueError for an
    unknown model id.
    """
    m = resolve_model(model)
    if m.moe is None:
        return None
    pc = transformer.param_counts(m)
    share = pc.active / pc.total
    return (
        f"{m.name} is a mixture of experts: memory holds all {format_count(pc.total)} parameters "
        f"({m.moe.num_experts} experts per layer), but each token runs through only "
        f"{m.moe.experts_per_token} of them, {format_count(pc.active)} parameters ({format_percent(share, decimals=1)} of the total)."
    )


def across_field(
    model: str, weights: str = Scenario.weights, kv: str = Scenario.kv, context: int = Scenario.context, batch: int = Scenario.batch
) -> list[Sizing]:
    """One :class:`~descent.memory.Sizing` per catalog accelerator, fastest decode ceiling first.

    Args:
        model: catalog model id. weights: weight precision (``numerics.PRECISIONS``).
        kv: KV-cache precision (``numerics.KV_PRECISIONS``). context: tokens per sequence, 1 to
        20,000,000. batch: sequences, 1 to ``step.MAX_BATCH``.

    Returns:
        ``[Sizing, ...]`` sorted by ``decode_tokens_per_s`` (tokens/s per sequence), descending;
        ties keep catalog order. ``Sizing.fits`` is False for a chip whose memory is below the
        weights + KV cache + runtime allowance: its ceiling holds only "if it fit".

    Raises:
        ValueError: as :func:`descent.memory.size` (unknown id or precision, context or batch out
            of range).
    """
    rows = [size(model, a, weights, kv, context, batch) for a in catalog.accelerators()]
    return sorted(rows, key=lambda s: -s.decode_tokens_per_s)


def split_field(rows: list[Sizing]) -> tuple[list[Sizing], list[Sizing]]:
    """(rows a one-chip comparison shows, rows it leaves out): the second are the machines that are
    not ``Accelerator.single_chip_comparable`` (weights in on-chip SRAM, a model spread over many
    chips), for which a one-chip ceiling "if it fit" is no serving speed. Order is kept."""
    shown = [s for s in rows if catalog.accelerator(s.accelerator).single_chip_comparable]
    left = [s for s in rows if not catalog.accelerator(s.accelerator).single_chip_comparable]
    return shown, left


def sharded_sentence(left: list[Sizing]) -> str:
    """A few short sentences naming the left-out machines: why they are left out, then one sentence
    per machine with the fewest chips whose memory holds the model (``Sizing.accelerators_needed``)
    and its memory per chip; "" when none. One machine a sentence, so no sentence carries more than
    the two or three numbers its machine needs (issue 23)."""
    if not left:
        return ""
    out = ["Not in the comparison: the machines that keep the weights in on-chip memory and serve a model "
           "spread over many chips, where a one-chip speed would mean nothing."]
    for s in left:
        a = catalog.accelerator(s.accelerator)
        n = s.accelerators_needed
        # The site's convention for a memory size: binary units, decimal ones in parentheses.
        each = (f"{format_bytes(a.memory_bytes, 'auto-binary', 3, trim=True)} "
                f"({format_bytes(a.memory_bytes, 'auto', 3, trim=True)})")
        out.append(f"{a.name.split(' (')[0]} would need at least {format_int(n)} {'chip' if n == 1 else 'chips'} "
                   f"of {each} each.")
    return " ".join(out)


#: ``descent size --json`` keys that differ from the sizing's field names: the quantity each is
#: (the decode step's FLOPs and bytes are the roofline's ``flops_per_step`` and ``bytes_per_step``).
JSON_NAMES = {"bytes_per_decode_step": "bytes_per_step", "flops_per_decode_step": "flops_per_step"}


def as_json(s: Sizing) -> dict:
    """A sizing's fields under the names ``descent size --json`` prints (:data:`JSON_NAMES`): what the
    sandbox's "Copy as JSON" holds too."""
    return {JSON_NAMES.get(k, k): v for k, v in dataclasses.asdict(s).items()}


#: What :func:`compare` sets side by side: (Sizing field, label, which is better: "lower" / "higher").
COMPARED = (
    ("need_bytes", "Memory needed (weights + KV cache)", "lower"),
    ("weights_bytes", "Weights", "lower"),
    ("kv_cache_bytes", "KV cache", "lower"),
    ("free_bytes", "Memory left free", "higher"),
    ("decode_tokens_per_s", "Decode ceiling per sequence", "higher"),
    ("decode_tokens_per_s_total", "Decode ceiling in total", "higher"),
)


#: The outputs of :data:`COMPARED` only a set-up that fits can reach (:func:`descent.compare.compare`).
NEEDS_FIT = ("decode_tokens_per_s", "decode_tokens_per_s_total")


def compare(before: Sizing, after: Sizing) -> list[Compared]:
    """Two sizings output by output (:data:`COMPARED`; less memory and more tokens/s are better),
    then whether each fits (fitting is better). For the sandbox's pinned set-up and ``descent size
    --compare`` (issue 26; :func:`descent.compare.compare`)."""
    return _compare(before, after, (*COMPARED, ("fits", "Fits on one chip", "higher")), needs_fit=NEEDS_FIT)
