"""Part 4 widgets ("Hardware"): inside a GPU, the accelerator landscape, tiled matrix multiply, the
FlashAttention traffic, the roofline of a step, and a model split over many chips.

* ``gpu_anatomy``: one GPU's SMs and tensor cores, and its memory pyramid (:mod:`descent.memory_tiers`).
* ``accelerator_landscape``: every catalog chip by memory capacity and bandwidth (log-log), one
  model's memory need as a line, and for the chosen chip: does it fit, how fast can it decode
  (:func:`descent.memory.size`), how it arranges memory (:func:`descent.memory_tiers.arrangement`).
* ``tiled_gemm``: a 256 x 256 x 1,024 product walked tile by tile (:mod:`descent.tiling`).
* ``layer_matmuls``: FLOPs, bytes and intensity of one layer's matrices for a model and a number
  of tokens, against a chip's ridge (:func:`descent.tiling.layer_matmuls`).
* ``flash_attention``: memory traffic of naive attention against FlashAttention for one head
  (:mod:`descent.attention_io`).
* ``roofline_explorer``: a chip's roofline with one model's decode and prefill steps on it
  (:mod:`descent.roofline`).
* ``parallelism``: a model split by tensor, pipeline and expert parallelism: memory per device,
  communication per layer, the pipeline bubble (:mod:`descent.parallel`).

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

import functools

from descent import (
    attention_io,
    catalog,
    hardware,
    memory_tiers,
    numerics,
    parallel,
    roofline,
    tiling,
    transformer,
)
from descent import params as P
from descent import step as S
from descent.memory import fit_sentence, size, smallest_capacity
from descent.units import (
    GB,
    TB,
    format_bytes,
    format_int,
    format_number,
    format_percent,
    format_rate,
    format_si,
    format_time,
    plural,
)
from descent.widgets import Constraint, FieldError, Input, Look, widget
from descent.widgets import _svg as svg
from descent.widgets import views as v

__all__ = [
    "accelerator_landscape",
    "flash_attention",
    "gpu_anatomy",
    "layer_matmuls",
    "parallelism",
    "roofline_explorer",
    "tiled_gemm",
]


def _fpb(x: float) -> str:
    """FLOP per byte as text: 3 significant figures, thousands separators."""
    return format_number(x, 3, trim=True)


def _memory_text(a) -> str:
    """A chip's memory in the unit its vendor means, with true bytes beside: "141 GiB (151 GB)" when
    the catalog records the marketed "GB" as GiB, else "44 GB"."""
    gb = format_bytes(a.memory_bytes, "GB", 3, trim=True)
    return f"{format_bytes(a.memory_bytes, 'GiB', 3, trim=True)} ({gb})" if a.memory_marketed_unit_is_gib else gb


def _blame(field: str, fn, *args, **kw):
    """Call ``fn``; a ValueError from the core becomes a FieldError on ``field`` (shown inline)."""
    try:
        return fn(*args, **kw)
    except FieldError:
        raise
    except ValueError as exc:
        raise FieldError(field, str(exc)) from None


# ---------------------------------------------------------------------------------------------
# gpu_anatomy
# ---------------------------------------------------------------------------------------------

#: GPUs with recorded internals (the select's choices).
GPU = P.ACCELERATOR.but(
    choices=lambda: [(a.id, a.name) for a in memory_tiers.gpus()],
    help="GPUs whose SM internals the catalog records (with sources).",
)
#: SM squares per row in the drawing.
SM_COLUMNS = 22


@widget(
    "gpu_anatomy",
    title="Inside a GPU",
    description="Pick a GPU. The squares are its streaming multiprocessors (compute units on AMD), "
    "each dot a tensor core; the table is its memory pyramid, innermost level first.",
    inputs=[Input(GPU, "select")],
    tries=[
        ('Switch from the H200 to the B200.', "More memory and a faster bus, the pyramid's levels in the same order.", {"accelerator": "b200"}),
        ('Compare the top and the bottom of the pyramid.', 'The top holds kilobytes per SM, HBM at the bottom gigabytes; '
         'the levels with a published speed get slower on the way down.',
         Look(html="The memory pyramid of the")),
    ],
)
def gpu_anatomy(accelerator: str) -> list[dict]:
    """Views: the SM grid, stats (SMs, tensor cores, shared memory per SM, L2, HBM) and the tiers.

    Raises:
        ValueError: an accelerator without recorded internals (from :func:`memory_tiers.tiers`).
    """
    a = catalog.accelerator(accelerator)
    tiers = _blame("accelerator", memory_tiers.tiers, a)
    unit = a.compute_units_name
    cores = a.compute_units * a.tensor_cores_per_unit if a.tensor_cores_per_unit else None
    out = [v.svg(svg.square_grid(a.compute_units, SM_COLUMNS, dots=a.tensor_cores_per_unit or 0),
                 f"{format_int(a.compute_units)} {unit}s"
                 + (f", each with {a.tensor_cores_per_unit} tensor cores" if a.tensor_cores_per_unit else ""))]
    out.append(v.stat(f"{unit}s", a.compute_units, note=a.name))
    if cores:
        out.append(v.stat("Tensor cores", cores, note=f"{a.tensor_cores_per_unit} per {unit}"))
    out.append(v.stat(f"Shared memory per {unit}", format_bytes(a.shared_memory_per_unit_bytes, "KiB", 3, trim=True),
                      note="the scratchpad a kernel loads its tiles into"))
    smem_bw = memory_tiers.shared_memory_bandwidth(a)
    if smem_bw is not None:
        out.append(v.stat("Shared-memory bandwidth", format_si(smem_bw, "B/s", 3, trim=True),
                          quantity="shared_memory_bandwidth",
                          note=f"{format_number(smem_bw / a.memory_bandwidth, 2, trim=True)} times HBM's"))
    out.append(v.stat(a.memory_type, _memory_text(a), note=f"at {format_rate(a.memory_bandwidth)}"))
    rows = []
    for t in tiers:
        # On-chip memories and HBM come in powers of two: binary units, as the page's prose uses.
        size_ = "—" if t.size_bytes is None else format_bytes(t.size_bytes, "auto-binary", 3, trim=True)
        per = "—" if t.per_unit_bytes is None else format_bytes(t.per_unit_bytes, "KiB", 3, trim=True)
        bw = ("not published" if t.managed != "link" else "—") if t.bandwidth is None else format_rate(t.bandwidth)
        if t.bandwidth is not None and t.managed == "link":
            bw = format_rate(t.bandwidth) + " each way"
        ratio_s = "—" if t.size_vs_hbm is None else format_number(t.size_vs_hbm, 2, trim=True)
        ratio_b = "—" if t.bandwidth_vs_hbm is None else format_number(t.bandwidth_vs_hbm, 2, trim=True)
        rows.append([t.name, size_, per, bw, ratio_s, ratio_b])
    out.append(v.table(["level", "holds (whole chip)", f"per {unit}", "bandwidth", "size / HBM",
                        "bandwidth / HBM"], rows,
                       caption=f"The memory pyramid of the {a.name}", numeric=[False, True, True, True, True, True]))
    if a.unverified("l2_bytes"):
        out.append(v.note(f"{a.vendor} does not publish the {a.name}'s L2 size: the figure above is a third-party "
                          "one, not verified.", "warn"))
    return out


# ---------------------------------------------------------------------------------------------
# accelerator_landscape
# ---------------------------------------------------------------------------------------------


def _short(a) -> str:
    return a.name.removeprefix(a.vendor + " ").split(" (")[0]


@widget(
    "accelerator_landscape",
    title="The accelerator landscape",
    description="Every chip in the catalog by how much memory it has (across) and how fast it reads "
    "it (up), both on log scales. The dashed line is the smallest memory that holds the model's weights "
    "and KV cache once the runtime allowance is kept back: chips to its right hold it on their own. Pick a chip for its numbers; the ringed point is the chip picked (labels that would "
    "overlap are left out).",
    inputs=[Input(P.MODEL, "select"), Input(P.WEIGHTS, "select"), Input(P.ACCELERATOR, "select")],
    tries=[
        ('Pick a bigger model or BF16 weights.', 'The dashed line moves right: fewer chips hold the model on their own.', {"model": "llama-3.1-405b"}),
        ('Pick the chip highest up, the one with the fastest memory.',
         'It is not the one furthest right: height is reading speed, width is room, and the two are sold separately.',
         {"accelerator": max(catalog.accelerators().values(), key=lambda a: a.memory_bandwidth).id}),
    ],
)
def accelerator_landscape(model: str, weights: str, accelerator: str) -> list[dict]:
    """Views: the log-log scatter, then fits / decode ceiling / memory arrangement for the chip.

    The line is the smallest capacity that holds the model's need (weights + KV cache, the same on
    every chip) with the runtime allowance kept back (:func:`descent.memory.smallest_capacity`), at
    the sizing's default context and batch (:data:`descent.params.CONTEXT`,
    :data:`descent.params.BATCH`): a chip whose capacity lies right of it fits (:func:`descent.memory.size`). SRAM machines hold a model only across
    many chips, so they get the chip count, not a single-chip speed.
    """
    ctx, batch, kv = P.CONTEXT.default, P.BATCH.default, P.KV.default
    s = size(model, accelerator, weights, kv, ctx, batch)
    need = smallest_capacity(s.need_bytes)  # where the line stands: the least memory that holds it
    accs = list(catalog.accelerators().values())
    xs = [a.memory_bytes / GB for a in accs] + [need / GB]
    ys = [a.memory_bandwidth / TB for a in accs]
    marks = []
    for a in accs:
        chosen = a.id == accelerator
        marks.append(svg.Mark(a.memory_bytes / GB, a.memory_bandwidth / TB, _short(a),
                              "var(--dw-c1)" if chosen else ("var(--dw-c3)" if a.kind == "sram" else "var(--dw-c5)"),
                              radius=6 if chosen else 4.5, ring=chosen, bold=chosen))
    chart = functools.partial(
        svg.loglog_chart,
        x_range=(min(xs) / 3, max(xs) * 4), y_range=(min(ys) / 3, max(ys) * 4),
        x_label="memory capacity, GB (log scale)", y_label="memory bandwidth, TB/s (log)",
        x_tick=svg.decade_label, y_tick=svg.decade_label,
        marks=marks, vlines=[svg.VLine(need / GB, f"{catalog.model(model).name} ({format_bytes(s.need_bytes, 'GB', 3, trim=True)}) fits from {format_bytes(need, 'GB', 3, trim=True)}", bottom=True)],
        uid="landscape", declutter=True,
    )
    a = catalog.accelerator(accelerator)
    alt = (f"Scatter of {len(accs)} accelerators, memory capacity against bandwidth on log scales; the "
           f"{a.name} is ringed; a dashed line at {format_bytes(need, 'GB', 3, trim=True)} marks the least memory "
           f"that holds the {format_bytes(s.need_bytes, 'GB', 3, trim=True)} {catalog.model(model).name} needs.")
    out = [v.svg(chart(), alt, narrow=chart(narrow=True))]
    out.append(v.stat("Memory", format_bytes(a.memory_bytes, "GB", 3, trim=True), quantity="capacity_bytes",
                      note=(f"= {format_bytes(a.memory_bytes, 'GiB', 3, trim=True)} of {a.memory_type}, sold as "
                            f"\"{a.memory_marketed}\"" if a.memory_marketed_unit_is_gib else a.memory_type)))
    out.append(v.stat("Memory bandwidth", format_rate(a.memory_bandwidth), quantity="memory_bandwidth"))
    if a.kind == "sram":
        out.append(v.stat("Chips to hold it", s.accelerators_needed, quantity="accelerators_needed",
                          note="memory only; the model is spread over all of them"))
        out.append(v.note(f"One {a.name} holds {format_bytes(a.memory_bytes, 'GB', 3, trim=True)}: the "
                          f"weights alone need {format_bytes(s.weights_bytes, 'GB', 3, trim=True)}, so a deployment "
                          f"spreads them over at least {format_int(s.accelerators_needed)} chips, and its speed is "
                          f"that system's, not one chip's.", "info"))
    else:
        out.append(v.stat("Decode ceiling per sequence" + ("" if s.fits else " (if it fit)"),
                          format_number(s.decode_tokens_per_s, 3), "tokens/s", quantity="decode_tokens_per_s",
                          note=f"{format_int(ctx)} tokens, one sequence"))
        out.append(v.note(fit_sentence(s, on=f"one {a.name}"), "info" if s.fits else "warn"))
    arr = memory_tiers.arrangement(a)
    out.append(v.kv([("On the chip", arr.on_chip), ("Weights live in", arr.off_chip), ("Managed by", arr.managed),
                     ("Source", arr.source)], caption=f"How the {a.name} arranges its memory"))
    return out


# ---------------------------------------------------------------------------------------------
# tiled_gemm
# ---------------------------------------------------------------------------------------------

_M, _N, _K = (tiling.GEMM_EXAMPLE[k] for k in ("m", "n", "k"))
#: The walk's step: which output tile is being computed.
TILE_STEP = P.declare(P.Param(
    "step", "Tile step", "int", 5, key="tile_step", min=0, max=(_M // min(tiling.TILE_SIZES)) ** 2 - 1,
    help="Which output tile is being computed, counted row by row from 0.",
))
#: Accelerators whose ridge the tile is compared with (any catalog chip).
_SMALLEST = min(tiling.TILE_SIZES)


@widget(
    "tiled_gemm",
    title="A matrix product, one tile at a time",
    description=f"C ({_M} x {_N}) = A ({_M} x {format_int(_K)}) times B ({format_int(_K)} x {_N}). "
    "Pick a tile size and a number format; step through the output tiles. Each tile reads one strip "
    "of A and one of B.",
    inputs=[Input(P.TILE, "segmented"), Input(P.ELEMENT, "segmented"), Input(TILE_STEP, "range"),
            Input(P.ACCELERATOR, "select")],
    tries=[
        ('Double the tile size.', 'Fewer tiles, each reading longer strips: less traffic in all, more on-chip memory per tile.', {"tile": 128}),
        ('Step through the tiles.', 'Each output tile reads one strip of A and one of B; neighbouring tiles read the same strips again.', {"step": 6}),
    ],
)
def tiled_gemm(tile: int, element: str, step: int, accelerator: str) -> list[dict]:
    """Views: intensity, reuse, FLOPs and traffic stats; the A strips, B strips and C tiles as grids.

    The step slider ends at this tile size's last tile (a ``limits`` view); a step past it (the
    reader doubled the tile size at step 5 of 16) shows the last tile, with a note saying so.
    """
    b = tiling.element_bytes(element)
    last = _blame("tile", tiling.tile_walk, _M, _N, _K, tile, 0).tiles - 1
    moved = []
    if step > last:
        moved = [v.note(f"{tile} x {tile} tiles make {plural(last + 1, 'output tile')}, steps 0 to {last}: "
                        f"step {format_int(step)} is past the last, so the last ({last}) is shown.", "info")]
        step = last
    w = _blame("step", tiling.tile_walk, _M, _N, _K, tile, step)
    a = catalog.accelerator(accelerator)
    intensity = tiling.tile_intensity(tile, b)
    flops = tiling.gemm_flops(_M, _N, _K)
    traffic = tiling.tiled_traffic_bytes(_M, _N, _K, tile, b)
    prec = {"fp4": "mxfp4", "fp8": "fp8"}.get(element, "bf16")
    ridge = S.ridge_point(a, S.compute_precision(P.MODEL.default, a, prec))
    out = [
        v.limits(step={"max": last}),
        *moved,
        v.stat("Arithmetic intensity", _fpb(intensity), "FLOP/byte", quantity="tile_intensity",
               note=f"{tile} / {format_number(b, 2, trim=True)} bytes per element"),
        v.stat("Reuse", format_number(intensity / tiling.tile_intensity(_SMALLEST, b), 3, trim=True), "times",
               note=f"each loaded value, against {_SMALLEST} x {_SMALLEST} tiles"),
        v.stat("FLOPs", format_si(flops, "FLOP", 3, trim=True), note=f"2 x {_M} x {_N} x {format_int(_K)}"),
        v.stat("Bytes loaded", format_bytes(traffic, "auto", 3, trim=True),
               note=f"{plural(w.tiles, 'tile')} x 2 strips; floor "
                    f"{format_bytes(tiling.min_traffic_bytes(_M, _N, _K, b), 'auto', 3, trim=True)}"),
    ]
    side = "below" if intensity < ridge else "at or above"
    note = (f"The {a.name}'s ridge at this precision is {_fpb(ridge)} FLOP/byte: a tile of {tile} is {side} it, "
            f"so fed from memory it would {'wait on memory' if intensity < ridge else 'keep the tensor cores busy'}.")
    if a.shared_memory_per_unit_bytes:
        ws = tiling.tile_working_set_bytes(tile, b)
        note += (f" One K step of {tiling.K_STEP} takes {format_bytes(ws, 'KiB', 3, trim=True)} of its "
                 f"{format_bytes(a.shared_memory_per_unit_bytes, 'KiB', 3, trim=True)} of shared memory per "
                 f"{a.compute_units_name}.")
    out.append(v.note(note, "info"))
    out.append(v.svg(svg.gemm_layout(_M, _N, _K, tile, w.row, w.col, step),
                     f"Tile ({w.row}, {w.col}) of C is computed from row strip {w.row} of A and column strip "
                     f"{w.col} of B; {step} of {w.tiles} tiles are done."))
    cells = []
    for r in range(w.tile_rows):
        row = []
        for c in range(w.tile_cols):
            i = r * w.tile_cols + c
            cls = "is-weights" if i == step else ("is-kv" if i < step else "is-free")
            state = "being computed" if i == step else ("done" if i < step else "to do")
            row.append(v.cell(cls, title=f"tile ({r}, {c}), step {i}: {state}", set={"step": i}))
        cells.append(row)
    out.append(v.cell_grid(cells, caption=f"C: {w.tile_rows} x {w.tile_cols} output tiles, step {step} of {w.tiles} "
                           "(click a tile to jump to it)",
                           legend=[("is-kv", "done"), ("is-weights", "being computed"), ("is-free", "to do")]))
    return out


# ---------------------------------------------------------------------------------------------
# layer_matmuls
# ---------------------------------------------------------------------------------------------

TOKENS = P.BATCH.but(label="Tokens in the step", help="Tokens multiplied together: the batch in decode, "
                     "batch x prompt length in prefill.")


@widget(
    "layer_matmuls",
    title="One layer's matrix products",
    description="Every weight matrix of one layer, multiplied by the step's tokens: its FLOPs, the bytes "
    "it moves (weights once, activations in and out) and their ratio, against the chip's ridge.",
    inputs=[Input(P.MODEL, "select"), Input(P.WEIGHTS_UNIFORM, "select"), Input(TOKENS, "range", log=True),
            Input(P.ACCELERATOR, "select")],
    tries=[
        ('Raise the batch.', "FLOPs grow with it while the weights are read once: the ratio climbs towards the chip's ridge.", {"batch": 256}),
        ('Switch to BF16 weights.', "Twice the bytes per weight: each matrix's ratio halves at the same batch.", {"weights": "bf16"}),
    ],
)
def layer_matmuls(model: str, weights: str, batch: int, accelerator: str) -> list[dict]:
    """Views: a table of the layer's products and a note on which side of the ridge they fall."""
    wp = numerics.precision(weights)
    rows = tiling.layer_matmuls(model, batch, wp.bytes_per_weight)
    a = catalog.accelerator(accelerator)
    ridge = S.ridge_point(a, S.compute_precision(model, a, weights))
    table_rows = []
    for r in rows:
        table_rows.append([r.name + (f" (x {r.count})" if r.count > 1 else ""), f"{format_int(r.d_in)} x {format_int(r.d_out)}",
                           format_si(r.flops, "FLOP", 3, trim=True),
                           format_bytes(r.weight_bytes + r.activation_bytes, "auto", 3, trim=True), _fpb(r.intensity),
                           "memory" if r.intensity < ridge else "compute"])
    m = catalog.model(model)
    total_f = sum(r.flops * r.count for r in rows)
    total_b = sum((r.weight_bytes + r.activation_bytes) * r.count for r in rows)
    out = [v.stat("Layer FLOPs", format_si(total_f, "FLOP", 3, trim=True), note=f"{plural(batch, 'token')}"),
           v.stat("Layer bytes", format_bytes(total_b, "auto", 3, trim=True), note=f"{wp.label} weights, BF16 activations"),
           v.stat("Intensity", _fpb(total_f / total_b), "FLOP/byte", note=f"ridge {_fpb(ridge)} on the {a.name}"),
           v.table(["matrix", "shape", "FLOPs", "bytes", "FLOP/byte", f"bound on the {_short(a)}"], table_rows,
                   caption=f"One layer of {m.name}, {plural(batch, 'token')}",
                   numeric=[False, True, True, True, True, False])]
    if m.moe is not None:
        out.append(v.note(f"A mixture of experts: each token goes through {m.moe.experts_per_token} of "
                          f"{m.moe.num_experts} experts, so with {plural(batch, 'token')} an expert sees only about "
                          f"{format_number(batch * m.moe.experts_per_token / m.moe.num_experts, 2, trim=True)} of them: "
                          "its real intensity is the table's at that many tokens.", "info"))
    return out


