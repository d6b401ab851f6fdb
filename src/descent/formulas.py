"""The sympy twin of every formula the site shows; the page's LaTeX is printed from it.

Build side only (imports sympy). Each :class:`Formula` holds a sympy expression, the meaning and
unit of every symbol, its source, and a ``check`` that evaluates the expression on catalog rows
and returns ``(label, formula_value, package_value)`` triples: the test suite asserts they agree,
so the formula a reader sees and the number the site computes cannot drift apart.

A check needs the core function it mirrors; while that module has not landed, ``check`` raises
:class:`MissingCore` (the tests skip on it).

Symbols (DESIGN.md): L layers, K key/value heads, d_head, T tokens of context, B batch
(sequences), b bytes per stored element, N parameters.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field

import sympy as sp

from descent import catalog

__all__ = ["FORMULAS", "Formula", "MissingCore", "Sym", "formula"]


class MissingCore(RuntimeError):
    """The package function a formula is checked against has not landed yet."""


def _core(name: str):
    if importlib.util.find_spec(name) is None:
        raise MissingCore(f"{name} is not in the package yet")
    return importlib.import_module(name)


@dataclass(frozen=True)
class Sym:
    """One symbol of a formula: the sympy Symbol, its LaTeX, what it means and its unit."""

    symbol: sp.Symbol
    tex: str
    meaning: str
    unit: str


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
    """

    name: str
    title: str
    lhs: Sym
    expr: sp.Expr
    symbols: tuple[Sym, ...]
    source: str
    note: str = ""
    check: Callable[[], list[tuple[str, float, float]]] | None = field(default=None, compare=False)

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
    free = {s.name for s in f.expr.free_symbols}
    declared = {s.symbol.name for s in f.symbols}
    if free != declared:
        raise ValueError(f"formula {f.name!r}: symbols {sorted(free)} but declared {sorted(declared)}")
    FORMULAS[f.name] = f
    return f


def _s(name: str, tex: str, meaning: str, unit: str) -> Sym:
    return Sym(sp.Symbol(name, positive=True), tex, meaning, unit)


L = _s("L", "L", "layers", "count")
K = _s("K", "K", "key/value heads (K = H for MHA, 1 for MQA, between for GQA)", "count")
D_HEAD = _s("d_head", r"d_{\text{head}}", "dimension of one head", "values")
T = _s("T", "T", "tokens held in the cache per sequence (the context)", "tokens")
B = _s("B", "B", "sequences in the batch", "sequences")
BYTES = _s("b", "b", "bytes per stored element (2 for BF16, 1 for FP8)", "bytes")
D_C = _s("d_c", "d_c", "rank of MLA's joint key/value latent (kv_lora_rank)", "values")
D_R = _s("d_rope", r"d_h^{R}", "per-token decoupled RoPE key, shared by all heads (qk_rope_head_dim)", "values")
W = _s("W", "W", "sliding-window width", "tokens")
L_FULL = _s("L_full", r"L_{\text{full}}", "layers with full attention", "count")
L_SLIDE = _s("L_slide", r"L_{\text{slide}}", "layers with sliding-window attention", "count")
N = _s("N", "N", "parameters stored", "parameters")
BITS = _s("bits", r"\beta", "bits per weight, block scales included", "bits")
BW = _s("BW", r"\mathrm{BW}", "memory bandwidth", "bytes/s")
S_STEP = _s("S_step", r"S_{\text{step}}", "bytes read from memory per decode step (weights + KV cache)", "bytes")

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
    tr = _core("descent.transformer")
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
    tr = _core("descent.transformer")
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
    tr = _core("descent.transformer")
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
    for attr in ("bits_per_weight", "bits", "bpw"):
        if hasattr(p, attr):
            return float(getattr(p, attr))
    raise MissingCore(f"descent.numerics precision {p!r} has no bits-per-weight attribute")


def _check_weights():
    nm = _core("descent.numerics")
    f = FORMULAS["weight_bytes"]
    out = []
    for name in nm.PRECISIONS:
        p = nm.precision(name)
        out.append((name, f.evaluate(N=CHECK_PARAMS, bits=_bits(p)), nm.weight_bytes(CHECK_PARAMS, name)))
    return out


