"""Part 3 on the real model: batched decode, constrained decoding, prompt-lookup speculative decoding,
and the cached measurements (descent.trace.batched, .constrained, .speculative, .measure).

The batched logits are checked against the one-sequence forward pass (itself checked against
transformers in test_peer_logits.py); speculative decoding against plain greedy decoding, token for
token.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from descent import tokenizer
from descent.trace import constrained, measure, speculative
from descent.trace.batched import forward_batch
from descent.trace.forward import KVCache, forward, generate
from descent.trace.gguf_reader import load_model
from descent.trace.record import stop_ids


@pytest.fixture(scope="module")
def model():
    return load_model()


@pytest.fixture(scope="module")
def tok():
    return tokenizer.smollm2()


def _copy(c: KVCache) -> KVCache:
    return KVCache(keys=[k.copy() for k in c.keys], values=[v.copy() for v in c.values])


def test_forward_batch_equals_one_sequence_at_a_time(model, tok):
    # Three sequences of different lengths, each fed its next token: the batched step's logits are
    # the single-sequence forward pass's (float32 matmuls of 3 rows instead of 1: rounding only).
    caches, nxt = [], []
    for p in ("The capital of France is", "Once upon a time, in a small village", "12 + 30 ="):
        c = KVCache()
        nxt.append(int(np.argmax(forward(model, tok.encode(p), c).logits[-1])))
        caches.append(c)
    alone = [forward(model, [t], _copy(c)).logits[-1] for t, c in zip(nxt, caches, strict=True)]
    lengths = [c.length for c in caches]
    batched = forward_batch(model, nxt, caches)  # (3, V)
    assert batched.shape == (3, model.config.vocab)
    for b in range(3):
        np.testing.assert_allclose(batched[b], alone[b], rtol=0, atol=2e-3)
        assert int(np.argmax(batched[b])) == int(np.argmax(alone[b]))
    assert [c.length for c in caches] == [n + 1 for n in lengths]


def test_forward_batch_rejects_bad_input(model):
    with pytest.raises(ValueError, match="one id per cache"):
        forward_batch(model, [1, 2], [KVCache()])
    with pytest.raises(ValueError, match="every cache must hold"):
        forward_batch(model, [1], [KVCache()])


def test_lookup_draft():
    # The last 3 tokens (5, 6, 7) occurred earlier followed by 8, 9: those are proposed.
    assert speculative.lookup_draft([1, 5, 6, 7, 8, 9, 2, 5, 6, 7], 3, 4) == [8, 9, 2, 5]
    # No 3- or 2-gram match; the last token (4) occurred once before, followed by 1.
    assert speculative.lookup_draft([4, 1, 2, 3, 4], 3, 2) == [1, 2]
    assert speculative.lookup_draft([1, 2, 3], 3, 4) == []


@pytest.mark.parametrize("prompt", [measure.SETTINGS["speculative_prompt"], "Write one sentence about the sea."])
def test_prompt_lookup_equals_greedy_token_for_token(model, tok, prompt):
    ids = tok.encode(tok.apply_chat_template([{"role": "user", "content": prompt}]))
    greedy = [s.token for s in generate(ids, 48, stop_ids=stop_ids(), model=model)]
    spec = speculative.speculative_greedy(ids, 48, stop_ids(), model)
    assert spec["tokens"] == greedy
    assert spec["passes"] <= len(greedy)
    assert 0 <= spec["accepted"] <= spec["drafted"]


def test_copying_task_accepts_most_drafts(model, tok):
    ids = tok.encode(tok.apply_chat_template([{"role": "user", "content": measure.SETTINGS["speculative_prompt"]}]))
    spec = speculative.speculative_greedy(ids, 64, stop_ids(), model)
    assert len(spec["tokens"]) / spec["passes"] > 2  # several tokens per target pass when the reply copies


def test_pattern_matcher():
    p = constrained.Pattern(r'\{"n": [1-9][0-9]?\}')
    assert p.accepting(p.feed(p.start, '{"n": 42}'))
    assert p.done(p.feed(p.start, '{"n": 42}'))
    assert not p.accepting(p.feed(p.start, '{"n": 4'))  # a prefix, not yet a match
    assert p.feed(p.start, '{"n": 4')  # ... but still alive
    assert not p.feed(p.start, '{"n": 0')  # no leading zero
    q = constrained.Pattern("a+b*c?")
    assert q.accepting(q.feed(q.start, "aaab")) and q.accepting(q.feed(q.start, "ac"))
    assert not q.feed(q.start, "b")
    for bad, message in (("[ab", "unclosed"), ("*a", "nothing to repeat"), ("a{3,1}", "min above max"), ("a\\", "backslash")):
        with pytest.raises(ValueError, match=message):
            constrained.Pattern(bad)


def test_constrained_generation_obeys_the_pattern(model, tok):
    s = measure.SETTINGS
    ids = tok.encode(tok.apply_chat_template([{"role": "user", "content": s["constrained_prompt"]}]))
    r = constrained.generate(ids, s["constrained_regex"], s["constrained_max_tokens"], model)
    assert r["matched"]
    p = constrained.Pattern(s["constrained_regex"])
    assert p.accepting(p.feed(p.start, r["text"]))
    for st in r["steps"]:
        assert 1 <= st["allowed"] < model.config.vocab
        assert 0 < st["allowed_mass"] <= 1 + 1e-9
        # Renormalizing divides by the allowed mass; the chosen token is the top allowed one.
        assert st["renormalized"] == pytest.approx(st["probability"] / st["allowed_mass"], rel=1e-9)
        assert st["renormalized"] == pytest.approx(st["top"][0]["probability"], rel=1e-12)
        assert st["free_top"]["probability"] >= st["probability"]


def test_measurements_are_cached_by_the_gguf(model, tmp_path, monkeypatch):
    monkeypatch.setenv("DESCENT_CACHE", str(tmp_path))
    calls = []
    monkeypatch.setattr(measure, "measure", lambda: calls.append(1) or {"version": measure.MEASURE_VERSION, "x": 1})
    first = measure.measurements()
    second = measure.measurements()
    assert first == second == {"version": measure.MEASURE_VERSION, "x": 1}
    assert len(calls) == 1
    (path,) = (tmp_path / "measurements").glob("serving-*.json")
    assert json.loads(path.read_text()) == first


def test_machine_label_fields():
    m = measure.machine()
    assert m["cores"] >= 1 and m["cpu"] and m["numpy"] == np.__version__ and m["blas_threads"] == 1