# ---------------------------------------------------------------------------------------------
# flash_attention
# ---------------------------------------------------------------------------------------------

ATT_ACC = P.ACCELERATOR.but(
    choices=lambda: [(a.id, a.name) for a in memory_tiers.gpus()],
    help="Its shared memory per SM is the on-chip memory FlashAttention blocks for.",
)


@widget(
    "flash_attention",
    title="Attention's memory traffic: naive against FlashAttention",
    description="One attention head over N tokens. The naive kernel writes the N x N scores to memory and "
    "reads them back; FlashAttention keeps each block of them on chip. Bars are bytes moved to and from HBM.",
    inputs=[Input(P.SEQ_LEN, "range", log=True), Input(P.HEAD_DIM.but(max=512), "range"),
            Input(P.ELEMENT.but(choices=[(e, e.upper()) for e in ("fp32", "bf16", "fp16", "fp8")]), "segmented"),
            Input(ATT_ACC, "select")],
    tries=[
        ('Double the tokens.', "Both kernels' traffic nearly quadruples and their ratio barely moves: FlashAttention "
         "re-reads the queries once per key block, and twice the tokens make twice the blocks (Dao et al. 2022, "
         "Theorem 2: N² d² / M). Only the floor merely doubles.", {"seq_len": 4096}),
        ('Raise the head dimension.', 'Both grow, but the gap narrows: the inputs and outputs are N x d either way.', {"head_dim": 256}),
    ],
)
def flash_attention(seq_len: int, head_dim: int, element: str, accelerator: str) -> list[dict]:
    """Views: naive / FlashAttention / floor bytes as bars, the ratio, block sizes, a note."""
    b = tiling.element_bytes(element)
    t = _blame("accelerator", attention_io.traffic, seq_len, head_dim, b, accelerator)
    fmt = lambda x: format_bytes(x, "auto", 3, trim=True)  # noqa: E731
    out = [
        v.stat("Naive", fmt(t.naive_bytes), quantity="attention_naive_bytes",
               note=f"of which the N x N matrix, four times: {fmt(4 * t.score_bytes)}"),
        v.stat("FlashAttention", fmt(t.flash_bytes), quantity="attention_flash_bytes",
               note=f"blocks of {t.block_rows} queries x {t.block_cols} keys"),
        v.stat("Naive / FlashAttention", format_number(t.ratio, 3, trim=True), "times", quantity="attention_io_ratio"),
        v.bar_list([v.bar("naive", t.naive_bytes, display=fmt(t.naive_bytes)),
                    v.bar("FlashAttention", t.flash_bytes, display=fmt(t.flash_bytes)),
                    v.bar("floor: Q, K, V read once, O written once", t.floor_bytes, display=fmt(t.floor_bytes))],
                   caption="Bytes to and from HBM, one head, one sequence"),
    ]
    a = catalog.accelerator(accelerator)
    note = (f"The {a.name} has {format_bytes(a.shared_memory_per_unit_bytes, 'KiB', 3, trim=True)} of shared memory per "
            f"{a.compute_units_name}: M = {format_int(t.sram_elements)} elements of {format_number(b, 2, trim=True)} "
            f"bytes. FlashAttention reads K and V once and every block of Q and O {plural(t.kv_blocks, 'time')}.")
    tone = "info"
    if 3 * head_dim * head_dim > t.sram_elements:
        note += (" With heads this wide the blocks hold few keys, Q and O are re-read many times, and at long "
                 "sequences the fused kernel can move more bytes than the naive one (3 d² > M).")
        tone = "warn"
    out.append(v.note(note, tone))
    return out


