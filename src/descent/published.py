"""Published results Part 2 cites, each number with the place it was printed.

These are not computed here; they are what the authors reported, copied exactly, so a page can
quote them through a shortcode and a test can check them against the rest of the site.

* GPTQ (Frantar et al. 2022, "GPTQ: Accurate Post-Training Quantization for Generative
  Pre-trained Transformers", ICLR 2023, arXiv:2210.17323). The paper covers OPT and BLOOM; the
  LLaMA numbers are in the authors' repository README (IST-DASLab/gptq, "Here is a summary of
  LLaMa results"): WikiText-2 perplexity at FP16, 4-bit round-to-nearest (RTN), 4-bit GPTQ, 3-bit
  RTN, 3-bit GPTQ, and 3-bit GPTQ with groups of 128.
* DeepSeek-R1 (DeepSeek-AI 2025, arXiv:2501.12948): dense models fine-tuned on samples written by
  DeepSeek-R1; AIME 2024 pass@1 from the repository README's "Distilled Model Evaluation" table.
  The paper's section 2.4 says the 800k samples curated with DeepSeek-R1 were used. The README's
  section 4 defines the score: 64 answers sampled per problem (temperature 0.6, top-p 0.95), pass@1
  the share of them that are right, averaged over the problems (:data:`R1_METRIC`).
* s1 (Muennighoff et al. 2025, "s1: Simple test-time scaling", arXiv:2501.19393): Qwen2.5-32B-Instruct
  fine-tuned on 1,000 questions with reasoning traces (s1K); AIME 2024 from its Table 1 (s1-32B,
  with budget forcing, a rule that stops the model's thinking early, or makes it keep thinking, to
  hit a set length; the abstract rounds it to 57%). Its section 4.1 evaluates greedily
  (temperature 0): one answer per problem, accuracy (:data:`S1_METRIC`). The two scores answer the
  same question, the share of problems solved, measured two ways: a chart or page that sets them
  side by side names each one's metric.
* LIMA (Zhou et al. 2023, "LIMA: Less Is More for Alignment", arXiv:2305.11206): LLaMA 65B
  fine-tuned on 1,000 carefully curated prompts and responses.
* DistilBERT (Sanh et al. 2019, arXiv:1910.01108, abstract): 40% smaller than BERT-base, 97% of its
  language-understanding score, 60% faster.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AIME_DISTILLED", "DISTILLED", "R1_METRIC", "S1_AIME", "S1_METRIC", "Metric", "Student", "GPTQ_COLUMNS", "GPTQ_LLAMA", "GPTQ_URL", "PUBLISHED", "Published", "get", "gptq_change",
           "gptq_weights_bytes"]

GPTQ_URL = "https://github.com/IST-DASLab/gptq"
GPTQ_PAPER = "https://arxiv.org/abs/2210.17323"
R1_URL = "https://github.com/deepseek-ai/DeepSeek-R1"
R1_PAPER = "https://arxiv.org/abs/2501.12948"
S1_URL = "https://arxiv.org/abs/2501.19393"
DISTILBERT_URL = "https://arxiv.org/abs/1910.01108"
LIMA_URL = "https://arxiv.org/abs/2305.11206"
HINTON_URL = "https://arxiv.org/abs/1503.02531"
GEMMA2_URL = "https://arxiv.org/abs/2408.00118"
KIVI_URL = "https://arxiv.org/abs/2402.02750"
KVQUANT_URL = "https://arxiv.org/abs/2401.18079"

#: Columns of the GPTQ README's LLaMA table (WikiText-2 perplexity).
GPTQ_COLUMNS = ("FP16", "4bit-RTN", "4bit-GPTQ", "3bit-RTN", "3bit-GPTQ", "3g128-GPTQ")

#: The README's LLaMA table, row by row (billions of parameters -> perplexities in GPTQ_COLUMNS order).
GPTQ_LLAMA: dict[str, tuple[float, ...]] = {
    "LLaMa-7B": (5.68, 6.29, 6.09, 25.54, 8.07, 6.61),
    "LLaMa-13B": (5.09, 5.53, 5.36, 11.40, 6.63, 5.62),
    "LLaMa-30B": (4.10, 4.54, 4.45, 14.89, 5.69, 4.80),
    "LLaMa-65B": (3.53, 3.92, 3.84, 10.59, 5.04, 4.17),
}

#: Billions of parameters of each LLaMA row (the model names).
GPTQ_LLAMA_BILLIONS = {"LLaMa-7B": 7, "LLaMa-13B": 13, "LLaMa-30B": 30, "LLaMa-65B": 65}

#: Parameters in a billion (the short scale of the model names), and bits in a byte.
_BILLION, _BITS_PER_BYTE = 1e9, 8


def gptq_weights_bytes(model: str, bits: int) -> float:
    """Weight bytes of a row of :data:`GPTQ_LLAMA` at ``bits`` per weight, from the billions in its
    name (scales not counted): billions x 1e9 x bits / 8. Raises ValueError for an unknown row."""
    if model not in GPTQ_LLAMA_BILLIONS:
        raise ValueError(f"model must be one of {', '.join(GPTQ_LLAMA_BILLIONS)}, got {model!r}")
    return GPTQ_LLAMA_BILLIONS[model] * _BILLION * bits / _BITS_PER_BYTE


def gptq_change(model: str, column: str) -> float:
    """How much a :data:`GPTQ_LLAMA` perplexity exceeds the same row's FP16 one (0.11 = 11% higher).
    Raises ValueError for an unknown row or column."""
    if model not in GPTQ_LLAMA or column not in GPTQ_COLUMNS:
        raise ValueError(f"no GPTQ table cell {model!r}, {column!r}")
    row = GPTQ_LLAMA[model]
    return row[GPTQ_COLUMNS.index(column)] / row[0] - 1

#: AIME 2024 pass@1 (percent) from the DeepSeek-R1 README, "Distilled Model Evaluation".
AIME_DISTILLED: dict[str, float] = {
    "GPT-4o-0513": 9.3,
    "Claude-3.5-Sonnet-1022": 16.0,
    "o1-mini": 63.6,
    "QwQ-32B-Preview": 44.0,
    "DeepSeek-R1-Distill-Qwen-1.5B": 28.9,
    "DeepSeek-R1-Distill-Qwen-7B": 55.5,
    "DeepSeek-R1-Distill-Qwen-14B": 69.7,
    "DeepSeek-R1-Distill-Qwen-32B": 72.6,
    "DeepSeek-R1-Distill-Llama-8B": 50.4,
    "DeepSeek-R1-Distill-Llama-70B": 70.0,
}


#: s1-32B's AIME 2024 score (percent), Table 1 of the s1 paper.
S1_AIME = 56.7

#: Answers DeepSeek samples per problem to estimate pass@1 (DeepSeek-R1 README, section 4).
R1_EVAL_SAMPLES = 64


@dataclass(frozen=True)
class Metric:
    """How a published score was measured: a short ``name`` for a table cell, its ``definition`` in a
    sentence, the ``source`` that defines it (a URL with the section), and a ``brief`` name of a
    word or two for a chart's axis."""

    name: str
    definition: str
    source: str
    brief: str


