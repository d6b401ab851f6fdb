"""Peer check: our NumPy forward pass against Hugging Face transformers on the same GGUF.

transformers dequantizes the GGUF itself (its own Q4_1/Q8_0 code), un-permutes W_q and W_k and runs
``LlamaForCausalLM`` with ``rotate_half`` RoPE in PyTorch: an independent implementation. The model is
loaded once per test session (about 10 s). Requires ``accelerate`` (transformers asks for it to load a GGUF).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from descent import tokenizer
from descent.trace import forward as fw
from descent.trace.gguf_reader import gguf_path, load_model

pytestmark = [pytest.mark.peer, pytest.mark.slow]

#: Largest |logit difference| allowed at any position and vocabulary entry (logits are ~10..30).
LOGIT_TOLERANCE = 1e-3

PROMPTS = {
    "plain": "The capital of France is",
    "digits": "Order #4521 shipped on 2024-03-15: 3 items at $19.99 each (total $59.97)!",
    "chat": tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is the tallest mountain in the world?"}]
    ),
}


@functools.lru_cache(maxsize=1)
def _reference():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    path = gguf_path()
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32
    )
    model.eval()
    tok = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    return torch, model, tok


@pytest.fixture(scope="session")
def reference():
    return _reference()


def _reference_logits(reference, ids):
    torch, model, _ = reference
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].numpy()  # (T, V)


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_logits_match_at_every_position(reference, name):
    text = PROMPTS[name]
    _, _, ref_tok = reference
    ids = tokenizer.encode(text)
    # The reference tokenizer gives the same ids for these prompts (its pre-tokenizer gap needs
    # whitespace runs before digits; see test_tokenizer.py).
    assert ids == ref_tok.backend_tokenizer.encode(text, add_special_tokens=False).ids
    ours = fw.forward(load_model(), ids, all_logits=True).logits  # (T, V)
    ref = _reference_logits(reference, ids)
    assert ours.shape == ref.shape == (len(ids), 49152)
    assert ours.dtype == np.float32  # no float64 upcast slipped in (DESIGN.md, NumPy 2 trap)
    assert float(np.abs(ours - ref).max()) <= LOGIT_TOLERANCE
    top10 = lambda z: list(np.argsort(-z, kind="stable")[:10])  # noqa: E731
    assert top10(ours[-1]) == top10(ref[-1])


def test_kv_cache_decode_matches_the_reference(reference):
    # Prefill 5 tokens, then feed 3 more one at a time through the KV cache; the reference sees all 8 at once.
    ids = tokenizer.encode("The capital of France is Paris. It is")
    model = load_model()
    cache = fw.KVCache()
    fw.forward(model, ids[:5], cache)
    stepwise = [fw.forward(model, [i], cache).logits[-1] for i in ids[5:]]
    ref = _reference_logits(reference, ids)
    assert float(np.abs(np.stack(stepwise) - ref[5:]).max()) <= LOGIT_TOLERANCE


def test_rotate_half_on_gguf_weights_fails_the_check(reference, monkeypatch):
    # The trap in DESIGN.md: GGUF's W_q/W_k rows are permuted for adjacent-pair RoPE. Rotating pairs
    # (i, i + d_head/2) instead is wrong, and this check must see it even where the top token survives.
    def rotate_half(x, cos, sin):
        half = x.shape[-1] // 2
        c, s = np.concatenate([cos, cos], -1), np.concatenate([sin, sin], -1)
        return x * c + np.concatenate([-x[..., half:], x[..., :half]], -1) * s

    ids = tokenizer.encode(PROMPTS["plain"])
    monkeypatch.setattr(fw, "rope_interleaved", rotate_half)
    wrong = fw.forward(load_model(), ids, all_logits=True).logits
    assert float(np.abs(wrong - _reference_logits(reference, ids)).max()) > LOGIT_TOLERANCE
