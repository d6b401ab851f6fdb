"""Tests for descent.memory: the memory budget of a model on one accelerator."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descent import transformer
from descent.catalog import accelerators, models
from descent.memory import fits_in, size
from descent.numerics import KV_PRECISIONS, PRECISIONS
from descent.scenario import Scenario
from descent.step import MAX_BATCH
from descent.units import format_bytes
from descent.weights import GGUF_MIXES

GIB = 2**30


def test_141_1_gb_fits_in_141_gib():
    # H200's "141 GB" is 141 GiB = 141 * 2**30 = 151,397,597,184 bytes = 151.4 GB.
    # A need of 141.1 GB = 141.1e9 bytes fits; read as 141e9 bytes it would not (141.1e9 > 141e9).
    assert accelerators()["h200"].memory_bytes == 151_397_597_184
    assert fits_in(141.1e9, "h200")
    assert 141.1e9 > 141e9
    assert not fits_in(151_397_597_185, "h200")  # one byte over
    with pytest.raises(ValueError, match="total_bytes must be"):
        fits_in(-1, "h200")


def test_h100_capacity_is_80_gib():
    # 80 * 2**30 = 85,899,345,920 bytes.
    assert size("llama-3.1-8b", "h100-sxm").capacity_bytes == 85_899_345_920


def test_segments_add_up():
    s = size("llama-3.1-8b", "h100-sxm", "bf16", "bf16", 8192, 1)
    # Weights: 8,030,261,248 params * 2 bytes = 16,060,522,496 bytes.
    assert s.params_total == 8_030_261_248
    assert s.weights_bytes == 16_060_522_496
    # KV: 32 layers * 8 KV heads * 128 d_head * 2 (K and V) = 65,536 values/token * 2 bytes
    # = 131,072 bytes/token; * 8192 tokens = 1,073,741,824 bytes = exactly 1 GiB.
    assert s.kv_bytes_per_token == 131_072
    assert s.kv_cache_bytes == GIB
    # Runtime: 10% of 85,899,345,920 = 8,589,934,592 bytes (vLLM gpu_memory_utilization 0.9).
    assert Scenario().runtime_percent == 10.0  # 1 - vLLM's gpu_memory_utilization default, 0.9
    assert s.runtime_bytes == pytest.approx(8_589_934_592)
    assert s.free_bytes == pytest.approx(s.capacity_bytes - (16_060_522_496 + GIB + 8_589_934_592))
    # The need is the model's own bytes; the allowance comes off what the chip offers.
    assert s.need_bytes == 16_060_522_496 + GIB
    assert s.usable_bytes == pytest.approx(85_899_345_920 - 8_589_934_592)
    assert s.free_bytes == pytest.approx(s.usable_bytes - s.need_bytes)
    assert s.fits and s.accelerators_needed == 1
    assert sum(b for _, b in s.segments()) == pytest.approx(s.need_bytes + s.runtime_bytes)
    assert [label for label, _ in s.segments()] == ["weights", "KV cache", "runtime allowance"]


def test_does_not_fit_and_counts_chips():
    # Llama 3.1 70B in BF16: 70,553,706,496 * 2 = 141,107,412,992 bytes of weights alone,
    # more than H100's 85,899,345,920. Usable per chip 0.9 * 85,899,345,920 = 77,309,411,328;
    # weights + KV (below) need ceil((weights + KV) / usable) = 2 chips.
    s = size("llama-3.1-70b", "h100-sxm", "bf16", "bf16", 4096, 1)
    assert s.weights_bytes == 141_107_412_992
    # KV: 80 layers * 8 * 128 * 2 = 163,840 values/token * 2 bytes * 4096 tokens = 1,342,177,280.
    assert s.kv_cache_bytes == 1_342_177_280
    assert not s.fits and s.free_bytes < 0
    assert s.accelerators_needed == math.ceil((141_107_412_992 + 1_342_177_280) / 77_309_411_328) == 2


def test_moe_memory_from_total_decode_from_active():
    # Mixtral 8x7B: 46,702,792,704 parameters stored (paper: 47B total, 13B active), so BF16
    # weights are 93,405,585,408 bytes; one token at B = 1 uses 12,879,925,248 (2 of 8 experts).
    s = size("mixtral-8x7b", "h200", "bf16", "bf16", 1, 1)
    assert s.params_total == 46_702_792_704
    assert s.weights_bytes == 2 * 46_702_792_704
    assert s.params_active == 12_879_925_248
    # Decode bytes: active minus the untied 32,000 x 4,096 embedding (131,072,000) plus the one
    # looked-up row (4,096): 12,748,857,344 params * 2 bytes; plus KV for one token:
    # 32 layers * 8 * 128 * 2 = 65,536 values * 2 bytes = 131,072.
    assert s.bytes_per_decode_step == 2 * (12_879_925_248 - 131_072_000 + 4_096) + 131_072
    assert s.bytes_per_decode_step < s.weights_bytes / 3


def test_gpt_oss_120b_mxfp4_fits_on_one_h100():
    # gpt-oss-120b: 116,829,156,672 params * 4.25 / 8 = 62,065,489,482 bytes (MXFP4) < 0.9 * 80 GiB.
    s = size("gpt-oss-120b", "h100-sxm", "mxfp4", "bf16", 4096, 1)
    assert s.weights_bytes == pytest.approx(116_829_156_672 * 4.25 / 8)
    assert s.fits


def test_decode_fields_match_bandwidth():
    s = size("llama-3.1-8b", "h200", "fp8", "fp8", 2048, 16)
    assert s.decode_tokens_per_s == pytest.approx(4.8e12 / s.bytes_per_decode_step)
    assert s.decode_tokens_per_s_total == pytest.approx(16 * s.decode_tokens_per_s)


def test_beyond_max_context_is_flagged_not_refused():
    s = size("smollm2-135m", "rtx-5090", context=16_384)
    assert s.beyond_max_context  # SmolLM2's max_position_embeddings is 8192
    assert not size("smollm2-135m", "rtx-5090", context=8192).beyond_max_context


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"context": 0}, "Context must be 1 to 20,000,000 tokens, got 0"),
        ({"context": 20_000_001}, "Context must be 1 to 20,000,000 tokens"),
        ({"context": 1.5}, "Context must be a whole number from 1 to 20,000,000 tokens, got 1.5"),
        ({"batch": 0}, "Batch must be 1 to 100,000 sequences"),
        ({"batch": MAX_BATCH + 1}, "Batch must be 1 to 100,000"),
        ({"weights": "fp5"}, "unknown weight precision 'fp5'; allowed: released, fp32"),
        ({"kv": "nvfp4"}, "KV-cache precision must be one of: fp32, bf16"),
    ],
)
def test_bad_input_raises_with_allowed_values(kwargs, match):
    args = {"weights": "bf16", "kv": "bf16", "context": 1024, "batch": 1} | kwargs
    with pytest.raises(ValueError, match=match):
        size("llama-3.1-8b", "h100-sxm", **args)


def test_unknown_ids_list_allowed():
    with pytest.raises(ValueError, match="unknown model 'gpt-5'; allowed: smollm2-135m"):
        size("gpt-5", "h100-sxm")
    with pytest.raises(ValueError, match="unknown accelerator 'a100'; allowed: h100-sxm"):
        size("llama-3.1-8b", "a100")


model_ids = st.sampled_from(list(models()))
contexts = st.integers(min_value=1, max_value=2_000_000)
batches = st.integers(min_value=1, max_value=2048)
kv_names = st.sampled_from(list(KV_PRECISIONS))


@settings(max_examples=60, deadline=None)
@given(model_ids, contexts, contexts, batches, kv_names)
def test_more_context_never_fewer_bytes_nor_more_speed(mid, c1, c2, b, kv):
    lo, hi = sorted((c1, c2))
    a, z = size(mid, "b200", "fp8", kv, lo, b), size(mid, "b200", "fp8", kv, hi, b)
    assert a.kv_cache_bytes <= z.kv_cache_bytes
    assert a.need_bytes <= z.need_bytes
    assert a.bytes_per_decode_step <= z.bytes_per_decode_step
    assert a.decode_tokens_per_s >= z.decode_tokens_per_s


@settings(max_examples=60, deadline=None)
@given(model_ids, contexts, batches, batches, kv_names)
def test_more_batch_never_fewer_bytes_and_kv_linear(mid, c, b1, b2, kv):
    lo, hi = sorted((b1, b2))
    a, z = size(mid, "mi355x", "bf16", kv, c, lo), size(mid, "mi355x", "bf16", kv, c, hi)
    assert a.need_bytes <= z.need_bytes
    assert a.bytes_per_decode_step <= z.bytes_per_decode_step
    one = size(mid, "mi355x", "bf16", kv, c, 1).kv_cache_bytes
    assert z.kv_cache_bytes == pytest.approx(hi * one, rel=1e-12)
    # The KV cache is elements * batch * bits / 8 with the transformer's element count, except a
    # linear-attention state, which stays at its own 2 bytes (BF16) whatever the KV precision.
    m = models()[mid]
    state = transformer.state_elements(m)
    assert one == pytest.approx(
        (transformer.kv_cache_elements(m, c) - state) * KV_PRECISIONS[kv].bytes_per_weight + state * 2
    )


#: One precision for every weight (the GGUF names are per-tensor mixes: see the next test).
UNIFORM = [p for p in PRECISIONS if p not in GGUF_MIXES]


@settings(max_examples=60, deadline=None)
@given(model_ids, st.sampled_from(UNIFORM), st.sampled_from(UNIFORM))
def test_more_bits_never_fewer_bytes(mid, p, q):
    # Per weight: a format that keeps some groups in BF16 as its checkpoints do (FP8, NVFP4, block FP8:
    # descent.weights.KEPT_IN_BF16) is compared only with one that keeps at least those, or stores all at 16+ bits.
    from descent.weights import KEPT_IN_BF16

    kept_too = set(KEPT_IN_BF16.get(p, ())) <= set(KEPT_IN_BF16.get(q, ())) or PRECISIONS[q].bits_per_weight >= 16
    if PRECISIONS[p].bits_per_weight <= PRECISIONS[q].bits_per_weight and kept_too:
        a, z = size(mid, "tpu-v7", p, "bf16", 4096, 2), size(mid, "tpu-v7", q, "bf16", 4096, 2)
        assert a.weights_bytes <= z.weights_bytes
        assert a.bytes_per_decode_step <= z.bytes_per_decode_step


@pytest.mark.parametrize("mid", list(models()))
def test_gguf_mixes_grow_with_their_base_type(mid):
    # Each mix's base type has more bits than the last (Q4_K 4.5 < Q5_K 5.5 < Q6_K 6.5625 < Q8_0 8.5
    # bits, ggml-common.h) and its per-tensor exceptions only add bits, so the files grow in order.
    sizes = [size(mid, "h200", w).weights_bytes for w in ("q4_0", "q4_k_m", "q5_k_m", "q6_k", "q8_0")]
    assert sizes == sorted(sizes), dict(zip(("q4_0", "q4_k_m", "q5_k_m", "q6_k", "q8_0"), sizes, strict=True))


@settings(max_examples=60, deadline=None)
@given(model_ids, contexts, batches, kv_names, kv_names)
def test_more_kv_bits_never_fewer_bytes(mid, c, b, p, q):
    if KV_PRECISIONS[p].bits_per_weight <= KV_PRECISIONS[q].bits_per_weight:
        a, z = size(mid, "h200", "bf16", p, c, b), size(mid, "h200", "bf16", q, c, b)
        assert a.kv_cache_bytes <= z.kv_cache_bytes
        assert a.bytes_per_decode_step <= z.bytes_per_decode_step
        assert a.decode_tokens_per_s >= z.decode_tokens_per_s


def test_need_is_the_same_on_every_chip():
    """Issue 23: what a model needs must not depend on the card (it printed 673 to 727 GB for
    DeepSeek-V3 when the allowance, a share of each chip's memory, was added to the need). The need
    is weights + KV cache; the allowance reduces what each chip offers."""
    from descent import catalog

    for mid in catalog.models():
        rows = [size(mid, a, "fp8", "bf16", 8192, 1) for a in catalog.accelerators()]
        needs = {s.need_bytes for s in rows}
        assert len(needs) == 1, (mid, sorted(needs))
        (need,) = needs
        assert need == rows[0].weights_bytes + rows[0].kv_cache_bytes
        for s in rows:
            # fits exactly when the need is within capacity x (1 - 10%)
            assert s.usable_bytes == pytest.approx(s.capacity_bytes * 0.9)
            assert s.fits == (need <= s.usable_bytes)
            assert s.free_bytes == pytest.approx(s.usable_bytes - need)


def test_deepseek_v3_needs_one_number():
    # DeepSeek-V3 at FP8 with 8,192 tokens of BF16 cache: every chip's "won't fit" cell (Part 4's
    # table, Part 5's bars) prints one need; the usable part is the H200's 141 GiB x 0.9.
    from descent import catalog
    from descent.memory import across_field, fit_cell

    rows = across_field("deepseek-v3", "fp8", "bf16", 8192, 1)
    cells = {fit_cell(s).split(",")[0] for s in rows if not s.fits}
    assert len(cells) == 1, cells
    s = rows[0]
    assert cells == {f"won't fit: needs {format_bytes(s.need_bytes, 'GB', 3, trim=True)}"}
    h200 = size("deepseek-v3", "h200", "fp8", "bf16", 8192, 1)
    assert fit_cell(h200) == (f"won't fit: needs {format_bytes(h200.need_bytes, 'GB', 3, trim=True)}, "
                              f"{format_bytes(catalog.accelerator('h200').memory_bytes * 0.9, 'GB', 3, trim=True)} usable")


def test_smallest_capacity_is_where_fit_begins():
    from descent.memory import smallest_capacity

    s = size("llama-3.1-70b", "h200")
    cap = smallest_capacity(s.need_bytes)
    # need / 0.9: a chip of exactly this capacity offers exactly the need
    assert cap * 0.9 == pytest.approx(s.need_bytes)
    with pytest.raises(ValueError, match="need must be"):
        smallest_capacity(-1.0)