# ---------------------------------------------------------------------------------------------
# roofline_explorer
# ---------------------------------------------------------------------------------------------

#: Intensity axis of the roofline chart, FLOP per byte (decode at batch 1 sits near 1 to 2,
#: prefill at thousands).
X_RANGE = (0.1, 1e5)


@widget(
    "roofline_explorer",
    title="The roofline: decode against prefill",
    description="The chip's roofline: the slope is its memory ceiling (intensity times bandwidth), the flat "
    "line its compute ceiling (peak arithmetic). The points are one decode step of the batch and one prefill of its prompts. Raise the "
    "batch and watch decode climb the slope.",
    inputs=[Input(P.MODEL, "select"), Input(P.ACCELERATOR, "select"), Input(P.WEIGHTS_UNIFORM, "select"),
            Input(P.BATCH, "range", log=True), Input(P.CONTEXT, "range", log=True)],
    tries=[
        ('Raise the batch.', 'Decode climbs the slope: more arithmetic per byte read. Watch the largest batch '
         'that fits: past it the point is one the chip cannot hold.', {"batch": 16}),
        ('Lower the context to 128.', "Less KV cache per sequence: far more sequences fit, and the largest batch "
         "that fits now reaches the compute ceiling.", {"context": 128}),
    ],
)
def roofline_explorer(model: str, accelerator: str, weights: str, batch: int, context: int) -> list[dict]:
    """Views: the log-log roofline with both points; stats for decode and prefill; the crossover."""
    kv = P.KV.default
    dec = roofline.step(model, accelerator, weights, kv, context, batch, "decode")
    pre = roofline.step(model, accelerator, weights, kv, context, batch, "prefill")
    peak, bw = dec.peak_flops, dec.memory_bandwidth
    x_lo, x_hi = X_RANGE
    x_lo = min(x_lo, dec.intensity / 3)
    x_hi = max(x_hi, pre.intensity * 3)
    xs = [x_lo * (x_hi / x_lo) ** (i / 60) for i in range(61)] + [dec.ridge]
    roof = [(x, roofline.attained_flops(peak, bw, x)) for x in sorted(xs)]
    y_lo = min(roofline.attained_flops(peak, bw, x_lo), dec.attained_flops) / 3
    a = catalog.accelerator(accelerator)
    chart = functools.partial(
        svg.loglog_chart,
        x_range=(x_lo, x_hi), y_range=(y_lo, peak * 4),
        x_label="arithmetic intensity, FLOP per byte (log scale)", y_label="FLOP/s (log)",
        x_tick=svg.decade_label, y_tick=lambda y: format_si(y, "", 1, trim=True),
        lines=[svg.Line(roof, label=f"{_short(a)}, {dec.compute_precision.upper()}")],
        vlines=[svg.VLine(dec.ridge, f"ridge {_fpb(dec.ridge)}")],
        marks=[svg.Mark(dec.intensity, dec.attained_flops, f"decode x{format_int(batch)}", "var(--dw-c2)", 6,
                        label_dx=8, label_dy=16),
               svg.Mark(pre.intensity, pre.attained_flops, "prefill", "var(--dw-c3)", 6, label_dx=-8, label_dy=18)],
        uid="roofline",
    )
    alt = (f"Log-log roofline of the {a.name}: a memory ceiling sloping up from {format_rate(bw)} meeting a compute ceiling at "
           f"{format_si(peak, 'FLOP/s', 3, trim=True)} at {_fpb(dec.ridge)} FLOP per byte. Decode of "
           f"{plural(batch, 'sequence')} sits at {_fpb(dec.intensity)} FLOP per byte ({dec.bound}-bound); "
           f"prefill at {_fpb(pre.intensity)} ({pre.bound}-bound).")
    out = [v.svg(chart(), alt, narrow=chart(narrow=True)),
           v.stat("Ridge point", _fpb(dec.ridge), "FLOP/byte", quantity="ridge_point",
                  note=f"{format_si(peak, 'FLOP/s', 3, trim=True)} {dec.compute_precision.upper()} / {format_rate(bw)}"),
           v.stat("Decode intensity", _fpb(dec.intensity), "FLOP/byte", quantity="intensity",
                  note=f"{dec.bound}-bound; step {format_time(dec.seconds_per_step)}"),
           v.stat("Decode uses", format_percent(dec.compute_share), "of peak", quantity="compute_share",
                  note=f"{format_si(dec.attained_flops, 'FLOP/s', 3, trim=True)} attained"),
           v.stat("Prefill intensity", _fpb(pre.intensity), "FLOP/byte",
                  note=f"{pre.bound}-bound; {format_int(batch * context)} tokens in {format_time(pre.seconds_per_step)}")]
    from descent.economics import max_batch

    fit = max_batch(model, accelerator, weights, kv, context)
    out.append(v.stat("Largest batch that fits", format_int(fit), quantity="max_batch",
                      note=f"sequences of {format_int(context)} tokens, their KV caches beside the weights on one "
                      f"{_short(a)}"))
    if batch > fit:
        held = (f"holds the KV caches of {plural(fit, 'sequence')} beside the weights" if fit else
                "cannot hold the weights and one sequence's KV cache")
        out.append(v.note(f"A batch of {format_int(batch)} does not fit: at {format_int(context)} tokens of context "
                          f"one {a.name} {held}. The decode point above is what the step would do if the memory "
                          "were there.", "warn"))
    cross = roofline.crossover_batch(model, accelerator, weights, kv, context)
    if cross is None:
        out.append(v.note(f"At {format_int(context)} tokens of context no batch makes decode compute-bound on the "
                          f"{a.name}: each sequence reads its own KV cache, so the intensity levels off below the ridge.",
                          "info"))
    elif cross > fit:
        out.append(v.note(f"At {format_int(context)} tokens of context decode would turn compute-bound from a batch "
                          f"of {format_int(cross)}, but one {a.name} holds only {plural(fit, 'sequence')}: on one "
                          "chip decode stays memory-bound.", "info"))
    else:
        out.append(v.note(f"At {format_int(context)} tokens of context, decode turns compute-bound on the {a.name} "
                          f"from a batch of {format_int(cross)}, which fits.", "info"))
    return out


