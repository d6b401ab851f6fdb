"""Tests for descent.hardware: decode bytes per step, decode ceilings, the roofline."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descent.catalog import accelerators, models
from descent.hardware import (
    bytes_per_decode_step,
    check_inputs,
    compute_bound_batch,
    decode_ceiling,
    decode_step_bytes,
)
from descent.step import attainable_flops as roofline
from descent.step import kv_cache_bytes, peak_flops, ridge_point


def test_untied_embedding_reads_only_looked_up_rows():
    # Llama 3.1 8B (untied): 8,030,261,248 params, embedding 128,256 x 4,096 = 525,336,576.
    # One step at B = 1 reads all but the embedding, plus one 4,096-value row.
    s = decode_step_bytes("llama-3.1-8b", "bf16", "bf16", 1, 1)
    assert s.weight_params == 8_030_261_248 - 525_336_576 + 4_096
    # At B = 4, four rows: 4 * 4,096.
    s4 = decode_step_bytes("llama-3.1-8b", "bf16", "bf16", 1, 4)
    assert s4.weight_params == 8_030_261_248 - 525_336_576 + 4 * 4_096
    # Bytes: 2 per BF16 weight, plus KV of 1 token: 65,536 values * 2 bytes.
    assert s.total_bytes == 2 * (8_030_261_248 - 525_336_576 + 4_096) + 131_072


def test_check_inputs_and_kv_cache_bytes():
    # Llama 3.1 8B (config.json: 32 layers, 8 KV heads, head_dim 128): 2 x 32 x 8 x 128 = 65,536
    # KV values per token; BF16 = 2 bytes -> 131,072 bytes; 8,192 tokens x 2 sequences -> 2 GiB.
    m, w, kp = check_inputs("llama-3.1-8b", "fp8", "bf16", 8192, 2)
    assert (m.id, w, kp.name) == ("llama-3.1-8b", "fp8", "bf16")
    assert kv_cache_bytes(m, kp, 8192, 2) == 131_072 * 8192 * 2 == 2**31
    # The first bad input is named, in the order model, weights, kv, context, batch.
    with pytest.raises(ValueError, match="Batch must be 1 to 100,000 sequences"):
        check_inputs("llama-3.1-8b", "fp8", "bf16", 8192, 0)
    with pytest.raises(ValueError, match="Context must be"):
        check_inputs("llama-3.1-8b", "fp8", "bf16", 0, 0)


def test_tied_embedding_is_read_in_full_as_the_head():
    # SmolLM2-135M ties its 49,152 x 576 embedding to the head: every weight is read each step,
    # 134,515,008 params (the transformer module's exact count).
    s = decode_step_bytes("smollm2-135m", "bf16", "bf16", 1, 1)
    assert models()["smollm2-135m"].tie_embeddings
    assert s.weight_params == 134_515_008


def test_gpt_oss_120b_reads_active_parameters():
    # gpt-oss-120b at B = 1: 5,711,982,912 active (4 of 128 experts, incl. the 201,088 x 2,880
    # = 579,133,440 embedding) minus the embedding plus one 2,880-value row = 5,132,852,352,
    # which is the model card's "5.13B active".
    s = decode_step_bytes("gpt-oss-120b", "bf16", "bf16", 1024, 1)
    assert s.weight_params == 5_711_982_912 - 579_133_440 + 2_880 == 5_132_852_352
    assert s.routed_expert_share == 4 / 128
    # KV at 1,024 tokens: 18 full layers x 1,024 tokens + 18 sliding layers x 128 tokens,
    # 8 KV heads * 64 d_head * 2 = 1,024 values per layer-token: 21,233,664 values * 2 bytes.
    assert s.kv_cache_bytes == (18 * 1024 + 18 * 128) * 1024 * 2 == 42_467_328


def test_moe_batch_coverage():
    # Mixtral, 2 of 8 experts per token. With B = 2 tokens routed uniformly an expert is unused
    # with probability (1 - 2/8)**2 = 0.5625, so 43.75% of expert weights are read.
    u = decode_step_bytes("mixtral-8x7b", "bf16", "bf16", 1, 2)
    assert u.routed_expert_share == pytest.approx(0.4375)
    a = decode_step_bytes("mixtral-8x7b", "bf16", "bf16", 1, 2, moe_routing="active")
    assert a.routed_expert_share == 0.25
    assert a.total_bytes < u.total_bytes
    with pytest.raises(ValueError, match="moe_routing must be one of uniform, active"):
        decode_step_bytes("mixtral-8x7b", "bf16", "bf16", 1, 2, moe_routing="hot")


def test_decode_ceiling_is_bandwidth_over_bytes():
    # Llama 3.1 8B BF16 on H100 (3.35e12 B/s), context 1, B = 1:
    # bytes = 2 * 7,504,928,768 + 131,072 = 15,009,988,608; tokens/s = 3.35e12 / that = 223.18...
    c = decode_ceiling("llama-3.1-8b", "h100-sxm", "bf16", "bf16", 1, 1)
    assert c.bytes_per_step == 15_009_988_608
    assert c.tokens_per_s_per_sequence == pytest.approx(3.35e12 / 15_009_988_608)
    assert c.tokens_per_s_per_sequence == pytest.approx(223.18, abs=0.01)
    assert c.step_seconds == pytest.approx(15_009_988_608 / 3.35e12)
    c8 = decode_ceiling("llama-3.1-8b", "h100-sxm", "bf16", "bf16", 1, 8)
    assert c8.tokens_per_s_total == pytest.approx(8 * c8.tokens_per_s_per_sequence)


def test_ridge_point_and_roofline():
    # H100 BF16: 989.4e12 FLOP/s / 3.35e12 B/s = 295.34 FLOP/byte.
    assert ridge_point("h100-sxm", "bf16") == pytest.approx(295.343, abs=1e-3)
    assert ridge_point("h100-sxm", "fp8") == pytest.approx(1978.9e12 / 3.35e12)
    # Below the ridge: intensity * bandwidth = 10 * 3.35e12; above: the 989.4e12 peak.
    assert roofline("h100-sxm", 10, "bf16") == pytest.approx(33.5e12)
    assert roofline("h100-sxm", 1000, "bf16") == 989.4e12
    assert peak_flops("b200", "nvfp4") == 9e15


def test_missing_peak_names_the_allowed_precisions():
    with pytest.raises(ValueError, match="no fp4 peak; allowed for this chip: bf16, fp16, fp8$"):
        peak_flops("h100-sxm", "fp4")
    with pytest.raises(ValueError, match="compute precision must be one of bf16"):
        peak_flops("h100-sxm", "tf32")
    with pytest.raises(ValueError, match="intensity must be a positive number"):
        roofline("h100-sxm", 0, "bf16")


model_ids = st.sampled_from(list(models()))


@settings(max_examples=80, deadline=None)
@given(model_ids, st.integers(1, 1_000_000), st.integers(1, 1_000_000), st.integers(1, 4096))
def test_tokens_per_s_falls_as_context_grows(mid, c1, c2, b):
    lo, hi = sorted((c1, c2))
    a = decode_ceiling(mid, "h200", "fp8", "fp8", lo, b)
    z = decode_ceiling(mid, "h200", "fp8", "fp8", hi, b)
    assert a.tokens_per_s_per_sequence >= z.tokens_per_s_per_sequence


@settings(max_examples=80, deadline=None)
@given(model_ids, st.integers(1, 100_000), st.integers(1, 100_000), st.sampled_from(["uniform", "active"]))
def test_bytes_never_fall_with_batch(mid, b1, b2, routing):
    lo, hi = sorted((b1, b2))
    assert bytes_per_decode_step(mid, "q4_0", "q8_0", 512, lo, routing) <= bytes_per_decode_step(
        mid, "q4_0", "q8_0", 512, hi, routing
    )


@given(st.sampled_from(list(accelerators())), st.floats(1e-3, 1e6))
def test_roofline_never_exceeds_either_roof(acc, intensity):
    r = roofline(acc, intensity, "bf16")
    assert r <= peak_flops(acc, "bf16") and r <= intensity * (peak_flops(acc, "bf16") / ridge_point(acc, "bf16")) * (1 + 1e-12)


@pytest.mark.parametrize("model,accelerator,weights,context", [
    ("llama-3.1-70b", "h200", "fp8", 128), ("mixtral-8x7b", "h200", "bf16", 131072),
    ("smollm2-135m", "rtx-5090", "fp32", 1), ("llama-3.1-8b", "gaudi-3", "bf16", 131072),
])
def test_compute_bound_batch_is_the_step_models_flip_and_cheap(model, accelerator, weights, context, monkeypatch):
    # Issue 24: 2-4 s for 22 chips. The answer is the smallest batch whose step.decode is
    # compute-bound, as before; now cheap by construction, counted rather than timed (a clock
    # measures the machine): doubling then bisecting probes the O(1) closed form at most
    # 2 log2(MAX_BATCH) + 2 times.
    import math

    from descent import step as S
    from descent.scenario import Scenario

    probes = []
    closed_form = S.StepModel.uniform_decode
    monkeypatch.setattr(S.StepModel, "uniform_decode",
                        lambda self, *a, **k: probes.append(1) or closed_form(self, *a, **k))
    b = compute_bound_batch(model, accelerator, weights, "bf16", context)
    assert 1 <= len(probes) <= 2 * math.log2(S.MAX_BATCH) + 2, len(probes)
    monkeypatch.undo()
    sc = Scenario(model=model, accelerator=accelerator, weights=weights, kv="bf16", context=context)
    if b is None:
        assert S.decode(sc.but(batch=S.MAX_BATCH)).bound == "memory"
    else:
        assert S.decode(sc.but(batch=b)).bound == "compute"
        assert b == 1 or S.decode(sc.but(batch=b - 1)).bound == "memory"


@pytest.mark.parametrize("model,accelerator,weights,context,draft", [
    ("llama-3.1-70b", "h200", "fp8", 1024, 4), ("llama-3.1-70b", "h200", "fp8", 4096, 4),
    ("mixtral-8x7b", "h100-sxm", "bf16", 2048, 7), ("llama-3.1-8b", "a100-sxm-80gb", "bf16", 512, 1),
])
def test_verification_step_turns_compute_bound_sooner_than_decode(model, accelerator, weights, context, draft):
    """Issue 23 (expert review, speculative decoding): a verification step runs draft + 1
    positions per sequence. uniform_verify is step(prefill_spans=[(c, c + k + 1)] * n) in O(1),
    compute_bound_batch(positions=k + 1) is its flip from memory- to compute-bound, and that flip
    comes at a smaller batch than plain decode's (or plain decode never flips)."""
    from descent import step as S
    from descent.scenario import Scenario

    sc = Scenario(model=model, accelerator=accelerator, weights=weights, kv="bf16", context=context)
    sm = S.model_for(sc)
    p = draft + 1
    for n in (1, 3, 40):
        fast, slow = sm.uniform_verify(n, context, p), sm.step(prefill_spans=[(context, context + p)] * n)
        assert (fast.tokens, fast.bound) == (slow.tokens, slow.bound)
        assert fast.bytes == pytest.approx(slow.bytes, rel=1e-12) and fast.flops == pytest.approx(slow.flops, rel=1e-12)
        # step.cost takes the O(1) form for a batch of one span (issue 28: a roofline of 100,000 prompts).
        whole = S.cost(sc, prefill_spans=[(context, context + p)] * n)
        assert (whole.tokens, whole.bound) == (slow.tokens, slow.bound)
        assert whole.bytes == pytest.approx(slow.bytes, rel=1e-12) and whole.flops == pytest.approx(slow.flops, rel=1e-12)
    b = compute_bound_batch(model, accelerator, weights, "bf16", context, positions=p)
    assert b is not None
    assert sm.step(prefill_spans=[(context, context + p)] * b).bound == "compute"
    assert b == 1 or sm.step(prefill_spans=[(context, context + p)] * (b - 1)).bound == "memory"
    plain = compute_bound_batch(model, accelerator, weights, "bf16", context)
    assert plain is None or plain > b


def test_part3_prints_the_verification_batch_of_the_running_example():
    """Part 3's sentence: on Llama 3.1 70B FP8 on one H200 (Scenario's defaults) at 1,024 tokens,
    a draft of 4 verifies compute-bound from verify_compute_bound_batch; plain decode needs
    compute_bound_batch. Both are the hardware search, printed as whole numbers."""
    from descent import quantities as Q

    v = Q.get("verify_compute_bound_batch")
    assert v(context=1024, draft_length=4) == compute_bound_batch("llama-3.1-70b", "h200", "fp8", "bf16", 1024,
                                                                   positions=5)
    assert v(context=1024, draft_length=4) < Q.get("compute_bound_batch")(context=1024)
    # Longer drafts add arithmetic per sequence, so the ridge comes sooner still.
    assert v(context=1024, draft_length=8) < v(context=1024, draft_length=4)
