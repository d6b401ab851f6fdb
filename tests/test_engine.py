"""descent.engine and the live widgets: what the widgets ask the model in the reader's browser,
how its answers become the traces' layout, and how bad answers are refused.

The engine's answers here are made from the committed traces (traces.json, the real SmolLM2-135M
numbers): an answer that says what the build recorded must give back exactly what the build
recorded. The engine itself (llama.cpp in WebAssembly) is exercised by
tests/browser/test_model_in_browser.py.
"""

from __future__ import annotations

import html
import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from widget_html import stat as _stat
from widget_html import text as _text

from descent import engine, predict, tokenizer, weights_sample
from descent import widgets as w
from descent.recorded import model_file, prompt_trace
from descent.units import format_number, format_percent

TOK = tokenizer.smollm2()


def _bytes(i: int) -> list[int]:
    return [] if TOK.tokens[i] in TOK.special else list(TOK.token_bytes(i))


def next_answer(prompt_id: str) -> tuple[dict, dict]:
    """(request, answer) of the engine saying exactly what the build recorded for the next token."""
    p = prompt_trace(prompt_id)
    request = engine.text_request(p["text"], 1, 50)
    top = [[c["id"], math.log(c["probability"]), _bytes(c["id"])] for c in p["next"]]
    first = p["next"][0]
    answer = {"prompt_tokens": len(p["tokens"]), "finish": "length", "timings": {},
              "steps": [{"id": first["id"], "bytes": _bytes(first["id"]), "logprob": top[0][1], "top": top}]}
    return request, answer


