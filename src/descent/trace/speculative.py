"""Prompt-lookup speculative decoding on the real model, checked token for token against greedy.

The draft is not a model at all: the last few tokens written are looked up earlier in the text
(the prompt and the reply so far), and the tokens that followed them there are proposed as the
next ones (prompt-lookup decoding, Saxena 2023, github.com/apoorvumang/prompt-lookup-decoding;
vLLM's "ngram" speculator). The target model, SmolLM2 here, then checks the whole draft in one
forward pass: the logits at each drafted position say what greedy decoding would have picked
there. The draft is accepted up to the first disagreement, and the target's own pick at that
position comes free (Leviathan et al. 2023, section 2.3, in its greedy form). So the output is the
greedy output, token for token, in fewer target passes whenever the text repeats itself.

The KV cache holds the drafted positions after the check; the rejected ones are cut off again
(:func:`truncate`).
"""

from __future__ import annotations

import numpy as np

from descent.trace.forward import KVCache, forward
from descent.trace.gguf_reader import Model, load_model

__all__ = ["lookup_draft", "speculative_greedy", "truncate"]

#: Longest n-gram looked up, and the most tokens drafted from one match (vLLM's ngram speculator
#: defaults: ``prompt_lookup_max`` and ``num_speculative_tokens`` are the user's; transformers'
#: ``prompt_lookup_num_tokens`` defaults to 10 with a 2-gram match).
NGRAM_MAX = 3
DRAFT_MAX = 8


def lookup_draft(tokens: list[int], ngram_max: int = NGRAM_MAX, draft_max: int = DRAFT_MAX) -> list[int]:
    """The tokens that followed the most recent earlier occurrence of the text's last n tokens,
    trying n = ``ngram_max`` down to 1; at most ``draft_max`` of them; ``[]`` when nothing matches."""
    for n in range(min(ngram_max, len(tokens) - 1), 0, -1):
        tail = tokens[-n:]
        for start in range(len(tokens) - n - 1, -1, -1):  # most recent match first, not the tail itself
            if tokens[start:start + n] == tail:
                return tokens[start + n:start + n + draft_max]
    return []


def truncate(cache: KVCache, length: int) -> None:
    """Keep the first ``length`` positions of every layer's keys and values (drop rejected drafts)."""
    cache.keys = [k[:, :length].copy() for k in cache.keys]
    cache.values = [v[:, :length].copy() for v in cache.values]


def speculative_greedy(prompt_ids, max_new_tokens: int, stop_ids=(), model: Model | None = None,
                       ngram_max: int = NGRAM_MAX, draft_max: int = DRAFT_MAX) -> dict:
    """Greedy decoding with prompt-lookup drafts, verified by the target in one pass per round.

    Returns:
        ``{"tokens": generated ids, "passes": target forward passes (the prefill included),
        "drafted": drafted tokens checked, "accepted": of those, accepted, "rounds": one
        ``{"draft": ids, "accepted": n, "kept": ids}`` per pass after the prefill (the drafted
        tokens, how many of them the target accepted, and the tokens the pass added to the reply:
        the accepted ones, then the target's own pick, cut after a stop token)}``.
        The tokens equal plain greedy decoding's (up to the first stop token, or ``max_new_tokens``).
    """
    model = model or load_model()
    cache = KVCache()
    out = forward(model, list(prompt_ids), cache)  # prefill: the first target pass
    tokens = list(prompt_ids) + [int(np.argmax(out.logits[-1]))]
    new, passes, drafted, accepted, rounds = 1, 1, 0, 0, []
    while new < max_new_tokens and tokens[-1] not in stop_ids:
        draft = lookup_draft(tokens, ngram_max, min(draft_max, max_new_tokens - new - 1))
        logits = forward(model, [tokens[-1], *draft], cache, all_logits=True).logits  # (1 + len(draft), V)
        picks = [int(i) for i in np.argmax(logits, axis=-1)]  # greedy's choice after each fed position
        n = 0
        while n < len(draft) and picks[n] == draft[n]:
            n += 1
        kept = draft[:n] + [picks[n]]  # the accepted drafts, then the target's own next token
        truncate(cache, len(tokens) + n)  # the cache holds every token but the newest
        added = []
        for t in kept:
            tokens.append(t)
            added.append(t)
            new += 1
            if t in stop_ids:
                break
        rounds.append({"draft": list(draft), "accepted": n, "kept": added})
        passes += 1
        drafted += len(draft)
        accepted += n
    generated = tokens[len(prompt_ids):]
    return {"tokens": generated[:max_new_tokens], "passes": passes, "drafted": drafted, "accepted": accepted,
            "rounds": rounds}
