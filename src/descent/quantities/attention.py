"""Tiles and attention traffic: a GEMM tile's intensity, naive against FlashAttention bytes
(descent.tiling, descent.attention_io).

Every function calls the core module that owns the arithmetic. Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from typing import Any

from descent import params as P
from descent.quantities.registry import blame, quantity

__all__: list[str] = []


#: The inputs of one head's attention traffic.
ATTENTION_PARAMS = (P.SEQ_LEN, P.HEAD_DIM, P.ELEMENT, P.ACCELERATOR)

@quantity("tile_intensity", "Intensity of a tile", "flop_per_byte", P.TILE, P.ELEMENT)
def tile_intensity(tile: int, element: str) -> float:
    """FLOPs per byte loaded by one square output tile: tile edge / bytes per element."""
    from descent import tiling

    return tiling.tile_intensity(tile, tiling.element_bytes(element))

def _traffic(seq_len: int, head_dim: int, element: str, accelerator: str):
    from descent import attention_io, tiling

    return blame("accelerator", attention_io.traffic, seq_len, head_dim, tiling.element_bytes(element), accelerator)

@quantity("attention_naive_bytes", "Naive attention traffic", "bytes", *ATTENTION_PARAMS)
def attention_naive_bytes(**kw: Any) -> float:
    """Memory traffic of one head's naive attention, 4Nd + 4N^2 elements (Dao et al. 2022, Alg. 0)."""
    return _traffic(**kw).naive_bytes

@quantity("attention_flash_bytes", "FlashAttention traffic", "bytes", *ATTENTION_PARAMS)
def attention_flash_bytes(**kw: Any) -> float:
    """Memory traffic of one head's FlashAttention with one SM's shared memory (Dao et al. 2022, Alg. 1)."""
    return _traffic(**kw).flash_bytes

@quantity("attention_io_ratio", "Naive over FlashAttention traffic", "ratio", *ATTENTION_PARAMS)
def attention_io_ratio(**kw: Any) -> float:
    """How many times more bytes naive attention moves than FlashAttention."""
    return _traffic(**kw).ratio

@quantity("decode_attention_intensity", "Decode attention intensity", "flop_per_byte", P.MODEL, P.CONTEXT, P.KV)
def decode_attention_intensity(model: str, context: int, kv: str) -> float:
    """FLOPs per byte of the KV cache read by one decode step's attention (any batch)."""
    from descent import attention_io

    return attention_io.decode_attention(model, context, kv).intensity
