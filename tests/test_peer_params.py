"""Peer check: descent's exact parameter counts against Hugging Face transformers.

For every catalog row we build the transformers config locally from the row's own values (no
internet, so no ``from_pretrained``), instantiate the CausalLM on the meta device (shapes only, no
memory) and count ``sum(p.numel() for p in model.parameters())``. That count is an independent
implementation of the same architecture; it must equal ``param_counts(m).total`` exactly. The
published totals/active counts are then checked within the precision the publisher printed.

Nothing here names a catalog row to decide how to test it: the transformers architecture is chosen
from the row's features (MoE, MLA, QK-norm, biases, sinks, ...), so a new row is one catalog table.
A row whose features no architecture below covers fails, naming the features; a row that cannot be
checked at all goes in ``NO_PEER`` with the reason.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from decimal import Decimal

import pytest

from descent.catalog import MLA, Model, models
from descent.transformer import param_counts

pytestmark = pytest.mark.peer


@functools.cache
def _hf():
    """(torch, transformers), imported when a test first needs them, so that collecting this module
    (``nox -s fast`` deselects it, in a venv without them) imports neither."""
    return pytest.importorskip("torch"), pytest.importorskip("transformers")

#: Catalog rows the peer test cannot check, each with the reason. Empty: every row is checked.
NO_PEER: dict[str, str] = {}


def features(m: Model) -> frozenset[str]:
    """What sets the row apart from a plain Llama-style decoder, as names (``"moe.expert_bias"``).

    Only what changes the set of parameters or the layer kinds counts; the values themselves
    (widths, layer counts, window sizes) go into the config unchanged.
    """
    f = set()
    if m.head_dim * m.num_heads != m.hidden_size:
        f.add("head_dim")  # head_dim is not hidden_size / num_heads
    for name in ("attention_bias", "attention_out_bias", "mlp_bias", "qk_norm", "attention_sinks"):
        if getattr(m, name):
            f.add(name)
    if m.norms_per_layer != 2:
        f.add(f"norms_per_layer={m.norms_per_layer}")
    if m.mla is not None:
        f.add("mla")
    if m.chunked is not None:
        f.add("chunked")  # Llama 4: chunked local attention on most layers
    if m.linear_attention is not None:
        f.add("linear_attention")  # Qwen3-Next: Gated DeltaNet layers between full-attention ones
    if m.attention_output_gate:
        f.add("attention_output_gate")
    if m.sliding is not None:
        f.add("sliding" if m.sliding.full_attention_every is None else "sliding.alternating")
    if m.moe is not None:
        f.add("moe")
        e = m.moe
        for flag, name in [
            (e.num_shared_experts, "moe.shared_experts"),
            (e.first_dense_layers, "moe.dense_prefix"),
            (e.router_bias, "moe.router_bias"),
            (e.expert_bias, "moe.expert_bias"),
            (e.router_score_correction_bias, "moe.score_correction_bias"),
            (e.shared_expert_gate, "moe.shared_expert_gate"),
        ]:
            if flag:
                f.add(name)
    return frozenset(f)


#: Row fields the configs take as values (the count checks them), and those that never shape the
#: network. Every other field must be a feature above: test_every_row_field_is_accounted_for.
VALUE_FIELDS = {
    "hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "intermediate_size",
    "vocab_size", "tie_embeddings", "max_context", "moe.num_experts", "moe.experts_per_token",
    "moe.expert_intermediate_size", "moe.shared_expert_intermediate_size", "mla.q_lora_rank",
    "mla.kv_lora_rank", "mla.qk_rope_head_dim", "mla.qk_nope_head_dim", "mla.v_head_dim",
    "sliding.window", "sliding.full_attention_every", "chunked.chunk", "chunked.full_attention_every",
    "linear_attention.num_key_heads", "linear_attention.num_value_heads", "linear_attention.key_head_dim",
    "linear_attention.value_head_dim", "linear_attention.conv_kernel", "linear_attention.full_attention_every",
}  # fmt: skip
NOT_ARCHITECTURE = {
    "id", "name", "hf_repo", "params_total_published", "params_active_published", "params_published_note",
    "sources", "released_by_group", "torch_dtype",
    # How the router weighs experts and which activation gates the FFN: no parameters change.
    "ffn_gate", "moe.router_scoring", "moe.router_normalize",
}  # fmt: skip
FEATURE_FIELDS = {
    "attention_bias", "attention_out_bias", "mlp_bias", "qk_norm", "norms_per_layer", "attention_sinks",
    "moe", "mla", "sliding", "moe.num_shared_experts", "moe.first_dense_layers", "moe.router_bias",
    "moe.expert_bias", "moe.router_score_correction_bias", "moe.shared_expert_gate",
    "chunked", "linear_attention", "attention_output_gate",
}  # fmt: skip


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


def _window(m: Model) -> dict:
    return {"sliding_window": m.sliding.window} if m.sliding else {}


@dataclasses.dataclass(frozen=True)
class Architecture:
    """A transformers architecture: the features it always has, those its config can switch on,
    and the config arguments it takes from a row (beyond ``_common``)."""

    config: str  # transformers config class
    has: frozenset[str]
    may_have: frozenset[str]
    kwargs: Callable[[Model], dict]

    def covers(self, f: frozenset[str]) -> bool:
        return self.has <= f <= self.has | self.may_have


def _arch(config, has, may_have, kwargs):
    return Architecture(config, frozenset(has), frozenset(may_have), kwargs)


#: Most specific first; a row is built with the first architecture that covers its features.
ARCHITECTURES = [
    # Qwen3-Next: Gated DeltaNet (linear attention) layers with every n-th layer full attention,
    # a gated attention output, QK-norm, routed + gated shared experts.
    _arch(
        "Qwen3NextConfig",
        {"linear_attention", "moe", "moe.shared_experts"},
        {"head_dim", "qk_norm", "attention_output_gate", "moe.shared_expert_gate"},
        lambda m: dict(
            head_dim=m.head_dim,
            num_experts=m.moe.num_experts,
            num_experts_per_tok=m.moe.experts_per_token,
            moe_intermediate_size=m.moe.expert_intermediate_size,
            shared_expert_intermediate_size=m.moe.shared_expert_intermediate_size,
            decoder_sparse_step=1,
            mlp_only_layers=[],
            linear_num_key_heads=m.linear_attention.num_key_heads,
            linear_num_value_heads=m.linear_attention.num_value_heads,
            linear_key_head_dim=m.linear_attention.key_head_dim,
            linear_value_head_dim=m.linear_attention.value_head_dim,
            linear_conv_kernel_dim=m.linear_attention.conv_kernel,
            full_attention_interval=m.linear_attention.full_attention_every,
        ),
    ),
    # Llama 4 (text): chunked local attention, every n-th layer global without RoPE, routed + shared experts.
    _arch(
        "Llama4TextConfig",
        {"chunked", "moe"},
        {"moe.shared_experts", "head_dim"},
        lambda m: dict(
            intermediate_size=m.moe.expert_intermediate_size,  # Llama 4 names the expert width so
            intermediate_size_mlp=m.intermediate_size,  # the dense FFN width (unused: every layer MoE)
            head_dim=m.head_dim,
            num_local_experts=m.moe.num_experts,
            num_experts_per_tok=m.moe.experts_per_token,
            interleave_moe_layer_step=1,
            attention_chunk_size=m.chunked.chunk,
            no_rope_layer_interval=m.chunked.full_attention_every,
        ),
    ),
    # DeepSeek-V3: MLA attention, shared + routed experts, a per-expert routing bias, dense first layers.
    _arch(
        "DeepseekV3Config",
        {"mla", "moe", "moe.shared_experts", "moe.score_correction_bias"},
        {"moe.dense_prefix", "head_dim"},  # its head_dim is qk_nope + qk_rope, from the MLA fields
        lambda m: dict(
            n_routed_experts=m.moe.num_experts,
            num_experts_per_tok=m.moe.experts_per_token,
            moe_intermediate_size=m.moe.expert_intermediate_size,
            n_shared_experts=m.moe.num_shared_experts,
            first_k_dense_replace=m.moe.first_dense_layers,
            q_lora_rank=m.mla.q_lora_rank or None,
            kv_lora_rank=m.mla.kv_lora_rank,
            qk_rope_head_dim=m.mla.qk_rope_head_dim,
            qk_nope_head_dim=m.mla.qk_nope_head_dim,
            v_head_dim=m.mla.v_head_dim,
            n_group=1,  # group-limited routing (config.json n_group, topk_group): no parameters
            topk_group=1,
        ),
    ),
    # gpt-oss: biased attention (q, k, v and o), sinks, biased router and experts; every other layer slides.
    _arch(
        "GptOssConfig",
        {"moe", "moe.router_bias", "moe.expert_bias", "attention_bias", "attention_out_bias", "attention_sinks"},
        {"head_dim", "sliding.alternating"},
        lambda m: dict(
            head_dim=m.head_dim,
            num_local_experts=m.moe.num_experts,
            num_experts_per_tok=m.moe.experts_per_token,
            attention_bias=True,
            **_window(m),
        ),
    ),
    _arch(
        "Qwen3MoeConfig",
        {"moe", "qk_norm"},
        {"head_dim"},
        lambda m: dict(
            head_dim=m.head_dim,
            num_experts=m.moe.num_experts,
            num_experts_per_tok=m.moe.experts_per_token,
            moe_intermediate_size=m.moe.expert_intermediate_size,
            decoder_sparse_step=1,
            mlp_only_layers=[],
        ),
    ),
    _arch(
        "MixtralConfig",
        {"moe"},
        {"head_dim", "sliding"},
        lambda m: dict(
            head_dim=m.head_dim,
            num_local_experts=m.moe.num_experts,
            num_experts_per_tok=m.moe.experts_per_token,
            **_window(m),
        ),
    ),
    # Gemma 3 (text): QK-norm and four norms per layer; n-1 sliding layers, then one full.
    _arch(
        "Gemma3TextConfig",
        {"qk_norm", "norms_per_layer=4"},
        {"head_dim", "sliding.alternating"},
        lambda m: dict(
            head_dim=m.head_dim,
            **_window(m),
            **({"sliding_window_pattern": m.sliding.full_attention_every} if m.sliding else {}),
        ),
    ),
    # Qwen3: QK-norm; its attention_bias applies to q, k, v and o alike.
    _arch(
        "Qwen3Config",
        {"qk_norm"},
        {"head_dim", "attention_bias", "attention_out_bias"},
        lambda m: dict(head_dim=m.head_dim, attention_bias=m.attention_bias),
    ),
    # Qwen2 (Qwen2.5): biases on q, k and v, none on o; head_dim is always hidden_size / heads.
    _arch("Qwen2Config", {"attention_bias"}, set(), lambda m: {}),
    _arch("MistralConfig", {"sliding"}, {"head_dim"}, lambda m: dict(head_dim=m.head_dim, **_window(m))),
    # Llama (and SmolLM2, which is the Llama architecture): attention_bias covers q, k, v and o.
    _arch(
        "LlamaConfig",
        set(),
        {"head_dim", "attention_bias", "attention_out_bias", "mlp_bias"},
        lambda m: dict(head_dim=m.head_dim, attention_bias=m.attention_bias, mlp_bias=m.mlp_bias),
    ),
]


def architecture(m: Model) -> Architecture:
    """The first architecture covering the row's features; fails the test, naming them, if none does."""
    f = features(m)
    for arch in ARCHITECTURES:
        if arch.covers(f):
            return arch
    pytest.fail(
        f"catalog row {m.id!r} has features {sorted(f)}, which no transformers architecture in "
        "tests/test_peer_params.py covers: add one to ARCHITECTURES, or list the row in NO_PEER with the reason"
    )


