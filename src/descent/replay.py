"""One token replayed: "The capital of France is" -> " Paris", stage by stage, from what the build
recorded from SmolLM2-135M-Instruct (``traces.json``, ``embedding_rows.json``, ``weights.json``)
and the core functions.

The embedding rows (:func:`embedding_rows`) are the shipped GGUF's own: its table is Q8_0 (blocks of
32 signed 8-bit codes with one FP16 scale ``d``, ggml-common.h ``block_q8_0``), so a stored number
is ``d * q``, and a row of D numbers takes D / 32 blocks of 34 bytes.

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

import re
import unicodedata
from dataclasses import dataclass

from descent import catalog, hardware, recorded, transformer, weights_sample
from descent import step as S
from descent.numerics import kv_precision

__all__ = [
    "MODEL",
    "PROMPT",
    "STAGES",
    "EmbeddingRow",
    "StepCost",
    "decode_step",
    "embedding_row",
    "embedding_rows",
    "file_bytes",
    "prefill_step",
    "prompt_tokens",
    "section_href",
    "stage",
]

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
    ("weights", "The quantized weights", "part-2-weights-as-numbers.md", "Zoom into a weight"),
    ("serve", "Prefill, then decode", "part-3-serving-software.md", "Prefill and decode"),
    ("chip", "Bytes and FLOPs on the chip", "part-4-hardware.md", "The roofline"),
    ("append", "Append, and go again", "part-1-the-transformer.md", "Autoregression"),
)


def stage(n: int) -> tuple[str, str, str, str]:
    """Stage ``n`` (1 to 10) of :data:`STAGES`. Raises ValueError naming the range."""
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= len(STAGES):
        raise ValueError(f"stage must be a whole number from 1 to {len(STAGES)}, got {n!r}")
    return STAGES[n - 1]


def _slug(heading: str) -> str:
    # Python-Markdown's toc slugify (the site's toc extension, no custom slugify): ASCII, word
    # characters, spaces and hyphens kept, lower case, runs of spaces and hyphens -> "-".
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def section_href(n: int) -> str:
    """The address of the section that explains stage ``n``, relative to the Part 5 page:
    ``"part-1-the-transformer.html#tokenization"``. Pages are ``.html`` files because Material's
    offline plugin turns MkDocs' directory URLs off; the anchor is the heading's toc slug.

    Raises:
        ValueError: ``n`` outside 1 to 10.
    """
    _id, _title, page, heading = stage(n)
    return f"{page.removesuffix('.md')}.html#{_slug(heading)}"


@dataclass(frozen=True)
class EmbeddingRow:
    """One row of SmolLM2's embedding table as the shipped GGUF stores it (``embedding_rows.json``).

    Attributes:
        text: the token's text. id: its token id, which is its row number. role: ``"prompt"`` (a
            token of the prompt) or ``"reply"`` (the token the run chose).
        scale: block 0's FP16 scale ``d``. codes: the first stored 8-bit codes of block 0.
        values: those numbers, ``d * q`` (exact: an FP16 value times an 8-bit integer).
        norm: the row's length, the square root of the sum of its ``width`` squares (5 significant
            figures). width: numbers in a row (D = 576). vocab: rows in the table (V = 49,152).
        type: the stored block type (``"Q8_0"``). row_bytes: one row's bytes in the file.
        table_bytes: the whole table's bytes in the file.
    """

    text: str
    id: int
    role: str
    scale: float
    codes: tuple[int, ...]
    values: tuple[float, ...]
    norm: float
    width: int
    vocab: int
    type: str
    row_bytes: int
    table_bytes: int


def embedding_rows() -> tuple[EmbeddingRow, ...]:
    """The rows the recorded run looked up: one per prompt token in order, then the chosen token's."""
    data = recorded.embedding_rows()
    vocab, width = data["shape"]
    return tuple(
        EmbeddingRow(r["text"], int(r["id"]), r["role"], float(r["d"]), tuple(int(q) for q in r["codes"]),
                     tuple(float(r["d"]) * int(q) for q in r["codes"]), float(r["norm"]), int(width), int(vocab),
                     data["type"], int(data["row_bytes"]), int(data["tensor_bytes"]))
        for r in data["rows"]
    )


def embedding_row(position: int) -> EmbeddingRow:
    """The embedding row of prompt token ``position`` (1 = "The" to 5 = " is").

    Raises:
        ValueError: ``position`` is not a whole number from 1 to the prompt's token count.
    """
    prompt = [r for r in embedding_rows() if r.role == "prompt"]
    if not isinstance(position, int) or isinstance(position, bool) or not 1 <= position <= len(prompt):
        raise ValueError(f"token must be a whole number from 1 to {len(prompt)}, got {position!r}")
    return prompt[position - 1]


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
    a = catalog.resolve_accelerator(accelerator)
    m = catalog.model(MODEL)
    w = file_bytes()
    kv = S.kv_cache_bytes(m, kv_precision("fp16"), kv_tokens, 1)
    total = w + kv
    mem, comp = total / a.memory_bandwidth, flops / S.peak_flops(a, "bf16")
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
