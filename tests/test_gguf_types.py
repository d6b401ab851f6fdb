"""descent.gguf_types: block layouts and bits per weight (worked from ggml-common.h by hand), and
names read piece by piece. The peer check against the gguf package's GGML_QUANT_SIZES is in
test_weights_export.py (build side). Core only."""

from __future__ import annotations

import pytest

from descent import gguf_types as G
from descent import numerics


@pytest.mark.parametrize("name,block,nbytes,bpw", [
    ("Q4_0", 32, 18, 4.5),      # 2 (d) + 16 (32 nibbles)
    ("Q4_1", 32, 20, 5.0),      # 2 (d) + 2 (m) + 16
    ("Q5_0", 32, 22, 5.5),      # 2 + 4 (qh) + 16
    ("Q5_1", 32, 24, 6.0),      # 2 + 2 + 4 + 16
    ("Q8_0", 32, 34, 8.5),      # 2 + 32
    ("Q2_K", 256, 84, 2.625),   # 16 (scales) + 64 (2-bit codes) + 2 + 2
    ("Q3_K", 256, 110, 3.4375),  # 32 (hmask) + 64 + 12 + 2
    ("Q4_K", 256, 144, 4.5),    # 2 + 2 + 12 + 128
    ("Q5_K", 256, 176, 5.5),    # 2 + 2 + 12 + 32 + 128
    ("Q6_K", 256, 210, 6.5625),  # 128 + 64 + 16 + 2
    ("IQ4_XS", 256, 136, 4.25),  # 2 + 2 + 4 + 128
    ("MXFP4", 32, 17, 4.25),    # 1 (E8M0) + 16
])
def test_block_layouts(name, block, nbytes, bpw):
    b = G.block_type(name)
    assert (b.block_size, b.block_bytes, b.bits_per_weight) == (block, nbytes, bpw)
    assert sum(f["count"] * f["bits"] for f in b.layout()) == 8 * nbytes


def test_agrees_with_numerics():
    # numerics.py's precision table states the same bpw for the types both list.
    for name in ("q8_0", "q4_0", "mxfp4"):
        assert numerics.PRECISIONS[name].bits_per_weight == G.decode_name(name).block.bits_per_weight
    assert G.MIXES["Q4_K_M"].published_bpw == numerics.Q4_K_M_PUBLISHED_BPW


@pytest.mark.parametrize("text,name,block,mix,bits", [
    ("Q4_K_M", "Q4_K_M", "Q4_K", "M", 4),
    ("llama-3.1-8b-instruct.q5_k_s.gguf", "Q5_K_S", "Q5_K", "S", 5),
    ("iq4_xs", "IQ4_XS", "IQ4_XS", "", 4),
    ("SmolLM2-135M-Instruct.Q4_1.gguf", "Q4_1", "Q4_1", "", 4),
    ("model-BF16.gguf", "BF16", "BF16", "", 16),
    ("IQ3_M", "IQ3_M", "IQ3_S", "", 3),
])
def test_decode_name(text, name, block, mix, bits):
    info = G.decode_name(text)
    assert (info.name, info.block.name, info.mix, info.nominal_bits) == (name, block, mix, bits)
    assert info.parts


def test_published_average_only_where_printed():
    assert G.decode_name("Q4_K_M").published_bpw == 4.8944  # llama.cpp quantize README, Llama-3.1-8B
    assert G.decode_name("Q3_K_M").published_bpw is None  # that table has no Q3_K_M row


@pytest.mark.parametrize("text", ["", "hello", "Q9_Z", "Q4_2", 7])
def test_unknown_names(text):
    with pytest.raises(ValueError):
        G.decode_name(text)
