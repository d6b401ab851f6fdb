"""Catalog look-ups: a model's or an accelerator's field with its unit, how many rows, and the
reference pages' tables (every field, its value and its source).
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from typing import Any

from descent import catalog, transformer
from descent import params as P
from descent.site.shortcodes import link_to, table, value
from descent.site.values.text import fmt_bytes, fmt_num, md_link_source, md_table, md_text
from descent.units import BYTE_UNITS, format_count, format_int, format_ordinal, format_si


def flat_fields(obj: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """A catalog dataclass as ``[(dotted_field_name, value), ...]``; nested MoE/MLA/window flattened."""
    out: list[tuple[str, Any]] = []
    for f in dataclasses.fields(obj):
        if f.name == "sources":
            continue
        v = getattr(obj, f.name)
        if dataclasses.is_dataclass(v):
            out += flat_fields(v, f"{prefix}{f.name}.")
        else:
            out.append((f"{prefix}{f.name}", v))
    return out

def _model_field_names() -> list[str]:
    names: list[str] = []
    for m in catalog.models().values():
        for n, _ in flat_fields(m):
            if n not in names:
                names.append(n)
    return names

def _accelerator_field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(catalog.Accelerator) if f.name != "sources"]

_ACC_BYTES = {"memory_bytes", "l2_bytes", "last_level_cache_bytes", "on_chip_memory_bytes",
              "register_file_per_unit_bytes", "shared_memory_per_unit_bytes"}

_ACC_RATES = {"memory_bandwidth": "B/s", "scale_up_bandwidth": "B/s", "bf16_flops": "FLOP/s",
              "fp8_flops": "FLOP/s", "fp4_flops": "FLOP/s", "clock_hz": "Hz"}

#: Accelerator fields whose None means "not published or not applicable" (the source says which).
_ACC_INTERNALS = {"l2_bytes", "last_level_cache_bytes", "on_chip_memory_bytes", "tensor_cores_per_unit",
                  "register_file_per_unit_bytes", "shared_memory_per_unit_bytes",
                  "shared_memory_bytes_per_clock", "clock_hz"}

def format_field(name: str, v: Any) -> str:
    """A catalog field's value as text, with its unit (bytes fields in GB and GiB, on-chip ones in
    MB and MiB)."""
    leaf = name.split(".")[-1]
    if v is None:
        return "not recorded" if leaf in _ACC_INTERNALS else "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if leaf in _ACC_BYTES:
        if v < 1e9:  # on-chip sizes read best in MB and MiB (or KB and KiB)
            return f"{format_int(v)} bytes ({fmt_bytes(v, 'auto', 4)}, {fmt_bytes(v, 'auto-binary', 4)})"
        return f"{format_int(v)} bytes ({fmt_bytes(v, 'GB', 4)}, {fmt_bytes(v, 'GiB', 4)})"
    if leaf in _ACC_RATES:
        return format_si(v, _ACC_RATES[leaf], 4, trim=True)
    if leaf == "power_watts":
        return f"{fmt_num(v, 4)} W"
    if leaf.startswith("params_") and isinstance(v, (int, float)):
        return format_count(v, "auto", 4)
    if leaf == "year":
        return str(v)
    if isinstance(v, int):
        return format_int(v)
    if isinstance(v, float):
        return fmt_num(v, 4)
    if v == "":
        return "—"
    return md_text(v)

def _get(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if obj is None:
            return None
        obj = getattr(obj, part)
    return obj

MODEL_FIELD = P.declare(P.Param(
    "field", "Model field", "choice", key="model_field",
    choices=lambda: [(n, n) for n in _model_field_names()],
    help="a Model field, dotted for nested ones (moe.num_experts)",
))

ACCELERATOR_FIELD = P.declare(P.Param(
    "field", "Accelerator field", "choice", key="accelerator_field",
    choices=lambda: [(n, n) for n in _accelerator_field_names()], help="an Accelerator field",
))

CATALOG_PART = P.declare(P.Param(
    "what", "Catalog part", "choice", choices=[("models", "models"), ("accelerators", "accelerators")],
    help="models or accelerators",
))

@value("model_field", P.MODEL, MODEL_FIELD)
def model_field(model: str, field: str) -> str:
    """A model's catalog field, as published in its config.json."""
    return format_field(field, _get(catalog.model(model), field))

