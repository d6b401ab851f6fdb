"""Tests for descent.numerics: bits per weight of each format, weight bytes, name lookup."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from descent.numerics import KV_PRECISIONS, PRECISIONS, kv_precision, precision, weight_bytes


@pytest.mark.parametrize(
    "name, bpw",
    [
        ("fp32", 32.0),
        ("bf16", 16.0),
        ("fp16", 16.0),
        ("fp8", 8.0),
        ("int8", 8.0),
        ("int4", 4.125),  # 4 bits + one 16-bit scale per 128 = 4 + 16/128
        ("mxfp4", 4.25),  # OCP MX v1.0 s.5: 4 bits + one 8-bit E8M0 per 32 = 4 + 8/32
        ("nvfp4", 4.5),  # 4 bits + one 8-bit E4M3 per 16 = 4 + 8/16
        ("q8_0", 8.5),  # ggml block_q8_0: 34 bytes / 32 weights = 272 / 32 bits
        ("q4_0", 4.5),  # ggml block_q4_0: 18 bytes / 32 weights = 144 / 32 bits
        ("q4_k_m", 4.8944),  # llama.cpp tools/quantize/README.md, Llama-3.1-8B row Q4_K_M
    ],
)
def test_bits_per_weight(name, bpw):
    assert PRECISIONS[name].bits_per_weight == bpw


def test_precision_names_are_exactly_the_brief():
    assert list(PRECISIONS) == [
        "fp32", "bf16", "fp16", "fp8", "int8", "int4", "mxfp4", "nvfp4", "q8_0", "q4_0", "q4_k_m",
        "q5_k_m", "q6_k", "fp8_b128",
    ]  # fmt: skip
    assert set(KV_PRECISIONS) == {"fp32", "bf16", "fp16", "fp8", "int8", "q8_0", "q4_0", "int4"}


def test_block_format_bytes():
    # One billion weights: MXFP4 1e9 * 4.25 / 8 = 531,250,000 bytes; NVFP4 1e9 * 4.5 / 8 = 562,500,000.
    assert weight_bytes(1e9, "mxfp4") == 531_250_000
    assert weight_bytes(1e9, "nvfp4") == 562_500_000
    # One ggml block: 32 weights are 18 bytes in Q4_0 and 34 bytes in Q8_0.
    assert weight_bytes(32, "q4_0") == 18
    assert weight_bytes(32, "q8_0") == 34
    # BF16: 2 bytes per weight; Llama 3.1 8B's 8,030,261,248 weights are 16,060,522,496 bytes.
    assert weight_bytes(8_030_261_248, "bf16") == 16_060_522_496
    assert PRECISIONS["mxfp4"].bytes_per_weight == 0.53125


def test_precision_ordering():
    # More bits per weight, in this order (ties: bf16 = fp16, fp8 = int8, nvfp4 = q4_0).
    order = ["fp32", "bf16", "q8_0", "fp8", "q4_k_m", "nvfp4", "mxfp4", "int4"]
    bpw = [PRECISIONS[n].bits_per_weight for n in order]
    assert bpw == sorted(bpw, reverse=True) and len(set(bpw)) == len(bpw)
    assert PRECISIONS["bf16"].bits_per_weight == PRECISIONS["fp16"].bits_per_weight
    assert PRECISIONS["nvfp4"].bits_per_weight == PRECISIONS["q4_0"].bits_per_weight


def test_every_precision_has_a_source_and_description():
    for p in PRECISIONS.values():
        assert p.source and p.description and p.label
        if p.block_size:  # block formats: bpw = element bits + scale bits / block size
            assert p.bits_per_weight == p.element_bits + p.scale_bits / p.block_size


def test_unknown_names_list_the_allowed_ones():
    with pytest.raises(ValueError, match="unknown weight precision 'fp5'; allowed: fp32, bf16"):
        precision("fp5")
    with pytest.raises(ValueError, match="unknown KV-cache precision 'mxfp4'; allowed: fp32"):
        kv_precision("mxfp4")
    assert precision(PRECISIONS["fp8"]) is PRECISIONS["fp8"]


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "10", True, None])
def test_weight_bytes_rejects_bad_counts(bad):
    with pytest.raises(ValueError, match="n_params must be"):
        weight_bytes(bad, "bf16")


names = st.sampled_from(list(PRECISIONS))


@given(st.integers(min_value=0, max_value=10**13), names, names)
def test_more_bits_never_fewer_bytes(n, a, b):
    if PRECISIONS[a].bits_per_weight <= PRECISIONS[b].bits_per_weight:
        assert weight_bytes(n, a) <= weight_bytes(n, b)


@given(st.integers(min_value=0, max_value=10**13), st.integers(min_value=0, max_value=10**13), names)
def test_more_params_never_fewer_bytes(n, extra, name):
    assert weight_bytes(n, name) <= weight_bytes(n + extra, name)