# ---------------------------------------------------------------------------------------------
# parallelism
# ---------------------------------------------------------------------------------------------

#: The pipeline drawing's limits: stages and time slots (wider schedules are described in words).
MAX_DRAWN_STAGES, MAX_DRAWN_SLOTS = 16, 40


def _tp_ok(model: str, tp: int) -> bool:
    return tp in transformer.tp_degrees(catalog.model(model))


def _ep_ok(model: str, ep: int) -> bool:
    moe = catalog.model(model).moe
    return ep == 1 or (moe is not None and ep <= moe.num_experts)


def _ep_limit(model: str) -> str:
    m = catalog.model(model)
    if m.moe is None:
        return f"{m.name} is dense: it has no experts to spread, so ep must be 1"
    return f"{m.name} has {format_int(m.moe.num_experts)} experts: ep must be 1 to {format_int(m.moe.num_experts)}"


#: The split's rules, declared once: the sliders step through the values they allow.
SPLIT_RULES = [
    Constraint(("model", "tp"), _tp_ok, {
        "model": lambda model, tp: f"{catalog.model(model).name} cannot be split over tp {format_int(tp)}: "
                                   + transformer.tp_message(catalog.model(model), tp) + ".",
        "tp": lambda model, tp: transformer.tp_message(catalog.model(model), tp) + ".",
    }),
    Constraint(("model", "ep"), _ep_ok, {
        "model": lambda model, ep: f"{_ep_limit(model)}, got {format_int(ep)}.",
        "ep": lambda model, ep: f"{_ep_limit(model)}, got {format_int(ep)}.",
    }),
    Constraint(("batch", "ep"), lambda batch, ep: batch % ep == 0, {
        "batch": lambda batch, ep: f"The batch must be a multiple of ep ({format_int(ep)}): each device takes "
                                   f"batch / ep sequences, got {format_int(batch)}.",
        "ep": lambda batch, ep: f"ep must divide the batch ({format_int(batch)}): each device takes batch / ep "
                                f"sequences, got {format_int(ep)}.",
    }),
]


