"""The shipped SmolLM2 GGUF, read and measured at build (:mod:`descent.trace.weights`,
:mod:`descent.trace.quality`, cached by the file's sha256): one real matrix rounded with one scale,
the file's tensors by block type, and perplexity of the shipped file and its re-quantizations.
"""

from __future__ import annotations

import functools

from descent import params as P
from descent.site.shortcodes import table, value
from descent.site.values.text import fmt_bytes, fmt_num, md_table
from descent.units import format_int, format_percent


@functools.cache
def _tensor_table() -> list[dict]:
    from descent.trace import quality

    return quality.tensor_table()

@table("quant_tensor")
def quant_tensor() -> str:
    """One real SmolLM2 matrix rounded with a single scale, 8 to 2 bits (descent.trace.quality)."""
    rows = []
    for r in _tensor_table():
        rows.append([format_int(r["bits"]), "symmetric" if r["symmetric"] else "zero point", format_int(r["levels"]),
                     fmt_num(r["step"], 3), fmt_num(r["rmse"], 3), fmt_num(r["sqnr_db"], 3),
                     fmt_bytes(r["bytes"], "KB")])
    return md_table(["bits", "scheme", "levels", "step", "RMSE", "SQNR (dB)", "size"], rows, "rlrrrrr")

TENSOR_FIELD = P.declare(P.Param(
    "field", "Tensor fact", "choice", key="tensor_field",
    choices=[(f, f) for f in ("name", "weights", "max_over_std", "std", "max", "sqnr_int8", "sqnr_int4")],
    help="name, weights, max_over_std, std, max, sqnr_int8, sqnr_int4 (symmetric, one scale)",
))

@value("quant_tensor_fact", TENSOR_FIELD)
def quant_tensor_fact(field: str) -> str:
    """A fact about the matrix the quant_tensor table rounds."""
    from descent.trace import quality

    if field == "name":
        return "`" + quality.TABLE_TENSOR + "`"
    if field.startswith("sqnr_int"):
        bits = int(field[-1])
        row = next(r for r in _tensor_table() if r["bits"] == bits and r["symmetric"])
        return fmt_num(row["sqnr_db"], 2) + " dB"
    w = quality.tensor_stats()
    if field == "weights":
        return format_int(w["weights"])
    return fmt_num(w[field], 3)

@functools.cache
def _file_summary() -> dict:
    from descent.trace import weights

    return weights.file_facts()

@table("gguf_file")
def gguf_file() -> str:
    """The shipped SmolLM2 GGUF's tensors by block type, read from the file at build."""
    s = _file_summary()
    total = s["total"]
    rows = []
    for t, r in sorted(s["file_types"].items(), key=lambda kv: -kv[1]["weights"]):
        rows.append([f"`{t}`", format_int(r["tensors"]), format_int(r["weights"]),
                     format_percent(r["share"], 2), fmt_bytes(r["bytes"], "MB"),
                     fmt_num(r["bits_per_weight"], 4)])
    rows.append(["all", format_int(total["tensors"]), format_int(total["weights"]), "100%",
                 fmt_bytes(total["bytes"], "MB"), fmt_num(total["bits_per_weight"], 4)])
    return md_table(["type", "tensors", "weights", "share of weights", "bytes", "bits per weight"], rows, "lrrrrr")

FILE_FIELD = P.declare(P.Param(
    "field", "File fact", "choice", key="file_field",
    choices=[(f, f) for f in ("avg_bpw", "tensors", "weights", "bytes", "q4_1_tensors", "q4_1_share",
                              "q8_0_share", "layers")],
    help="avg_bpw, tensors, weights, bytes, q4_1_tensors, q4_1_share, q8_0_share, layers",
))

@value("gguf_file_fact", FILE_FIELD)
def gguf_file_fact(field: str) -> str:
    """A fact about the shipped SmolLM2 GGUF, read from it at build."""
    s = _file_summary()
    total, ft = s["total"], s["file_types"]
    if field == "avg_bpw":
        return fmt_num(total["bits_per_weight"], 3)
    if field in ("tensors", "weights"):
        return format_int(total[field])
    if field == "bytes":
        return fmt_bytes(total["bytes"], "MB")
    if field == "q4_1_tensors":
        return format_int(ft["Q4_1"]["tensors"])
    if field == "layers":
        return format_int(s["layers"])
    key = "Q4_1" if field == "q4_1_share" else "Q8_0"
    return format_percent(ft[key]["share"], 2)

@functools.cache
def _quality() -> dict:
    from descent.trace import quality

    return quality.measure_against_shipped()

def _variant(vid: str) -> dict:
    for r in _quality()["variants"]:
        if r["id"] == vid:
            return r
    raise ValueError(f"no measured variant {vid!r}")

def _variant_ids() -> list[tuple[str, str]]:
    from descent.trace import quality

    return [(v.id, v.id) for v in quality.VARIANTS]

PPL_VARIANT = P.declare(P.Param(
    "variant", "Re-quantization", "choice", "shipped", key="ppl_variant", choices=_variant_ids,
    help="shipped or a re-quantization of it (descent.trace.quality.VARIANTS)",
))

PPL_FIELD = P.declare(P.Param(
    "field", "Perplexity fact", "choice", "perplexity", key="ppl_field",
    choices=[(f, f) for f in ("perplexity", "change", "bits_per_weight")],
    help="perplexity, change (percent against the shipped file), bits_per_weight",
))

@value("perplexity_fact", PPL_VARIANT, PPL_FIELD)
def perplexity_fact(variant: str, field: str) -> str:
    """SmolLM2's perplexity on the evaluation text for one variant, measured at build."""
    r = _variant(variant)
    if field == "perplexity":
        return fmt_num(r["perplexity"], 3)
    if field == "bits_per_weight":
        return fmt_num(r["bits_per_weight"], 3)
    return format_percent(r["change"], 2)

@table("perplexity")
def perplexity_table() -> str:
    """Perplexity of the shipped file and of each re-quantization, with the change against the shipped file."""
    rows = []
    for r in _quality()["variants"]:
        change = "(the reference)" if r["id"] == "shipped" else "+" + format_percent(r["change"], 3)
        rows.append([r["label"], fmt_num(r["bits_per_weight"], 3), fmt_num(r["perplexity"], 4), change])
    return md_table(["the 210 layer matrices stored as", "bits per weight (matrices)", "perplexity",
                     "against the shipped 4-bit file"], rows, "lrrr")

META_FIELD = P.declare(P.Param(
    "field", "Measurement fact", "choice", key="quality_field",
    choices=[(f, f) for f in ("tokens", "text", "machine", "python")],
    help="tokens, text, machine, python",
))

@value("quality_meta", META_FIELD)
def quality_meta(field: str) -> str:
    """On what the perplexities were computed (untimed and undated: a build measures nothing)."""
    q = _quality()
    if field == "tokens":
        return format_int(q["tokens"])
    return str(q[field])
