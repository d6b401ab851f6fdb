"""The model catalog: the rows, their sources, and how malformed rows are rejected."""

from __future__ import annotations

import dataclasses
import re

import pytest

from descent.catalog import (
    MLA,
    CatalogError,
    ChunkedAttention,
    LinearAttention,
    Model,
    MoE,
    SlidingWindow,
    load_models,
    model,
    models,
)

#: Rows that tests and pages name, in catalog order. More rows may be added anywhere; these must stay.
KNOWN_IDS = [
    "smollm2-135m",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "mistral-7b-v0.1",
    "mixtral-8x7b",
    "qwen3-8b",
    "qwen3-235b-a22b",
    "gpt-oss-20b",
    "gpt-oss-120b",
    "deepseek-v3",
    "gemma-3-27b",
    "llama-4-scout",
    "kimi-k2",
    "qwen3-next-80b-a3b",
]

#: Every row: the per-row tests below iterate the catalog, so a new row is checked without edits here.
ROWS = [pytest.param(m, id=m.id) for m in models().values()]


def test_known_rows_are_present_in_order():
    assert [i for i in models() if i in KNOWN_IDS] == KNOWN_IDS


@pytest.mark.parametrize("m", ROWS)
def test_id_is_a_lowercase_slug(m):
    # ids appear in URLs (reference page anchors), CLI arguments and shortcode arguments
    assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*", m.id), m.id


def _field_names(m: Model) -> list[str]:
    """Every field of the row, nested ones as 'moe.num_experts'."""
    names = []
    for f in dataclasses.fields(m):
        if f.name == "sources":
            continue
        value = getattr(m, f.name)
        if dataclasses.is_dataclass(value):
            names += [f"{f.name}.{g.name}" for g in dataclasses.fields(value)]
        else:
            names.append(f.name)
    return names


@pytest.mark.parametrize("m", ROWS)
def test_every_field_has_a_source(m):
    for name in _field_names(m):
        src = m.source_of(name)
        assert isinstance(src, str) and len(src) > 10, (m.id, name)


@pytest.mark.parametrize("m", ROWS)
def test_source_keys_name_real_fields(m):
    # A typo in a [<id>.sources] key would silently fall back to the default source.
    names = set(_field_names(m))
    allowed = {"default"} | names | {n.split(".")[0] for n in names}
    assert set(m.sources) <= allowed, sorted(set(m.sources) - allowed)


@pytest.mark.parametrize("m", ROWS)
def test_default_source_is_the_config_json_of_hf_repo(m):
    assert m.sources["default"].startswith(f"https://huggingface.co/{m.hf_repo}/")
    assert "config.json" in m.sources["default"]


@pytest.mark.parametrize("m", ROWS)
def test_published_counts_have_their_own_source_and_a_note(m):
    assert m.source_of("params_total_published") != m.sources["default"]
    assert m.params_published_note
    if m.is_moe:
        assert m.params_active_published is not None
        assert m.source_of("params_active_published") != m.sources["default"]
        assert m.params_active_published < m.params_total_published
    else:
        assert m.params_active_published is None


def test_nested_sources_fall_back_to_the_nested_table_source():
    m = model("deepseek-v3")
    # [deepseek-v3.sources] mla = "... section 2.1.1": every mla.* field uses it
    assert "2.1.1" in m.source_of("mla.kv_lora_rank")
    assert m.source_of("hidden_size") == m.sources["default"]


def test_unknown_model_id_lists_the_allowed_ids():
    with pytest.raises(ValueError, match="allowed: smollm2-135m, llama-3.1-8b"):
        model("llama-4")


