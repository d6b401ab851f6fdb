"""Recorded traces of SmolLM2-135M-Instruct: what the site shows of one real prompt.

``trace(prompt)`` returns a JSON-ready dict:

- ``tokens``: the prompt's tokens ``[{"text", "id"}]`` (chat prompts go through the chat template first);
- ``attention``: for the last prompt position, the attention weights of every layer and head over the
  prompt, nested lists of shape (L, H, T) = (30, 9, T); each row sums to 1;
- ``next``: the ``top`` most likely next tokens ``[{"text", "id", "logit", "probability"}]`` and
  ``entropy_bits`` of the whole next-token distribution;
- ``generation``: the greedy continuation step by step -- the ids fed at that step (the whole prompt
  at step 0, then the previous token: the KV cache holds the rest), how many positions were cached,
  the token chosen, its probability and the top-5 alternatives -- until a stop token
  (``<|im_end|>``, id 2, the GGUF's EOS; or ``<|endoftext|>``, id 0) or ``max_new_tokens``.

``site_traces()`` traces :data:`PROMPTS`, cached on disk by (GGUF SHA-256, prompt, settings,
:data:`TRACE_VERSION`), so a site rebuild costs a file read.
"""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np

from descent import tokenizer
from descent.checks import is_int
from descent.trace.cache import cached_json
from descent.trace.forward import forward, generate, log_softmax
from descent.trace.gguf_reader import load_model

#: The model's name as its publisher gives it (Hugging Face repo HuggingFaceTB/SmolLM2-135M-Instruct).
MODEL_NAME = "SmolLM2-135M-Instruct"
#: Bump when the content or layout of a trace changes: old cached traces are then ignored.
TRACE_VERSION = 1
#: Alternatives recorded per generated token.
STEP_ALTERNATIVES = 5
#: Digits kept in recorded floats (significant figures): enough for any chart, and stable across BLAS builds.
SIG_DIGITS = 6
#: Largest ``top`` a trace records (the next-token list).
MAX_TOP = 1000
#: Longest greedy continuation a trace records (tokens).
MAX_TRACE_TOKENS = 256

#: The site's prepared prompts. ``max_new_tokens`` bounds the greedy continuation.
PROMPTS: list[dict] = [
    {
        "id": "capital",
        "prompt": "The capital of France is",
        "chat": False,
        "max_new_tokens": 12,
        "note": "a confident next token: most of the probability sits on one word",
    },
    {
        "id": "arithmetic",
        "prompt": "12 + 30 = 42, 7 * 8 =",
        "chat": False,
        "max_new_tokens": 8,
        "note": "digits and punctuation: every digit is its own token",
    },
    {
        "id": "chat",
        "prompt": "What is the tallest mountain in the world?",
        "chat": True,
        "max_new_tokens": 64,
        "note": "the chat template wraps the question; generation stops at <|im_end|>",
    },
    {
        "id": "story",
        "prompt": "Once upon a time, in a small village by the sea,",
        "chat": False,
        "max_new_tokens": 24,
        "note": "a story opener: many plausible continuations",
    },
    {
        "id": "uncertain",
        "prompt": "My favourite colour is",
        "chat": False,
        "max_new_tokens": 10,
        "note": "uncertainty: the probability is spread over many tokens",
    },
]


def _sig(x: float) -> float:
    return float(f"{x:.{SIG_DIGITS}g}")


def _token(tok, token_id: int) -> dict:
    token_id = int(token_id)
    return {"text": tok.decode([token_id]), "id": token_id}


def _ranked(logits: np.ndarray, logp: np.ndarray, count: int, tok) -> list[dict]:
    count = min(count, logits.size)
    candidates = np.argpartition(-logits, count - 1)[:count]  # the `count` largest, unordered: O(V)
    order = candidates[np.lexsort((candidates, -logits[candidates]))]  # largest first; ties: lower id first
    return [
        {**_token(tok, i), "logit": _sig(float(logits[i])), "probability": _sig(math.exp(float(logp[i])))}
        for i in order
    ]


def _check(prompt, chat, top, max_new_tokens) -> None:
    if not isinstance(prompt, str) or not prompt:
        raise ValueError("prompt must be a non-empty string")
    if not isinstance(chat, bool):
        raise ValueError(f"chat must be true or false, got {chat!r}")
    if not is_int(top) or not 1 <= top <= MAX_TOP:
        raise ValueError(f"top must be 1 to {MAX_TOP} tokens, got {top!r}")
    if (
        not is_int(max_new_tokens)
        or not 0 <= max_new_tokens <= MAX_TRACE_TOKENS
    ):
        raise ValueError(f"max_new_tokens must be 0 to {MAX_TRACE_TOKENS}, got {max_new_tokens!r}")


