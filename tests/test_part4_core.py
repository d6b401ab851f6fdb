"""Part 4's core arithmetic, worked by hand: tiles (descent.tiling), attention traffic and the online
softmax (descent.attention_io), the split over many chips (descent.parallel), the roofline of a step
(descent.roofline) and the memory pyramid (descent.memory_tiers).

Each expected value says where it comes from: arithmetic in a comment, a paper's number, the
catalog's datasheet figures, or a second, plainer computation (a loop where the code has a
closed form).
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descent import (
    attention_io,
    catalog,
    hardware,
    memory_tiers,
    parallel,
    roofline,
    step,
    tiling,
    transformer,
)
from descent import quantities as Q
from descent.params import ParamError

# -- tiles ------------------------------------------------------------------------------------


def test_tile_intensity_by_hand():
    # The example: a 64 x 64 tile in FP16. Per K step of one column: 2 x 64 x 64 FLOPs over
    # (64 + 64) elements of 2 bytes = 8,192 / 256 = 32 FLOP per byte.
    assert tiling.tile_intensity(64, 2) == 32
    assert tiling.tile_intensity(128, 2) == 64  # doubling the tile doubles it
    assert tiling.tile_intensity(64, 1) == 64  # FP8: half the bytes
    assert tiling.tile_intensity(64, 0.5) == 128  # FP4
    # A 128 x 64 tile: 2 x 128 x 64 / ((128 + 64) x 2) = 16,384 / 384 = 42.67
    assert tiling.tile_intensity(128, 2, 64) == pytest.approx(16384 / 384)
    assert Q.get("tile_intensity")(tile=64, element="fp16") == 32


def test_gemm_flops_and_traffic_by_hand():
    # The widget's example: C (256 x 256) = A (256 x 1024) B (1024 x 256).
    m, n, k = 256, 256, 1024
    assert tiling.gemm_flops(m, n, k) == 2 * 256 * 256 * 1024 == 134_217_728
    # 64 x 64 tiles: 16 tiles, each loads (64 + 64) x 1024 elements of 2 bytes = 262,144 bytes.
    assert tiling.tiled_traffic_bytes(m, n, k, 64, 2) == 16 * 262_144
    # ... so the whole product runs at the tile's intensity: 134,217,728 / 4,194,304 = 32.
    assert tiling.gemm_flops(m, n, k) / tiling.tiled_traffic_bytes(m, n, k, 64, 2) == 32
    # The floor: A, B read once and C written once: (262,144 + 262,144 + 65,536) x 2 bytes.
    assert tiling.min_traffic_bytes(m, n, k, 2) == 1_179_648
    # One 128 x 128 tile's strips for a K step of 64 in FP16: (128 + 128) x 64 x 2 = 32 KiB.
    assert tiling.tile_working_set_bytes(128, 2) == 32 * 1024


def test_tile_walk():
    w = tiling.tile_walk(256, 256, 1024, 64, 5)  # 4 x 4 tiles, row-major: step 5 is tile (1, 1)
    assert (w.tile_rows, w.tile_cols, w.k_tiles, w.row, w.col, w.tiles) == (4, 4, 16, 1, 1, 16)
    with pytest.raises(ValueError, match="Tile step must be 0 to 15"):
        tiling.tile_walk(256, 256, 1024, 64, 16)


def test_layer_matmuls_match_the_parameter_count():
    # Llama 3.1 70B: the matrices of one layer hold exactly the attention and FFN weights that
    # transformer.param_counts counts per layer (no biases in Llama).
    m = catalog.model("llama-3.1-70b")
    rows = tiling.layer_matmuls(m, 1, 1.0)
    pc = transformer.param_counts(m)
    assert sum(r.d_in * r.d_out for r in rows) == (pc.attention + pc.dense_ffn) // m.num_layers
    q = rows[0]
    # Q projection at one token, FP8 weights, BF16 activations: 2 x 8192 x 8192 FLOPs over
    # 8192 x 8192 x 1 + (8192 + 8192) x 2 bytes: just under 2 FLOP per byte.
    assert (q.d_in, q.d_out) == (8192, 8192)
    assert q.intensity == pytest.approx(2 * 8192 * 8192 / (8192 * 8192 + 16384 * 2))
    # MoE: one routed expert's matrices, k of them per token (gpt-oss-120b: 4 of 128).
    rows = tiling.layer_matmuls("gpt-oss-120b", 1, 1.0)
    up = next(r for r in rows if r.name.startswith("FFN up"))
    assert up.count == 4 and up.d_out == catalog.model("gpt-oss-120b").moe.expert_intermediate_size


# -- attention traffic ------------------------------------------------------------------------


def test_naive_attention_by_hand():
    # Algorithm 0 of Dao et al. 2022 at N = 2,048, d = 64: 4 x 2048 x 64 + 4 x 2048^2 elements.
    assert attention_io.naive_elements(2048, 64) == 524_288 + 16_777_216
    assert attention_io.floor_elements(2048, 64) == 524_288


def test_flash_attention_by_hand():
    # H100: 228 KiB of shared memory per SM = 116,736 FP16 elements (M). Algorithm 1, line 1:
    # B_c = ceil(116,736 / (4 x 64)) = 456, B_r = min(456, 64) = 64; T_c = ceil(2048 / 456) = 5.
    sram = attention_io.sram_elements("h100-sxm", 2)
    assert sram == 116_736
    assert attention_io.flash_block_sizes(64, sram) == (64, 456)
    # N d + 2N + 2 N d + T_c (3 N d + 4 N) = 131,072 + 4,096 + 262,144 + 5 x (393,216 + 8,192)
    assert attention_io.flash_elements(2048, 64, sram) == 131_072 + 4_096 + 262_144 + 5 * 401_408
    t = attention_io.traffic(2048, 64, 2, "h100-sxm")
    assert t.naive_bytes == 2 * 17_301_504 and t.flash_bytes == 2 * 2_404_352
    assert t.ratio == pytest.approx(17_301_504 / 2_404_352)


@settings(deadline=None, max_examples=60)
@given(st.integers(1, 200_000), st.sampled_from([32, 64, 128, 256]), st.sampled_from([1.0, 2.0, 4.0]))
def test_flash_between_floor_and_theorem(n, d, b):
    # Always at least the floor (Q, K, V read, O written); within the Theta(N^2 d^2 / M) of
    # Theorem 2 (constant 4 + the linear terms); below naive once N^2 dominates N d, provided the
    # head is small against the SRAM: flash / naive -> 12 N^2 d^2 / M / (4 N^2) = 3 d^2 / M.
    sram = attention_io.sram_elements("h100-sxm", b)
    flash = attention_io.flash_elements(n, d, sram)
    assert flash >= attention_io.floor_elements(n, d)
    assert flash <= 3 * n * d + 2 * n + (n / (sram / (4 * d)) + 1) * (3 * n * d + 4 * n) + 1
    if n > 8 * d and 4 * d * d <= sram:
        assert flash < attention_io.naive_elements(n, d)


def test_a_big_head_on_a_small_sram_loses_to_naive():
    # 3 d^2 / M > 1: d = 256 in FP16 on one H100 SM (M = 116,736): Algorithm 1 re-reads Q and O for
    # each of ceil(N / 114) K/V blocks and moves more than the naive kernel at long N.
    assert 3 * 256**2 > attention_io.sram_elements("h100-sxm", 2)
    assert attention_io.flash_elements(65536, 256, 116_736) > attention_io.naive_elements(65536, 256)


def test_decode_attention_gqa_intensity():
    # Llama 3.1 70B (H = 64, K = 8, BF16 cache): 4 H d FLOPs per token per layer over 2 K d x 2 bytes
    # = 4 x 64 / (2 x 8 x 2) = 8 FLOP per byte, whatever the context.
    for ctx in (1, 8192, 131072):
        assert attention_io.decode_attention("llama-3.1-70b", ctx).intensity == pytest.approx(8)
    # MHA (Mixtral is GQA 32/8 too; Mistral 7B 32/8): SmolLM2 has H = 9, K = 3: 4 x 9 / (2 x 3 x 2) = 3.
    assert attention_io.decode_attention("smollm2-135m", 100).intensity == pytest.approx(3)


def test_online_softmax_equals_plain_softmax():
    # Blockwise with rescaling gives the plain softmax-weighted sum (transformer.softmax).
    rng = random.Random(2022)
    for n, block in ((1, 1), (7, 3), (64, 16), (100, 7), (50, 50), (33, 1)):
        scores = [rng.uniform(-30, 30) for _ in range(n)]
        values = [[rng.uniform(-1, 1) for _ in range(5)] for _ in range(n)]
        out, steps = attention_io.online_softmax(scores, values, block)
        p = transformer.softmax(scores)
        plain = [math.fsum(pi * v[k] for pi, v in zip(p, values, strict=True)) for k in range(5)]
        assert out == pytest.approx(plain, rel=1e-12, abs=1e-14)
        assert len(steps) == -(-n // block)
        assert steps[-1].running_max == max(scores)
        assert steps[-1].running_sum == pytest.approx(math.fsum(math.exp(s - max(scores)) for s in scores))


@settings(deadline=None, max_examples=80)
@given(st.lists(st.floats(-700, 700), min_size=1, max_size=40), st.integers(1, 45))
def test_online_softmax_property(scores, block):
    values = [[float(i), 1.0] for i in range(len(scores))]
    out, _ = attention_io.online_softmax(scores, values, block)
    p = transformer.softmax(scores)
    assert out[1] == pytest.approx(1.0)  # the weights sum to one
    assert out[0] == pytest.approx(math.fsum(pi * i for i, pi in enumerate(p)), rel=1e-9, abs=1e-9)


def test_online_softmax_rejects_bad_input():
    with pytest.raises(ValueError, match="finite"):
        attention_io.online_softmax([1.0, math.nan], [[1.0], [2.0]], 1)
    with pytest.raises(ValueError, match="one vector per score"):
        attention_io.online_softmax([1.0], [], 1)
    with pytest.raises(ValueError, match="block"):
        attention_io.online_softmax([1.0], [[1.0]], 0)


# -- many chips -------------------------------------------------------------------------------


def test_ring_allreduce_and_bubble_by_hand():
    # 2 (p - 1) / p x S: 8 devices, 16 KiB -> 2 x 7 / 8 x 16,384 = 28,672 bytes.
    assert step.ring_allreduce_bytes(16384, 8) == 28_672
    assert step.ring_allreduce_bytes(16384, 1) == 0
    # A serving pipeline's steady state (descent.step): max(0, p - m) / p. 8 stages, 8 micro-batches
    # cycling: every stage busy; 1 micro-batch: 7 of 8 stages idle at any time.
    assert step.pipeline_bubble(8, 8) == 0
    assert step.pipeline_bubble(8, 1) == 7 / 8
    assert step.pipeline_bubble(8, 2) == 6 / 8
    assert step.pipeline_bubble(1, 5) == 0
    # All-to-all: 64 tokens x 8 experts x 7,168 values x 2 bytes x 2 ways x 7/8 (DeepSeek-V3, e = 8).
    assert step.all_to_all_bytes(64, 8, 7168, 2, 8) == pytest.approx(2 * 64 * 8 * 7168 * 2 * 7 / 8)


def test_guide_example_70b_fp16_on_8_gpus():
    # The guide's example: a 70B model in 16 bits, 141 GB of weights, split over 8 GPUs.
    p = parallel.plan("llama-3.1-70b", "h100-sxm", "bf16", "bf16", 8192, 1, tp=8, link_id="nvlink4")
    assert p.weights_bytes == 70_553_706_496 * 2
    assert p.weights_bytes_per_device == pytest.approx(p.weights_bytes / 8)
    # 8 KV heads over 8 devices: each holds one head's cache, 1/8 of 2.68 GB at 8,192 tokens.
    assert p.kv_bytes_per_device == pytest.approx(80 * 8 * 128 * 2 * 2 * 8192 / 8)
    # Two all-reduces per layer of 1 token x 8,192 values x 2 bytes: 2 x 2 x 7/8 x 16,384 bytes,
    # over 450 GB/s (NVLink 4's 900 GB/s is both directions), each plus NCCL's latency for 8 devices:
    # 3.6 us + 14 steps x 0.47 us (catalog links.toml).
    assert p.allreduce_bytes_per_layer == 2 * 28_672
    assert p.allreduce_seconds_per_layer == pytest.approx(2 * (28_672 / 450e9 + 3.6e-6 + 14 * 0.47e-6))
    assert p.fits and p.devices == 8 and p.bubble_fraction == 0
    # Pipeline instead: 10 layers a GPU; one micro-batch crosses all 8 stages in turn, so the step is
    # the single chip's reads plus 8 sends of 8 x 8,192 x 2 bytes (3.6 us latency each), and 7 of
    # the 8 stages idle at any time.
    q1 = parallel.plan("llama-3.1-70b", "h100-sxm", "bf16", "bf16", 8192, 8, pp=8, microbatches=1)
    assert q1.bubble_fraction == pytest.approx(7 / 8) and q1.allreduce_bytes_per_layer == 0
    single = hardware.decode_ceiling("llama-3.1-70b", "h100-sxm", "bf16", "bf16", 8192, 8)
    send = 8 * 8192 * 2 / 450e9 + 3.6e-6
    assert q1.decode_step_seconds == pytest.approx(single.step_seconds + 8 * send, rel=1e-9)
    # Eight micro-batches of one sequence keep every stage busy: no bubble, and each stage reads its
    # weights once per micro-batch, so the step is 8 stage-times of one sequence each.
    q8 = parallel.plan("llama-3.1-70b", "h100-sxm", "bf16", "bf16", 8192, 8, pp=8, microbatches=8)
    assert q8.bubble_fraction == 0
    one = hardware.decode_ceiling("llama-3.1-70b", "h100-sxm", "bf16", "bf16", 8192, 1)
    stage = one.step_seconds / 8 + 1 * 8192 * 2 / 450e9 + 3.6e-6
    assert q8.decode_step_seconds == pytest.approx(8 * stage, rel=1e-9)


def test_plan_refuses_impossible_splits():
    with pytest.raises(ValueError, match="tp must divide Llama 3.1 70B.s 64 query heads"):
        parallel.plan("llama-3.1-70b", "h200", tp=128)
    with pytest.raises(ValueError, match="ep must be 1"):
        parallel.plan("llama-3.1-70b", "h200", ep=2)
    with pytest.raises(ValueError, match="Micro-batches must be at most the batch"):
        parallel.plan("llama-3.1-70b", "h200", pp=4, microbatches=4)
    with pytest.raises(ValueError, match="Link must be one of: nvlink5"):
        parallel.plan("llama-3.1-70b", "h200", link_id="ethernet")
    with pytest.raises(ParamError) as e:
        Q.get("bubble_fraction")(pp=4, microbatches=4)
    assert e.value.field == "microbatches"


def test_allreduce_is_bandwidth_plus_ncc_latency_over_the_link():
    for wire in catalog.links().values():
        if wire.scope == "storage":
            continue
        p = parallel.plan("llama-3.1-8b", "h200", tp=4, batch=16, link_id=wire.id)
        # Two ring all-reduces over 4 devices: bytes over the link plus base + 2 x 3 step latencies each.
        latency = 2 * (wire.base_latency_s + 6 * wire.step_latency_s)
        assert p.allreduce_seconds_per_layer == pytest.approx(p.allreduce_bytes_per_layer / wire.bytes_per_s + latency)


# -- the roofline of a step -------------------------------------------------------------------


def test_decode_step_by_hand():
    # Llama 3.1 70B, FP8 weights on an H200, batch 1, 8,192 tokens. FLOPs: transformer.flops_per_token
    # of the new token, which attends to the 8,192 cached tokens and itself; bytes:
    # hardware.decode_step_bytes; FP8 math: 1,978.9 TFLOPS / 4.8 TB/s = 412.3 FLOP per byte.
    s = roofline.step("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1, "decode")
    m = catalog.model("llama-3.1-70b")
    assert s.flops_per_step == transformer.flops_per_token(m, 8193)
    assert s.bytes_per_step == hardware.bytes_per_decode_step(m, "fp8", "bf16", 8192, 1)
    assert s.ridge == pytest.approx(1978.9e12 / 4.8e12)
    assert s.compute_precision == "fp8" and s.bound == "memory"
    assert s.seconds_per_step == pytest.approx(s.bytes_per_step / 4.8e12)
    # At batch 1 decode uses about intensity / ridge of the arithmetic: ~2.2 / 412 = 0.54%.
    assert s.compute_share == pytest.approx(s.intensity / s.ridge)
    assert s.compute_share < 0.01


def test_prefill_flops_closed_form_equals_the_loop():
    # The closed form of sum_t attention_flops_per_token(t), against the plain loop; gpt-oss has
    # sliding layers (window 128), so the cap is exercised on both sides of it.
    for mid in ("gpt-oss-20b", "llama-3.1-8b", "deepseek-v3"):
        m = catalog.model(mid)
        for n in (1, 5, 128, 129, 300):
            loop = sum(transformer.attention_flops_per_token(m, t) for t in range(1, n + 1))
            assert roofline.prefill_attention_flops(m, n) == loop, (mid, n)


def test_prefill_is_compute_bound_and_batch_moves_decode_right():
    p = roofline.step("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1, "prefill")
    assert p.bound == "compute" and p.compute_share == 1.0
    assert p.seconds_per_step == pytest.approx(p.flops_per_step / 1978.9e12)
    shares = [roofline.step("llama-3.1-70b", "h200", "fp8", "bf16", 2048, b).intensity for b in (1, 8, 64, 512)]
    assert shares == sorted(shares)


def test_compute_precision_rule():
    def cp(w, a):
        return step.compute_precision("llama-3.1-70b", a, w)

    assert cp("fp8", "h100-sxm") == "fp8"
    assert cp("fp8_b128", "h100-sxm") == "fp8"  # 128 x 128 block scales: still FP8 GEMMs (issue 22's case)
    assert cp("mxfp4", "h100-sxm") == "bf16"  # Hopper has no FP4 units
    assert cp("mxfp4", "b200") == "fp4"
    assert cp("fp8", "groq-lpu") == "bf16"  # no FP8 peak recorded
    assert cp("q4_k_m", "b200") == "bf16"  # dequantized to 16 bits
    # As released: the precision holding the most parameters (gpt-oss: its MXFP4 experts).
    assert step.compute_precision("gpt-oss-120b", "b200", "released") == "fp4"


@settings(deadline=None, max_examples=60)
@given(st.sampled_from(list(catalog.models())), st.sampled_from(list(catalog.accelerators())),
       st.sampled_from(["bf16", "fp8", "mxfp4", "q4_0"]), st.integers(1, 200_000), st.integers(1, 4096),
       st.sampled_from(roofline.PHASES))
def test_step_never_beats_either_roof(model, acc, weights, context, batch, phase):
    s = roofline.step(model, acc, weights, "bf16", context, batch, phase)
    assert s.attained_flops <= s.peak_flops * (1 + 1e-12)
    assert s.seconds_per_step >= s.bytes_per_step / s.memory_bandwidth
    assert s.bound == ("memory" if s.intensity < s.ridge else "compute")
    assert all(math.isfinite(x) and x > 0 for x in (s.flops_per_step, s.bytes_per_step, s.seconds_per_step))


def test_attained_flops_checks():
    assert roofline.attained_flops(100.0, 10.0, 2.0) == 20.0
    assert roofline.attained_flops(100.0, 10.0, 50.0) == 100.0
    for bad in (0, -1.0, math.inf, math.nan, True):
        with pytest.raises(ValueError, match="positive finite"):
            roofline.attained_flops(bad, 1.0, 1.0)


# -- the memory pyramid -----------------------------------------------------------------------


def test_shared_memory_bandwidth_rule_matches_flashattention_a100_figure():
    # Dao et al. 2022, section 2.1: the A100's shared memory delivers "around 19 TB/s". The same
    # rule on the A100's whitepaper figures (108 SMs, 1.41 GHz boost, 128 bytes per clock per SM):
    a100 = 108 * 128 * 1.41e9
    assert a100 == pytest.approx(19.5e12, rel=0.01)
    # H100 SXM from the catalog: 132 SMs x 128 bytes x 1.83 GHz = 30.9 TB/s.
    assert memory_tiers.shared_memory_bandwidth("h100-sxm") == pytest.approx(132 * 128 * 1.83e9)
    assert memory_tiers.shared_memory_bandwidth("b200") is None  # no clock published


def test_pyramid_tiers():
    names = [t.name for t in memory_tiers.tiers("h100-sxm")]
    assert names[:4] == ["registers", "shared memory", "L2 cache", "HBM3"]
    t = {x.name: x for x in memory_tiers.tiers("h100-sxm")}
    # 256 KiB of registers on each of 132 SMs: 33 MiB, more than the 29.4 MiB of shared memory.
    assert t["registers"].size_bytes == 132 * 256 * 1024 > t["shared memory"].size_bytes
    assert t["shared memory"].bandwidth_vs_hbm == pytest.approx(132 * 128 * 1.83e9 / 3.35e12)
    assert t["HBM3"].size_vs_hbm == 1 and t["HBM3"].bandwidth_vs_hbm == 1
    assert "Infinity Cache" in [x.name for x in memory_tiers.tiers("mi300x")]
    with pytest.raises(ValueError, match="not a GPU with recorded internals"):
        memory_tiers.tiers("groq-lpu")
