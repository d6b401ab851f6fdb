"""Peer check: descent's exact parameter counts against Hugging Face transformers.

For every catalog model we build the transformers config locally from the catalog's own values
(no internet, so no ``from_pretrained``), instantiate the CausalLM on the meta device (shapes
only, no memory) and count ``sum(p.numel() for p in model.parameters())``. That count is an
independent implementation of the same architecture; it must equal ``param_counts(m).total``
exactly. The published totals/active counts are then checked within the precision the
publisher printed.

transformers (5.x, the version this suite runs) knows every catalog architecture, the late-2026
rows included: Llama 4 (``Llama4TextConfig``, chunked attention), Kimi K2 (``architectures =
DeepseekV3ForCausalLM`` in its config.json, so ``DeepseekV3Config``) and Qwen3-Next
(``Qwen3NextConfig``, linear-attention layers). A model whose architecture transformers does not
know must appear in :data:`NO_PEER` with the reason; a model neither mapped nor listed fails.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from descent.catalog import Model, models  # noqa: E402
from descent.transformer import param_counts  # noqa: E402

pytestmark = pytest.mark.peer


def _common(m: Model) -> dict:
    return dict(
        vocab_size=m.vocab_size,
        hidden_size=m.hidden_size,
        intermediate_size=m.intermediate_size,
        num_hidden_layers=m.num_layers,
        num_attention_heads=m.num_heads,
        num_key_value_heads=m.num_kv_heads,
        max_position_embeddings=m.max_context,
        tie_word_embeddings=m.tie_embeddings,
    )


def _config(m: Model):
    """The transformers config for catalog model ``m``, from the catalog's values only."""
    t = transformers
    c = _common(m)
    if m.id in ("deepseek-v3", "kimi-k2"):  # Kimi K2's config.json: architectures = DeepseekV3ForCausalLM
        e, a = m.moe, m.mla
        groups = {"deepseek-v3": (8, 4), "kimi-k2": (1, 1)}[m.id]
        return t.DeepseekV3Config(
            **c,
            n_routed_experts=e.num_experts,
            num_experts_per_tok=e.experts_per_token,
            moe_intermediate_size=e.expert_intermediate_size,
            n_shared_experts=e.num_shared_experts,
            first_k_dense_replace=e.first_dense_layers,
            q_lora_rank=a.q_lora_rank,
            kv_lora_rank=a.kv_lora_rank,
            qk_rope_head_dim=a.qk_rope_head_dim,
            qk_nope_head_dim=a.qk_nope_head_dim,
            v_head_dim=a.v_head_dim,
            n_group=groups[0],  # config.json n_group / topk_group; routing only, no parameters
            topk_group=groups[1],
        )
    if m.id == "llama-4-scout":
        c["intermediate_size"] = m.moe.expert_intermediate_size  # Llama 4 names the expert width so
        return t.Llama4TextConfig(
            **c,
            intermediate_size_mlp=m.intermediate_size,  # the dense FFN width (unused: every layer MoE)
            head_dim=m.head_dim,
            num_local_experts=m.moe.num_experts,
            num_experts_per_tok=m.moe.experts_per_token,
            interleave_moe_layer_step=1,
            attention_chunk_size=m.chunked.chunk,
            no_rope_layer_interval=m.chunked.full_attention_every,
        )
    if m.id == "qwen3-next-80b-a3b":
        la = m.linear_attention
        return t.Qwen3NextConfig(
            **c,
            head_dim=m.head_dim,
            num_experts=m.moe.num_experts,
            num_experts_per_tok=m.moe.experts_per_token,
            moe_intermediate_size=m.moe.expert_intermediate_size,
            shared_expert_intermediate_size=m.moe.shared_expert_intermediate_size,
            decoder_sparse_step=1,
            mlp_only_layers=[],
            linear_num_key_heads=la.num_key_heads,
            linear_num_value_heads=la.num_value_heads,
            linear_key_head_dim=la.key_head_dim,
            linear_value_head_dim=la.value_head_dim,
            linear_conv_kernel_dim=la.conv_kernel,
            full_attention_interval=la.full_attention_every,
        )
    if m.id.startswith("gpt-oss"):
        return t.GptOssConfig(
            **c,
            head_dim=m.head_dim,
            num_local_experts=m.moe.num_experts,
            num_experts_per_tok=m.moe.experts_per_token,
            sliding_window=m.sliding.window,
            attention_bias=m.attention_bias,
        )
    if m.id == "gemma-3-27b":
        return t.Gemma3TextConfig(
            **c, head_dim=m.head_dim, sliding_window=m.sliding.window, query_pre_attn_scalar=168
        )
    if m.id == "qwen3-235b-a22b":
        return t.Qwen3MoeConfig(
            **c,
            head_dim=m.head_dim,
            num_experts=m.moe.num_experts,
            num_experts_per_tok=m.moe.experts_per_token,
            moe_intermediate_size=m.moe.expert_intermediate_size,
            decoder_sparse_step=1,
            mlp_only_layers=[],
        )
    if m.id == "qwen3-8b":
        return t.Qwen3Config(**c, head_dim=m.head_dim, attention_bias=m.attention_bias)
    if m.id == "mixtral-8x7b":
        return t.MixtralConfig(
            **c,
            head_dim=m.head_dim,
            num_local_experts=m.moe.num_experts,
            num_experts_per_tok=m.moe.experts_per_token,
        )
    if m.id == "mistral-7b-v0.1":
        return t.MistralConfig(**c, head_dim=m.head_dim, sliding_window=m.sliding.window)
    if m.id.startswith(("llama-", "smollm2-")):  # SmolLM2 is the Llama architecture
        return t.LlamaConfig(**c, head_dim=m.head_dim, attention_bias=m.attention_bias, mlp_bias=m.mlp_bias)
    raise AssertionError(f"no transformers config mapping for catalog model {m.id!r}; add one")


