"""SmolLM2's token embeddings for a chosen word list: neighbours, analogies and a 2-D PCA projection.

Build side (NumPy). :func:`compute` reads the real embedding matrix (V, D) = (49152, 576) from the
GGUF (:func:`descent.trace.embedding_matrix`) and returns a JSON-ready dict; :func:`write` stores
it as ``descent/data/embeddings.json``, which the core widget ``embedding_neighbours`` reads in the
browser (no NumPy there) and the ``embeddings-pca`` figure draws.

* ``words``: every word of :data:`WORDS` as SmolLM2 sees it mid-sentence (with a leading space),
  its token id, its group, its 2-D PCA coordinates and its :data:`NEIGHBOURS` nearest tokens by
  cosine similarity over the WHOLE vocabulary (itself excluded).
* ``pca``: the share of the word list's variance the first two principal components explain
  (PCA of the mean-centred word vectors via ``numpy.linalg.svd``; Jolliffe 2002, "Principal
  Component Analysis", ch. 1). The rest is what a flat picture throws away.
* ``analogies``: vector arithmetic ``b - a + c`` (Mikolov et al. 2013, "Linguistic Regularities
  in Continuous Space Word Representations", section 4): the top tokens by cosine, and the rank
  and cosine of the expected answer, both among all tokens and with the three input tokens
  excluded (the usual convention of that paper's evaluation).

Every word must be a single token with its leading space; :func:`compute` raises ``ValueError``
naming the word otherwise. Run ``python -m descent.trace.embeddings`` to regenerate the file.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np

from descent import tokenizer

__all__ = ["ANALOGIES", "DATA_FILE", "NEIGHBOURS", "ROUND", "WORDS", "compute", "data_path", "write"]

#: The exported file, inside the package's ``data`` folder.
DATA_FILE = "embeddings.json"

#: Nearest neighbours stored per word.
NEIGHBOURS = 10

#: Results stored per analogy.
ANALOGY_TOP = 5

#: Decimal places kept in the exported floats (cosines, coordinates, variance shares): enough for
#: any display, and stable across BLAS builds.
ROUND = 4

#: The word list, by group. Each is one SmolLM2 token when preceded by a space.
WORDS: dict[str, tuple[str, ...]] = {
    "countries": ("France", "Germany", "Italy", "Spain", "Japan", "China"),
    "capitals": ("Paris", "Berlin", "Rome", "Madrid", "Tokyo"),
    "numbers": ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
    "animals": ("dog", "cat", "horse", "cow", "lion", "tiger", "bird", "fish", "mouse"),
    "people": (
        "king",
        "queen",
        "man",
        "woman",
        "boy",
        "girl",
        "prince",
        "princess",
        "father",
        "mother",
        "son",
        "daughter",
        "brother",
        "sister",
    ),
    "verbs": ("run", "walk", "jump", "swim", "eat", "drink", "read", "write", "sleep"),
    "colours": ("red", "blue", "green", "yellow", "black", "white"),
    "adjectives": ("happy", "sad", "big", "small", "good", "bad"),
}

#: Analogies ``(a, b, c, expected)``: b - a + c should land near ``expected``.
ANALOGIES: tuple[tuple[str, str, str, str], ...] = (
    ("man", "king", "woman", "queen"),
    ("France", "Paris", "Germany", "Berlin"),
    ("France", "Paris", "Japan", "Tokyo"),
    ("brother", "sister", "son", "daughter"),
    ("big", "small", "good", "bad"),
)


def data_path() -> Path:
    """Where the exported file lives in the source tree (``src/descent/data/embeddings.json``)."""
    return Path(str(resources.files("descent").joinpath("data", DATA_FILE)))


def _word_ids(tok) -> dict[str, int]:
    ids = {}
    for group, words in WORDS.items():
        for w in words:
            enc = tok.encode(" " + w)
            if len(enc) != 1:
                raise ValueError(
                    f"word {w!r} ({group}) must be one token with its leading space, got {len(enc)}"
                )
            ids[w] = enc[0]
    return ids


def _rank_list(sims: np.ndarray, count: int, exclude: set[int], tok) -> list[dict]:
    order = np.argsort(-sims, kind="stable")
    out = []
    for i in order:
        if int(i) in exclude:
            continue
        out.append({"text": tok.decode([int(i)]), "id": int(i), "cosine": round(float(sims[i]), ROUND)})
        if len(out) == count:
            break
    return out


def compute(matrix: np.ndarray | None = None) -> dict:
    """The export (see the module docstring). ``matrix``: (V, D) embeddings; default: SmolLM2's.

    Arithmetic is float64. PCA signs are fixed so that each component's largest-magnitude
    loading is positive (SVD leaves the sign free), so the picture is the same on every build.

    Raises:
        ValueError: a word of :data:`WORDS` is not a single token.
    """
    if matrix is None:
        from descent.trace import embedding_matrix

        matrix = embedding_matrix()
    E = np.asarray(matrix, dtype=np.float64)  # (V, D)
    unit = E / np.linalg.norm(E, axis=1, keepdims=True)  # (V, D)
    tok = tokenizer.smollm2()
    ids = _word_ids(tok)
    words = list(ids)
    X = E[[ids[w] for w in words]]  # (n, D)
    Xc = X - X.mean(axis=0)  # (n, D)
    _, S, Vt = np.linalg.svd(Xc, full_matrices=False)  # S (n,), Vt (n, D)
    for r in range(2):
        if Vt[r, np.argmax(np.abs(Vt[r]))] < 0:
            Vt[r] = -Vt[r]
    coords = Xc @ Vt[:2].T  # (n, 2)
    var = S**2 / np.sum(S**2)  # (n,)
    group_of = {w: g for g, ws in WORDS.items() for w in ws}
    rows = []
    for n, w in enumerate(words):
        sims = unit @ unit[ids[w]]  # (V,)
        rows.append(
            {
                "word": w,
                "text": " " + w,
                "id": ids[w],
                "group": group_of[w],
                "x": round(float(coords[n, 0]), ROUND),
                "y": round(float(coords[n, 1]), ROUND),
                "neighbours": _rank_list(sims, NEIGHBOURS, {ids[w]}, tok),
            }
        )
    analogies = []
    for a, b, c, expected in ANALOGIES:
        vec = E[ids[b]] - E[ids[a]] + E[ids[c]]  # (D,)
        sims = unit @ (vec / np.linalg.norm(vec))  # (V,)
        order = np.argsort(-sims, kind="stable")
        rank_all = int(np.nonzero(order == ids[expected])[0][0]) + 1
        inputs = {ids[a], ids[b], ids[c]}
        rank_excl = 1 + sum(1 for i in order[: rank_all - 1] if int(i) not in inputs)
        analogies.append(
            {
                "a": a,
                "b": b,
                "c": c,
                "expected": expected,
                "label": f"{b} - {a} + {c}",
                "rank_all": rank_all,
                "rank_excluding_inputs": rank_excl,
                "cosine": round(float(sims[ids[expected]]), ROUND),
                "top": _rank_list(sims, ANALOGY_TOP, set(), tok),
            }
        )
    return {
        "model": "SmolLM2-135M-Instruct (Q4_1 GGUF, dequantized)",
        "vocab_size": int(E.shape[0]),
        "d_model": int(E.shape[1]),
        "pca": {"explained": [round(float(v), ROUND) for v in var[:2]], "words": len(words)},
        "words": rows,
        "analogies": analogies,
    }


def write(path: Path | None = None) -> Path:
    """Compute and write the export as sorted, indented JSON; return the path written."""
    path = Path(path) if path is not None else data_path()
    path.write_text(json.dumps(compute(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    print(write())
