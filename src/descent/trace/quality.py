"""What lower precision costs SmolLM2, measured at build: re-quantize its real weights, then run
its forward pass over a fixed English text and compare perplexities.

Build side (NumPy). The starting point is the shipped file itself, SmolLM2-135M-Instruct in GGUF
Q4_1 (every attention and feed-forward matrix: 4-bit codes with a scale and a minimum per 32
weights; the token embedding, which is also the output head, in Q8_0). So every number here is
*relative to the shipped 4-bit file*, not to the original BF16 model, which this project does not
ship. Each variant rounds the 210 matrices again (the Q8_0 embedding and the FP32 norms stay as
they are) with NumPy versions of :mod:`descent.quant`'s schemes; the tests check the NumPy and the
core versions agree.

Perplexity: ``exp(mean negative log-likelihood)`` of each token of the text given the ones before
it (Jelinek et al. 1977; the measure the GPTQ paper reports, Frantar et al. 2022, section 5), over
:data:`EVAL_TOKENS` tokens of the "Naming and binding" section of the Python documentation, which
ships with Python itself (``pydoc_data.topics``, PSF licence), fed as one sequence without a BOS
token (the GGUF's ``add_bos_token`` is false). The forward pass is :func:`descent.trace.forward.forward`,
whose logits the peer test compares with transformers.

Results are cached as JSON under ``cache_dir()/quality/`` (:func:`descent.trace.cache.cached_json`),
keyed by the GGUF's sha256, :data:`QUALITY_VERSION` and a hash of the text (and each variant's
perplexity under the same key and its id, so that a build's two processes share the variants:
:func:`measure_share`), and say on what machine they were computed. They are untimed and undated:
the perplexities depend on the model and the text, not on the day, so two builds print the same page.

The NumPy works in place and in chunks (:func:`perplexity_of_logits`, :func:`_int_groups`,
:func:`mxfp4_blocks`): the same operations in the same order as the plain formulas, so the same
numbers bit for bit (``tests/test_quality_numpy.py``), with less memory traffic: measured here, the
log-softmax of one variant's 512 x 49,152 logits took 1.7 s and takes 0.05 s, re-quantizing the six
variants 6.4 s and 4.3 s.
"""

from __future__ import annotations

import hashlib
import math
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from descent import numerics
from descent.trace.cache import cache_dir, cached_json, claim
from descent.trace.gguf_reader import Model, load_model

#: Bump when the variants, the text or the measurement change.
QUALITY_VERSION = 1
#: Tokens of text evaluated (about 2.5 s per variant on one core of this machine).
EVAL_TOKENS = 512
#: The pydoc topic evaluated.
TEXT_TOPIC = "naming"
#: The tensor the quantization table and the histogram figure round.
TABLE_TENSOR = "blk.15.ffn_down.weight"
#: Matrices of every layer that the variants re-quantize.
MATRICES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")


def eval_text() -> str:
    """The evaluated text: ``pydoc_data.topics.topics["naming"]`` of the running Python."""
    from pydoc_data.topics import topics

    return topics[TEXT_TOPIC]


def eval_ids() -> list[int]:
    """The first :data:`EVAL_TOKENS` token ids of :func:`eval_text` (SmolLM2's tokenizer, no BOS)."""
    from descent import tokenizer

    ids = tokenizer.encode(eval_text())
    if len(ids) < EVAL_TOKENS:
        raise ValueError(f"the evaluation text has {len(ids)} tokens, fewer than {EVAL_TOKENS}")
    return ids[:EVAL_TOKENS]


# -- NumPy quantizers (the same rules as descent.quant, vectorised) -----------------------------


def int_rows(w: np.ndarray, bits: int, symmetric: bool = True) -> np.ndarray:
    """Round each row of ``w`` (R, C) to ``bits``-bit integers with one scale per row (per output
    channel), symmetric or with a zero point (:func:`descent.quant.int_quantize` per row)."""
    return _int_groups(w.reshape(w.shape[0], 1, -1), bits, symmetric).reshape(w.shape)