def loop_answer(prompt_id: str, steps: int, sampling: dict | None = None) -> tuple[dict, dict]:
    """(request, answer) of the engine writing the build's greedy reply, at most ``steps`` tokens of it."""
    p = prompt_trace(prompt_id)
    ids = TOK.encode(p["text"])
    want = min(-(-steps // engine.CONTINUATION_CHUNK) * engine.CONTINUATION_CHUNK, engine.CONTEXT_TOKENS - len(ids))
    request = engine.text_request(p["text"], max(steps, want), 5, sampling)
    recorded = p["generation"]["steps"][: request["steps"]]
    out = [{"id": s["token"]["id"], "bytes": _bytes(s["token"]["id"]), "logprob": math.log(s["probability"]),
            "top": [[a["id"], math.log(a["probability"]), _bytes(a["id"])] for a in s["alternatives"]]}
           for s in recorded]
    stopped = p["generation"]["stop_reason"] == "stop_token" and len(recorded) == len(p["generation"]["steps"])
    return request, {"prompt_tokens": len(ids), "finish": "stop" if stopped else "length", "steps": out, "timings": {}}


def P(prompt_id: str) -> dict:
    rec = prompt_trace(prompt_id)
    return {"prompt": rec["prompt"], "chat": rec["chat"]}


# -- requests ------------------------------------------------------------------------------------


def test_text_request():
    r = engine.text_request("The capital of France is", 1, 50)
    # " The| capital| of| France| is": 5 tokens (traces.json's capital prompt)
    assert r == {"kind": "text", "text": "The capital of France is", "tokens": 5, "steps": 1, "top": 50, "sampling": None}
    s = engine.text_request("Hi", 16, 5, {"seed": 3, "top_p": 0.9, "top_k": 40, "temperature": 0.8})
    assert list(s["sampling"]) == ["temperature", "top_k", "top_p", "seed"]  # llama.cpp's order of keys
    with pytest.raises(ValueError, match="top must be 1 to 50"):
        engine.text_request("Hi", 1, 51)
    with pytest.raises(ValueError, match="steps must be"):
        engine.text_request("Hi", 0, 5)
    with pytest.raises(ValueError, match="sampling must have the keys"):
        engine.text_request("Hi", 1, 5, {"temperature": 1})


def test_prompt_must_fit_the_browsers_context():
    with pytest.raises(w.FieldError, match="empty") as e:
        engine.check_prompt("", 1)
    assert e.value.field == "prompt"
    with pytest.raises(w.FieldError, match="no token"):
        engine.check_prompt("\x16", 1)  # U+0016 has no byte token in SmolLM2's vocabulary: it is dropped
    # Each digit is one token (SmolLM2 splits digits): 200 digits + 1,900 steps > 2,048.
    with pytest.raises(w.FieldError, match="200 tokens; with 1,900 tokens to write it must fit the 2,048"):
        engine.check_prompt("7" * 200, 1900)
    assert len(engine.check_prompt("7" * 200, 1848)) == 200


def test_a_long_prompt_is_refused_before_the_engine_runs():
    # Issue 24: 500 emoji (U+1F600 is four bytes, F0 9F 98 80: more than one byte-level token
    # each) occupied the browser's engine for minutes. The limit is PROMPT_MAX_TOKENS = 256;
    # 257 digits are 257 tokens (SmolLM2 splits digits one per token).
    assert engine.PROMPT_MAX_TOKENS == 256
    assert len(engine.check_prompt("7" * 256, 16)) == 256
    with pytest.raises(w.FieldError, match="The prompt is 257 tokens; the model in your browser reads at most 256: "
                                           "shorten it") as e:
        engine.check_prompt("7" * 257, 16)
    assert e.value.field == "prompt"
    n = len(engine._tok().encode("\U0001F600" * 500))
    assert n > 256
    with pytest.raises(w.FieldError, match=f"The prompt is {n:,} tokens"):
        engine.text_request("\U0001F600" * 500, 16, 5)  # refused while the request is made: nothing asked
    # Every prompt the build traced still fits, its chat template included.
    from descent.recorded import trace_data
    from descent.widgets.part0 import model_text
    for p in trace_data()["prompts"]:
        engine.check_prompt(model_text(p["prompt"], p["chat"]), 16)


def test_request_key_is_canonical():
    a = engine.request_key({"b": 1, "a": [1, {"d": 2, "c": 3}]})
    assert a == '{"a":[1,{"c":3,"d":2}],"b":1}'
    # A request that went through the page's JavaScript comes back with 1.0 as 1: the same key.
    r = engine.text_request("Hi", 16, 5, {"temperature": 0.5, "top_k": 50, "top_p": 1.0, "seed": 1})
    via_js = json.loads(json.dumps(r).replace("1.0", "1"))
    assert via_js["sampling"]["top_p"] == 1 and isinstance(via_js["sampling"]["top_p"], int)
    assert engine.request_key(via_js) == engine.request_key(r)
    live = engine.Answers([{"request": via_js, "answer": {}}])
    assert live.ask(r) == {}


# -- answers -------------------------------------------------------------------------------------


@pytest.mark.parametrize("prompt_id", ["capital", "arithmetic", "chat", "story", "uncertain"])
def test_next_tokens_from_an_answer_equal_the_trace(prompt_id):
    p = prompt_trace(prompt_id)
    request, answer = next_answer(prompt_id)
    live = engine.Answers([{"request": request, "answer": answer}])
    got = engine.next_tokens(live, p["text"])
    assert got["tokens"] == p["tokens"]
    assert [c["id"] for c in got["next"]] == [c["id"] for c in p["next"]]
    assert [c["text"] for c in got["next"]] == [c["text"] for c in p["next"]]
    for mine, theirs in zip(got["next"], p["next"], strict=True):
        assert mine["probability"] == pytest.approx(theirs["probability"], rel=1e-12)
    # The rest of the mass is what the top 50 leave (the trace rounds it to 5 figures).
    assert got["rest_probability"] == pytest.approx(p["rest_probability"], abs=1e-5)


def test_next_tokens_needs_the_engine_first():
    with pytest.raises(engine.EngineNeeded) as e:
        engine.next_tokens(engine.Answers([]), "The capital of France is")
    assert e.value.request == engine.text_request("The capital of France is", 1, 50)


@pytest.mark.parametrize("prompt_id", ["uncertain", "chat"])
def test_continuation_from_an_answer_equals_the_trace(prompt_id):
    p = prompt_trace(prompt_id)
    n = len(p["generation"]["steps"])
    request, answer = loop_answer(prompt_id, n)
    got = engine.continuation(engine.Answers([{"request": request, "answer": answer}]), p["text"], n)
    assert got["generation"]["stop_reason"] == p["generation"]["stop_reason"] == "stop_token"
    assert got["generation"]["text"] == p["generation"]["text"]
    for mine, theirs in zip(got["generation"]["steps"], p["generation"]["steps"], strict=True):
        assert mine["token"] == theirs["token"]
        assert (mine["context_length"], mine["fed"]) == (theirs["context_length"], theirs["fed"])
        assert mine["probability"] == pytest.approx(theirs["probability"], rel=1e-12)
        assert [a["id"] for a in mine["alternatives"]] == [a["id"] for a in theirs["alternatives"]]


def test_continuation_asks_in_chunks():
    text = prompt_trace("story")["text"]
    for step, asked in ((0, 16), (15, 16), (16, 32), (40, 48)):
        with pytest.raises(engine.EngineNeeded) as e:
            engine.continuation(engine.Answers([]), text, step + 1)
        assert e.value.request["steps"] == asked, step


def _bad(answer: dict, **change) -> dict:
    out = json.loads(json.dumps(answer))
    for key, value in change.items():
        if key.startswith("step_"):
            out["steps"][0][key[5:]] = value
        else:
            out[key] = value
    return out


@pytest.mark.parametrize(
    "change, message",
    [
        ({"prompt_tokens": 6}, "read the prompt as 6 tokens, the descent tokenizer as 5"),
        ({"step_bytes": [80, 97, 114, 105, 115]}, "disagree about token 7,042"),
        ({"step_id": 49152}, "not a token id 0 to 49151"),
        ({"step_id": True}, "not a token id"),
        ({"step_logprob": 0.5}, "log-probability must be a number <= 0"),
        ({"step_logprob": float("nan")}, "log-probability"),
        ({"finish": "done"}, "finish must be 'stop' or 'length'"),
        ({"finish": "stop"}, "stopped without writing an end token"),
        ({"steps": []}, "must answer 1 to 1 steps, got 0"),
        ({"steps": "x"}, "must answer 1 to 1 steps, got str"),
        ({"step_top": [[7042, -0.3]]}, r"must be \[id, logprob, bytes\]"),
        ({"step_top": [[260, -3.0, [32, 116, 104, 101]], [7042, -0.3, [32, 80, 97, 114, 105, 115]]]},
         "most probable first"),
    ],
)
def test_bad_answers_are_refused(change, message):
    request, answer = next_answer("capital")
    live = engine.Answers([{"request": request, "answer": _bad(answer, **change)}])
    with pytest.raises(engine.EngineError, match=message):
        engine.next_tokens(live, request["text"])


def test_answers_must_be_pairs():
    for bad in ({"request": {}}, [1], [{"request": {}, "answer": 3}], "x"):
        with pytest.raises(engine.EngineError):
            engine.Answers(bad)


# -- the widget runtime's exchange ---------------------------------------------------------------


def test_live_widget_asks_then_renders_the_engines_numbers():
    request, answer = next_answer("capital")
    r = w.run("next_token_guess", {**P("capital"), "guess": "Paris"}, answers=[])
    assert r == {"ok": True, "need": request}
    r = w.run("next_token_guess", {**P("capital"), "guess": "Paris"}, answers=[{"request": request, "answer": answer}])
    assert r["ok"] and r["engine"] == "browser"
    assert _stat(r["html"], "Your guess") == "#1"
    assert "Computed just now in your browser" in _text(r["html"])
    # Without answers (the model not loaded): the build's trace, said so.
    r = w.run("next_token_guess", {**P("capital"), "guess": "Paris"})
    assert r["engine"] == "trace" and "when the site was built" in _text(r["html"])


def test_any_prompt_once_the_model_is_loaded():
    text = "My dog likes to eat"
    r = w.run("next_token_guess", {"prompt": text}, answers=[])
    assert r["need"]["text"] == text and r["need"]["tokens"] == len(TOK.encode(text))
    r = w.run("next_token_guess", {"prompt": text})  # without the model: only recorded prompts
    assert not r["ok"] and r["field"] == "prompt" and "load the model" in r["message"]
    # As a chat message, the model reads SmolLM2's chat template around the text.
    r = w.run("next_token_guess", {"prompt": text, "chat": True}, answers=[])
    assert r["need"]["text"] == TOK.apply_chat_template([{"role": "user", "content": text}])


def test_widget_reports_a_bad_answer_as_an_error():
    request, answer = next_answer("capital")
    r = w.run("sampling", P("capital"), answers=[{"request": request, "answer": _bad(answer, prompt_tokens=9)}])
    assert r["ok"] is False and r["field"] is None and "tokenizers disagree" in r["message"]


def test_generation_loop_from_the_engine_keeps_its_full_range():
    # A 16-token answer that did not stop: the slider keeps MAX_STEPS and step 15 offers "next".
    request, answer = loop_answer("story", 16)
    assert answer["finish"] == "length" and len(answer["steps"]) == 16
    pair = [{"request": request, "answer": answer}]
    r = w.run("generation_loop", {**P("story"), "step": 15}, answers=pair)
    assert r["engine"] == "browser"
    assert '{&quot;step&quot;: {&quot;max&quot;: 63}}' in r["html"]
    assert re.findall(r'data-set="\{&quot;step&quot;: &quot;(\d+)&quot;\}"', r["html"]) == ["14", "16"]
    # Step 16 needs the next chunk.
    r = w.run("generation_loop", {**P("story"), "step": 16}, answers=pair)
    assert r["need"]["steps"] == 32


def test_autoregression_draws_only_with_the_model():
    r = w.run("autoregression", {**P("chat"), "temperature": 0.8})
    assert not r["ok"] and r["field"] == "temperature" and "greedy" in r["message"]
    r = w.run("autoregression", {**P("chat"), "temperature": 0.8, "top_k": 40, "top_p": 0.9, "seed": 5}, answers=[])
    assert r["need"]["sampling"] == {"temperature": 0.8, "top_k": 40, "top_p": 0.9, "seed": 5}
    request, answer = loop_answer("chat", 11, r["need"]["sampling"])
    r = w.run("autoregression", {**P("chat"), "temperature": 0.8, "top_k": 40, "top_p": 0.9, "seed": 5},
              answers=[{"request": request, "answer": answer}])
    assert r["engine"] == "browser" and "with seed 5" in _text(r["html"])
    assert "drawn at random" in _text(r["html"])


# -- the load panel ------------------------------------------------------------------------------


SPEED = {"prompt_tokens": len(TOK.encode(engine.SPEED_TEXT)), "prefill_tokens_per_s": 200.0, "decode_tokens": 16,
         "decode_tokens_per_s": 40.0, "download_ms": 2500.0, "load_ms": 1500.0, "from_cache": False, "threads": 1,
         "engine": "@wllama/wllama 3.8.1", "stream_bytes_per_s": 12e9,
         "user_agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"}


def test_panel_before_loading_states_the_download():
    html = w.render_static("model_in_browser")
    size = sum(p["bytes"] for p in model_file()["parts"])  # 49,588,928 + 48,773,728 = 98,362,656 bytes
    assert size == 98_362_656
    assert 'data-action="load-model" disabled>Load the model (98.4 MB)</button>' in html
    assert "data-progress hidden" in html and 'data-engine="trace"' in html


def test_panel_after_loading_shows_the_browsers_speed():
    r = w.run("model_in_browser", {}, answers=[])
    assert r["need"]["kind"] == "speed" and r["need"]["steps"] == engine.SPEED_DECODE_STEPS
    r = w.run("model_in_browser", {}, answers=[{"request": r["need"], "answer": SPEED}])
    assert r["engine"] == "browser"
    assert _stat(r["html"], "Prefill in your browser") == "200"
    assert _stat(r["html"], "Decode in your browser") == "40.0"
    assert _stat(r["html"], "Ready in") == "4.00 s"
    assert 'data-action="remove-model">' in r["html"]


def test_panel_places_the_readers_decode_on_the_ceilings_figure():
    """The ringed point: measured decode (40 tokens/s, the answer's) against the ceiling of the measured
    bandwidth (12 GB/s, the answer's) over one step's bytes: the GGUF's tensors (weights.json) plus the
    engine's float32 KV cache at the middle context, 30 layers x 2 x 3 KV heads x 64 x 4 bytes = 46,080
    bytes per token (engine.py's CONTEXT_TOKENS note) x (52 prompt + 16 / 2) = 60 tokens."""
    need = w.run("model_in_browser", {}, answers=[])["need"]
    r = w.run("model_in_browser", {}, answers=[{"request": need, "answer": SPEED}])
    assert r["ok"], r
    tensors = sum(int(t["bytes"]) for t in weights_sample.data()["file_types"].values())
    step_bytes = tensors + 46_080 * (SPEED["prompt_tokens"] + 16 // 2)
    ceiling = 12e9 / step_bytes
    text = _text(r["html"])
    assert "Chrome 131, the engine on 1 thread" in text
    assert f"{format_number(ceiling, 3)} tokens/s: that bandwidth over the bytes of one step" in text
    assert f"40.0 tokens/s, {format_percent(40.0 / ceiling, 2)} of its ceiling" in text
    assert "12.0 GB/s, one thread reading a large array" in text
    assert "Your prefill 200 tokens/s, the level line" in text
    # The chart: one grey dot per public measurement, the reader's ringed point, the prefill line.
    svg_html = r["html"].split('class="descent-svg__wide"')[1].split("</svg>")[0]
    assert svg_html.count("var(--dw-fg-lighter)") == len(predict.predictions())
    assert "you: decode (Chrome 131)" in svg_html and "your prefill (no ceiling measured)" in svg_html
    # A slow machine (a loaded phone) is placed too: 0.5 GB/s gives a ceiling a 24th of 12 GB/s's.
    r = w.run("model_in_browser", {}, answers=[{"request": need, "answer": {**SPEED, "stream_bytes_per_s": 5e8}}])
    assert r["ok"] and f"{format_number(ceiling / 24, 3)} tokens/s: that bandwidth" in _text(r["html"])


def test_the_phones_chart_names_its_lines_in_a_key_below_the_plot():
    """A reader at 390 px found the chart's names crossing its lines ("your prefill" over the
    diagonals, "you: decode" over the dashed line): the phone's chart writes no name in the plot; a
    key below the axis title names the ringed point, the three lines and the grey dots, a row each."""
    from descent.widgets import _svg

    need = w.run("model_in_browser", {}, answers=[])["need"]
    for bandwidth in (12e9, 5e8):  # the reader's point far up the diagonal, and far to its left
        r = w.run("model_in_browser", {}, answers=[{"request": need, "answer": {**SPEED, "stream_bytes_per_s": bandwidth}}])
        narrow = r["html"].split('class="descent-svg__narrow"')[1].split("</svg>")[0]
        names = ["you: decode (Chrome 131)", "your prefill (no ceiling measured)", "measured = ceiling",
                 "half the ceiling", "a public measurement"]
        texts = {html.unescape(t): float(y) for y, t in re.findall(r'<text x="[^"]*" y="([^"]*)"[^>]*>([^<]*)</text>',
                                                                   narrow)}
        axis_title = texts["ceiling, tokens/s (log scale)"]
        assert axis_title == _svg.NARROW_HEIGHT - 8
        rows = [texts[n] for n in names]
        assert rows == sorted(rows) and min(rows) > axis_title, texts  # in this order, each below the plot
        assert len(set(rows)) == len(rows)  # a row each
        # In the plot only the ticks and axis titles are written.
        assert set(texts) - set(names) - {"ceiling, tokens/s (log scale)", "measured, tokens/s (log)"} <= {
            _svg.decade_label(10.0**k) for k in range(-3, 8)}
        height = float(re.search(r'viewBox="0 0 [^ ]+ ([^"]+)"', r["html"].split('class="descent-svg__narrow"')[0]
                                 .rsplit("<svg", 1)[1]).group(1))
        assert height == _svg.NARROW_HEIGHT + _svg.KEY_GAP + _svg.KEY_ROW * len(names)


@pytest.mark.parametrize(("agent", "name"), [
    ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.6778.85 Safari/537.36",
     "Headless Chrome 131"),
    ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 "
     "Edg/131.0.2903.86", "Edge 131"),
    ("Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "Firefox 133"),
    ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 "
     "Safari/605.1.15", "Safari 18"),
    ("", "your browser"), ("Chrome/", "Chrome"),
])
def test_browser_names_come_from_the_user_agent(agent, name):
    assert engine.browser_name(agent) == name


@pytest.mark.parametrize("key, value, message", [
    ("decode_tokens_per_s", 0, "decode_tokens_per_s"), ("threads", 0, "threads"), ("load_ms", -1, "load_ms"),
    ("stream_bytes_per_s", float("nan"), "stream_bytes_per_s"), ("stream_bytes_per_s", 0, "stream_bytes_per_s"),
    ("prefill_tokens_per_s", "fast", "prefill_tokens_per_s"),
    ("prompt_tokens", 7, "read the timed text as 7 tokens, the descent tokenizer as 52"),
])
def test_panel_refuses_an_impossible_speed(key, value, message):
    need = w.run("model_in_browser", {}, answers=[])["need"]
    r = w.run("model_in_browser", {}, answers=[{"request": need, "answer": {**SPEED, key: value}}])
    assert r["ok"] is False and message in r["message"]


# -- hostile answers -----------------------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(deadline=None, max_examples=150)
@given(name=st.sampled_from(["next_token_guess", "sampling", "generation_loop", "autoregression", "model_in_browser"]),
       answers=st.one_of(_json, st.lists(st.fixed_dictionaries({"request": _json, "answer": _json}), max_size=3)),
       real=st.booleans(), answer=_json)
def test_hostile_answers_never_crash(name, answers, real, answer):
    inputs = {"model_in_browser": {}}.get(name, P("capital"))
    if real:  # a well-formed request with a hostile answer
        need = w.run(name, inputs, answers=[])["need"]
        answers = [{"request": need, "answer": answer}]
    res = json.loads(w.run_json(name, json.dumps(inputs), "", json.dumps(answers)))
    assert isinstance(res["ok"], bool)
    if not res["ok"]:
        assert isinstance(res["message"], str) and res["message"] and "\n" not in res["message"]
        assert "Traceback" not in res["message"]
    else:
        assert set(res) in ({"ok", "need"}, {"ok", "html", "engine"})