@value("accelerator_field", P.ACCELERATOR, ACCELERATOR_FIELD)
def accelerator_field(accelerator: str, field: str) -> str:
    """An accelerator's catalog field (bytes in GB and GiB, rates with SI prefixes)."""
    return format_field(field, getattr(catalog.accelerator(accelerator), field))

@value("count", CATALOG_PART)
def count(what: str) -> str:
    """How many rows the catalog has."""
    return format_int(len(catalog.models() if what == "models" else catalog.accelerators()))

def attention_kind(m: catalog.Model) -> str:
    """MHA / GQA / MQA / MLA, plus the sliding window, the chunks or the linear-attention layers if
    any (K and H are shown beside it)."""
    if m.mla is not None:
        return "MLA"
    if m.num_kv_heads == m.num_heads:
        kind = "MHA"
    elif m.num_kv_heads == 1:
        kind = "MQA"
    else:
        kind = "GQA"
    if m.sliding is not None:
        every = m.sliding.full_attention_every
        kind += f", window {format_int(m.sliding.window)}" + (f", every {format_ordinal(every)} layer full" if every else "")
    if m.chunked is not None:
        every = m.chunked.full_attention_every
        kind += f", chunks of {format_int(m.chunked.chunk)}" + (f", every {format_ordinal(every)} layer full" if every else "")
    if m.linear_attention is not None:
        every = m.linear_attention.full_attention_every
        kind = f"hybrid: {kind} in every {format_ordinal(every)} layer, linear attention (fixed state) in the others"
    return kind

#: The reference pages that hold each row's details (docs-relative).
MODELS_PAGE = "reference/models.md"

ACCELERATORS_PAGE = "reference/accelerators.md"

@table("models")
def models_table() -> str:
    """Every catalog model, one row each: shape, attention, experts, published size."""
    rows = []
    for m in catalog.models().values():
        moe = f"{m.moe.experts_per_token} of {m.moe.num_experts}" if m.moe else "dense"
        rows.append([f"[{md_text(m.name)}]({link_to(MODELS_PAGE, m.id)})", m.num_layers, format_int(m.hidden_size), m.num_heads,
                     m.num_kv_heads, m.head_dim, attention_kind(m), moe, format_int(m.max_context),
                     format_count(m.params_total_published, "auto", 4)])
    return md_table(["model", "L", "D", "H", "K", "d_head", "attention", "experts", "context", "published size"],
                    rows, "lrrrrrllrr")

def _source_cell(item: Any, name: str, v: Any) -> str:
    # An optional internals field left out has no value to source (unless the row says why it is left out).
    if v is None and name in _ACC_INTERNALS and name not in item.sources:
        return "—"
    return md_link_source(item.source_of(name))

def _details(item: Any, fields: list[tuple[str, Any]], shown: dict[str, str] | None = None) -> str:
    """A field/value/source table; ``shown`` replaces the printed value of the fields it names."""
    shown = shown or {}
    rows = [[f"`{n}`", shown.get(n) or format_field(n, v), _source_cell(item, n, v)] for n, v in fields]
    return md_table(["field", "value", "source"], rows)

MODEL_OR_ALL = P.declare(P.Param(
    "model", "Model or all", "choice", "all", key="model_or_all",
    choices=lambda: [("all", "all"), *P.MODEL.options()], help="one model id, or all",
))

ACCELERATOR_OR_ALL = P.declare(P.Param(
    "accelerator", "Accelerator or all", "choice", "all", key="accelerator_or_all",
    choices=lambda: [("all", "all"), *P.ACCELERATOR.options()], help="one accelerator id, or all",
))

@table("model_details", MODEL_OR_ALL)
def model_details(model: str) -> str:
    """A section per model (heading with the id as anchor): every field, its value and its source,
    then the exact parameter counts beside the publisher's rounded ones."""
    items = catalog.models().values() if model == "all" else [catalog.model(model)]
    out = []
    for m in items:
        out.append(f"\n\n### {md_text(m.name)} {{#{m.id}}}\n\nCatalog id `{m.id}`, from "
                   f"[{md_text(m.hf_repo)}](https://huggingface.co/{urllib.parse.quote(m.hf_repo, safe='/')}).")
        out.append(_details(m, [(n, v) for n, v in flat_fields(m) if n not in ("id", "name")]))
        out.append(_exact_counts(m))
    return "".join(out)