def _config(m: Model):
    """The transformers config for catalog model ``m``, from the catalog's values only."""
    arch = architecture(m)
    _, transformers = _hf()
    return getattr(transformers, arch.config)(**{**_common(m), **arch.kwargs(m)})


def _causal_lm(config):
    torch, transformers = _hf()
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


def _rows(select=lambda m: True) -> list:
    """Every catalog row that ``select`` accepts, as pytest params; NO_PEER rows are skipped with their reason."""
    return [
        pytest.param(m, id=i, marks=[pytest.mark.skip(reason=NO_PEER[i])] if i in NO_PEER else [])
        for i, m in models().items()
        if select(m)
    ]


@pytest.fixture(scope="module", params=_rows())
def built(request):
    m = request.param
    config = _config(m)
    return m, config, _causal_lm(config)


def test_every_row_field_is_accounted_for():
    """A field added to the catalog's Model (or MoE, MLA, SlidingWindow) must be taken as a value,
    declared irrelevant, or become a feature: otherwise this test would build rows without it."""
    from descent.catalog import ChunkedAttention, LinearAttention, MoE, SlidingWindow

    nested = {"moe": MoE, "mla": MLA, "sliding": SlidingWindow, "chunked": ChunkedAttention,
              "linear_attention": LinearAttention}
    fields = {f.name for f in dataclasses.fields(Model)}
    fields |= {f"{k}.{f.name}" for k, cls in nested.items() for f in dataclasses.fields(cls)}
    assert fields == VALUE_FIELDS | NOT_ARCHITECTURE | FEATURE_FIELDS, fields ^ (
        VALUE_FIELDS | NOT_ARCHITECTURE | FEATURE_FIELDS
    )