def _causal_lm(config):
    if isinstance(config, transformers.Gemma3TextConfig):
        cls = transformers.Gemma3ForCausalLM  # the text-only class (no vision tower)
    else:
        cls = transformers.AutoModelForCausalLM._model_mapping[type(config)]
    with torch.device("meta"):
        return cls(config)


def _hf_count(model) -> int:
    n = sum(p.numel() for p in model.parameters())  # shared (tied) tensors are yielded once
    # DeepSeek-V3's per-expert routing bias is stored in the checkpoint
    # (model.layers.N.mlp.gate.e_score_correction_bias) but transformers registers it as a buffer.
    n += sum(b.numel() for name, b in model.named_buffers() if name.endswith("e_score_correction_bias"))
    return n


#: Catalog models whose architecture the installed transformers does not know: id -> why. The
#: totals of these rows are then checked only against the publisher (test_total_matches_published).
#: Empty with transformers 5.x: every architecture of the catalog has a transformers class.
NO_PEER: dict[str, str] = {}

MODEL_IDS = [i for i in models() if i not in NO_PEER]


def test_every_model_has_a_peer_or_a_stated_reason():
    for model_id in models():
        if model_id in NO_PEER:
            assert len(NO_PEER[model_id]) > 20, model_id  # a reason a reader can check
            continue
        _config(models()[model_id])  # raises AssertionError when no mapping exists


@pytest.fixture(scope="module", params=MODEL_IDS)
def built(request):
    m = models()[request.param]
    config = _config(m)
    return m, config, _causal_lm(config)


def test_total_equals_transformers(built):
    m, _, hf = built
    assert param_counts(m).total == _hf_count(hf), m.id


def test_components_match_transformers_modules(built):
    """Embedding and head agree too, not only the sum."""
    m, _, hf = built
    p = param_counts(m)
    assert p.embedding == hf.get_input_embeddings().weight.numel()
    if m.tie_embeddings:
        assert p.output_head == 0
        assert hf.lm_head.weight is hf.get_input_embeddings().weight
    else:
        assert p.output_head == hf.lm_head.weight.numel()


ALTERNATING_IDS = [i for i, m in models().items() if m.sliding is not None and m.sliding.full_attention_every]


@pytest.mark.parametrize("model_id", ALTERNATING_IDS)
def test_sliding_layers_match_transformers_layer_types(model_id):
    """The catalog's SlidingWindow rule picks the same layers as transformers' layer_types
    (gpt-oss: every other layer from layer 0; Gemma 3: five sliding, then one full)."""
    m = models()[model_id]
    ours = ["sliding_attention" if m.sliding.is_sliding(i) else "full_attention" for i in range(m.num_layers)]
    assert ours == list(_config(m).layer_types)


def test_alternating_models_are_the_expected_ones():
    assert sorted(ALTERNATING_IDS) == ["gemma-3-27b", "gpt-oss-120b", "gpt-oss-20b"]


