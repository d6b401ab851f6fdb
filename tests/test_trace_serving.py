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

from descent import recorded, tokenizer
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


@pytest.mark.slow  # SmolLM2 generates twice per prompt: about 8 s each
@pytest.mark.parametrize("prompt", [measure.SETTINGS["speculative_prompt"], "Write one sentence about the sea."])
def test_prompt_lookup_equals_greedy_token_for_token(model, tok, prompt):
    ids = tok.encode(tok.apply_chat_template([{"role": "user", "content": prompt}]))
    greedy = [s.token for s in generate(ids, 48, stop_ids=stop_ids(), model=model)]
    spec = speculative.speculative_greedy(ids, 48, stop_ids(), model)
    assert spec["tokens"] == greedy
    assert spec["passes"] <= len(greedy)
    assert 0 <= spec["accepted"] <= spec["drafted"]


@pytest.mark.slow
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


@pytest.mark.slow
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
    # The token-level results are computed once and cached (descent.trace.cache); the timings
    # beside them are the record's, read on every call, never timed.
    monkeypatch.setenv("DESCENT_CACHE", str(tmp_path))
    calls = []
    fake = {"version": measure.MEASURE_VERSION, "speculative": {"tokens": 3}}
    monkeypatch.setattr(measure, "compute", lambda: calls.append(1) or fake)
    first = measure.measurements()
    second = measure.measurements()
    assert first == second and len(calls) == 1
    (path,) = (tmp_path / "measurements").glob("serving-*.json")
    assert path.name == f"serving-{measure._key(model.sha256)}.json"
    assert json.loads(path.read_text()) == fake
    # The timings: the record's prefill, decode and speculative reply.
    pre, dec = recorded.measurement("prefill"), recorded.measurement("decode")
    assert first["prefill"] == {"tokens": pre.work, "seconds": pre.value, "tokens_per_s": pre.work / pre.value,
                                "speed_vs_decode": pre.rate / dec.rate}
    assert first["decode"]["tokens_per_s"] == 1 / dec.value
    assert [r["batch"] for r in first["batched"]] == list(measure.BATCHES)
    assert first["batched"][0]["seconds_per_step"] == dec.value  # batch 1 is the decode recording
    assert first["speculative"] == {"tokens": 3, "seconds_greedy": recorded.measurement("greedy_reply").value,
                                    "seconds_speculative": recorded.measurement("speculative_reply").value,
                                    "wall_speedup": recorded.ratio("greedy_reply", "speculative_reply", "value")}
    assert first["date"] == pre.date and first["repeats"] == pre.repeats


def test_a_torn_cache_file_is_computed_again(tmp_path, monkeypatch):
    from descent.trace import cache

    monkeypatch.setenv("DESCENT_CACHE", str(tmp_path))
    (tmp_path / "kind").mkdir()
    (tmp_path / "kind" / "k.json").write_text('{"half": ')  # a process killed mid-write
    assert cache.cached_json("kind", "k.json", lambda: {"whole": 1}) == {"whole": 1}
    assert json.loads((tmp_path / "kind" / "k.json").read_text()) == {"whole": 1}
    assert cache.cached_json("kind", "k.json", lambda: {"other": 2}) == {"whole": 1}  # read back
    assert cache.cached_json("kind", "k.json", lambda: {"other": 2}, use_cache=False) == {"other": 2}
    assert cache.digest({"b": 1, "a": 2}, 8) == cache.digest({"a": 2, "b": 1}, 8) != cache.digest({"a": 3}, 8)
