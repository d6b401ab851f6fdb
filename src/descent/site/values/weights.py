"""Value and table shortcodes for Part 2 ("Weights as numbers").

Imported by :mod:`descent.site.values`. The core supplies the formats
(:mod:`descent.floats`, :mod:`descent.quant`, :mod:`descent.gguf_types`, :mod:`descent.published`,
:mod:`descent.numerics`); the build side reads the real GGUF (:mod:`descent.trace.weights`) and
measures perplexity (:mod:`descent.trace.quality`, cached by the file's sha256).

* ``float_fact format= field=``, ``float_round format= value= field=``, table ``float_formats``;
* table ``quant_tensor``, value ``quant_tensor_fact field=`` (one real matrix, one scale);
* tables ``gguf_block_types``, ``gguf_mixes``, ``gguf_file``; values ``gguf_fact format= field=``,
  ``gguf_file_fact field=``, ``gguf_model_bytes model= format=``;
* table ``perplexity``, values ``perplexity_fact variant= field=``, ``quality_meta field=``;
* table ``gptq_llama``, value ``published key=``;
* tables ``q4_rule``, ``kv_quant``; value ``q4_rule_fact model= field=``.
"""

from __future__ import annotations

import math

from descent import catalog, floats, gguf_types, numerics, published, transformer
from descent import params as P
from descent.site.shortcodes import table, value
from descent.site.values.quantities import show
from descent.site.values.text import fmt_bytes, fmt_num, md_table, md_text
from descent.units import format_count, format_fixed, format_int, format_percent
from descent.weights import Q4_RULE_GB_PER_BILLION

FLOAT_FIELD = P.declare(P.Param(
    "field", "Float format property", "choice", key="float_field",
    choices=[(f, f) for f in ("bits", "exponent_bits", "mantissa_bits", "bias", "max", "min_normal",
                              "min_subnormal", "epsilon", "decades", "finite_codes", "overflow_above")],
    help="bits, exponent_bits, mantissa_bits, bias, max, min_normal, min_subnormal, epsilon, decades, finite_codes, "
    "overflow_above (past it, rounding overflows)",
))

ROUND_FIELD = P.declare(P.Param(
    "field", "Rounding result", "choice", "nearest", key="round_field",
    choices=[(f, f) for f in ("nearest", "error", "relative_error", "bits")],
    help="nearest (the stored value), error, relative_error (percent), bits",
))

def _num(x: float, sig: int = 5) -> str:
    return fmt_num(x, sig)

@value("float_fact", floats.FLOAT_FORMAT, FLOAT_FIELD)
def float_fact(format: str, field: str) -> str:
    """A property of a float format, computed from its bit layout (descent.floats)."""
    f = floats.get(format)
    t = f.table()
    if field in ("bits", "exponent_bits", "mantissa_bits", "bias"):
        return format_int(getattr(f, field))
    if field == "finite_codes":
        return format_int(t.finite_codes)
    if field == "decades":
        return fmt_num(t.decades, 3)
    x = getattr(t, field)
    if x is None:
        raise ValueError(f"{f.label} has no {field}")
    return _num(x)

@value("float_round", floats.FLOAT_FORMAT, floats.FLOAT_VALUE, ROUND_FIELD)
def float_round(format: str, value: str, field: str) -> str:
    """A number rounded to a format: the stored value, the error, the relative error or the bits."""
    f = floats.get(format)
    kind, x = floats.parse_value(f, value)
    if kind != "number":
        raise ValueError("float_round takes a number, not a code")
    r = f.round(float(x))
    if field == "bits":
        return "`" + f.bit_string(r.code, " ") + "`"
    if not math.isfinite(r.value):
        raise ValueError(f"{value} does not round to a finite {f.label} value")
    if field == "nearest":
        return floats.value_text(r.value)
    if field == "error":
        return fmt_num(r.error, 3)
    return format_percent(floats.relative_error(format, float(x)), 2)

@table("float_formats")
def float_formats() -> str:
    """Every float format of descent.floats, its layout and what follows from it."""
    rows = []
    for f in floats.FORMATS.values():
        t = f.table()
        rows.append([f.label, format_int(f.bits), format_int(f.exponent_bits), format_int(f.mantissa_bits),
                     format_int(f.bias), _num(t.max), _num(t.min_normal),
                     _num(t.min_subnormal) if t.min_subnormal is not None else "none",
                     _num(t.epsilon) if t.epsilon is not None else "—", fmt_num(t.decades, 3),
                     "yes" if t.infinity else "no", format_int(t.nan_count)])
    return md_table(["format", "bits", "exponent", "mantissa", "bias", "largest", "smallest normal",
                     "smallest subnormal", "epsilon", "decades", "infinity", "NaN codes"],
                    rows, "lrrrrrrrrrlr")

