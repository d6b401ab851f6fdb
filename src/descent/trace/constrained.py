"""Constrained decoding on the real model: a pattern becomes a token mask at every step.

A grammar engine (Outlines, Willard & Louf 2023, arXiv:2307.09702; XGrammar, Dong et al. 2024,
arXiv:2411.15100; llama.cpp's GBNF grammars) compiles the required format into a state machine
and, at every decode step, allows only the tokens whose text keeps the output inside the format.
The rest get probability zero and the allowed ones are renormalized to sum to 1.

This module does the same at a small scale, to be read:

* :class:`Pattern` parses a small regular expression: literal characters (``\\`` escapes one),
  character classes ``[A-Za-z ]``, and the quantifiers ``{m,n}``, ``{m}``, ``?``, ``+`` and ``*``
  on the atom before them. No alternation or groups: enough for a flat JSON object.
* Its state is the set of places the text so far can have reached (a Thompson-style NFA run, as
  in Thompson 1968, "Regular expression search algorithm", CACM 11(6)); :meth:`Pattern.feed`
  advances it by a token's text, and an empty set means the token breaks the pattern.
* :func:`generate` runs SmolLM2 greedily under the mask and records each step: how many of the
  49,152 tokens were allowed, how much probability the model had put on them, and how the top
  choice changed once the rest were masked out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from descent import tokenizer
from descent.trace.forward import KVCache, forward, log_softmax
from descent.trace.gguf_reader import Model, load_model

__all__ = ["Pattern", "generate", "token_texts"]

#: Largest repeat count ``*`` and ``+`` allow (a bound keeps the state set finite and small).
STAR_MAX = 64


@dataclass(frozen=True)
class _Atom:
    chars: frozenset[str]  # characters this atom matches
    lo: int  # fewest repeats
    hi: int  # most repeats


def _class(body: str) -> frozenset[str]:
    out, i = set(), 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            out.add(body[i + 1])
            i += 2
        elif i + 2 < len(body) and body[i + 1] == "-":
            out.update(chr(c) for c in range(ord(ch), ord(body[i + 2]) + 1))
            i += 3
        else:
            out.add(ch)
            i += 1
    return frozenset(out)


class Pattern:
    """A regular expression of literals, ``[classes]`` and quantifiers, as a state machine.

    States are ``(atom index, repeats so far)``; a state set holds every place the text so far can
    have reached. ``accepting(states)`` says whether the text so far is a whole match.

    Raises:
        ValueError: an unclosed ``[`` or ``{``, a quantifier with nothing before it, ``m > n``.
    """

    def __init__(self, regex: str):
        self.regex = regex
        atoms: list[_Atom] = []
        i = 0
        while i < len(regex):
            ch = regex[i]
            if ch == "[":
                end = regex.find("]", i + 1)
                if end < 0:
                    raise ValueError(f"unclosed [ at {i} in {regex!r}")
                atoms.append(_Atom(_class(regex[i + 1:end]), 1, 1))
                i = end + 1
            elif ch in "{?+*":
                if not atoms:
                    raise ValueError(f"quantifier {ch!r} at {i} has nothing to repeat in {regex!r}")
                if ch == "{":
                    end = regex.find("}", i)
                    if end < 0:
                        raise ValueError(f"unclosed {{ at {i} in {regex!r}")
                    lo, _, hi = regex[i + 1:end].partition(",")
                    lo_n, hi_n = int(lo), int(hi) if hi else int(lo)
                    i = end + 1
                else:
                    lo_n, hi_n = {"?": (0, 1), "+": (1, STAR_MAX), "*": (0, STAR_MAX)}[ch]
                    i += 1
                if lo_n > hi_n:
                    raise ValueError(f"repeat {{{lo_n},{hi_n}}} has min above max in {regex!r}")
                atoms[-1] = _Atom(atoms[-1].chars, lo_n, hi_n)
            else:
                if ch == "\\":
                    i += 1
                    if i == len(regex):
                        raise ValueError(f"{regex!r} ends with a lone backslash")
                    ch = regex[i]
                atoms.append(_Atom(frozenset(ch), 1, 1))
                i += 1
        self.atoms = tuple(atoms)
        self.start = self._close({(0, 0)})
        self.alphabet = frozenset().union(*(a.chars for a in atoms)) if atoms else frozenset()

    def _close(self, states) -> frozenset:
        """Add every state reachable without reading: an atom that has had its minimum may be left."""
        out, todo = set(states), list(states)
        while todo:
            i, n = todo.pop()
            if i < len(self.atoms) and n >= self.atoms[i].lo and (i + 1, 0) not in out:
                out.add((i + 1, 0))
                todo.append((i + 1, 0))
        return frozenset(out)

    def step(self, states: frozenset, ch: str) -> frozenset:
        """The states after reading one character (empty: the character breaks the pattern)."""
        nxt = {(i, n + 1) for i, n in states
               if i < len(self.atoms) and n < self.atoms[i].hi and ch in self.atoms[i].chars}
        return self._close(nxt) if nxt else frozenset()

    def feed(self, states: frozenset, text: str) -> frozenset:
        """The states after reading ``text`` (empty as soon as one character breaks the pattern)."""
        for ch in text:
            states = self.step(states, ch)
            if not states:
                break
        return states

    def accepting(self, states: frozenset) -> bool:
        """True when the text read so far is a whole match."""
        return (len(self.atoms), 0) in states

    def done(self, states: frozenset) -> bool:
        """True when the text is a whole match and no character can extend it."""
        return self.accepting(states) and not any(
            i < len(self.atoms) and n < self.atoms[i].hi for i, n in states)


def token_texts(tok: tokenizer.Tokenizer) -> list[str | None]:
    """Each token's text if it is plain ASCII (the patterns here are ASCII), else None (never allowed)."""
    out: list[str | None] = []
    for i in range(tok.vocab_size):
        raw = tok.token_bytes(i)
        out.append(raw.decode("ascii") if raw.isascii() and tok.tokens[i] not in tok.special else None)
    return out


def _allowed(pattern: Pattern, states: frozenset, texts: list[str | None]) -> np.ndarray:
    """Boolean mask (V,): the tokens whose whole text keeps the output inside the pattern."""
    first = {ch for ch in pattern.alphabet if pattern.step(states, ch)}  # cheap first-character filter
    mask = np.zeros(len(texts), dtype=bool)
    for i, t in enumerate(texts):
        if t and t[0] in first and pattern.feed(states, t):
            mask[i] = True
    return mask


def generate(prompt_ids, regex: str, max_new_tokens: int = 48, model: Model | None = None,
             top: int = 3) -> dict:
    """Greedy decoding of SmolLM2 under ``regex``: at each step the disallowed tokens are masked.

    The end-of-text token (the GGUF's EOS) is allowed only when the output is a whole match, and the
    loop stops when the pattern cannot be extended. Each step's record: ``allowed`` (tokens allowed),
    ``masked_share`` (1 - allowed / V), ``allowed_mass`` (probability the unconstrained model put on
    the allowed tokens, at temperature 1), the unconstrained favourite (``free_top``: text and
    probability), the chosen token with its probability before and after renormalization, and the
    ``top`` allowed tokens renormalized.

    Returns:
        ``{"regex", "steps": [...], "text", "matched": bool}``.

    Raises:
        ValueError: a bad pattern, or a pattern that allows no first token.
    """
    model = model or load_model()
    tok = tokenizer.smollm2()
    pattern = Pattern(regex)
    texts = token_texts(tok)
    eos = tok.meta["eos_token_id"]
    V = model.config.vocab
    states, cache, fed, out, steps = pattern.start, KVCache(), list(prompt_ids), [], []
    for _ in range(max_new_tokens):
        logits = forward(model, fed, cache).logits[-1]  # (V,)
        probs = np.exp(log_softmax(logits))  # float64, sums to 1
        mask = _allowed(pattern, states, texts)
        if pattern.accepting(states):
            mask[eos] = True
        if not mask.any():
            raise ValueError(f"no token can continue {tok.decode(out)!r} under {regex!r}")
        mass = float(probs[mask].sum())
        masked = np.where(mask, probs, 0.0) / mass  # renormalized over the allowed tokens
        choice = int(np.argmax(masked))
        free = int(np.argmax(probs))
        order = np.argsort(-masked, kind="stable")[:top]
        steps.append({
            "allowed": int(mask.sum()),
            "masked_share": 1 - int(mask.sum()) / V,
            "allowed_mass": mass,
            "free_top": {"text": tok.decode([free]), "id": free, "probability": float(probs[free])},
            "token": {"text": tok.decode([choice]), "id": choice},
            "probability": float(probs[choice]),
            "renormalized": float(masked[choice]),
            "top": [{"text": tok.decode([int(i)]), "id": int(i), "probability": float(masked[i])} for i in order],
        })
        if choice == eos:
            break
        out.append(choice)
        states = pattern.feed(states, texts[choice])
        fed = [choice]
        if pattern.done(states):
            break
    text = tok.decode(out)
    return {"regex": regex, "steps": steps, "text": text, "matched": pattern.accepting(pattern.feed(pattern.start, text))}