#: The DeepSeek-R1 README's score: "For benchmarks requiring sampling, we use a temperature of 0.6, a
#: top-p value of 0.95, and generate 64 responses per query to estimate pass@1" (section 4,
#: Evaluation Results; the same setting for the distilled models' table).
R1_METRIC = Metric(
    f"pass@1 over {R1_EVAL_SAMPLES} samples",
    f"{R1_EVAL_SAMPLES} answers sampled per problem (temperature 0.6, top-p 0.95); the share of them that are "
    "right, averaged over the problems",
    f"{R1_URL} (README, section 4, Evaluation Results)",
    "pass@1")

#: The s1 paper's score: greedy decoding (temperature 0), one answer per problem, accuracy (section 4.1,
#: Evaluation; it notes that this equals pass@1 of that one answer), s1-32B's with budget forcing.
S1_METRIC = Metric(
    "greedy accuracy",
    "one answer per problem, decoded greedily (temperature 0, the most likely token each step), with "
    "budget forcing (a rule that stops the model's thinking early, or makes it keep thinking, to hit "
    "a set length); the share of problems it gets right",
    f"{S1_URL} (section 4.1, Evaluation)",
    "greedy")


@dataclass(frozen=True)
class Student:
    """A model fine-tuned on a teacher's outputs, as published: ``name``, ``teacher``, its size in
    ``billions`` of parameters (from its name), the fine-tuning ``samples`` and its AIME 2024
    ``score`` (percent), with the ``source`` of each (a URL with the table or section), and the
    ``metric`` the score is (:class:`Metric`: pass@1 over sampled answers, or greedy accuracy)."""

    name: str
    teacher: str
    billions: float
    samples: float
    score: float
    samples_source: str
    score_source: str
    metric: Metric


