"""Weights as stored (descent.weights) and the compute ceiling (descent.hardware), against published
file and checkpoint sizes and hand arithmetic."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descent import cli, transformer
from descent.catalog import accelerators, model, models
from descent.hardware import compute_bound_batch, decode_ceiling, prefill_time
from descent.memory import size
from descent.step import peak_flops
from descent.units import GB, GiB
from descent.weights import GROUPS, bytes_by_group, gguf_tensor_type, released_map, tensors


def total(mid: str, weights: str) -> float:
    return sum(bytes_by_group(mid, weights).values())


# -- published sizes (within 1%) ----------------------------------------------------------------


def test_llama_8b_q4_k_m_is_llama_cpps_published_size():
    # llama.cpp tools/quantize/README.md, Llama-3.1-8B table, row Q4_K_M: 4.58 GiB, 4.8944 bits/weight.
    b = total("llama-3.1-8b", "q4_k_m")
    assert b / GiB == pytest.approx(4.58, rel=0.01)
    assert b * 8 / transformer.param_counts(model("llama-3.1-8b")).total == pytest.approx(4.8944, rel=0.001)


def test_llama_70b_q4_k_m_is_the_published_file():
    # bartowski/Meta-Llama-3.1-70B-Instruct-GGUF (README file table): Q4_K_M 42.52 GB (decimal, as the
    # same table's Q8_0 74.98 GB = 70.55e9 x 8.5 / 8 shows).
    assert total("llama-3.1-70b", "q4_k_m") / GB == pytest.approx(42.52, rel=0.01)


@pytest.mark.parametrize(("mid", "gib"), [("gpt-oss-120b", 60.8), ("gpt-oss-20b", 12.8)])
def test_gpt_oss_released_checkpoint(mid, gib):
    # gpt-oss model card (arXiv:2508.10925), table 1 "Checkpoint Size": 60.8 GiB and 12.8 GiB: the
    # experts in MXFP4 (4.25 bits with the E8M0 scale per 32), every other weight in BF16.
    assert released_map(mid).by_group["experts"] == "mxfp4"
    assert total(mid, "released") / GiB == pytest.approx(gib, rel=0.01)


def test_gpt_oss_q8_0_fits_one_h100():
    # Issue case: the Q8_0 GGUF keeps the experts in MXFP4: 114.7 B x 4.25 / 8 + 2.13 B x 8.5 / 8 ~ 63.2 GB
    # (published Q8_0 files are about 63 GB), so it fits one 80 GiB H100 instead of "needs 2".
    s = size("gpt-oss-120b", "h100-sxm", "q8_0")
    assert s.weights_bytes / GB == pytest.approx(63.2, rel=0.01)
    assert s.fits and s.accelerators_needed == 1


def test_deepseek_v3_released_groups_by_hand():
    # README_WEIGHTS.md: linear weights FP8 E4M3 + one FP32 scale per 128 x 128 block = 8 + 32/16384 bits;
    # embed_tokens and lm_head (129,280 x 7,168 each) in BF16: 2 x 926,679,040 x 2 bytes = 3.707 GB.
    g = bytes_by_group("deepseek-v3", "released")
    pc = transformer.param_counts(model("deepseek-v3"))
    assert g["embedding"] + g["output_head"] == 2 * 129_280 * 7_168 * 2
    assert g["experts"] == pytest.approx(pc.experts * (8 + 32 / 16384) / 8, rel=1e-12)


def test_deepseek_v3_released_is_the_published_checkpoint():
    # deepseek-ai/DeepSeek-V3 on Hugging Face, model.safetensors.index.json: metadata.total_size =
    # 688,586,727,753 bytes. The checkpoint holds the 671 B main model plus one MTP module
    # (README_WEIGHTS.md: "11.5B unique parameters", num_nextn_predict_layers = 1): a 62nd layer like
    # the last MoE layer, eh_proj (7,168 x 14,336, FP8 with block scales), and its own stored copies of
    # the BF16 embedding and head (shared at run time, stored twice). Our main model plus that module
    # is the file within 1%; the main model alone is 2.2% short of it.
    m = model("deepseek-v3")
    g = bytes_by_group(m, "released")
    fp8_block = (8 + 32 / 16384) / 8  # bytes per weight: FP8 E4M3 + one FP32 scale per 128 x 128
    last = [t for t in tensors(m) if t.layer == m.num_layers - 1]
    mtp = sum(t.params for t in last) * fp8_block + 7_168 * 14_336 * fp8_block
    mtp += g["embedding"] + g["output_head"]
    published = 688_586_727_753
    assert sum(g.values()) + mtp == pytest.approx(published, rel=0.01)
    assert sum(g.values()) < 0.985 * published  # the main model alone is not the file


# -- the groups and matrices are the parameter count ------------------------------------------


@pytest.mark.parametrize("mid", list(models()))
def test_groups_add_up_to_the_exact_count(mid):
    m = model(mid)
    pc = transformer.param_counts(m)
    # One precision for all: bytes = every parameter x bits / 8, group by group.
    assert bytes_by_group(m, "bf16") == {g: getattr(pc, g) * 2.0 for g in GROUPS}
    for g in GROUPS:  # the matrices never exceed their group (the rest are biases, norms, sinks)
        assert sum(t.params for t in tensors(m) if t.group == g) <= getattr(pc, g)
    assert released_map(mid).source


def test_gguf_rules_fall_back_on_rows_that_are_not_whole_super_blocks():
    # gpt-oss: d_model 2,880 is not a multiple of 256 (2,880 = 11 x 256 + 64), so Q4_K falls back to
    # Q5_0 and Q6_K to Q8_0 (llama.cpp tensor_type_fallback); its MXFP4 experts are kept.
    m = model("gpt-oss-120b")
    ts = tensors(m)
    ctx = {"i_attention_wv": 0, "n_attention_wv": m.num_layers, "n_ffn_down": m.num_layers}
    q = next(t for t in ts if t.role == "attn_q")
    assert gguf_tensor_type(m, "q4_k_m", q, ctx) == "Q5_0"
    out = next(t for t in ts if t.role == "output")
    assert gguf_tensor_type(m, "q4_k_m", out, ctx) == "Q8_0"
    exp = next(t for t in ts if t.group == "experts")
    assert gguf_tensor_type(m, "q4_k_m", exp, ctx) == "MXFP4"
    # Llama 3.1 70B (d_model 8,192 = 32 x 256): the head gets Q6_K, a middle attn_v Q5_K (the 70B rule).
    m = model("llama-3.1-70b")
    ts = tensors(m)
    out = next(t for t in ts if t.role == "output")
    assert gguf_tensor_type(m, "q4_k_m", out, {}) == "Q6_K"
    v = [t for t in ts if t.role == "attn_v"][11]  # layer 11: (11 - 10) % 3 != 2, not a use_more_bits layer
    assert gguf_tensor_type(m, "q4_k_m", v, {"i_attention_wv": 11, "n_attention_wv": 80, "n_ffn_down": 80}) == "Q5_K"


# -- the compute ceiling ---------------------------------------------------------------------------


def test_llama_70b_fp8_h200_large_batch_is_compute_bound():
    # Issue case: context 128, batch 1024. The FP8 dense peak allows at most 1.979e15 / (2 x 70.55e9) =
    # 14,025 tokens/s; the model's matmuls use 69.5e9 of its 70.55e9 weights (the embedding lookup is a
    # gather, not a matmul), so the exact roof is peak / flops_per_token, about 1.3% higher. The token
    # decoded at context 128 attends to the 128 cached tokens and itself: flops_per_token at 129.
    s = size("llama-3.1-70b", "h200", "fp8", "bf16", 128, 1024)
    assert s.bound == "compute" and s.compute_precision == "fp8"
    per_token = transformer.flops_per_token(model("llama-3.1-70b"), 129)
    assert s.peak_flops == peak_flops("h200", "fp8") == pytest.approx(1.979e15, rel=1e-3)  # datasheet, dense
    assert s.decode_tokens_per_s_total == pytest.approx(s.peak_flops / per_token, rel=1e-9)
    assert s.decode_tokens_per_s_total == pytest.approx(1.979e15 / (2 * 70.55e9), rel=0.02)
    assert s.decode_tokens_per_s_total < 43_706 / 3  # the bandwidth-only figure it replaces


def test_compute_bound_batch_is_where_the_bound_flips():
    b = compute_bound_batch("llama-3.1-70b", "h200", "fp8", "bf16", 128)
    assert decode_ceiling("llama-3.1-70b", "h200", "fp8", "bf16", 128, b).bound == "compute"
    assert decode_ceiling("llama-3.1-70b", "h200", "fp8", "bf16", 128, b - 1).bound == "memory"
    # At 8,192 tokens each sequence's KV cache (2.68 GB in BF16) takes far longer to read than its
    # 141 GFLOP take to compute: no batch is compute-bound.
    assert compute_bound_batch("llama-3.1-70b", "h200", "fp8", "bf16", 8192) is None


def test_prefill_is_compute_bound():
    p = prefill_time("llama-3.1-70b", "h200", "fp8", "bf16", 8192)
    assert p.bound == "compute" and p.intensity > p.ridge
    # 8,192 tokens x 2 x 69.5e9 matmul weights ~ 1.14e15 FLOP, plus attention: about 0.6 s at 1.979 PFLOP/s.
    assert 0.5 < p.seconds < 0.8


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(list(models())), st.sampled_from(list(accelerators())),
       st.sampled_from(["bf16", "fp8", "mxfp4", "q4_k_m", "released"]),
       st.integers(1, 65_536), st.integers(1, 4096))
def test_speed_never_exceeds_the_peak(mid, aid, w, context, batch):
    c = decode_ceiling(mid, aid, w, "bf16", context, batch)
    # A step's arithmetic is at most the batch times a token's with full attention to every position
    # (descent.transformer.flops_per_token; a sliding-window or chunked layer attends to fewer: Llama 4
    # Scout's chunked layers at 8,192 tokens attend to one, which the full count does not know), and
    # the steps per second times it never pass the peak.
    assert c.flops_per_step <= c.batch * transformer.flops_per_token(model(mid), context + 1) * (1 + 1e-9)
    assert c.tokens_per_s_per_sequence * c.flops_per_step <= peak_flops(aid, c.compute_precision) * (1 + 1e-9)
    assert c.tokens_per_s_per_sequence * c.bytes_per_step <= accelerators()[aid].memory_bandwidth * (1 + 1e-9)


# -- the command line ---------------------------------------------------------------------------


def test_cli_weights_default_to_released_and_report_groups(capsys):
    assert cli.main(["size", "gpt-oss-120b", "-a", "h100-sxm", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["weights"] == "released" and set(out["weights_bytes_by_group"]) == set(GROUPS)
    assert out["weights_bytes"] == pytest.approx(sum(out["weights_bytes_by_group"].values()))
    assert out["bound"] == "memory" and out["fits"] is True
    assert cli.main(["size", "llama-3.1-70b", "-w", "fp8", "-c", "128", "-b", "1024", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["bound"] == "compute" and out["compute_bound_batch"] == compute_bound_batch(
        "llama-3.1-70b", "h200", "fp8", "bf16", 128)
    assert cli.main(["size", "--runtime-percent", "60"]) == 2
    assert "Runtime allowance must be 0 to 50" in capsys.readouterr().err


@pytest.mark.parametrize("source", ['""', '"   "', "3"])
def test_released_rows_need_a_non_empty_source(monkeypatch, source):
    # Issue 15: every catalog value needs a source; a blank one is refused like a missing one.
    from descent import catalog, weights

    monkeypatch.setattr(catalog, "read_file", lambda name: f'[smollm2-135m]\ndefault = "bf16"\nsource = {source}\n')
    weights._released_table.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"released.toml \[smollm2-135m\]: every row needs a non-empty source"):
            weights.released_map("smollm2-135m")
    finally:
        monkeypatch.undo()
        weights._released_table.cache_clear()


# -- a uniform format sized as its checkpoints are released --------------------------------------


def test_fp8_keeps_the_embedding_head_and_norms_in_bf16():
    """NVIDIA's ModelOpt FP8 checkpoints quantize only the linear layers inside the transformer blocks
    (model card of nvidia/Llama-3.1-70B-Instruct-FP8; ModelOpt's _default_disabled_quantizer_cfg turns
    off *lm_head*): descent.weights.KEPT_IN_BF16. Llama 3.1 70B's config.json: vocabulary 128,256 x
    d_model 8,192 = 1,050,673,152 parameters in the embedding and as many in the untied head; norms
    80 layers x 2 x 8,192 + 8,192 (the final one) = 1,318,912."""
    fp8, int8 = bytes_by_group("llama-3.1-70b", "fp8"), bytes_by_group("llama-3.1-70b", "int8")
    assert fp8["embedding"] == fp8["output_head"] == 1_050_673_152 * 2  # BF16: 2 bytes a parameter
    assert fp8["norms"] == 1_318_912 * 2
    assert fp8["attention"] == int8["attention"] and fp8["dense_ffn"] == int8["dense_ffn"]  # 1 byte each
    # 70,553,706,496 parameters: 68,451,041,280 at 1 byte, 2,102,665,216 at 2 = 72,656,371,712 bytes
    # (70,553,706,496 when every parameter took one byte; INT8, which no such rule covers, still does).
    assert sum(fp8.values()) == 72_656_371_712
    assert sum(int8.values()) == 70_553_706_496
    # NVFP4 (ModelOpt too) keeps the same groups; a MoE's routers stay BF16 as well.
    assert bytes_by_group("llama-3.1-70b", "nvfp4")["embedding"] == 1_050_673_152 * 2
    moe = bytes_by_group("qwen3-235b-a22b", "fp8")
    assert moe["router"] == transformer.param_counts(model("qwen3-235b-a22b")).router * 2
    from descent.weights import describe
    assert describe("llama-3.1-70b", "fp8") == "FP8, embedding, output head and norms in BF16"
    assert describe("qwen3-235b-a22b", "fp8") == "FP8, embedding, output head, norms and router in BF16"
    assert describe("llama-3.1-70b", "int8") == "INT8"


def test_the_groups_kept_in_bf16_cite_their_sources():
    """KEPT_IN_BF16's sources: ModelOpt's model cards and default config for fp8/nvfp4, and for DeepSeek's
    fp8_b128 the DeepSeek-V3 Technical Report (arXiv:2412.19437, section 3.3.1: the embedding module, the
    output head, MoE gating and normalization stay in their original precision); README_WEIGHTS.md does
    not say so. Part 5 names whose FP8 and NVFP4 checkpoints these are."""
    import inspect
    from pathlib import Path

    from descent import weights

    text = inspect.getsource(weights)
    cited = text[text.index("#: * ``fp8_b128``"):text.index("KEPT_IN_BF16: dict")]
    assert "arXiv:2412.19437" in cited and "3.3.1" in cited and "README_WEIGHTS" not in cited
    assert "_default_disabled_quantizer_cfg" in text
    page = (Path(__file__).parents[1] / "docs" / "part-5-the-whole-descent.md").read_text(encoding="utf-8")
    assert "NVIDIA's ModelOpt FP8 and NVFP4 checkpoints quantize only the" in " ".join(page.split())