def stop_ids() -> tuple[int, ...]:
    """Tokens that end a generation: the GGUF's EOS ``<|im_end|>`` (id 2) and ``<|endoftext|>`` (id 0).

    The instruct model closes a chat turn with ``<|im_end|>``; on plain text it may also emit either.
    """
    tok = tokenizer.smollm2()
    return (tok.meta["eos_token_id"], tok.special["<|endoftext|>"])


def prompt_text(prompt: str, chat: bool) -> str:
    """The text the model reads: ``prompt`` itself, or SmolLM2's chat template around it as a user turn."""
    return tokenizer.apply_chat_template([{"role": "user", "content": prompt}]) if chat else prompt


def trace(prompt: str, chat: bool = False, top: int = 50, max_new_tokens: int = 24) -> dict:
    """Trace one prompt through SmolLM2-135M-Instruct (see the module docstring for the fields).

    ``top``: next tokens recorded (1 to 1,000). ``max_new_tokens``: greedy continuation (0 to 256).
    Raises ``ValueError`` naming the bad argument, or if the prompt encodes to no tokens.
    """
    _check(prompt, chat, top, max_new_tokens)
    model = load_model()
    tok = tokenizer.smollm2()
    text = prompt_text(prompt, chat)
    ids = tok.encode(text)
    if not ids:
        raise ValueError("prompt must contain at least one token")
    stops = stop_ids()

    steps = []
    stop_reason = "max_new_tokens"
    # Step 0 is the prefill of the whole prompt: its logits and attention are the prompt's.
    if max_new_tokens:
        generated_steps = list(generate(ids, max_new_tokens, stop_ids=stops, model=model))
        logits, last_attention = generated_steps[0].logits, generated_steps[0].attention
    else:
        generated_steps = []
        out = forward(model, ids)
        logits, last_attention = out.logits[-1], out.attention  # (V,), (L, H, T)
    logp = log_softmax(logits)  # (V,)
    probs = np.exp(logp)
    entropy_bits = float(-(probs * logp).sum() / math.log(2))
    attention = [[[_sig(float(w)) for w in head] for head in layer] for layer in last_attention]  # (L, H, T)

    for n, step in enumerate(generated_steps):
        step_logp = log_softmax(step.logits)
        steps.append(
            {
                "step": n,
                "fed": [_token(tok, i) for i in step.fed],
                "cached": step.cached,
                "token": _token(tok, step.token),
                "probability": _sig(step.probability),
                "alternatives": [
                    {k: v for k, v in alt.items() if k != "logit"}
                    for alt in _ranked(step.logits, step_logp, STEP_ALTERNATIVES, tok)
                ],
            }
        )
        if step.token in stops:
            stop_reason = "stop_token"
    generated = [s["token"]["id"] for s in steps if s["token"]["id"] not in stops]
    c = model.config
    return {
        "version": TRACE_VERSION,
        "model": {
            "name": MODEL_NAME,
            "file": model.meta.get("file"),
            "sha256": model.sha256,
            "layers": c.n_layers,
            "heads": c.n_heads,
            "kv_heads": c.n_kv_heads,
            "vocab": c.vocab,
        },
        "prompt": prompt,
        "chat": chat,
        "text": text,
        "settings": {"top": top, "max_new_tokens": max_new_tokens, "decoding": "greedy"},
        "tokens": [_token(tok, i) for i in ids],
        "attention": attention,
        "next": _ranked(logits, logp, top, tok),
        "entropy_bits": _sig(entropy_bits),
        "generation": {
            "stop_tokens": [_token(tok, i) for i in stops],
            "stop_reason": stop_reason,
            "text": tok.decode(generated),
            "steps": steps,
        },
    }


def _cache_key(model_sha: str, prompt: str, chat: bool, top: int, max_new_tokens: int) -> str:
    settings = {
        "gguf": model_sha,
        "prompt": prompt,
        "chat": chat,
        "top": top,
        "max_new_tokens": max_new_tokens,
        "version": TRACE_VERSION,
    }
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode("utf-8")).hexdigest()


def cached_trace(
    prompt: str, chat: bool = False, top: int = 50, max_new_tokens: int = 24, use_cache: bool = True
) -> dict:
    """:func:`trace`, read from / written to ``cache_dir()/traces/<key>.json`` when ``use_cache``."""
    _check(prompt, chat, top, max_new_tokens)
    return cached_json("traces", f"{_cache_key(load_model().sha256, prompt, chat, top, max_new_tokens)}.json",
                       lambda: trace(prompt, chat, top, max_new_tokens), use_cache)


def site_traces(use_cache: bool = True, top: int = 50) -> list[dict]:
    """Traces of :data:`PROMPTS`, in order, each with the prompt's ``id`` and ``note`` added."""
    return [
        {
            "id": p["id"],
            "note": p["note"],
            **cached_trace(p["prompt"], p["chat"], top, p["max_new_tokens"], use_cache=use_cache),
        }
        for p in PROMPTS
    ]
