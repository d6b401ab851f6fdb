"""Part 4's animations ("Hardware"): FlashAttention's tiles, and a tensor-parallel all-reduce ring.

``flash_tiles`` walks one attention head over N tokens on a GPU's shared memory: the naive kernel
writes the N x N scores to HBM, reads them back, writes the probabilities and reads them again; the
fused kernel (Dao et al. 2022, Algorithm 1) loads one block of keys and values at a time and, for
each block of queries, computes that tile of scores on chip and folds it into a running output with
its running max and sum. The bytes moved to and from HBM count up frame by frame and end at
:func:`descent.attention_io.traffic`'s totals (the same formulas the ``flash_attention`` widget
draws as bars).

``allreduce_ring`` walks one all-reduce of tensor parallelism: the shards of one layer's output go
around a ring of GPUs in 2 (p - 1) steps, a reduce-scatter then an all-gather
(:func:`descent.parallel.ring_allreduce`, on the message of :func:`descent.parallel.plan`); the
bytes per link and the time count up to the step model's (:func:`descent.step.allreduce_seconds`).

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

import functools

from descent import attention_io, catalog, parallel, tiling, transformer
from descent import params as P
from descent.units import format_bytes, format_fixed, format_int, format_time, plural
from descent.widgets import FieldError, Input, widget
from descent.widgets import views as v
from descent.widgets.part4 import ATT_ACC

__all__ = ["allreduce_ring", "allreduce_ring_frames", "flash_tiles", "flash_tiles_frames"]

#: The animation's head: a sequence short enough to watch block by block, and the running example's
#: head width and element format (Llama 3.1's d_head = 128, 16-bit values).
TILES_SEQ_LEN = P.SEQ_LEN.but(default=1024, max=1024,
                              help="Tokens of the sequence; each block of queries meets each block of keys once.")
TILES_HEAD_DIM = 128
TILES_ELEMENT = "bf16"
#: The two kernels.
KERNEL = P.declare(P.Param(
    "kernel", "Kernel", "choice", "flash", key="attention_kernel",
    choices=[("naive", "naive"), ("flash", "FlashAttention")],
    help="Naive: scores and probabilities go to HBM and back. FlashAttention: tiles stay on chip.",
))

TILE_LEGEND = (
    ("is-empty", "not computed yet"),
    ("is-now", "in shared memory now"),
    ("is-folded", "computed on chip, folded into the running output, never written"),
    ("is-hbm", "written to HBM"),
    ("is-read", "read back from HBM"),
)


def _sizes(n: int, block: int) -> list[int]:
    return [min(block, n - s) for s in range(0, n, block)]


def flash_tiles_frames(kernel: str, seq_len: int, accelerator: str) -> dict:
    """The frames and the running HBM bytes after each (``{"traffic", "bytes", "frames"}``)."""
    d, b = TILES_HEAD_DIM, tiling.element_bytes(TILES_ELEMENT)
    t = attention_io.traffic(seq_len, d, b, accelerator)
    rows, cols = _sizes(seq_len, t.block_rows), _sizes(seq_len, t.block_cols)
    n = seq_len
    fmt = lambda x: format_bytes(x, "auto", 3, trim=True)  # noqa: E731
    frames, moved = [], []
    cells = {cls: v.cell(cls) for cls, _ in TILE_LEGEND}  # one object per state, shared by every tile
    ncols = len(cols)

    def frame(label: str, total_elements: int, grid: list[list[dict]]) -> None:
        moved.append(total_elements * b)
        frames.append(v.frame(label, [
            v.stat("HBM traffic so far", fmt(total_elements * b)),
            v.cell_grid(grid, caption=f"The {format_int(n)} x {format_int(n)} scores in tiles: query blocks down, "
                        "key blocks across", row_labels=[f"Q{i + 1}" for i in range(len(rows))],
                        col_labels=[f"K{j + 1}" for j in range(ncols)], legend=TILE_LEGEND),
        ]))

    def same(state: str) -> list[list[dict]]:
        """Every tile in one state (one row object, shared)."""
        return [[cells[state]] * ncols] * len(rows)

    if kernel == "naive":
        e = 2 * n * d + n * n
        frame(f"Read Q and K, compute all {format_int(n * n)} scores and write them to HBM.", e, same("is-hbm"))
        e += 2 * n * n
        frame("Read the scores back, apply the softmax and write the probabilities to HBM.", e, same("is-hbm"))
        e += n * n + 2 * n * d
        frame("Read the probabilities and V back and write the output.", e, same("is-read"))
        assert e == attention_io.naive_elements(n, d)
    else:
        e = n * d + 2 * n
        frame("Set up the output and the running max and sum in HBM.", e, same("is-empty"))
        folded, now, empty = cells["is-folded"], cells["is-now"], cells["is-empty"]
        for j, c in enumerate(cols):
            # Key block j meets the query blocks in order: the tiles of the key blocks before it are
            # folded in; in its own column, the query blocks above the one on chip too.
            above = [folded] * (j + 1) + [empty] * (ncols - j - 1)
            below = [folded] * j + [empty] * (ncols - j)
            for i, r in enumerate(rows):
                e += (2 * c * d if i == 0 else 0) + 3 * r * d + 4 * r
                load = f"Load key block K{j + 1} and its values; " if i == 0 else ""
                frame(f"{load}load query block Q{i + 1} with its partial output, score the tile on chip, "
                      "fold it in with the running max and sum, write the partial output back.", e,
                      [above] * i + [[folded] * j + [now] + [empty] * (ncols - j - 1)] + [below] * (len(rows) - i - 1))
        assert e == attention_io.flash_elements(n, d, t.sram_elements)
    return {"traffic": t, "bytes": moved, "frames": frames}


@widget(
    "flash_tiles",
    title="FlashAttention's tiles, one step at a time",
    description=f"One attention head of {TILES_HEAD_DIM} values in {TILES_ELEMENT.upper()}, on one streaming "
    "multiprocessor's shared memory. Step through the kernel and watch the bytes it moves to and from HBM.",
    inputs=[Input(KERNEL, "segmented"), Input(TILES_SEQ_LEN, "range", log=True), Input(ATT_ACC, "select")],
    tries=[("Switch to the naive kernel and press Play.", "It sends every score through HBM and back; "
            "FlashAttention keeps each tile on chip and streams only the inputs and the partial outputs.",
            {"kernel": "naive"}),
           ("Halve the sequence.", "A quarter of the tiles: the work grows with the square of the length.",
            {"seq_len": 512})],
)
def flash_tiles(kernel: str, seq_len: int, accelerator: str) -> list[dict]:
    """Views: a player of the kernel's steps and a note with both kernels' totals (attention_io.traffic)."""
    d = flash_tiles_frames(kernel, seq_len, accelerator)
    t = d["traffic"]
    a = catalog.accelerator(accelerator)
    fmt = lambda x: format_bytes(x, "auto", 3, trim=True)  # noqa: E731
    return [
        v.player(d["frames"], caption=f"{plural(len(d['frames']), 'step')} of the "
                 + ("naive kernel" if kernel == "naive" else "FlashAttention kernel") + f" on one {a.name} SM"),
        v.note(f"Blocks of {format_int(t.block_rows)} queries and {format_int(t.block_cols)} keys fit the shared memory. "
               f"In all, the naive kernel moves {fmt(t.naive_bytes)} and FlashAttention {fmt(t.flash_bytes)}."),
    ]


# ---------------------------------------------------------------------------------------------
# allreduce_ring
# ---------------------------------------------------------------------------------------------

#: The ring's inputs: tensor-parallel devices (a ring small enough to watch), the step's tokens and
#: a link that joins accelerators (storage has no collectives).
#: The most GPUs the ring is drawn for (one server's NVLink domain).
RING_MAX_SHOWN = 8
RING_TP = P.declare(P.Param(
    "tp", "Tensor parallel", "choice", "4", key="ring_tp", unit="GPUs",
    choices=lambda: [(str(t), str(t)) for t in transformer.tp_degrees(catalog.model(P.MODEL.default))
                     if 2 <= t <= RING_MAX_SHOWN],
    help="GPUs in the ring, each holding a slice of every matrix (the splits the model allows).",
))
RING_BATCH = P.BATCH.but(max=4096, help="Tokens in the step: each adds one row of the layer's output.")
RING_LINK = P.LINK.but(choices=lambda: [(w.id, w.label) for w in catalog.links().values() if w.scope != "storage"])

RING_LEGEND = (
    ("is-partial", "a partial sum (the number: how many devices' parts it adds up)"),
    ("is-now", "received and added in this step"),
    ("is-done", "the finished sum of all devices"),
)
#: The ring drawing: width, height, radius, font (SVG user units), wide and narrow.
RING_WIDE = (560, 300, 108, 13)
RING_NARROW = (330, 300, 100, 11)


@functools.lru_cache(maxsize=32)
def _ring_layout(p: int, size: tuple[int, int, int, int]) -> tuple[list[str], list[list[str]], dict]:
    """What the frames of a ring of ``p`` devices draw alike, printed once per ring rather than once
    per frame (about 370 numbers a drawing at 8 GPUs): the devices' labels, the start of each shard's
    square (``<rect`` with its place and size, up to its style) and each arrow from one device to
    another (its line, its head and its label up to the shard's number)."""
    import math

    w, h, r, font = size
    cx, cy = w / 2, h / 2
    f = lambda x: format_fixed(x, 1)  # noqa: E731
    pos = [(cx + r * math.cos(2 * math.pi * i / p - math.pi / 2), cy + r * math.sin(2 * math.pi * i / p - math.pi / 2))
           for i in range(p)]
    box = min(12.0, 60.0 / p)
    labels = [f'<text x="{f(x)}" y="{f(y - 6)}" text-anchor="middle" font-size="{font}" '
              f'style="fill:var(--dw-fg);font-weight:600">GPU {d + 1}</text>' for d, (x, y) in enumerate(pos)]
    squares = [[f'<rect x="{f(x - box * p / 2 + c * box)}" y="{f(y + 2)}" width="{f(box - 1.5)}" height="{f(box)}" '
                for c in range(p)] for x, y in pos]
    # Device i's arrow to device `to`: the line and its head, then its label's start (the shard follows).
    arrows = {}
    for i in range(p):
        for to in range(p):
            if i == to:
                continue
            (x0, y0), (x1, y1) = pos[i], pos[to]
            dx, dy = x1 - x0, y1 - y0
            d = math.hypot(dx, dy)
            ux, uy = dx / d, dy / d
            # Bow each arrow outward a little, so the two directions of a 2-device ring do not overlap.
            nx, ny = uy, -ux
            gap = 26.0
            ax, ay, bx, by = x0 + ux * gap + nx * 8, y0 + uy * gap + ny * 8, x1 - ux * gap + nx * 8, y1 - uy * gap + ny * 8
            head = [(bx, by), (bx - ux * 9 + nx * 4.5, by - uy * 9 + ny * 4.5), (bx - ux * 9 - nx * 4.5, by - uy * 9 - ny * 4.5)]
            mx, my = (ax + bx) / 2 + nx * 12, (ay + by) / 2 + ny * 12
            arrows[i, to] = (f'<line x1="{f(ax)}" y1="{f(ay)}" x2="{f(bx - ux * 6)}" y2="{f(by - uy * 6)}" '
                             'style="stroke:var(--dw-c3);stroke-width:2.5"/>'
                             '<polygon points="' + " ".join(f"{f(x)},{f(y)}" for x, y in head) + '" style="fill:var(--dw-c3)"/>'
                             f'<text x="{f(mx)}" y="{f(my + font / 3)}" text-anchor="middle" font-size="{font - 1}" '
                             f'style="fill:var(--dw-fg)">S')
    return labels, squares, arrows


def _ring_svg(st, p: int, size: tuple[int, int, int, int]) -> str:
    """p devices on a circle, each with its p shards shaded by how many parts they sum; this step's
    sends as arrows labelled with the shard."""
    w, h = size[:2]
    labels, squares, arrows = _ring_layout(p, size)
    parts = [f"{arrows[i, to]}{c + 1}</text>" for i, to, c in st.sends]
    # A shard's shade by how many parts it sums (1 .. p), each printed once.
    shade = {k: ("var(--dw-c2)", "1") if k == p else ("var(--dw-c1)", format_fixed(0.2 + 0.6 * (k - 1) / max(1, p - 1), 2))
             for k in range(1, p + 1)}
    for d in range(p):
        parts.append(labels[d])
        for c in range(p):
            colour, op = shade[st.summed[d][c]]
            parts.append(f'{squares[d][c]}style="fill:{colour};fill-opacity:{op};stroke:var(--dw-fg);stroke-width:0.5"/>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
            f'class="descent-svg__{"wide" if w == RING_WIDE[0] else "narrow"}">{"".join(parts)}</svg>')


def allreduce_ring_frames(tp: int, batch: int, link: str) -> dict:
    """The ring's frames and the facts around them: ``{"plan", "steps", "frames"}`` (the split from
    :func:`descent.parallel.plan` at the running example's model and chip, the schedule from
    :func:`descent.parallel.ring_allreduce`)."""
    try:
        plan = parallel.plan(P.MODEL.default, P.ACCELERATOR.default, batch=batch, tp=tp, link_id=link)
    except ValueError as exc:
        raise FieldError("tp", str(exc)) from None
    msg = plan.allreduce_message_bytes
    steps = parallel.ring_allreduce(msg, tp, link)
    fmt = lambda x: format_bytes(x, "auto", 3, trim=True)  # noqa: E731
    frames = []
    for st in steps:
        received = {(to, c) for _, to, c in st.sends}
        if st.phase == "start":
            what = (f"Each of the {format_int(tp)} GPUs holds its own partial sum of the layer's output, "
                    f"{fmt(msg)}, cut into {format_int(tp)} shards.")
        elif st.phase == "reduce-scatter":
            what = (f"Reduce-scatter: each GPU sends one shard to the next and adds the one it receives. "
                    f"Every link carries {fmt(st.shard_bytes)} at once.")
        else:
            what = (f"All-gather: each GPU passes a finished shard on, {fmt(st.shard_bytes)} on every link.")
        cells = [[v.cell("is-done" if k == tp else ("is-now" if (d, c) in received else "is-partial"),
                         text=format_int(k)) for c, k in enumerate(row)] for d, row in enumerate(st.summed)]
        alt = (f"{format_int(tp)} GPUs in a ring. " + ("No shard moves yet." if not st.sends else
               "Each GPU sends shard " + ", ".join(f"S{c + 1}" for _, _, c in st.sends[:1]) + " and the others theirs "
               "to the next GPU."))
        frames.append(v.frame(what, [
            v.stat("On each link this step", fmt(st.shard_bytes if st.sends else 0)),
            v.stat("Sent by each GPU so far", fmt(st.sent_bytes)),
            v.stat("Time so far", format_time(st.seconds)),
            v.svg(_ring_svg(st, tp, RING_WIDE), alt, narrow=_ring_svg(st, tp, RING_NARROW)),
            v.cell_grid(cells, caption="Each GPU's copy of each shard: how many GPUs' parts it adds up",
                        row_labels=[f"GPU {d + 1}" for d in range(tp)],
                        col_labels=[f"S{c + 1}" for c in range(tp)], legend=RING_LEGEND),
        ]))
    return {"plan": plan, "steps": steps, "frames": frames}


@widget(
    "allreduce_ring",
    title="An all-reduce around the ring",
    description=(f"Tensor parallelism on {catalog.model(P.MODEL.default).name}: after a layer, every GPU holds "
                 "a partial sum of the output, and a ring all-reduce adds them up. Step through it."),
    inputs=[Input(RING_TP, "segmented"), Input(RING_BATCH, "range", log=True), Input(RING_LINK, "select")],
    tries=[("Go to 8 GPUs.", "More steps, each with a smaller shard: the bytes each GPU sends barely grow.",
            {"tp": 8}),
           ("Raise the batch to 256 tokens.", "The shards grow with the tokens, and the bandwidth starts to "
            "matter more than the fixed latency of each step.", {"batch": 256})],
)
def allreduce_ring(tp: str, batch: int, link: str) -> list[dict]:
    """Views: a player of the ring's 2 (p - 1) steps and a note with the step model's totals."""
    tp = int(tp)
    d = allreduce_ring_frames(tp, batch, link)
    last = d["steps"][-1]
    return [
        v.player(d["frames"], caption=f"A ring all-reduce over {format_int(tp)} GPUs on {catalog.link(link).label}: "
                 f"the start, then its {plural(len(d['frames']) - 1, 'step')}"),
        v.note(f"Each GPU sends {format_bytes(last.sent_bytes, 'auto', 3, trim=True)} in all, in "
               f"{format_time(last.seconds)}. Each layer runs two such all-reduces, one after attention and "
               "one after the FFN."),
    ]
