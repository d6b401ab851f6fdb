"""From logits to the next token: temperature, top-k, top-p and seeded draws (standard library only).

The pipeline, in the order Hugging Face ``transformers`` applies its logits warpers:

1. **Temperature** T: probabilities ``softmax(z / T)``. T < 1 sharpens, T > 1 flattens, T = 0 is greedy
   (all mass on the largest logit; ties go to the lowest id).
2. **Top-k**: keep the k most probable tokens.
3. **Top-p** (nucleus): keep the smallest set of most probable tokens whose mass reaches p.
4. Renormalise the survivors and draw one with a seeded ``random.Random``.

Sources: Ackley, Hinton and Sejnowski 1985 (temperature in the Boltzmann distribution); Fan, Lewis and
Dauphin 2018, "Hierarchical Neural Story Generation", sec. 5.4 (top-k); Holtzman et al. 2020, "The
Curious Case of Neural Text Degeneration", sec. 3.1 (top-p, eq. 2).

Inputs: ``logits`` a non-empty sequence of floats (one per vocabulary entry, V of them); ``-inf``
marks a banned token; NaN and ``+inf`` are rejected. Outputs are lists of floats or ``(id, prob)`` pairs.
"""

from __future__ import annotations

import math
import random

from descent.checks import is_int, is_real

#: Largest temperature accepted. At T = 5 SmolLM2's next-token distribution is already close to
#: uniform over thousands of tokens; higher values only add noise. A design choice of this site.
MAX_TEMPERATURE = 5.0
#: Slack when comparing a cumulative probability with p, for float rounding (dimensionless).
TOP_P_TOLERANCE = 1e-12


def _check_logits(logits) -> list[float]:
    try:
        values = [float(z) for z in logits]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"logits must be a sequence of numbers ({exc})") from None
    if not values:
        raise ValueError("logits must hold at least 1 value, got 0")
    for i, z in enumerate(values):
        if math.isnan(z) or z == math.inf:
            raise ValueError(f"logits[{i}] must be finite or -inf, got {z}")
    if all(z == -math.inf for z in values):
        raise ValueError("logits must have at least one value above -inf")
    return values


def _check_temperature(temperature) -> float:
    if not is_real(temperature) or math.isnan(temperature):
        raise ValueError(f"temperature must be a number from 0 to {MAX_TEMPERATURE:g}, got {temperature!r}")
    if not 0 <= temperature <= MAX_TEMPERATURE:
        raise ValueError(f"temperature must be 0 to {MAX_TEMPERATURE:g}, got {temperature:g}")
    return float(temperature)


def _check_top_k(k, size: int) -> int:
    if not is_int(k) or not 1 <= k <= size:
        raise ValueError(f"top_k must be an integer 1 to {size} (the vocabulary size), got {k!r}")
    return k


def _check_top_p(p) -> float:
    if not is_real(p) or math.isnan(p) or not 0 < p <= 1:
        raise ValueError(f"top_p must be greater than 0 and at most 1, got {p!r}")
    return float(p)


def validate(
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    vocab_size: int | None = None,
) -> None:
    """Check sampling settings without logits: temperature 0..5, top_k 1..vocab_size, 0 < top_p <= 1.

    Raises ``ValueError`` naming the first bad field. ``vocab_size`` None skips top_k's upper bound.
    """
    _check_temperature(temperature)
    if top_k is not None and vocab_size is not None:
        _check_top_k(top_k, vocab_size)
    elif top_k is not None and (not is_int(top_k) or top_k < 1):
        raise ValueError(f"top_k must be an integer of at least 1, got {top_k!r}")
    if top_p is not None:
        _check_top_p(top_p)


def softmax(logits, temperature: float = 1.0) -> list[float]:
    """Probabilities ``p_i = exp(z_i / T) / sum_j exp(z_j / T)`` (length V, sums to 1).

    Computed as ``exp(z_i/T - max_j z_j/T)`` so no term overflows. T = 0 gives a one-hot list at the
    first largest logit (the limit T -> 0+). Raises ``ValueError`` for bad logits or T outside 0..5.
    """
    values = _check_logits(logits)
    t = _check_temperature(temperature)
    top = max(values)
    if t == 0:
        best = values.index(top)
        return [1.0 if i == best else 0.0 for i in range(len(values))]
    weights = [math.exp((z - top) / t) if z != -math.inf else 0.0 for z in values]
    total = math.fsum(weights)
    return [w / total for w in weights]


