"""Two set-ups side by side (issue 26, Compare): ``descent.memory.compare`` and the sizing sandbox's
pinned set-up (``descent.widgets.part5``: the ``pinned`` input that share.js's Pin button fills).

Expected values are ``descent.memory.size`` at each set-up, computed here.
"""

from __future__ import annotations

import re

import pytest

from descent import widgets
from descent.memory import COMPARED, compare, size
from descent.widgets.part5 import parse_pinned, rate_text


def test_compare_gives_both_values_their_ratio_and_the_better_one():
    h100 = size("llama-3.1-70b", "h100-sxm", "fp8", "bf16", 8192, 1)
    h200 = size("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1)
    rows = {c.field: c for c in compare(h100, h200)}
    assert [f for f, _, _ in COMPARED] + ["fits"] == list(rows)
    d = rows["decode_tokens_per_s"]
    assert (d.before, d.after) == (h100.decode_tokens_per_s, h200.decode_tokens_per_s)
    assert d.ratio == pytest.approx(h200.decode_tokens_per_s / h100.decode_tokens_per_s)
    assert d.better == "after"  # the H200's 4.8 TB/s beat the H100's 3.35 TB/s
    assert rows["weights_bytes"].better == ""  # same model, same format: the same bytes
    assert rows["need_bytes"].better == ""  # weights + KV cache: the same on every chip
    assert rows["free_bytes"].better == "after"  # 141 GiB leave more free than 80 GiB
    # Fitting is better: 405B in BF16 fits on neither, 8B fits on both.
    big = size("llama-3.1-405b", "h200", "bf16", "bf16", 8192, 1)
    assert {c.field: c.better for c in compare(big, h200)}["fits"] == "after"


def test_the_sandbox_shows_the_pinned_set_up_beside_the_current_one():
    r = widgets.run("size_it_yourself", {"pinned": "model:llama-3.1-70b;accelerator:h100-sxm", "accelerator": "h200"})
    assert r["ok"], r
    h100 = size("llama-3.1-70b", "h100-sxm", "fp8", "bf16", 8192, 1)
    h200 = size("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1)
    text = re.sub(r"<[^>]+>", "|", r["html"])
    row = re.search(r"Decode ceiling per sequence, tokens/s\|+([^|]+)\|+([^|]+)\|+([^|]+)\|+([^|]+)\|", text).groups()
    assert row[0] == rate_text(h100.decode_tokens_per_s)
    assert row[1] == rate_text(h200.decode_tokens_per_s)
    assert row[3] == "now"
    # Without a pinned set-up there is no comparison.
    assert "Pinned set-up" not in widgets.run("size_it_yourself", {})["html"]


@pytest.mark.parametrize("text, message", [
    ("colour:blue", "the field one of model, weights"),
    ("context:0", "Context must be 1 to 20,000,000 tokens, got 0"),
    ("model:custom", "Model must be one of"),
    ("just text", "each part is field:value"),
])
def test_a_bad_pinned_set_up_gets_a_message_under_its_field(text, message):
    r = widgets.run("size_it_yourself", {"pinned": text})
    assert not r["ok"] and r["field"] == "pinned" and message in r["message"], r


def test_a_pinned_set_up_names_only_what_differs_from_the_defaults():
    assert parse_pinned("batch:4")["batch"] == 4
    assert parse_pinned(" ; model:qwen3-8b ; ")["model"] == "qwen3-8b"