def test_no_peer_names_real_rows():
    assert set(NO_PEER) <= set(models())


def test_total_equals_transformers(built):
    m, config, hf = built
    assert param_counts(m).total == _hf_count(hf), (m.id, type(config).__name__)


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


def test_the_catalog_rows_get_their_own_architectures():
    """Spot check of the feature rule on rows whose transformers class is known from config.json."""
    expected = {
        "smollm2-135m": "LlamaConfig",  # config.json model_type "llama"
        "llama-3.1-8b": "LlamaConfig",
        "mistral-7b-v0.1": "MistralConfig",
        "mixtral-8x7b": "MixtralConfig",
        "qwen3-8b": "Qwen3Config",
        "qwen3-235b-a22b": "Qwen3MoeConfig",
        "gpt-oss-20b": "GptOssConfig",
        "deepseek-v3": "DeepseekV3Config",
        "gemma-3-27b": "Gemma3TextConfig",
    }
    assert {i: architecture(models()[i]).config for i in expected} == expected


def test_the_contributing_example_row_passes_the_peer_check():
    """docs/contributing.md's worked example (Qwen2.5-7B) says adding the row is all it takes for this
    test: its features pick Qwen2 (biased q, k, v; unbiased o) and transformers agrees on the count."""
    from importlib import resources

    from test_contributing import _example_row

    from descent.catalog import load_models

    base = resources.files("descent.catalog").joinpath("models.toml").read_text(encoding="utf-8")
    m = load_models(base + "\n" + _example_row())["qwen2.5-7b"]
    assert architecture(m).config == "Qwen2Config"
    exact = param_counts(m).total
    assert exact == _hf_count(_causal_lm(_config(m))) == 7_615_616_512
    assert matches_printed(exact, m.params_total_published)  # "7.61B", truncated