def test_architecture_shapes_of_the_special_rows():
    """Spot values copied from each config.json (see the row's sources)."""
    ds = model("deepseek-v3")
    assert ds.mla == MLA(
        q_lora_rank=1536, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128
    )
    assert ds.moe.num_experts == 256 and ds.moe.experts_per_token == 8
    assert ds.moe.num_shared_experts == 1 and ds.moe.first_dense_layers == 3
    assert model("mistral-7b-v0.1").sliding == SlidingWindow(window=4096)
    assert model("gemma-3-27b").sliding == SlidingWindow(window=1024, full_attention_every=6)
    assert model("gemma-3-27b").norms_per_layer == 4
    oss = model("gpt-oss-120b")
    assert oss.sliding == SlidingWindow(window=128, full_attention_every=2)
    assert oss.sliding.is_sliding(0) and not oss.sliding.is_sliding(1)  # first layer slides
    assert oss.moe == MoE(
        num_experts=128,
        experts_per_token=4,
        expert_intermediate_size=2880,
        router_bias=True,
        expert_bias=True,
    )
    assert oss.attention_sinks and oss.attention_bias and oss.attention_out_bias
    assert model("qwen3-8b").qk_norm and model("qwen3-235b-a22b").qk_norm
    tied = {m.id for m in models().values() if m.tie_embeddings}
    assert {"smollm2-135m", "gemma-3-27b"} <= tied and not tied & {"llama-3.1-8b", "deepseek-v3"}


def test_late_2026_rows():
    """Llama 4 Scout, Kimi K2 and Qwen3-Next, spot values from their config.json (row sources)."""
    scout = model("llama-4-scout")
    assert scout.chunked == ChunkedAttention(chunk=8192, full_attention_every=4)
    assert scout.chunked.is_chunked(0) and not scout.chunked.is_chunked(3)  # layer 3 is global
    assert scout.moe.num_experts == 16 and scout.moe.experts_per_token == 1
    assert scout.moe.num_shared_experts == 1 and scout.moe.router_scoring == "sigmoid"
    assert scout.max_context == 10_485_760
    kimi = model("kimi-k2")
    assert kimi.mla == model("deepseek-v3").mla and kimi.num_heads == 64
    assert (kimi.moe.num_experts, kimi.moe.experts_per_token, kimi.moe.first_dense_layers) == (384, 8, 1)
    nxt = model("qwen3-next-80b-a3b")
    assert nxt.linear_attention == LinearAttention(
        num_key_heads=16, num_value_heads=32, key_head_dim=128, value_head_dim=128, conv_kernel=4,
        full_attention_every=4,
    )
    assert nxt.attention_output_gate and nxt.moe.shared_expert_gate
    # 2 x 16 x 128 (q, k) + 32 x 128 (v) channels of the causal convolution
    assert nxt.linear_attention.conv_dim == 8192
    # 32 x 128 x 128 + (4 - 1) x 8,192 values per layer, whatever the context
    assert nxt.linear_attention.state_elements == 524_288 + 24_576
    assert model("gemma-3-27b").ffn_gate == "GeGLU" and model("gpt-oss-120b").ffn_gate == "clamped SwiGLU"
    assert model("llama-3.1-70b").ffn_gate == "SwiGLU"  # the default
    assert {m.moe.router_scoring for m in models().values() if m.moe} == {"softmax", "sigmoid"}


# ---------------------------------------------------------------------------------------------
# Malformed rows
# ---------------------------------------------------------------------------------------------

GOOD = """
[toy]
name = "Toy"
hf_repo = "org/toy"
hidden_size = 64
num_layers = 2
num_heads = 4
num_kv_heads = 2
head_dim = 16
intermediate_size = 128
vocab_size = 100
tie_embeddings = true
max_context = 1024
params_total_published = 1e5

[toy.moe]
num_experts = 4
experts_per_token = 2
expert_intermediate_size = 32

[toy.sources]
default = "https://example.org/config.json"
"""

FILE = "bad-models.toml"


def test_good_toy_row_loads():
    m = load_models(GOOD, FILE)["toy"]
    assert m.num_kv_heads == 2 and m.moe.num_experts == 4