GGUF_FIELD = P.declare(P.Param(
    "field", "Block type fact", "choice", "bits_per_weight", key="gguf_field",
    choices=[(f, f) for f in ("bits_per_weight", "block_size", "block_bytes", "published_bpw")],
    help="bits_per_weight, block_size, block_bytes, published_bpw (file average, Llama-3.1-8B)",
))

@value("gguf_fact", gguf_types.QUANT_FORMAT, GGUF_FIELD)
def gguf_fact(format: str, field: str) -> str:
    """A GGUF type's block size, bytes, bits per weight from its layout, or published file average."""
    info = gguf_types.decode_name(format)
    b = info.block
    if field == "published_bpw":
        if info.published_bpw is None:
            raise ValueError(f"no published average for {format}")
        return fmt_num(info.published_bpw, 5)
    if field == "bits_per_weight":
        return fmt_num(b.bits_per_weight, 5)
    return format_int(getattr(b, field))

@value("gguf_model_bytes", P.MODEL, gguf_types.QUANT_FORMAT, P.BYTE_UNIT.but(default="GB"))
def gguf_model_bytes(model: str, format: str, unit: str) -> str:
    """Every parameter of a catalog model stored in one GGUF block type (no mix): N x bpw / 8."""
    return fmt_bytes(gguf_types.bytes_for(transformer.param_counts(catalog.model(model)).total, format), unit)

@table("gguf_block_types")
def gguf_block_types() -> str:
    """Every GGUF block type: family, weights per block, bytes, bits per weight (from the layout)."""
    rows = [[f"`{b.name}`", b.family, format_int(b.block_size), format_int(b.block_bytes),
             fmt_num(b.bits_per_weight, 5), f"`{b.formula}`"] for b in gguf_types.BLOCK_TYPES.values()]
    return md_table(["type", "family", "weights per block", "bytes per block", "bits per weight", "a weight is"],
                    rows, "llrrrl")

@table("gguf_mixes")
def gguf_mixes() -> str:
    """File types (mixes): base block type, its bits per weight, and the published file average."""
    rows = []
    for m in gguf_types.MIXES.values():
        b = gguf_types.BLOCK_TYPES[m.base]
        rows.append([f"`{m.name}`", f"`{m.base}`", fmt_num(b.bits_per_weight, 5),
                     fmt_num(m.published_bpw, 5) if m.published_bpw is not None else "not in the table", m.note])
    return md_table(["file type", "base block", "base bits per weight", "file average (Llama-3.1-8B)", "mix"],
                    rows, "llrrl")

PUBLISHED_KEY = P.declare(P.Param(
    "key", "Published result", "choice", key="published_key", choices=[(k, k) for k in published.PUBLISHED],
    help="a key of descent.published.PUBLISHED",
))

@value("published", PUBLISHED_KEY)
def published_value(key: str) -> str:
    """A published number, exactly as its source printed it (descent.published)."""
    p = published.get(key)
    if key.startswith("gptq_"):  # the README prints two decimals
        return format_fixed(p.value, 2)
    if p.unit == "%":
        return fmt_num(p.value, 3) + "%"
    text = format_int(int(p.value)) if p.value == int(p.value) and p.value >= 100 else str(p.value)
    return text + (f" {p.unit}" if p.unit else "")

@table("gptq_llama")
def gptq_llama() -> str:
    """The GPTQ repository's LLaMA table: WikiText-2 perplexity (lower is better), as published."""
    rows = [[m, *(format_fixed(x, 2) for x in vals)] for m, vals in published.GPTQ_LLAMA.items()]
    return md_table(["model", *published.GPTQ_COLUMNS], rows, "lrrrrrr")

@table("q4_rule")
def q4_rule() -> str:
    """The rule 'Q4 GB ~ 0.6 x billions of parameters' against every catalog model's Q4_K_M and Q4_0
    files (llama.cpp's per-tensor types, computed) and its checkpoint as released."""
    rows = []
    for m in catalog.models().values():
        rows.append([md_text(m.name), format_count(m.params_total_published), show("q4_rule_bytes", "GB", model=m.id),
                     show("weights_bytes", "GB", model=m.id, weights="q4_k_m"),
                     show("weights_bits_per_param", model=m.id, weights="q4_k_m"),
                     show("weights_bytes", "GB", model=m.id, weights="q4_0"),
                     show("weights_bytes", "GB", model=m.id, weights="released"),
                     show("q4_rule_gap", sig=2, model=m.id)])
    return md_table(["model", "published size", f"rule: {fmt_num(Q4_RULE_GB_PER_BILLION)} GB per billion",
                     "Q4_K_M", "Q4_K_M bits per weight", "Q4_0", "as released", "rule against Q4_K_M"],
                    rows, "lrrrrrrr")

