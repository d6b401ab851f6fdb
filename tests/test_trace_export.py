"""descent.trace.export: the committed traces.json equals a fresh export and loads without numpy."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources

import pytest
from json_compare import differences as _differences

from descent.trace import export


def test_rounding_keeps_five_significant_figures():
    # 0.7725334 -> 0.77253 and 17.37128 -> 17.371: five significant figures, worked out by hand.
    assert export._round(0.7725334) == 0.77253
    assert export._round(17.37128) == 17.371
    with pytest.raises(ValueError, match="finite"):
        export._round(float("nan"))


def test_dumps_is_deterministic_and_sorted():
    text = export.dumps({"b": 1, "a": [1.5, "é"]})
    assert text == '{"a":[1.5,"é"],"b":1}\n'


def test_differences_catches_a_changed_token_and_a_moved_probability():
    a = {"t": [{"text": " Paris", "p": 0.77312}]}
    assert _differences(a, {"t": [{"text": " Paris", "p": 0.77313}]}) == []  # last-digit noise
    assert _differences(a, {"t": [{"text": " Lyon", "p": 0.77312}]})
    assert _differences(a, {"t": [{"text": " Paris", "p": 0.7}]})


@pytest.mark.slow
def test_committed_file_equals_a_fresh_export():
    # A fresh export runs the real model (cached on disk after the first run); the committed file
    # must match it, so it never goes stale: tokens, ids, text and structure exactly, numbers to
    # EXPORT_REL_TOL (the last of 5 significant figures depends on the order of float32 sums, which
    # differs with BLAS threads and CPUs). Regenerate: python -m descent.trace.export
    pytest.importorskip("numpy")
    fresh = json.loads(export.dumps(export.build()))
    committed = json.loads(export.DATA_PATH.read_text(encoding="utf-8"))
    diffs = _differences(committed, fresh)
    assert not diffs, "src/descent/data/traces.json is stale: run python -m descent.trace.export\n" + "\n".join(diffs[:20])


def test_committed_file_layout():
    data = json.loads(export.DATA_PATH.read_text(encoding="utf-8"))
    assert data["format"] == export.FORMAT and data["top"] == export.TOP == 50
    m = data["model"]
    # SmolLM2-135M config.json: 30 layers, 9 heads, 3 KV heads, vocabulary 49,152.
    assert (m["layers"], m["heads"], m["kv_heads"], m["vocab"]) == (30, 9, 3, 49152)
    from descent.trace.record import PROMPTS

    assert [p["id"] for p in data["prompts"]] == [p["id"] for p in PROMPTS]
    for p in data["prompts"]:
        nxt = p["next"]
        assert len(nxt) == 50
        probs = [c["probability"] for c in nxt]
        assert probs == sorted(probs, reverse=True)
        # the top-50 mass plus the rest is 1 (to the 5-figure rounding of each entry)
        assert sum(probs) + p["rest_probability"] == pytest.approx(1.0, abs=1e-3)
        t = len(p["tokens"])
        att = p["attention_last"]
        assert (len(att), len(att[0]), len(att[0][0])) == (30, 9, t)
        for layer in att:
            for head in layer:
                assert sum(head) == pytest.approx(1.0, abs=1e-3)  # softmax rows
        steps = p["generation"]["steps"]
        # step 0 feeds the whole prompt; every later step feeds one token and sees one more
        assert steps[0]["fed"] == t and steps[0]["context_length"] == t
        for n, s in enumerate(steps[1:], start=1):
            assert s["fed"] == 1 and s["context_length"] == t + n
        # greedy: the chosen token is the top alternative, and step 0's choice is the top candidate
        assert steps[0]["token"]["id"] == nxt[0]["id"]
        for s in steps:
            assert s["alternatives"][0]["id"] == s["token"]["id"]
        if p["generation"]["stop_reason"] == "stop_token":
            assert steps[-1]["token"]["id"] in (0, 2)  # <|endoftext|>, <|im_end|>
            assert all(s["token"]["id"] not in (0, 2) for s in steps[:-1])


def test_core_loads_the_file_without_numpy():
    # A fresh interpreter with numpy made unimportable: the core reader must still work.
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "from descent.widgets.part0 import trace_data, prompt_trace\n"
        "d = trace_data(); p = prompt_trace('capital')\n"
        "assert p['next'][0]['text'] == ' Paris', p['next'][0]\n"
        "print(len(d['prompts']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "5"
    assert resources.files("descent").joinpath("data", "traces.json").is_file()
