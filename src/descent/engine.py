"""The real model in the reader's browser, as the widgets see it: what they ask it and what it answers.

A reader who presses the load button runs SmolLM2-135M-Instruct, the same GGUF file the build
traced, in their own browser: llama.cpp compiled to WebAssembly (the npm package
``@wllama/wllama``) in a Web Worker (``assets/descent/llm-worker.js``, started by
``assets/descent/llm.js``). From then on, a widget that shows the model's numbers asks that engine
instead of reading the build's ``traces.json``. This module is the Python side of the exchange. It
runs inside the Pyodide worker, so it is standard library only (DESIGN.md's core rule).

**The engine computes, Python renders.** A widget declared with ``live=True`` receives ``live``: an
:class:`Answers` holding what the engine has answered so far (``None`` while the model is not
loaded: the widget then shows the build's traces). It asks through :func:`next_tokens`,
:func:`continuation` or :func:`speed`. If the answer is not there yet, the call raises
:class:`EngineNeeded` carrying the request; the widget runtime returns it to the page
(``{"ok": true, "need": request}``), ``llm.js`` has the engine compute it, and the runtime runs the
widget again with the answer added. A compute function is written as if every answer were there
and simply runs again from the start: no state lives between calls.

Requests (plain JSON; the worker maps them to wllama's ``createCompletion``):

* ``{"kind": "text", "text", "tokens", "steps", "top", "sampling"}``: read ``text`` (the engine
  tokenizes it; ``tokens`` is the descent tokenizer's count, and the answer must agree), then
  write up to ``steps`` tokens, greedily when ``sampling`` is ``None``, else drawn by llama.cpp's
  sampler with ``{"temperature", "top_k", "top_p", "seed"}`` (filters in the order top-k,
  temperature, top-p, as Hugging Face applies them; min-p and every penalty off). Generation stops
  early at an end token, which is then the last step. With every written token come the ``top``
  most likely tokens at that step, with log-probabilities at temperature 1 over the whole
  vocabulary (llama-server's ``n_probs``, taken before sampling).
* ``{"kind": "speed", "text", "tokens", "steps"}``: time reading ``text`` in one pass (prefill)
  and writing ``steps`` tokens one at a time (decode), ignoring end tokens, with no cached prefix.

Answers:

* text: ``{"prompt_tokens": int, "finish": "stop" | "length", "steps": [{"id", "bytes", "logprob",
  "top": [[id, logprob, bytes], ...]}], "timings": {...}}``; ``bytes`` is the engine's spelling of
  the token (a list of byte values; empty for a control token).
* speed: ``{"prompt_tokens", "prefill_tokens_per_s", "decode_tokens", "decode_tokens_per_s",
  "download_ms", "load_ms", "from_cache", "threads", "engine", "stream_bytes_per_s", "user_agent"}``;
  ``stream_bytes_per_s`` is the page's own measure of the machine's memory bandwidth (one thread of
  JavaScript reading a large array, as the build machine's ``stream`` record), ``user_agent`` the
  browser's ``navigator.userAgent``. Both stay in the page.

**Tokens.** The widgets show tokens from the descent tokenizer (:mod:`descent.tokenizer`), while the
engine reads the text with llama.cpp's own tokenizer of the same GGUF (wllama 3 takes a prompt as
text, not as token ids). The two must agree; every answer is checked: the engine's prompt length
equals the descent tokenizer's, and every token the engine names has the same bytes in both
vocabularies. A disagreement is an error the widget shows, never a silently wrong chip.

Sources: llama.cpp's server (``tools/server``: ``n_probs``, ``samplers``, ``cache_prompt``,
``timings``); wllama 3.8.1 (``src/wllama.ts``, ``createCompletion``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping

from descent import tokenizer
from descent.checks import is_int, is_real
from descent.params import ParamError
from descent.units import format_int, plural

__all__ = [
    "CONTEXT_TOKENS",
    "CONTINUATION_CHUNK",
    "KV_CACHE",
    "MAX_TOP",
    "PROMPT_MAX_TOKENS",
    "SPEED_DECODE_STEPS",
    "SPEED_TEXT",
    "Answers",
    "EngineError",
    "EngineNeeded",
    "browser_name",
    "check_prompt",
    "continuation",
    "next_tokens",
    "request_key",
    "speed",
    "text_request",
]

#: Tokens the browser's engine holds at once (llama.cpp ``n_ctx``): the prompt plus the reply.
#: The model was trained on 8,192; 2,048 keeps its KV cache (float32) under 100 MB of the reader's
#: memory: 30 layers x 2 (K and V) x 3 KV heads x 64 values x 4 bytes = 46,080 bytes per token.
CONTEXT_TOKENS = 2048
#: The precision of the engine's KV cache (llama.cpp ``cache_type_k`` / ``cache_type_v`` = ``f32`` in
#: ``descent.site.wllama.ENGINE_SETTINGS``), as :data:`descent.params.KV` names it.
KV_CACHE = "fp32"
#: Most tokens of a prompt the browser's engine is given (the text it reads, chat template included).
#: Checked with the descent tokenizer before the engine runs, so an over-long prompt is refused at
#: once instead of occupying the engine for minutes (issue 24: 500 emoji, about 2,000 byte tokens,
#: ran for more than 120 s, and every later request waited behind it). 256 holds every prompt the
#: build traced with room to spare and reads in seconds on a phone.
PROMPT_MAX_TOKENS = 256
#: Most candidates one step may return (the traces keep 50; llama-server's ``n_probs``).
MAX_TOP = 50
#: A continuation is asked for in multiples of this many tokens, so moving a step slider one step
#: reuses the answer it already has (greedy and seeded decoding give the same first tokens whatever
#: the length asked for).
CONTINUATION_CHUNK = 16
#: The text timed by :func:`speed` (prefill), and the tokens then written one at a time (decode).
SPEED_TEXT = (
    "The history of the harbour town begins with a few fishing huts on a sandy bay. Over three "
    "centuries the huts became a market, the market a port, and the port a city whose ships carried "
    "grain, timber and wool to every coast of the northern sea."
)
SPEED_DECODE_STEPS = 16

#: Keys of a sampling request, in the order llama.cpp's sampler applies the filters (top-k first:
#: it does not depend on the temperature; then temperature, then top-p on the reshaped list).
SAMPLING_KEYS = ("temperature", "top_k", "top_p", "seed")


class EngineNeeded(Exception):
    """Raised by an :class:`Answers` lookup whose answer the engine has not given yet.

    Not a ``ValueError``: the widget runtime catches it apart from bad input and hands
    ``request`` (a JSON-able dict) to the page, which asks the engine and runs the widget again.
    """

    def __init__(self, request: dict):
        super().__init__(f"the in-browser model must compute {request.get('kind')!r} first")
        self.request = request


class EngineError(ValueError):
    """The engine's answer is malformed or disagrees with the descent tokenizer (the message says how)."""


