"""The released config.json files (tests/data/configs) against the catalog and against transformers.

* Each catalog model's config.json, read by descent.hfconfig, gives that catalog row: the same
  architecture fields, so the same parameter counts and KV-cache bytes. The catalog rows were
  typed from these files; the parser reads them independently: each checks the other.
* transformers (``AutoConfig.for_model(**config)``) reads the same shape from the same dict.
* The files under other/ (architectures with no catalog row) give transformers' own parameter
  count (the CausalLM on the meta device) and the publisher's figure.

Host only (the files are not copied into Pyodide; tests/test_hfconfig.py runs there).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from descent import hfconfig, memory, transformer, weights
from descent.catalog import Model, models

DATA = Path(__file__).parent / "data" / "configs"
CATALOG_FILES = {p.stem: p for p in sorted(DATA.glob("*.json")) if p.name != "sources.json"}
OTHER_FILES = {p.stem: p for p in sorted((DATA / "other").glob("*.json"))}
SOURCES = json.loads((DATA / "sources.json").read_text(encoding="utf-8"))

#: Model fields that describe the release, not the architecture (the parser cannot know them).
META = {"id", "name", "hf_repo", "params_total_published", "params_active_published", "params_published_note",
        "sources", "released_by_group", "torch_dtype"}
ARCH_FIELDS = [f.name for f in dataclasses.fields(Model) if f.name not in META]


def read(path: Path) -> Model:
    return hfconfig.read_config(path.read_text(encoding="utf-8"), source=path.name)


#: Catalog rows without a config.json here yet, each with the reason (a known gap, listed so it
#: cannot grow silently). Empty: Llama 4 Scout (chunked attention) and Qwen3-Next (linear
#: attention) were the last two.
NO_CONFIG_YET: dict[str, str] = {}


def test_every_catalog_model_has_its_config_and_a_source():
    assert set(NO_CONFIG_YET) <= set(models()) and not set(NO_CONFIG_YET) & set(CATALOG_FILES)
    assert sorted(CATALOG_FILES) == sorted(set(models()) - set(NO_CONFIG_YET))
    for key in [*CATALOG_FILES, *(f"other/{k}" for k in OTHER_FILES)]:
        src = SOURCES[key]
        assert src["url"].startswith("https://huggingface.co/") and src["url"].endswith("/config.json"), key
        assert src["checked_against"], key
    assert len(SOURCES) == len(CATALOG_FILES) + len(OTHER_FILES)
    for model_id in CATALOG_FILES:
        # The file is the catalog row's source: the same repository.
        assert models()[model_id].hf_repo in SOURCES[model_id]["url"], model_id


@pytest.mark.parametrize("model_id", list(CATALOG_FILES))
def test_config_json_gives_the_catalog_row(model_id):
    row, got = models()[model_id], read(CATALOG_FILES[model_id])
    assert {f: getattr(got, f) for f in ARCH_FIELDS} == {f: getattr(row, f) for f in ARCH_FIELDS}
    assert transformer.param_counts(got) == transformer.param_counts(row)
    assert transformer.kv_elements_per_token(got) == transformer.kv_elements_per_token(row)
    for context in (1, 4096, 131_072):
        assert transformer.kv_cache_elements(got, context) == transformer.kv_cache_elements(row, context)
    # The file's torch_dtype and quantization_config give the catalog's "as released" map
    # (catalog/released.toml, typed from the same files' model cards and READMEs).
    assert weights.released_map(got).by_group == weights.released_map(row).by_group
    # The whole sizing (weights as released and at one precision, KV bytes, decode ceiling) is the row's.
    for w in ("released", "bf16", "q4_k_m"):
        ours = dataclasses.asdict(memory.size(got, "h200", w, "fp8", 32_768, 4))
        theirs = dataclasses.asdict(memory.size(row, "h200", w, "fp8", 32_768, 4))
        assert ours.pop("model") == hfconfig.CUSTOM_ID and theirs.pop("model") == model_id
        assert ours == theirs


def test_defaults_say_where_they_come_from():
    g = read(CATALOG_FILES["gemma-3-27b"])
    # The release's text_config leaves these out; Gemma3TextConfig supplies them (the catalog
    # row's sources say the same).
    assert "Gemma3TextConfig default 262208" in g.source_of("vocab_size")
    assert "Gemma3TextConfig default 131072" in g.source_of("max_context")
    assert "every 6th layer is full" in g.source_of("sliding")
    s = read(CATALOG_FILES["smollm2-135m"])
    assert "576 / 9 = 64" in s.source_of("head_dim")
    d = read(CATALOG_FILES["deepseek-v3"])
    assert "128 + 64 = 192" in d.source_of("head_dim")


# -- transformers reads the same dict ------------------------------------------------------------

ALL_FILES = {**CATALOG_FILES, **{f"other/{k}": p for k, p in OTHER_FILES.items()}}
#: model_types transformers has no class for (Kimi K2 needs trust_remote_code).
NO_TRANSFORMERS_CLASS = {"kimi_k2"}


#: model_types whose language model transformers keeps in ``text_config``.
WRAPPERS = {"gemma3", "llama4"}


def _hf_config(d: dict):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.AutoConfig.for_model(**{k: v for k, v in d.items() if k not in ("quantization_config", "auto_map")})
    return cfg.text_config if d["model_type"] in WRAPPERS else cfg


def _layer_kind(m: Model, i: int) -> str:
    """transformers' layer_types name of 0-based layer ``i`` of ``m``."""
    if m.sliding is not None and m.sliding.is_sliding(i):
        return "sliding_attention"
    if m.chunked is not None and m.chunked.is_chunked(i):
        return "chunked_attention"
    if m.linear_attention is not None and m.linear_attention.is_linear(i):
        return "linear_attention"
    return "full_attention"


