"""descent.transformer: exact parameter counts, KV-cache elements, FLOPs per token.

Every expected value is worked out by hand in the comment beside it from the config.json values
in the catalog (see src/descent/catalog/models.toml for the sources).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descent.catalog import model, models
from descent.transformer import (
    MAX_CONTEXT_TOKENS,
    attended_tokens,
    attention_flops_per_token,
    beyond_max_context,
    cached_tokens,
    check_context,
    flops_per_token,
    kv_cache_elements,
    kv_elements_per_token,
    kv_elements_per_token_per_layer,
    layer_kind,
    matmul_params_per_token,
    param_counts,
    state_elements,
)

BF16_BYTES = 2  # bytes per BF16 value (IEEE-style 16-bit format: 1 sign, 8 exponent, 7 mantissa bits)
KIB = 2**10


# ---------------------------------------------------------------------------------------------
# KV cache: GQA uses KV heads, head_dim from config, MLA, the factor 2
# ---------------------------------------------------------------------------------------------


def test_gqa_cache_uses_kv_heads_not_query_heads():
    m = model("llama-3.1-70b")
    # K=8 KV heads, d_head=128, L=80: 2 * 8 * 128 * 80 = 163,840 values per token
    assert kv_elements_per_token(m) == 163_840
    # at BF16: 163,840 * 2 = 327,680 bytes = 320 KiB
    assert kv_elements_per_token(m) * BF16_BYTES == 327_680 == 320 * KIB
    # with the 64 query heads it would be 2 * 64 * 128 * 80 = 1,310,720: 8x too much
    assert kv_elements_per_token(m) != 2 * m.num_heads * m.head_dim * m.num_layers
    assert kv_elements_per_token_per_layer(m, 0) == 2 * 8 * 128 == 2048


@pytest.mark.parametrize(
    ("model_id", "per_layer", "naive_per_layer", "layers"),
    [
        # Qwen3-8B: head_dim 128 = 4096 / 32 happens to match; 2 * 8 * 128 = 2048
        ("qwen3-8b", 2048, 2 * 8 * (4096 // 32), 36),
        # Qwen3-235B-A22B: 4096 / 64 = 64 but head_dim 128; 2 * 4 * 128 = 1024 (naive 2 * 4 * 64 = 512)
        ("qwen3-235b-a22b", 1024, 512, 94),
        # gpt-oss: 2880 / 64 = 45 but head_dim 64; 2 * 8 * 64 = 1024 (naive 2 * 8 * 45 = 720)
        ("gpt-oss-20b", 1024, 720, 24),
        ("gpt-oss-120b", 1024, 720, 36),
        # Gemma 3 27B: 5376 / 32 = 168 but head_dim 128; 2 * 16 * 128 = 4096 (naive 2 * 16 * 168 = 5376)
        ("gemma-3-27b", 4096, 5376, 62),
    ],
)
def test_head_dim_comes_from_config_not_hidden_over_heads(model_id, per_layer, naive_per_layer, layers):
    m = model(model_id)
    assert kv_elements_per_token_per_layer(m, 0) == per_layer
    assert kv_elements_per_token(m) == per_layer * layers
    expected_naive = 2 * m.num_kv_heads * (m.hidden_size // m.num_heads)
    assert expected_naive == naive_per_layer
    if model_id != "qwen3-8b":
        assert per_layer != naive_per_layer


def test_mla_caches_one_latent_plus_rope_key_per_layer():
    m = model("deepseek-v3")
    # DeepSeek-V2 paper section 2.1: kv_lora_rank + qk_rope_head_dim = 512 + 64 = 576 per layer,
    # no factor 2, no factor H; 61 layers: 576 * 61 = 35,136 values per token
    assert kv_elements_per_token_per_layer(m, 60) == 576
    assert kv_elements_per_token(m) == 35_136
    # at BF16: 70,272 bytes = 68.6 KiB: tens of KB, not MB
    assert kv_elements_per_token(m) * BF16_BYTES == 70_272
    assert 10_000 < kv_elements_per_token(m) * BF16_BYTES < 100_000
    # full MHA with its 128 heads of 192 (K) + 128 (V) would be 128 * 320 * 61 = 2,498,560 values
    assert kv_elements_per_token(m) * 71 < 128 * (192 + 128) * 61


def test_kv_factor_two_for_keys_and_values():
    base = model("llama-3.1-8b")
    # MQA (K=1): one key and one value of 128 each: 2 * 1 * 128 = 256 per layer
    assert kv_elements_per_token_per_layer(dataclasses.replace(base, num_kv_heads=1), 0) == 256
    # MHA (K=H=32): 2 * 32 * 128 = 8192 per layer
    assert kv_elements_per_token_per_layer(dataclasses.replace(base, num_kv_heads=32), 0) == 8192
    # Llama 3.1 8B itself (GQA, K=8): 2 * 8 * 128 * 32 layers = 65,536 = 128 KiB at BF16
    assert kv_elements_per_token(base) == 65_536
    assert kv_elements_per_token(base) * BF16_BYTES == 128 * KIB


def test_mistral_sliding_window_caps_every_layer():
    m = model("mistral-7b-v0.1")
    per_token = 2 * 8 * 128 * 32  # 65,536 values per token over 32 layers
    # at 32K context every layer holds only 4096 tokens: 65,536 * 4096 = 268,435,456 values
    assert kv_cache_elements(m, 32_768) == 268_435_456 == per_token * 4096
    # below the window the cache grows with the context: 1000 tokens -> 65,536,000
    assert kv_cache_elements(m, 1000) == 65_536_000
    assert kv_cache_elements(m, 4096) == kv_cache_elements(m, 8192) == kv_cache_elements(m, 32_768)
    assert cached_tokens(m, 31, 32_768) == 4096


def test_gemma3_sliding_every_sixth_layer_full_at_128k():
    m = model("gemma-3-27b")
    # 62 layers; layers 6, 12, ..., 60 (1-based) are global: 10 full layers, 52 sliding.
    full = [i for i in range(62) if not m.sliding.is_sliding(i)]
    assert full == [5, 11, 17, 23, 29, 35, 41, 47, 53, 59]
    # at 131,072 tokens: 4096 * (10 * 131,072 + 52 * 1024) = 4096 * 1,363,968 = 5,586,812,928
    assert kv_cache_elements(m, 131_072) == 5_586_812_928
    # without windows it would be 4096 * 62 * 131,072 = 33,285,996,544: about 6x more
    assert kv_elements_per_token(m) * 131_072 == 33_285_996_544


def test_gpt_oss_alternating_window_of_128():
    m = model("gpt-oss-120b")
    # 36 layers: 0, 2, ..., 34 slide (18), 1, 3, ..., 35 are full (18); 1024 values per layer-token.
    assert cached_tokens(m, 0, 131_072) == 128 and cached_tokens(m, 1, 131_072) == 131_072
    # 1024 * (18 * 131,072 + 18 * 128) = 1024 * 18 * 131,200 = 2,418,278,400
    assert kv_cache_elements(m, 131_072) == 2_418_278_400
    # at 100 tokens no window binds: 1024 * 36 * 100 = 3,686,400
    assert kv_cache_elements(m, 100) == 3_686_400


def test_dense_full_attention_cache_is_per_token_times_context():
    m = model("llama-3.1-70b")
    # 163,840 values per token * 131,072 tokens = 21,474,836,480 (40 GiB at BF16)
    assert kv_cache_elements(m, 131_072) == 21_474_836_480
    assert kv_cache_elements(m, 131_072) * BF16_BYTES == 40 * 2**30


# ---------------------------------------------------------------------------------------------
# Context and layer validation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -3, MAX_CONTEXT_TOKENS + 1, 1.5, True, "100", None])
def test_bad_context_raises_value_error_naming_the_range(bad):
    m = model("llama-3.1-70b")
    for fn in (
        kv_cache_elements,
        flops_per_token,
        attention_flops_per_token,
        beyond_max_context,
        check_context,
    ):
        with pytest.raises(ValueError, match=r"Context must be (a whole number from )?1 to 20,000,000 tokens.*131,072"):
            fn(m, bad)


def test_beyond_max_context_is_allowed_but_reported():
    m = model("llama-3.1-70b")  # max_position_embeddings = 131,072
    assert not beyond_max_context(m, 131_072)
    assert beyond_max_context(m, 131_073)
    assert kv_cache_elements(m, 1_000_000) == 163_840 * 1_000_000
    assert kv_cache_elements(m, MAX_CONTEXT_TOKENS) == 163_840 * 20_000_000


@pytest.mark.parametrize("bad", [-1, 80, 1.0, True])
def test_bad_layer_raises(bad):
    m = model("llama-3.1-70b")
    with pytest.raises(ValueError, match=r"layer must be 0 to 79 \(Llama 3.1 70B has 80 layers\)"):
        kv_elements_per_token_per_layer(m, bad)


# ---------------------------------------------------------------------------------------------
# Parameter counts (transformers agrees exactly: tests/test_peer_params.py)
# ---------------------------------------------------------------------------------------------


def test_llama_3_1_8b_by_hand():
    p = param_counts(model("llama-3.1-8b"))
    # embedding 128,256 * 4096 = 525,336,576; untied head the same
    assert p.embedding == p.output_head == 525_336_576
    # attention per layer: Q and O 4096*4096 each, K and V 4096*1024 each = 41,943,040; * 32
    assert p.attention == 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024) == 1_342_177_280
    # FFN: 3 * 4096 * 14,336 = 176,160,768 per layer; * 32
    assert p.dense_ffn == 5_637_144_576
    # norms: 2 * 4096 per layer * 32 + final 4096
    assert p.norms == 266_240
    assert p.experts == p.shared_experts == p.router == p.active_experts == 0
    # 2 * 525,336,576 + 1,342,177,280 + 5,637,144,576 + 266,240 (Hugging Face lists 8.03B)
    assert p.total == p.active == 8_030_261_248


def test_tied_embedding_counted_once():
    p = param_counts(model("smollm2-135m"))
    # embedding 49,152 * 576 = 28,311,552, no separate head
    assert p.embedding == 28_311_552 and p.output_head == 0
    # attention: Q, O 576*576, K, V 576*192 -> 884,736 per layer; FFN 3*576*1536 = 2,654,208;
    # norms 2*576; 30 layers; final norm 576
    expected = 28_311_552 + 30 * (884_736 + 2_654_208 + 1152) + 576
    assert expected == 134_515_008  # SmolLM2-135M's known count
    assert p.total == expected


def test_mixtral_total_vs_active():
    p = param_counts(model("mixtral-8x7b"))
    # one expert: 3 * 4096 * 14,336 = 176,160,768; 8 per layer, 32 layers = 45,097,156,608
    assert p.experts == 45_097_156_608
    # a token uses 2 per layer: 2 * 176,160,768 * 32 = 11,274,289,152
    assert p.active_experts == 11_274_289_152
    assert p.router == 8 * 4096 * 32 == 1_048_576
    # 2 * 131,072,000 (embedding + head) + 1,342,177,280 (attention) + 45,097,156,608
    #   + 1,048,576 (router) + 266,240 (norms) = 46,702,792,704  (published 46.7B)
    assert p.total == 46_702_792_704
    # active = total - 45,097,156,608 + 11,274,289,152 = 12,879,925,248  (published 12.9B)
    assert p.active == 12_879_925_248
    assert p.dense_ffn == 0


def test_all_experts_active_means_active_equals_total():
    m = model("mixtral-8x7b")
    every = dataclasses.replace(m, moe=dataclasses.replace(m.moe, experts_per_token=8))
    assert param_counts(every).active == param_counts(every).total


def test_deepseek_v3_mla_dense_layers_and_shared_expert():
    p = param_counts(model("deepseek-v3"))
    # MLA per layer: W^DQ 7168*1536 = 11,010,048; W^UQ 1536*128*192 = 37,748,736;
    # W^DKV+W^KR 7168*576 = 4,128,768; W^UK+W^UV 512*128*256 = 16,777,216; O 128*128*7168 = 117,440,512
    # -> 187,105,280 per layer, * 61 = 11,413,422,080
    assert p.attention == 11_413_422_080
    # 3 dense layers of 3 * 7168 * 18,432 = 396,361,728
    assert p.dense_ffn == 3 * 396_361_728
    # 58 MoE layers * 256 experts * 3 * 7168 * 2048 (44,040,192 each)
    assert p.experts == 58 * 256 * 44_040_192
    assert p.shared_experts == 58 * 44_040_192
    assert p.active_experts == 58 * 8 * 44_040_192
    # router: 256 * 7168 weights + 256 score-correction biases, 58 layers
    assert p.router == 58 * (256 * 7168 + 256)
    # norms: 2*7168 + q_a 1536 + kv_a 512 per layer, 61 layers, + final 7168
    assert p.norms == 61 * 16_384 + 7168
    # 671B total without the 14B MTP module (DeepSeek-V3 report)
    assert p.total == 671_026_419_200


def test_gpt_oss_biases_and_sinks():
    m = model("gpt-oss-20b")
    p = param_counts(m)
    # per layer: Q 2880 x 4096 (+4096 bias), K and V 2880 x 512 (+512 each), O 4096 x 2880 (+2880),
    # one sink per query head (64)
    per_layer = 2880 * 4096 + 4096 + 2 * (2880 * 512 + 512) + 4096 * 2880 + 2880 + 64
    assert p.attention == 24 * per_layer
    # one expert with biases: 3 * 2880 * 2880 + 2 * 2880 (gate, up) + 2880 (down) = 24,891,840
    assert p.experts == 24 * 32 * 24_891_840
    # router: 32 x 2880 weights + 32 biases per layer
    assert p.router == 24 * (32 * 2880 + 32)
    # gpt-oss model card table 1: 20.91B total; 3.61B active without the embedding table
    assert round(p.total / 1e7) == 2091
    assert round((p.active - p.embedding) / 1e7) == 361


def test_gemma3_extra_norms_and_qk_norm():
    p = param_counts(model("gemma-3-27b"))
    # 4 norms of 5376 + q_norm and k_norm of 128 each, 62 layers, + final 5376
    assert p.norms == 62 * (4 * 5376 + 2 * 128) + 5376
    assert p.output_head == 0  # tied
    # Gemma 3 report table 1: 25,600M non-embedding parameters
    assert round(p.non_embedding / 1e8) == 256


def test_qwen3_non_embedding_matches_card():
    # Qwen3-8B card: 6.95B non-embedding (embedding and untied head both excluded)
    assert round(param_counts(model("qwen3-8b")).non_embedding / 1e7) == 695


# ---------------------------------------------------------------------------------------------
# FLOPs per token
# ---------------------------------------------------------------------------------------------


def test_flops_per_token_llama_8b():
    m = model("llama-3.1-8b")
    # matmul weights: attention 1,342,177,280 + FFN 5,637,144,576 + head 525,336,576 = 7,504,658,432
    assert matmul_params_per_token(m) == 7_504_658_432
    # attention per context token: 32 layers * 2 * 32 heads * (128 + 128) = 524,288 FLOP
    assert attention_flops_per_token(m, 1) == 524_288
    assert attention_flops_per_token(m, 8192) == 524_288 * 8192
    assert flops_per_token(m, 8192) == 2 * 7_504_658_432 + 524_288 * 8192


def test_flops_tied_head_still_multiplies():
    m = model("smollm2-135m")
    # the tied head is still a 576 x 49,152 matmul: 28,311,552 of the matmul weights
    assert matmul_params_per_token(m) == param_counts(m).total - param_counts(m).norms
    assert matmul_params_per_token(m) == 134_515_008 - (30 * 1152 + 576)


def test_flops_moe_counts_active_experts_only():
    m = model("mixtral-8x7b")
    p = param_counts(m)
    # matmul weights = active - embedding lookup - norms (Mixtral has no biases; the untied head
    # is in both)
    assert matmul_params_per_token(m) == p.active - p.embedding - p.norms
    assert matmul_params_per_token(m) == 12_879_925_248 - 131_072_000 - 266_240


def test_flops_mla_and_sliding():
    ds = model("deepseek-v3")
    # per layer and context token: 2 * 128 heads * (192 + 128) = 81,920; 61 layers
    assert attention_flops_per_token(ds, 10) == 61 * 81_920 * 10
    mi = model("mistral-7b-v0.1")
    # every layer capped at 4096: 32 * 2 * 32 * 256 * 4096
    assert attention_flops_per_token(mi, 32_768) == 32 * 2 * 32 * 256 * 4096


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

ALL = list(models().values())
model_st = st.sampled_from(ALL)
context_st = st.integers(min_value=1, max_value=2_000_000)


def _period(m) -> int:
    """Layers in one repeat of the sliding, chunked or linear/full pattern (1 when all layers are alike)."""
    pattern = m.sliding or m.chunked or m.linear_attention
    return pattern.full_attention_every if pattern and pattern.full_attention_every else 1


@settings(max_examples=60, deadline=None)
@given(m=model_st, n=st.integers(min_value=1, max_value=20), context=context_st)
def test_kv_linear_in_layers(m, n, context):
    p = _period(m)
    one = dataclasses.replace(m, num_layers=p)
    many = dataclasses.replace(m, num_layers=n * p)
    assert kv_cache_elements(many, context) == n * kv_cache_elements(one, context)
    assert kv_elements_per_token(many) == n * kv_elements_per_token(one)


@settings(max_examples=80, deadline=None)
@given(m=model_st, a=context_st, b=context_st)
def test_kv_monotone_in_context(m, a, b):
    lo, hi = sorted((a, b))
    assert kv_cache_elements(m, lo) <= kv_cache_elements(m, hi)
    # never more than every attention layer holding every token, plus the fixed linear-layer state
    assert kv_cache_elements(m, hi) <= kv_elements_per_token(m) * hi + state_elements(m)
    if m.chunked is None:
        assert attention_flops_per_token(m, lo) <= attention_flops_per_token(m, hi)
    else:  # a chunked layer's span restarts at each chunk boundary; capped by full-length attention
        full = dataclasses.replace(m, chunked=None)
        assert attention_flops_per_token(m, hi) <= attention_flops_per_token(full, hi)


@settings(max_examples=40, deadline=None)
@given(m=model_st, n=st.integers(min_value=4, max_value=200))
def test_params_affine_in_layers(m, n):
    # adding one repeat of the layer pattern past the dense prefix adds the same amount every time
    p = _period(m)
    step = [param_counts(dataclasses.replace(m, num_layers=k)).total for k in (n, n + p, n + 2 * p)]
    assert step[1] - step[0] == step[2] - step[1] > 0


@pytest.mark.parametrize("m", ALL, ids=[m.id for m in ALL])
def test_active_never_exceeds_total(m):
    p = param_counts(m)
    assert 0 < p.active <= p.total
    assert (p.active < p.total) == m.is_moe


# ---------------------------------------------------------------------------------------------
# Late-2026 rows: chunked attention (Llama 4 Scout), a hybrid with linear attention (Qwen3-Next),
# MLA at a trillion parameters (Kimi K2). Shapes from each config.json (catalog sources).
# ---------------------------------------------------------------------------------------------


def test_chunked_layers_hold_at_most_one_chunk():
    m = model("llama-4-scout")
    assert [layer_kind(m, i) for i in range(8)] == ["chunked"] * 3 + ["full"] + ["chunked"] * 3 + ["full"]
    # per token and layer: 2 * 8 KV heads * 128 = 2,048; 48 layers -> 98,304
    assert kv_elements_per_token(m) == 98_304
    # up to one chunk every layer holds every token: 98,304 * 8,192 = 805,306,368
    assert kv_cache_elements(m, 8192) == 805_306_368
    # at 32,768: 12 full layers hold 32,768 tokens, 36 chunked ones 8,192:
    # 12 * 2,048 * 32,768 + 36 * 2,048 * 8,192 = 805,306,368 + 603,979,776
    assert kv_cache_elements(m, 32_768) == 1_409_286_144
    assert cached_tokens(m, 0, 32_768) == 8192 and cached_tokens(m, 3, 32_768) == 32_768


def test_chunked_attention_restarts_at_each_chunk():
    m = model("llama-4-scout")
    # token 8,193 opens a new chunk: a chunked layer attends to itself only; token 8,192 to 8,192
    assert attended_tokens(m, 0, 8193) == 1 and attended_tokens(m, 0, 8192) == 8192
    assert attended_tokens(m, 3, 8193) == 8193  # the full-attention layer sees everything
    # per attended token and layer: 2 * 40 heads * (128 + 128) = 20,480 FLOP
    assert attention_flops_per_token(m, 8193) == 20_480 * (36 * 1 + 12 * 8193)
    assert attention_flops_per_token(m, 8193) < attention_flops_per_token(m, 8192)


def test_hybrid_linear_layers_keep_a_fixed_state():
    m = model("qwen3-next-80b-a3b")
    kinds = [layer_kind(m, i) for i in range(m.num_layers)]
    assert kinds.count("linear") == 36 and kinds[3] == kinds[47] == "full"
    # only the 12 full-attention layers grow: 12 * 2 * 2 KV heads * 256 = 12,288 values per token
    assert kv_elements_per_token(m) == 12_288
    assert kv_elements_per_token_per_layer(m, 0) == 0 and cached_tokens(m, 0, 100_000) == 0
    # the 36 linear layers keep 32 * 128 * 128 + 3 * 8,192 = 548,864 values each, at any context
    assert state_elements(m) == 36 * 548_864 == 19_759_104
    assert kv_cache_elements(m, 1) == 12_288 + 19_759_104
    assert kv_cache_elements(m, 8192) == 12_288 * 8192 + 19_759_104 == 120_422_400
    # counted as if all 48 layers cached keys and values, 8,192 tokens would take 4x the growing part
    naive = 48 * 2 * 2 * 256 * 8192
    assert naive == 4 * 12_288 * 8192 and kv_cache_elements(m, 8192) < naive


def test_hybrid_attention_flops_constant_on_linear_layers():
    m = model("qwen3-next-80b-a3b")
    # linear layer: 2 FLOP * 3 passes * 32 value heads * 128 * 128 = 3,145,728 FLOP per token, any context
    # full layer: 2 * 16 heads * (256 + 256) = 16,384 FLOP per attended token
    for t in (1, 1000, 262_144):
        assert attention_flops_per_token(m, t) == 36 * 3_145_728 + 12 * 16_384 * t


def test_hybrid_and_gated_parameter_counts():
    m = model("qwen3-next-80b-a3b")
    p = param_counts(m)
    # one linear layer: in_proj_qkvz 2,048 x (2 * 2,048 + 2 * 4,096) = 25,165,824; in_proj_ba
    # 2,048 x 64 = 131,072; out_proj 4,096 x 2,048 = 8,388,608; conv 8,192 x 4 = 32,768;
    # dt_bias + A_log 64 -> 33,718,336
    linear = 33_718_336
    # one full layer: q 2,048 x 2 * 16 * 256 (query and output gate) = 16,777,216; k, v
    # 2 * 2,048 x 512 = 2,097,152; o 4,096 x 2,048 = 8,388,608 -> 27,262,976
    full = 27_262_976
    assert p.attention == 36 * linear + 12 * full
    # router 512 x 2,048 plus the shared expert's 2,048-wide gate, 48 layers
    assert p.router == 48 * (512 * 2048 + 2048)
    assert p.total == 79_674_391_296  # = transformers' Qwen3NextForCausalLM (tests/test_peer_params.py)


def test_kimi_k2_is_deepseek_v3_shaped():
    m = model("kimi-k2")
    # MLA: 512 latent + 64 RoPE key per layer and token, 61 layers = 35,136 (as DeepSeek-V3)
    assert kv_elements_per_token(m) == 35_136 == kv_elements_per_token(model("deepseek-v3"))
    p = param_counts(m)
    # routed experts: 60 MoE layers * 384 * 3 * 7,168 * 2,048
    assert p.experts == 60 * 384 * 3 * 7168 * 2048
    assert p.total == 1_026_408_232_448  # transformers DeepseekV3ForCausalLM + e_score_correction_bias


def test_remembered_results_do_not_answer_for_a_bool():
    # The per-model counts are memoized (transformer._memo); True == 1 and hash(True) == hash(1), so an
    # untyped cache answered kv_cache_elements(m, True) with the result for context 1 (found in Pyodide,
    # where the tests run in another order). Each check must still see the bad value.
    m = model("llama-3.1-70b")
    assert kv_cache_elements(m, 1) == 163_840  # 2 x 8 KV heads x 128 x 80 layers, one token
    for fn in (kv_cache_elements, flops_per_token, attention_flops_per_token):
        fn(m, 1)
        with pytest.raises(ValueError, match="Context must be"):
            fn(m, True)
