"""Value and table shortcodes for Part 5 ("The whole descent"): sizing and decode speed across chips.

Imported at the bottom of :mod:`descent.site.values`, so the entries register with the others.
Every number comes from :func:`descent.memory.size` or :mod:`descent.widgets.part5`, the same code
the page's widgets run in the browser.

* ``<!-- descent:table decode_speed_across_field model=... weights=... kv=... context=... batch=... -->``:
  one row per catalog accelerator, fastest decode ceiling first, chips that cannot hold the model
  marked "won't fit".
* ``<!-- descent:value sizing model=... accelerator=... field=... -->``: one field of a sizing
  (bytes in a chosen unit, counts, tokens/s).
* ``<!-- descent:value moe_expert_share model=... batch=... -->``: the expected share of routed
  experts one decode step reads at batch B, 1 - (1 - k/E)^B, as a percentage.
* ``<!-- descent:value chips_that_fit ... -->``: how many catalog accelerators hold the model.
"""

from __future__ import annotations

from descent import catalog, hardware, numerics
from descent.memory import size
from descent.site.shortcodes import Arg, table, value
from descent.site.values import (
    ACCELERATOR,
    BATCH,
    BYTES_UNIT,
    CONTEXT,
    KV,
    MODEL,
    SIG,
    WEIGHTS,
    fmt_bytes,
    fmt_count,
    fmt_num,
    fmt_rate,
    md_table,
    model_ids,
)
from descent.widgets.part5 import FIELD_DEFAULTS, across_field, rate_text

__all__ = ["SIZING_FIELDS", "chips_that_fit", "decode_speed_across_field", "moe_expert_share", "sizing"]

#: Sizing fields a page may print, by kind: bytes (formatted in ``unit``), counts, rates (tokens/s).
SIZING_FIELDS = {
    "weights_bytes": "bytes",
    "kv_cache_bytes": "bytes",
    "kv_bytes_per_token": "bytes",
    "runtime_bytes": "bytes",
    "total_bytes": "bytes",
    "capacity_bytes": "bytes",
    "free_bytes": "bytes",
    "bytes_per_decode_step": "bytes",
    "accelerators_needed": "count",
    "params_total": "params",
    "params_active": "params",
    "decode_tokens_per_s": "rate",
    "decode_tokens_per_s_total": "rate",
}

#: Percent per unit fraction.
PERCENT = 100

FIELD_MODEL = Arg("model", "catalog model id", choices=model_ids, default=FIELD_DEFAULTS["model"])
FIELD_WEIGHTS = Arg(
    "weights",
    "weight precision (descent.numerics.PRECISIONS)",
    choices=lambda: list(numerics.PRECISIONS),
    default=FIELD_DEFAULTS["weights"],
)


@value(
    "sizing",
    MODEL,
    ACCELERATOR,
    WEIGHTS,
    KV,
    CONTEXT,
    BATCH,
    Arg("field", "a field of descent.memory.Sizing", choices=list(SIZING_FIELDS)),
    BYTES_UNIT,
    SIG,
)
def sizing(
    model: str,
    accelerator: str,
    weights: str,
    kv: str,
    context: int,
    batch: int,
    field: str,
    unit: str,
    sig: int,
) -> str:
    """One field of descent.memory.size(...): bytes in the unit asked for, counts, or tokens/s."""
    s = size(model, accelerator, weights, kv, context, batch)
    x = getattr(s, field)
    kind = SIZING_FIELDS[field]
    if kind == "bytes":
        return fmt_bytes(x, unit, sig)
    if kind == "count":
        return f"{x:,}"
    if kind == "params":
        return fmt_count(x, "auto", sig)
    return f"{fmt_num(x, sig)} tokens/s"


@value(
    "moe_expert_share",
    MODEL,
    BATCH,
    Arg(
        "routing",
        "uniform (expected coverage at batch B) or active (k of E)",
        choices=list(hardware.MOE_ROUTINGS),
        default="uniform",
    ),
    SIG,
)
def moe_expert_share(model: str, batch: int, routing: str, sig: int) -> str:
    """Share of a MoE model's routed-expert weights one decode step of B sequences reads, percent."""
    m = catalog.model(model)
    if m.moe is None:
        raise ValueError(f"model={model!r} is dense; moe_expert_share needs a mixture-of-experts model")
    share = hardware.decode_step_bytes(m, "bf16", "bf16", 1, batch, routing).routed_expert_share
    return f"{fmt_num(share * PERCENT, sig)}%"


@value("chips_that_fit", FIELD_MODEL, FIELD_WEIGHTS, KV, CONTEXT, BATCH)
def chips_that_fit(model: str, weights: str, kv: str, context: int, batch: int) -> str:
    """How many catalog accelerators hold the model (weights + KV cache + runtime allowance) alone."""
    return str(sum(1 for s in across_field(model, weights, kv, context, batch) if s.fits))


@table("decode_speed_across_field", FIELD_MODEL, FIELD_WEIGHTS, KV, CONTEXT, BATCH)
def decode_speed_across_field(model: str, weights: str, kv: str, context: int, batch: int) -> str:
    """One model on every accelerator: decode ceiling per sequence, fastest first; won't-fit chips marked."""
    rows = []
    for s in across_field(model, weights, kv, context, batch):
        a = catalog.accelerator(s.accelerator)
        speed = rate_text(s.decode_tokens_per_s)
        if s.fits:
            fit = "fits"
        else:
            fit = f"won't fit (needs {fmt_bytes(s.total_bytes, 'GB')})"
            speed = f"({speed} if it fit)"
        rows.append(
            [
                a.name,
                f"{fmt_bytes(a.memory_bytes, 'GB')} ({fmt_bytes(a.memory_bytes, 'GiB')})",
                fmt_rate(a.memory_bandwidth, "B/s", 3),
                speed,
                fit,
            ]
        )
    return md_table(
        ["accelerator", "memory", "bandwidth", "tokens/s per sequence (ceiling)", "one chip"], rows, "lrrrl"
    )


@value("runtime_allowance")
def runtime_allowance() -> str:
    """Share of an accelerator's memory the sizing keeps back for the runtime (descent.memory), percent."""
    from descent.memory import RUNTIME_ALLOWANCE

    return f"{fmt_num(RUNTIME_ALLOWANCE * PERCENT)}%"