def test_chunked_layers_match_transformers_layer_types():
    """Llama 4 Scout: layers 3, 7, 11, ... attend to everything (no RoPE), the rest within their
    8,192-token chunk: transformers' layer_types say 'chunked_attention' / 'full_attention'."""
    m = models()["llama-4-scout"]
    ours = ["chunked_attention" if m.chunked.is_chunked(i) else "full_attention" for i in range(m.num_layers)]
    cfg = _config(m)
    assert ours == list(cfg.layer_types)
    assert cfg.attention_chunk_size == m.chunked.chunk == 8192


def test_linear_layers_match_transformers_layer_types():
    """Qwen3-Next: full_attention_interval = 4, so layers 3, 7, ... are full attention and the
    other 36 Gated DeltaNet (transformers' layer_types 'linear_attention')."""
    m = models()["qwen3-next-80b-a3b"]
    ours = ["linear_attention" if m.linear_attention.is_linear(i) else "full_attention" for i in range(m.num_layers)]
    assert ours == list(_config(m).layer_types)
    assert ours.count("linear_attention") == 36


def test_linear_attention_state_matches_transformers_cache():
    """The fixed state a linear-attention layer keeps, against transformers' own cache.

    A scaled-down Qwen3-Next (same head counts and widths as the catalog row, 4 layers, a small
    vocabulary and FFN) runs a 5-token and a 9-token prompt on the CPU; the recurrent state of each
    linear layer has H_v x d_k x d_v values at both lengths (it does not grow), and the convolution
    state has conv_dim channels. transformers keeps conv_kernel inputs per channel; the causal
    convolution needs only the last conv_kernel - 1 of them, which is what the catalog counts
    (as vLLM stores it)."""
    m = models()["qwen3-next-80b-a3b"]
    la = m.linear_attention
    cfg = transformers.Qwen3NextConfig(
        vocab_size=64, hidden_size=64, intermediate_size=32, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, moe_intermediate_size=8, shared_expert_intermediate_size=8,
        num_experts=4, num_experts_per_tok=2, linear_num_key_heads=la.num_key_heads,
        linear_num_value_heads=la.num_value_heads, linear_key_head_dim=la.key_head_dim,
        linear_value_head_dim=la.value_head_dim, linear_conv_kernel_dim=la.conv_kernel,
        full_attention_interval=la.full_attention_every,
    )
    torch.manual_seed(0)
    hf = transformers.Qwen3NextForCausalLM(cfg).eval()
    sizes = []
    for tokens in (5, 9):
        with torch.no_grad():
            out = hf(torch.arange(tokens)[None, :], use_cache=True)
        layers = out.past_key_values.layers  # transformers 5: one cache layer per model layer
        assert [type(x).__name__ for x in layers] == [
            "LinearAttentionLayer" if la.is_linear(i) else "DynamicLayer" for i in range(4)
        ]
        recurrent, conv = layers[0].recurrent_states[0], layers[0].conv_states[0]  # (B, H_v, d_k, d_v), (B, conv_dim, k)
        assert layers[3].keys.shape[-2] == tokens  # the full-attention layer's cache grows
        sizes.append(recurrent.numel())
        assert recurrent.numel() == la.num_value_heads * la.key_head_dim * la.value_head_dim
        assert conv.shape[-2] == la.conv_dim and conv.shape[-1] == la.conv_kernel
    assert sizes[0] == sizes[1]  # the same at 5 and at 9 tokens
    assert la.state_elements == sizes[0] + (la.conv_kernel - 1) * la.conv_dim


# Published figures and what they count (the catalog row's params_published_note has the source).
# tol: half a unit in the last digit the publisher printed, unless stated.
ACTIVE_PUBLISHED = {
    # Mixtral announcement: "12.9B parameters per token", embedding table included
    # (without it the exact count is 12.75B, which would print as 12.7B).
    "mixtral-8x7b": ("with_embedding", 12.9e9, 0.05e9),
    # Qwen3 card: "22B activated"; 22.19B with the embedding table, 21.57B without: both round to 22B.
    "qwen3-235b-a22b": ("with_embedding", 22e9, 0.5e9),
    # gpt-oss model card, arXiv:2508.10925, table 1: active = everything a token uses except the
    # embedding table (the unembedding is counted): 3.61B and 5.13B.
    "gpt-oss-20b": ("without_embedding", 3.61e9, 0.005e9),
    "gpt-oss-120b": ("without_embedding", 5.13e9, 0.005e9),
    # DeepSeek-V3 report: "37B activated". Exact: 36.63B without the embedding table, 37.55B with it;
    # only the former rounds to 37B, so the published figure leaves the embedding out. DeepSeek's
    # README_WEIGHTS.md says so: "36.6B (including 0.9B for the output Head)".
    "deepseek-v3": ("without_embedding", 37e9, 0.5e9),
    # Llama 4 Scout card: "17B activated". Exact (text model): 17.17B with the embedding table,
    # 16.14B without; only the former rounds to 17B.
    "llama-4-scout": ("with_embedding", 17e9, 0.5e9),
    # Kimi K2 card: "32B activated". Exact: 31.69B without the embedding table, 32.86B with it;
    # only the former rounds to 32B (the DeepSeek-V3 convention its architecture comes from).
    "kimi-k2": ("without_embedding", 32e9, 0.5e9),
    # Qwen3-Next card: "3B activated". Exact: 3.87B with the embedding table, 3.56B without it,
    # 3.25B without the embedding table and the output head; only the last rounds to 3B.
    "qwen3-next-80b-a3b": ("non_embedding", 3e9, 0.5e9),
}


