"""descent.site.values.tokens: the Part 0/1 shortcodes print what the tokenizer, traces and catalog give."""

from __future__ import annotations

import pytest

from descent import tokenizer
from descent.site.shortcodes import resolve
from descent.site.values import kv
from descent.site.values import tokens as v
from descent.widgets.part0 import prompt_trace


def test_token_splits_counts_equal_the_tokenizer():
    table = v.token_splits()
    rows = [ln for ln in table.strip().splitlines()[2:]]
    assert len(rows) == len(v.SPLIT_EXAMPLES)
    for row, (_, text) in zip(rows, v.SPLIT_EXAMPLES.values(), strict=True):
        assert row.rstrip(" |").endswith(f"| {len(tokenizer.encode(text))}")


def test_strawberry_split_by_hand():
    # SmolLM2's merges: " strawberry" is one token; "strawberry" at the start is st|raw|berry.
    assert v.token_split("strawberry_space", "count") == "1"
    assert v.token_split("strawberry", "tokens") == "`st` · `raw` · `berry`"
    # digits are split one per token (SmolLM2 pre-tokenizer): 1234 -> 4 tokens
    assert v.token_split("n1234", "count") == "4"


def test_trace_values():
    p = prompt_trace("capital")
    assert v.trace_value("capital", "top_token") == "`␣Paris`"
    assert v.trace_value("capital", "top_probability") == f"{p['next'][0]['probability'] * 100:.3g}%"
    assert v.trace_value("capital", "prompt_tokens") == str(len(p["tokens"]))
    assert "\n" not in v.trace_value("capital", "reply")
    with pytest.raises(Exception, match="prompt"):
        resolve("<!-- descent:value trace prompt=nope field=top_token -->")


def test_context_windows_llama_by_hand():
    # Llama 3.1 8B (config.json: 32 layers, 8 KV heads, head_dim 128, max_position_embeddings
    # 131,072), BF16: 2 x 32 x 8 x 128 x 131,072 x 2 B = 17,179,869,184 B = 16 GiB exactly.
    table = kv.context_windows("bf16")
    assert "| Llama 3.1 8B | 131,072 | 16 GiB |" in table
    growth = kv.kv_growth("llama-3.1-8b", "bf16")
    # 1,024 tokens: 2 x 32 x 8 x 128 x 1,024 x 2 B = 134,217,728 B = 0.125 GiB
    assert "| 1,024 | 0.125 GiB |" in growth and "| 131,072 | 16 GiB |" in growth


def test_kv_growth_stops_at_the_models_longest_context():
    # SmolLM2-135M's longest context is 8,192 tokens: no 32,768 or 131,072 rows.
    growth = kv.kv_growth("smollm2-135m", "bf16")
    assert "8,192" in growth and "32,768" not in growth
