"""descent.trace.embeddings: the committed embeddings.json equals a fresh computation on the real
SmolLM2 table, and its numbers (PCA variance, neighbours, analogy ranks) are recomputed here
independently."""

from __future__ import annotations

import json

import numpy as np
import pytest
from json_compare import differences

from descent import tokenizer
from descent.trace import embeddings


@pytest.fixture(scope="module")
def matrix():
    from descent.trace import embedding_matrix

    return embedding_matrix().astype(np.float64)  # (V, D) = (49152, 576)


@pytest.fixture(scope="module")
def exported():
    return json.loads(embeddings.data_path().read_text(encoding="utf-8"))


@pytest.mark.slow  # the embedding matrix from the GGUF: about 3 s
def test_export_equals_a_fresh_computation(matrix, exported):
    # Structure, words and ids exactly; floats to 1e-3 relative (the last printed digit depends on
    # the order of sums, which BLAS and the CPU choose).
    assert not differences(embeddings.compute(matrix), exported)


def test_shape_and_word_list(exported):
    # SmolLM2-135M: vocab 49,152 x d_model 576 (GGUF llama.embedding_length, tokenizer size).
    assert (exported["vocab_size"], exported["d_model"]) == (49152, 576)
    words = [w for ws in embeddings.WORDS.values() for w in ws]
    assert [r["word"] for r in exported["words"]] == words
    tok = tokenizer.smollm2()
    for r in exported["words"]:
        assert tok.encode(" " + r["word"]) == [r["id"]]  # one token, with the leading space


def test_pca_variance_by_eigenvalues(matrix, exported):
    # Independent route: eigenvalues of the word list's covariance matrix (n x n Gram form);
    # the share of the two largest in their sum is what the two PCA axes keep.
    X = matrix[[r["id"] for r in exported["words"]]]
    Xc = X - X.mean(axis=0)
    eig = np.sort(np.linalg.eigvalsh(Xc @ Xc.T))[::-1]
    share = eig[:2] / eig.sum()
    assert exported["pca"]["explained"] == pytest.approx(share.tolist(), abs=1e-4)
    # ... and a flat picture keeps well under half of it: say so on the page.
    assert sum(exported["pca"]["explained"]) < 0.5
    # The coordinates are the projections: their variances are in the same ratio.
    xs = np.array([r["x"] for r in exported["words"]])
    ys = np.array([r["y"] for r in exported["words"]])
    assert xs.var() / ys.var() == pytest.approx(share[0] / share[1], rel=1e-3)


def test_neighbours_are_real_cosines(matrix, exported):
    # " king": cosine with every row computed here; the stored top-10 are the 10 largest (itself out).
    row = next(r for r in exported["words"] if r["word"] == "king")
    v = matrix[row["id"]]
    cos = matrix @ v / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(v))
    cos[row["id"]] = -np.inf
    top = np.argsort(-cos)[: embeddings.NEIGHBOURS]
    assert [n["id"] for n in row["neighbours"]] == top.tolist()
    assert [n["cosine"] for n in row["neighbours"]] == pytest.approx(cos[top].tolist(), abs=1e-4)
    assert " queen" in [n["text"] for n in row["neighbours"]]


def test_king_man_woman_rank(matrix, exported):
    tok = tokenizer.smollm2()
    ids = {w: tok.encode(" " + w)[0] for w in ("king", "man", "woman", "queen")}
    vec = matrix[ids["king"]] - matrix[ids["man"]] + matrix[ids["woman"]]
    cos = matrix @ vec / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(vec))
    rank = int((cos > cos[ids["queen"]]).sum()) + 1
    a = next(a for a in exported["analogies"] if a["expected"] == "queen")
    assert a["rank_all"] == rank
    assert a["cosine"] == pytest.approx(float(cos[ids["queen"]]), abs=1e-4)
    assert a["rank_excluding_inputs"] <= a["rank_all"]


def test_multi_token_word_is_rejected(monkeypatch, matrix):
    monkeypatch.setitem(embeddings.WORDS, "bad", ("antidisestablishmentarianism",))
    with pytest.raises(ValueError, match="antidisestablishmentarianism.*one token"):
        embeddings.compute(matrix)
