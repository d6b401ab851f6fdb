"""Tiled matrix multiplication: the arithmetic intensity of a tile, the walk over the output, and
the FLOPs and bytes of one transformer layer's matrix products.

A product C = A B with A (M x K) and B (K x N) is computed one output tile at a time. For a
``tm x tn`` tile of C the kernel streams a ``tm x K`` strip of A and a ``K x tn`` strip of B from
memory into on-chip memory (shared memory on a GPU) and does ``2 tm tn K`` FLOPs with them (a
multiply and an add per term). Loading ``(tm + tn) K`` elements of ``b`` bytes each, its
arithmetic intensity is

    intensity = 2 tm tn K / ((tm + tn) K b) = 2 tm tn / ((tm + tn) b)      (= t / b for t x t tiles)

so a 64 x 64 tile of 2-byte (FP16/BF16) elements does 32 FLOP per byte loaded, and doubling the
tile or halving the element width doubles it. K cancels: the intensity of a tiled product is set
by the tile, not by the matrices. Writing the tile of C back (``tm tn`` elements, once) is left
out; it is small next to the strips when K is large. Sources: the blocking argument of Hong & Kung
1981 ("I/O complexity: the red-blue pebble game"); NVIDIA's "Matrix Multiplication Background User's
Guide" (Deep Learning Performance documentation: tiles, arithmetic intensity of a GEMM); CUTLASS's
hierarchical tiling (github.com/NVIDIA/cutlass, docs "Efficient GEMM in CUDA").

Whole-product traffic with t x t tiles: every tile reads its strips, so the product reads
``2 M N K b / t`` bytes, again ``t / b`` FLOP per byte. The floor, with on-chip memory holding
everything, is reading A and B once and writing C once: ``(M K + K N + M N) b``.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from dataclasses import dataclass

from descent import numerics, transformer
from descent.catalog import Model, resolve_model
from descent.checks import is_finite, is_int

__all__ = [
    "ELEMENT_BYTES",
    "GEMM_EXAMPLE",
    "K_STEP",
    "LayerMatmul",
    "TILE_SIZES",
    "TileWalk",
    "element_bytes",
    "gemm_flops",
    "layer_matmuls",
    "min_traffic_bytes",
    "tile_intensity",
    "tile_walk",
    "tile_working_set_bytes",
    "tiled_traffic_bytes",
]

#: Element formats a tensor core multiplies -> bytes per element: ``numerics.ELEMENT_BYTES`` (block
#: scales not counted: a tile's scales are a few percent of its bytes). FP16/BF16 are 16 bits, FP8
#: 8, FP4 4 (NVIDIA Hopper and Blackwell tensor cores; OCP Microscaling spec v1.0 for FP4
#: elements); FP32 for comparison (the CUDA cores' format, no tensor core).
ELEMENT_BYTES = numerics.ELEMENT_BYTES

#: Tile edges offered (elements): powers of two from 16 (the smallest tensor-core fragment edge of
#: an FP16 mma, CUDA C++ Programming Guide, "Warp Matrix Functions": 16 x 16 x 16) to 256.
TILE_SIZES = (16, 32, 64, 128, 256)

#: The K depth of one load of the strips, elements: CUTLASS's Hopper FP16 GEMM examples use
#: 128 x 128 x 64 thread-block tiles (CUTLASS example 48, ``TileShape = Shape<_128,_128,_64>``).
K_STEP = 64

#: The worked example of the tiled-GEMM widget: a 256 x 256 output over K = 1,024 (any sizes that
#: the tiles divide would do; these keep the grid small enough to draw cell by cell).
GEMM_EXAMPLE = {"m": 256, "n": 256, "k": 1024}


def element_bytes(element: str) -> float:
    """Bytes per element of ``element`` (a key of :data:`ELEMENT_BYTES`).

    Raises:
        ValueError: unknown element format; the message lists the allowed ones.
    """
    try:
        return ELEMENT_BYTES[element]
    except (KeyError, TypeError):
        raise ValueError(f"element format must be one of {', '.join(ELEMENT_BYTES)}, got {element!r}") from None


def _positive_int(name: str, x: object) -> int:
    if not is_int(x) or x < 1:
        raise ValueError(f"{name} must be a whole number of elements >= 1, got {x!r}")
    return x


def _bytes_per(b: float) -> float:
    if not (is_finite(b) and b > 0):
        raise ValueError(f"bytes per element must be a positive number, got {b!r}")
    return float(b)


def tile_intensity(tile: int, bytes_per_element: float, tile_n: int | None = None) -> float:
    """FLOP per byte loaded by one output tile of a tiled matrix product.

    ``2 tm tn / ((tm + tn) b)``; for a square tile (``tile_n`` None) ``tile / b``. A 64 x 64 tile
    in FP16 (b = 2): 64 / 2 = 32 FLOP per byte. See the module docstring for the derivation.

    Args:
        tile: tm, the tile's rows, elements (>= 1).
        bytes_per_element: b, bytes (``element_bytes(...)``; 2 for FP16/BF16), > 0.
        tile_n: tn, the tile's columns (default: ``tile``).

    Raises:
        ValueError: a tile edge not a whole number >= 1, or b not positive.
    """
    tm = _positive_int("tile", tile)
    tn = tm if tile_n is None else _positive_int("tile_n", tile_n)
    b = _bytes_per(bytes_per_element)
    return 2 * tm * tn / ((tm + tn) * b)


def gemm_flops(m: int, n: int, k: int) -> int:
    """FLOPs of C (M x N) = A (M x K) B (K x N): ``2 M N K`` (one multiply and one add per term).

    Raises:
        ValueError: a dimension not a whole number >= 1.
    """
    return 2 * _positive_int("m", m) * _positive_int("n", n) * _positive_int("k", k)


def tiled_traffic_bytes(m: int, n: int, k: int, tile: int, bytes_per_element: float) -> float:
    """Bytes a tiled product reads from memory: every t x t output tile loads its strips of A and B.

    ``ceil(M/t) ceil(N/t) x 2 t K b`` (``= 2 M N K b / t`` when t divides M and N); C written
    once is not counted (see the module docstring).

    Raises:
        ValueError: a dimension or tile not a whole number >= 1, b not positive.
    """
    m, n, k, t = (_positive_int(x, v) for x, v in (("m", m), ("n", n), ("k", k), ("tile", tile)))
    b = _bytes_per(bytes_per_element)
    tiles = -(-m // t) * -(-n // t)
    return tiles * 2 * t * k * b


def min_traffic_bytes(m: int, n: int, k: int, bytes_per_element: float) -> float:
    """The floor on a product's memory traffic: A and B read once, C written once, bytes.

    ``(M K + K N + M N) b``. Raises ValueError as :func:`tiled_traffic_bytes`.
    """
    m, n, k = (_positive_int(x, v) for x, v in (("m", m), ("n", n), ("k", k)))
    return (m * k + k * n + m * n) * _bytes_per(bytes_per_element)


def tile_working_set_bytes(tile: int, bytes_per_element: float, k_step: int = K_STEP) -> float:
    """On-chip bytes one t x t tile's strips need per K step: ``(t + t) k_step b``.

    The A strip (t x k_step) and the B strip (k_step x t) of one load; a kernel that overlaps the
    next load with the current products keeps two or more such stages. Compare with the chip's
    shared memory per SM (``Accelerator.shared_memory_per_unit_bytes``).

    Raises:
        ValueError: tile or k_step not a whole number >= 1, b not positive.
    """
    t = _positive_int("tile", tile)
    return 2 * t * _positive_int("k_step", k_step) * _bytes_per(bytes_per_element)


@dataclass(frozen=True)
class TileWalk:
    """Where one step of the walk over the output tiles is.

    Attributes:
        tile_rows, tile_cols: the output's tiles, ``ceil(M/t)`` x ``ceil(N/t)``.
        k_tiles: tiles along K, ``ceil(K/t)`` (the strips' length in tiles).
        index: the step, 0-based, row-major over the output tiles.
        row, col: the output tile computed at this step.
        tiles: ``tile_rows x tile_cols``.
    """

    tile_rows: int
    tile_cols: int
    k_tiles: int
    index: int
    row: int
    col: int
    tiles: int


def tile_walk(m: int, n: int, k: int, tile: int, index: int) -> TileWalk:
    """Step ``index`` of a row-major walk over the output tiles of an (M x K)(K x N) product.

    At step i the kernel computes output tile (i // cols, i % cols) from A's row strip i // cols
    and B's column strip i % cols.

    Raises:
        ValueError: a dimension or tile not a whole number >= 1, ``index`` not 0 to tiles - 1.
    """
    m, n, k, t = (_positive_int(x, v) for x, v in (("m", m), ("n", n), ("k", k), ("tile", tile)))
    rows, cols = -(-m // t), -(-n // t)
    if not is_int(index) or not 0 <= index < rows * cols:
        raise ValueError(f"Tile step must be 0 to {rows * cols - 1} ({rows} x {cols} output tiles), got {index!r}")
    return TileWalk(rows, cols, -(-k // t), index, index // cols, index % cols, rows * cols)


@dataclass(frozen=True)
class LayerMatmul:
    """One weight matrix of a layer, multiplied by T tokens' activations.

    Attributes:
        name: what it is ("Q projection", "FFN up (one expert)", ...).
        d_in, d_out: the weight's shape (d_in x d_out), elements.
        flops: ``2 T d_in d_out``, FLOP.
        weight_bytes: ``d_in d_out b_w``, bytes (read once).
        activation_bytes: ``T (d_in + d_out) b_a``: the input read and the output written, bytes.
        intensity: ``flops / (weight_bytes + activation_bytes)``, FLOP per byte.
        count: how many such matrices one token multiplies by in this layer (MoE: k routed experts).
    """

    name: str
    d_in: int
    d_out: int
    flops: float
    weight_bytes: float
    activation_bytes: float
    intensity: float
    count: int = 1


def _shapes(m: Model) -> list[tuple[str, int, int, int]]:
    """(name, d_in, d_out, count) of one layer's matrices (the last layer's FFN kind: MoE if any)."""
    D, H = m.hidden_size, m.num_heads
    out: list[tuple[str, int, int, int]] = []
    if m.mla is not None:
        a = m.mla
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        if a.q_lora_rank:
            out += [("Q down-projection (MLA)", D, a.q_lora_rank, 1), ("Q up-projection (MLA)", a.q_lora_rank, H * qk, 1)]
        else:
            out.append(("Q projection", D, H * qk, 1))
        out += [("KV down-projection (MLA latent)", D, a.kv_lora_rank + a.qk_rope_head_dim, 1),
                ("KV up-projection (MLA)", a.kv_lora_rank, H * (a.qk_nope_head_dim + a.v_head_dim), 1),
                ("attention output", H * a.v_head_dim, D, 1)]
    else:
        out += [("Q projection", D, H * m.head_dim, 1), ("K projection", D, m.num_kv_heads * m.head_dim, 1),
                ("V projection", D, m.num_kv_heads * m.head_dim, 1), ("attention output", H * m.head_dim, D, 1)]
    if m.moe is not None and m.num_layers > m.moe.first_dense_layers:
        e = m.moe
        out.append(("router", D, e.num_experts, 1))
        k = e.experts_per_token
        out += [("FFN gate (each routed expert)", D, e.expert_intermediate_size, k),
                ("FFN up (each routed expert)", D, e.expert_intermediate_size, k),
                ("FFN down (each routed expert)", e.expert_intermediate_size, D, k)]
        if e.num_shared_experts:
            f = e.shared_expert_intermediate_size
            out += [("FFN gate (shared expert)", D, f, e.num_shared_experts),
                    ("FFN up (shared expert)", D, f, e.num_shared_experts),
                    ("FFN down (shared expert)", f, D, e.num_shared_experts)]
    else:
        F = m.intermediate_size
        out += [("FFN gate", D, F, 1), ("FFN up", D, F, 1), ("FFN down", F, D, 1)]
    return out


def layer_matmuls(model: str | Model, tokens: int, weight_bytes_per_element: float,
                  activation_bytes_per_element: float = 2.0) -> list[LayerMatmul]:
    """The matrix products of one layer for T tokens: FLOPs, bytes and intensity of each.

    Shapes from the model's config (as :func:`descent.transformer.param_counts` counts them):
    Q, K, V and output projections (MLA: the down- and up-projections of DeepSeek-V2's eq. 9-13),
    then the gated FFN's gate, up and down (Shazeer 2020), or, for a mixture of experts, the
    router and ONE routed expert's three matrices (``count`` = k of them per token; with T tokens
    spread over the experts, each expert sees about T k / E of them, so its intensity is lower
    than the table's T-token figure). Each product multiplies a (T x d_in) activation by a
    (d_in x d_out) weight: ``2 T d_in d_out`` FLOPs; it reads the weight once and the activation
    once and writes the (T x d_out) result.

    Args:
        model: catalog model or id.
        tokens: T, tokens multiplied together (decode: the batch; prefill: batch x prompt), >= 1.
        weight_bytes_per_element: bytes per stored weight (``numerics.precision(w).bytes_per_weight``).
        activation_bytes_per_element: bytes per activation value (BF16: 2).

    Raises:
        ValueError: unknown model, tokens not a whole number >= 1, a byte size not positive.
    """
    m = resolve_model(model)
    t = _positive_int("tokens", tokens)
    bw, ba = _bytes_per(weight_bytes_per_element), _bytes_per(activation_bytes_per_element)
    rows = []
    for name, d_in, d_out, count in _shapes(m):
        flops = transformer.FLOP_PER_MAC * t * d_in * d_out
        wb = d_in * d_out * bw
        ab = t * (d_in + d_out) * ba
        rows.append(LayerMatmul(name, d_in, d_out, float(flops), wb, ab, flops / (wb + ab), count))
    return rows
