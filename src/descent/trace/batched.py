"""Batched decoding: one step that gives B sequences one new token each, reading the weights once.

:func:`forward_batch` is :func:`descent.trace.forward.forward` for B sequences that each feed one
token: the B activation rows are stacked into one (B, D) matrix, so every weight matrix is read
once and multiplied by B rows (the saving batching is about); attention stays per sequence,
because each one has its own KV cache and length. Same primitives, same float32 discipline as
``forward.py``; the logits equal ``forward``'s for each sequence alone (checked in the tests).

Shapes: B sequences, S_b positions cached for sequence b, D = 576, H = 9, K = 3, d_head = 64,
F = 1536, V = 49,152.
"""

from __future__ import annotations

import math

import numpy as np

from descent.trace.forward import KVCache, rms_norm, rope_angles, rope_interleaved, silu, softmax_last
from descent.trace.gguf_reader import Model

__all__ = ["forward_batch"]


def forward_batch(model: Model, token_ids, caches: list[KVCache]) -> np.ndarray:
    """One decode step for ``len(caches)`` sequences: ``token_ids[b]`` is fed to the sequence whose
    cache is ``caches[b]`` (which grows by one position). Returns the logits, (B, V) float32.

    Raises:
        ValueError: the ids and caches differ in number, an id outside 0..V-1, an empty cache (prefill
            each sequence with ``forward`` first), or a cache at the context limit.
    """
    c = model.config
    ids = np.asarray(token_ids, dtype=np.int64)
    if ids.ndim != 1 or ids.size != len(caches) or ids.size == 0:
        raise ValueError("token_ids must hold one id per cache, at least one")
    if ids.min() < 0 or ids.max() >= c.vocab:
        raise ValueError(f"token ids must be 0 to {c.vocab - 1}")
    if any(cache.length == 0 or cache.length >= c.context_length for cache in caches):
        raise ValueError(f"every cache must hold 1 to {c.context_length - 1} positions")
    B, H, K, dh = ids.size, c.n_heads, c.n_kv_heads, c.d_head
    scale = 1.0 / math.sqrt(dh)  # a Python float: keeps float32
    angles = [rope_angles(np.array([cache.length]), dh, c.rope_theta) for cache in caches]  # B x (1, dh/2)

    x = model.tensors["token_embd.weight"][ids]  # (B, D)
    for layer in range(c.n_layers):
        h = rms_norm(x, model.layer(layer, "attn_norm"), c.rms_eps)  # (B, D)
        q = (h @ model.layer(layer, "attn_q").T).reshape(B, H, 1, dh)  # one read of W_q for all B
        k = (h @ model.layer(layer, "attn_k").T).reshape(B, K, 1, dh)
        v = (h @ model.layer(layer, "attn_v").T).reshape(B, K, 1, dh)
        attn = np.empty((B, H * dh), dtype=np.float32)
        for b, cache in enumerate(caches):  # attention: each sequence over its own cache
            cos, sin = angles[b]
            qb, kb = rope_interleaved(q[b], cos, sin), rope_interleaved(k[b], cos, sin)  # (H|K, 1, dh)
            keys, values = cache.append(layer, kb, v[b])  # (K, S_b, dh)
            keys, values = np.repeat(keys, H // K, axis=0), np.repeat(values, H // K, axis=0)  # (H, S_b, dh)
            weights = softmax_last(qb @ keys.transpose(0, 2, 1) * scale)  # (H, 1, S_b): no mask, all past
            attn[b] = (weights @ values).reshape(H * dh)
        x = x + attn @ model.layer(layer, "attn_output").T  # (B, D)
        h = rms_norm(x, model.layer(layer, "ffn_norm"), c.rms_eps)
        gate = silu(h @ model.layer(layer, "ffn_gate").T) * (h @ model.layer(layer, "ffn_up").T)  # (B, F)
        x = x + gate @ model.layer(layer, "ffn_down").T  # (B, D)
    x = rms_norm(x, model.tensors["output_norm.weight"], c.rms_eps)
    return x @ model.tensors["token_embd.weight"].T  # (B, V): tied output head