def _ranked(probs: list[float]) -> list[int]:
    """Ids by probability, largest first; ties by lower id (a stable, reproducible order)."""
    return sorted(range(len(probs)), key=lambda i: (-probs[i], i))


def top_k(probs, k: int) -> list[int]:
    """Ids of the ``k`` most probable tokens, most probable first (ties: lower id first).

    ``probs``: probabilities (length V). Raises ``ValueError`` unless 1 <= k <= V.
    Source: Fan, Lewis and Dauphin 2018, sec. 5.4.
    """
    probs = [float(x) for x in probs]
    _check_top_k(k, len(probs))
    return _ranked(probs)[:k]


def top_p(probs, p: float) -> list[int]:
    """Ids of the smallest set of most probable tokens whose total probability reaches ``p``.

    Most probable first. ``probs``: probabilities summing to 1 (length V); ``0 < p <= 1``.
    With probs (0.5, 0.3, 0.2): p = 0.5 keeps 1 token, p = 0.6 keeps 2, p = 1 keeps 3.
    Source: Holtzman et al. 2020, sec. 3.1, eq. 2. Raises ``ValueError`` for p outside (0, 1].
    """
    probs = [float(x) for x in probs]
    p = _check_top_p(p)
    total = math.fsum(probs)
    kept: list[int] = []
    mass = 0.0
    for i in _ranked(probs):
        if probs[i] <= 0:
            break
        kept.append(i)
        mass += probs[i]
        if mass >= p * total - TOP_P_TOLERANCE:
            break
    return kept


def distribution(logits, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None):
    """The tokens that survive temperature, top-k and top-p, with renormalised probabilities.

    Returns ``[(id, probability), ...]`` most probable first; the probabilities sum to 1. ``top_k``
    and ``top_p`` of ``None`` switch that filter off. Temperature 0 keeps only the argmax.
    Raises ``ValueError`` naming the bad field (temperature 0..5, top_k 1..V, 0 < top_p <= 1).
    """
    probs = softmax(logits, temperature)
    size = len(probs)
    if top_k is not None:
        _check_top_k(top_k, size)
    if top_p is not None:
        _check_top_p(top_p)
    order = [i for i in _ranked(probs) if probs[i] > 0]
    if top_k is not None:
        order = order[:top_k]
    if top_p is not None:
        total = math.fsum(probs[i] for i in order)
        kept, mass = [], 0.0
        for i in order:
            kept.append(i)
            mass += probs[i]
            if mass >= top_p * total - TOP_P_TOLERANCE:
                break
        order = kept
    total = math.fsum(probs[i] for i in order)
    return [(i, probs[i] / total) for i in order]


def sample(
    logits,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    rng: random.Random | None = None,
) -> int:
    """Draw one token id from :func:`distribution`.

    One uniform number u in [0, 1) from ``random.Random(seed)`` (or from ``rng``, to continue a stream)
    picks the first survivor whose cumulative probability exceeds u. The same seed gives the same
    token. Temperature 0 returns the argmax without drawing. Raises ``ValueError`` as
    :func:`distribution` does, or if ``seed`` is not an integer.
    """
    if seed is not None and (not is_int(seed)):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    survivors = distribution(logits, temperature, top_k, top_p)
    if len(survivors) == 1:
        return survivors[0][0]
    u = (rng or random.Random(seed)).random()
    cumulative = 0.0
    for token, prob in survivors:
        cumulative += prob
        if u < cumulative:
            return token
    return survivors[-1][0]  # u landed in the rounding gap just below 1


def greedy(logits) -> int:
    """The id of the largest logit (lowest id on a tie): sampling at temperature 0."""
    values = _check_logits(logits)
    return values.index(max(values))
