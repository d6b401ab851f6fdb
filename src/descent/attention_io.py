"""Attention's memory traffic: the naive kernel against FlashAttention, decode-time attention, and
the online softmax that lets attention be computed block by block.

Counts are per attention head and per sequence, in elements of ``b`` bytes (Q, K, V and O are
N x d; the scores S and probabilities P are N x N). Source: Dao, Fu, Ermon, Rudra & Ré 2022,
"FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness", arXiv:2205.14135:

* **Naive** (the paper's Algorithm 0): read Q and K, write S; read S, write P = softmax(S); read P
  and V, write O. ``4 N d + 4 N^2`` elements: the N x N matrix crosses the memory bus four times.
* **FlashAttention** (Algorithm 1, with on-chip SRAM of M elements): block sizes
  ``B_c = ceil(M / 4d)``, ``B_r = min(B_c, d)``; the outer loop walks the ``T_c = ceil(N / B_c)``
  blocks of K and V (each read once), the inner loop reads and rewrites every block of Q, O and
  the running statistics l and m. With the initial write of O, l and m:
  ``N d + 2 N + 2 N d + T_c (3 N d + 4 N)`` elements, Theta(N^2 d^2 / M) (Theorem 2). No N x N
  matrix is ever written.
* **Floor**: read Q, K and V once and write O once: ``4 N d`` elements.

The statistics l and m are counted at ``b`` bytes like everything else (kernels keep them in FP32:
they are N-length vectors, a rounding error next to the N x d blocks).

**Decode-time attention** reads the whole KV cache to score one new query per sequence: its bytes
are the cache and its FLOPs 4 per cached key element per query head sharing it, so grouped-query
attention raises its intensity by the group size and a batch does not raise it at all (every
sequence has its own cache).

**Online softmax** (Milakov & Gimelshein 2018, "Online normalizer calculation for softmax",
arXiv:1805.02867; Dao et al. 2022, section 3.1): a running maximum m and a running sum l of
``exp(score - m)``; when a block brings a larger maximum, what was summed so far is multiplied by
``exp(m_old - m_new)``. :func:`online_softmax` does it on plain lists and returns each step.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from descent import numerics, transformer
from descent.catalog import Accelerator, Model, resolve_accelerator, resolve_model
from descent.checks import is_finite, is_int
from descent.scenario import Scenario
from descent.units import format_int

__all__ = [
    "AttentionTraffic",
    "DecodeAttention",
    "OnlineSoftmaxExample",
    "OnlineSoftmaxStep",
    "decode_attention",
    "flash_block_sizes",
    "flash_elements",
    "floor_elements",
    "naive_elements",
    "online_softmax",
    "online_softmax_example",
    "sram_elements",
    "traffic",
]

#: Longest sequence the traffic functions accept, tokens (the site's context limit).
MAX_SEQ_LEN = 10_000_000


def _n_d(n: int, d: int) -> tuple[int, int]:
    if not is_int(n) or not 1 <= n <= MAX_SEQ_LEN:
        raise ValueError(f"sequence length must be a whole number from 1 to {format_int(MAX_SEQ_LEN)} tokens, got {n!r}")
    if not is_int(d) or not 1 <= d <= 1024:
        raise ValueError(f"head dimension must be a whole number from 1 to 1024, got {d!r}")
    return n, d


def naive_elements(n: int, d: int) -> int:
    """Elements the naive kernel moves to and from memory for one head: ``4 N d + 4 N^2``.

    Dao et al. 2022, Algorithm 0 (standard attention): Q, K read (2Nd); S written, read (2N^2);
    P written, read (2N^2); V read, O written (2Nd).

    Raises:
        ValueError: N not 1 to 10,000,000 or d not 1 to 1,024.
    """
    n, d = _n_d(n, d)
    return 4 * n * d + 4 * n * n


def floor_elements(n: int, d: int) -> int:
    """The least any exact kernel moves for one head: Q, K, V read once, O written once, ``4 N d``."""
    n, d = _n_d(n, d)
    return 4 * n * d


def flash_block_sizes(d: int, sram: int) -> tuple[int, int]:
    """FlashAttention's block sizes ``(B_r, B_c)`` for head dimension d and M elements of SRAM.

    ``B_c = ceil(M / 4d)``, ``B_r = min(B_c, d)`` (Dao et al. 2022, Algorithm 1, line 1).

    Raises:
        ValueError: d not 1 to 1,024, or M not a whole number >= 4d (a block must hold a row).
    """
    _n_d(1, d)
    if not is_int(sram) or sram < 4 * d:
        raise ValueError(f"on-chip memory must hold at least 4 d = {4 * d} elements, got {sram!r}")
    bc = -(-sram // (4 * d))
    return min(bc, d), bc


def flash_elements(n: int, d: int, sram: int) -> int:
    """Elements FlashAttention (Algorithm 1) moves to and from memory for one head.

    ``N d + 2 N`` (O, l, m initialised in memory) ``+ 2 N d`` (each K and V block read once)
    ``+ T_c (3 N d + 4 N)`` (per K/V block: every Q, O, l, m block read, O, l, m written), with
    ``T_c = ceil(N / B_c)`` (:func:`flash_block_sizes`). Dao et al. 2022, Algorithm 1 and
    Theorem 2 (Theta(N^2 d^2 / M)).

    Raises:
        ValueError: as :func:`naive_elements` and :func:`flash_block_sizes`.
    """
    n, d = _n_d(n, d)
    _br, bc = flash_block_sizes(d, sram)
    t_c = -(-n // bc)
    return n * d + 2 * n + 2 * n * d + t_c * (3 * n * d + 4 * n)


def sram_elements(accelerator: str | Accelerator, bytes_per_element: float) -> int:
    """M: the elements of ``bytes_per_element`` one SM's (CU's) shared memory holds.

    ``Accelerator.shared_memory_per_unit_bytes // bytes`` (H100: 228 KiB / 2 bytes = 116,736 FP16
    elements).

    Raises:
        ValueError: unknown accelerator, one with no recorded shared memory per SM, or bytes not > 0.
    """
    a = resolve_accelerator(accelerator)
    if a.shared_memory_per_unit_bytes is None:
        have = [x.id for x in _with_shared_memory()]
        raise ValueError(f"{a.name} has no recorded shared memory per compute unit; allowed: {', '.join(have)}")
    if not (is_finite(bytes_per_element) and bytes_per_element > 0):
        raise ValueError(f"bytes per element must be a positive number, got {bytes_per_element!r}")
    return int(a.shared_memory_per_unit_bytes // bytes_per_element)


def _with_shared_memory() -> list[Accelerator]:
    from descent import catalog

    return [a for a in catalog.accelerators().values() if a.shared_memory_per_unit_bytes is not None]


@dataclass(frozen=True)
class AttentionTraffic:
    """Memory traffic of attention for one head and one sequence, bytes.

    Attributes:
        seq_len: N, tokens. head_dim: d. bytes_per_element: b.
        sram_elements: M, the on-chip memory FlashAttention blocks for, elements.
        block_rows, block_cols: B_r and B_c. kv_blocks: T_c.
        naive_bytes, flash_bytes, floor_bytes: the three counts of the module docstring, bytes.
        score_bytes: one N x N matrix, ``N^2 b``, bytes.
        ratio: ``naive_bytes / flash_bytes``.
    """

    seq_len: int
    head_dim: int
    bytes_per_element: float
    sram_elements: int
    block_rows: int
    block_cols: int
    kv_blocks: int
    naive_bytes: float
    flash_bytes: float
    floor_bytes: float
    score_bytes: float
    ratio: float


def traffic(n: int, d: int, bytes_per_element: float, accelerator: str | Accelerator) -> AttentionTraffic:
    """Naive, FlashAttention and floor traffic of one head on ``accelerator``'s SRAM (one SM).

    Raises:
        ValueError: as :func:`naive_elements` and :func:`sram_elements`.
    """
    n, d = _n_d(n, d)
    sram = sram_elements(accelerator, bytes_per_element)
    br, bc = flash_block_sizes(d, sram)
    b = float(bytes_per_element)
    naive = naive_elements(n, d) * b
    flash = flash_elements(n, d, sram) * b
    return AttentionTraffic(n, d, b, sram, br, bc, -(-n // bc), naive, flash, floor_elements(n, d) * b,
                            n * n * b, naive / flash)


@dataclass(frozen=True)
class DecodeAttention:
    """Attention of one decode step for one sequence, all layers.

    Attributes:
        flops: ``transformer.attention_flops_per_token(model, context)``, FLOP.
        bytes: the sequence's KV cache read once, bytes.
        intensity: ``flops / bytes``, FLOP per byte (independent of the batch).
    """

    flops: float
    bytes: float
    intensity: float


def decode_attention(model: str | Model, context: int, kv: str = Scenario.kv) -> DecodeAttention:
    """FLOPs, bytes and intensity of decode-time attention over ``context`` cached tokens.

    Bytes: ``transformer.kv_cache_bytes(model, context, kv bits)`` (sliding windows capped);
    FLOPs: ``transformer.attention_flops_per_token``. For GQA with H query heads and K key/value
    heads in 16 bits this is about H / K FLOP per byte (Llama 3.1 70B: 64 / 8 = 8).

    Raises:
        ValueError: unknown model or KV precision, context out of range.
    """
    m = resolve_model(model)
    kp = numerics.kv_precision(kv)
    flops = float(transformer.attention_flops_per_token(m, context))
    nbytes = transformer.kv_cache_bytes(m, context, kp.bits_per_weight)
    return DecodeAttention(flops, nbytes, flops / nbytes)


@dataclass(frozen=True)
class OnlineSoftmaxStep:
    """The running state after one block of scores.

    Attributes:
        block: 0-based block index. block_max: the largest score in it.
        running_max: m after the block. rescale: ``exp(m_old - m_new)`` applied to what came
            before (1 when the maximum did not move; 0 for the first block).
        running_sum: l after the block: ``sum exp(score - m)`` over every score so far.
    """

    block: int
    block_max: float
    running_max: float
    rescale: float
    running_sum: float

    @property
    def number(self) -> int:
        """The block's number counting from 1, as a table numbers it."""
        return self.block + 1


