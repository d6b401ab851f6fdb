"""Peer check: descent's exact parameter counts against Hugging Face transformers.

For every catalog model we build the transformers config locally from the catalog's own values
(no internet, so no ``from_pretrained``), instantiate the CausalLM on the meta device (shapes
only, no memory) and count ``sum(p.numel() for p in model.parameters())``. That count is an
independent implementation of the same architecture; it must equal ``param_counts(m).total``
exactly. The published totals/active counts are then checked within the precision the
publisher printed.
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
    if m.id == "deepseek-v3":
        e, a = m.moe, m.mla
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
            n_group=8,  # config.json n_group / topk_group; routing only, no parameters
            topk_group=4,
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


MODEL_IDS = list(models())


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
}


@pytest.mark.parametrize("model_id", sorted(ACTIVE_PUBLISHED))
def test_active_matches_published(model_id):
    m = models()[model_id]
    p = param_counts(m)
    kind, published, tol = ACTIVE_PUBLISHED[model_id]
    assert published == m.params_active_published
    ours = p.active if kind == "with_embedding" else p.active - p.embedding
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
}


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_total_matches_published(model_id):
    m = models()[model_id]
    assert abs(param_counts(m).total - m.params_total_published) <= TOTAL_TOL[model_id]
