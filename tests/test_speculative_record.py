"""descent.trace.speculative_record: the committed round-by-round record of Part 3's prompt-lookup run
is that run (a fresh one, the draft rule, the page's totals), and the token strip replays it."""

from __future__ import annotations

import json

import pytest
from widget_html import stat, text

from descent import recorded, tokenizer
from descent.widgets import run, views
from descent.widgets.part3_motion import speculative_strip_frames


def ids(tokens):
    return [t["id"] for t in tokens]


def test_record_adds_up_to_its_totals():
    r = recorded.speculative_run()
    rounds = r["rounds"]
    assert r["passes"] == 1 + len(rounds)  # the prefill, then one pass per round
    assert r["tokens"] == 1 + sum(len(x["kept"]) for x in rounds)
    assert r["drafted"] == sum(len(x["draft"]) for x in rounds)
    assert r["accepted"] == sum(x["accepted"] for x in rounds)
    assert r["equals_greedy"] is True
    for x in rounds:
        n = x["accepted"]
        assert ids(x["kept"][:n]) == ids(x["draft"][:n])[:len(x["kept"])]  # the accepted prefix is kept
        assert len(x["draft"]) <= r["draft_max"]


def test_each_draft_is_the_lookup_of_the_text_so_far():
    # Re-derive every draft with the prompt-lookup rule itself (trace.speculative.lookup_draft) from
    # the prompt and the reply so far: the record is the rule's run, not a picture of one.
    pytest.importorskip("numpy")
    from descent.trace.speculative import lookup_draft

    r = recorded.speculative_run()
    tok = tokenizer.smollm2()
    text_ids = tok.encode(tok.apply_chat_template([{"role": "user", "content": r["prompt"]}])) + [r["first"]["id"]]
    for x in r["rounds"]:
        # The reply stays far below the run's token limit, so every lookup may draft draft_max tokens.
        assert ids(x["draft"]) == lookup_draft(text_ids, r["ngram_max"], r["draft_max"])
        text_ids += ids(x["kept"])
    for x in r["rounds"]:
        assert all(t["text"] == tok.decode([t["id"]]) for t in x["draft"] + x["kept"])


@pytest.mark.slow
def test_committed_record_equals_a_fresh_run_and_the_page_totals():
    # The real model again (seconds): the committed file must be what it writes now, and its totals
    # what Part 3's prose prints (descent.trace.measure, the build's own run).
    pytest.importorskip("numpy")
    from descent.trace import measure, speculative_record

    committed = json.loads(speculative_record.DATA_PATH.read_text(encoding="utf-8"))
    assert committed == json.loads(speculative_record.dumps(speculative_record.build())), \
        "src/descent/data/speculative.json is stale: run python -m descent.trace.speculative_record"
    page = measure.measurements()["speculative"]
    for k in ("tokens", "passes", "drafted", "accepted"):
        assert committed[k] == page[k], k


def test_strip_frames_replay_the_recorded_passes():
    r = recorded.speculative_run()
    out = run("speculative_strip", {})
    assert out["ok"], out
    frames = [body for _label, body in views.player_frames(out["html"])]
    assert len(frames) == r["passes"]
    made = 1
    for body, x in zip(frames[1:], r["rounds"], strict=True):
        made += len(x["kept"])
        assert stat(body, "Drafted") == str(len(x["draft"]))
        assert stat(body, "Accepted") == str(x["accepted"])
        assert stat(body, "Tokens this pass") == str(len(x["kept"]))
        assert body.count("is-accepted") == x["accepted"]
        assert body.count("is-rejected") == (1 if x["accepted"] < len(x["draft"]) else 0)
    assert made == r["tokens"]
    assert speculative_strip_frames()["per_pass"] == [1] + [len(x["kept"]) for x in r["rounds"]]
    # The closing note: tokens per pass as the page prints it (5.25 on the committed run: 42 / 8).
    assert f"{r['tokens'] / r['passes']:.3g} per pass" in text(out["html"])
