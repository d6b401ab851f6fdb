"""descent.widgets.part0: next_token_guess and generation_loop agree with the committed traces.

Expected values are read from traces.json in the test (the real SmolLM2-135M trace) and compared
with what the widgets render.
"""

from __future__ import annotations

import re

import pytest
from widget_html import stat as _stat
from widget_html import text as _text

from descent.widgets import FieldError, get, part0, render_static, run


def P(prompt_id: str) -> dict:
    """The widget inputs that type a prepared prompt: its text, and whether it goes in as a chat message."""
    rec = part0.prompt_trace(prompt_id)
    return {"prompt": rec["prompt"], "chat": rec["chat"]}


def test_prompts_are_the_trace_prompts():
    from descent.trace.record import PROMPTS

    assert part0.prompt_ids() == [p["id"] for p in PROMPTS]
    with pytest.raises(ValueError, match="prompt must be one of"):
        part0.prompt_trace("nope")


def test_find_guess():
    cands = [{"text": " Paris"}, {"text": " the"}, {"text": "Paris"}, {"text": "."}]
    assert part0.find_guess("Paris", cands) == 0  # " Paris" ranks above "Paris"
    assert part0.find_guess(" the", cands) == 1
    assert part0.find_guess("THE", cands) is None  # case makes another token (issue 13)
    assert part0.case_variant("THE", cands) == 1  # ... which the hint names
    assert part0.find_guess(".", cands) == 3
    assert part0.find_guess("Lyon", cands) is None
    assert part0.find_guess("  ", cands) is None
    assert part0.find_guess(" ", [{"text": "x"}, {"text": " "}]) == 1  # a space is a token too
    assert part0.find_guess("", cands) is None


def test_guess_says_which_token_it_became_and_that_case_matters():
    # Issue 13: "paris" used to score as " Paris". SmolLM2's tokenizer (the reference tokenizer
    # agrees, tests/test_tokenizer.py) has " Paris" = id 7042, one token, and splits " paris" into
    # " par" (1280) + "is" (271); the capital prompt's top pick is " Paris" (traces.json).
    cands = part0.prompt_trace("capital")["next"]
    value, note, rank = part0.describe_guess("Paris", cands, 50)
    assert (value, rank) == ("#1", 0)
    assert "'Paris' becomes '␣Paris'" in note and "one token of the model's vocabulary, id 7,042" in note
    value, note, rank = part0.describe_guess("paris", cands, 50)
    assert rank != 0 and value != "#1"
    assert "splits into '␣par' + 'is'" in note and "2 steps" in note
    assert "The model's list has '␣Paris' at #1: case and the leading space make that a different token" in note
    # Typed with its space, nothing is added.
    value, note, _ = part0.describe_guess(" Paris", cands, 50)
    assert note.startswith("'␣Paris' is one token") and value == "#1"
    # Punctuation gets no space added.
    assert part0.guess_spelling(".", cands) == "."


def test_guess_widget_output_names_the_token():
    html = run("next_token_guess", {**P("capital"), "guess": "paris"})["html"]
    assert "␣par" in html and "different token" in html


@pytest.mark.parametrize("prompt", ["capital", "arithmetic", "chat", "story", "uncertain"])
def test_guess_of_the_top_token_is_rank_one(prompt):
    p = part0.prompt_trace(prompt)
    top = p["next"][0]
    r = run("next_token_guess", {**P(prompt), "guess": top["text"]})
    assert r["ok"]
    assert _stat(r["html"], "Your guess") == "#1"
    assert _stat(r["html"], "The model&#x27;s top pick") == part0.show(top["text"])
    # the prompt's tokens appear as chips, ids included
    for t in p["tokens"]:
        assert f'descent-chip__id">{t["id"]}<' in r["html"]


def test_guess_ranked_lower_is_added_and_marked():
    p = part0.prompt_trace("capital")
    c = p["next"][30]  # rank 31, below the 10 rows shown
    r = run("next_token_guess", {**P("capital"), "guess": c["text"]})
    rank = part0.find_guess(c["text"], p["next"])
    assert _stat(r["html"], "Your guess") == f"#{rank + 1}"
    assert r["html"].count("descent-bar is-selected") == 1
    assert "your guess" in _text(r["html"])


def test_guess_not_in_top_50_and_rest_mass():
    p = part0.prompt_trace("capital")
    r = run("next_token_guess", {**P("capital"), "guess": "zzzzqqq"})
    assert _stat(r["html"], "Your guess") == "not in the top 50"
    assert f"{p['rest_probability'] * 100:.3g}%" in _text(r["html"])


def test_guess_bad_input():
    r = run("next_token_guess", {"prompt": "mars"})  # not a prompt the build traced, and no model loaded
    assert not r["ok"] and r["field"] == "prompt" and "load the model" in r["message"]
    r = run("next_token_guess", {"prompt": part0.prompt_trace("chat")["prompt"]})  # traced as a chat message only
    assert not r["ok"] and r["field"] == "prompt"
    r = run("next_token_guess", {"guess": "x" * (part0.GUESS_MAX_CHARS + 1)})
    assert not r["ok"] and r["field"] == "guess"


def test_generation_loop_step_matches_the_trace():
    p = part0.prompt_trace("chat")
    steps = p["generation"]["steps"]
    n = 5
    r = run("generation_loop", {**P("chat"), "step": n})
    assert r["ok"]
    s = steps[n]
    assert _stat(r["html"], "Token chosen") == part0.show(s["token"]["text"])
    # context = the prompt's tokens, then the n tokens chosen before this step
    ids = [int(x) for x in re.findall(r'descent-chip__id">(\d+)<', r["html"])]
    assert ids == [t["id"] for t in p["tokens"]] + [x["token"]["id"] for x in steps[:n]]
    assert len(ids) == s["context_length"]


def test_generation_loop_last_step_and_beyond():
    p = part0.prompt_trace("uncertain")
    last = len(p["generation"]["steps"]) - 1
    r = run("generation_loop", {**P("uncertain"), "step": last + 5})
    assert r["ok"]
    assert f"only {last + 1} steps" in _text(r["html"])
    assert "stop token" in _text(r["html"])
    r = run("generation_loop", {**P("uncertain"), "step": -1})
    assert not r["ok"] and r["field"] == "step"


def test_compute_raises_field_error_directly():
    with pytest.raises(FieldError) as e:
        part0.generation_loop("nope", False, 0)
    assert e.value.field == "prompt"


def test_prerendered():
    for name in ("next_token_guess", "generation_loop"):
        assert name in get(name).name
        markup = render_static(name)
        assert 'data-state="static"' in markup and "descent-chip" in markup


def test_loop_prev_next_buttons_set_the_step():
    # step 0: only "next" (to 1); a middle step: both; the last step: only "previous"
    last = len(part0.prompt_trace("story")["generation"]["steps"]) - 1

    def targets(step):
        h = run("generation_loop", {**P("story"), "step": step})["html"]
        return [int(x) for x in re.findall(r'data-set="\{&quot;step&quot;: &quot;(\d+)&quot;\}"', h)]

    assert targets(0) == [1]
    assert targets(5) == [4, 6]
    assert targets(last) == [last - 1]