@pytest.mark.parametrize(
    ("old", "new", "field", "what"),
    [
        ("hidden_size = 64", 'hidden_size = "64"', "hidden_size", "must be int"),
        ("tie_embeddings = true", "tie_embeddings = 1", "tie_embeddings", "must be bool"),
        ("num_layers = 2", "num_layers = 2.5", "num_layers", "must be int"),
        ("head_dim = 16", "head_dim = 16\nhead_size = 16", "head_size", "unknown field"),
        ("num_layers = 2\n", "", "num_layers", "missing required field"),
        ("num_kv_heads = 2", "num_kv_heads = 3", "num_kv_heads", "must divide num_heads"),
        ("num_heads = 4", "num_heads = -4", "num_heads", "must not be negative"),
        ("experts_per_token = 2", "experts_per_token = 5", "moe.experts_per_token", "1 to moe.num_experts"),
        (
            "expert_intermediate_size = 32",
            "expert_intermediate_size = 32\nwidth = 3",
            "width",
            "unknown field",
        ),
        ('default = "https://example.org/config.json"', 'other = "x"', "sources.default", "required"),
        ("expert_intermediate_size = 32", 'expert_intermediate_size = 32\nrouter_scoring = "relu"',
         "moe.router_scoring", "must be one of softmax, sigmoid"),
        ("max_context = 1024", 'max_context = 1024\nffn_gate = "ReLU"', "ffn_gate", "must be one of SwiGLU"),
        ("[toy.sources]", "[toy.chunked]\nchunk = 0\n[toy.sources]", "chunked.chunk", "positive"),
        ("[toy.sources]", "[toy.chunked]\nchunk = 8\nfull_attention_every = 3\n[toy.sources]",
         "chunked.full_attention_every", "1 to num_layers"),
        ("[toy.sources]", "[toy.chunked]\nchunk = 8\n[toy.sliding]\nwindow = 8\n[toy.sources]",
         "'sliding' and 'chunked'", "exclude each other"),
        ("[toy.sources]",
         "[toy.linear_attention]\nnum_key_heads = 0\nnum_value_heads = 1\n"
         "key_head_dim = 4\nvalue_head_dim = 4\nconv_kernel = 4\nfull_attention_every = 2\n[toy.sources]",
         "linear_attention.num_key_heads", "positive"),
        # Issue 15: every value needs a non-empty source; a source key names a field.
        ('default = "https://example.org/config.json"', 'default = ""', "sources.default", "non-empty text"),
        ('default = "https://example.org/config.json"',
         'default = "https://example.org/config.json"\nhead_dim = "  "', "sources.head_dim", "non-empty text"),
        ('default = "https://example.org/config.json"',
         'default = "https://example.org/config.json"\nhead_dims = "x"', "sources.head_dims", "names no field"),
        # Issue 15: a value no real model has is the row's problem, named with its limit (10^12
        # layers used to make the build loop over every layer, for ever).
        ("num_layers = 2", "num_layers = 1000000000000", "num_layers",
         "= 1,000,000,000,000 is outside its plausible range 1 to 1,000 layers (descent.catalog.PLAUSIBLE_MODEL)"),
        ("max_context = 1024", "max_context = 100000000", "max_context", "plausible range 1 to 20,000,000 tokens"),
        ("num_experts = 4", "num_experts = 4000000", "moe.num_experts", "plausible range 1 to 100,000 experts"),
        ("params_total_published = 1e5", "params_total_published = 1e20", "params_total_published",
         "plausible range"),
    ],
)
def test_malformed_row_names_file_row_and_field(old, new, field, what):
    assert old in GOOD
    bad = GOOD.replace(old, new, 1)
    with pytest.raises(CatalogError) as err:
        load_models(bad, FILE)
    msg = str(err.value)
    assert FILE in msg and "[toy" in msg and field in msg and what in msg, msg


def test_catalog_error_is_a_value_error():
    with pytest.raises(ValueError):
        load_models("[toy]\nname = 1\n", FILE)


def test_the_calculators_accept_every_models_longest_context():
    """params.CONTEXT.max is a calculator bound, above every row's max_context (Llama 4 Scout's
    config.json allows 10,485,760 tokens), so each model can be sized at the length it supports."""
    from descent import params

    longest = max(m.max_context for m in models().values())
    assert longest == 10_485_760 and longest <= params.CONTEXT.max
def test_plausible_ranges_hold_every_real_row_and_name_real_fields():
    """The ranges are wide enough for every catalog row (it loads) and name only real fields."""
    from descent.catalog import PLAUSIBLE_MODEL

    names = set(_field_names(models()["deepseek-v3"])) | set(_field_names(models()["gemma-3-27b"]))
    names |= {f"moe.{f.name}" for f in dataclasses.fields(MoE)} | {f"mla.{f.name}" for f in dataclasses.fields(MLA)}
    names |= {f"sliding.{f.name}" for f in dataclasses.fields(SlidingWindow)}
    assert set(PLAUSIBLE_MODEL) <= names, set(PLAUSIBLE_MODEL) - names
    for name, (low, high, _unit) in PLAUSIBLE_MODEL.items():
        assert 0 <= low < high, name
