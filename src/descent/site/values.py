"""Value and table shortcodes: the registry entries pages use to print computed numbers.

Each entry is a function registered with :func:`descent.site.shortcodes.value` or
:func:`~descent.site.shortcodes.table`, declaring its arguments. Other engineers add entries here
(or in their own module, imported at the bottom of this file) as their core functions land.

Entries that need a core module that has not landed yet (``descent.transformer``) raise
ValueError saying so when a page uses them; the registry itself always loads.

Units: GB = 1e9 bytes, GiB = 2**30 bytes (and the other SI / IEC prefixes below), always labelled.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import math
import re
from typing import Any

from descent import catalog, numerics
from descent.site.shortcodes import Arg, link_to, registry, table, value
from descent.units import BYTE_UNITS, format_bytes, format_number, format_si

# ---------------------------------------------------------------------------------------------
# Units (SI decimal prefixes, IEC 80000-13 binary prefixes) and formatting
# ---------------------------------------------------------------------------------------------

#: Significant figures for a derived number in running text.
SIG_FIGS = 3


def fmt_num(x: float, sig: int = SIG_FIGS) -> str:
    """``x`` to ``sig`` significant figures for running text: :func:`descent.units.format_number`
    with trailing zeros dropped ("80", "1.5", "12,300")."""
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError(f"cannot format {x!r}: the number must be finite")
    return format_number(x, sig, trim=True)


def fmt_bytes(n: float, unit: str = "auto", sig: int = SIG_FIGS) -> str:
    """Bytes with a labelled unit (:func:`descent.units.format_bytes`, trailing zeros dropped).

    ``unit``: ``auto`` (SI, GB = 1e9 bytes) or a key of ``descent.units.BYTE_UNITS``; running text
    spells the plain unit out ("512 bytes").
    """
    if unit != "auto" and unit not in BYTE_UNITS:
        raise ValueError(f"unit must be auto or one of {', '.join(BYTE_UNITS)}, got {unit!r}")
    text = format_bytes(n, unit, sig, trim=True)
    return text[: -len(" B")] + " bytes" if text.endswith(" B") else text


def fmt_rate(x: float, unit: str, sig: int = 4) -> str:
    """A per-second rate with an SI prefix chosen for it: ``fmt_rate(3.35e12, "B/s") == "3.35 TB/s"``
    (:func:`descent.units.format_si`, trailing zeros dropped)."""
    return format_si(x, unit, sig, trim=True)


def fmt_count(n: float, unit: str = "auto", sig: int = SIG_FIGS) -> str:
    """A count (parameters): ``auto`` picks million/billion; ``exact`` prints every digit."""
    if unit == "exact":
        return f"{int(n):,}"
    names = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
    if unit == "auto":
        unit = "one"
        for name, scale in names.items():
            if abs(n) >= scale:
                unit = name
    if unit == "one":
        return fmt_num(n, sig)
    if unit not in names:
        raise ValueError(f"unit must be auto, exact or one of {', '.join(names)}, got {unit!r}")
    return f"{fmt_num(n / names[unit], sig)} {unit}"


def _md_cell(x: Any) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def md_table(header: list[str], rows: list[list[Any]], align: str | None = None) -> str:
    """A Markdown table, surrounded by blank lines. ``align``: one char per column, ``l`` or ``r``."""
    align = align or "l" * len(header)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return "\n\n" + "\n".join(lines) + "\n\n"


_URL = re.compile(r"https?://[^\s;,)\]]+[^\s;,)\].]")


def md_link_source(src: str) -> str:
    """A source string as Markdown: every URL in it becomes a link, the rest stays text."""
    return _URL.sub(lambda m: f"[{m.group(0).split('://', 1)[1]}]({m.group(0)})", src)


# ---------------------------------------------------------------------------------------------
# Catalog helpers
# ---------------------------------------------------------------------------------------------


def model_ids() -> list[str]:
    return list(catalog.models())


def accelerator_ids() -> list[str]:
    return list(catalog.accelerators())


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


_ACC_BYTES = {"memory_bytes", "sram_bytes"}
_ACC_RATES = {"memory_bandwidth": "B/s", "scale_up_bandwidth": "B/s", "bf16_flops": "FLOP/s",
              "fp8_flops": "FLOP/s", "fp4_flops": "FLOP/s"}


def format_field(name: str, v: Any) -> str:
    """A catalog field's value as text, with its unit (bytes fields in GB and GiB)."""
    leaf = name.split(".")[-1]
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if leaf in _ACC_BYTES:
        return f"{v:,} bytes ({fmt_bytes(v, 'GB', 4)}, {fmt_bytes(v, 'GiB', 4)})"
    if leaf in _ACC_RATES:
        return fmt_rate(v, _ACC_RATES[leaf])
    if leaf == "power_watts":
        return f"{fmt_num(v, 4)} W"
    if leaf.startswith("params_") and isinstance(v, (int, float)):
        return fmt_count(v, "auto", 4)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return fmt_num(v, 4)
    if v == "":
        return "—"
    return str(v)


