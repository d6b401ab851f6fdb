"""Value and table shortcodes: the registry entries pages use to print computed numbers.

Every quantity of :mod:`descent.quantities` is a value shortcode of the same name, its arguments
the quantity's parameters plus how to print it (``unit=``, ``sig=``), registered by
:func:`register_quantities`; so ``<!-- descent:value weights_bytes model=llama-3.1-70b weights=fp8
unit=GB -->`` is :func:`descent.quantities.weights_bytes` printed by :mod:`descent.units`. The
entries below are the page-only ones: catalog fields, tables, and the shortcode reference.

Page modules (``values_part*.py``) import from here and from the core, never from a widget module.

Units: GB = 1e9 bytes, GiB = 2**30 bytes (and the other SI / IEC prefixes), always labelled.
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse
from typing import Any

from descent import catalog, memory, numerics, transformer
from descent import params as P
from descent import quantities as Q
from descent.memory import Sizing, size
from descent.site.shortcodes import link_to, registry, table, value
from descent.units import BYTE_UNITS, format_bytes, format_count, format_int, format_number, format_si

# ---------------------------------------------------------------------------------------------
# Running-text formatting (thin names over descent.units, the one formatter)
# ---------------------------------------------------------------------------------------------


def fmt_bytes(n: float, unit: str = "auto", sig: int = 3) -> str:
    """Bytes with a labelled unit in running text: :func:`descent.units.format_bytes` with
    trailing zeros dropped and a plain byte count spelled out ("512 bytes")."""
    return format_bytes(n, unit, sig, trim=True, words=True)


def fmt_num(x: float, sig: int = 3) -> str:
    """``x`` to ``sig`` significant figures, trailing zeros dropped (:func:`descent.units.format_number`)."""
    return format_number(x, sig, trim=True)


#: Characters with a meaning in the site's Markdown (Python-Markdown: escapes, code, emphasis,
#: links; tables: |; attr_list: {...}; arithmatex: $...$) or in HTML (<, &), written as numeric
#: character references by :func:`md_text`. (No extension that reads ~ ^ = + : is enabled.)
_MD_SPECIAL = re.compile(r"[\\`*_{}\[\]<>|$&]")


def md_text(text: Any) -> str:
    """``text`` as literal Markdown: every character that Markdown, a table, an attribute list,
    arithmatex or HTML would read as markup is a character reference (``<`` is ``&#60;``), so the
    reader sees exactly the text. For text from the catalog (names, notes, sources), which is data,
    never markup. Line breaks become spaces."""
    return _MD_SPECIAL.sub(lambda m: f"&#{ord(m.group(0))};", " ".join(str(text).split("\n")))


#: Backtick code spans inside a table cell (left as they are: a character reference there is literal).
_CELL_CODE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")


def _md_cell(x: Any, html: bool = False) -> str:
    text = str(x).replace("|", "\\|").replace("\n", " ")
    if html:
        return text
    # No raw HTML in a cell, whatever the cell's text came from: < and > outside code spans are
    # written as references (the reader sees them; the browser never parses a tag).
    out, last = [], 0
    for m in _CELL_CODE.finditer(text):
        out.append(text[last:m.start()].replace("<", "&lt;").replace(">", "&gt;"))
        out.append(m.group(0))
        last = m.end()
    out.append(text[last:].replace("<", "&lt;").replace(">", "&gt;"))
    return "".join(out)


def md_table(header: list[str], rows: list[list[Any]], align: str | None = None, *, html: bool = False) -> str:
    """A Markdown table, surrounded by blank lines. ``align``: one char per column, ``l`` or ``r``.

    Cells are Markdown (links, code spans), but never raw HTML: ``<`` and ``>`` outside code spans
    are escaped, unless ``html`` (for a table whose every cell is written by descent's own code).
    Text from the catalog should still go through :func:`md_text`, which also neutralises Markdown.
    """
    align = align or "l" * len(header)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(_md_cell(h, html) for h in header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(_md_cell(c, html) for c in row) + " |" for row in rows]
    return "\n\n" + "\n".join(lines) + "\n\n"


_URL = re.compile(r"https?://[^\s;,()\[\]<>\"'`\\|]+[^\s;,()\[\]<>\"'`\\|.]")


def md_link_source(src: str) -> str:
    """A source string as Markdown: every URL in it becomes a link, the rest stays text (escaped
    with :func:`md_text`: a source is data from the catalog)."""
    out, last = [], 0
    for m in _URL.finditer(src):
        out.append(md_text(src[last:m.start()]))
        out.append(f"[{md_text(m.group(0).split('://', 1)[1])}]({m.group(0)})")
        last = m.end()
    out.append(md_text(src[last:]))
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Catalog helpers
# ---------------------------------------------------------------------------------------------


def flat_fields(obj: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """A catalog dataclass as ``[(dotted_field_name, value), ...]``; nested MoE/MLA/window flattened."""
    out: list[tuple[str, Any]] = []
    for f in dataclasses.fields(obj):
        if f.name == "sources":
            continue
        v = getattr(obj, f.name)
        if dataclasses.is_dataclass(v):
            out += flat_fields(v, prefix + f.name + ".")
        else:
            out.append((prefix + f.name, v))
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


# ---------------------------------------------------------------------------------------------
# Values: every quantity, then the catalog's fields
# ---------------------------------------------------------------------------------------------


def register_quantities() -> None:
    """Register every :data:`descent.quantities.QUANTITIES` entry as a value shortcode: its
    parameters, then ``unit=``/``sig=`` as its kind allows; printed by :meth:`Quantity.format`."""
    for q in Q.QUANTITIES.values():
        fmt = Q.FORMAT_PARAMS[q.kind]

        def func(_q: Q.Quantity = q, _fmt: tuple = tuple(p.name for p in fmt), **kw: Any) -> str:
            opts = {k: kw.pop(k) for k in _fmt}
            return _q.format(_q(**kw), **opts)

        value(q.name, *q.params, *fmt, doc=q.doc)(func)


register_quantities()

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


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


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
        kind += f", window {format_int(m.sliding.window)}" + (f", every {_ordinal(every)} layer full" if every else "")
    if m.chunked is not None:
        every = m.chunked.full_attention_every
        kind += f", chunks of {format_int(m.chunked.chunk)}" + (f", every {_ordinal(every)} layer full" if every else "")
    if m.linear_attention is not None:
        every = m.linear_attention.full_attention_every
        kind = f"hybrid: {kind} in every {_ordinal(every)} layer, linear attention (fixed state) in the others"
    return kind


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


#: The reference pages that hold each row's details (docs-relative).
MODELS_PAGE = "reference/models.md"
ACCELERATORS_PAGE = "reference/accelerators.md"


def _source_cell(item: Any, name: str, v: Any) -> str:
    # An optional internals field left out has no value to source (unless the row says why it is left out).
    if v is None and name in _ACC_INTERNALS and name not in item.sources:
        return "—"
    return md_link_source(item.source_of(name))


def _details(item: Any, fields: list[tuple[str, Any]]) -> str:
    rows = [[f"`{n}`", format_field(n, v), _source_cell(item, n, v)] for n, v in fields]
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
        out.append(_details(a, [(n, getattr(a, n)) for n in _accelerator_field_names() if n not in ("id", "name")]))
    return "".join(out)


@table("kv_bytes_per_token", P.KV.but(default="bf16"), P.BYTE_UNIT.but(default="KiB"))
def kv_bytes_per_token_table(kv: str, unit: str) -> str:
    """KV-cache bytes per token for every catalog model."""
    rows = []
    for m in catalog.models().values():
        n = transformer.kv_elements_per_token(m)
        rows.append([md_text(m.name), attention_kind(m), format_int(n),
                     fmt_bytes(n * numerics.kv_precision(kv).bytes_per_weight, unit)])
    return md_table(["model", "attention", "elements per token", f"bytes per token ({kv})"], rows, "llrr")


def split_field(rows: list[Sizing]) -> tuple[list[Sizing], list[Sizing]]:
    """(rows a one-chip comparison shows, rows it leaves out): :func:`descent.memory.split_field`."""
    return memory.split_field(rows)


def sharded_sentence(left: list[Sizing]) -> str:
    """:func:`descent.memory.sharded_sentence` as Markdown text (catalog names escaped)."""
    return md_text(memory.sharded_sentence(left))


@table("decode_ceilings", P.MODEL, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH)
def decode_ceilings_table(model: str, weights: str, kv: str, context: int, batch: int) -> str:
    """Decode-speed ceiling for one model on every catalog accelerator that serves on its own,
    fastest first; the SRAM machines are named under the table with the chips the model needs."""
    rows = []
    shown, left = split_field([size(model, a.id, weights, kv, context, batch) for a in catalog.accelerators().values()])
    for s_ in shown:
        a = catalog.accelerator(s_.accelerator)
        row = [md_text(a.name), fmt_bytes(a.memory_bytes, "GB"), format_si(a.memory_bandwidth, "B/s", 3, trim=True),
               fmt_bytes(s_.bytes_per_decode_step, "GB"), fmt_num(s_.decode_tokens_per_s), "yes" if s_.fits else "no"]
        rows.append((s_.decode_tokens_per_s, row))
    rows.sort(key=lambda r: -r[0])
    header = ["accelerator", "memory", "bandwidth", "bytes per step", "tokens/s per sequence (ceiling)",
              "fits on one chip"]
    return md_table(header, [r for _, r in rows], "lrrrrl") + sharded_sentence(left) + ("\n\n" if left else "")


@table("shortcodes")
def shortcodes_table() -> str:
    """Every value and table shortcode with its arguments (generated, so it cannot go stale)."""
    rows = []
    for kind in ("value", "table"):
        for name, e in sorted(registry(kind).items()):
            args = "<br>".join(f"`{a.describe()}`: {a.help}" for a in e.args) or "none"
            rows.append([kind, f"`{name}`", e.doc, args])
    for kind, names in (("formula", _formula_names()), ("figure", figure_ids()), ("widget", _widget_names())):
        for name in names:
            rows.append([kind, f"`{name}`", _describe_other(kind, name), "none" if kind != "widget" else "see the widget"])
    return md_table(["kind", "name", "what it gives", "arguments (name=default)"], rows, html=True)  # <br>: ours


# Filled in by the site hook (on_config) with the project's figures/ folder.
FIGURES_DIR: list[Any] = []


def figure_ids() -> list[str]:
    """Ids of the figure recipes in ``figures/`` (file names without ``.py``)."""
    if not FIGURES_DIR:
        return []
    return sorted(p.stem for p in FIGURES_DIR[0].glob("*.py") if not p.name.startswith("_"))


def _formula_names() -> list[str]:
    return list(formulas.FORMULAS)


def _widget_names() -> list[str]:
    return widgets.names()


def _describe_other(kind: str, name: str) -> str:
    if kind == "formula":
        return formulas.FORMULAS[name].title
    if kind == "figure":
        return figures.load_recipe(FIGURES_DIR[0] / f"{name}.py").caption.split(". ")[0]
    return widgets.get(name).title


# Each part's page-only entries live in their own module (registered on import).
from descent import formulas, widgets  # noqa: E402
from descent.site import (  # noqa: E402,F401,I001
    figures,  # noqa: E402
    values_engine,
    values_part01,
    values_part1,
    values_part2,
    values_part3,
    values_part4,
    values_part5,
)
