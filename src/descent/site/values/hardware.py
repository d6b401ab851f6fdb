"""Value and table shortcodes for Part 4 ("Hardware").

Imported by :mod:`descent.site.values`. The single numbers of Part 4 that are
functions of parameters (``ridge``, ``intensity``, ``tile_intensity``, ``allreduce_bytes_per_layer``,
...) are quantities (:mod:`descent.quantities_part4`); the entries here are the page-only ones:

* ``<!-- descent:table gpu_internals -->``: SMs, tensor cores, registers, shared memory, L2 of every
  catalog GPU with recorded internals, with the shared-memory bandwidth they imply.
* ``<!-- descent:table memory_arrangement -->``: how each kind of accelerator arranges its memory.
* ``<!-- descent:table links -->``: the wires between chips (NVLink, InfiniBand, PCIe).
* ``<!-- descent:table online_softmax_steps -->``: the online softmax on a small worked example.
* ``<!-- descent:table decode_by_batch model=... accelerator=... weights=... context=... -->``:
  decode's intensity and bound as the batch grows.
* ``<!-- descent:value roofline_bound ... -->``: "memory-bound" or "compute-bound".
* ``<!-- descent:value decode_crossover ... -->``: the smallest compute-bound decode batch.
* ``<!-- descent:value measured field=... -->``: this build machine's measured roofline and
  SmolLM2's measured prefill and decode, from the machine's record
  (:func:`descent.trace.roofline_measure.from_record`: nothing is timed at build).
* ``<!-- descent:table measured_roofline -->``: the same, as a table.
"""

from __future__ import annotations

from descent import attention_io, catalog, memory_tiers, roofline
from descent import params as P
from descent.site.shortcodes import table, value
from descent.site.values.quantities import show
from descent.site.values.text import fmt_bytes, fmt_num, md_link_source, md_table, md_text
from descent.units import format_bytes, format_int, format_number, format_percent, format_si, format_time


@table("gpu_internals")
def gpu_internals() -> str:
    """Every catalog GPU with recorded internals: SMs (CUs), tensor cores, registers, shared memory, L2."""
    rows = []
    for a in memory_tiers.gpus():
        smem_bw = memory_tiers.shared_memory_bandwidth(a)
        rf = a.register_file_per_unit_bytes
        rows.append([
            md_text(a.name), f"{format_int(a.compute_units)} {md_text(a.compute_units_name)}s",
            format_int(a.tensor_cores_per_unit) if a.tensor_cores_per_unit else "not published",
            fmt_bytes(rf, "KiB") if rf else "not published",
            fmt_bytes(a.shared_memory_per_unit_bytes, "KiB"),
            (fmt_bytes(a.l2_bytes, "MiB") + (" (third-party, unverified)" if a.unverified("l2_bytes") else ""))
            if a.l2_bytes else "not published",
            format_si(a.clock_hz, "Hz", 3, trim=True) if a.clock_hz else "not published",
            format_si(smem_bw, "B/s", 3, trim=True) if smem_bw else "not published",
        ])
    return md_table(["GPU", "compute units", "tensor cores each", "registers each", "shared memory each",
                     "L2 cache", "clock", "shared-memory bandwidth"], rows, "lrrrrrrr")

@table("memory_arrangement")
def memory_arrangement() -> str:
    """How each kind of catalog accelerator arranges its memory, with the source."""
    seen: dict[int, list[str]] = {}
    arrs = []
    for a in catalog.accelerators().values():
        arr = memory_tiers.arrangement(a)
        key = id(arr)
        if key not in seen:
            seen[key] = []
            arrs.append(arr)
        seen[key].append(md_text(a.name.removeprefix(a.vendor + " ").split(" (")[0]))
    rows = [[", ".join(seen[id(arr)]), arr.on_chip, arr.off_chip, arr.managed, md_link_source(arr.source)]
            for arr in arrs]
    return md_table(["chips", "on the chip", "weights live in", "who decides what is on chip", "source"], rows)

@table("links")
def links() -> str:
    """The wires between accelerators: bandwidth per GPU in one direction, scope, source."""
    rows = [[x.label, format_si(x.bytes_per_s, "B/s", 3, trim=True),
             x.scope + (f", {format_int(x.domain)} GPUs" if x.domain else ""), md_link_source(x.source)]
            for x in catalog.links().values() if x.scope != "storage"]
    return md_table(["link", "per GPU, each way", "joins", "source"], rows, "lrll")

