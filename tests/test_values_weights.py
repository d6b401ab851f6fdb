"""Part 2's shortcodes (descent.site.values.weights): each resolves, and prints what the core computes."""

from __future__ import annotations

import pytest

from descent import published
from descent.site import shortcodes as S


def r(code: str) -> str:
    return S.resolve(code, "part-2-weights-as-numbers.md").strip()


@pytest.mark.parametrize("code,want", [
    ("<!-- descent:value float_fact format=fp16 field=max -->", "65,504"),
    ("<!-- descent:value float_fact format=fp8_e4m3 field=max -->", "448"),
    ("<!-- descent:value float_fact format=bf16 field=exponent_bits -->", "8"),
    # 0.1 -> 0.1015625 in E4M3: relative error 0.0015625 / 0.1 = 1.6%.
    ("<!-- descent:value float_round format=fp8_e4m3 value=0.1 -->", "0.1015625"),
    ("<!-- descent:value float_round format=fp8_e4m3 value=0.1 field=relative_error -->", "1.6%"),
    ("<!-- descent:value float_values -->", "0, 0.5, 1, 1.5, 2, 3, 4, 6"),
    ("<!-- descent:value gguf_fact format=Q4_K field=bits_per_weight -->", "4.5"),
    ("<!-- descent:value gguf_fact format=Q4_K_M field=published_bpw -->", "4.8944"),
    ("<!-- descent:value precision_fact weights=mxfp4 field=bits_per_weight -->", "4.25"),
    ("<!-- descent:value precision_fact weights=nvfp4 field=block_size -->", "16"),
    # GPTQ README, LLaMa-65B: 3.92 / 3.53 - 1 = 11.0%.
    ("<!-- descent:value gptq_change model=LLaMa-65B column=4bit-RTN -->", "11%"),
    ("<!-- descent:value published key=gptq_65b_fp16 -->", "3.53"),
    ("<!-- descent:value published key=gptq_30b_fp16 -->", "4.10"),
    ("<!-- descent:value gptq_bytes model=LLaMa-13B bits=4 -->", "6.5 GB"),
    ("<!-- descent:value rule_bits -->", "4.8"),
    ("<!-- descent:value context_tokens context=131072 -->", "131,072 tokens"),
    # Reading the file's summary takes about 4 s: slow.
    pytest.param("<!-- descent:value gguf_file_fact field=tensors -->", "272", marks=pytest.mark.slow),
    pytest.param("<!-- descent:value gguf_file_fact field=avg_bpw -->", "5.74", marks=pytest.mark.slow),
])
def test_values(code, want):
    assert r(code) == want


def test_published_numbers_are_the_readme_s():
    # IST-DASLab/gptq README, "Here is a summary of LLaMa results" (the issue quotes 65B: 3.53, 3.92, 3.84).
    assert published.GPTQ_LLAMA["LLaMa-65B"][:3] == (3.53, 3.92, 3.84)
    assert published.GPTQ_LLAMA["LLaMa-13B"][2] < published.GPTQ_LLAMA["LLaMa-7B"][0]  # 5.36 < 5.68
    assert published.AIME_DISTILLED["DeepSeek-R1-Distill-Qwen-7B"] == 55.5


@pytest.mark.parametrize("code", [
    "<!-- descent:table float_formats -->", "<!-- descent:table gguf_block_types -->",
    "<!-- descent:table gguf_mixes -->", "<!-- descent:table gptq_llama -->", "<!-- descent:table q4_rule -->",
    "<!-- descent:table kv_quant -->", "<!-- descent:table gguf_file -->", "<!-- descent:table quant_tensor -->",
])
def test_tables_resolve(code):
    assert r(code).startswith("|")


def test_bad_arguments_fail():
    with pytest.raises(S.ShortcodeError):
        r("<!-- descent:value float_round format=fp16 value=0x3C00 -->")
    with pytest.raises(S.ShortcodeError):
        r("<!-- descent:value gguf_fact format=Q3_K_M field=published_bpw -->")
    with pytest.raises(S.ShortcodeError):
        r("<!-- descent:value float_fact format=e8m0 field=min_subnormal -->")


def test_rule_of_thumb_breaks_where_the_page_says():
    # gpt-oss keeps its MXFP4 experts in a Q4_K_M file (descent.weights), so 0.6 GB per billion
    # overshoots; SmolLM2's head and 576-wide rows get bigger types, so the rule falls short.
    assert r("<!-- descent:value q4_rule_fact model=gpt-oss-120b field=gap -->").startswith("12")
    assert r("<!-- descent:value q4_rule_fact model=smollm2-135m field=gap -->").startswith("-")
    assert r("<!-- descent:value q4_rule_fact model=llama-3.1-70b field=rule -->") == "42 GB"  # 0.6 x 70


def test_part2_file_size_and_rule_gaps_say_what_they_are():
    """Issue 23: Part 2's 96.6 MB is the tensor data, the file is larger (Part 0's download); the rule's
    signed gaps have the direction the prose gives them (short for SmolLM2, over for gpt-oss-120b)."""
    from pathlib import Path

    from descent import quantities as Q
    from descent.site.shortcodes import resolve

    tensors = resolve("<!-- descent:value gguf_file_fact field=bytes -->")
    whole = resolve("<!-- descent:value model_download field=size -->")
    assert tensors.endswith(" MB") and whole.endswith(" MB") and float(tensors[:-3]) < float(whole[:-3])
    page = Path(__file__).parents[1].joinpath("docs", "part-2-weights-as-numbers.md").read_text()
    flat = " ".join(page.split())
    assert ("Their data takes <!-- descent:value gguf_file_fact field=bytes -->; with the tokenizer and other "
            "metadata, the whole file is <!-- descent:value model_download field=size -->") in flat
    assert Q.get("q4_rule_gap")(model="smollm2-135m") < 0 < Q.get("q4_rule_gap")(model="gpt-oss-120b")
    assert "field=gap --> short" not in page
    # In a sentence the gap is said by its size and direction, never as a signed percentage ("falls
    # -22% short"): the verdict reads the same quantity.
    for model, words in (("smollm2-135m", "falls "), ("gpt-oss-120b", "overshoots the file by ")):
        said = resolve(f"<!-- descent:value q4_rule_fact model={model} field=verdict -->")
        gap = Q.get("q4_rule_gap")(model=model)
        assert said.startswith(words) and "-" not in said
        assert Q.get("q4_rule_gap").format(abs(gap), sig=2) in said
    assert "field=gap -->" not in page
