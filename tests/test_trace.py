"""descent.trace: GGUF reading, the forward pass's pieces, generation and the recorded traces.

Model-level expected values come from the GGUF's own metadata or from transformers run on the same
file (tests/test_peer_logits.py is the full comparison); small pieces are checked by hand.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from descent import tokenizer
from descent.trace import bench, forward, record
from descent.trace.gguf_reader import embedding_matrix, load_model

PARIS = 7042  # " Paris" in the GGUF vocabulary (tokenizer.ggml.tokens[7042] == "ĠParis")


@pytest.fixture(scope="module")
def model():
    return load_model()


@pytest.fixture
def trace_cache(model, tmp_path, monkeypatch):
    """A private, empty trace cache; the weights were loaded (and are kept per process) before the switch."""
    monkeypatch.setenv("DESCENT_CACHE", str(tmp_path))
    return tmp_path


# --------------------------------------------------------------------------- the file


def test_config_from_gguf_metadata(model):
    # SmolLM2-135M config.json: 30 layers, hidden 576, 9 heads, 3 KV heads, FFN 1536, vocab 49152,
    # rope_theta 100000, rms_norm_eps 1e-5 (stored as float32 in the GGUF), 8192 context.
    c = model.config
    assert (c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.d_head, c.d_ffn, c.vocab) == (
        30,
        576,
        9,
        3,
        64,
        1536,
        49152,
    )
    assert c.rope_theta == 100000.0
    assert c.rms_eps == pytest.approx(1e-5, rel=1e-7)
    assert c.context_length == 8192
    assert model.meta["tied_embeddings"] is True  # no output.weight in the file
    assert model.meta["add_bos_token"] is False


def test_embedding_matrix(model):
    e = embedding_matrix()
    assert e.shape == (49152, 576) and e.dtype == np.float32
    # Q8_0 stores each block of 32 as int8 times one float16 scale: |value| <= 127 * scale, finite.
    assert np.isfinite(e).all()


def test_tensor_count_and_types(model):
    # 30 layers x 9 tensors (2 norms + 7 matrices) + token_embd + output_norm = 272 (GGUF.tensor_count).
    assert len(model.tensors) == 272
    assert all(t.dtype == np.float32 for t in model.tensors.values())
    assert model.meta["tensor_types"] == ["F32", "Q4_1", "Q8_0"]


# --------------------------------------------------------------------------- the pieces, by hand


def test_rms_norm_by_hand():
    # x = (3, 4): mean square 12.5, rms sqrt(12.5); with eps 0 and weight (1, 2): (3, 8)/sqrt(12.5).
    x = np.array([[3.0, 4.0]], dtype=np.float32)
    out = forward.rms_norm(x, np.array([1.0, 2.0], dtype=np.float32), 0.0)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[3 / math.sqrt(12.5), 8 / math.sqrt(12.5)]], rtol=1e-6)


def test_rope_by_hand():
    # d_head 4, theta 100: pair 0 turns by p rad, pair 1 by p * 100^(-1/2) = p/10 rad.
    cos, sin = forward.rope_angles(np.array([0, 2]), 4, 100.0)
    x = np.ones((1, 2, 4), dtype=np.float32)
    out = forward.rope_interleaved(x, cos, sin)
    np.testing.assert_allclose(out[0, 0], [1, 1, 1, 1])  # position 0: no rotation
    c2, s2, c02, s02 = math.cos(2), math.sin(2), math.cos(0.2), math.sin(0.2)
    np.testing.assert_allclose(out[0, 1], [c2 - s2, s2 + c2, c02 - s02, s02 + c02], rtol=1e-6)


def test_rope_scores_depend_only_on_relative_position():
    # RoFormer eq. 16: <R_m q, R_n k> depends on m - n only.
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 1, 1, 64)).astype(np.float32)

    def score(m, n):
        cm, sm = forward.rope_angles(np.array([m]), 64, 100000.0)
        cn, sn = forward.rope_angles(np.array([n]), 64, 100000.0)
        return float((forward.rope_interleaved(q, cm, sm) * forward.rope_interleaved(k, cn, sn)).sum())

    assert score(7, 3) == pytest.approx(score(104, 100), rel=1e-4)


def test_softmax_and_silu_by_hand():
    np.testing.assert_allclose(forward.softmax_last(np.array([0.0, np.log(3.0)])), [0.25, 0.75])
    np.testing.assert_allclose(forward.silu(np.array([0.0, 2.0])), [0.0, 2 / (1 + math.exp(-2))])


# --------------------------------------------------------------------------- the model


def test_paris(model):
    # transformers on the same GGUF gives logit 17.3713 for " Paris", the top token (test_peer_logits).
    out = forward.forward(model, tokenizer.encode("The capital of France is"))
    logits = out.logits[-1]
    assert int(np.argmax(logits)) == PARIS
    assert float(logits[PARIS]) == pytest.approx(17.3713, abs=1e-3)
    assert out.attention.shape == (30, 9, 5)
    np.testing.assert_allclose(out.attention.sum(axis=-1), 1.0, rtol=1e-5)


def test_causal_mask_and_kv_cache(model):
    ids = tokenizer.encode("Once upon a time, in a small village")
    full = forward.forward(model, ids, all_logits=True).logits
    prefix = forward.forward(model, ids[:4], all_logits=True).logits
    # A later token cannot change an earlier position's output (causal mask).
    np.testing.assert_allclose(prefix, full[:4], atol=1e-4)
    # Feeding the rest one token at a time through the KV cache gives the same logits.
    cache = forward.KVCache()
    forward.forward(model, ids[:4], cache)
    steps = [forward.forward(model, [i], cache).logits[-1] for i in ids[4:]]
    np.testing.assert_allclose(np.stack(steps), full[4:], atol=1e-4)
    assert cache.length == len(ids)
    assert cache.keys[0].shape == (3, len(ids), 64)  # (K, S, d_head): 3 KV heads, not 9


def test_forward_rejects_bad_ids(model):
    with pytest.raises(ValueError, match="token ids must be 0 to 49151"):
        forward.forward(model, [49152])
    with pytest.raises(ValueError, match="token_ids"):
        forward.forward(model, [])


# Issue 15: a prompt of about 8,190 tokens ran out of memory in prefill (MemoryError with 6 GiB
# free): every (H, T, S) float32 array of scores is 9 x 8,190^2 x 4 bytes = 2.4 GB, and the softmax
# made three more. Attention is now computed ATTENTION_CHUNK query positions at a time.


def test_attention_in_chunks_equals_one_block(model, monkeypatch):
    ids = tokenizer.encode("Once upon a time, in a small village by the sea, there lived")
    assert len(ids) > 7
    whole = forward.forward(model, ids, all_logits=True)  # one block: T < ATTENTION_CHUNK
    monkeypatch.setattr(forward, "ATTENTION_CHUNK", 3)  # blocks of 3, 3, ..., and a shorter last one
    chunked = forward.forward(model, ids, all_logits=True)
    np.testing.assert_allclose(chunked.logits, whole.logits, atol=1e-4)
    # Blocks of 3 and one block of 15 reach OpenBLAS as different shapes, so its float32 sums run in a
    # different order; how far apart they land depends on the kernel it picks for the CPU (under 1e-6
    # with its SkylakeX kernel, 1.07e-6 with its Zen kernel on an AMD EPYC). A wrong mask or offset
    # moves a weight by more than 1e-3.
    np.testing.assert_allclose(chunked.attention, whole.attention, atol=5e-6)
    # And through the KV cache: a second call's chunks start at the cached length.
    cache = forward.KVCache()
    forward.forward(model, ids[:4], cache)
    rest = forward.forward(model, ids[4:], cache, all_logits=True)
    np.testing.assert_allclose(rest.logits, whole.logits[4:], atol=1e-4)


def _tiny_model(context: int) -> forward.Model:
    """A random one-layer model with SmolLM2's head layout scaled down (H = 4, K = 2, d_head = 16)."""
    from descent.trace.gguf_reader import Model, ModelConfig, expected_tensors

    c = ModelConfig(n_layers=1, d_model=64, n_heads=4, n_kv_heads=2, d_head=16, d_ffn=128, vocab=100,
                    rope_theta=10000.0, rms_eps=1e-5, context_length=context)
    rng = np.random.default_rng(0)
    tensors = {name: (rng.standard_normal(shape) * 0.1).astype(np.float32) for name, shape in expected_tensors(c).items()}
    return Model(c, tensors, {}, "tiny")


