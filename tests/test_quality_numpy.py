"""descent.trace.quality's NumPy, against the plain formulas it replaced (issue 28: the same numbers,
less memory traffic). Each reference below is the earlier, whole-array version of the function, kept
here verbatim; the results must be equal bit for bit, not close: the site prints them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from descent.trace import quality


def _perplexity_whole(logits: np.ndarray, ids: list[int]) -> float:
    """The earlier quality.perplexity after the forward pass: log-softmax of the whole (T, V) array."""
    lg = logits.astype(np.float64)
    z = lg - lg.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    nll = -logp[np.arange(len(ids) - 1), np.asarray(ids[1:])]
    return float(math.exp(nll.mean()))


def _int_groups_whole(g: np.ndarray, bits: int, symmetric: bool) -> np.ndarray:
    g = g.astype(np.float64)
    if symmetric:
        qmax = 2 ** (bits - 1) - 1
        amax = np.abs(g).max(axis=-1, keepdims=True)
        s = np.where(amax > 0, amax / qmax, 1.0)
        return np.clip(np.rint(g / s), -qmax, qmax) * s
    qmax = 2**bits - 1
    lo = np.minimum(g.min(axis=-1, keepdims=True), 0.0)
    hi = np.maximum(g.max(axis=-1, keepdims=True), 0.0)
    s = np.where(hi > lo, (hi - lo) / qmax, 1.0)
    z = np.rint(-lo / s)
    return (np.clip(np.rint(g / s) + z, 0, qmax) - z) * s


def _fp4_whole(x: np.ndarray) -> np.ndarray:
    a = np.abs(x)
    step = np.where(a < 2, 0.5, np.where(a < 4, 1.0, 2.0))
    return np.sign(x) * np.minimum(np.rint(a / step) * step, 6.0)


def _mxfp4_whole(w: np.ndarray, block: int = 32) -> np.ndarray:
    r, c = w.shape
    g = w.reshape(r, c // block, block).astype(np.float64)
    amax = np.abs(g).max(axis=-1, keepdims=True)
    e = np.floor(np.log2(np.where(amax > 0, amax, 1.0))) - 2
    s = np.exp2(np.clip(np.where(amax > 0, e, -127), -127, 127))
    return (_fp4_whole(g / s) * s).reshape(w.shape)


@pytest.fixture(scope="module")
def weights() -> np.ndarray:
    """(64, 256) float32 weights with the troubles of real ones: an outlier, a row and a block of
    zeros, a row of one sign, ties at the rounding boundaries."""
    rng = np.random.default_rng(28)
    w = rng.normal(0, 0.02, (64, 256)).astype(np.float32)
    w[3, 17] = 0.9  # a natural outlier
    w[5] = 0  # an all-zero row
    w[7, 32:64] = 0  # an all-zero block
    w[9] = np.abs(w[9])  # one sign only
    w[11, :32] = np.arange(32, dtype=np.float32) / 8  # values that fall on the rounding ties
    return w


@pytest.mark.parametrize("rows", [1, 3, 16, 600])  # one row at a time, ragged last chunk, default, all at once
def test_perplexity_in_chunks_equals_the_whole_array(rows, monkeypatch):
    rng = np.random.default_rng(rows)
    logits = (rng.normal(0, 4, (37, 1000)) + rng.normal(0, 1, 1000)).astype(np.float32)  # (T, V)
    ids = [int(i) for i in rng.integers(0, 1000, 37)]
    monkeypatch.setattr(quality, "LOGIT_ROWS", rows)
    assert quality.perplexity_of_logits(logits, ids) == _perplexity_whole(logits, ids)


@pytest.mark.parametrize("bits", [8, 4, 3, 2])
@pytest.mark.parametrize("symmetric", [True, False])
def test_rounding_in_place_equals_the_whole_array(weights, bits, symmetric):
    assert np.array_equal(quality.int_rows(weights, bits, symmetric),
                          _int_groups_whole(weights.reshape(64, 1, -1), bits, symmetric).reshape(weights.shape))
    assert np.array_equal(quality.int_blocks(weights, bits, 32, symmetric),
                          _int_groups_whole(weights.reshape(64, 8, 32), bits, symmetric).reshape(weights.shape))


def test_mxfp4_in_place_equals_the_whole_array(weights):
    got, want = quality.mxfp4_blocks(weights), _mxfp4_whole(weights)
    assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
    xs = np.concatenate([np.linspace(-9, 9, 3601), [-0.0, 0.0, 0.25, -0.25, 2.5, -2.5, 5.0, 7.0]])
    assert np.array_equal(quality.fp4_round(xs), _fp4_whole(xs))


@pytest.mark.parametrize("block", [1, 2, 32, 64, 48, 128, 256])  # pairwise: powers of two up to 64
def test_group_extremes(weights, block):
    n = weights.shape[1] // block * block
    g = weights[:, :n].reshape(64, -1, block).astype(np.float64)
    hi, lo = quality._extremes(g)
    assert np.array_equal(hi, g.max(axis=-1, keepdims=True)) and np.array_equal(lo, g.min(axis=-1, keepdims=True))
