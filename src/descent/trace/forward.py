"""SmolLM2's forward pass in NumPy, written to be read, plus greedy and sampled generation.

One Llama-style decoder (Touvron et al. 2023, "LLaMA", sec. 2.2): token embedding; L = 30 blocks of
RMSNorm -> grouped-query attention with RoPE and a causal mask -> residual, RMSNorm -> SwiGLU FFN ->
residual; a final RMSNorm; the output head is the embedding matrix itself (tied embeddings).

Shapes: T new tokens, S = cached + new positions, D = 576, H = 9 query heads, K = 3 key/value heads,
d_head = 64, F = 1536, V = 49,152 (GGUF ``llama.*`` metadata).

RoPE trap: GGUF stores W_q and W_k with rows permuted so that RoPE rotates *adjacent* pairs
(x[2i], x[2i+1]) -- llama.cpp's "normal" rope. So the rotation here is the interleaved one; Hugging
Face's ``rotate_half`` (pairs i and i + d_head/2) is right only on un-permuted weights.
Sources: Zhang and Sennrich 2019 (RMSNorm, eq. 4); Su et al. 2021, "RoFormer", sec. 3.4.2, eq. 34
(RoPE); Ainslie et al. 2023 (GQA, sec. 2.2); Shazeer 2020, "GLU Variants Improve Transformer", eq. 6
(SwiGLU); Vaswani et al. 2017, eq. 1 (scaled dot-product attention).

All arithmetic stays float32: constants are Python floats (NumPy 2 keeps the array's dtype), never
NumPy float64 scalars, which would upcast every activation.

Memory: attention is computed for :data:`ATTENTION_CHUNK` query positions at a time
(:func:`attend`), so a prefill of T tokens holds (H, ATTENTION_CHUNK, S) scores, not (H, T, S): a
prompt filling SmolLM2's whole 8,192-token context needs about 0.6 GB of attention temporaries
instead of about 10 GB (each (H, T, S) float32 array is 9 x 8,192^2 x 4 bytes = 2.4 GB, and the
softmax makes three). A prompt shorter than the chunk takes exactly the unchunked path.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np

from descent import sampling
from descent.checks import is_int
from descent.trace.gguf_reader import Model, load_model


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last axis. x (T, D), weight (D,) -> (T, D)."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def rope_angles(positions: np.ndarray, d_head: int, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of ``position * theta^(-2i/d_head)`` for pairs i = 0..d_head/2-1: each (T, d_head/2)."""
    inv_freq = theta ** (-np.arange(0, d_head, 2, dtype=np.float64) / d_head)  # (d_head/2,)
    angles = np.outer(positions, inv_freq)  # (T, d_head/2), float64 for exact angles
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def rope_interleaved(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotate adjacent pairs (x[2i], x[2i+1]) by the angle of their position. x (heads, T, d_head)."""
    even, odd = x[..., 0::2], x[..., 1::2]  # (heads, T, d_head/2)
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def softmax_last(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, max-subtracted; ``-inf`` entries get probability 0."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def silu(x: np.ndarray) -> np.ndarray:
    """``x * sigmoid(x)`` (Elfwing et al. 2018)."""
    return x / (1.0 + np.exp(-x))


#: Query positions whose attention scores are held at once (see the module docstring):
#: (H, 512, S) float32 scores are 9 x 512 x 8,192 x 4 bytes = 151 MB at S = 8,192.
ATTENTION_CHUNK = 512


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, start: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Causal scaled dot-product attention (Vaswani et al. 2017, eq. 1), :data:`ATTENTION_CHUNK` queries at a time.

    q (H, T, dh): the new positions start..start+T-1; k, v (H, S, dh): every position 0..S-1
    (S = start + T), already repeated per query head. New position t may look at positions
    0..start+t. Returns the output (H, T, dh) and the last new position's weights over all
    positions (H, S), a copy, so no (H, chunk, S) array outlives the call.
    """
    H, T, dh = q.shape
    S = k.shape[1]
    out = np.empty((H, T, v.shape[2]), dtype=np.float32)
    kt = k.transpose(0, 2, 1)  # (H, dh, S)
    for a in range(0, T, ATTENTION_CHUNK):
        b = min(a + ATTENTION_CHUNK, T)
        # Causal mask of this block: row t (absolute start + t) sees columns 0..start + t.
        mask = np.where(np.arange(S)[None, :] <= start + np.arange(a, b)[:, None], 0.0, -np.inf).astype(
            np.float32
        )  # (b - a, S)
        scores = q[:, a:b] @ kt  # (H, b - a, S)
        scores *= scale  # in place: one (H, b - a, S) array until the softmax
        scores += mask
        weights = softmax_last(scores)  # (H, b - a, S)
        out[:, a:b] = weights @ v  # (H, b - a, dh)
    return out, weights[:, -1, :].copy()  # (H, S): the last block holds the last new position


@dataclass
class KVCache:
    """Keys and values of every position fed so far, per layer: each (K, S, d_head) float32."""

    keys: list = field(default_factory=list)
    values: list = field(default_factory=list)

    @property
    def length(self) -> int:
        """Positions cached so far (S)."""
        return self.keys[0].shape[1] if self.keys else 0

    def append(self, layer: int, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Add this step's k, v (K, T, d_head) to ``layer`` and return all of them (K, S, d_head)."""
        if layer == len(self.keys):
            self.keys.append(k)
            self.values.append(v)
        else:
            self.keys[layer] = np.concatenate([self.keys[layer], k], axis=1)
            self.values[layer] = np.concatenate([self.values[layer], v], axis=1)
        return self.keys[layer], self.values[layer]


@dataclass
class Output:
    """What one forward call returns.

    ``logits``: (T, V) for every new position, or (1, V) for the last one only. ``attention``:
    (L, H, S) float32, the attention weights of the last new position over all S positions.
    """

    logits: np.ndarray
    attention: np.ndarray


def forward(model: Model, token_ids, cache: KVCache | None = None, all_logits: bool = False) -> Output:
    """Run ``token_ids`` (T new tokens) through the model, extending ``cache`` (a fresh one if None).

    Raises ``ValueError`` for an empty list, an id outside 0..V-1 or a context beyond 8,192 tokens.
    """
    c = model.config
    cache = cache if cache is not None else KVCache()
    ids = np.asarray(token_ids, dtype=np.int64)
    if ids.ndim != 1 or ids.size == 0:
        raise ValueError("token_ids must be a non-empty list of token ids")
    if ids.min() < 0 or ids.max() >= c.vocab:
        raise ValueError(f"token ids must be 0 to {c.vocab - 1}")
    if cache.length + ids.size > c.context_length:
        raise ValueError(f"context must be at most {c.context_length} tokens, got {cache.length + ids.size}")
    T, H, K, dh = ids.size, c.n_heads, c.n_kv_heads, c.d_head
    start = cache.length
    cos, sin = rope_angles(np.arange(start, start + T), dh, c.rope_theta)  # (T, dh/2)
    scale = 1.0 / math.sqrt(dh)  # a Python float: keeps float32
    last_attention = []

    x = model.tensors["token_embd.weight"][ids]  # (T, D)
    for layer in range(c.n_layers):
        h = rms_norm(x, model.layer(layer, "attn_norm"), c.rms_eps)  # (T, D)
        q = (h @ model.layer(layer, "attn_q").T).reshape(T, H, dh).transpose(1, 0, 2)  # (H, T, dh)
        k = (h @ model.layer(layer, "attn_k").T).reshape(T, K, dh).transpose(1, 0, 2)  # (K, T, dh)
        v = (h @ model.layer(layer, "attn_v").T).reshape(T, K, dh).transpose(1, 0, 2)  # (K, T, dh)
        q, k = rope_interleaved(q, cos, sin), rope_interleaved(k, cos, sin)
        k, v = cache.append(layer, k, v)  # (K, S, dh)
        k, v = (
            np.repeat(k, H // K, axis=0),
            np.repeat(v, H // K, axis=0),
        )  # (H, S, dh): query head j uses kv head j // (H/K)
        attn, last = attend(q, k, v, start, scale)  # (H, T, dh), (H, S): causal, in query chunks
        last_attention.append(last)
        attn = attn.transpose(1, 0, 2).reshape(T, H * dh)  # (T, D)
        x = x + attn @ model.layer(layer, "attn_output").T  # (T, D)
        h = rms_norm(x, model.layer(layer, "ffn_norm"), c.rms_eps)  # (T, D)
        gate = silu(h @ model.layer(layer, "ffn_gate").T) * (h @ model.layer(layer, "ffn_up").T)  # (T, F)
        x = x + gate @ model.layer(layer, "ffn_down").T  # (T, D)
    x = rms_norm(x if all_logits else x[-1:], model.tensors["output_norm.weight"], c.rms_eps)  # (T or 1, D)
    logits = x @ model.tensors["token_embd.weight"].T  # (T or 1, V): tied output head
    return Output(logits=logits, attention=np.stack(last_attention))  # attention (L, H, S)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Log-probabilities of a logit vector (V,), in float64 for exact small probabilities."""
    z = logits.astype(np.float64)
    z = z - z.max()
    return z - np.log(np.exp(z).sum())


@dataclass
class Step:
    """One generated token: the ids fed this step, the id chosen, its probability (temperature 1,
    unfiltered), the logits it was chosen from (V,), the cache length before the step and the
    attention of the last fed position over all positions (L, H, S)."""

    fed: list[int]
    token: int
    probability: float
    logits: np.ndarray
    cached: int
    attention: np.ndarray


def generate(
    prompt_ids,
    max_new_tokens: int,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    stop_ids=(),
    model: Model | None = None,
):
    """Yield :class:`Step` s: feed the prompt once (prefill), then one token per step (decode).

    Temperature 0 is greedy (argmax); otherwise each token is drawn with
    :func:`descent.sampling.sample` from one ``random.Random(seed)`` stream, so a seed repeats the text.
    Stops after a token in ``stop_ids`` or after ``max_new_tokens`` (1 to 4,096). Raises ``ValueError``
    for bad settings, naming the field, and when the prompt plus ``max_new_tokens`` exceeds the
    model's context (8,192 tokens): checked before any computation, not after the context fills.
    """
    if (
        not is_int(max_new_tokens)
        or not 1 <= max_new_tokens <= MAX_NEW_TOKENS
    ):
        raise ValueError(f"max_new_tokens must be 1 to {MAX_NEW_TOKENS}, got {max_new_tokens!r}")
    model = model or load_model()
    sampling.validate(temperature, top_k, top_p, model.config.vocab)  # before any compute
    fed = list(prompt_ids)
    context = model.config.context_length
    if len(fed) + max_new_tokens > context:  # a context holds the prompt and the answer
        raise ValueError(f"the prompt ({len(fed)} tokens) plus max_new_tokens ({max_new_tokens}) is "
                         f"{len(fed) + max_new_tokens} tokens, more than the model's context of {context} tokens")
    rng = random.Random(seed)
    cache = KVCache()
    for _ in range(max_new_tokens):
        cached = cache.length
        out = forward(model, fed, cache)
        logits = out.logits[-1]  # (V,)
        if temperature == 0:
            token = int(np.argmax(logits))
        else:
            token = sampling.sample(logits.tolist(), temperature, top_k, top_p, rng=rng)
        probability = float(np.exp(log_softmax(logits)[token]))
        yield Step(
            fed=fed,
            token=token,
            probability=probability,
            logits=logits,
            cached=cached,
            attention=out.attention,
        )
        if token in stop_ids:
            return
        fed = [token]


#: Longest continuation generate() produces in one call (tokens); keeps a CLI typo from running for hours.
MAX_NEW_TOKENS = 4096
