"""descent.trace.roofline_measure: the build machine's measured roofline and SmolLM2 on it.

The numbers are measurements, so the tests check what must hold whatever the machine: every
number positive and finite, the two points under the measured roofs (to a timing-noise margin),
the FLOPs and bytes equal to the site's own counts, and the cache: a second call reads the file
instead of measuring, and a new version constant measures again. Small sizes keep it quick.
"""

from __future__ import annotations

import json
import math

import pytest

from descent import hardware, roofline, transformer
from descent.catalog import model as catalog_model
from descent.trace import roofline_measure as rm
from descent.trace.gguf_reader import load_model

#: Small sizes for the tests (the site uses the module's defaults).
SMALL = dict(gemm_n=256, stream_bytes=16 * 2**20, prefill_tokens=16, decode_steps=3, repeats=2)
#: Wall-clock timing on a shared 2-core machine is noisy: a point may sit this much above its roof.
NOISE = 1.5


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    load_model()  # weights loaded (and kept per process) before the cache moves
    monkeypatch.setenv("DESCENT_CACHE", str(tmp_path))
    return tmp_path


def _numbers(d, path=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _numbers(v, f"{path}{k}.")
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            yield f"{path}{k}", v


def test_measured_numbers_are_positive_finite_and_consistent(fresh_cache):
    m = rm.measure(**SMALL)
    for name, x in _numbers(m):
        assert math.isfinite(x) and x > 0, (name, x)
    assert m["version"] == rm.MEASURE_VERSION and m["machine"]["cores"] >= 1 and m["machine"]["cpu"]
    assert m["ridge"] == pytest.approx(m["gemm"]["flops_per_s"] / m["stream"]["bytes_per_s"])
    # The FLOPs and bytes are the site's counts for smollm2-135m in FP32.
    smol = catalog_model("smollm2-135m")
    assert m["prefill"]["flops"] == roofline.prefill_flops(smol, 16)
    assert m["prefill"]["bytes"] == roofline.prefill_bytes(smol, "fp32", "fp32", 16)
    ctxs = range(17, 20)
    assert m["decode"]["flops_per_step"] == pytest.approx(sum(transformer.flops_per_token(smol, c) for c in ctxs) / 3)
    assert m["decode"]["bytes_per_step"] == pytest.approx(
        sum(hardware.decode_step_bytes(smol, "fp32", "fp32", c, 1).total_bytes for c in ctxs) / 3)
    # Each point sits under its roof (with a margin for timing noise).
    for phase in ("prefill", "decode"):
        p = m[phase]
        roof = roofline.attained_flops(m["gemm"]["flops_per_s"], m["stream"]["bytes_per_s"], p["intensity"])
        assert p["flops_per_s"] <= NOISE * roof, (phase, p["flops_per_s"], roof)
    # Decode reads all 32-bit weights for one token: far left of a CPU's ridge; prefill to its right.
    assert m["decode"]["intensity"] < 1 < m["prefill"]["intensity"]


def test_measurement_is_cached(fresh_cache, monkeypatch):
    first = rm.measure(**SMALL)
    files = list((fresh_cache / "roofline").glob("measured-*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text()) == first

    def boom(*a, **k):
        raise AssertionError("measured again instead of reading the cache")

    monkeypatch.setattr(rm, "_measure", boom)
    assert rm.measure(**SMALL) == first
    # A new version constant is a new cache entry: the old result is not reused.
    monkeypatch.setattr(rm, "MEASURE_VERSION", rm.MEASURE_VERSION + 1)
    with pytest.raises(AssertionError, match="measured again"):
        rm.measure(**SMALL)


def test_cpu_model_is_named():
    assert rm.cpu_model().strip()


def test_the_sites_measurement_is_positive_and_finite():
    # The full-size measurement the site shows (from the build's cache when it exists).
    m = rm.measure()
    assert all(math.isfinite(x) and x > 0 for _, x in _numbers(m))
    assert (m["gemm"]["n"], m["prefill"]["tokens"], m["decode"]["steps"]) == (
        rm.GEMM_N, rm.PREFILL_TOKENS, rm.DECODE_STEPS)