def test_a_long_prefill_holds_less_than_one_full_score_array():
    import tracemalloc

    T = 4096
    tiny = _tiny_model(context=T)
    ids = np.arange(T) % tiny.config.vocab
    full_scores = tiny.config.n_heads * T * T * 4  # bytes of one (H, T, S) float32 array: 268 MB
    tracemalloc.start()  # NumPy reports its buffers to tracemalloc
    try:
        out = forward.forward(tiny, ids)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.attention.shape == (1, 4, T)
    np.testing.assert_allclose(out.attention.sum(axis=-1), 1.0, rtol=1e-4)
    # Chunks of 512 queries: (4, 512, 4096) float32 = 33.5 MB per array, four at a time in the
    # softmax (measured: about 130 MB); the unchunked code held four full arrays, about 1.1 GB.
    assert peak < full_scores, f"peak {peak / 1e6:.0f} MB vs one full score array {full_scores / 1e6:.0f} MB"


def test_generate_checks_the_context_before_computing(monkeypatch):
    tiny = _tiny_model(context=16)

    def no_compute(*args, **kwargs):
        raise AssertionError("forward() ran before the context was checked")

    monkeypatch.setattr(forward, "forward", no_compute)
    with pytest.raises(ValueError, match=r"the prompt \(10 tokens\) plus max_new_tokens \(7\) is 17 tokens, more "
                                         r"than the model's context of 16 tokens"):
        next(forward.generate(list(range(10)), 7, model=tiny))