@table("online_softmax_steps")
def online_softmax_steps() -> str:
    """The online softmax on 8 scores in blocks of 3: running max, rescale factor and running sum
    (descent.attention_io.online_softmax_example)."""
    ex = attention_io.online_softmax_example()
    rows = []
    for s, blk in zip(ex.steps, ex.block_scores, strict=True):
        rows.append([s.number, ", ".join(format_number(x, 2, trim=True) for x in blk),
                     fmt_num(s.block_max), fmt_num(s.running_max),
                     "—" if s.block == 0 else format_number(s.rescale, 3), format_number(s.running_sum, 4)])
    caption = (f"\n\nThe weighted sum of the values 1 to {len(ex.values)} comes out as "
               f"{format_number(ex.output, 6)} block by block and {format_number(ex.plain, 6)} with the plain softmax.")
    return md_table(["block", "scores", "block max", "running max m", "rescale e^(m - m')", "running sum"],
                    rows, "rlrrrr") + caption

@table("decode_by_batch", P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.CONTEXT)
def decode_by_batch(model: str, accelerator: str, weights: str, context: int) -> str:
    """One decode step at batches 1, 4, 16, ... up to the largest batch whose KV cache fits on one
    device (descent.economics.decode_batches, closed by descent.economics.max_batch): intensity,
    which roof binds, share of peak, tokens/s. A caption names that largest batch; no row is a batch the chip cannot hold."""
    from descent import economics

    batches = economics.decode_batches(model, accelerator, weights, P.KV.default, context)
    if not batches:
        return f"Not one sequence of {format_int(context)} tokens fits beside the weights on one device."
    rows = []
    for b in batches:
        s = roofline.step(model, accelerator, weights, P.KV.default, context, b)
        rows.append([format_int(b), format_number(s.intensity, 3, trim=True), s.bound,
                     format_percent(s.compute_share), format_time(s.seconds_per_step),
                     format_number(s.tokens_per_s, 3)])
    a = catalog.accelerator(accelerator)
    caption = (f"\n\nThe last row is the largest batch whose KV cache fits beside the weights in one "
               f"{md_text(a.name)}'s usable memory, at {format_int(context)} tokens each; a larger batch "
               f"needs more devices.")
    return md_table(["batch", "FLOP/byte", "bound", "share of peak", "step", "tokens/s (all sequences)"],
                    rows, "rrlrrr") + caption

@value("roofline_bound", P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH, P.PHASE)
def roofline_bound(**kw) -> str:
    """Which roof binds a step: "memory-bound" or "compute-bound" (descent.roofline.step)."""
    return roofline.step(**kw).bound + "-bound"

@value("decode_crossover", P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV, P.CONTEXT)
def decode_crossover(**kw) -> str:
    """The smallest decode batch that is compute-bound, or "no batch" (descent.roofline.crossover_batch)."""
    b = roofline.crossover_batch(**kw)
    return "no batch" if b is None else format_int(b)

MEASURED_FIELDS = {
    "cpu": lambda m: m["machine"]["cpu"],
    "cores": lambda m: format_int(m["machine"]["cores"]),
    "threads": lambda m: str(m["machine"]["blas_threads"]),
    "date": lambda m: m["measured_at"],
    "gemm_flops": lambda m: format_si(m["gemm"]["flops_per_s"], "FLOP/s", 3, trim=True),
    "gemm_n": lambda m: format_int(m["gemm"]["n"]),
    "bandwidth": lambda m: format_si(m["stream"]["bytes_per_s"], "B/s", 3, trim=True),
    "stream_bytes": lambda m: format_bytes(m["stream"]["bytes"], "MiB", 3, trim=True),
    "ridge": lambda m: format_number(m["ridge"], 3, trim=True) + " FLOP/byte",
    "prefill_tokens": lambda m: format_int(m["prefill"]["tokens"]),
    "prefill_tokens_per_s": lambda m: format_number(m["prefill"]["tokens_per_s"], 3) + " tokens/s",
    "prefill_intensity": lambda m: format_number(m["prefill"]["intensity"], 3, trim=True) + " FLOP/byte",
    "prefill_flops_per_s": lambda m: format_si(m["prefill"]["flops_per_s"], "FLOP/s", 3, trim=True),
    "prefill_share_of_peak": lambda m: format_percent(m["prefill"]["share_of_peak"], 2),
    "decode_steps": lambda m: format_int(m["decode"]["steps"]),
    "decode_tokens_per_s": lambda m: format_number(m["decode"]["tokens_per_s"], 3) + " tokens/s",
    "decode_step": lambda m: format_time(m["decode"]["seconds_per_step"]),
    "decode_bytes": lambda m: fmt_bytes(m["decode"]["bytes_per_step"], "MB"),
    "decode_intensity": lambda m: format_number(m["decode"]["intensity"], 3, trim=True) + " FLOP/byte",
    "decode_flops_per_s": lambda m: format_si(m["decode"]["flops_per_s"], "FLOP/s", 3, trim=True),
    "decode_bound_tokens_per_s": lambda m: format_number(m["decode"]["bandwidth_bound_tokens_per_s"], 3) + " tokens/s",
    "decode_share_of_bound": lambda m: format_percent(m["decode"]["share_of_bandwidth_bound"], 2),
}