def _get(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if obj is None:
            return None
        obj = getattr(obj, part)
    return obj


def _core(module: str, what: str) -> Any:
    """Import a core module that may not have landed yet; ValueError says which is missing."""
    if importlib.util.find_spec(module) is None:
        raise ValueError(f"{what} needs {module}, which is not in the package yet")
    return importlib.import_module(module)


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------

MODEL = Arg("model", "catalog model id", choices=model_ids)
ACCELERATOR = Arg("accelerator", "catalog accelerator id", choices=accelerator_ids)
BYTES_UNIT = Arg("unit", "byte unit: auto (SI) or B, KB, KiB, MB, MiB, GB, GiB, TB, TiB, PB, PiB",
                 choices=["auto", *BYTE_UNITS], default="auto")
COUNT_UNIT = Arg("unit", "auto, exact, thousand, million, billion or trillion",
                 choices=["auto", "exact", "thousand", "million", "billion", "trillion"], default="auto")
SIG = Arg("sig", "significant figures", type=int, default=SIG_FIGS, minimum=1, maximum=10)
KV_DTYPE = Arg("dtype", "KV-cache element format (descent.numerics.KV_PRECISIONS)",
               choices=lambda: list(numerics.KV_PRECISIONS), default="bf16")
WEIGHTS = Arg("weights", "weight precision (descent.numerics.PRECISIONS)",
              choices=lambda: list(numerics.PRECISIONS), default="bf16")


@value("model_field", MODEL, Arg("field", "a Model field, dotted for nested ones (moe.num_experts)",
                                 choices=_model_field_names))
def model_field(model: str, field: str) -> str:
    """A model's catalog field, as published in its config.json."""
    return format_field(field, _get(catalog.model(model), field))


@value("accelerator_field", ACCELERATOR, Arg("field", "an Accelerator field", choices=_accelerator_field_names))
def accelerator_field(accelerator: str, field: str) -> str:
    """An accelerator's catalog field (bytes in GB and GiB, rates with SI prefixes)."""
    return format_field(field, getattr(catalog.accelerator(accelerator), field))


@value("memory_bandwidth", ACCELERATOR, Arg("unit", "TB/s or GB/s", choices=["TB/s", "GB/s"], default="TB/s"),
       Arg("sig", "significant figures", type=int, default=3, minimum=1, maximum=10))
def memory_bandwidth(accelerator: str, unit: str, sig: int) -> str:
    """An accelerator's main-memory bandwidth (TB/s = 1e12 bytes/s)."""
    bw = catalog.accelerator(accelerator).memory_bandwidth
    scale = BYTE_UNITS[unit.split("/")[0]]
    return f"{fmt_num(bw / scale, sig)} {unit}"


@value("memory_capacity", ACCELERATOR, BYTES_UNIT, SIG)
def memory_capacity(accelerator: str, unit: str, sig: int) -> str:
    """An accelerator's main-memory capacity in the unit asked for."""
    return fmt_bytes(catalog.accelerator(accelerator).memory_bytes, unit, sig)


@value("params_total", MODEL, COUNT_UNIT, SIG)
def params_total(model: str, unit: str, sig: int) -> str:
    """A model's exact total parameter count (descent.transformer.param_counts)."""
    tr = _core("descent.transformer", "params_total")
    return fmt_count(tr.param_counts(catalog.model(model)).total, unit, sig)


@value("params_active", MODEL, COUNT_UNIT, SIG)
def params_active(model: str, unit: str, sig: int) -> str:
    """Parameters used per token (equal to the total for a dense model)."""
    tr = _core("descent.transformer", "params_active")
    return fmt_count(tr.param_counts(catalog.model(model)).active, unit, sig)


def kv_bytes_per_token_raw(model_id: str, dtype: str) -> float:
    """KV-cache bytes one token adds to one sequence, all layers, no window cap."""
    tr = _core("descent.transformer", "kv_bytes_per_token")
    return tr.kv_elements_per_token(catalog.model(model_id)) * numerics.kv_precision(dtype).bytes_per_weight


@value("kv_bytes_per_token", MODEL, KV_DTYPE, BYTES_UNIT, SIG)
def kv_bytes_per_token(model: str, dtype: str, unit: str, sig: int) -> str:
    """KV-cache bytes per token of context (all layers; K and V; no sliding-window cap)."""
    return fmt_bytes(kv_bytes_per_token_raw(model, dtype), unit, sig)


CONTEXT = Arg("context", "tokens of context per sequence", type=int, default=8192, minimum=1, maximum=10_000_000)
BATCH = Arg("batch", "sequences decoded together", type=int, default=1, minimum=1, maximum=100_000)
KV = Arg("kv", "KV-cache precision (descent.numerics.KV_PRECISIONS)",
         choices=lambda: list(numerics.KV_PRECISIONS), default="bf16")


@value("weights_bytes", MODEL, WEIGHTS, BYTES_UNIT, SIG)
def weights_bytes(model: str, weights: str, unit: str, sig: int) -> str:
    """Bytes to store all of a model's weights (every expert) at a precision."""
    tr = _core("descent.transformer", "weights_bytes")
    return fmt_bytes(numerics.weight_bytes(tr.param_counts(catalog.model(model)).total, weights), unit, sig)


@value("decode_ceiling", MODEL, ACCELERATOR, WEIGHTS, KV, CONTEXT, BATCH,
       Arg("per", "sequence (tokens/s each sequence sees) or total (over the batch)",
           choices=["sequence", "total"], default="sequence"), SIG)
def decode_ceiling(model: str, accelerator: str, weights: str, kv: str, context: int, batch: int,
                   per: str, sig: int) -> str:
    """Memory-bandwidth ceiling on decode speed (descent.hardware.decode_ceiling), tokens/s."""
    hw = _core("descent.hardware", "decode_ceiling")
    c = hw.decode_ceiling(model, accelerator, weights, kv, context, batch)
    return f"{fmt_num(c.tokens_per_s_per_sequence if per == 'sequence' else c.tokens_per_s_total, sig)} tokens/s"


@value("count", Arg("what", "models or accelerators", choices=["models", "accelerators"]))
def count(what: str) -> str:
    """How many rows the catalog has."""
    return str(len(catalog.models() if what == "models" else catalog.accelerators()))


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _attention_kind(m: catalog.Model) -> str:
    """MHA / GQA / MQA / MLA, plus the sliding window if any (K and H are shown beside it)."""
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
        kind += f", window {m.sliding.window:,}" + (f", every {_ordinal(every)} layer full" if every else "")
    return kind


@table("models")
def models_table() -> str:
    """Every catalog model, one row each: shape, attention, experts, published size."""
    rows = []
    for m in catalog.models().values():
        moe = f"{m.moe.experts_per_token} of {m.moe.num_experts}" if m.moe else "dense"
        rows.append([f"[{m.name}]({link_to(MODELS_PAGE, m.id)})", m.num_layers, f"{m.hidden_size:,}", m.num_heads, m.num_kv_heads,
                     m.head_dim, _attention_kind(m), moe, f"{m.max_context:,}",
                     fmt_count(m.params_total_published, "auto", 4)])
    return md_table(["model", "L", "D", "H", "K", "d_head", "attention", "experts", "context", "published size"],
                    rows, "lrrrrrllrr")


#: The reference pages that hold each row's details (docs-relative).
MODELS_PAGE = "reference/models.md"
ACCELERATORS_PAGE = "reference/accelerators.md"


def _details(item: Any, fields: list[tuple[str, Any]]) -> str:
    rows = [[f"`{n}`", format_field(n, v), md_link_source(item.source_of(n))] for n, v in fields]
    return md_table(["field", "value", "source"], rows)


@table("model_details", Arg("model", "one model id, or all", choices=lambda: ["all", *model_ids()], default="all"))
def model_details(model: str) -> str:
    """A section per model (heading with the id as anchor): every field, its value and its source."""
    items = catalog.models().values() if model == "all" else [catalog.model(model)]
    out = []
    for m in items:
        out.append(f"\n\n### {m.name} {{#{m.id}}}\n\nCatalog id `{m.id}`, from "
                   f"[{m.hf_repo}](https://huggingface.co/{m.hf_repo}).")
        out.append(_details(m, [(n, v) for n, v in flat_fields(m) if n not in ("id", "name")]))
    return "".join(out)


@table("accelerators")
def accelerators_table() -> str:
    """Every catalog accelerator: memory, bandwidth, dense BF16 and FP8 peaks, power."""
    rows = []
    for a in catalog.accelerators().values():
        rows.append([f"[{a.name}]({link_to(ACCELERATORS_PAGE, a.id)})", a.kind, f"{fmt_bytes(a.memory_bytes, 'GB', 4)} {a.memory_type}",
                     fmt_rate(a.memory_bandwidth, "B/s"), fmt_rate(a.bf16_flops, "FLOP/s"),
                     fmt_rate(a.fp8_flops, "FLOP/s") if a.fp8_flops else "none",
                     f"{fmt_num(a.power_watts, 4)} W", a.year])
    return md_table(["accelerator", "kind", "memory", "bandwidth", "BF16 dense", "FP8 dense", "power", "year"],
                    rows, "llrrrrrr")


@table("accelerator_details",
       Arg("accelerator", "one accelerator id, or all", choices=lambda: ["all", *accelerator_ids()], default="all"))
def accelerator_details(accelerator: str) -> str:
    """A section per accelerator: every field, its value and its source, then its notes."""
    items = catalog.accelerators().values() if accelerator == "all" else [catalog.accelerator(accelerator)]
    out = []
    for a in items:
        out.append(f"\n\n### {a.name} {{#{a.id}}}\n\nCatalog id `{a.id}`.")
        out.append(_details(a, [(n, getattr(a, n)) for n in _accelerator_field_names() if n not in ("id", "name")]))
    return "".join(out)


@table("kv_bytes_per_token", KV_DTYPE, Arg("unit", "byte unit", choices=list(BYTE_UNITS), default="KiB"))
def kv_bytes_per_token_table(dtype: str, unit: str) -> str:
    """KV-cache bytes per token for every catalog model."""
    tr = _core("descent.transformer", "the kv_bytes_per_token table")
    rows = []
    for m in catalog.models().values():
        n = tr.kv_elements_per_token(m)
        rows.append([m.name, _attention_kind(m), f"{n:,}", fmt_bytes(n * numerics.kv_precision(dtype).bytes_per_weight, unit)])
    return md_table(["model", "attention", "elements per token", f"bytes per token ({dtype})"], rows, "llrr")


@table("decode_ceilings", Arg("model", "catalog model id", choices=model_ids, default="llama-3.1-70b"),
       WEIGHTS, KV, CONTEXT, BATCH)
def decode_ceilings_table(model: str, weights: str, kv: str, context: int, batch: int) -> str:
    """Decode-speed ceiling for one model on every catalog accelerator, fastest first."""
    hw = _core("descent.hardware", "the decode_ceilings table")
    mem = importlib.import_module("descent.memory") if importlib.util.find_spec("descent.memory") else None
    rows = []
    for a in catalog.accelerators().values():
        c = hw.decode_ceiling(model, a, weights, kv, context, batch)
        row = [a.name, fmt_bytes(a.memory_bytes, "GB"), fmt_rate(a.memory_bandwidth, "B/s", 3),
               fmt_bytes(c.bytes_per_step, "GB"), fmt_num(c.tokens_per_s_per_sequence)]
        if mem is not None:
            row.append("yes" if mem.size(model, a.id, weights, kv, context, batch).fits else "no")
        rows.append((c.tokens_per_s_per_sequence, row))
    rows.sort(key=lambda r: -r[0])
    header = ["accelerator", "memory", "bandwidth", "bytes per step", "tokens/s per sequence (ceiling)"]
    if mem is not None:
        header.append("fits on one chip")
    return md_table(header, [r for _, r in rows], "lrrrr" + ("l" if mem is not None else ""))


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
    return md_table(["kind", "name", "what it gives", "arguments (name=default)"], rows)


# Filled in by the site hook (on_config) with the project's figures/ folder.
FIGURES_DIR: list[Any] = []


def figure_ids() -> list[str]:
    """Ids of the figure recipes in ``figures/`` (file names without ``.py``)."""
    if not FIGURES_DIR:
        return []
    return sorted(p.stem for p in FIGURES_DIR[0].glob("*.py") if not p.name.startswith("_"))


def _formula_names() -> list[str]:
    if importlib.util.find_spec("sympy") is None:
        return []
    from descent import formulas

    return list(formulas.FORMULAS)


def _widget_names() -> list[str]:
    if importlib.util.find_spec("descent.widgets") is None:
        return []
    mod = importlib.import_module("descent.widgets")
    if hasattr(mod, "names"):
        return sorted(mod.names())
    return sorted(getattr(mod, "REGISTRY", {}))


def _describe_other(kind: str, name: str) -> str:
    if kind == "formula":
        from descent import formulas

        return formulas.FORMULAS[name].title
    if kind == "figure":
        from descent.site import figures

        return figures.load_recipe(FIGURES_DIR[0] / f"{name}.py").caption.split(". ")[0]
    mod = importlib.import_module("descent.widgets")
    _widget_names()
    w = getattr(mod, "REGISTRY", {}).get(name)
    return getattr(w, "title", "") or ""


# Part 5 entries (sizing, decode speed across the field) live in their own module.
# Part 1 entries (embeddings, stacks, attention, MoE) live in their own module.
from descent.site import values_part01, values_part1, values_part5  # noqa: E402,F401,I001  (register on import)
