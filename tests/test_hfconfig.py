"""descent.hfconfig: a config.json read into a Model, architecture by architecture, and its errors.

Small configs written here (so this module also runs inside Pyodide); the released files of every
catalog model are checked in test_hfconfig_data.py. Each expected field follows the transformers
5.x configuration class and modeling code of its model_type, cited next to it.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from descent import hfconfig, transformer
from descent.catalog import MLA, ChunkedAttention, LinearAttention, MoE, SlidingWindow
from descent.hfconfig import ConfigError, model_from_config, read_config

SETTINGS = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])

#: A small Llama: D 64, L 4, H 4, K 2, F 128, V 100.
LLAMA = {
    "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 2048,
    "tie_word_embeddings": False,
}


def cfg(**changes):
    """LLAMA with some keys changed (a value of ... deletes the key)."""
    out = {**LLAMA, **changes}
    return {k: v for k, v in out.items() if v is not ...}


def read(d: dict):
    return read_config(json.dumps(d))


# -- every architecture -------------------------------------------------------------------------


def test_llama_fields_and_hand_count():
    m = read(LLAMA)
    assert (m.hidden_size, m.num_layers, m.num_heads, m.num_kv_heads, m.intermediate_size, m.vocab_size) == (
        64, 4, 4, 2, 128, 100)
    assert m.head_dim == 16  # no head_dim: hidden_size // num_attention_heads = 64 // 4 (LlamaConfig)
    assert m.max_context == 2048 and not m.tie_embeddings and m.moe is m.mla is m.sliding is None
    assert m.id == hfconfig.CUSTOM_ID and m.params_total_published == 0
    # By hand: embedding 100*64 = 6,400 and an untied head 6,400; per layer q 64*64 = 4,096,
    # k and v 2*64*(2*16) = 4,096, o 4,096, gated FFN 3*64*128 = 24,576, two norms 128:
    # 36,992; four layers 147,968; final norm 64. Total 6,400 + 6,400 + 147,968 + 64 = 160,832.
    assert transformer.param_counts(m).total == 160_832
    # KV per token: 2 (K and V) * 2 heads * 16 * 4 layers = 256 values.
    assert transformer.kv_elements_per_token(m) == 256


def test_llama_biases_and_defaults_are_recorded():
    m = read(cfg(attention_bias=True, mlp_bias=True, num_key_value_heads=..., max_position_embeddings=...))
    assert m.attention_bias and m.attention_out_bias and m.mlp_bias  # LlamaAttention: q, k, v and o
    assert m.num_kv_heads == 4  # None -> as many as the query heads (LlamaConfig)
    assert m.max_context == 2048  # LlamaConfig default max_position_embeddings
    assert "LlamaConfig default 2048" in m.source_of("max_context")
    assert "64 / 4 = 16" in m.source_of("head_dim")
    assert m.source_of("hidden_size").startswith("config.json, model_type llama")


def test_mistral_slides_on_every_layer_unless_null():
    m = read(cfg(model_type="mistral", sliding_window=32))
    assert m.sliding == SlidingWindow(32, None)
    assert read(cfg(model_type="mistral", sliding_window=None)).sliding is None
    # MistralConfig's default sliding_window is 4096 when the key is absent.
    assert read(cfg(model_type="mistral")).sliding == SlidingWindow(4096, None)


def test_mixtral_experts_are_intermediate_size_wide():
    m = read(cfg(model_type="mixtral", num_local_experts=8, num_experts_per_tok=2, sliding_window=None))
    assert m.moe == MoE(num_experts=8, experts_per_token=2, expert_intermediate_size=128)
    assert m.sliding is None


def test_qwen2_has_qkv_bias_and_no_window_unless_used():
    m = read(cfg(model_type="qwen2", sliding_window=32768, use_sliding_window=False))
    assert m.attention_bias and not m.attention_out_bias  # Qwen2Attention: bias=True on q, k, v; o none
    assert m.sliding is None
    # use_sliding_window with max_window_layers = 0: every layer slides.
    m = read(cfg(model_type="qwen2", sliding_window=64, use_sliding_window=True, max_window_layers=0))
    assert m.sliding == SlidingWindow(64, None)
    # ... with max_window_layers >= layers: none does.
    assert read(cfg(model_type="qwen2", sliding_window=64, use_sliding_window=True, max_window_layers=4)).sliding is None


def test_qwen2_full_lower_layers_then_sliding_is_refused():
    with pytest.raises(ConfigError, match="layer_types") as e:
        read(cfg(model_type="qwen2", sliding_window=64, use_sliding_window=True, max_window_layers=2))
    assert e.value.key == "layer_types"


def test_qwen3_qk_norm_and_head_dim_default():
    m = read(cfg(model_type="qwen3"))
    assert m.qk_norm and m.head_dim == 128  # Qwen3Config: head_dim defaults to 128, not D / H
    assert "Qwen3Config default 128" in m.source_of("head_dim")


def test_qwen3_moe_first_dense_layers_from_mlp_only_layers():
    m = read(cfg(model_type="qwen3_moe", head_dim=16, num_experts=16, num_experts_per_tok=4,
                 moe_intermediate_size=32, mlp_only_layers=[0, 1]))
    assert m.qk_norm
    assert m.moe == MoE(num_experts=16, experts_per_token=4, expert_intermediate_size=32, first_dense_layers=2)
    with pytest.raises(ConfigError, match="first layers") as e:
        read(cfg(model_type="qwen3_moe", num_experts=16, num_experts_per_tok=4, moe_intermediate_size=32,
                 mlp_only_layers=[1]))
    assert e.value.key == "mlp_only_layers"
    with pytest.raises(ConfigError, match="interleaved"):
        read(cfg(model_type="qwen3_moe", num_experts=16, num_experts_per_tok=4, moe_intermediate_size=32,
                 decoder_sparse_step=2))


def test_qwen2_moe_shared_expert_and_its_gate():
    m = read(cfg(model_type="qwen2_moe", num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                 shared_expert_intermediate_size=96))
    assert m.moe == MoE(8, 2, 32, num_shared_experts=1, shared_expert_intermediate_size=96, shared_expert_gate=True)
    assert m.attention_bias  # qkv_bias defaults to true
    # The gate is one D x 1 matrix per layer: 64 parameters x 4 layers on top of the router.
    pc = transformer.param_counts(m)
    assert pc.router == 4 * (8 * 64 + 64)
    # num_experts 0 is a dense model (transformers: an MoE layer needs num_experts > 0).
    assert read(cfg(model_type="qwen2_moe", num_experts=0)).moe is None


def test_gemma2_four_norms_and_alternating_window():
    m = read(cfg(model_type="gemma2", sliding_window=16, tie_word_embeddings=...))
    assert m.norms_per_layer == 4 and not m.qk_norm
    assert m.tie_embeddings  # Gemma2Config default
    assert m.head_dim == 256  # Gemma2Config default head_dim
    assert m.sliding == SlidingWindow(16, 2)  # layer 0 slides, layer 1 is full, ...


def test_gemma3_text_pattern_from_sliding_window_pattern_or_layer_types():
    m = read(cfg(model_type="gemma3_text", num_hidden_layers=12, sliding_window=16, sliding_window_pattern=3))
    assert m.qk_norm and m.norms_per_layer == 4
    assert m.sliding == SlidingWindow(16, 3)
    types = ["sliding_attention"] * 5 + ["full_attention"]
    m = read(cfg(model_type="gemma3_text", num_hidden_layers=12, sliding_window=16, layer_types=types * 2))
    assert m.sliding == SlidingWindow(16, 6)
    assert read(cfg(model_type="gemma3_text", vocab_size=...)).vocab_size == 262_208  # Gemma3TextConfig default


def test_gemma3_wrapper_reads_text_config_and_top_level_tie():
    inner = {k: v for k, v in cfg(model_type="gemma3_text", sliding_window=16).items() if k != "tie_word_embeddings"}
    m = read({"model_type": "gemma3", "text_config": inner, "vision_config": {"hidden_size": 8}})
    assert m.hidden_size == 64 and m.tie_embeddings  # Gemma3TextConfig default: tied
    assert "text_config" in m.sources["default"] and "not counted" in m.params_published_note
    m = read({"model_type": "gemma3", "text_config": inner, "tie_word_embeddings": False})
    assert not m.tie_embeddings
    # An unknown wrapper whose text_config is a known text model: the text model is read.
    m = read({"model_type": "llava_next", "text_config": cfg(model_type="mistral", sliding_window=None)})
    assert m.num_layers == 4 and "llava_next" in m.sources["default"]


def test_gpt_oss_sinks_biases_and_layer_types():
    m = read(cfg(model_type="gpt_oss", num_local_experts=8, num_experts_per_tok=2, sliding_window=32,
                 layer_types=["sliding_attention", "full_attention"] * 2))
    assert m.attention_sinks and m.attention_bias and m.attention_out_bias
    assert m.moe == MoE(8, 2, 128, router_bias=True, expert_bias=True)
    assert m.sliding == SlidingWindow(32, 2)
    # The original release's experts_per_token stands in for num_experts_per_tok.
    m = read(cfg(model_type="gpt_oss", num_local_experts=8, experts_per_token=3))
    assert m.moe.experts_per_token == 3


def test_deepseek_v3_mla_and_moe():
    d = cfg(model_type="deepseek_v3", num_key_value_heads=4, q_lora_rank=24, kv_lora_rank=16, qk_rope_head_dim=8,
            qk_nope_head_dim=16, v_head_dim=16, n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1,
            moe_intermediate_size=32, first_k_dense_replace=1)
    m = read(d)
    assert m.mla == MLA(q_lora_rank=24, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16)
    assert m.head_dim == 24  # qk_nope + qk_rope
    assert m.moe == MoE(8, 2, 32, num_shared_experts=1, shared_expert_intermediate_size=32, first_dense_layers=1,
                        router_score_correction_bias=True)
    # MLA caches one latent plus one RoPE key per layer: (16 + 8) x 4 layers.
    assert transformer.kv_elements_per_token(m) == 96
    # q_lora_rank null: queries are not compressed (DeepSeek-V2-Lite).
    assert read({**d, "q_lora_rank": None}).mla.q_lora_rank == 0
    # deepseek_v2 has no score-correction bias.
    assert not read({**d, "model_type": "deepseek_v2"}).moe.router_score_correction_bias


def test_phi3_window_on_every_layer():
    m = read(cfg(model_type="phi3", sliding_window=2047))
    assert m.sliding == SlidingWindow(2047, None) and not m.attention_bias


#: A small Llama 4 text model: 8 layers, experts 32 wide (intermediate_size), dense layers 128
#: wide (intermediate_size_mlp), chunks of 64 tokens.
LLAMA4 = cfg(model_type="llama4_text", num_hidden_layers=8, head_dim=16, intermediate_size=32, intermediate_size_mlp=128,
             num_local_experts=4, num_experts_per_tok=1, attention_chunk_size=64)


def test_llama4_chunked_attention_and_shared_expert():
    m = read(LLAMA4)
    assert m.intermediate_size == 128  # intermediate_size_mlp: a dense layer's width (Llama4TextConfig)
    # Llama4TextMoe: a shared expert as wide as a routed one (intermediate_size); Llama4Router: a
    # sigmoid weight on the chosen expert, not renormalised.
    assert m.moe == MoE(4, 1, 32, num_shared_experts=1, shared_expert_intermediate_size=32, router_scoring="sigmoid",
                        router_normalize=False)
    # no_rope_layers absent: every no_rope_layer_interval-th (default 4) layer has no RoPE and is full.
    assert m.chunked == ChunkedAttention(64, 4)
    assert "Llama4TextConfig default 4" in m.source_of("chunked")
    assert not m.qk_norm and m.sliding is m.linear_attention is None  # use_qk_norm is an L2 norm: no weights
    # By hand: embedding and untied head 2 x 100 x 64 = 12,800; per layer attention q and o
    # 2 x 64 x 64 = 8,192, k and v 2 x 64 x 32 = 4,096, router 64 x 4 = 256, experts 4 x 3 x 64 x 32
    # = 24,576, shared expert 6,144, norms 128: 43,392; 8 layers 347,136; final norm 64.
    # 12,800 + 347,136 + 64 = 360,000 (transformers' Llama4ForCausalLM on the meta device agrees).
    assert transformer.param_counts(m).total == 360_000
    # Cache at 4,096 tokens: 2 x 2 heads x 16 = 64 values per token and layer; the 6 chunked layers
    # keep one chunk (64 tokens), the 2 full ones all 4,096: 6 x 64 x 64 + 2 x 4,096 x 64 = 548,864.
    assert transformer.kv_cache_elements(m, 4096) == 548_864


def test_llama4_layer_pattern_from_no_rope_layers_or_layer_types():
    m = read({**LLAMA4, "no_rope_layers": [1, 0] * 4})  # 0: no RoPE, whole context
    assert m.chunked == ChunkedAttention(64, 2)
    assert read({**LLAMA4, "no_rope_layers": []}).chunked == ChunkedAttention(64, 4)  # empty: the interval
    assert read({**LLAMA4, "no_rope_layer_interval": 8}).chunked == ChunkedAttention(64, 8)
    types = ["chunked_attention", "chunked_attention", "full_attention"]
    m = read({**LLAMA4, "num_hidden_layers": 6, "layer_types": types * 2})
    assert m.chunked == ChunkedAttention(64, 3)
    assert read({**LLAMA4, "attention_chunk_size": None}).chunked is None  # no chunk size: every layer full
    assert read({**LLAMA4, "no_rope_layers": [1] * 8}).chunked == ChunkedAttention(64, None)  # all chunked


def test_llama4_moe_layers():
    assert read({**LLAMA4, "moe_layers": []}).moe is None  # every layer a dense FFN of intermediate_size_mlp
    assert read({**LLAMA4, "moe_layers": [2, 3, 4, 5, 6, 7]}).moe.first_dense_layers == 2
    # Llama 4 Maverick: interleave_moe_layer_step 2, dense and MoE layers alternate; not expressible.
    with pytest.raises(ConfigError, match="interleaved dense and MoE") as e:
        read({**LLAMA4, "interleave_moe_layer_step": 2})
    assert e.value.key == "interleave_moe_layer_step"
    with pytest.raises(ConfigError, match="interleaved") as e:
        read({**LLAMA4, "moe_layers": [1, 3, 5, 7]})
    assert e.value.key == "moe_layers"


def test_llama4_wrapper_and_errors():
    inner = {k: v for k, v in LLAMA4.items() if k != "model_type"}
    m = read({"architectures": ["Llama4ForConditionalGeneration"], "text_config": inner})
    assert m.chunked == ChunkedAttention(64, 4) and "llama4 config's text_config" in m.sources["default"]
    assert m.sources["model_type"] == "llama4_text"
    with pytest.raises(ConfigError, match="one 0 or 1 per layer") as e:
        read({"model_type": "llama4", "text_config": {**inner, "no_rope_layers": [1, 0]}})
    assert e.value.key == "text_config.no_rope_layers"
    with pytest.raises(ConfigError, match="one 0 or 1 per layer"):
        read({**LLAMA4, "no_rope_layers": [2] * 8})
    with pytest.raises(ConfigError, match="chunked layers then one full layer"):
        read({**LLAMA4, "layer_types": ["full_attention"] + ["chunked_attention"] * 7})
    with pytest.raises(ConfigError, match="allowed layer types: full_attention, chunked_attention"):
        read({**LLAMA4, "layer_types": ["sliding_attention"] * 8})


#: A small Qwen3-Next: 4 layers, layers 2 and 4 full attention (full_attention_interval 2), Gated
#: DeltaNet of 2 key and 4 value heads, 8 experts 16 wide and a shared expert as wide.
QWEN3_NEXT = cfg(model_type="qwen3_next", head_dim=32, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=16,
                 shared_expert_intermediate_size=16, linear_num_key_heads=2, linear_num_value_heads=4,
                 linear_key_head_dim=8, linear_value_head_dim=8, linear_conv_kernel_dim=4, full_attention_interval=2)


def test_qwen3_next_linear_attention_gates_and_counts():
    m = read(QWEN3_NEXT)
    assert m.linear_attention == LinearAttention(2, 4, 8, 8, 4, 2)
    # Qwen3NextAttention: q_proj twice as wide (the output gate), q_norm and k_norm; no sliding window.
    assert m.attention_output_gate and m.qk_norm and m.sliding is m.chunked is None
    assert m.moe == MoE(8, 2, 16, num_shared_experts=1, shared_expert_intermediate_size=16, shared_expert_gate=True)
    # By hand (transformers Qwen3NextForCausalLM on the meta device agrees): embedding and head
    # 12,800, final norm 64. A full layer: q 64 x 256 = 16,384, k and v 2 x 64 x 64 = 8,192, o 128 x 64
    # = 8,192, q/k norms 64: 32,832. A linear layer: in_proj_qkvz 64 x 96 = 6,144, in_proj_ba 64 x 8
    # = 512, conv 64 channels x 4 = 256, dt_bias and A_log 8, norm 8, out_proj 32 x 64 = 2,048:
    # 8,976. Every layer: router 512, experts 8 x 3 x 64 x 16 = 24,576, shared expert 3,072, its gate
    # 64, norms 128: 28,352. 2 x (32,832 + 28,352) + 2 x (8,976 + 28,352) = 197,024; + 12,864 = 209,888.
    assert transformer.param_counts(m).total == 209_888
    # Only the 2 full layers cache K and V: 2 x 2 heads x 32 = 128 values per token and layer. Each
    # linear layer keeps 4 x 8 x 8 = 256 state values + 3 x 64 = 192 convolution inputs.
    assert transformer.kv_elements_per_token(m) == 256
    assert transformer.kv_cache_elements(m, 4096) == 2 * 4096 * 128 + 2 * 448
    assert "full_attention_interval" in m.source_of("linear_attention")


def test_qwen3_next_defaults_layer_types_and_errors():
    bare = {k: v for k, v in QWEN3_NEXT.items() if not k.startswith("linear_") and k != "full_attention_interval"}
    bare["num_hidden_layers"] = 8
    m = read(bare)  # Qwen3NextConfig defaults: H_k 16, H_v 32, d_k = d_v = 128, kernel 4, every 4th layer full
    assert m.linear_attention == LinearAttention(16, 32, 128, 128, 4, 4)
    assert "Qwen3NextConfig default 16" in m.source_of("linear_attention.num_key_heads")
    assert "Qwen3NextConfig default 4" in m.source_of("linear_attention")
    types = ["linear_attention", "full_attention"]
    assert read({**QWEN3_NEXT, "layer_types": types * 2, "full_attention_interval": 4}).linear_attention.full_attention_every == 2
    assert read({**QWEN3_NEXT, "layer_types": ["full_attention"] * 4}).linear_attention is None
    with pytest.raises(ConfigError, match="at least one full-attention layer") as e:
        read({**QWEN3_NEXT, "full_attention_interval": 8})
    assert e.value.key == "full_attention_interval"
    with pytest.raises(ConfigError, match="must divide 'linear_num_value_heads'") as e:
        read({**QWEN3_NEXT, "linear_num_key_heads": 3})
    assert e.value.key == "linear_num_key_heads"
    with pytest.raises(ConfigError, match="linear-attention layers then one full layer"):
        read({**QWEN3_NEXT, "layer_types": ["full_attention", "linear_attention"] * 2})
    # A use_sliding_window key (the release writes false) means nothing to Qwen3NextConfig.
    assert read({**QWEN3_NEXT, "use_sliding_window": True, "sliding_window": 32}).sliding is None
    assert read(cfg(model_type=..., architectures=["Qwen3NextForCausalLM"], **{
        k: v for k, v in QWEN3_NEXT.items() if k not in LLAMA})).linear_attention is not None


def test_model_type_from_architectures_when_missing():
    m = read(cfg(model_type=..., architectures=["MistralForCausalLM"], sliding_window=None))
    assert "architectures MistralForCausalLM" in m.sources["default"]


def test_name_and_repo_from_name_or_path():
    m = read(cfg(_name_or_path="acme/tiny-llama"))
    assert m.name == "acme/tiny-llama" and m.hf_repo == "acme/tiny-llama"
    assert read(LLAMA).name == "Llama from config.json"
    assert read_config(json.dumps(LLAMA), name="Mine").name == "Mine"


# -- errors ---------------------------------------------------------------------------------------


def test_unknown_architecture_names_its_model_type_and_the_known_ones():
    with pytest.raises(ConfigError) as e:
        read(cfg(model_type="falcon"))
    assert e.value.key == "model_type"
    assert '"falcon"' in e.value.message
    for known in ("llama", "mistral", "mixtral", "qwen2", "qwen3_moe", "gemma3", "deepseek_v3", "gpt_oss", "phi3",
                  "llama4", "llama4_text", "qwen3_next"):
        assert known in e.value.message
    assert hfconfig.known_model_types() == list(hfconfig.ARCHITECTURES)


@pytest.mark.parametrize(
    "changes, key, words",
    [
        ({"hidden_size": ...}, "hidden_size", "must have 'hidden_size' (the model width D)"),
        ({"hidden_size": "4096"}, "hidden_size", "whole number from 1 to 1,048,576, got \"4096\""),
        ({"hidden_size": 0}, "hidden_size", "from 1 to"),
        ({"hidden_size": 64.0}, "hidden_size", "got 64.0"),
        ({"num_hidden_layers": True}, "num_hidden_layers", "got true"),
        ({"vocab_size": None}, "vocab_size", "got null"),
        ({"num_key_value_heads": 3}, "num_key_value_heads", "must divide 'num_attention_heads' (4)"),
        ({"num_attention_heads": 128, "num_key_value_heads": 128}, "num_attention_heads", "at most 'hidden_size'"),
        ({"tie_word_embeddings": "no"}, "tie_word_embeddings", "true or false"),
        ({"model_type": 7}, "model_type", "must be text"),
        ({"model_type": ...}, "model_type", "must have 'model_type'"),
        ({"max_position_embeddings": 2**40}, "max_position_embeddings", "2,147,483,647"),
    ],
)
def test_a_bad_key_is_named_with_what_is_allowed(changes, key, words):
    with pytest.raises(ConfigError) as e:
        read(cfg(**changes))
    assert e.value.key == key and words in e.value.message, e.value.message
    assert e.value.message.startswith("config.json")


def test_moe_and_layer_errors():
    with pytest.raises(ConfigError, match=r"'num_experts_per_tok' \(9\) must be at most 'num_local_experts' \(8\)"):
        read(cfg(model_type="mixtral", num_local_experts=8, num_experts_per_tok=9))
    with pytest.raises(ConfigError, match="must have 'num_local_experts'"):
        read(cfg(model_type="mixtral"))
    with pytest.raises(ConfigError, match="one type per layer") as e:
        read(cfg(model_type="gpt_oss", num_local_experts=8, layer_types=["full_attention"]))
    assert e.value.key == "layer_types"
    with pytest.raises(ConfigError, match="allowed layer types"):
        read(cfg(model_type="gpt_oss", num_local_experts=8, layer_types=["linear_attention"] * 4))
    with pytest.raises(ConfigError, match="list of layer type names"):
        read(cfg(model_type="gpt_oss", num_local_experts=8, layer_types="sliding"))
    with pytest.raises(ConfigError, match="moe_layer_freq"):
        read(cfg(model_type="deepseek_v3", kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
                 n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=32, moe_layer_freq=2))


def test_nested_keys_are_named_with_their_path():
    with pytest.raises(ConfigError) as e:
        read({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", "hidden_size": -1}})
    assert e.value.key == "text_config.hidden_size" and "'text_config.hidden_size'" in e.value.message
    with pytest.raises(ConfigError, match="must have its 'text_config'"):
        read({"model_type": "gemma3"})


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "must not be empty"),
        ("   \n", "must not be empty"),
        # (json's wording and column differ between CPython 3.11 and Pyodide's 3.14: the comma
        # at column 23 or the missing name after it at 24.)
        ('{"model_type": "llama",}', "must be valid JSON: "),
        ('{"model_type": "llama",}', "(line 1, column 2"),
        ("[1, 2]", "must be a JSON object"),
        ("null", "must be a JSON object"),
        ("[" * 5000 + "]" * 5000, "must not nest lists or objects more than 64 deep"),
        ('{"a": ' * 65 + "1" + "}" * 65, "more than 64 deep"),
        ('{"hidden_size": ' + "9" * 5000 + "}", "5,000 digits, too many digits"),
        ('{"hidden_size": ' + "9" * 5001 + "}", "5,001 digits, too many digits"),
        ('{"hidden_size": 1e999}', "1e999 is too large"),
        ('{"hidden_size": -1e999}', "-1e999 is too large"),
        ('{"hidden_size": NaN}', "NaN is not a number JSON allows"),
        ('{"hidden_size": Infinity}', "Infinity is not a number JSON allows"),
        ('{"hidden_size": 0.' + "1" * 200 + "}", "too many digits"),
        ('{"model_type": "llama", "x": "', "Unterminated string starting at (line 1, column 30)"),
        ("x" * (hfconfig.MAX_CONFIG_CHARS + 1), "at most 50,000 characters"),
    ],
)
def test_bad_text(text, words):
    with pytest.raises(ConfigError) as e:
        read_config(text)
    assert e.value.key is None and words in e.value.message, e.value.message


def test_bad_text_never_says_infinity_or_pythons_words():
    # Issue 24: '...got Infinity' for 1e999, "sys.set_int_max_str_digits()" for 5,001 digits, and a
    # doubled "at" in JSON's own message.
    for text in ('{"hidden_size": 1e999}', '{"hidden_size": ' + "9" * 5001 + "}", '{"a": "'):
        with pytest.raises(ConfigError) as e:
            read_config(text)
        assert "got Infinity" not in e.value.message and "sys." not in e.value.message
        assert " at at " not in e.value.message


@pytest.mark.parametrize("where", ["top", "nested"])
def test_a_key_given_twice_is_refused_by_name(where):
    # Issue 24: {"hidden_size": 5120, "hidden_size": 1} silently took the last.
    body = json.dumps(LLAMA)[1:-1]
    text = ("{" + body + ', "hidden_size": 1}' if where == "top"
            else "{" + body + ', "rope_scaling": {"factor": 8.0, "factor": 2.0}}')
    key = "hidden_size" if where == "top" else "factor"
    with pytest.raises(ConfigError) as e:
        read_config(text)
    assert e.value.key == key and f"{key!r} appears twice" in e.value.message


def test_depth_counts_brackets_outside_strings():
    assert hfconfig._depth('{"a": "[[[[{{{{", "b": [1, [2]]}') == 3
    assert hfconfig._depth('{"a": "\\"[[["}') == 1  # an escaped quote does not end the string
    read_config(json.dumps({**LLAMA, "note": "[" * 200}))  # brackets inside text are text


def test_not_a_mapping():
    with pytest.raises(ConfigError, match="JSON object"):
        model_from_config([1, 2])
    with pytest.raises(ConfigError, match="must be text"):
        read_config(b"{}")


# -- hostile input -----------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=20,
)

KEYS = sorted({*LLAMA, *hfconfig.LIMITS, "model_type", "layer_types", "mlp_only_layers", "text_config",
               "use_sliding_window", "attention_bias", "tie_word_embeddings", "architectures", "moe_layers",
               "no_rope_layers"})
BASES = [
    LLAMA,
    cfg(model_type="gpt_oss", num_local_experts=8, num_experts_per_tok=2),
    cfg(model_type="deepseek_v3", kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
        n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=32),
    cfg(model_type="qwen2_moe", num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32),
    {"model_type": "gemma3", "text_config": cfg(model_type="gemma3_text")},
    LLAMA4,
    QWEN3_NEXT,
]


@SETTINGS
@given(base=st.sampled_from(BASES), key=st.sampled_from(KEYS + ["model_type"]), value=json_values)
def test_one_hostile_value_gives_a_model_or_a_config_error(base, key, value):
    d = {**base, key: value}
    try:
        m = read_config(json.dumps(d))
    except ConfigError as e:
        assert e.message.startswith("config.json") and "\n" not in e.message
        assert e.key is None or isinstance(e.key, str)
        return
    # A model it accepts is one every calculator can use.
    pc = transformer.param_counts(m)
    assert pc.total > 0 and transformer.kv_cache_elements(m, 4096) >= 0


@SETTINGS
@given(text=st.text(max_size=200) | json_values.map(json.dumps))
def test_any_text_gives_a_model_or_a_config_error(text):
    try:
        read_config(text)
    except ConfigError as e:
        assert e.message.startswith("config.json")