def int_blocks(w: np.ndarray, bits: int, block: int = 32, symmetric: bool = False) -> np.ndarray:
    """Round runs of ``block`` weights along each row, one scale (and zero point) per block."""
    r, c = w.shape
    return _int_groups(w.reshape(r, c // block, block), bits, symmetric).reshape(w.shape)


def _int_groups(g: np.ndarray, bits: int, symmetric: bool) -> np.ndarray:
    # One float64 copy of the groups, then every step in place (no temporary of the matrix's size):
    # the same operations in the same order as descent.quant, so the same numbers.
    g = np.array(g, dtype=np.float64)  # (R, G, B)
    hi, lo = _extremes(g)  # (R, G, 1) each
    if symmetric:
        qmax = 2 ** (bits - 1) - 1
        amax = np.maximum(hi, -lo)  # max |w|: negation is exact
        s = np.where(amax > 0, amax / qmax, 1.0)
        np.divide(g, s, out=g)
        np.rint(g, out=g)
        np.clip(g, -qmax, qmax, out=g)
        g *= s
        return g
    qmax = 2**bits - 1
    lo = np.minimum(lo, 0.0)
    hi = np.maximum(hi, 0.0)
    s = np.where(hi > lo, (hi - lo) / qmax, 1.0)
    z = np.rint(-lo / s)
    np.divide(g, s, out=g)
    np.rint(g, out=g)
    g += z
    np.clip(g, 0, qmax, out=g)
    g -= z
    g *= s
    return g


def _extremes(g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Largest and smallest of each group, ``g`` (R, G, B) -> (R, G, 1) twice. Groups of a small power
    of two are halved and compared pairwise (exact in any order): NumPy's own reduction over a
    32-long last axis costs about three times as much."""
    b = g.shape[-1]
    if b > 64 or b & (b - 1):
        return g.max(axis=-1, keepdims=True), g.min(axis=-1, keepdims=True)
    hi = lo = g
    while hi.shape[-1] > 1:
        h = hi.shape[-1] // 2
        hi, lo = np.maximum(hi[..., :h], hi[..., h:]), np.minimum(lo[..., :h], lo[..., h:])
    return hi, lo


def fp4_round(x: np.ndarray) -> np.ndarray:
    """Round to FP4 E2M1 (0, 0.5, 1, 1.5, 2, 3, 4, 6 and negatives), ties to even, saturating at 6:
    the spacing is 0.5 below 2, 1 from 2 to 4, 2 above (OCP MX v1.0, section 5.3.3). Float64."""
    return _fp4_round_in_place(np.array(x, dtype=np.float64))


def _fp4_round_in_place(x: np.ndarray) -> np.ndarray:
    sign = np.sign(x)
    a = np.abs(x, out=x)
    step = np.multiply(a >= 2, 0.5)  # 0 or 0.5
    step += 0.5
    step += a >= 4  # 0.5 below 2, 1 from 2 to 4, 2 above: powers of two, so a / step is exact
    np.divide(a, step, out=a)
    np.rint(a, out=a)
    a *= step
    np.minimum(a, 6.0, out=a)
    a *= sign
    return a


def mxfp4_blocks(w: np.ndarray, block: int = numerics.MX_BLOCK) -> np.ndarray:
    """MXFP4 along each row (:func:`descent.quant.mxfp4`): FP4 elements, E8M0 scale
    ``2^(floor(log2 max) - 2)`` per block of 32."""
    r, c = w.shape
    g = np.array(w.reshape(r, c // block, block), dtype=np.float64)  # (R, G, B)
    hi, lo = _extremes(g)
    amax = np.maximum(hi, -lo)  # (R, G, 1)
    e = np.floor(np.log2(np.where(amax > 0, amax, 1.0))) - 2
    s = np.exp2(np.clip(np.where(amax > 0, e, -127), -127, 127))
    np.divide(g, s, out=g)
    g = _fp4_round_in_place(g)
    g *= s
    return g.reshape(w.shape)


@dataclass(frozen=True)
class Variant:
    """A way to re-store the matrices: ``id``, ``label`` (what the table says), ``bits_per_weight``
    of the matrices (scales included), and ``apply`` (R, C) -> (R, C)."""

    id: str
    label: str
    bits_per_weight: float
    apply: Callable[[np.ndarray], np.ndarray] | None


#: The variants measured, in table order. ``shipped`` is the file as it is.
VARIANTS: tuple[Variant, ...] = (
    Variant("shipped", "as shipped: Q4_1 (4-bit codes, scale and minimum per 32)", 5.0, None),
    Variant("int8_row", "8-bit integers, one scale per row", 8.0, lambda w: int_rows(w, 8)),
    Variant("mxfp4", "MXFP4: FP4 with a power-of-two scale per 32", 4.25, mxfp4_blocks),
    Variant("int4_row", "4-bit integers, one scale per row (no block scales)", 4.0, lambda w: int_rows(w, 4)),
    Variant("int3_block", "3-bit integers, scale and zero point per 32", 3.0 + 32 / 32,
            lambda w: int_blocks(w, 3, 32, symmetric=False)),
    Variant("int3_row", "3-bit integers, one scale per row", 3.0, lambda w: int_rows(w, 3)),
    Variant("int2_block", "2-bit integers, scale and zero point per 32", 2.0 + 32 / 32,
            lambda w: int_blocks(w, 2, 32, symmetric=False)),
)


def requantized(model: Model, variant: Variant) -> Model:
    """A copy of ``model`` whose 210 layer matrices went through ``variant.apply`` (float32)."""
    if variant.apply is None:
        return model
    tensors = dict(model.tensors)
    for i in range(model.config.n_layers):
        for m in MATRICES:
            name = f"blk.{i}.{m}.weight"
            tensors[name] = np.ascontiguousarray(variant.apply(np.asarray(tensors[name])), dtype=np.float32)
    return Model(model.config, tensors, model.meta, model.sha256)


def perplexity(model: Model, ids: list[int]) -> float:
    """``exp`` of the mean negative log-likelihood of ``ids[1:]``, each given the ids before it."""
    from descent.trace import forward as fw

    return perplexity_of_logits(fw.forward(model, ids, all_logits=True).logits, ids)


#: Rows of logits turned into log-likelihoods at once (:func:`perplexity_of_logits`): 16 x V float64
#: is 6 MB, reused, where the whole (T, V) in float64 is 200 MB at T = 512, made four times over.
LOGIT_ROWS = 16


def perplexity_of_logits(logits: np.ndarray, ids: list[int]) -> float:
    """``exp`` of the mean of ``-log softmax(logits[t])[ids[t + 1]]`` over t = 0..T-2, in float64.

    ``logits`` (T, V) float32, row t predicting token t + 1. Each row's log-softmax is
    ``z - log(sum(exp(z)))`` with ``z = logits[t] - max(logits[t])``, taken :data:`LOGIT_ROWS` rows at
    a time in buffers kept across chunks (the same per-row arithmetic as the whole array at once)."""
    n = len(ids) - 1
    targets = np.asarray(ids[1:], dtype=np.int64)  # (T-1,)
    nll = np.empty(n)  # (T-1,)
    z = np.empty((min(LOGIT_ROWS, n), logits.shape[1]))  # (rows, V) float64
    e = np.empty_like(z)
    for a in range(0, n, LOGIT_ROWS):
        b = min(a + LOGIT_ROWS, n)
        zc, ec = z[:b - a], e[:b - a]
        zc[...] = logits[a:b]
        zc -= zc.max(axis=-1, keepdims=True)
        np.exp(zc, out=ec)
        log_total = np.log(ec.sum(axis=-1))  # (rows,)
        nll[a:b] = -(zc[np.arange(b - a), targets[a:b]] - log_total)
    return float(math.exp(nll.mean()))


def _key(sha: str) -> str:
    text_hash = hashlib.sha256(eval_text().encode("utf-8")).hexdigest()[:16]
    return f"{sha}-v{QUALITY_VERSION}-{text_hash}"


def measure(model: Model | None = None) -> dict:
    """Perplexity of every :data:`VARIANTS` entry, from the cache or measured now and cached (17 to
    21 s here in one process, about 10 s in a clean build's two).

    Each variant's perplexity is its own cache entry too (``<key>-<variant>.json``), so two processes
    sharing a build (:mod:`descent.trace.prefetch`) measure different variants: this one takes every
    variant the other has not begun, in table order, then waits for the other's
    (:func:`descent.trace.cache.cached_json`).

    Returns:
        ``{"key", "tokens", "text", "python", "machine", "variants": [{"id", "label",
        "bits_per_weight", "perplexity"}]}`` (a cache written before version 1's results dropped
        them may also hold ``date`` and ``seconds``: nothing reads them).
    """
    model = model or load_model()
    key = _key(model.sha256)

    def compute() -> dict:
        ids = eval_ids()
        found = {}
        for v in VARIANTS:  # claimed one at a time: the other process may begin one meanwhile
            if claim(_variant_path(key, v)):
                found[v.id] = variant_perplexity(model, v, ids, key)
        for v in VARIANTS:  # the other process's: waited for
            if v.id not in found:
                found[v.id] = variant_perplexity(model, v, ids, key)
        return {
            "key": key,
            "tokens": len(ids),
            "text": f"Python {sys.version_info.major}.{sys.version_info.minor} documentation, 'Naming and binding'",
            "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores, {platform.system()}",
            "variants": [{"id": v.id, "label": v.label, "bits_per_weight": v.bits_per_weight,
                          "perplexity": found[v.id]} for v in VARIANTS],
        }

    return cached_json("quality", f"{key}.json", compute)


def _variant_path(key: str, v: Variant):
    return cache_dir() / "quality" / f"{key}-{v.id}.json"


def variant_perplexity(model: Model, v: Variant, ids: list[int], key: str) -> float:
    """:func:`perplexity` of ``v`` over ``ids``, cached as ``quality/<key>-<id>.json`` (``key``:
    :func:`measure`'s)."""
    return cached_json("quality", _variant_path(key, v).name,
                       lambda: {"perplexity": perplexity(requantized(model, v), ids)})["perplexity"]


def measure_share(model: Model | None = None) -> None:
    """A second process's share of :func:`measure`: the variants no process has begun, from the last
    one back (the first process takes them from the first), each cached as :func:`measure` reads it.
    Does nothing when :func:`measure`'s own entry exists."""
    model = model or load_model()
    key = _key(model.sha256)
    if (cache_dir() / "quality" / f"{key}.json").is_file():
        return
    ids = eval_ids()
    for v in reversed(VARIANTS):
        if claim(_variant_path(key, v)):
            variant_perplexity(model, v, ids, key)


def measure_against_shipped(model: Model | None = None) -> dict:
    """:func:`measure` with each variant's ``change``: its perplexity over the shipped file's, less 1
    (0 for the shipped file itself)."""
    q = measure(model)
    base = next(r["perplexity"] for r in q["variants"] if r["id"] == "shipped")
    return {**q, "variants": [{**r, "change": r["perplexity"] / base - 1} for r in q["variants"]]}


# -- one real tensor, rounded every way (the quantization table and the histogram figure) --------


#: (bits, symmetric) pairs of the per-tensor table.
TABLE_SCHEMES = tuple((b, s) for b in (8, 4, 3, 2) for s in (True, False))


def tensor_table(name: str = TABLE_TENSOR) -> list[dict]:
    """One real matrix rounded with ONE scale for the whole tensor at 8, 4, 3, 2 bits, symmetric and
    with a zero point: ``[{"bits", "symmetric", "levels", "rmse", "sqnr_db", "bytes", "step"}]``.
    ``bytes`` counts the codes plus one FP32 scale (and one FP32 zero point)."""
    w = np.asarray(load_model().tensors[name], dtype=np.float64).reshape(1, 1, -1)
    n = w.size
    out = []
    for bits, sym in TABLE_SCHEMES:
        deq = _int_groups(w, bits, sym)
        err = deq - w
        levels = 2**bits - 1 if sym else 2**bits
        span = 2 * np.abs(w).max() if sym else (max(w.max(), 0) - min(w.min(), 0))
        out.append({
            "bits": bits, "symmetric": sym, "levels": levels,
            "rmse": float(np.sqrt(np.mean(err**2))),
            "sqnr_db": float(10 * np.log10(np.sum(w**2) / np.sum(err**2))),
            "bytes": n * bits / 8 + (4 if sym else 8),
            "step": float(span / (levels - 1)),
        })
    return out


def tensor_values(name: str = TABLE_TENSOR) -> np.ndarray:
    """The real matrix, flattened, float64 (for the histogram figure)."""
    return np.asarray(load_model().tensors[name], dtype=np.float64).ravel()


def tensor_stats(name: str = TABLE_TENSOR) -> dict:
    """The real matrix in four numbers: ``{"weights", "std", "max" (largest magnitude),
    "max_over_std"}`` (how many standard deviations out its largest weight lies)."""
    w = tensor_values(name)
    return {"weights": int(w.size), "std": float(w.std()), "max": float(abs(w).max()),
            "max_over_std": float(abs(w).max() / w.std())}


def tensor_rounded(bits: int, symmetric: bool = True, name: str = TABLE_TENSOR) -> np.ndarray:
    """The real matrix rounded with one scale for the whole tensor, flattened."""
    return _int_groups(tensor_values(name).reshape(1, 1, -1), bits, symmetric).ravel()
