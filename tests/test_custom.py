"""descent.custom: a chip from its numbers, validated by its declarations."""

from __future__ import annotations

import dataclasses
import math

import pytest

from descent import custom, memory, step
from descent import params as P
from descent.catalog import Accelerator, accelerator


def test_numbers_become_the_record():
    a = custom.accelerator(24, 1008, 165.2)
    assert isinstance(a, Accelerator) and a.id == custom.CUSTOM_ID
    assert a.memory_bytes == 24_000_000_000  # 24 GB of 1e9 bytes, not GiB
    assert a.memory_bandwidth == 1.008e12
    # One dense peak, whichever precision the math runs in.
    assert a.bf16_flops == a.fp8_flops == a.fp4_flops == pytest.approx(165.2e12)
    assert step.peak_flops(a, "fp8") == pytest.approx(165.2e12)
    # Ridge point: 165.2e12 / 1.008e12 = 163.9 FLOP per byte.
    assert step.ridge_point(a, "bf16") == pytest.approx(163.888, rel=1e-4)
    assert a.name == "your chip (24 GB, 1,008 GB/s, 165.2 TFLOP/s)"
    assert custom.accelerator(24, 1008, name="My card").name == "My card"


def test_a_catalog_chip_retyped_sizes_the_same():
    h = accelerator("h100-sxm")  # 80 GiB = 85.89934592 GB, 3,350 GB/s, FP8 1,978.9 TFLOP/s dense
    mine = custom.accelerator(h.memory_bytes / 1e9, h.memory_bandwidth / 1e9, h.fp8_flops / 1e12)
    ours = dataclasses.asdict(memory.size("llama-3.1-8b", mine, "fp8", "bf16", 8192, 4))
    theirs = dataclasses.asdict(memory.size("llama-3.1-8b", h, "fp8", "bf16", 8192, 4))
    assert ours.pop("accelerator") == "custom" and theirs.pop("accelerator") == "h100-sxm"
    assert ours.pop("weights_bytes_by_group") == theirs.pop("weights_bytes_by_group")
    assert ours == pytest.approx(theirs)


def test_without_a_peak_there_is_no_compute_roof():
    a = custom.accelerator(24, 1008)
    assert a.bf16_flops == math.inf and "no compute ceiling" in a.notes
    s = memory.size("llama-3.1-8b", a, "bf16", "bf16", 8192, 64)
    # Memory-bound at any batch: the ceiling is bandwidth / bytes per step, nothing else.
    assert s.bound == "memory" and s.compute_bound_batch is None
    assert s.decode_tokens_per_s == pytest.approx(1.008e12 / s.bytes_per_decode_step)


@pytest.mark.parametrize(
    "args, message",
    [
        ((0, 1008), "Memory must be 0.01 to 100,000 GB, got 0"),
        ((24, 0.5), "Memory bandwidth must be 1 to 100,000,000 GB/s, got 0.5"),
        ((24, 1008, 0), "Peak compute must be 0.001 to 10,000,000 TFLOP/s, got 0"),
        ((True, 1008), "Memory must be a number"),
        ((24, math.nan), "Memory bandwidth must be a number"),
        ((24, 1008, math.inf), "Peak compute must be a number"),
        (("24", 1008), "Memory must be a number"),
    ],
)
def test_bad_numbers_are_named(args, message):
    with pytest.raises(P.ParamError) as e:
        custom.accelerator(*args)
    assert e.value.message.startswith(message), e.value.message


def test_declarations():
    assert [p.unit for p in (P.MEMORY_GB, P.BANDWIDTH_GBS, P.TFLOPS)] == ["GB", "GB/s", "TFLOP/s"]
    custom.accelerator(P.MEMORY_GB.default, P.BANDWIDTH_GBS.default, P.TFLOPS.default)