def test_a_row_no_architecture_covers_fails_loudly():
    # MLA without experts: no architecture above has it, so the row must not be silently skipped.
    llama = models()["llama-3.1-8b"]
    odd = dataclasses.replace(llama, id="mla-dense", mla=MLA(0, 512, 64, 128, 128))
    with pytest.raises(pytest.fail.Exception, match=r"'mla-dense' has features \['mla'\]"):
        architecture(odd)


@pytest.mark.parametrize("m", _rows(lambda m: m.sliding is not None and m.sliding.full_attention_every))
def test_sliding_layers_match_transformers_layer_types(m):
    """The catalog's SlidingWindow rule picks the same layers as transformers' layer_types
    (gpt-oss: every other layer from layer 0; Gemma 3: five sliding, then one full)."""
    ours = ["sliding_attention" if m.sliding.is_sliding(i) else "full_attention" for i in range(m.num_layers)]
    assert ours == list(_config(m).layer_types)


# ------------------------------------------------------------------ published figures
# A publisher prints a rounded or a truncated figure ("70B" for 70.55B): the exact count lies at most
# half a unit of the last printed digit below it and less than one unit above it.


def printed_unit(published: float) -> float:
    """One unit in the last digit of a figure printed in billions (or millions below 1e9):
    7.61e9 ("7.61B") -> 1e7; 70e9 ("70B") -> 1e9; 135e6 ("135M") -> 1e6."""
    scale = 10**9 if published >= 1e9 else 10**6
    digits = (Decimal(repr(published)) / scale).normalize()
    return scale * 10.0 ** min(0, digits.as_tuple().exponent)


