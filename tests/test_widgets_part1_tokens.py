"""descent.widgets.part1_tokens: tokenizer, sampling and autoregression agree with the core.

Expected values are computed in the test with descent.tokenizer, descent.sampling and the
committed traces, or worked out by hand where a comment says so.
"""

from __future__ import annotations

import html
import re

import pytest
from widget_html import stat as _stat

from descent import sampling, tokenizer
from descent.widgets import part1_tokens as p1
from descent.widgets import render_static, run
from descent.widgets.part0 import prompt_trace, show


def P(prompt_id: str) -> dict:
    """The widget inputs that type a prepared prompt: its text, and whether it goes in as a chat message."""
    rec = prompt_trace(prompt_id)
    return {"prompt": rec["prompt"], "chat": rec["chat"]}


@pytest.mark.parametrize(
    "text", [p1.DEFAULT_TEXT, "How many r's are in strawberry?", "1234 + 1235", "a\n\tb"]
)
def test_tokenizer_chips_equal_the_core(text):
    r = run("tokenizer", {"text": text})
    assert r["ok"]
    expected = tokenizer.tokens(text)
    ids = [int(x) for x in re.findall(r'descent-chip__id">(\d+)<', r["html"])]
    assert ids == [i for _, i in expected]
    assert _stat(r["html"], "Tokens") == f"{len(expected):,}"
    assert _stat(r["html"], "Characters") == f"{len(text):,}"


def test_token_classes_by_hand():
    # "<|im_start|>user\n1234 strawberry, ok" -> special, word, space, 4 digits, word, punct, word
    got = [c for _, _, c in p1.classify("<|im_start|>user\n1234 strawberry, ok")]
    assert got == [
        "special",
        "word",
        "space",
        "digit",
        "digit",
        "digit",
        "digit",
        "word",
        "punctuation",
        "word",
    ]
    # "strawberry" at the start is st|raw|berry: three pieces of one word
    assert [c for _, _, c in p1.classify("strawberry")] == ["subword"] * 3


def test_tokenizer_bad_input():
    r = run("tokenizer", {"text": ""})
    assert not r["ok"] and r["field"] == "text"



def test_tokenizer_says_when_it_cut_a_long_paste():
    # Issue 13: a pasted 20,000-character text was cut at 2,000 by the textarea's maxlength without
    # a word. Now the control has no maxlength, the widget tokenizes the first 2,000 characters and
    # says so first. "ab " x 6,667 = 20,001 characters; cut to 2,000.
    text = "ab " * 6667
    r = run("tokenizer", {"text": text})
    assert r["ok"]
    assert "only the first 2,000 of its 20,001 characters are used" in r["html"]
    assert r["html"].index("descent-note--warn") < r["html"].index("descent-chip")
    short = run("tokenizer", {"text": text[: p1.TEXT_MAX_CHARS]})
    assert "only the first" not in short["html"]
    assert 'maxlength="' not in render_static("tokenizer").split("<textarea", 1)[1].split(">", 1)[0]


@pytest.mark.parametrize(
    "settings",
    [
        dict(temperature=1.0, top_k=50, top_p=1.0, seed=1),
        dict(temperature=0.7, top_k=10, top_p=0.9, seed=7),
        dict(temperature=1.5, top_k=50, top_p=0.5, seed=3),
        dict(temperature=0.0, top_k=50, top_p=1.0, seed=1),
    ],
)
def test_sampling_equals_descent_sampling(settings):
    p = prompt_trace("story")
    logits = [c["logit"] for c in p["next"]]
    surv = sampling.distribution(logits, settings["temperature"], settings["top_k"], settings["top_p"])
    drawn = sampling.sample(
        logits, settings["temperature"], settings["top_k"], settings["top_p"], seed=settings["seed"]
    )
    r = run("sampling", {**P("story"), **settings})
    assert r["ok"]
    assert _stat(r["html"], "Tokens left to draw from") == str(len(surv))
    assert _stat(r["html"], "Drawn") == show(p["next"][drawn]["text"])
    shown = min(p1.SAMPLING_ROWS, len(p["next"]))
    greyed = r["html"].count("descent-bar--greyed")
    assert greyed == shown - sum(1 for i, _ in surv if i < shown)


def test_temperature_zero_keeps_only_the_top_token():
    r = run("sampling", {**P("capital"), "temperature": 0})
    assert _stat(r["html"], "Tokens left to draw from") == "1"
    assert _stat(r["html"], "Drawn") == show(prompt_trace("capital")["next"][0]["text"])


def test_sampling_bad_input():
    for bad in ({"temperature": 2.5}, {"top_k": 0}, {"top_p": 0}, {"seed": -1}, {"prompt": "x"}):
        r = run("sampling", bad)
        assert not r["ok"] and r["field"] == next(iter(bad)), bad


def test_loop_work_by_hand():
    # prompt of 4 tokens, 3 steps: with a cache 4, 1, 1 (total 6); without 4, 5, 6 (total 15)
    assert p1.loop_work(4, 3) == [(4, 4, 4, 4), (1, 5, 5, 9), (1, 6, 6, 15)]
    with pytest.raises(ValueError):
        p1.loop_work(0, 3)


def test_autoregression_counts():
    p = prompt_trace("chat")
    t = len(p["tokens"])
    n = 10
    r = run("autoregression", {**P("chat"), "step": n})
    assert r["ok"]
    assert _stat(r["html"], "This step, with a KV cache") == "1"
    assert _stat(r["html"], "This step, without a cache") == str(t + n)
    # cumulative: with a cache t + n; without sum_{k=0}^{n} (t + k) = (n+1) t + n(n+1)/2
    text = html.unescape(r["html"])
    assert f"{t + n:,} tokens" in text
    assert f"{(n + 1) * t + n * (n + 1) // 2:,} tokens" in text


def test_prerendered():
    for name in ("tokenizer", "sampling", "autoregression"):
        assert 'data-state="static"' in render_static(name)