@pytest.mark.parametrize("model_id", sorted(ACTIVE_PUBLISHED))
def test_active_matches_published(model_id):
    m = models()[model_id]
    p = param_counts(m)
    kind, published, tol = ACTIVE_PUBLISHED[model_id]
    assert published == m.params_active_published
    ours = {
        "with_embedding": p.active,
        "without_embedding": p.active - p.embedding,
        "non_embedding": p.active - p.embedding - p.output_head,
    }[kind]
    assert abs(ours - published) <= tol, (model_id, ours)


# Relative tolerance on totals: half a unit in the printed last digit of the published figure.
TOTAL_TOL = {
    "smollm2-135m": 0.5e6,  # "135M"; exact 134.5M (tied embedding counted once)
    "llama-3.1-8b": 0.5e9,  # "8B"; exact 8.03B
    "llama-3.1-70b": 0.6e9,  # "70B"; exact 70.55B: the card truncates (Hugging Face shows 70.6B)
    "llama-3.1-405b": 0.9e9,  # "405B"; exact 405.85B: truncated, as for 70B
    "mistral-7b-v0.1": 0.07e9,  # "7.3B" announced; exact 7.24B: the announcement rounds up by 0.06B
    "mixtral-8x7b": 0.05e9,  # "46.7B"
    "qwen3-8b": 0.05e9,  # "8.2B"; exact 8.19B
    "qwen3-235b-a22b": 0.5e9,  # "235B"
    "gpt-oss-20b": 0.005e9,  # "20.91B"
    "gpt-oss-120b": 0.005e9,  # "116.83B"
    "deepseek-v3": 0.5e9,  # "671B" main model without the 14B MTP module
    # 1,416M + 25,600M from the Gemma 3 report's table 1; the exact embedding is
    # 262,208 * 5,376 = 1,409.6M, 6.4M below the report's 1,416M.
    "gemma-3-27b": 0.01e9,
    # "109B" for the multimodal release; this row is the text model, 107.77B exactly. The vision
    # encoder and projector make up the rest: test_llama_4_scout_published_total_includes_vision.
    "llama-4-scout": 1.3e9,
    # Card: "1T" (one significant figure); exact 1.026T. The technical report's "1.04 trillion" is
    # 16.5B above the released weights (see the row's note).
    "kimi-k2": 0.03e12,
    "qwen3-next-80b-a3b": 0.5e9,  # "80B"; exact 79.67B without the MTP layer
}


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_total_matches_published(model_id):
    m = models()[model_id]
    assert abs(param_counts(m).total - m.params_total_published) <= TOTAL_TOL[model_id]


def test_llama_4_scout_published_total_includes_vision():
    """The card's 109B is the whole multimodal release: the text model (this row) plus the vision
    encoder and projector of the same config.json (vision_config: hidden_size 1408,
    intermediate_size 5632, 34 layers, 16 heads, patch 14, image 336, projector 4096 -> 4096,
    pixel_shuffle_ratio 0.5). Together: 108.64B, which rounds to 109B."""
    m = models()["llama-4-scout"]
    text = _config(m)
    vision = dict(hidden_size=1408, image_size=336, intermediate_size=5632, num_attention_heads=16,
                  num_hidden_layers=34, patch_size=14, pixel_shuffle_ratio=0.5, projector_input_dim=4096,
                  projector_output_dim=4096, vision_output_dim=4096)
    config = transformers.Llama4Config(text_config=text.to_dict(), vision_config=vision)
    with torch.device("meta"):
        full = transformers.Llama4ForConditionalGeneration(config)
    total = sum(p.numel() for p in full.parameters())
    assert total - param_counts(m).total == 871_932_416  # the vision encoder and projector
    assert abs(total - m.params_total_published) <= 0.5e9  # "109B"