def matches_printed(exact: int, published: float) -> bool:
    unit = printed_unit(published)
    return -0.5 * unit <= exact - published < unit


def test_printed_unit():
    assert [printed_unit(x) for x in (7.61e9, 70e9, 135e6, 27.016e9, 116.83e9)] == [1e7, 1e9, 1e6, 1e6, 1e7]
    assert matches_printed(70_553_706_496, 70e9)  # truncated
    assert matches_printed(8_190_735_360, 8.2e9)  # rounded
    assert not matches_printed(7_241_732_096, 7.3e9)  # rounded up by more than half a unit


#: Rows whose published total is further from the exact count than printing explains, with the reason.
TOTAL_EXCEPTIONS = {
    # Announced as "7.3B"; the exact count is 7.24B: the announcement rounds up by 0.06B.
    "mistral-7b-v0.1": 0.07e9,
    # 1,416M + 25,600M from the Gemma 3 report's table 1; the exact embedding is
    # 262,208 * 5,376 = 1,409.6M, 6.4M below the report's 1,416M.
    "gemma-3-27b": 0.01e9,
    # "109B" for the multimodal release; this row is the text model, 107.77B exactly. The vision
    # encoder and projector make up the rest: test_llama_4_scout_published_total_includes_vision.
    "llama-4-scout": 1.3e9,
    # Card: "1T" (one significant figure); exact 1.026T. The technical report's "1.04 trillion" is
    # 16.5B above the released weights (see the row's note).
    "kimi-k2": 0.03e12,
}


@pytest.mark.parametrize("m", _rows())
def test_total_matches_published(m):
    exact = param_counts(m).total
    if m.id in TOTAL_EXCEPTIONS:
        assert not matches_printed(exact, m.params_total_published)  # else the exception is stale
        assert abs(exact - m.params_total_published) <= TOTAL_EXCEPTIONS[m.id]
    else:
        assert matches_printed(exact, m.params_total_published), (m.id, exact)


# Published active counts use two conventions (DESIGN.md): with or without the input embedding table.
# Rows whose convention the publisher states (the row's params_published_note quotes it):
ACTIVE_CONVENTION = {
    # Mixtral announcement: "12.9B parameters per token", embedding table included
    # (without it the exact count is 12.75B, which would print as 12.7B).
    "mixtral-8x7b": "with_embedding",
    # gpt-oss model card, arXiv:2508.10925, table 1: active = everything a token uses except the
    # embedding table (the unembedding is counted): 3.61B and 5.13B.
    "gpt-oss-20b": "without_embedding",
    "gpt-oss-120b": "without_embedding",
    # DeepSeek's README_WEIGHTS.md: "36.6B (including 0.9B for the output Head)": no embedding table.
    "deepseek-v3": "without_embedding",
}


@pytest.mark.parametrize("m", _rows(lambda m: m.is_moe))
def test_active_matches_published(m):
    p = param_counts(m)
    ours = {"with_embedding": p.active, "without_embedding": p.active - p.embedding}
    matching = {k for k, v in ours.items() if matches_printed(v, m.params_active_published)}
    if m.id in ACTIVE_CONVENTION:
        assert ACTIVE_CONVENTION[m.id] in matching, (m.id, ours)
    else:  # Qwen3-235B-A22B's "22B": 22.19B with the embedding table and 21.57B without both print as 22B
        assert matching, (m.id, ours)


def test_active_conventions_name_moe_rows():
    assert {i for i in ACTIVE_CONVENTION if models()[i].is_moe} == set(ACTIVE_CONVENTION)


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
    torch, transformers = _hf()
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


def test_llama_4_scout_published_total_includes_vision():
    """The card's 109B is the whole multimodal release: the text model (this row) plus the vision
    encoder and projector of the same config.json (vision_config: hidden_size 1408,
    intermediate_size 5632, 34 layers, 16 heads, patch 14, image 336, projector 4096 -> 4096,
    pixel_shuffle_ratio 0.5). Together: 108.64B, which rounds to 109B."""
    torch, transformers = _hf()
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