def _plain(x):
    """``x`` with every whole float written as an int: JavaScript has one number type, so a request's
    ``1.0`` comes back from the page as ``1`` (JSON.stringify), and must still find its answer."""
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, Mapping):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def request_key(request: Mapping) -> str:
    """The canonical text of a request (sorted keys, no spaces, whole floats as ints): how answers are
    looked up, whether the request was made here or came back through the page's JavaScript."""
    return json.dumps(_plain(request), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Answers:
    """What the in-browser engine has answered for one widget computation.

    Args:
        pairs: ``[{"request": {...}, "answer": {...}}, ...]`` as the page sends them (JSON-decoded).

    Raises:
        EngineError: ``pairs`` is not a list of such objects.
    """

    def __init__(self, pairs: Iterable[Mapping] = ()):
        if not isinstance(pairs, (list, tuple)):
            raise EngineError(f"engine answers must be a list of {{request, answer}} objects, got {type(pairs).__name__}")
        self._answers: dict[str, dict] = {}
        for k, pair in enumerate(pairs):
            if not isinstance(pair, Mapping) or not isinstance(pair.get("request"), Mapping) \
                    or not isinstance(pair.get("answer"), Mapping):
                raise EngineError(f"engine answers[{k}] must be an object with a request and an answer")
            self._answers[request_key(pair["request"])] = dict(pair["answer"])

    def __len__(self) -> int:
        return len(self._answers)

    def ask(self, request: dict) -> dict:
        """The answer to ``request``. Raises :class:`EngineNeeded` when there is none yet."""
        key = request_key(request)
        if key not in self._answers:
            raise EngineNeeded(request)
        return self._answers[key]


def _tok() -> tokenizer.Tokenizer:
    return tokenizer.smollm2()


def _stop_ids() -> frozenset[int]:
    """End tokens: ``<|im_end|>`` (the GGUF's EOS, id 2) and ``<|endoftext|>`` (id 0), as the traces use."""
    tok = _tok()
    return frozenset((tok.meta["eos_token_id"], tok.special["<|endoftext|>"]))


def check_prompt(text: str, steps: int, field: str = "prompt") -> list[int]:
    """The descent tokenizer's ids for ``text``, checked to fit the engine with ``steps`` more tokens.

    Raises:
        ParamError: (on ``field``) empty text, a text with no token, more than
            :data:`PROMPT_MAX_TOKENS` tokens, or prompt + steps beyond :data:`CONTEXT_TOKENS`.
    """
    if not text:
        raise ParamError(field, "The prompt is empty: type some text for the model to continue")
    ids = _tok().encode(text)
    if not ids:
        raise ParamError(field, "The prompt has no token the model knows: type some text")
    if len(ids) > PROMPT_MAX_TOKENS:
        raise ParamError(
            field,
            f"The prompt is {plural(len(ids), 'token')}; the model in your browser reads at most "
            f"{format_int(PROMPT_MAX_TOKENS)}: shorten it",
        )
    if len(ids) + steps > CONTEXT_TOKENS:
        raise ParamError(
            field,
            f"The prompt is {plural(len(ids), 'token')}; with {plural(steps, 'token')} to write it must fit "
            f"the {format_int(CONTEXT_TOKENS)} tokens the model in your browser holds",
        )
    return ids


def text_request(text: str, steps: int, top: int, sampling: Mapping | None = None) -> dict:
    """The engine request for reading ``text`` and writing ``steps`` tokens with ``top`` candidates each.

    ``sampling``: ``None`` (greedy) or ``{"temperature", "top_k", "top_p", "seed"}``.

    Raises:
        ParamError: as :func:`check_prompt`.
        ValueError: steps below 1, top outside 1..:data:`MAX_TOP`, or a sampling dict with other keys.
    """
    if not is_int(steps) or steps < 1:
        raise ValueError(f"steps must be a whole number of at least 1, got {steps!r}")
    if not is_int(top) or not 1 <= top <= MAX_TOP:
        raise ValueError(f"top must be 1 to {MAX_TOP}, got {top!r}")
    if sampling is not None:
        if set(sampling) != set(SAMPLING_KEYS):
            raise ValueError(f"sampling must have the keys {', '.join(SAMPLING_KEYS)}, got {sorted(sampling)}")
        sampling = {k: sampling[k] for k in SAMPLING_KEYS}
    ids = check_prompt(text, steps)
    return {"kind": "text", "text": text, "tokens": len(ids), "steps": steps, "top": top, "sampling": sampling}


def _token(i: int) -> dict:
    return {"text": _tok().decode([i]), "id": i}


def _check_id(x, where: str) -> int:
    if not is_int(x) or not 0 <= x < _tok().vocab_size:
        raise EngineError(f"the engine's {where} is not a token id 0 to {_tok().vocab_size - 1}: {x!r}")
    return x


def _check_bytes(i: int, spelled, where: str) -> None:
    """The engine's spelling of token ``i`` must be descent's (a control token may come back empty)."""
    if not isinstance(spelled, list) or not all(is_int(b) and 0 <= b <= 255 for b in spelled):
        raise EngineError(f"the engine's {where} spelling must be a list of byte values, got {spelled!r}")
    tok = _tok()
    ours = tok.token_bytes(i)
    if bytes(spelled) != ours and not (not spelled and tok.tokens[i] in tok.special):
        raise EngineError(
            f"the engine and the descent tokenizer disagree about token {format_int(i)}: "
            f"{bytes(spelled)!r} against {ours!r}"
        )


def _check_logprob(x, where: str) -> float:
    if not is_real(x) or math.isnan(x) or x > 1e-6:
        raise EngineError(f"the engine's {where} log-probability must be a number <= 0, got {x!r}")
    return min(float(x), 0.0)


def _text_answer(request: dict, answer: Mapping) -> list[dict]:
    """The checked steps of a text answer: ``[{"token": {...}, "logprob", "top": [(token, logprob)]}]``."""
    got = answer.get("prompt_tokens")
    if got != request["tokens"]:
        raise EngineError(
            f"the engine read the prompt as {got!r} tokens, the descent tokenizer as {request['tokens']}: "
            "the two tokenizers disagree on this text"
        )
    steps = answer.get("steps")
    if not isinstance(steps, list) or not 1 <= len(steps) <= request["steps"]:
        got_n = len(steps) if isinstance(steps, list) else type(steps).__name__
        raise EngineError(f"the engine must answer 1 to {request['steps']} steps, got {got_n}")
    if answer.get("finish") not in ("stop", "length"):
        raise EngineError(f"the engine's finish must be 'stop' or 'length', got {answer.get('finish')!r}")
    out = []
    for n, s in enumerate(steps):
        if not isinstance(s, Mapping) or not isinstance(s.get("top"), list) or not s["top"]:
            raise EngineError(f"the engine's step {n} must have an id, bytes, a logprob and a top list")
        i = _check_id(s.get("id"), f"step {n} token")
        _check_bytes(i, s.get("bytes"), f"step {n} token")
        top = []
        for k, entry in enumerate(s["top"][: request["top"]]):
            if not isinstance(entry, list) or len(entry) != 3:
                raise EngineError(f"the engine's step {n} candidate {k} must be [id, logprob, bytes]")
            j = _check_id(entry[0], f"step {n} candidate {k}")
            _check_bytes(j, entry[2], f"step {n} candidate {k}")
            top.append((_token(j), _check_logprob(entry[1], f"step {n} candidate {k}")))
        if any(a[1] < b[1] - 1e-9 for a, b in zip(top, top[1:], strict=False)):
            raise EngineError(f"the engine's step {n} candidates must be most probable first")
        out.append({"token": _token(i), "logprob": _check_logprob(s.get("logprob"), f"step {n} token"), "top": top})
    if answer["finish"] == "stop" and out[-1]["token"]["id"] not in _stop_ids():
        raise EngineError("the engine stopped without writing an end token")
    return out


def _prompt_tokens(text: str) -> list[dict]:
    return [_token(i) for i in _tok().encode(text)]


def next_tokens(live: Answers, text: str, top: int = MAX_TOP) -> dict:
    """The model's next-token candidates after ``text``, computed in the browser, in the traces' layout.

    Returns:
        ``{"text", "tokens": [{"text", "id"}], "next": [{"text", "id", "logit", "probability"}],
        "rest_probability"}``: ``top`` candidates, most probable first. ``logit`` is the
        log-probability at temperature 1 (the logit minus the log of the softmax's denominator:
        the same softmax at any temperature over any subset, which is all the widgets do with it).

    Raises:
        EngineNeeded: the engine has not answered yet. ParamError: as :func:`check_prompt`.
        EngineError: the answer is malformed or the tokenizers disagree.
    """
    request = text_request(text, 1, top)
    step = _text_answer(request, live.ask(request))[0]
    nxt = [{**t, "logit": lp, "probability": math.exp(lp)} for t, lp in step["top"]]
    return {
        "text": text,
        "tokens": _prompt_tokens(text),
        "next": nxt,
        "rest_probability": max(0.0, 1.0 - math.fsum(c["probability"] for c in nxt)),
    }


def continuation(live: Answers, text: str, steps: int, top: int = 5, sampling: Mapping | None = None) -> dict:
    """The model's reply to ``text``, at least ``steps`` tokens unless it ends sooner, in the traces' layout.

    The engine is asked for ``steps`` rounded up to a multiple of :data:`CONTINUATION_CHUNK` (at most
    what fits the context). ``sampling``: ``None`` (greedy, as the traces) or the reader's
    ``{"temperature", "top_k", "top_p", "seed"}``.

    Returns:
        ``{"text", "tokens", "generation": {"stop_reason", "text", "steps": [{"step", "token",
        "probability", "alternatives": [{"text", "id", "probability"}], "context_length", "fed"}]}}``:
        ``probability`` of the written token at temperature 1 (before any filter), ``alternatives``
        the ``top`` most likely at that step, ``stop_reason`` ``"stop_token"`` or ``"max_new_tokens"``.

    Raises:
        EngineNeeded, ParamError, EngineError: as :func:`next_tokens`.
    """
    ids = check_prompt(text, steps)
    chunked = min(-(-steps // CONTINUATION_CHUNK) * CONTINUATION_CHUNK, CONTEXT_TOKENS - len(ids))
    request = text_request(text, max(steps, chunked), top, sampling)
    answer = live.ask(request)
    written = _text_answer(request, answer)
    out_steps = []
    for n, s in enumerate(written):
        out_steps.append({
            "step": n,
            "token": s["token"],
            "probability": math.exp(s["logprob"]),
            "alternatives": [{**t, "probability": math.exp(lp)} for t, lp in s["top"]],
            "context_length": len(ids) + n,
            "fed": len(ids) if n == 0 else 1,
        })
    stops = _stop_ids()
    stopped = answer["finish"] == "stop"
    return {
        "text": text,
        "tokens": _prompt_tokens(text),
        "generation": {
            "stop_reason": "stop_token" if stopped else "max_new_tokens",
            "text": _tok().decode([s["token"]["id"] for s in out_steps if s["token"]["id"] not in stops]),
            "steps": out_steps,
        },
    }


def speed(live: Answers) -> dict:
    """The engine's measured speed in the reader's browser (the ``speed`` answer, checked).

    Returns:
        ``{"prompt_tokens", "prefill_tokens_per_s", "decode_tokens", "decode_tokens_per_s",
        "download_ms", "load_ms", "from_cache", "threads", "engine", "stream_bytes_per_s",
        "browser"}``; ``browser`` is :func:`browser_name` of the answer's ``user_agent``.

    Raises:
        EngineNeeded: not measured yet. EngineError: a missing or impossible number.
    """
    ids = _tok().encode(SPEED_TEXT)
    request = {"kind": "speed", "text": SPEED_TEXT, "tokens": len(ids), "steps": SPEED_DECODE_STEPS}
    answer = live.ask(request)
    out = {}
    for key in ("prefill_tokens_per_s", "decode_tokens_per_s", "download_ms", "load_ms", "stream_bytes_per_s"):
        x = answer.get(key)
        if not is_real(x) or not math.isfinite(x) or x < 0 or (key.endswith("per_s") and x == 0):
            raise EngineError(f"the engine's {key} must be a finite number >= 0, got {x!r}")
        out[key] = float(x)
    for key in ("prompt_tokens", "decode_tokens", "threads"):
        if not is_int(answer.get(key)) or answer[key] < 1:
            raise EngineError(f"the engine's {key} must be a whole number >= 1, got {answer.get(key)!r}")
        out[key] = answer[key]
    if out["prompt_tokens"] != len(ids):
        raise EngineError(
            f"the engine read the timed text as {out['prompt_tokens']} tokens, the descent tokenizer as {len(ids)}"
        )
    out["from_cache"] = bool(answer.get("from_cache"))
    out["engine"] = str(answer.get("engine") or "")
    agent = answer.get("user_agent")
    out["browser"] = browser_name(agent if isinstance(agent, str) else "")
    return out


#: Browsers by the product token their user-agent string carries, checked in this order (Edge and
#: Opera also say Chrome; Chrome also says Safari): (token, name).
_BROWSERS = (("Edg/", "Edge"), ("OPR/", "Opera"), ("Firefox/", "Firefox"), ("HeadlessChrome/", "Headless Chrome"),
             ("Chrome/", "Chrome"), ("Version/", "Safari"))


def browser_name(user_agent: str) -> str:
    """The browser a ``navigator.userAgent`` string names, with its major version: ``"Chrome 131"``,
    ``"Firefox 133"``, ``"Safari 18"``; ``"your browser"`` when it names none of :data:`_BROWSERS`."""
    for token, name in _BROWSERS:
        at = user_agent.find(token)
        if at >= 0:
            version = user_agent[at + len(token):].split(".")[0].split(" ")[0]
            return f"{name} {version}" if version.isdigit() and len(version) <= 4 else name
    return "your browser"