RULE_FIELD = P.declare(P.Param(
    "field", "Rule-of-thumb fact", "choice", key="rule_field",
    choices=[(f, f) for f in ("rule", "q4_k_m", "q4_0", "released", "gap", "verdict", "q4_k_m_bits")],
    help="rule (0.6 GB per billion), q4_k_m, q4_0, released (bytes), gap (rule against Q4_K_M, percent), "
    "verdict (the gap in words: 'falls 22% short of the file'), q4_k_m_bits",
))

@value("q4_rule_fact", P.MODEL, RULE_FIELD, P.BYTE_UNIT.but(default="GB"))
def q4_rule_fact(model: str, field: str, unit: str) -> str:
    """One model's row of the q4_rule table: the quantities q4_rule_bytes, weights_bytes, weights_bits_per_param, q4_rule_gap."""
    if field == "gap":
        return show("q4_rule_gap", sig=2, model=model)
    if field == "verdict":
        return show("q4_rule_verdict", model=model)
    if field == "q4_k_m_bits":
        return show("weights_bits_per_param", model=model, weights="q4_k_m")
    if field == "rule":
        return show("q4_rule_bytes", unit, model=model)
    return show("weights_bytes", unit, model=model, weights=field)

PRECISION_FIELD = P.declare(P.Param(
    "field", "Precision fact", "choice", "bits_per_weight", key="precision_field",
    choices=[(f, f) for f in ("bits_per_weight", "element_bits", "block_size", "scale_bits")],
    help="bits_per_weight (scales included), element_bits, block_size, scale_bits",
))

@value("precision_fact", P.WEIGHTS, PRECISION_FIELD)
def precision_fact(weights: str, field: str) -> str:
    """A weight precision's layout from descent.numerics (MXFP4: 32-value blocks, 8-bit scale, 4.25 bits)."""
    p = numerics.precision(weights)
    x = getattr(p, field)
    return fmt_num(x, 4) if isinstance(x, float) else format_int(x)

GPTQ_MODEL = P.declare(P.Param(
    "model", "LLaMA model of the GPTQ table", "choice", "LLaMa-65B", key="gptq_model",
    choices=[(m, m) for m in published.GPTQ_LLAMA], help="a row of the GPTQ README's LLaMA table",
))

GPTQ_COLUMN = P.declare(P.Param(
    "column", "GPTQ table column", "choice", "4bit-RTN", key="gptq_column",
    choices=[(c, c) for c in published.GPTQ_COLUMNS], help="a column of the GPTQ README's LLaMA table",
))

@value("gptq_change", GPTQ_MODEL, GPTQ_COLUMN)
def gptq_change(model: str, column: str) -> str:
    """How much a published GPTQ-table perplexity exceeds the same model's FP16 one, percent."""
    return format_percent(published.gptq_change(model, column), 2)

GPTQ_BITS = P.declare(P.Param(
    "bits", "Bits per weight", "int", 16, key="gptq_bits", min=1, max=32, help="bits per weight",
))

@value("gptq_bytes", GPTQ_MODEL, GPTQ_BITS, P.BYTE_UNIT.but(default="GB"))
def gptq_bytes(model: str, bits: int, unit: str) -> str:
    """Weight bytes of a GPTQ-table LLaMA model at ``bits`` bits, from the billions in its name
    (scales not counted): billions x 1e9 x bits / 8."""
    return fmt_bytes(published.gptq_weights_bytes(model, bits), unit)

@value("float_values", floats.FLOAT_FORMAT.but(default="fp4_e2m1"))
def float_values(format: str) -> str:
    """Every non-negative value of a format of at most 8 bits, in order (FP4 E2M1: 0, 0.5, ... 6)."""
    f = floats.get(format)
    if f.bits > 4:
        raise ValueError(f"{f.label} has too many values to list; float_values takes a 4-bit format")
    vals = sorted({f.decode(c) for c in range(f.codes) if f.kind(c) != "nan" and f.decode(c) >= 0})
    return ", ".join(fmt_num(v, 4) for v in vals)

@value("rule_bits")
def rule_bits() -> str:
    """Bits per weight that the rule of thumb's 0.6 GB per billion parameters means: 0.6 x 8."""
    return show("q4_rule_bits")

@value("context_tokens", P.CONTEXT)
def context_tokens(context: int) -> str:
    """A context length as a page prints it: ``32,768 tokens``."""
    return f"{format_int(context)} tokens"