MEASURED_FIELD = P.declare(P.Param(
    "field", "Measured fact", "choice", key="measured_field", choices=[(f, f) for f in MEASURED_FIELDS],
    help="a number of the build machine's measured roofline: " + ", ".join(MEASURED_FIELDS),
))

def _measured() -> dict:
    from descent.trace.roofline_measure import from_record

    return from_record()

@value("measured", MEASURED_FIELD)
def measured(field: str) -> str:
    """This build machine's measured roofline and SmolLM2's measured speeds (its record)."""
    return MEASURED_FIELDS[field](_measured())

@table("measured_roofline")
def measured_roofline() -> str:
    """The measured roofline of the build machine and SmolLM2's two points on it."""
    m = _measured()
    f = {k: fn(m) for k, fn in MEASURED_FIELDS.items()}
    rows = [
        ["peak arithmetic (float32 product)", f["gemm_flops"], f"median of {m['gemm']['repeats']} products of "
         f"{f['gemm_n']} x {f['gemm_n']} matrices"],
        ["memory read bandwidth", f["bandwidth"], f"median of {m['stream']['repeats']} reads of {f['stream_bytes']}"],
        ["ridge point", f["ridge"], "peak / bandwidth"],
        ["SmolLM2 prefill", f["prefill_tokens_per_s"],
         f"{f['prefill_tokens']} tokens at {f['prefill_intensity']}: {f['prefill_flops_per_s']}, "
         f"{f['prefill_share_of_peak']} of the peak"],
        ["SmolLM2 decode", f["decode_tokens_per_s"],
         f"{f['decode_bytes']} read per step at {f['decode_intensity']}: {f['decode_share_of_bound']} of "
         f"the {f['decode_bound_tokens_per_s']} the bandwidth allows"],
    ]
    return md_table(["measured", "value", "how"], rows, "lrl")

GPU_FACTS = {
    "units": lambda a, t: format_int(a.compute_units),
    "tensor_cores": lambda a, t: show("tensor_cores_total", accelerator=a.id),
    "tensor_cores_per_unit": lambda a, t: format_int(a.tensor_cores_per_unit),
    "registers_per_unit": lambda a, t: fmt_bytes(a.register_file_per_unit_bytes, "KiB"),
    "registers_total": lambda a, t: fmt_bytes(t["registers"].size_bytes, "MiB"),
    "shared_per_unit": lambda a, t: fmt_bytes(a.shared_memory_per_unit_bytes, "KiB"),
    "shared_total": lambda a, t: fmt_bytes(t["shared"].size_bytes, "MiB"),
    "l2": lambda a, t: fmt_bytes(a.l2_bytes, "MiB"),
    "shared_bandwidth": lambda a, t: format_si(t["shared"].bandwidth, "B/s", 3, trim=True),
    "shared_vs_hbm_bandwidth": lambda a, t: show("shared_vs_hbm_bandwidth", sig=2, accelerator=a.id),
    "hbm_vs_shared_size": lambda a, t: show("hbm_vs_shared_size", sig=2, accelerator=a.id),
    "hbm_vs_l2_size": lambda a, t: show("hbm_vs_l2_size", sig=2, accelerator=a.id),
    "hbm_vs_link_bandwidth": lambda a, t: show("hbm_vs_link_bandwidth", sig=2, accelerator=a.id),
}

GPU_FACT = P.declare(P.Param(
    "field", "GPU fact", "choice", key="gpu_fact", choices=[(f, f) for f in GPU_FACTS],
    help="one number of a GPU's internals: " + ", ".join(GPU_FACTS),
))

@value("gpu_fact", P.ACCELERATOR, GPU_FACT)
def gpu_fact(accelerator: str, field: str) -> str:
    """A number of one GPU's internals or memory pyramid (descent.memory_tiers), for running text."""
    a = catalog.accelerator(accelerator)
    tiers = memory_tiers.tiers(a)
    by = {"registers": tiers[0], "shared": tiers[1]}
    try:
        return GPU_FACTS[field](a, by)
    except (TypeError, ValueError):  # a None field: the catalog does not record it for this chip
        raise ValueError(f"gpu_fact {field}: not recorded for {a.name}") from None
