"""descent.sampling: temperature, top-k, top-p, seeded draws. Expected values are worked out by hand here."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descent import sampling

LOGITS = [math.log(0.5), math.log(0.3), math.log(0.2)]  # softmax at T=1 is exactly (0.5, 0.3, 0.2)

finite_logits = st.lists(st.floats(min_value=-50, max_value=50, allow_nan=False), min_size=1, max_size=40)
temperatures = st.floats(min_value=0.05, max_value=sampling.MAX_TEMPERATURE)


def test_softmax_of_log_probabilities_gives_them_back():
    # exp(log p_i) / sum_j exp(log p_j) = p_i / 1
    assert sampling.softmax(LOGITS) == pytest.approx([0.5, 0.3, 0.2], abs=1e-15)


def test_softmax_by_hand():
    # logits (0, ln 3): weights 1 and 3, so probabilities 1/4 and 3/4.
    assert sampling.softmax([0.0, math.log(3)]) == pytest.approx([0.25, 0.75], abs=1e-15)
    # temperature 2 halves the logits: weights 1 and sqrt(3) -> 1/(1+sqrt 3), sqrt 3/(1+sqrt 3)
    s3 = math.sqrt(3)
    assert sampling.softmax([0.0, math.log(3)], 2.0) == pytest.approx(
        [1 / (1 + s3), s3 / (1 + s3)], abs=1e-15
    )


def test_softmax_does_not_overflow_and_handles_minus_inf():
    # exp(1000) overflows a double; max-subtraction makes it exp(0) = 1 and exp(-1) for the other.
    e = math.e
    assert sampling.softmax([1000.0, 999.0]) == pytest.approx([e / (e + 1), 1 / (e + 1)], abs=1e-15)
    assert sampling.softmax([0.0, -math.inf]) == [1.0, 0.0]


def test_temperature_zero_is_greedy_and_ties_go_to_the_lower_id():
    assert sampling.softmax([1.0, 3.0, 3.0, 2.0], 0) == [0.0, 1.0, 0.0, 0.0]
    assert sampling.sample([1.0, 3.0, 3.0, 2.0], temperature=0, seed=123) == 1
    assert sampling.greedy([1.0, 3.0, 3.0, 2.0]) == 1


def test_temperature_towards_zero_approaches_greedy():
    # At T = 0.05 the runner-up weight is exp(-(ln .5 - ln .3)/0.05) = (0.3/0.5)^20 ~ 3.7e-5.
    p = sampling.softmax(LOGITS, 0.05)
    assert p[0] == pytest.approx(1 / (1 + 0.6**20 + 0.4**20), rel=1e-12)
    assert p[0] > 0.9999


def test_top_k_keeps_k():
    probs = [0.1, 0.4, 0.2, 0.3]
    assert sampling.top_k(probs, 1) == [1]
    assert sampling.top_k(probs, 3) == [1, 3, 2]
    assert sampling.top_k(probs, 4) == [1, 3, 2, 0]


def test_top_p_keeps_the_smallest_set_reaching_p():
    probs = [0.5, 0.3, 0.2]
    assert sampling.top_p(probs, 0.5) == [0]  # 0.5 reaches 0.5 exactly
    assert sampling.top_p(probs, 0.51) == [0, 1]  # 0.5 < 0.51 <= 0.8
    assert sampling.top_p(probs, 0.8) == [0, 1]  # 0.5 + 0.3 = 0.8 (float sum 0.8 exactly within tolerance)
    assert sampling.top_p(probs, 0.81) == [0, 1, 2]
    assert sampling.top_p(probs, 1.0) == [0, 1, 2]


def test_distribution_renormalises_the_survivors():
    # top_k=2 keeps 0.5 and 0.3 -> 0.625 and 0.375
    dist = sampling.distribution(LOGITS, top_k=2)
    assert [i for i, _ in dist] == [0, 1]
    assert [p for _, p in dist] == pytest.approx([0.625, 0.375], abs=1e-15)
    # top_p=0.6 keeps 0.5 + 0.3 (0.5 alone is short of 0.6)
    assert [i for i, _ in sampling.distribution(LOGITS, top_p=0.6)] == [0, 1]
    # top-k first, then top-p on the renormalised top-k: (0.625, 0.375) with p=0.6 keeps only id 0
    assert sampling.distribution(LOGITS, top_k=2, top_p=0.6) == [(0, 1.0)]


def test_sample_follows_the_distribution():
    # 20,000 seeded draws from (0.5, 0.3, 0.2): each frequency within 5 standard errors (<= 0.018).
    rng = random.Random(7)
    counts = [0, 0, 0]
    n = 20_000
    for _ in range(n):
        counts[sampling.sample(LOGITS, rng=rng)] += 1
    for count, p in zip(counts, [0.5, 0.3, 0.2], strict=True):
        assert abs(count / n - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_sample_uses_the_seed_as_documented():
    # random.Random(0).random() = 0.8444218515250481 lands in the third bucket of (0.5, 0.3, 0.2): cumulative 0.8 < u.
    assert random.Random(0).random() == pytest.approx(0.8444218515250481)
    assert sampling.sample(LOGITS, seed=0) == 2
    # random.Random(1).random() = 0.13436424411240122 < 0.5: the first bucket.
    assert sampling.sample(LOGITS, seed=1) == 0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"temperature": -0.1}, "temperature"),
        ({"temperature": 5.01}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"temperature": "hot"}, "temperature"),
        ({"top_k": 0}, "top_k"),
        ({"top_k": 4}, "top_k"),  # only 3 logits
        ({"top_k": 1.5}, "top_k"),
        ({"top_p": 0}, "top_p"),
        ({"top_p": 1.01}, "top_p"),
        ({"top_p": -1}, "top_p"),
    ],
)
def test_bad_settings_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        sampling.distribution(LOGITS, **kwargs)


def test_bad_logits_and_seed():
    with pytest.raises(ValueError, match="logits"):
        sampling.softmax([])
    with pytest.raises(ValueError, match=r"logits\[1\]"):
        sampling.softmax([0.0, float("nan")])
    with pytest.raises(ValueError, match="logits"):
        sampling.softmax([-math.inf, -math.inf])
    with pytest.raises(ValueError, match="seed"):
        sampling.sample(LOGITS, seed=1.5)


def test_validate_checks_without_logits():
    sampling.validate(0.7, 40, 0.95, vocab_size=49152)
    with pytest.raises(ValueError, match="top_k must be an integer 1 to 49152"):
        sampling.validate(top_k=49153, vocab_size=49152)
    with pytest.raises(ValueError, match="top_k"):
        sampling.validate(top_k=0)


@settings(max_examples=150, deadline=None)
@given(finite_logits, temperatures)
def test_probabilities_sum_to_one_and_keep_the_order(logits, t):
    p = sampling.softmax(logits, t)
    assert math.fsum(p) == pytest.approx(1.0, abs=1e-12)
    assert all(0 <= x <= 1 for x in p)
    for i in range(len(logits)):
        for j in range(len(logits)):
            if logits[i] > logits[j]:
                assert p[i] >= p[j]


@settings(max_examples=150, deadline=None)
@given(finite_logits, st.data())
def test_top_k_and_top_p_properties(logits, data):
    k = data.draw(st.integers(min_value=1, max_value=len(logits)))
    p = data.draw(st.floats(min_value=1e-6, max_value=1.0))
    probs = sampling.softmax(logits)
    kept_k = sampling.top_k(probs, k)
    assert len(kept_k) == k
    assert min(probs[i] for i in kept_k) >= max(
        [probs[i] for i in range(len(probs)) if i not in kept_k], default=0
    )
    kept_p = sampling.top_p(probs, p)
    mass = math.fsum(probs[i] for i in kept_p)
    assert mass >= p - 1e-9  # reaches p ...
    assert math.fsum(probs[i] for i in kept_p[:-1]) < p + 1e-9  # ... and one fewer does not: smallest set
    dist = sampling.distribution(logits, top_k=k, top_p=p)
    assert math.fsum(q for _, q in dist) == pytest.approx(1.0, abs=1e-12)
    assert len(dist) <= k


@settings(max_examples=100, deadline=None)
@given(finite_logits, temperatures, st.integers(min_value=0, max_value=2**32))
def test_seeded_draws_repeat_and_come_from_the_survivors(logits, t, seed):
    a = sampling.sample(logits, temperature=t, top_p=0.9, seed=seed)
    b = sampling.sample(logits, temperature=t, top_p=0.9, seed=seed)
    assert a == b
    assert a in {i for i, _ in sampling.distribution(logits, temperature=t, top_p=0.9)}