@pytest.mark.slow
def test_greedy_and_seeded_generation(model):
    ids = tokenizer.encode("Once upon a time")
    greedy = [s.token for s in forward.generate(ids, 6)]
    assert greedy == [s.token for s in forward.generate(ids, 6)]
    # Greedy picks the argmax of the logits at each step.
    first = forward.forward(model, ids).logits[-1]
    assert greedy[0] == int(np.argmax(first))
    a = [s.token for s in forward.generate(ids, 8, temperature=1.0, top_p=0.95, seed=3)]
    b = [s.token for s in forward.generate(ids, 8, temperature=1.0, top_p=0.95, seed=3)]
    assert a == b
    with pytest.raises(ValueError, match="temperature"):
        next(forward.generate(ids, 4, temperature=7))
    with pytest.raises(ValueError, match="max_new_tokens"):
        next(forward.generate(ids, 0))


def test_steps_feed_the_prompt_once_then_one_token(model):
    ids = tokenizer.encode("The capital of France is")
    steps = list(forward.generate(ids, 3))
    assert steps[0].fed == ids and steps[0].cached == 0
    assert steps[1].fed == [steps[0].token] and steps[1].cached == len(ids)
    assert steps[2].cached == len(ids) + 1


# --------------------------------------------------------------------------- traces