def online_softmax(scores, values, block: int) -> tuple[list[float], list[OnlineSoftmaxStep]]:
    """Softmax-weighted sum of ``values`` computed block by block, with the running max and sum.

    Args:
        scores: the N scores of one query, finite numbers.
        values: N value vectors of equal length d (lists of finite numbers).
        block: keys per block, >= 1.

    Returns:
        ``(output, steps)``: output is ``sum_j softmax(scores)_j values[j]`` (length d), equal to
        the plain computation up to rounding; steps records the state after each block.

    Raises:
        ValueError: empty or non-finite scores, a values list of another length or ragged rows,
            block not a whole number >= 1.
    """
    if not isinstance(scores, (list, tuple)) or not scores:
        raise ValueError("scores must be a non-empty list of numbers")
    if not all(is_finite(s) for s in scores):
        raise ValueError("scores must be finite numbers")
    if not isinstance(values, (list, tuple)) or len(values) != len(scores):
        raise ValueError(f"values must hold one vector per score ({len(scores)}), got {len(values) if isinstance(values, (list, tuple)) else values!r}")
    d = len(values[0]) if isinstance(values[0], (list, tuple)) else 0
    if d == 0 or any(not isinstance(v, (list, tuple)) or len(v) != d or not all(is_finite(x) for x in v) for v in values):
        raise ValueError("values must be vectors of one length >= 1, of finite numbers")
    if not is_int(block) or block < 1:
        raise ValueError(f"block must be a whole number of keys >= 1, got {block!r}")
    m = -math.inf
    total = 0.0
    acc = [0.0] * d
    steps = []
    for i, start in enumerate(range(0, len(scores), block)):
        s_blk = scores[start:start + block]
        v_blk = values[start:start + block]
        m_blk = max(s_blk)
        m_new = max(m, m_blk)
        rescale = 0.0 if m == -math.inf else math.exp(m - m_new)
        p = [math.exp(s - m_new) for s in s_blk]
        total = total * rescale + math.fsum(p)
        acc = [a * rescale + math.fsum(pj * v[k] for pj, v in zip(p, v_blk, strict=True)) for k, a in enumerate(acc)]
        m = m_new
        steps.append(OnlineSoftmaxStep(i, float(m_blk), float(m), rescale, total))
    return [a / total for a in acc], steps


