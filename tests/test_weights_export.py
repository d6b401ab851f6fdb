"""Build side of Part 2: the shipped weights.json against the real GGUF, the NumPy re-quantizers
against the core's, the GGUF block sizes against the gguf package, and the measured perplexity of
the shipped file against Hugging Face transformers on the same tokens (within 1%)."""

from __future__ import annotations

import json
import math
from importlib import resources

import numpy as np
import pytest

from descent import gguf_types, quant
from descent import weights_sample as ws
from descent.trace import quality, weights


def test_block_sizes_match_the_gguf_package():
    # gguf-py's GGML_QUANT_SIZES: (weights per block, bytes per block), transcribed separately from ggml.
    gguf = pytest.importorskip("gguf")
    for b in gguf_types.BLOCK_TYPES.values():
        assert (b.block_size, b.block_bytes) == gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[b.name]], b.name


def test_committed_weights_json_equals_a_fresh_export():
    committed = json.loads(resources.files("descent").joinpath("data", "weights.json").read_text())
    fresh = json.loads(weights.dumps(weights.build()))
    assert committed == fresh, "weights.json is stale: run python -m descent.trace.weights"


@pytest.mark.slow
def test_raw_blocks_equal_the_dequantized_file():
    # Our reading of the Q4_1 bytes (d * q + m) equals gguf's own dequantization of the same rows.
    from gguf.quants import dequantize

    for layer, mat in ((0, "attn_q"), (15, "ffn_down"), (29, "attn_v")):
        t = next(t for t in weights.reader().tensors if t.name == f"blk.{layer}.{mat}.weight")
        ref = dequantize(np.asarray(t.data)[:1], t.tensor_type)[0, :32]  # (32,)
        d, m, codes = ws.block(layer, mat)
        assert np.array_equal(np.array([d * q + m for q in codes], dtype=np.float32), ref)
    row = dequantize(np.asarray(next(t for t in weights.reader().tensors
                                     if t.name == weights.SAMPLE_TENSOR).data)[:1], gguf_quant_type("Q4_1"))[0]
    assert np.array_equal(np.array(ws.sample_values(), dtype=np.float32), row)


def gguf_quant_type(name: str):
    import gguf

    return gguf.GGMLQuantizationType[name]


def test_file_summary_adds_up():
    # 210 Q4_1 matrices + 1 Q8_0 embedding + 61 F32 norms = 272 tensors (the file's own count).
    s = weights.summary()
    assert s["total"]["tensors"] == 272 and s["file_types"]["Q4_1"]["tensors"] == 210
    assert s["file_types"]["Q4_1"]["bytes"] * 8 == 5 * s["file_types"]["Q4_1"]["weights"]  # 5 bits/weight


@pytest.mark.parametrize("bits", [8, 4, 3, 2])
@pytest.mark.parametrize("symmetric", [True, False])
def test_numpy_int_rows_equal_the_core(bits, symmetric):
    w = np.array(ws.sample_values(), dtype=np.float64).reshape(1, -1)  # (1, 1536)
    got = quality.int_rows(w, bits, symmetric)[0]
    want = quant.int_quantize(list(w[0]), bits, symmetric).values
    assert np.allclose(got, want, rtol=0, atol=1e-12)


def test_numpy_blocks_and_mxfp4_equal_the_core():
    w = np.array(ws.sample_values(), dtype=np.float64).reshape(1, -1)
    assert np.allclose(quality.int_blocks(w, 3, 32)[0], quant.block_int(list(w[0]), 3, 32, symmetric=False).values,
                       rtol=0, atol=1e-12)
    assert np.array_equal(quality.mxfp4_blocks(w)[0], np.array(quant.mxfp4(list(w[0])).values))


def test_fp4_round_equals_the_core():
    from descent import floats

    xs = np.linspace(-9, 9, 3601)
    f = floats.get("fp4_e2m1")
    assert np.array_equal(quality.fp4_round(xs), np.array([f.round(float(x)).value for x in xs]))


def test_tensor_table_error_bound_and_order():
    rows = quality.tensor_table()
    for r in rows:
        assert r["rmse"] <= r["step"] / 2
    sym = [r["sqnr_db"] for r in rows if r["symmetric"]]
    assert sym == sorted(sym, reverse=True)  # fewer bits, less signal over noise


@pytest.mark.slow
def test_measurement_is_cached_and_complete():
    q = quality.measure()
    assert [r["id"] for r in q["variants"]] == [v.id for v in quality.VARIANTS]
    assert q["tokens"] == quality.EVAL_TOKENS and q["machine"]
    assert all(math.isfinite(r["perplexity"]) and r["perplexity"] > 1 for r in q["variants"])
    assert quality.measure() == q  # second call: the cache


@pytest.mark.slow
@pytest.mark.peer
def test_shipped_perplexity_matches_transformers():
    # transformers dequantizes the GGUF itself and runs LlamaForCausalLM: an independent forward
    # pass. Same token ids, same formula; the perplexities must agree within 1%.
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    from descent.trace.gguf_reader import gguf_path

    path = gguf_path()
    model = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                              dtype=torch.float32)
    model.eval()
    ids = quality.eval_ids()
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].double()  # (T, V)
    logp = torch.log_softmax(logits, dim=-1)
    nll = -logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].mean().item()
    ref = math.exp(nll)
    ours = next(r["perplexity"] for r in quality.measure()["variants"] if r["id"] == "shipped")
    assert abs(ours / ref - 1) < 0.01, (ours, ref)