def _billions(name: str) -> float:
    """The size a model's name ends with: "DeepSeek-R1-Distill-Qwen-1.5B" -> 1.5."""
    tail = name.rsplit("-", 1)[-1]
    if not tail.endswith("B"):
        raise ValueError(f"model name {name!r} does not end with its size in billions (such as 7B)")
    return float(tail[:-1])


@dataclass(frozen=True)
class Published:
    """One published number: ``key``, ``value``, ``unit`` ("" for a plain number), ``what`` it
    is, and ``source`` (a URL, with the table or section)."""

    key: str
    value: float
    unit: str
    what: str
    source: str


def _gptq(model: str, col: str) -> Published:
    return Published(f"gptq_{model.split('-')[1].lower()}_{col.lower().replace('-', '_')}",
                     GPTQ_LLAMA[model][GPTQ_COLUMNS.index(col)], "",
                     f"{model}, {col}, WikiText-2 perplexity", f"{GPTQ_URL} (README, LLaMa results)")


_ALL = [
    *(_gptq(m, c) for m in GPTQ_LLAMA for c in GPTQ_COLUMNS),
    Published("r1_distill_samples", 800_000, "samples", "samples used to fine-tune the distilled models",
              f"{R1_PAPER} (section 2.4: the 800k samples of section 2.3.3)"),
    Published("r1_distill_reasoning_samples", 600_000, "samples", "reasoning samples written by DeepSeek-R1, "
              "kept by rejection sampling", f"{R1_PAPER} (section 2.3.3, reasoning data: about 600k)"),
    Published("r1_distill_other_samples", 200_000, "samples", "samples unrelated to reasoning (writing, factual "
              "questions, self-cognition, translation), largely from DeepSeek-V3's pipeline",
              f"{R1_PAPER} (section 2.3.3, non-reasoning data: about 200k)"),
    *(Published("aime_" + k.lower().replace("-", "_").replace(".", "_"), v, "%", f"{k}, AIME 2024 {R1_METRIC.name}",
                f"{R1_URL} (README, Distilled Model Evaluation)") for k, v in AIME_DISTILLED.items()),
    Published("aime_s1_32b", S1_AIME, "%", f"s1-32B, AIME 2024 {S1_METRIC.name} (with budget forcing)",
              f"{S1_URL} (Table 1)"),
    Published("r1_eval_samples", R1_EVAL_SAMPLES, "answers", "answers DeepSeek samples per problem to estimate pass@1 "
              "(temperature 0.6, top-p 0.95)", R1_METRIC.source),
    Published("s1_examples", 1000, "examples", "questions with reasoning traces s1-32B was fine-tuned on (s1K)",
              f"{S1_URL} (abstract)"),
    Published("lima_examples", 1000, "examples", "curated prompts and responses LIMA (LLaMA 65B) was fine-tuned on",
              f"{LIMA_URL} (abstract)"),
    Published("distilbert_smaller", 40, "%", "DistilBERT: smaller than BERT-base", f"{DISTILBERT_URL} (abstract)"),
    Published("distilbert_retained", 97, "%", "DistilBERT: share of BERT's language understanding kept",
              f"{DISTILBERT_URL} (abstract)"),
    Published("distilbert_faster", 60, "%", "DistilBERT: faster than BERT-base", f"{DISTILBERT_URL} (abstract)"),
]

#: Every published number, by key.
PUBLISHED: dict[str, Published] = {p.key: p for p in _ALL}


#: The students the distillation chart shows: DeepSeek-R1's six distilled models and s1-32B, each
#: value from :data:`PUBLISHED` (so a page and the chart print the same number).
DISTILLED: tuple[Student, ...] = (
    *(Student(k, "DeepSeek-R1", _billions(k), PUBLISHED["r1_distill_samples"].value, v,
              PUBLISHED["r1_distill_samples"].source, f"{R1_URL} (README, Distilled Model Evaluation)", R1_METRIC)
      for k, v in AIME_DISTILLED.items() if k.startswith("DeepSeek-R1-Distill-")),
    Student("s1-32B", "Gemini 2.0 Flash Thinking", 32.0, PUBLISHED["s1_examples"].value, S1_AIME,
            f"{S1_URL} (abstract; section 2: the traces are Gemini Flash Thinking's)", PUBLISHED["aime_s1_32b"].source,
            S1_METRIC),
)


def get(key: str) -> Published:
    """The published number ``key``. Raises ValueError listing the known keys."""
    try:
        return PUBLISHED[key]
    except KeyError:
        raise ValueError(f"unknown published result {key!r}; known: {', '.join(PUBLISHED)}") from None