#: The worked example of the online softmax: 8 scores in blocks of 3 (any values would do; these
#: are drawn from a fixed seed so the page never changes), the values 1 to 8.
SOFTMAX_EXAMPLE_SEED, SOFTMAX_EXAMPLE_SCORES, SOFTMAX_EXAMPLE_BLOCK = 4, 8, 3


@dataclass(frozen=True)
class OnlineSoftmaxExample:
    """The online softmax worked on a small example, with the plain softmax beside it.

    Attributes:
        scores: the scores, one decimal each. values: the one-element value vectors 1, 2, ... N.
        block: scores per block. steps: :func:`online_softmax`'s state after each block.
        block_scores: the scores of each block, in step order.
        output: the weighted sum of the values block by block. plain: the same sum with the plain
            softmax (:func:`descent.transformer.softmax`); equal up to rounding.
    """

    scores: list[float]
    values: list[list[float]]
    block: int
    steps: list[OnlineSoftmaxStep]
    block_scores: list[list[float]]
    output: float
    plain: float


def online_softmax_example(seed: int = SOFTMAX_EXAMPLE_SEED, n: int = SOFTMAX_EXAMPLE_SCORES,
                           block: int = SOFTMAX_EXAMPLE_BLOCK) -> OnlineSoftmaxExample:
    """``n`` scores drawn uniformly from -3 to 6 (one decimal, ``random.Random(seed)``) against the
    values 1 to ``n``, run through :func:`online_softmax` in blocks of ``block``.

    Raises:
        ValueError: ``n`` or ``block`` not a whole number >= 1.
    """
    if not is_int(n) or n < 1:
        raise ValueError(f"n must be a whole number of scores >= 1, got {n!r}")
    rng = random.Random(seed)
    scores = [round(rng.uniform(-3, 6), 1) for _ in range(n)]
    values = [[float(i + 1)] for i in range(n)]
    out, steps = online_softmax(scores, values, block)
    p = transformer.softmax(scores)
    plain = math.fsum(pi * v[0] for pi, v in zip(p, values, strict=True))
    blocks = [scores[s.block * block:(s.block + 1) * block] for s in steps]
    return OnlineSoftmaxExample(scores, values, block, steps, blocks, out[0], plain)
