"""One token replayed: "The capital of France is" -> " Paris", stage by stage, from what the build
recorded from SmolLM2-135M-Instruct (``traces.json``, ``weights.json``) and the core functions.

The ten stages (:data:`STAGES`) name the part and section that explains each. The only arithmetic
here is the cost of the recorded run's own steps on a chosen chip, for the shipped GGUF file
(Q4_1 matrices, a Q8_0 embedding table tied to the output layer, F32 norms; byte counts from the
file's own tensor list, ``weights.json`` ``file_types``):

* a decode step reads every stored byte once (the tied embedding table is the output layer, read
  in full) plus the KV cache of the ``context`` tokens so far (16 bits per value, llama.cpp's
  default F16 cache), and does ``transformer.flops_per_token(model, context)`` FLOPs;
* prefilling the prompt reads the same weights once and writes the prompt's KV cache, with
  :func:`descent.hardware.prefill_time`'s FLOPs (each prompt token attends to those before it);
* the time is the longer of bytes / bandwidth and FLOPs / the chip's dense 16-bit peak (Q4_1 is a
  weight-only format: llama.cpp multiplies in 16 or 32 bits), the roofline of Williams et al. 2009.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from dataclasses import dataclass

from descent import catalog, hardware, recorded, transformer, weights_sample
from descent.numerics import kv_precision

__all__ = ["MODEL", "PROMPT", "STAGES", "StepCost", "decode_step", "file_bytes", "prefill_step", "prompt_tokens", "stage"]

#: The recorded prompt replayed and the catalog row of the model that wrote it.
PROMPT = "capital"
MODEL = "smollm2-135m"

#: ``(id, title, page, section heading)`` of each stage, in order.
STAGES: tuple[tuple[str, str, str, str], ...] = (
    ("tokenize", "Tokenize", "part-1-the-transformer.md", "Tokenization"),
    ("embed", "Embed", "part-1-the-transformer.md", "Embeddings"),
    ("attention", "Attention", "part-1-the-transformer.md", "Attention"),
    ("ffn", "Feed-forward", "part-1-the-transformer.md", "The feed-forward network and Mixture-of-Experts"),
    ("logits", "Logits and probabilities", "part-1-the-transformer.md", "From logits to a token"),
    ("sample", "Pick the token", "part-0-the-prompt.md", "One token at a time"),
    ("weights", "The quantized weights", "part-2-weights-as-numbers.md", "Block scaling"),
    ("serve", "Prefill, then decode", "part-3-serving-software.md", "Prefill and decode"),
    ("chip", "Bytes and FLOPs on the chip", "part-4-hardware.md", "The roofline"),
    ("append", "Append, and go again", "part-1-the-transformer.md", "Autoregression"),
)


def stage(n: int) -> tuple[str, str, str, str]:
    """Stage ``n`` (1 to 10) of :data:`STAGES`. Raises ValueError naming the range."""
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= len(STAGES):
        raise ValueError(f"stage must be a whole number from 1 to {len(STAGES)}, got {n!r}")
    return STAGES[n - 1]


def file_bytes() -> int:
    """Bytes of every tensor in the shipped GGUF (``weights.json`` file_types), bytes."""
    return sum(int(t["bytes"]) for t in weights_sample.data()["file_types"].values())


@dataclass(frozen=True)
class StepCost:
    """One step of the recorded run on one chip (units: bytes, FLOP, seconds).

    Attributes:
        weight_bytes: stored weights read, bytes. kv_bytes: KV cache read or written, bytes.
        bytes: their sum. flops: FLOPs of the step. memory_s: bytes / bandwidth.
        compute_s: flops / 16-bit dense peak. seconds: the longer. bound: "memory" or "compute".
    """

    weight_bytes: int
    kv_bytes: float
    bytes: float
    flops: float
    memory_s: float
    compute_s: float
    seconds: float
    bound: str


def _cost(accelerator, kv_tokens: int, flops: float) -> StepCost:
    a = hardware.resolve_accelerator(accelerator)
    m = catalog.model(MODEL)
    w = file_bytes()
    kv = hardware.kv_cache_bytes(m, kv_precision("fp16"), kv_tokens, 1)
    total = w + kv
    mem, comp = total / a.memory_bandwidth, flops / hardware.peak_flops(a, "bf16")
    return StepCost(w, kv, total, flops, mem, comp, max(mem, comp), "compute" if comp > mem else "memory")


def prompt_tokens() -> int:
    """Tokens of the recorded prompt (5 for "The capital of France is")."""
    return len(recorded.prompt_trace(PROMPT)["tokens"])


def decode_step(accelerator, context: int | None = None) -> StepCost:
    """A decode step with ``context`` tokens in the cache (default: the prompt's), one sequence.

    Raises:
        ValueError: unknown accelerator, context outside the model's range.
    """
    m = catalog.model(MODEL)
    t = prompt_tokens() if context is None else context
    transformer.check_context(m, t)
    return _cost(accelerator, t, transformer.flops_per_token(m, t))


def prefill_step(accelerator) -> StepCost:
    """Prefilling the recorded prompt in one pass (FLOPs from :func:`descent.hardware.prefill_time`).

    Raises:
        ValueError: unknown accelerator.
    """
    t = prompt_tokens()
    flops = hardware.prefill_time(MODEL, accelerator, "bf16", "bf16", t).flops
    return _cost(accelerator, t, flops)