def test_trace_record(trace_cache):
    t = record.trace("The capital of France is", top=50, max_new_tokens=4)
    json.dumps(t)  # JSON-serialisable
    assert [x["id"] for x in t["tokens"]] == [504, 3575, 282, 4649, 314]
    assert t["tokens"][1]["text"] == " capital"
    assert len(t["next"]) == 50 and t["next"][0] == {
        "text": " Paris",
        "id": PARIS,
        "logit": pytest.approx(17.3713, abs=1e-3),
        "probability": pytest.approx(t["next"][0]["probability"]),
    }
    probs = [x["probability"] for x in t["next"]]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1
    # probability = exp(logit) / Z, so p_i / p_j = exp(z_i - z_j) for any two listed tokens.
    a, b = t["next"][0], t["next"][1]
    assert a["probability"] / b["probability"] == pytest.approx(math.exp(a["logit"] - b["logit"]), rel=1e-4)
    att = np.array(t["attention"])
    assert att.shape == (30, 9, 5)
    np.testing.assert_allclose(att.sum(-1), 1.0, atol=1e-4)
    gen = t["generation"]
    assert gen["steps"][0]["token"]["id"] == PARIS
    assert gen["steps"][0]["fed"] == t["tokens"] and gen["steps"][1]["cached"] == 5
    assert len(gen["steps"][0]["alternatives"]) == 5 and gen["stop_reason"] == "max_new_tokens"
    assert gen["text"].startswith(" Paris")
    assert 0 < t["entropy_bits"] < math.log2(49152)


@pytest.mark.slow
def test_chat_trace_stops_at_im_end(trace_cache):
    t = record.trace("Say hi.", chat=True, max_new_tokens=64)
    assert t["text"].endswith("<|im_start|>assistant\n")
    assert t["tokens"][0] == {"text": "<|im_start|>", "id": 1}
    assert t["generation"]["stop_reason"] == "stop_token"
    assert t["generation"]["steps"][-1]["token"] == {"text": "<|im_end|>", "id": 2}
    assert "<|im_end|>" not in t["generation"]["text"]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"prompt": ""}, "prompt"),
        ({"top": 0}, "top"),
        ({"max_new_tokens": -1}, "max_new_tokens"),
        ({"chat": 1}, "chat"),
    ],
)
def test_trace_bad_arguments(kwargs, field):
    args = {"prompt": "Hi", **kwargs}
    with pytest.raises(ValueError, match=field):
        record.trace(**args)


@pytest.mark.slow  # records every site prompt from an empty cache: about 5 s
def test_site_traces_are_cached(trace_cache, monkeypatch):
    first = record.site_traces()
    assert [t["id"] for t in first] == [p["id"] for p in record.PROMPTS]
    assert len(record.PROMPTS) >= 5
    assert len(list((trace_cache / "traces").glob("*.json"))) == len(record.PROMPTS)

    def boom(*a, **k):
        raise AssertionError("trace() ran although every trace is cached")

    monkeypatch.setattr(record, "trace", boom)
    assert record.site_traces() == first


@pytest.mark.slow
def test_cold_trace_is_within_budget():
    # A wall-clock budget means nothing while other jobs hold the cores (the decode steps are bound
    # by memory bandwidth): measure only on a machine that is not already saturated.
    if os.getloadavg()[0] > (os.cpu_count() or 1):
        pytest.skip(f"machine busy (load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores): budget not measurable")
    seconds = bench.cold_trace_seconds()
    assert 0 < seconds <= bench.COLD_TRACE_BUDGET_S


def test_blas_runs_on_one_thread(model):
    # load_model() (the fixture) sets NumPy's bundled OpenBLAS to 1 thread; read it back through the
    # matching getter of scipy-openblas (the wheel's BLAS, `numpy.show_config()`).
    import ctypes
    from pathlib import Path

    from descent.trace import blas

    if os.environ.get("OPENBLAS_NUM_THREADS"):
        pytest.skip("OPENBLAS_NUM_THREADS is set: use_one_thread leaves the user's count alone")
    libs = sorted(Path(np.__file__).resolve().parent.parent.glob("numpy.libs/*scipy_openblas*"))
    if not libs:
        pytest.skip("NumPy without a bundled scipy-openblas")
    assert blas.use_one_thread() is True
    assert ctypes.CDLL(str(libs[0])).scipy_openblas_get_num_threads64_() == 1