def _exact_counts(m: catalog.Model) -> str:
    """Exact total and active parameter counts (descent.transformer.param_counts, checked against
    transformers by the peer test) beside the publisher's rounded figures."""
    pc = transformer.param_counts(m)
    rows = [["total", format_count(pc.total, "exact"), format_count(m.params_total_published, "auto", 4)]]
    if m.moe is not None:
        published = format_count(m.params_active_published, "auto", 4) if m.params_active_published else "—"
        rows.append(["active per token (this site's convention: the embedding table counted)",
                     format_count(pc.active, "exact"), "—"])
        if m.params_active_published:
            how, theirs = transformer.published_active_convention(m)
            rows.append([f"active per token, as the publisher counts: {how}", format_count(theirs, "exact"), published])
    return "\n\nParameters, exact (computed from the shapes above) and as published:" + md_table(
        ["parameters", "exact", "published"], rows, "lrr")

def memory_cell(a: catalog.Accelerator) -> str:
    """Memory as the vendor means it and in true bytes: "80 GiB HBM3 (85.9 GB)" when the vendor's
    "GB" is GiB (``memory_marketed_unit_is_gib``), else "44 GB SRAM"."""
    if a.memory_marketed_unit_is_gib:
        return f"{fmt_bytes(a.memory_bytes, 'GiB', 4)} {md_text(a.memory_type)} ({fmt_bytes(a.memory_bytes, 'GB', 4)})"
    unit = "GB" if a.memory_bytes >= BYTE_UNITS["GB"] else "MB"
    return f"{fmt_bytes(a.memory_bytes, unit, 4)} {md_text(a.memory_type)}"

def peak_16bit_cell(a: catalog.Accelerator) -> str:
    """``bf16_flops`` for a "16-bit dense" column (BF16 unless marked): the FLOP/s, then in brackets
    what a dense BF16 vendor peak would not need (FP16; not stated to be dense; estimate; derived)."""
    text = format_si(a.bf16_flops, "FLOP/s", 4, trim=True)
    return f"{text} ({md_text(a.peak_16bit_caveat)})" if a.peak_16bit_caveat else text

@table("accelerators")
def accelerators_table() -> str:
    """Every catalog accelerator: memory, bandwidth, dense 16-bit (BF16, or FP16 where marked) and
    FP8 peaks with FP32 accumulation, power."""
    rows = []
    for a in catalog.accelerators().values():
        fp8 = format_si(a.fp8_flops, "FLOP/s", 4, trim=True) if a.fp8_flops else "none"
        if a.fp8_flops and a.provenance("fp8_flops"):
            fp8 += f" ({md_text(a.provenance('fp8_flops'))})"
        rows.append([f"[{md_text(a.name)}]({link_to(ACCELERATORS_PAGE, a.id)})", md_text(a.kind), memory_cell(a),
                     format_si(a.memory_bandwidth, "B/s", 4, trim=True), peak_16bit_cell(a), fp8,
                     f"{fmt_num(a.power_watts, 4)} W", str(a.year)])
    return md_table(["accelerator", "kind", "memory", "bandwidth", "16-bit dense", "FP8 dense",
                     "power", "year"], rows, "llrrrrrr")

@table("accelerator_details", ACCELERATOR_OR_ALL)
def accelerator_details(accelerator: str) -> str:
    """A section per accelerator: every field, its value and its source, then its notes."""
    items = catalog.accelerators().values() if accelerator == "all" else [catalog.accelerator(accelerator)]
    out = []
    for a in items:
        out.append(f"\n\n### {md_text(a.name)} {{#{a.id}}}\n\nCatalog id `{a.id}`.")
        out.append(_details(a, [(n, getattr(a, n)) for n in _accelerator_field_names() if n not in ("id", "name")],
                            {"bf16_flops": _bf16_value(a)}))
    return "".join(out)

def _bf16_value(a: catalog.Accelerator) -> str:
    """The ``bf16_flops`` field as its name promises: on a chip with no BF16 rate
    (``peak_16bit_format`` FP16: Turing's T4 has no BF16; Groq and Cerebras quote only FP16) "no
    BF16 rate", then the FP16 peak the field holds in its place."""
    if a.peak_16bit_format == "BF16":
        return ""
    return f"no BF16 rate ({a.peak_16bit_format} {format_si(a.bf16_flops, 'FLOP/s', 4, trim=True)})"