@widget(
    "parallelism",
    title="One model, many chips",
    description="Split a model by tensor parallelism (every matrix cut across devices), pipeline "
    "parallelism (consecutive layers per device) and expert parallelism (experts spread out). See "
    "what each device holds, what crosses the wire per layer, and how long each stage waits.",
    inputs=[Input(P.MODEL, "select"), Input(P.ACCELERATOR, "select"), Input(P.WEIGHTS_UNIFORM, "select"),
            Input(P.TP.but(max=64), "range"), Input(P.PP.but(max=64), "range"), Input(P.EP.but(max=256), "range"),
            Input(P.BATCH.but(max=4096), "range", log=True), Input(P.MICROBATCHES.but(max=4096), "range", log=True),
            Input(P.LINK, "select")],
    constraints=SPLIT_RULES,
    tries=[
        ('Raise tensor parallelism to 8.', 'Each device holds an eighth of every matrix, and every layer sends activations across the link.', {"tp": 8}),
        ('Use pipeline parallelism 4 with a batch of 4 in one micro-batch.',
         'Most stages wait: the bubble. Four micro-batches of one sequence each would close it.', {"pp": 4, "batch": 4}),
        ('Pick Mixtral 8x7B, a batch of 8 and expert parallelism 8.', 'The experts spread out; tokens cross the wire to reach theirs.', {"model": "mixtral-8x7b", "batch": 8, "ep": 8}),
    ],
)
def parallelism(model: str, accelerator: str, weights: str, tp: int, pp: int, ep: int, batch: int,
                microbatches: int, link: str) -> list[dict]:
    """Views: fit note, memory and communication stats, the pipeline schedule as a grid.

    The micro-batch slider ends at the batch (a ``limits`` view); more micro-batches than
    sequences (the reader lowered the batch) run as one per sequence, with a note saying so.

    Raises:
        FieldError: a split the model does not allow (on the input to blame).
    """
    kv, ctx = P.KV.default, P.CONTEXT.default
    first = [v.limits(microbatches={"max": batch})]
    if microbatches > batch:
        first.append(v.note(f"{plural(microbatches, 'micro-batch', 'micro-batches')} is more than the batch of "
                            f"{plural(batch, 'sequence')}: each micro-batch holds at least one, so {format_int(batch)} "
                            "are used.", "info"))
        microbatches = batch
    try:
        p = parallel.plan(model, accelerator, weights, kv, ctx, batch, tp, pp, ep, microbatches, link)
    except ValueError as exc:
        msg = str(exc)
        field = getattr(exc, "field", None) or next((f for f in ("tp", "pp", "ep") if msg.startswith(f + " ")), None)
        if msg.startswith("Micro-batches"):
            field = "microbatches"
        raise FieldError(field, getattr(exc, "message", msg)) from None
    a, m, wire = catalog.accelerator(accelerator), catalog.model(model), catalog.link(link)
    one = hardware.decode_ceiling(model, accelerator, weights, kv, ctx, batch)
    fmt = lambda x: format_bytes(x, "GB", 3, trim=True)  # noqa: E731
    out = first
    usable = p.memory_bytes_per_device + p.free_bytes  # what one chip offers after the runtime allowance
    if p.fits:
        who = "The one device" if p.devices == 1 else f"Each of the {format_int(p.devices)} devices"
        out.append(v.note(f"{who} needs {fmt(p.memory_bytes_per_device)} for its weights and KV cache; the "
                          f"{a.name} offers {fmt(usable)} of its {fmt(a.memory_bytes)} after the runtime "
                          "allowance.", "info"))
    else:
        out.append(v.note(f"Each device would need {fmt(p.memory_bytes_per_device)} for its weights and KV cache; "
                          f"the {a.name} offers only {fmt(usable)} after the runtime allowance: split it "
                          "further.", "warn"))
    out += [
        v.stat("Devices", p.devices, quantity="devices", note=f"tp {tp} x pp {pp} x ep {ep}"),
        v.stat("Weights per device", fmt(p.weights_bytes_per_device), quantity="weights_bytes_per_device",
               note=f"of {fmt(p.weights_bytes)}"),
        v.stat("KV cache per device", fmt(p.kv_bytes_per_device), quantity="kv_bytes_per_device",
               note=f"{plural(batch, 'sequence')} x {format_int(ctx)} tokens"),
        v.stat("All-reduce per layer", format_bytes(p.allreduce_bytes_per_layer, "auto", 3, trim=True),
               quantity="allreduce_bytes_per_layer",
               note=f"about {format_time(p.allreduce_seconds_per_layer)} over {wire.label} with NCCL's ring; reading "
                    f"the layer takes "
                    f"{format_time(p.read_seconds_per_layer)}"),
    ]
    if m.moe is not None:
        out.append(v.stat("All-to-all per MoE layer", format_bytes(p.alltoall_bytes_per_layer, "auto", 3, trim=True),
                          quantity="alltoall_bytes_per_layer",
                          note=f"{format_time(p.alltoall_seconds_per_layer)} over the link; one copy per expert "
                               "a token picks (deduplicating kernels send one per device)"))
    out += [
        v.stat("Pipeline bubble", format_percent(p.bubble_fraction), quantity="bubble_fraction",
               note=f"{plural(pp, 'stage')}, {plural(microbatches, 'micro-batch', 'micro-batches')}"),
        v.stat("Decode, split", format_number(p.decode_tokens_per_s, 3), "tokens/s", quantity="split_decode_tokens_per_s",
               note=f"over the batch, with NCCL's ring all-reduce; one chip's ceiling (if it fit): "
                    f"{format_number(one.tokens_per_s_total, 3)}"),
    ]
    # One round of a serving engine's steady state (descent.step): max(m, pp) slots, the time between
    # a sequence's tokens; stage s works on micro-batch (t - s) mod slots when that is one of the m.
    slots = max(microbatches, pp)
    if pp > 1 and pp <= MAX_DRAWN_STAGES and slots <= MAX_DRAWN_SLOTS:
        grid = []
        for s in range(pp):
            row = []
            for t in range(slots):
                j = (t - s) % slots
                busy = j < microbatches
                row.append(v.cell("is-weights" if busy else "is-free", text=str(j + 1) if busy else "",
                                  title=f"stage {s + 1}, slot {t + 1}: " + (f"micro-batch {j + 1}" if busy else "idle")))
            grid.append(row)
        out.append(v.cell_grid(grid, caption=f"Pipeline schedule in steady state: {plural(pp, 'stage')} (rows) over "
                               f"one round of {slots} time slots, the time between a sequence's tokens",
                               row_labels=[f"stage {s + 1}" for s in range(pp)],
                               legend=[("is-weights", "working on a micro-batch"), ("is-free", "idle (the bubble)")]))
    elif pp > 1:
        out.append(v.note(f"The schedule has {plural(pp, 'stage')} and {slots} slots: too many to draw; each stage is idle "
                          f"{format_percent(p.bubble_fraction)} of the time.", "info"))
    if wire.scope == "scale-out" and tp > 1:
        out.append(v.note(f"Tensor parallelism over {wire.label}: two all-reduces per layer cross the network; "
                          "engines keep it inside one NVLink domain and cross servers with pipeline or expert "
                          "parallelism instead.", "warn"))
    elif wire.domain and p.devices > wire.domain:
        out.append(v.note(f"{wire.label} joins {wire.domain} GPUs; {p.devices} devices need more than one such domain.",
                          "warn"))
    return out