def _check_decode():
    hw = _core("descent.hardware")
    f = FORMULAS["decode_tokens_per_s"]
    out = []
    for a in catalog.accelerators().values():
        for m in catalog.models().values():
            for batch in (1, CHECK_BATCH):
                step = hw.bytes_per_decode_step(m, "bf16", "bf16", CHECK_CONTEXTS[2], batch)
                ceiling = hw.decode_ceiling(m, a, "bf16", "bf16", CHECK_CONTEXTS[2], batch)
                out.append((f"{m.id} on {a.id}, B={batch}", f.evaluate(BW=a.memory_bandwidth, S_step=step),
                            ceiling.tokens_per_s_per_sequence))
    return out


_register(Formula(
    "kv_cache_bytes", "KV-cache bytes for a batch (MHA, GQA, MQA; every layer holds every token)",
    _s("M_KV", r"M_{\text{KV}}", "KV-cache size", "bytes"),
    sp.Mul(2, L.symbol, K.symbol, D_HEAD.symbol, T.symbol, B.symbol, BYTES.symbol, evaluate=False),
    (L, K, D_HEAD, T, B, BYTES),
    "Vaswani et al. 2017, section 3.2 (one key and one value vector per head and token); "
    "Ainslie et al. 2023 (GQA: K key/value heads shared by the query heads)",
    note="The 2 counts keys and values. Uses K, not the number of query heads H.",
    check=_check_kv,
))

_register(Formula(
    "kv_cache_bytes_mla", "KV-cache bytes with Multi-head Latent Attention (DeepSeek-V2/V3)",
    _s("M_KV", r"M_{\text{KV}}", "KV-cache size", "bytes"),
    sp.Mul(L.symbol, sp.Add(D_C.symbol, D_R.symbol, evaluate=False), T.symbol, B.symbol, BYTES.symbol,
           evaluate=False),
    (L, D_C, D_R, T, B, BYTES),
    "DeepSeek-V2 paper (arXiv:2405.04434), section 2.1.2, eq. 9-10, and table 1",
    note="One latent per token and layer, shared by every head: no factor 2 and no head count.",
    check=_check_kv_mla,
))

_register(Formula(
    "kv_cache_bytes_sliding", "KV-cache bytes when some layers attend only to a sliding window",
    _s("M_KV", r"M_{\text{KV}}", "KV-cache size", "bytes"),
    sp.Mul(2, K.symbol, D_HEAD.symbol,
           sp.Add(sp.Mul(L_FULL.symbol, T.symbol, evaluate=False),
                  sp.Mul(L_SLIDE.symbol, sp.Min(T.symbol, W.symbol), evaluate=False), evaluate=False),
           B.symbol, BYTES.symbol, evaluate=False),
    (K, D_HEAD, L_FULL, L_SLIDE, T, W, B, BYTES),
    "Mistral 7B paper (arXiv:2310.06825), section 2 (rolling buffer cache of W tokens)",
    note="A sliding layer never holds more than W tokens; full-attention layers hold all T.",
    check=_check_kv_sliding,
))

_register(Formula(
    "weight_bytes", "Bytes to store the weights at a given precision",
    _s("M_W", r"M_{\text{W}}", "weight memory", "bytes"),
    sp.Mul(N.symbol, BITS.symbol, sp.Pow(8, -1, evaluate=False), evaluate=False),
    (N, BITS),
    "Definition: 8 bits per byte; block-scaled formats add their scale bits to the bits per weight "
    "(OCP Microscaling Formats (MX) spec v1.0, section 5)",
    note="MoE models store every expert, so N is the total, not the active, count.",
    check=_check_weights,
))

_register(Formula(
    "decode_tokens_per_s", "Memory-bound ceiling on decode speed, tokens per second per sequence",
    _s("R", r"R_{\text{decode}}", "decode speed ceiling per sequence", "tokens/s"),
    sp.Mul(BW.symbol, sp.Pow(S_STEP.symbol, -1, evaluate=False), evaluate=False),
    (BW, S_STEP),
    "Pope et al. 2022, Efficiently Scaling Transformer Inference, section 2 (decode is memory-bound "
    "at small batch); Williams et al. 2009 (roofline)",
    note="Each decode step reads the active weights and the whole KV cache once, and yields one "
         "token per sequence. Real engines reach a fraction of this ceiling.",
    check=_check_decode,
))
