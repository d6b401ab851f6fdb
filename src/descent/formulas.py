"""The sympy twin of every formula the site shows; the page's LaTeX is printed from it.

Build side only (imports sympy). Each :class:`Formula` holds a sympy expression, the meaning and
unit of every symbol, its source, and a ``check`` that evaluates the expression on catalog rows
and returns ``(label, formula_value, package_value)`` triples: the test suite asserts they agree,
so the formula a reader sees and the number the site computes cannot drift apart.

Every check imports the function it mirrors directly, so a renamed or removed target fails the
formula tests instead of skipping them.

Symbols (DESIGN.md): L layers, K key/value heads, d_head, T tokens of context, B batch
(sequences), b bytes per stored element, N parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import sympy as sp

from descent import catalog, hardware, numerics, sampling, transformer
from descent.trace import forward

__all__ = ["FORMULAS", "Formula", "Sym", "formula"]


#: How a symbol's unit reads after its meaning on a page ("in bytes"). Units not listed are counts
#: or pure numbers, which the meaning already names ("the number of layers"); every unit a formula
#: uses must be in one of the two tables (tests/test_formulas.py checks).
UNIT_PROSE = {
    "$ per million tokens": "in dollars per million tokens",
    "$/hour": "in dollars per hour",
    "dB": "in decibels",
    "bytes": "in bytes",
    "bytes/s": "in bytes per second",
    "bits": "in bits",
    "FLOP": "in FLOP (arithmetic operations)",
    "FLOP/s": "in FLOP per second",
    "FLOP/byte": "in FLOP per byte",
    "bytes/clock": "in bytes per clock cycle",
    "Hz": "in hertz (cycles per second)",
    "s": "in seconds",
    "tokens/s": "in tokens per second",
}
#: Units that a page does not spell out: the meaning says what is counted.
UNIT_SILENT = frozenset({
    "count", "values", "index", "dimensionless", "no unit", "parameters", "sequences", "tokens",
    "positions", "weights", "ratio", "probability (0 to 1)", "probability", "fraction", "number", "bit", "integer", "weight units",
    "weight units squared", "elements", "devices",
})

#: Where a formula's source can be read, for sources named without a link: the name as the source
#: text writes it -> its address. ``arXiv:NNNN.NNNNN`` needs no entry (:meth:`Formula.source_markdown`).
REFERENCES = {
    "IEEE 754-2008": "https://doi.org/10.1109/IEEESTD.2008.4610935",
    "OCP OFP8 rev. 1.0": "https://www.opencompute.org/documents/ocp-8-bit-floating-point-specification-ofp8-revision-1-0-2023-12-01-pdf-1",
    "OCP MX v1.0": "https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf",
    "OCP Microscaling Formats (MX) Specification v1.0": "https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf",
    "NVIDIA NVFP4": "https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/",
    "Widrow and Kollar 2008": "https://doi.org/10.1017/CBO9780511754661",
    "Williams, Waterman & Patterson 2009": "https://doi.org/10.1145/1498765.1498785",
    "Williams et al. 2009": "https://doi.org/10.1145/1498765.1498785",
    "Pope et al. 2022": "https://arxiv.org/abs/2211.05102",
    "Hong & Kung 1981": "https://doi.org/10.1145/800076.802486",
    "NVIDIA Matrix Multiplication Background User's Guide": "https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/index.html",
    "Patarasuk & Yuan 2009": "https://doi.org/10.1016/j.jpdc.2008.09.002",
    "nccl-tests doc/PERFORMANCE.md": "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md",
    "NVIDIA CUDA C++ Programming Guide": "https://docs.nvidia.com/cuda/cuda-c-programming-guide/",
    "AMD CDNA 3 whitepaper": "https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/white-papers/amd-cdna-3-white-paper.pdf",
    "Dao et al. 2022": "https://arxiv.org/abs/2205.14135",
}

#: A meaning that starts with one of these reads as prose after "is"; any other gets "the".
_DETERMINERS = ("the ", "a ", "an ", "one ", "how ", "component ")


@dataclass(frozen=True)
class Sym:
    """One symbol of a formula: the sympy Symbol, its LaTeX, what it means and its unit.

    ``meaning`` is a noun phrase a reader can follow, with its article ("the number of layers"):
    the page prints "$L$ is the number of layers". ``unit`` is from :data:`UNIT_PROSE` (then the
    page adds "in bytes") or :data:`UNIT_SILENT`.
    """

    symbol: sp.Symbol
    tex: str
    meaning: str
    unit: str

    def prose(self) -> str:
        """``"$L$ is the number of layers"`` / ``"$b$ is the size of one stored number (...), in bytes"``
        (a meaning without its article, "head dimension", reads "the head dimension")."""
        unit = UNIT_PROSE.get(self.unit, "")
        meaning = self.meaning if self.meaning.startswith(_DETERMINERS) else f"the {self.meaning}"
        return f"${self.tex}$ is {meaning}" + (f", {unit}" if unit and self.unit not in self.meaning else "")


@dataclass(frozen=True)
class Formula:
    """A formula the site shows.

    Attributes:
        name: registry key, used by ``<!-- descent:formula NAME -->``.
        title: one line saying what it computes.
        lhs: the quantity computed (a Sym).
        expr: the sympy expression, built unevaluated so it prints in the written order.
        symbols: every free symbol of ``expr``, with meaning and unit.
        source: paper (section/equation) or document the formula comes from.
        note: when the formula applies (and when another entry applies instead).
        check: ``() -> [(label, formula_value, package_value), ...]`` over catalog rows.
        compact: the textbook form as LaTeX (softmax of the scores times V), shown first when
            the sympy form is long; the page folds the sympy form (the one checked) under it.
            Empty when the sympy form is already the textbook one.
    """

    name: str
    title: str
    lhs: Sym
    expr: sp.Expr
    symbols: tuple[Sym, ...]
    source: str
    note: str = ""
    check: Callable[[], list[tuple[str, float, float]]] | None = field(default=None, compare=False)
    compact: str = ""

    def source_markdown(self) -> str:
        """``source`` with its references as links: ``arXiv:NNNN.NNNNN`` and the names in
        :data:`REFERENCES` (each once), left as written where it already links."""
        import re

        text = re.sub(r"(?<!\[)arXiv:(\d{4}\.\d{4,5})", r"[arXiv:\1](https://arxiv.org/abs/\1)", self.source)
        for name, url in REFERENCES.items():
            at = text.find(name)
            if at >= 0 and not text[:at].endswith("[") and f"[{name}" not in text:
                text = text[:at] + f"[{name}]({url})" + text[at + len(name):]
        return text

    def where(self) -> str:
        """The symbols as prose: "$L$ is the number of layers; ...; and $b$ is the size of one stored number"."""
        parts = [s.prose() for s in self.symbols]
        return "; ".join(parts[:-1]) + "; and " + parts[-1] if len(parts) > 1 else "".join(parts)

    def symbol_names(self) -> dict[sp.Symbol, str]:
        return {s.symbol: s.tex for s in (self.lhs, *self.symbols)}

    def latex(self) -> str:
        """``lhs = expression`` as LaTeX (sympy's printer, in the written order)."""
        rhs = sp.latex(self.expr, order="none", symbol_names=self.symbol_names(), mul_symbol=None)
        return f"{self.lhs.tex} = {rhs}"

    def evaluate(self, **values: float) -> float:
        """The expression's value with every symbol given by its Python name (``L=80, K=8, ...``)."""
        by_name = {s.symbol.name: s.symbol for s in self.symbols}
        unknown = sorted(set(values) - set(by_name))
        missing = sorted(set(by_name) - set(values))
        if unknown or missing:
            raise ValueError(
                f"formula {self.name!r} takes {', '.join(sorted(by_name))}; "
                f"unknown: {', '.join(unknown) or 'none'}; missing: {', '.join(missing) or 'none'}"
            )
        v = self.expr.subs({by_name[k]: sp.Rational(str(x)) if isinstance(x, float) else x for k, x in values.items()})
        return float(sp.N(v, 30)) if not v.is_Integer else int(v)


FORMULAS: dict[str, Formula] = {}


def formula(name: str) -> Formula:
    """The formula registered as ``name``. Raises ValueError listing the allowed names."""
    try:
        return FORMULAS[name]
    except KeyError:
        raise ValueError(f"unknown formula {name!r}; allowed: {', '.join(FORMULAS)}") from None


def _register(f: Formula) -> Formula:
    """Add ``f`` to :data:`FORMULAS` after checking that its declared symbols are exactly the
    expression's free symbols. An indexed entry ``x[j]`` counts as the symbol ``x``, and the
    indices a sum runs over are bound, not free (the Part 1 formulas use indexed sums).

    Raises:
        ValueError: a free symbol is not declared, or a declared one does not occur.
    """
    free = {s.base.label.name if isinstance(s, sp.Indexed) else s.name for s in f.expr.free_symbols}
    free |= {s.base.label.name for s in f.expr.atoms(sp.Indexed)}
    free -= {lim[0].name for s in f.expr.atoms(sp.Sum) for lim in s.limits}
    declared = {s.symbol.name for s in f.symbols}
    if free != declared:
        raise ValueError(f"formula {f.name!r}: symbols {sorted(free)} but declared {sorted(declared)}")
    FORMULAS[f.name] = f
    return f


def _s(name: str, tex: str, meaning: str, unit: str) -> Sym:
    return Sym(sp.Symbol(name, positive=True), tex, meaning, unit)


L = _s("L", "L", "the number of layers", "count")
K = _s("K", "K", "the number of key/value heads (K = H for MHA, one for MQA, in between for GQA)", "count")
D_HEAD = _s("d_head", r"d_{\text{head}}", "the length of one head's query, key and value vectors", "values")
T = _s("T", "T", "the number of tokens held in the cache per sequence (the context)", "tokens")
B = _s("B", "B", "the number of sequences in the batch", "sequences")
BYTES = _s("b", "b", "the size of one stored number (two for BF16, one for FP8)", "bytes")
D_C = _s("d_c", "d_c", "the length of MLA's joint key/value latent vector (kv_lora_rank)", "values")
D_R = _s("d_rope", r"d_h^{R}", "the length of the per-token RoPE key that all heads share (qk_rope_head_dim)", "values")
W = _s("W", "W", "the number of tokens a limited layer can attend to: the sliding window's width (or Llama 4's chunk size)", "tokens")
L_FULL = _s("L_full", r"L_{\text{full}}", "the number of layers with full attention", "count")
L_SLIDE = _s("L_slide", r"L_{\text{slide}}", "the number of layers with sliding-window (or chunked) attention", "count")
L_LIN = _s("L_lin", r"L_{\text{lin}}", "the number of linear-attention layers (a fixed-size state each)", "count")
H_V = _s("H_v", r"H_v", "the number of value heads of a linear-attention layer (one state matrix each)", "count")
H_K = _s("H_k", r"H_k", "the number of key heads of a linear-attention layer", "count")
D_K = _s("d_k", r"d_k", "the key width of a linear-attention head", "values")
D_V = _s("d_v", r"d_v", "the value width of a linear-attention head", "values")
STATE_BYTES = _s("b_s", r"b_s", "the size of one stored number of the linear layers' state (2: it stays BF16 when the KV cache is quantized)", "bytes")
CONV = _s("c", "c", "the width of the linear layer's causal convolution (it keeps the last c - 1 inputs)", "tokens")
N = _s("N", "N", "the number of parameters stored", "parameters")
BITS = _s("bits", r"\beta", "the bits per weight, block scales included", "bits")
BW = _s("BW", r"\mathrm{BW}", "the memory bandwidth", "bytes/s")
S_STEP = _s("S_step", r"S_{\text{step}}", "the bytes read from memory per decode step (weights + KV cache)", "bytes")

#: Tokens of context and batch the checks evaluate at (any positive values would do).
CHECK_CONTEXTS = (1, 1000, 4096, 32768)
CHECK_BATCH = 3
#: Parameter count for the weight check: any positive count would do.
CHECK_PARAMS = 10**9
#: Bytes per element for the checks: BF16 (bfloat16 is 16 bits).
CHECK_BYTES = 2


def _plain_models():
    """Models whose every layer caches keys and values (no MLA latent, no linear-attention layers)."""
    return [m for m in catalog.models().values() if m.mla is None and m.linear_attention is None]


def _check_kv():
    tr = transformer
    f = FORMULAS["kv_cache_bytes"]
    out = []
    for m in _plain_models():
        for t in CHECK_CONTEXTS:
            v = f.evaluate(L=m.num_layers, K=m.num_kv_heads, d_head=m.head_dim, T=t, B=CHECK_BATCH, b=CHECK_BYTES)
            # no window cap in this entry: compare with the per-token count times T
            pkg = tr.kv_elements_per_token(m) * t * CHECK_BATCH * CHECK_BYTES
            out.append((f"{m.id} T={t}", v, pkg))
            if m.sliding is None and m.chunked is None:
                out.append((f"{m.id} T={t} (kv_cache_elements)", v,
                            tr.kv_cache_elements(m, t) * CHECK_BATCH * CHECK_BYTES))
    return out


def _check_kv_mla():
    tr = transformer
    f = FORMULAS["kv_cache_bytes_mla"]
    out = []
    for m in catalog.models().values():
        if m.mla is None:
            continue
        for t in CHECK_CONTEXTS:
            v = f.evaluate(L=m.num_layers, d_c=m.mla.kv_lora_rank, d_rope=m.mla.qk_rope_head_dim,
                           T=t, B=CHECK_BATCH, b=CHECK_BYTES)
            out.append((f"{m.id} T={t}", v, tr.kv_cache_elements(m, t) * CHECK_BATCH * CHECK_BYTES))
    return out


def _check_kv_sliding():
    tr = transformer
    f = FORMULAS["kv_cache_bytes_sliding"]
    out = []
    for m in _plain_models():
        if m.sliding is None and m.chunked is None:
            continue
        limited = sum(1 for i in range(m.num_layers) if tr.layer_kind(m, i) in ("sliding", "chunked"))
        width = m.sliding.window if m.sliding is not None else m.chunked.chunk
        for t in (*CHECK_CONTEXTS, 3 * width + 5):
            v = f.evaluate(L_full=m.num_layers - limited, L_slide=limited, W=width, K=m.num_kv_heads,
                           d_head=m.head_dim, T=t, B=CHECK_BATCH, b=CHECK_BYTES)
            out.append((f"{m.id} T={t}", v, tr.kv_cache_elements(m, t) * CHECK_BATCH * CHECK_BYTES))
    return out


def _check_kv_hybrid():
    tr = transformer
    f = FORMULAS["kv_cache_bytes_hybrid"]
    out = []
    hybrids = [m for m in catalog.models().values() if m.linear_attention is not None]
    if not hybrids:
        raise AssertionError("no catalog model has linear-attention layers: kv_cache_bytes_hybrid checks nothing")
    for m in hybrids:
        la = m.linear_attention
        n_lin = sum(1 for i in range(m.num_layers) if tr.layer_kind(m, i) == "linear")
        for t in (*CHECK_CONTEXTS, m.max_context):
            v = f.evaluate(L_full=m.num_layers - n_lin, L_lin=n_lin, K=m.num_kv_heads, d_head=m.head_dim, T=t,
                           H_v=la.num_value_heads, H_k=la.num_key_heads, d_k=la.key_head_dim,
                           d_v=la.value_head_dim, c=la.conv_kernel, B=CHECK_BATCH, b=1,
                           b_s=tr.STATE_BITS // 8)
            # An FP8 KV cache (1 byte) with the state at its own 2 bytes: both terms are checked.
            out.append((f"{m.id} T={t}", v, tr.kv_cache_bytes(m, t, 8) * CHECK_BATCH))
    return out


def _bits(p) -> float:
    return float(p.bits_per_weight)


def _check_weights():
    nm = numerics
    f = FORMULAS["weight_bytes"]
    out = []
    for name in nm.PRECISIONS:
        p = nm.precision(name)
        out.append((name, f.evaluate(N=CHECK_PARAMS, bits=_bits(p)), nm.weight_bytes(CHECK_PARAMS, name)))
    return out


def _check_decode():
    hw = hardware
    f = FORMULAS["decode_tokens_per_s"]
    out = []
    for a in catalog.accelerators().values():
        for m in catalog.models().values():
            for batch in (1, CHECK_BATCH):
                step = hw.bytes_per_decode_step(m, "bf16", "bf16", CHECK_CONTEXTS[2], batch)
                ceiling = hw.decode_ceiling(m, a, "bf16", "bf16", CHECK_CONTEXTS[2], batch)
                out.append((f"{m.id} on {a.id}, B={batch}", f.evaluate(BW=a.memory_bandwidth, S_step=step),
                            1 / ceiling.memory_seconds))
    return out


def _check_roofline():
    hw = hardware
    f = FORMULAS["decode_step_seconds"]
    out = []
    for a in catalog.accelerators().values():
        for m in catalog.models().values():
            for batch, ctx in ((1, CHECK_CONTEXTS[2]), (CHECK_BATCH, CHECK_CONTEXTS[0]), (1024, 128)):
                c = hw.decode_ceiling(m, a, "fp8", "bf16", ctx, batch)
                v = f.evaluate(S_step=c.bytes_per_step, BW=a.memory_bandwidth, F_step=c.flops_per_step, P=c.peak_flops)
                out.append((f"{m.id} on {a.id}, B={batch}, T={ctx}", v, c.step_seconds))
    return out


_register(Formula(
    "kv_cache_bytes", "KV-cache bytes for a batch (MHA, GQA, MQA; every layer holds every token)",
    _s("M_KV", r"M_{\text{KV}}", "the KV cache's size", "bytes"),
    sp.Mul(2, L.symbol, K.symbol, D_HEAD.symbol, T.symbol, B.symbol, BYTES.symbol, evaluate=False),
    (L, K, D_HEAD, T, B, BYTES),
    "[Vaswani et al. 2017](https://arxiv.org/abs/1706.03762), section 3.2 (one key and one value vector "
    "per head and token); [Ainslie et al. 2023](https://arxiv.org/abs/2305.13245) (GQA: K key/value heads "
    "shared by the query heads)",
    note="The 2 counts keys and values. Uses K, not the number of query heads H.",
    check=_check_kv,
))

_register(Formula(
    "kv_cache_bytes_mla", "KV-cache bytes with Multi-head Latent Attention (DeepSeek-V2/V3)",
    _s("M_KV", r"M_{\text{KV}}", "the KV cache's size", "bytes"),
    sp.Mul(L.symbol, sp.Add(D_C.symbol, D_R.symbol, evaluate=False), T.symbol, B.symbol, BYTES.symbol,
           evaluate=False),
    (L, D_C, D_R, T, B, BYTES),
    "[DeepSeek-V2 paper](https://arxiv.org/abs/2405.04434), section 2.1.2 and table 1",
    note="One latent per token and layer, shared by every head: no factor 2 and no head count.",
    check=_check_kv_mla,
))

_register(Formula(
    "kv_cache_bytes_sliding", "KV-cache bytes when some layers attend only to recent tokens (a sliding window or a chunk)",
    _s("M_KV", r"M_{\text{KV}}", "the KV cache's size", "bytes"),
    sp.Mul(2, K.symbol, D_HEAD.symbol,
           sp.Add(sp.Mul(L_FULL.symbol, T.symbol, evaluate=False),
                  sp.Mul(L_SLIDE.symbol, sp.Min(T.symbol, W.symbol), evaluate=False), evaluate=False),
           B.symbol, BYTES.symbol, evaluate=False),
    (K, D_HEAD, L_FULL, L_SLIDE, T, W, B, BYTES),
    "[Mistral 7B paper](https://arxiv.org/abs/2310.06825), section 2 (rolling buffer cache of W tokens); Llama 4's "
    "chunked attention (transformers Llama4TextConfig attention_chunk_size): a layer that attends only "
    "within its chunk of W tokens never needs more than W of them",
    note="A sliding or chunked layer never holds more than W tokens; full-attention layers hold all T.",
    check=_check_kv_sliding,
))

_register(Formula(
    "kv_cache_bytes_hybrid", "Cache bytes of a hybrid model: attention layers grow with T, linear-attention layers do not",
    _s("M_KV", r"M_{\text{KV}}", "KV cache plus the linear layers' state", "bytes"),
    sp.Mul(sp.Add(sp.Mul(2, L_FULL.symbol, K.symbol, D_HEAD.symbol, T.symbol, BYTES.symbol, evaluate=False),
                  sp.Mul(L_LIN.symbol,
                         sp.Add(sp.Mul(H_V.symbol, D_K.symbol, D_V.symbol, evaluate=False),
                                sp.Mul(sp.Add(CONV.symbol, -1, evaluate=False),
                                       sp.Add(sp.Mul(2, H_K.symbol, D_K.symbol, evaluate=False),
                                              sp.Mul(H_V.symbol, D_V.symbol, evaluate=False), evaluate=False),
                                       evaluate=False), evaluate=False), STATE_BYTES.symbol, evaluate=False),
                  evaluate=False),
           B.symbol, evaluate=False),
    (L_FULL, K, D_HEAD, T, BYTES, L_LIN, H_V, D_K, D_V, CONV, H_K, STATE_BYTES, B),
    "Yang, Kautz and Hatamizadeh 2024, Gated Delta Networks (arXiv:2412.06464), section 2: the state "
    "is one d_k x d_v matrix per head; Qwen3-Next config.json (full_attention_interval, linear_*); the "
    "convolution window as vLLM stores it (MambaStateShapeCalculator.gated_delta_net_state_shape)",
    note="The linear-attention term has no T: those layers keep the same state at ten tokens and at a "
         "million. Only the full-attention layers' keys and values grow with the context. The state "
         "keeps its own precision b_s (vLLM stores it in the model's BF16 whatever the KV-cache format).",
    check=_check_kv_hybrid,
))

_register(Formula(
    "weight_bytes", "Bytes to store the weights at a given precision",
    _s("M_W", r"M_{\text{W}}", "the memory the weights take", "bytes"),
    sp.Mul(N.symbol, BITS.symbol, sp.Pow(8, -1, evaluate=False), evaluate=False),
    (N, BITS),
    "Definition: 8 bits per byte; block-scaled formats add their scale bits to the bits per weight "
    "([OCP Microscaling Formats (MX) spec v1.0](https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf), section 5)",
    note="MoE models store every expert, so N is the total, not the active, count.",
    check=_check_weights,
))

F_STEP = _s("F_step", r"F_{\text{step}}", "the arithmetic of one decode step of the batch", "FLOP")
PEAK = _s("P", r"P", "the chip's dense peak in the precision the matmuls run in", "FLOP/s")

_register(Formula(
    "decode_step_seconds", "The roofline of one decode step: the longer of reading and computing",
    _s("t", r"t_{\text{step}}", "the time of one decode step", "s"),
    sp.Max(sp.Mul(S_STEP.symbol, sp.Pow(BW.symbol, -1, evaluate=False), evaluate=False),
           sp.Mul(F_STEP.symbol, sp.Pow(PEAK.symbol, -1, evaluate=False), evaluate=False)),
    (S_STEP, BW, F_STEP, PEAK),
    "[Williams, Waterman & Patterson 2009, Roofline](https://doi.org/10.1145/1498765.1498785) (CACM 52(4)), "
    "section 2; [Pope et al. 2022, Efficiently Scaling Transformer Inference](https://arxiv.org/abs/2211.05102), "
    "section 2",
    note="F_step is B times the FLOPs of one token (2 per active matmul weight plus attention). At small "
         "batches the read term is larger (memory-bound); at large batches and short contexts the "
         "arithmetic term wins (compute-bound).",
    check=_check_roofline,
))

_register(Formula(
    "decode_tokens_per_s", "Memory-bound ceiling on decode speed, tokens per second per sequence",
    _s("R", r"R_{\text{decode}}", "the ceiling on decode speed per sequence", "tokens/s"),
    sp.Mul(BW.symbol, sp.Pow(S_STEP.symbol, -1, evaluate=False), evaluate=False),
    (BW, S_STEP),
    "[Pope et al. 2022, Efficiently Scaling Transformer Inference](https://arxiv.org/abs/2211.05102), section 2 (decode is memory-bound "
    "at small batch); Williams et al. 2009 (roofline)",
    note="Each decode step reads the active weights and the whole KV cache once, and yields one "
         "token per sequence. Real engines reach a fraction of this ceiling.",
    check=_check_decode,
))


# ---------------------------------------------------------------------------------------------
# Part 1 (the transformer): RMSNorm, RoPE, scaled dot-product attention, SwiGLU.
# Written per component with indexed sums, so the expression is general in d, T and F; each check
# expands the sums for a small size and compares with the code on random inputs (float64).
# ---------------------------------------------------------------------------------------------

#: Sizes and seed of the Part 1 formula checks (small, so the expanded sympy sums stay quick).
PART1_CHECK_D = 4
PART1_CHECK_T = 3
PART1_CHECK_F = 5
PART1_CHECK_SEED = 20260101
#: RMSNorm epsilon used in the check: SmolLM2's GGUF ``llama.attention.layer_norm_rms_epsilon``.
PART1_CHECK_EPS = 1e-5
#: RoPE base used in the check: SmolLM2's GGUF ``llama.rope.freq_base`` (config.json rope_theta).
PART1_CHECK_ROPE_BASE = 100000


def _idx(name: str) -> sp.Symbol:
    return sp.Symbol(name, integer=True, positive=True)


def _real(name: str, tex: str, meaning: str, unit: str) -> Sym:
    return Sym(sp.Symbol(name, real=True), tex, meaning, unit)


def _expand(expr: sp.Expr, sizes: dict, arrays: dict, scalars: dict | None = None) -> float:
    """Value of ``expr`` with its sums expanded at ``sizes`` and Indexed entries from ``arrays``
    (1-based indices mapped onto 0-based NumPy arrays), evaluated to 30 digits."""
    e = expr.subs(sizes).doit()
    sub = {}
    for ind in e.atoms(sp.Indexed):
        arr = arrays[ind.base.label.name]
        sub[ind] = sp.Float(float(arr[tuple(int(i) - 1 for i in ind.indices)]), 30)
    e = e.subs(sub)
    if scalars:
        e = e.subs(scalars)
    return float(sp.N(e, 30))


_XI = sp.IndexedBase("x", real=True)
_GI = sp.IndexedBase("g", real=True)
_QI = sp.IndexedBase("q", real=True)
_KI = sp.IndexedBase("k", real=True)
_VI = sp.IndexedBase("v", real=True)
_UW = sp.IndexedBase("U", real=True)
_GW = sp.IndexedBase("G", real=True)
_DW = sp.IndexedBase("W", real=True)
_i, _j, _t, _u, _a, _f, _c = (_idx(n) for n in ("i", "j", "t", "u", "a", "f", "c"))
_d = _s("d", "d", "the vector's length (d_model for RMSNorm and the FFN, d_head for attention and RoPE)", "values")
_eps = _s("epsilon", r"\epsilon", "a small constant that keeps the division finite", "dimensionless")
_Tn = _s("T", "T", "the number of tokens attended to (the query's own and every earlier one)", "tokens")
_Fn = _s("F", "F", "the FFN's hidden width", "values")


def _check_rms_norm():
    import numpy as np

    fwd = forward
    rng = np.random.default_rng(PART1_CHECK_SEED)
    x, g = rng.normal(size=PART1_CHECK_D), rng.normal(size=PART1_CHECK_D)
    code = fwd.rms_norm(x[None, :], g, PART1_CHECK_EPS)[0]  # (d,) float64
    f = FORMULAS["rms_norm"]
    return [(f"component {i}", _expand(f.expr, {_d.symbol: PART1_CHECK_D, _i: i},
                                         {"x": x, "g": g}, {_eps.symbol: sp.Float(PART1_CHECK_EPS, 30)}),
             float(code[i - 1])) for i in range(1, PART1_CHECK_D + 1)]


_register(Formula(
    "rms_norm", "RMSNorm: rescale a vector by its root-mean-square, then by a learned gain",
    _s("y_i", "y_i", "component i of the normalised vector", "values"),
    sp.Mul(_XI[_i], _GI[_i], sp.Pow(sp.sqrt(sp.Add(sp.Mul(sp.Pow(_d.symbol, -1), sp.Sum(_XI[_j] ** 2, (_j, 1, _d.symbol)),
                                                              evaluate=False), _eps.symbol, evaluate=False)), -1,
                                    evaluate=False), evaluate=False),
    (Sym(_XI.label, "x", "the input vector (one token's residual stream)", "values"),
     Sym(_GI.label, "g", "the learned gain, one per component", "dimensionless"),
     Sym(_i, "i", "the component's index, 1 to d", "index"), _d, _eps),
    "[Zhang and Sennrich 2019, \"Root Mean Square Layer Normalization\"](https://arxiv.org/abs/1910.07467), eq. 4",
    note="Unlike LayerNorm there is no mean subtraction and no bias.",
    check=_check_rms_norm,
))

_m = _s("m", "m", "the token's position in the sequence (0 for the first)", "positions")
_n = Sym(sp.Symbol("n", integer=True, nonnegative=True), "n", "the pair's index, 0 to d/2 - 1", "index")
_base = _s("base", r"\theta", "the RoPE base (config.json rope_theta)", "dimensionless")
_x0 = _real("x_even", "x_{2n}", "the first number of the pair", "values")
_x1 = _real("x_odd", "x_{2n+1}", "the second number of the pair", "values")


def _check_rope():
    import numpy as np

    fwd = forward
    rng = np.random.default_rng(PART1_CHECK_SEED)
    x = rng.normal(size=(1, PART1_CHECK_T, PART1_CHECK_D))  # (heads, T, d_head)
    pos = np.arange(PART1_CHECK_T)
    f = FORMULAS["rope_pair"]
    out = []
    # cos and sin of the formula's angle in float64 (rope_angles rounds them to float32; the test
    # suite compares rope_angles with this formula at float32 precision).
    ang = np.array([[float(sp.N(m * sp.Integer(PART1_CHECK_ROPE_BASE) ** (sp.Rational(-2 * n, PART1_CHECK_D)), 30))
                     for n in range(PART1_CHECK_D // 2)] for m in pos])  # (T, d/2)
    code = fwd.rope_interleaved(x, np.cos(ang), np.sin(ang))[0]  # (T, d)
    for m in pos:
        for n in range(PART1_CHECK_D // 2):
            val = complex(sp.N(f.expr.subs({_x0.symbol: sp.Float(float(x[0, m, 2 * n]), 30),
                                            _x1.symbol: sp.Float(float(x[0, m, 2 * n + 1]), 30),
                                            _m.symbol: int(m), _n.symbol: n, _base.symbol: PART1_CHECK_ROPE_BASE,
                                            _d.symbol: PART1_CHECK_D}), 30))
            out.append((f"m={m} n={n} even", val.real, float(code[m, 2 * n])))
            out.append((f"m={m} n={n} odd", val.imag, float(code[m, 2 * n + 1])))
    return out


_register(Formula(
    "rope_pair", "RoPE: rotate each pair of query/key numbers by an angle that grows with the position",
    Sym(sp.Symbol("z_rot"), r"x'_{2n} + i\,x'_{2n+1}", "the rotated pair, written as one complex number", "values"),
    sp.Mul(sp.Add(_x0.symbol, sp.Mul(sp.I, _x1.symbol, evaluate=False), evaluate=False),
           sp.exp(sp.Mul(sp.I, _m.symbol, sp.Pow(_base.symbol, sp.Mul(-2, _n.symbol, sp.Pow(_d.symbol, -1),
                                                                   evaluate=False), evaluate=False),
                         evaluate=False), evaluate=False), evaluate=False),
    (_x0, _x1, _m, _base, _n, _d),
    "[Su et al. 2021, \"RoFormer\"](https://arxiv.org/abs/2104.09864), section 3.4.2, eq. 34 (adjacent pairs, as llama.cpp applies it to GGUF weights)",
    note="Applied to queries and keys, not values. The dot product of two rotated vectors depends "
         "only on the difference of their positions.",
    check=_check_rope,
))


def _attention_expr():
    score_t = sp.Sum(sp.Mul(_QI[_a], _KI[_t, _a], evaluate=False), (_a, 1, _d.symbol))
    score_u = sp.Sum(sp.Mul(_QI[_a], _KI[_u, _a], evaluate=False), (_a, 1, _d.symbol))
    num = sp.Sum(sp.Mul(sp.exp(sp.Mul(score_t, sp.Pow(sp.sqrt(_d.symbol), -1), evaluate=False)), _VI[_t, _c],
                        evaluate=False), (_t, 1, _Tn.symbol))
    den = sp.Sum(sp.exp(sp.Mul(score_u, sp.Pow(sp.sqrt(_d.symbol), -1), evaluate=False)), (_u, 1, _Tn.symbol))
    return sp.Mul(num, sp.Pow(den, -1, evaluate=False), evaluate=False)


def _check_attention():
    import numpy as np

    fwd = forward
    tr = transformer
    rng = np.random.default_rng(PART1_CHECK_SEED)
    q = rng.normal(size=PART1_CHECK_D)
    k = rng.normal(size=(PART1_CHECK_T, PART1_CHECK_D))
    v = rng.normal(size=(PART1_CHECK_T, PART1_CHECK_D))
    core = tr.attend(q.tolist(), k.tolist(), v.tolist())["output"]  # the qkv_example widget's code
    trace = fwd.softmax_last(q @ k.T / np.sqrt(PART1_CHECK_D)) @ v  # the trace's softmax, float64
    f = FORMULAS["attention_output"]
    out = []
    for c in range(1, PART1_CHECK_D + 1):
        val = _expand(f.expr, {_d.symbol: PART1_CHECK_D, _Tn.symbol: PART1_CHECK_T, _c: c}, {"q": q, "k": k, "v": v})
        out.append((f"component {c} (transformer.attend)", val, core[c - 1]))
        out.append((f"component {c} (trace softmax)", val, float(trace[c - 1])))
    return out


_register(Formula(
    "attention_output", "Scaled dot-product attention of one query, component c of the output",
    _s("o_c", "o_c", "component c of the attention output for this query", "values"),
    _attention_expr(),
    (Sym(_QI.label, "q", "the query vector of the token doing the looking", "values"),
     Sym(_KI.label, "k", "the keys, one row per token", "values"),
     Sym(_VI.label, "v", "the values, one row per token", "values"),
     Sym(_c, "c", "the output component's index", "index"), _d, _Tn),
    "[Vaswani et al. 2017, \"Attention Is All You Need\"](https://arxiv.org/abs/1706.03762), section 3.2.1, eq. 1, for one row of Q",
    note=r"The weights are a softmax over the $T$ scores; for all queries at once, in matrix form, "
         r"$\operatorname{softmax}(QK^\top/\sqrt{d})\,V$.",
    check=_check_attention,
    compact=r"o_c = \sum_{t=1}^{T} \operatorname{softmax}_t\!\left(\frac{q \cdot k_t}{\sqrt{d}}\right) v_{t,c}",
))


def _swiglu_expr():
    h = sp.Sum(sp.Mul(_XI[_a], _GW[_a, _f], evaluate=False), (_a, 1, _d.symbol))
    up = sp.Sum(sp.Mul(_XI[_a], _UW[_a, _f], evaluate=False), (_a, 1, _d.symbol))
    silu = sp.Mul(h, sp.Pow(sp.Add(1, sp.exp(-h), evaluate=False), -1, evaluate=False), evaluate=False)
    return sp.Sum(sp.Mul(silu, up, _DW[_f, _c], evaluate=False), (_f, 1, _Fn.symbol))


def _check_swiglu():
    import numpy as np

    fwd = forward
    rng = np.random.default_rng(PART1_CHECK_SEED)
    x = rng.normal(size=PART1_CHECK_D)
    G, U = rng.normal(size=(PART1_CHECK_D, PART1_CHECK_F)), rng.normal(size=(PART1_CHECK_D, PART1_CHECK_F))
    W = rng.normal(size=(PART1_CHECK_F, PART1_CHECK_D))
    code = (fwd.silu(x @ G) * (x @ U)) @ W  # forward()'s FFN line, with the GGUF's (out, in) layout transposed
    f = FORMULAS["swiglu_ffn"]
    return [(f"component {c}", _expand(f.expr, {_d.symbol: PART1_CHECK_D, _Fn.symbol: PART1_CHECK_F, _c: c},
                                         {"x": x, "G": G, "U": U, "W": W}), float(code[c - 1]))
            for c in range(1, PART1_CHECK_D + 1)]


_register(Formula(
    "swiglu_ffn", "The gated feed-forward block (SwiGLU), component c of its output",
    _s("y_c", "y_c", "component c of the FFN output for one token", "values"),
    _swiglu_expr(),
    (Sym(_XI.label, "x", "the token's normalised vector", "values"),
     Sym(_GW.label, "G", "the gate projection, d x F", "weights"),
     Sym(_UW.label, "U", "the up projection, d x F", "weights"),
     Sym(_DW.label, "W", "the down projection, F x d", "weights"),
     Sym(_c, "c", "the output component's index", "index"), _d, _Fn),
    "[Shazeer 2020, \"GLU Variants Improve Transformer\"](https://arxiv.org/abs/2002.05202), eq. 6 (FFN_SwiGLU with Swish_1 = SiLU)",
    note=r"$h/(1 + e^{-h})$ is SiLU (Swish), the bend; the up path multiplies it; the down projection "
         "returns to width d. Three d x F matrices per layer, against two for the classic FFN.",
    check=_check_swiglu,
    compact=r"y = \bigl(\operatorname{SiLU}(x G) \odot x U\bigr)\, W, \qquad \operatorname{SiLU}(h) = \frac{h}{1 + e^{-h}}",
))


# ---------------------------------------------------------------------------------------------
# Sampling: temperature (Part 1, "From logits to a token")
# ---------------------------------------------------------------------------------------------

Z_I = _s("z_i", "z_i", "the logit (score) of token i, from the model's last layer", "no unit")
Z_J = _s("z_j", "z_j", "the logit of another token j", "no unit")
TEMP = _s("T_s", "T", "the sampling temperature (T > 0; T = 0 is the greedy limit)", "dimensionless")
Z_SUM = _s("S", r"\sum_{k=1}^{V} e^{z_k / T}", "the same exponential summed over all V vocabulary entries",
           "dimensionless")
#: Temperatures at which the sampling formulas are checked against descent.sampling.
CHECK_TEMPERATURES = (0.25, 0.7, 1.0, 1.5, 2.0)
#: Logits for the sampling checks: the real top-50 next-token logits of one site prompt when the
#: trace data is present, else this fixed list (any finite values would do).
CHECK_LOGITS = (3.0, 1.5, 1.0, 0.0, -2.0)


def _check_logits_list() -> list[float]:
    try:
        from descent.widgets.part0 import prompt_trace

        return [c["logit"] for c in prompt_trace("story")["next"]]
    except (ImportError, ValueError, OSError):
        return list(CHECK_LOGITS)


def _check_softmax_temperature():
    import math

    f = FORMULAS["softmax_temperature"]
    logits = _check_logits_list()
    out = []
    for t in CHECK_TEMPERATURES:
        probs = sampling.softmax(logits, t)
        s = math.fsum(math.exp(z / t) for z in logits)
        for i in (0, 1, len(logits) - 1):
            out.append((f"T={t} token {i}", f.evaluate(z_i=logits[i], T_s=t, S=s), probs[i]))
    return out


def _check_temperature_ratio():
    f = FORMULAS["temperature_ratio"]
    logits = _check_logits_list()
    out = []
    for t in CHECK_TEMPERATURES:
        probs = sampling.softmax(logits, t)
        for i, j in ((0, 1), (1, 4)):
            out.append((f"T={t} p{i}/p{j}", f.evaluate(z_i=logits[i], z_j=logits[j], T_s=t), probs[i] / probs[j]))
    return out


_register(Formula(
    "softmax_temperature", "Probability of token i at temperature T (softmax of the logits divided by T)",
    _s("p_i", "p_i", "the probability that token i is drawn next", "probability (0 to 1)"),
    sp.Mul(sp.exp(sp.Mul(Z_I.symbol, sp.Pow(TEMP.symbol, -1, evaluate=False), evaluate=False), evaluate=False),
           sp.Pow(Z_SUM.symbol, -1, evaluate=False), evaluate=False),
    (Z_I, TEMP, Z_SUM),
    "[Ackley, Hinton and Sejnowski 1985](https://doi.org/10.1207/s15516709cog0901_7) (the Boltzmann "
    "distribution with temperature); as applied to logits by Hugging Face transformers' "
    "[TemperatureLogitsWarper](https://huggingface.co/docs/transformers/internal/generation_utils) before the softmax",
    note="T = 1 is the model's own distribution; T < 1 sharpens it, T > 1 flattens it.",
    check=_check_softmax_temperature,
))

_register(Formula(
    "temperature_ratio", "How temperature changes the odds between two tokens",
    _s("r", r"\frac{p_i}{p_j}", "how many times more likely token i is than token j", "ratio"),
    sp.exp(sp.Mul(sp.Add(Z_I.symbol, sp.Mul(-1, Z_J.symbol, evaluate=False), evaluate=False),
                  sp.Pow(TEMP.symbol, -1, evaluate=False), evaluate=False), evaluate=False),
    (Z_I, Z_J, TEMP),
    "[Ackley, Hinton and Sejnowski 1985](https://doi.org/10.1207/s15516709cog0901_7), as above: dividing "
    "p_i by p_j cancels the sum",
    note="Only the gap between two logits matters, divided by T.",
    check=_check_temperature_ratio,
))


# ---------------------------------------------------------------------------------------------
# Part 2 (weights as numbers): a float's value from its bits, integer quantization, SQNR, and the
# bits per weight of a block-scaled format. Checked against descent.floats, descent.quant and
# descent.numerics on every code / random weights / every block format.
# ---------------------------------------------------------------------------------------------

#: Seed and size of the Part 2 checks' random weights.
PART2_CHECK_SEED = 20261201
PART2_CHECK_N = 64

SIGN = _s("s", "s", "sign bit (0 or 1)", "bit")
EXP_FIELD = _s("e", "e", "exponent field, read as an unsigned integer", "integer")
MANT_FIELD = _s("m", "m", "mantissa field, read as an unsigned integer", "integer")
MANT_BITS = _s("M", "M", "mantissa bits", "bits")
BIAS = _s("bias", r"\mathrm{bias}", "exponent bias of the format", "integer")
W_REAL = _real("w", "w", "a weight", "weight units")
SCALE = _s("s_q", "s", "the scale: the step between neighbouring levels", "weight units")
ZERO = _s("z", "z", "zero point: the code that stands for 0 (0 when symmetric)", "integer")
P_SIGNAL = _s("P_w", r"\sum w^2", "sum of the squared weights", "weight units squared")
P_NOISE = _s("P_e", r"\sum (w - \hat w)^2", "sum of the squared rounding errors", "weight units squared")
ELEM_BITS = _s("b_e", "b_e", "bits of one element", "bits")
SCALE_BITS = _s("b_s", "b_s", "bits of one block scale", "bits")
BLOCK = _s("k", "k", "values sharing one scale (block size)", "values")


def _check_float_value():
    from descent import floats as fl

    f = FORMULAS["float_value"]
    out = []
    for fmt in fl.FORMATS.values():
        if fmt.special == "e8m0":
            continue
        for code in range(0, fmt.codes, max(1, fmt.codes // 97)):
            if fmt.kind(code) != "normal":
                continue
            s, e, m = fmt.split(code)
            out.append((f"{fmt.name} code {code}",
                        f.evaluate(s=s, e=e, m=m, M=fmt.mantissa_bits, bias=fmt.bias), fmt.decode(code)))
    return out


def _random_weights() -> list[float]:
    import random

    rng = random.Random(PART2_CHECK_SEED)
    return [rng.gauss(0.0, 1.0) for _ in range(PART2_CHECK_N)]


def _check_int_code():
    from descent import quant

    f = FORMULAS["int_code"]
    w = _random_weights()
    out = []
    for bits in (8, 4, 3):
        for sym in (True, False):
            q = quant.int_quantize(w, bits, symmetric=sym)
            qmax = (1 << bits) - 1 if not sym else (1 << (bits - 1)) - 1
            for i, x in enumerate(w[:16]):
                code = f.evaluate(w=x, s_q=q.scale, z=q.zero_point)
                lo = 0 if not sym else -qmax
                if lo <= code <= qmax:  # the formula before clipping to the code range
                    out.append((f"{bits} bits {'sym' if sym else 'zp'} w[{i}]", code, q.codes[i]))
    return out


def _check_sqnr():
    import math

    from descent import quant

    f = FORMULAS["sqnr_db"]
    w = _random_weights()
    out = []
    for bits in (8, 4, 2):
        q = quant.int_quantize(w, bits)
        pw = math.fsum(x * x for x in w)
        pe = math.fsum((x - y) ** 2 for x, y in zip(w, q.values, strict=True))
        out.append((f"{bits} bits", f.evaluate(P_w=pw, P_e=pe), quant.error_stats(w, q.values).sqnr_db))
    return out


def _check_block_bits():
    f = FORMULAS["block_bits_per_weight"]
    out = []
    for name in ("int4", "mxfp4", "nvfp4"):
        p = numerics.precision(name)
        out.append((name, f.evaluate(b_e=p.element_bits, b_s=p.scale_bits, k=p.block_size), p.bits_per_weight))
    return out


_register(Formula(
    "float_value", "The value of a normal floating-point code",
    _real("x", "x", "the value the code stands for", "number"),
    sp.Mul(sp.Pow(-1, SIGN.symbol, evaluate=False),
           sp.Add(1, sp.Mul(MANT_FIELD.symbol, sp.Pow(2, sp.Mul(-1, MANT_BITS.symbol, evaluate=False),
                                                      evaluate=False), evaluate=False), evaluate=False),
           sp.Pow(2, sp.Add(EXP_FIELD.symbol, sp.Mul(-1, BIAS.symbol, evaluate=False), evaluate=False),
                  evaluate=False), evaluate=False),
    (SIGN, MANT_FIELD, MANT_BITS, EXP_FIELD, BIAS),
    "IEEE 754-2008, section 3.4; OCP OFP8 rev. 1.0, section 3; OCP MX v1.0, section 5.3",
    note="Subnormals (e = 0) drop the leading 1 and use exponent 1 - bias; the reserved codes differ by format.",
    check=_check_float_value,
))

_register(Formula(
    "int_code", "Integer quantization: the code of a weight",
    _s("q", "q", "the stored integer code", "integer"),
    sp.Add(sp.floor(sp.Add(sp.Mul(W_REAL.symbol, sp.Pow(SCALE.symbol, -1, evaluate=False), evaluate=False),
                           sp.Rational(1, 2), evaluate=False)), ZERO.symbol, evaluate=False),
    (W_REAL, SCALE, ZERO),
    "Jacob et al. 2018, arXiv:1712.05877, section 2.1, eq. 1 (there read backwards: w = s (q - z))",
    note="Rounded to the nearest integer, then clipped to the codes the bits allow; the weight comes "
         "back as s (q - z), off by at most s/2.",
    check=_check_int_code,
))

_register(Formula(
    "sqnr_db", "Signal-to-quantization-noise ratio, decibels",
    _s("SQNR", r"\mathrm{SQNR}", "signal-to-quantization-noise ratio", "dB"),
    sp.Mul(10, sp.log(sp.Mul(P_SIGNAL.symbol, sp.Pow(P_NOISE.symbol, -1, evaluate=False), evaluate=False), 10),
           evaluate=False),
    (P_SIGNAL, P_NOISE),
    "Widrow and Kollar 2008, 'Quantization Noise', ch. 5 (about 6 dB per bit for a uniform grid)",
    check=_check_sqnr,
))

_register(Formula(
    "block_bits_per_weight", "Bits per weight of a block-scaled format, scales included",
    BITS,
    sp.Add(ELEM_BITS.symbol, sp.Mul(SCALE_BITS.symbol, sp.Pow(BLOCK.symbol, -1, evaluate=False), evaluate=False),
           evaluate=False),
    (ELEM_BITS, SCALE_BITS, BLOCK),
    "OCP Microscaling Formats (MX) Specification v1.0, section 5; NVIDIA NVFP4 (16-value blocks, E4M3 scale)",
    note="MXFP4 spreads one 8-bit scale over 32 values. NVFP4 spreads one over 16.",
    check=_check_block_bits,
))


# ---------------------------------------------------------------------------------------------
# Part 4 (hardware): the roofline, tiles, attention traffic, the online softmax, parallelism.
# Each check evaluates the expression on catalog chips and models (or on a grid of sizes) and
# compares with the package function it mirrors.
# ---------------------------------------------------------------------------------------------

from descent import attention_io, memory_tiers, roofline, step, tiling  # noqa: E402

F_PEAK = _s("F_peak", r"F_{\text{peak}}", "dense peak of the chip in the step's compute precision", "FLOP/s")
INTENSITY = _s("I", "I", "arithmetic intensity: FLOPs per byte of memory traffic", "FLOP/byte")
C_STEP = _s("C_step", r"C_{\text{step}}", "FLOPs of the step", "FLOP")
TILE_T = _s("t", "t", "edge of a square output tile", "elements")
K_DIM = _s("K_dim", "K", "the inner (shared) dimension of the product", "elements")
P_DEV = _s("p", "p", "devices in the all-reduce (or pipeline stages)", "devices")
MSG = _s("S_msg", r"S_{\text{msg}}", "bytes of the message every device contributes", "bytes")
M_MB = _s("m", "m", "micro-batches in flight", "count")
N_SEQ = _s("N_seq", "N", "sequence length", "tokens")
D_ATT = _s("d", "d", "head dimension", "values")
B_C = _s("B_c", "B_c", "keys per FlashAttention block, ceil(M / 4d) for M elements of SRAM", "tokens")
UNITS = _s("U", "U", "SMs (or CUs) on the chip", "count")
BETA = _s("beta", r"\beta", "bytes one SM's shared memory delivers per clock", "bytes/clock")
CLOCK = _s("f", "f", "clock frequency", "Hz")
ELL = _s("ell", r"\ell", "running sum of exp(score - m) before the block", "dimensionless")
M_OLD = _real("m_old", r"m", "running maximum of the scores before the block", "dimensionless")
M_NEW = _real("m_new", r"m'", "running maximum after the block, max(m, the block's largest score)", "dimensionless")
ELL_BLK = _s("ell_blk", r"\ell_{\text{block}}", "sum of exp(score - m') over the block's scores", "dimensionless")

#: Part 4 checks run on these models and contexts (any catalog rows would do; these cover dense,
#: MoE, MLA and sliding-window layers).
PART4_CHECK_MODELS = ("llama-3.1-70b", "gpt-oss-120b", "deepseek-v3", "gemma-3-27b")
PART4_CHECK_SEQ = (1, 127, 2048, 100_000)


def _check_ridge():
    f = FORMULAS["ridge_point"]
    out = []
    for a in catalog.accelerators().values():
        for prec, attr in catalog.COMPUTE_PRECISIONS.items():
            if getattr(a, attr) is None:
                continue
            out.append((f"{a.id} {prec}", f.evaluate(F_peak=getattr(a, attr), BW=a.memory_bandwidth),
                        step.ridge_point(a, prec)))
    return out


def _check_roofline_attainable():
    f = FORMULAS["roofline_attainable"]
    out = []
    for a in catalog.accelerators().values():
        for i in (0.5, 2.0, 300.0, 1e5):
            out.append((f"{a.id} I={i}", f.evaluate(F_peak=a.bf16_flops, I=i, BW=a.memory_bandwidth),
                        step.attainable_flops(a, i, "bf16")))
    return out


def _check_step_seconds():
    f = FORMULAS["step_seconds"]
    out = []
    for a in ("h200", "b200", "rtx-5090", "m3-ultra"):
        for mid in PART4_CHECK_MODELS:
            for phase in roofline.PHASES:
                for batch in (1, 64):
                    s = roofline.step(mid, a, "fp8", "bf16", 4096, batch, phase)
                    out.append((f"{mid} on {a} {phase} B={batch}",
                                f.evaluate(C_step=s.flops_per_step, F_peak=s.peak_flops, S_step=s.bytes_per_step,
                                           BW=s.memory_bandwidth), s.seconds_per_step))
    return out


def _check_tile_intensity():
    f = FORMULAS["tile_intensity"]
    return [(f"t={t} {e}", f.evaluate(t=t, K_dim=tiling.GEMM_EXAMPLE["k"], b=b), tiling.tile_intensity(t, b))
            for t in tiling.TILE_SIZES for e, b in tiling.ELEMENT_BYTES.items()]


def _check_allreduce():
    f = FORMULAS["allreduce_bytes"]
    return [(f"p={p} S={s}", f.evaluate(p=p, S_msg=s), step.ring_allreduce_bytes(s, p))
            for p in (1, 2, 3, 4, 8, 16, 72) for s in (16_384, 1_048_576)]


def _check_bubble():
    f = FORMULAS["pipeline_bubble"]
    return [(f"p={p} m={m}", f.evaluate(p=p, m=m), step.pipeline_bubble(p, m))
            for p in (1, 2, 4, 8, 16) for m in (1, 4, 8, 64)]


def _check_attention_naive():
    f = FORMULAS["attention_naive_bytes"]
    return [(f"N={n} d={d} b={b}", f.evaluate(N_seq=n, d=d, b=b), attention_io.naive_elements(n, d) * b)
            for n in PART4_CHECK_SEQ for d in (64, 128) for b in (1, 2)]


def _check_attention_flash():
    f = FORMULAS["attention_flash_bytes"]
    out = []
    for a in ("h100-sxm", "b200", "mi300x"):
        for n in PART4_CHECK_SEQ:
            for d in (64, 128):
                t = attention_io.traffic(n, d, 2, a)
                out.append((f"{a} N={n} d={d}", f.evaluate(N_seq=n, d=d, B_c=t.block_cols, b=2), t.flash_bytes))
    return out


def _check_online_softmax():
    import math
    import random

    f = FORMULAS["online_softmax_sum"]
    rng = random.Random(PART1_CHECK_SEED)
    scores = [rng.uniform(-8, 8) for _ in range(20)]
    values = [[1.0] for _ in scores]
    block = 6
    _out, steps = attention_io.online_softmax(scores, values, block)
    out = []
    for prev, cur in zip(steps, steps[1:], strict=False):
        blk = scores[cur.block * block:(cur.block + 1) * block]
        ell_blk = math.fsum(math.exp(s - cur.running_max) for s in blk)
        out.append((f"block {cur.block}", f.evaluate(ell=prev.running_sum, m_old=prev.running_max,
                                                     m_new=cur.running_max, ell_blk=ell_blk), cur.running_sum))
    return out


def _check_smem_bandwidth():
    f = FORMULAS["shared_memory_bandwidth"]
    out = []
    for a in memory_tiers.gpus():
        bw = memory_tiers.shared_memory_bandwidth(a)
        if bw is not None:
            out.append((a.id, f.evaluate(U=a.compute_units, beta=a.shared_memory_bytes_per_clock, f=a.clock_hz), bw))
    return out


_register(Formula(
    "ridge_point", "The ridge point: where a chip stops being memory-bound",
    _s("I_ridge", r"I_{\text{ridge}}", "ridge point", "FLOP/byte"),
    sp.Mul(F_PEAK.symbol, sp.Pow(BW.symbol, -1, evaluate=False), evaluate=False),
    (F_PEAK, BW),
    "Williams, Waterman & Patterson 2009, Roofline: an insightful visual performance model, CACM 52(4), section 2",
    note="A kernel with fewer FLOPs per byte than this waits on memory; with more, on arithmetic.",
    check=_check_ridge,
))

_register(Formula(
    "roofline_attainable", "The roofline: the most FLOP/s a kernel of intensity I can reach",
    _s("P_att", r"P", "attainable arithmetic rate", "FLOP/s"),
    sp.Min(F_PEAK.symbol, sp.Mul(INTENSITY.symbol, BW.symbol, evaluate=False), evaluate=False),
    (F_PEAK, INTENSITY, BW),
    "Williams, Waterman & Patterson 2009, section 2",
    note="The memory ceiling (the slope) is I times the bandwidth; the compute ceiling (the flat line) is the peak.",
    check=_check_roofline_attainable,
))

_register(Formula(
    "step_seconds", "Lower bound on one step's time: the lower of the two ceilings",
    _s("t_step", r"t_{\text{step}}", "time of one decode or prefill step", "s"),
    sp.Max(sp.Mul(C_STEP.symbol, sp.Pow(F_PEAK.symbol, -1, evaluate=False), evaluate=False),
           sp.Mul(S_STEP.symbol, sp.Pow(BW.symbol, -1, evaluate=False), evaluate=False), evaluate=False),
    (C_STEP, F_PEAK, S_STEP, BW),
    "Williams et al. 2009; Pope et al. 2022, Efficiently Scaling Transformer Inference, section 2",
    note="Decode at small batch takes the second term, prefill the first.",
    check=_check_step_seconds,
))

_register(Formula(
    "tile_intensity", "Arithmetic intensity of one t x t output tile of a matrix product",
    _s("I_tile", r"I_{\text{tile}}", "FLOPs per byte loaded", "FLOP/byte"),
    sp.Mul(sp.Mul(2, TILE_T.symbol, TILE_T.symbol, K_DIM.symbol, evaluate=False),
           sp.Pow(sp.Mul(sp.Add(sp.Mul(TILE_T.symbol, K_DIM.symbol, evaluate=False),
                                sp.Mul(K_DIM.symbol, TILE_T.symbol, evaluate=False), evaluate=False),
                         BYTES.symbol, evaluate=False), -1, evaluate=False), evaluate=False),
    (TILE_T, K_DIM, BYTES),
    "Hong & Kung 1981 (blocking); NVIDIA Matrix Multiplication Background User's Guide (arithmetic intensity of a GEMM)",
    note="2t^2K FLOPs from a t x K strip of A and a K x t strip of B; K cancels, leaving t / b.",
    check=_check_tile_intensity,
))

_register(Formula(
    "allreduce_bytes", "Bytes each device sends in a ring all-reduce",
    _s("S_ar", r"S_{\text{all-reduce}}", "bytes each device sends (and receives)", "bytes"),
    sp.Mul(sp.Mul(2, sp.Add(P_DEV.symbol, -1, evaluate=False), sp.Pow(P_DEV.symbol, -1, evaluate=False),
                  evaluate=False), MSG.symbol, evaluate=False),
    (P_DEV, MSG),
    "Patarasuk & Yuan 2009, Bandwidth optimal all-reduce algorithms, JPDC 69(2); NCCL nccl-tests doc/PERFORMANCE.md",
    note="A reduce-scatter and an all-gather, each moving (p - 1)/p of the message. Tensor "
         "parallelism does two per layer.",
    check=_check_allreduce,
))

_register(Formula(
    "pipeline_bubble", "Share of a pipeline schedule each stage sits idle",
    _s("f_bubble", r"f_{\text{bubble}}", "idle share of each stage", "fraction"),
    sp.Max(0, sp.Mul(sp.Add(P_DEV.symbol, -M_MB.symbol, evaluate=False), sp.Pow(P_DEV.symbol, -1), evaluate=False)),
    (P_DEV, M_MB),
    "descent.step, the steady state of a serving engine's pipeline (a training flush idles (p - 1) / (m + p - 1) "
    "instead: Huang et al. 2019, GPipe, arXiv:1811.06965, section 2.2)",
    note="p stages, m micro-batches cycling through them: with m >= p every stage is always busy; "
    "with fewer, each stage waits for the next micro-batch to come round.",
    check=_check_bubble,
))

_register(Formula(
    "attention_naive_bytes", "Memory traffic of naive attention, one head",
    _s("Q_naive", r"Q_{\text{naive}}", "bytes moved to and from HBM", "bytes"),
    sp.Mul(sp.Add(sp.Mul(4, N_SEQ.symbol, D_ATT.symbol, evaluate=False),
                  sp.Mul(4, sp.Pow(N_SEQ.symbol, 2, evaluate=False), evaluate=False), evaluate=False),
           BYTES.symbol, evaluate=False),
    (N_SEQ, D_ATT, BYTES),
    "Dao et al. 2022, FlashAttention, arXiv:2205.14135, Algorithm 0 (standard attention)",
    note="The N x N scores are written, read, written again as probabilities and read again.",
    check=_check_attention_naive,
))

_register(Formula(
    "attention_flash_bytes", "Memory traffic of FlashAttention (Algorithm 1), one head",
    _s("Q_flash", r"Q_{\text{flash}}", "bytes moved to and from HBM", "bytes"),
    sp.Mul(sp.Add(sp.Mul(3, N_SEQ.symbol, D_ATT.symbol, evaluate=False), sp.Mul(2, N_SEQ.symbol, evaluate=False),
                  sp.Mul(sp.ceiling(sp.Mul(N_SEQ.symbol, sp.Pow(B_C.symbol, -1, evaluate=False), evaluate=False),
                                    evaluate=False),
                         sp.Add(sp.Mul(3, N_SEQ.symbol, D_ATT.symbol, evaluate=False),
                                sp.Mul(4, N_SEQ.symbol, evaluate=False), evaluate=False), evaluate=False),
                  evaluate=False), BYTES.symbol, evaluate=False),
    (N_SEQ, D_ATT, B_C, BYTES),
    "Dao et al. 2022, Algorithm 1 (the count of its HBM reads and writes) and Theorem 2",
    note="K and V are read once; Q, O and the running statistics once per block of keys. No N x N term.",
    check=_check_attention_flash,
))

_register(Formula(
    "online_softmax_sum", "The online softmax: updating the running sum when a block of scores arrives",
    _s("ell_new", r"\ell'", "running sum after the block", "dimensionless"),
    sp.Add(sp.Mul(sp.exp(sp.Add(M_OLD.symbol, sp.Mul(-1, M_NEW.symbol, evaluate=False), evaluate=False),
                         evaluate=False), ELL.symbol, evaluate=False), ELL_BLK.symbol, evaluate=False),
    (M_OLD, M_NEW, ELL, ELL_BLK),
    "Milakov & Gimelshein 2018, Online normalizer calculation for softmax, arXiv:1805.02867; Dao et al. 2022, section 3.1",
    note="The partial output is rescaled by the same factor; dividing by the final sum gives the exact softmax.",
    check=_check_online_softmax,
))

_register(Formula(
    "shared_memory_bandwidth", "Bandwidth of a GPU's shared memory, whole chip",
    _s("BW_smem", r"\mathrm{BW}_{\text{smem}}", "shared-memory bandwidth", "bytes/s"),
    sp.Mul(UNITS.symbol, BETA.symbol, CLOCK.symbol, evaluate=False),
    (UNITS, BETA, CLOCK),
    "NVIDIA CUDA C++ Programming Guide (32 banks of 4 bytes per clock per SM); AMD CDNA 3 whitepaper (LDS)",
    note="For the A100 (108 SMs, 1.41 GHz) it gives 19.5 TB/s, the figure Dao et al. 2022 use (section 2.1).",
    check=_check_smem_bandwidth,
))



# ---------------------------------------------------------------------------------------------
# Part 3 (serving software): the step time, speculative decoding, the break-even utilization.
# Checked against descent.serving on catalog rows and on a grid of inputs.
# ---------------------------------------------------------------------------------------------

ALPHA = _s("alpha", r"\alpha", "acceptance rate: the chance the target accepts each drafted token", "probability")
K_DRAFT = _s("k", "k", "draft length: tokens drafted per target pass", "tokens")
C_DRAFT = Sym(sp.Symbol("c", nonnegative=True), "c", "draft cost: one draft step's time over one target step's",
              "ratio")
S_BYTES = _s("S_bytes", r"S_{\text{step}}", "bytes the step reads (weights once, every sequence's KV cache)",
             "bytes")
F_STEP = _s("F_step", r"F_{\text{step}}", "FLOPs of the step (2 per weight per token, plus attention)", "FLOP")
PEAK = _s("P_peak", r"P_{\text{peak}}", "dense peak of the chip in the precision the matmuls run in", "FLOP/s")
GPU_H = _s("g", "g", "price of the accelerator per hour", "$/hour")
API_M = _s("p", "p", "API bill per million output tokens, the prompts' input tokens included", "$ per million tokens")
RATE = _s("R", "R", "output tokens per second at full load", "tokens/s")
#: Acceptance rates, draft lengths and draft costs of the speculative checks (a = 1 is the limit,
#: checked separately); the grid spans the speed-ups and the slow-downs.
CHECK_ALPHAS = (0.0, 0.3, 0.6, 0.8, 0.95)
CHECK_KS = (1, 2, 4, 8)
CHECK_CS = (0.0, 0.05, 0.3, 1.0)


def _speculative_expected_expr():
    a, k = ALPHA.symbol, K_DRAFT.symbol
    return sp.Mul(sp.Add(1, sp.Mul(-1, sp.Pow(a, sp.Add(k, 1, evaluate=False), evaluate=False), evaluate=False),
                         evaluate=False),
                  sp.Pow(sp.Add(1, sp.Mul(-1, a, evaluate=False), evaluate=False), -1, evaluate=False),
                  evaluate=False)


def _check_speculative(name: str, field_: str):
    from descent import serving

    def check():
        f = FORMULAS[name]
        out = []
        for a in CHECK_ALPHAS:
            for k in CHECK_KS:
                for c in CHECK_CS:
                    values = {"alpha": a, "k": k} | ({"c": c} if name == "speculative_speedup" else {})
                    out.append((f"a={a} k={k} c={c}", f.evaluate(**values),
                                getattr(serving.speculative(a, k, c), field_)))
        return out

    return check


def _check_step_seconds():
    from descent import serving

    f = FORMULAS["step_seconds"]
    out = []
    for m_id, a_id, w in (("llama-3.1-70b", "h200", "fp8"), ("llama-3.1-8b", "rtx-5090", "bf16"),
                          ("mixtral-8x7b", "b200", "fp8"), ("gemma-3-27b", "mi300x", "bf16")):
        s = serving.server(m_id, a_id, w, "bf16")
        for cost in (serving.prefill(s, 1000), serving.prefill(s, 8), serving.decode_step(s, 64, 4096)):
            out.append((f"{m_id} on {a_id}, {cost.tokens} tokens",
                        f.evaluate(S_bytes=cost.bytes, BW=s.bandwidth, F_step=cost.flops, P_peak=s.peak),
                        cost.seconds))
    return out


def _check_break_even():
    from descent import serving

    f = FORMULAS["break_even_utilization"]
    return [(f"g={g} p={p} R={r}", f.evaluate(g=g, p=p, R=r), serving.break_even_utilization(p, g, r))
            for g in (1.0, 3.0, 10.0) for p in (0.2, 1.0, 5.0) for r in (50.0, 1000.0, 20000.0)]


_register(Formula(
    "speculative_expected_tokens", "Tokens one target pass yields with speculative decoding",
    _s("E", r"\mathbb{E}[\text{tokens}]", "expected tokens per target pass", "tokens"),
    _speculative_expected_expr(),
    (ALPHA, K_DRAFT),
    "Leviathan, Kalman and Matias 2023, [Fast Inference from Transformers via Speculative Decoding]"
    "(https://arxiv.org/abs/2211.17192), section 3.1, equation 1",
    note="Every pass yields at least one token (the target's own) and at most k + 1; at alpha = 1 the "
         "formula's limit is k + 1.",
    check=_check_speculative("speculative_expected_tokens", "expected_tokens"),
))

_register(Formula(
    "speculative_speedup", "Walltime speedup of speculative decoding over plain decoding",
    _s("S", "S", "speedup (above 1: faster; below 1: slower)", "ratio"),
    sp.Mul(sp.Add(1, sp.Mul(-1, sp.Pow(ALPHA.symbol, sp.Add(K_DRAFT.symbol, 1, evaluate=False), evaluate=False),
                            evaluate=False), evaluate=False),
           sp.Pow(sp.Mul(sp.Add(1, sp.Mul(-1, ALPHA.symbol, evaluate=False), evaluate=False),
                         sp.Add(1, sp.Mul(K_DRAFT.symbol, C_DRAFT.symbol, evaluate=False), evaluate=False),
                         evaluate=False), -1, evaluate=False), evaluate=False),
    (ALPHA, K_DRAFT, C_DRAFT),
    "Leviathan, Kalman and Matias 2023 (arXiv:2211.17192), theorem 3.8",
    note="One round costs one target pass plus k draft steps of c each, and yields E tokens.",
    check=_check_speculative("speculative_speedup", "speedup"),
))

_register(Formula(
    "step_seconds", "Time of one serving step: the slower of reading its bytes and doing its arithmetic",
    _s("t", r"t_{\text{step}}", "time of one step (a lower bound)", "s"),
    sp.Max(sp.Mul(S_BYTES.symbol, sp.Pow(BW.symbol, -1, evaluate=False), evaluate=False),
           sp.Mul(F_STEP.symbol, sp.Pow(PEAK.symbol, -1, evaluate=False), evaluate=False), evaluate=False),
    (S_BYTES, BW, F_STEP, PEAK),
    "Williams, Waterman and Patterson 2009 (roofline), applied to a whole step as in Pope et al. 2022, "
    "Efficiently Scaling Transformer Inference, section 2",
    note="A prompt's prefill does many tokens' arithmetic for one read of the weights (compute-bound); a "
         "decode step does one token's per sequence (memory-bound until the batch is large).",
    check=_check_step_seconds,
))

_register(Formula(
    "break_even_utilization", "Utilization at which an accelerator costs what an API charges",
    _s("u", r"u^{*}", "break-even utilization (share of hours at full load)", "fraction"),
    sp.Mul(sp.Pow(10, 6, evaluate=False), GPU_H.symbol,
           sp.Pow(sp.Mul(3600, RATE.symbol, API_M.symbol, evaluate=False), -1, evaluate=False), evaluate=False),
    (GPU_H, RATE, API_M),
    "Definition: an hour costs g and yields 3600 R u tokens; set the cost per million equal to p",
    note="Busier than u*, the accelerator is cheaper per token; u* above 1 means it never is.",
    check=_check_break_even,
))