@pytest.mark.peer
@pytest.mark.parametrize("key", list(ALL_FILES))
def test_transformers_reads_the_same_shape(key):
    d = json.loads(ALL_FILES[key].read_text(encoding="utf-8"))
    if d["model_type"] in NO_TRANSFORMERS_CLASS:
        pytest.skip(f"transformers has no {d['model_type']} class")
    c, m = _hf_config(d), read(ALL_FILES[key])
    assert (c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.num_key_value_heads) == (
        m.hidden_size, m.num_layers, m.num_heads, m.num_kv_heads)
    # Llama 4 names a dense layer's width intermediate_size_mlp and an expert's intermediate_size;
    # Model.intermediate_size is the dense width everywhere (moe.expert_intermediate_size the expert's).
    dense = c.intermediate_size_mlp if d["model_type"] == "llama4" else c.intermediate_size
    assert (dense, c.vocab_size, c.max_position_embeddings) == (m.intermediate_size, m.vocab_size, m.max_context)
    assert bool(c.tie_word_embeddings) == m.tie_embeddings
    if m.mla is None:
        assert (getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads) == m.head_dim
    else:
        assert c.qk_nope_head_dim + c.qk_rope_head_dim == m.head_dim
        assert (c.kv_lora_rank, c.qk_rope_head_dim, c.v_head_dim, c.q_lora_rank or 0) == (
            m.mla.kv_lora_rank, m.mla.qk_rope_head_dim, m.mla.v_head_dim, m.mla.q_lora_rank)
    if m.moe is not None:
        experts = getattr(c, "num_local_experts", None) or getattr(c, "n_routed_experts", None) or c.num_experts
        assert (experts, c.num_experts_per_tok) == (m.moe.num_experts, m.moe.experts_per_token)
        if d["model_type"] == "llama4":  # Llama4TextMoe: the experts and the shared expert are intermediate_size wide
            assert c.intermediate_size == m.moe.expert_intermediate_size == m.moe.shared_expert_intermediate_size
            assert c.moe_layers == list(range(m.moe.first_dense_layers, m.num_layers))
        if getattr(c, "shared_expert_intermediate_size", None) is not None:  # Qwen2-MoE, Qwen3-Next
            assert c.shared_expert_intermediate_size == m.moe.shared_expert_intermediate_size
    # What each layer attends to: transformers' layer_types where it has them (Gemma, gpt-oss, Qwen:
    # sliding; Llama 4: chunked; Qwen3-Next: linear); a sliding layer without a window is full.
    types = getattr(c, "layer_types", None)
    if types is not None:
        window = getattr(c, "sliding_window", None)
        ours = [_layer_kind(m, i) for i in range(m.num_layers)]
        theirs = ["full_attention" if t == "sliding_attention" and window is None else t for t in types]
        assert ours == theirs, key
        if m.sliding is not None:
            assert m.sliding.window == window
    if m.chunked is not None:
        assert c.attention_chunk_size == m.chunked.chunk
    la = m.linear_attention
    if la is not None:
        assert (c.linear_num_key_heads, c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim,
                c.linear_conv_kernel_dim) == (la.num_key_heads, la.num_value_heads, la.key_head_dim,
                                              la.value_head_dim, la.conv_kernel)


