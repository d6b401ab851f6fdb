"""Part 4's animation ("Hardware"): FlashAttention's tiles against the naive kernel, step by step.

``flash_tiles`` walks one attention head over N tokens on a GPU's shared memory: the naive kernel
writes the N x N scores to HBM, reads them back, writes the probabilities and reads them again; the
fused kernel (Dao et al. 2022, Algorithm 1) loads one block of keys and values at a time and, for
each block of queries, computes that tile of scores on chip and folds it into a running output with
its running max and sum. The bytes moved to and from HBM count up frame by frame and end at
:func:`descent.attention_io.traffic`'s totals (the same formulas the ``flash_attention`` widget
draws as bars).

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

from descent import attention_io, catalog, tiling
from descent import params as P
from descent.units import format_bytes, format_int, plural
from descent.widgets import Input, widget
from descent.widgets import views as v
from descent.widgets.part4 import ATT_ACC

__all__ = ["flash_tiles", "flash_tiles_frames"]

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

    def frame(label: str, total_elements: int, state) -> None:
        moved.append(total_elements * b)
        grid = [[v.cell(state(i, j)) for j in range(len(cols))] for i in range(len(rows))]
        frames.append(v.frame(label, [
            v.stat("HBM traffic so far", fmt(total_elements * b)),
            v.cell_grid(grid, caption=f"The {format_int(n)} x {format_int(n)} scores in tiles: query blocks down, "
                        "key blocks across", row_labels=[f"Q{i + 1}" for i in range(len(rows))],
                        col_labels=[f"K{j + 1}" for j in range(len(cols))], legend=TILE_LEGEND),
        ]))

    if kernel == "naive":
        e = 2 * n * d + n * n
        frame(f"Read Q and K, compute all {format_int(n * n)} scores and write them to HBM.", e,
              lambda i, j: "is-hbm")
        e += 2 * n * n
        frame("Read the scores back, apply the softmax and write the probabilities to HBM.", e,
              lambda i, j: "is-hbm")
        e += n * n + 2 * n * d
        frame("Read the probabilities and V back and write the output.", e, lambda i, j: "is-read")
        assert e == attention_io.naive_elements(n, d)
    else:
        e = n * d + 2 * n
        frame("Set up the output and the running max and sum in HBM.", e, lambda i, j: "is-empty")
        for j, c in enumerate(cols):
            for i, r in enumerate(rows):
                e += (2 * c * d if i == 0 else 0) + 3 * r * d + 4 * r
                load = f"Load key block K{j + 1} and its values; " if i == 0 else ""
                frame(f"{load}load query block Q{i + 1} with its partial output, score the tile on chip, "
                      "fold it in with the running max and sum, write the partial output back.", e,
                      lambda ii, jj, i=i, j=j: "is-now" if (ii, jj) == (i, j) else
                      ("is-folded" if jj < j or (jj == j and ii < i) else "is-empty"))
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
