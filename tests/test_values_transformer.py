"""Part 1's page-only shortcodes (descent.site.values.transformer), each with a hand-worked value."""

from __future__ import annotations

import math

import pytest

from descent import transformer
from descent.site.shortcodes import ShortcodeError, resolve
from descent.units import format_number, format_percent


def v(code: str) -> str:
    return resolve(f"<!-- descent:{code} -->", "part-1-the-transformer.md")


def test_stack_count_is_gpt2_small_by_default():
    # 12 layers x (attention 4 x 768^2 = 2,359,296 + FFN 2 x 768 x 3,072 = 4,718,592) = 84,934,656.
    assert v("value stack_count unit=exact") == "84,934,656"
    assert v("value stack_count") == "84.9 million"
    # Gated FFN: 3 matrices instead of 2 -> 12 x (2,359,296 + 7,077,888) = 113,246,208.
    assert v("value stack_count gated=yes unit=exact") == "113,246,208"
    with pytest.raises(ShortcodeError, match="layers='0' is not allowed"):
        v("value stack_count layers=0")


def test_softmax_saturation_fields():
    assert v("value softmax_saturation field=keys") == "16"
    r = transformer.softmax_saturation(128)
    # Dot products of two standard-normal 128-vectors have standard deviation sqrt(128) = 11.3;
    # a sample of 16 keys lands within a factor of two of it.
    assert math.sqrt(128) / 2 < r["score_std"] < math.sqrt(128) * 2
    assert r["unscaled_max"] > r["scaled_max"]  # without the division the softmax saturates
    assert v("value softmax_saturation field=score_std d=128") == format_number(r["score_std"], 3, trim=True)
    assert v("value softmax_saturation field=scaled_max d=128").endswith("%")


def test_embedding_facts_come_from_the_recorded_table():
    # SmolLM2-135M: vocabulary 49,152 and width 576 (its config.json).
    assert v("value embedding_fact field=vocab") == "49,152"
    assert v("value embedding_fact field=d_model") == "576"
    with pytest.raises(ShortcodeError, match="needs analogy="):
        v("value embedding_fact field=cosine")


def test_gqa_savings_row_for_llama_70b():
    table = v("table gqa_savings")
    row = next(line for line in table.splitlines() if line.startswith("| Llama 3.1 70B"))
    # 64 query heads share 8 KV heads: 320 KiB per token in BF16 instead of 2,560 KiB, 8x smaller.
    assert row == "| Llama 3.1 70B | 64 | 8 | GQA | 320 KiB | 2,560 KiB | 8x |"


def test_part1_stacks_row_for_llama_70b():
    table = v("table part1_stacks")
    row = next(line for line in table.splitlines() if line.startswith("| Llama 3.1 70B"))
    # Exact total 70,553,706,496 (checked against transformers by the peer test) -> 70.6 billion.
    assert "| 70.6 billion | 70.6 billion |" in row and "| 28,672 |" in row


def test_moe_active_share_is_a_quantity():
    # gpt-oss-120b: active / total from descent.transformer.param_counts.
    from descent import catalog

    pc = transformer.param_counts(catalog.model("gpt-oss-120b"))
    assert v("value moe_active_share model=gpt-oss-120b") == format_percent(pc.active / pc.total)
    with pytest.raises(ShortcodeError, match="is dense"):
        v("value moe_active_share model=llama-3.1-70b")
