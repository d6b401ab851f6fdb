"""One number, one name: no two registered quantities compute the same function of the same inputs.

Each quantity is evaluated at three input sets (every parameter given explicitly by name, so two
quantities that share a parameter see the same value); two quantities of the same kind whose values
agree at every set where both compute are one number under two names. A quantity that does not
depend on a parameter the other takes (the ridge point of a step and of a chip) is still caught:
every parameter changes between the sets.
"""

from __future__ import annotations

import math

import pytest

from descent import params as P
from descent import quantities as Q

#: Three input sets: a dense model memory-bound, a mixture of experts at a large batch, a small model
#: compute-bound on another chip. Every parameter any quantity takes changes from one set to the next.
INPUTS = (
    {"model": "llama-3.1-70b", "accelerator": "h200", "weights": "fp8", "kv": "bf16", "context": 8192, "batch": 1,
     "phase": "decode", "tp": 1, "pp": 1, "ep": 1, "microbatches": 1, "link": "nvlink4", "price": 3.0, "pue": 1.56,
     "routing": "uniform", "tile": 64, "element": "fp16", "seq_len": 2048, "head_dim": 128,
     "prompt_tokens": 1024, "output_tokens": 256, "thinking_tokens": 2000, "acceptance": 0.8, "draft_length": 4,
     "draft_cost": 0.05, "gpu_price": 3.0, "api_price": 1.0, "api_input_price": 0.25, "utilization": 0.5, "policy": "continuous",
     "requests": 40, "rate": 4.0, "prompt_mean": 1000, "output_mean": 250, "chunk": 0, "seed": 0,
     "ttft_target": 1.0, "itl_target": 0.05, "turns": 5, "prefix_tokens": 500, "block_size": 16,
     "measurement": "llamacpp-rtx-4090-llama3-8b-q4km-tg512", "group": "all"},
    {"model": "gpt-oss-120b", "accelerator": "h100-sxm", "weights": "bf16", "kv": "fp8", "context": 512,
     "batch": 64, "phase": "prefill", "tp": 2, "pp": 2, "ep": 2, "microbatches": 4, "link": "pcie5", "price": 2.0,
     "pue": 1.2, "routing": "active", "tile": 128, "element": "bf16", "seq_len": 4096, "head_dim": 64,
     "prompt_tokens": 3000, "output_tokens": 500, "thinking_tokens": 500, "acceptance": 0.6, "draft_length": 3,
     "draft_cost": 0.1, "gpu_price": 2.5, "api_price": 0.7, "api_input_price": 0.7, "utilization": 0.3, "policy": "static",
     "requests": 30, "rate": 8.0, "prompt_mean": 600, "output_mean": 120, "chunk": 512, "seed": 1,
     "ttft_target": 0.5, "itl_target": 0.03, "turns": 3, "prefix_tokens": 200, "block_size": 32,
     "measurement": "llamacpp-rtx-3090-llama3-8b-q4km-pp512", "group": "llama.cpp"},
    {"model": "mixtral-8x7b", "accelerator": "mi300x", "weights": "bf16", "kv": "fp16", "context": 256,
     "batch": 4096, "phase": "decode", "tp": 4, "pp": 1, "ep": 1, "microbatches": 2, "link": "nvlink5",
     "price": 4.5, "pue": 1.3, "routing": "uniform", "tile": 32, "element": "fp8", "seq_len": 1024, "head_dim": 256,
     "prompt_tokens": 500, "output_tokens": 100, "thinking_tokens": 10, "acceptance": 0.9, "draft_length": 6,
     "draft_cost": 0.02, "gpu_price": 1.5, "api_price": 3.0, "api_input_price": 0.1, "utilization": 0.8, "policy": "continuous",
     "requests": 25, "rate": 2.0, "prompt_mean": 2000, "output_mean": 60, "chunk": 256, "seed": 2,
     "ttft_target": 2.0, "itl_target": 0.1, "turns": 8, "prefix_tokens": 1000, "block_size": 48,
     "measurement": "trtllm-h200-llama31-8b-fp8-1000-1000", "group": "data-centre-gpu"},
)


def _values(q: Q.Quantity) -> list:
    out = []
    for inputs in INPUTS:
        try:
            out.append(q(**{p.name: inputs[p.name] for p in q.params}))
        except (P.ParamError, ValueError):
            out.append(None)
    return out


def _same(a: list, b: list) -> bool:
    both = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if len(both) < 2:
        return False
    return all(x == y if isinstance(x, str) or isinstance(y, str) else math.isclose(x, y, rel_tol=1e-9)
               for x, y in both)


def test_every_input_set_names_every_parameter():
    names = {p.name for q in Q.QUANTITIES.values() for p in q.params}
    for inputs in INPUTS:
        assert names <= set(inputs), names - set(inputs)
    for name in names:  # each parameter changes between the sets (else a quantity ignoring it could hide)
        assert len({repr(i[name]) for i in INPUTS}) > 1, name


def test_no_two_quantities_are_one_number():
    vals = {name: _values(q) for name, q in Q.QUANTITIES.items()}
    for name, v in vals.items():
        assert sum(x is not None for x in v) >= 2, f"{name} computes at fewer than two of the input sets: {v}"
    names = sorted(vals)
    twins = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]
             if Q.get(a).kind == Q.get(b).kind and _same(vals[a], vals[b])]
    assert not twins, f"one number under two names: {twins}"


#: Names merged away (issue 22): old name -> the one quantity it was.
MERGED = {"ridge": "ridge_point", "memory_capacity": "capacity_bytes", "bytes_per_decode_step": "bytes_per_step",
          "flops_per_decode_step": "flops_per_step"}


@pytest.mark.parametrize("old", sorted(MERGED))
def test_merged_names_are_gone(old):
    """A merged name is not registered again; the name it became is."""
    assert old not in Q.QUANTITIES and MERGED[old] in Q.QUANTITIES


@pytest.mark.parametrize("old", ["bytes_per_decode_step", "flops_per_decode_step"])
def test_decode_step_is_the_roofline_step_at_decode(old):
    """The sizing's decode-step FLOPs and bytes are the roofline step's at phase=decode (why they merged)."""
    from descent.memory import size

    for inputs in INPUTS:
        kw = {k: inputs[k] for k in ("model", "accelerator", "weights", "kv", "context", "batch")}
        assert getattr(size(**kw), old) == pytest.approx(Q.get(MERGED[old])(**kw, phase="decode"), rel=1e-12)
