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
    "bytes": "in bytes",
    "bytes/s": "in bytes per second",
    "bits": "in bits",
    "FLOP": "in FLOP (arithmetic operations)",
    "FLOP/s": "in FLOP per second",
    "s": "in seconds",
    "tokens/s": "in tokens per second",
}
#: Units that a page does not spell out: the meaning says what is counted.
UNIT_SILENT = frozenset({
    "count", "values", "index", "dimensionless", "no unit", "parameters", "sequences", "tokens",
    "positions", "weights", "ratio", "probability (0 to 1)",
})


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
        """``"$L$ is the number of layers"`` / ``"$b$ is the size of one stored number (...), in bytes"``."""
        unit = UNIT_PROSE.get(self.unit, "")
        return f"${self.tex}$ is {self.meaning}" + (f", {unit}" if unit and unit not in self.meaning else "")


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
K = _s("K", "K", "the number of key/value heads (K = H for MHA, 1 for MQA, between for GQA)", "count")
D_HEAD = _s("d_head", r"d_{\text{head}}", "the length of one head's query, key and value vectors", "values")
T = _s("T", "T", "the number of tokens held in the cache per sequence (the context)", "tokens")
B = _s("B", "B", "the number of sequences in the batch", "sequences")
BYTES = _s("b", "b", "the size of one stored number (2 for BF16, 1 for FP8)", "bytes")
D_C = _s("d_c", "d_c", "the length of MLA's joint key/value latent vector (kv_lora_rank)", "values")
D_R = _s("d_rope", r"d_h^{R}", "the length of the per-token RoPE key that all heads share (qk_rope_head_dim)", "values")
W = _s("W", "W", "the sliding window's width, in tokens", "tokens")
L_FULL = _s("L_full", r"L_{\text{full}}", "the number of layers with full attention", "count")
L_SLIDE = _s("L_slide", r"L_{\text{slide}}", "the number of layers with sliding-window attention", "count")
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
    return [m for m in catalog.models().values() if m.mla is None]


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
            if m.sliding is None:
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
        if m.sliding is None:
            continue
        n_slide = sum(1 for i in range(m.num_layers) if m.sliding.is_sliding(i))
        for t in CHECK_CONTEXTS:
            v = f.evaluate(L_full=m.num_layers - n_slide, L_slide=n_slide, W=m.sliding.window, K=m.num_kv_heads,
                           d_head=m.head_dim, T=t, B=CHECK_BATCH, b=CHECK_BYTES)
            out.append((f"{m.id} T={t}", v, tr.kv_cache_elements(m, t) * CHECK_BATCH * CHECK_BYTES))
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
    "[DeepSeek-V2 paper](https://arxiv.org/abs/2405.04434), section 2.1.2, eq. 9-10, and table 1",
    note="One latent per token and layer, shared by every head: no factor 2 and no head count.",
    check=_check_kv_mla,
))

_register(Formula(
    "kv_cache_bytes_sliding", "KV-cache bytes when some layers attend only to a sliding window",
    _s("M_KV", r"M_{\text{KV}}", "the KV cache's size", "bytes"),
    sp.Mul(2, K.symbol, D_HEAD.symbol,
           sp.Add(sp.Mul(L_FULL.symbol, T.symbol, evaluate=False),
                  sp.Mul(L_SLIDE.symbol, sp.Min(T.symbol, W.symbol), evaluate=False), evaluate=False),
           B.symbol, BYTES.symbol, evaluate=False),
    (K, D_HEAD, L_FULL, L_SLIDE, T, W, B, BYTES),
    "[Mistral 7B paper](https://arxiv.org/abs/2310.06825), section 2 (rolling buffer cache of W tokens)",
    note="A sliding layer never holds more than W tokens; full-attention layers hold all T.",
    check=_check_kv_sliding,
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
