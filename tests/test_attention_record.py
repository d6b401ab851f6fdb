"""descent.trace.attention_record: the committed record of every query position's attention on the
running prompt is the real model's (a fresh run), agrees with traces.json's last row, and Part 1's
any-token fan (widgets.part1_motion.attention_any) plays it."""

from __future__ import annotations

import json
import math
import re

import pytest
from widget_html import stat, text

from descent import recorded, replay
from descent.trace.attention_record import SIG_DIGITS
from descent.widgets import run
from descent.widgets import views as v
from descent.widgets.part1_motion import (
    attention_any_frames,
    first_previous_token_head,
    first_sink_head,
    tops,
)


def test_record_is_the_running_prompt_with_every_row_a_distribution():
    a = recorded.attention_rows()
    p = recorded.prompt_trace(replay.PROMPT)
    assert a["prompt_id"] == replay.PROMPT and a["tokens"] == [{"id": t["id"], "text": t["text"]} for t in p["tokens"]]
    assert (a["layers"], a["heads"]) == (len(p["attention_last"]), len(p["attention_last"][0]))
    n = len(a["tokens"])
    for layer in a["weights"]:
        for head in layer:
            # Causal: token t sees positions 0..t, and its weights sum to 1 (to the rounding kept).
            assert [len(r) for r in head] == list(range(1, n + 1))
            for r in head:
                assert all(w >= 0 for w in r) and math.isclose(sum(r), 1, abs_tol=n * 10 ** -SIG_DIGITS)


def test_last_row_is_traces_jsons_last_token_row():
    # Two runs of the same model, one token at a time here and one prefill there: the same row to
    # the rounding of the two files (4 and 5 significant figures).
    a = recorded.attention_rows()
    last = recorded.prompt_trace(replay.PROMPT)["attention_last"]
    for li, layer in enumerate(a["weights"]):
        for hi, head in enumerate(layer):
            assert head[-1] == pytest.approx(last[li][hi], abs=2e-4), (li + 1, hi + 1)


@pytest.mark.slow
def test_committed_record_equals_a_fresh_run():
    pytest.importorskip("numpy")
    from descent.trace import attention_record

    committed = json.loads(attention_record.DATA_PATH.read_text(encoding="utf-8"))
    fresh = json.loads(attention_record.dumps(attention_record.build()))
    stale = "src/descent/data/attention.json is stale: run python -m descent.trace.attention_record"
    assert {k: v for k, v in committed.items() if k != "weights"} == \
        {k: v for k, v in fresh.items() if k != "weights"}, stale
    # The weights are kept to a few significant digits (attention_record's rounding); OpenBLAS's
    # float32 sums differ in their last bits from one CPU's kernel to another's (SkylakeX and Zen),
    # which can turn the kept digit of a weight that lies on a rounding edge. Anything more is stale.
    a, b = _flat(committed["weights"]), _flat(fresh["weights"])
    assert len(a) == len(b), stale
    far = [(x, y) for x, y in zip(a, b, strict=True) if not math.isclose(x, y, rel_tol=2 * 10.0 ** (1 - SIG_DIGITS), abs_tol=1e-7)]
    assert not far, f"{stale} ({len(far)} of {len(a)} weights differ, e.g. {far[:3]})"


def _flat(x) -> list[float]:
    return [v for item in x for v in _flat(item)] if isinstance(x, list) else [x]


def test_player_has_one_frame_per_token_each_the_records_weights():
    a = recorded.attention_rows()
    layer, head = first_sink_head()
    out = run("attention_any", {"layer": layer, "head": head})
    assert out["ok"], out
    frames = v.player_frames(out["html"])  # decoded as player.js decodes them
    n = len(a["tokens"])
    assert len(frames) == n
    assert f'data-start="{n - 1}"' in out["html"]  # the page shows the last token: the one that predicts
    for t, (_label, body) in enumerate(frames):
        w = a["weights"][layer - 1][head - 1][t]
        bars = re.findall(r'class="descent-bar__value"[^>]*>([^<]*)<', body)
        assert bars == [f"{x * 100:.1f}%" for x in w], t
        top = max(range(len(w)), key=w.__getitem__)
        assert stat(body, "Most attention on").startswith(a["tokens"][top]["text"].replace(" ", "\u2423"))
        # Every token is a button to its own frame; this frame's token is the current one.
        assert re.findall(r'data-player-goto="(\d+)"', body) == [str(i) for i in range(n)]
        assert re.findall(r'data-player-goto="(\d+)" aria-current="true"', body) == [str(t)]
        # The fan draws one arc (or loop) per position the token sees.
        assert body.count("<path ") + body.count("<circle ") == 2 * (t + 1)  # wide and narrow drawings


def test_default_head_and_hint_heads_are_what_they_claim():
    a = recorded.attention_rows()
    prev, sink = first_previous_token_head(), first_sink_head()
    assert all(top == i - 1 for i, top in enumerate(tops(*prev)) if i)
    assert tops(*sink) == [0] * len(a["tokens"])
    # First in layer-then-head order: no earlier head has the pattern.
    earlier = [(lay, h) for lay in range(1, prev[0] + 1) for h in range(1, a["heads"] + 1) if (lay, h) < prev]
    assert not any(all(t == i - 1 for i, t in enumerate(tops(*lh)) if i) for lh in earlier)
    out = run("attention_any", {})
    assert f"Layer {prev[0]}, head {prev[1]}" in text(out["html"])


def test_layer_and_head_out_of_range_are_refused_by_name():
    a = recorded.attention_rows()
    out = run("attention_any", {"layer": a["layers"] + 1})
    assert not out["ok"] and out["field"] == "layer" and str(a["layers"]) in out["message"]
    assert len(attention_any_frames(1, 1)) == len(a["tokens"])