#: Published totals (and active counts) of the other/ releases, with the tolerance the publisher's
#: printed precision allows (half a unit in the last digit), and where each comes from.
PUBLISHED = {
    # docs/contributing.md: the safetensors index total_size 15,231,233,024 bytes / 2 (BF16).
    "qwen2.5-7b-instruct": (7_615_616_512, 0, None),
    # Model card: "14.3B parameters in total and 2.7B activated" (embedding table included: 2.69B).
    "qwen1.5-moe-a2.7b": (14.3e9, 0.05e9, (2.7e9, 0.05e9, "with_embedding")),
    # Model page: 9.24B parameters.
    "gemma-2-9b": (9.24e9, 0.005e9, None),
    # Model page: 1B; the exact count 999,885,952 is the checkpoint's.
    "gemma-3-1b-it": (1e9, 0.5e9, None),
    # DeepSeek-V2 paper, arXiv:2405.04434, appendix B: 15.7B total, 2.4B activated. Exact: 2.451B
    # without the embedding table (2.661B with it): the paper truncates to 2.4B, as the Llama 3.1
    # cards do, so the tolerance is one unit in the last digit, not half.
    "deepseek-v2-lite": (15.7e9, 0.05e9, (2.4e9, 0.1e9, "without_embedding")),
    # Model card: 3.8B parameters.
    "phi-3-mini-4k-instruct": (3.8e9, 0.05e9, None),
    # Model card: 32.8B parameters, 31.2B non-embedding (exact: 32.762B and 31.206B).
    "qwen3-32b": (32.8e9, 0.05e9, None),
}


def test_every_other_release_has_its_published_counts():
    assert set(PUBLISHED) == set(OTHER_FILES)


@pytest.mark.parametrize("name", list(OTHER_FILES))
def test_other_releases_match_their_published_counts(name):
    pc = transformer.param_counts(read(OTHER_FILES[name]))
    total, tol, active = PUBLISHED[name]
    assert abs(pc.total - total) <= tol, (name, pc.total)
    if active is not None:
        value, atol, kind = active
        ours = pc.active if kind == "with_embedding" else pc.active - pc.embedding
        assert abs(ours - value) <= atol, (name, ours)


@pytest.mark.peer
@pytest.mark.parametrize("name", list(OTHER_FILES))
def test_other_releases_count_as_transformers_does(name):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    d = json.loads(OTHER_FILES[name].read_text(encoding="utf-8"))
    if d["model_type"] in NO_TRANSFORMERS_CLASS:
        pytest.skip(f"transformers has no {d['model_type']} class")
    c = _hf_config(d)
    cls = transformers.AutoModelForCausalLM._model_mapping[type(c)]
    with torch.device("meta"):
        hf = cls(c)
    n = sum(p.numel() for p in hf.parameters())  # tied tensors are yielded once
    assert transformer.param_counts(read(OTHER_FILES[name])).total == n


def test_the_contributing_example_row_is_its_config_json():
    """docs/contributing.md types Qwen2.5-7B-Instruct's row from its config.json; reading the file
    gives the same architecture (tests/test_contributing.py checks the row's count)."""
    import re
    from importlib import resources

    from descent import catalog

    text = (Path(__file__).resolve().parents[1] / "docs" / "contributing.md").read_text(encoding="utf-8")
    row_text = re.search(r"```toml\n(.*?)```", text, re.S).group(1)
    base = resources.files("descent.catalog").joinpath("models.toml").read_text(encoding="utf-8")
    row = catalog.load_models(base + "\n" + row_text)["qwen2.5-7b"]
    got = read(OTHER_FILES["qwen2.5-7b-instruct"])
    assert {f: getattr(got, f) for f in ARCH_FIELDS} == {f: getattr(row, f) for f in ARCH_FIELDS}
