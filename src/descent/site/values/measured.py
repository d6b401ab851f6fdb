"""Public measurements beside the step model's ceilings (:mod:`descent.predict`): the reference page
"How close are the ceilings?". Look-ups only: every number comes ready from descent.predict.
"""

from __future__ import annotations

from descent import catalog, numerics, predict
from descent.catalog import measurements as M
from descent.site.shortcodes import table
from descent.site.values.text import fmt_num, md_link_source, md_table, md_text
from descent.units import format_int, format_percent, format_time


def _value(x: float, unit: str) -> str:
    return format_time(x) if unit == "s" else f"{fmt_num(x)} tokens/s"


def _chip(p: predict.Prediction) -> str:
    m = p.row
    name = "the build machine (its recorded bandwidth and matrix-product rate)" if m.chip == M.BUILD_MACHINE \
        else catalog.accelerator(m.chip).name
    return name if m.chips == 1 else f"{format_int(m.chips)} x {name}"


def _split(m: M.Measurement) -> str:
    parts = [f"{name} {format_int(getattr(m, name))}" for name in ("tp", "pp", "ep") if getattr(m, name) != 1]
    return f" ({', '.join(parts)})" if parts else ""


def _batch(p: predict.Prediction) -> str:
    if p.row.batch == 0:
        return f"maximum load (the ceiling takes {format_int(p.batch)}, the most that fits)"
    return format_int(p.batch)


def _kv(m: M.Measurement) -> str:
    """The KV cache's precision the ceiling used: as the source states it, or the engine's default
    assumed (FP16 for llama.cpp, BF16 otherwise: ``Measurement.kv_precision``)."""
    label = numerics.kv_precision(m.kv_precision).label
    return f"KV cache {label} (as the source states)" if m.kv_stated else f"KV cache {label} (assumed: the engine's default; the source does not say)"


def _model(p: predict.Prediction) -> str:
    return md_text(f"{catalog.model(p.row.model).name}; {p.row.weights_note}; {_kv(p.row)}")


def _load(p: predict.Prediction) -> str:
    m = p.row
    lengths = []
    if m.prompt_tokens:
        lengths.append(f"prompt {format_int(m.prompt_tokens)}")
    if m.output_tokens:
        lengths.append(f"output {format_int(m.output_tokens)}")
    return md_text(f"{_chip(p)}{_split(m)}; batch {_batch(p)}; {', '.join(lengths)} tokens")


@table("measurements")
def measurements_table() -> str:
    """Every catalog measurement beside the step model's ceiling for its configuration: the share of the
    ceiling it reached, the step's bound, the date and the source."""
    rows = []
    for i, p in enumerate(predict.predictions(), start=1):
        m = p.row
        rows.append([format_int(i), md_text(M.KINDS[m.what][1]), _model(p), _load(p),
                     md_text(f"{m.engine} {m.engine_version}"), _value(p.measured, m.unit), _value(p.ceiling, m.unit),
                     format_percent(p.share, 2), p.bound, f"{md_text(p.date)}, {md_link_source(p.source)}"])
    return md_table(["#", "measured", "model, weights and KV cache", "chips and load", "engine", "measured", "ceiling", "share",
                     "bound", "date and source"], rows, "rlllllrrrl")


@table("measured_summary")
def measured_summary_table() -> str:
    """The share of the ceiling reached, by engine, chip class and bound: how many measurements, their
    median, the lowest and the highest."""
    rows = []
    for slug, (label, field, _) in M.GROUPS.items():
        members = predict.group(slug)
        if not members:
            continue
        s = predict.spread(members)
        by = {"": "all", "engine": "engine", "chip_class": "chip class", "bound": "bound"}[field]
        rows.append([by, md_text(label), format_int(s.count), format_percent(s.median, 2), format_percent(s.low, 2),
                     format_percent(s.high, 2)])
    return md_table(["grouped by", "group", "measurements", "median share", "lowest", "highest"], rows, "llrrrr")


@table("measured_classes")
def measured_classes_table() -> str:
    """Per class (chip class x engine x bound): the expected share of the ceiling (median, lowest to
    highest) and how many of its measurements fall inside the range the rest of the class gives."""
    rows = []
    for (chip_class, engine, bound), members in predict.classes().items():
        s = predict.spread(members)
        loo = predict.leave_one_out(members)
        tested = f"{format_int(loo.inside)} of {format_int(loo.tested)}" if loo.tested else "too few to test"
        rows.append([md_text(chip_class), md_text(engine), bound, format_int(s.count), format_percent(s.median, 2),
                     f"{format_percent(s.low, 2)} to {format_percent(s.high, 2)}", tested])
    return md_table(["chip class", "engine", "bound", "measurements", "median share", "range", "left out, inside the rest's range"],
                    rows, "lllrrrr")


@table("measured_quotes")
def measured_quotes_table() -> str:
    """Every measurement's figure as its source prints it, with where in the source it stands."""
    rows = [[format_int(i), f"`{p.id}`", f"`{p.quote}`" if "`" not in p.quote else md_text(p.quote),
             md_text(p.row.notes + (f" KV cache: {p.row.kv_source}." if p.row.kv_stated else ""))]
            for i, p in enumerate(predict.predictions(), start=1)]
    return md_table(["#", "catalog id", "the source's words", "where, and what the row's fields cannot say"], rows, "rlll")
