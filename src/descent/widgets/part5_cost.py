"""Part 5 widgets: ``price_it_out`` (dollars per million output tokens by batch) and
``joules_per_token`` (energy per token and per answer), on :mod:`descent.economics`.

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

from descent import catalog, economics, hardware
from descent import params as P
from descent.units import format_int, format_number, format_percent
from descent.widgets import Input, Look, _compare, widget
from descent.widgets import views as v
from descent.widgets.expected import expected_views

__all__ = ["ANSWER_TOKENS", "GEMINI_MEDIAN_PROMPT_WH", "LED_BULB_W", "PINNED", "PRICE_COMPARED", "joules_per_token",
           "price_it_out", "price_summary"]

#: Tokens in the example answer of the energy widget.
ANSWER_TOKENS = 500
#: Joules per watt-hour.
J_PER_WH = 3600
#: A 60 W-equivalent LED bulb draws about 10 W (US Department of Energy, energy.gov "LED Lighting":
#: ENERGY STAR qualified 60 W-equivalent LEDs use 8 to 12 W; 10 W is the middle).
LED_BULB_W = 10.0
#: Google's measured median energy of one Gemini Apps text prompt, 0.24 Wh, counting the whole
#: serving stack (Elsworth et al. 2025, "Measuring the environmental impact of delivering AI at
#: Google Scale", arXiv:2508.15734, section 4).
GEMINI_MEDIAN_PROMPT_WH = 0.24

_CONTEXT = P.CONTEXT.but(help="Tokens each conversation holds: a longer context means a bigger KV cache to read.")
#: The price widget's pinned set-up (issue 26): filled by share.js's Pin button, compared with the current one.
PINNED = _compare.pinned_param("price_pinned")
#: What the price widget compares: (field of :func:`price_summary`, label, which is better).
PRICE_COMPARED = (
    ("usd_per_million_tokens", "At one conversation", "lower"),
    ("usd_at_max_batch", "At the largest batch that fits", "lower"),
    ("max_batch", "Largest batch that fits", "higher"),
)


@widget(
    "price_it_out",
    title="Price it out",
    description="What one million output tokens cost on one accelerator rented by the hour, at every "
    "batch from one conversation up to the most whose KV caches still fit.",
    inputs=[Input(P.MODEL, "select"), Input(P.ACCELERATOR, "select"), Input(P.WEIGHTS, "select"),
            Input(_CONTEXT, "range", log=True), Input(P.PRICE, "number"), Input(PINNED, "text", placeholder=_compare.PLACEHOLDER)],
    tries=[
        ('Follow the bars down to the largest batch that fits.', 'The hourly price is shared by more tokens: the cost per million falls.',
         Look(html="At the largest batch that fits")),
        ('Double the hourly price.', "Every cost doubles: the price per token is the hour's price over the tokens it writes.", {"price": 6.0}),
    ],
)
def price_it_out(model: str, accelerator: str, weights: str, context: int, price: float,
                 pinned: str = PINNED.default) -> list[dict]:
    """Views: a log-scale bar list of $ per million output tokens by batch (compute-bound rows
    marked), where the list stops (memory), and the prompt/output cost ratio.

    Raises:
        ValueError: from :mod:`descent.economics`.
    """
    a = catalog.accelerator(accelerator)
    rows = economics.cost_by_batch(model, accelerator, weights, "bf16", context, price)
    first = [_comparison(pinned, rows)] if pinned.strip() else []
    if not rows:
        return [*first, v.note(f"Not even one conversation of {format_int(context)} tokens fits on one {a.name} "
                       f"beside the weights: there is nothing to price. Pick a smaller precision or a bigger chip.",
                       "warn")]
    bars = [v.bar(f"batch {format_int(r.batch)}", r.usd_per_million_tokens,
                  display=f"${format_number(r.usd_per_million_tokens, 3)}",
                  cls="is-compute" if r.bound == "compute" else "",
                  note="compute-bound" if r.bound == "compute" else "")
            for r in rows]
    last = rows[-1]
    ratio = economics.input_output_ratio(model, accelerator, weights, "bf16", context, last.batch)
    prefill_bound = hardware.prefill_time(model, accelerator, weights, "bf16", context).bound
    return [
        *first,
        # "Copy as JSON": each batch's row under the keys of `descent cost --json`.
        v.export({"model": model, "accelerator": accelerator, "weights": weights, "kv": "bf16", "context": context,
                  "price": price, "max_batch": last.batch,
                  "rows": [{"batch": r.batch, "tokens_per_s_total": r.tokens_per_s_total,
                            "usd_per_million_tokens": r.usd_per_million_tokens, "joules_per_token": r.joules_per_token,
                            "fits": r.fits, "bound": r.bound} for r in rows]}),
        v.bar_list(bars, log=True, caption=f"Dollars per million output tokens (decode steady state) on one {a.name} at "
                   f"${format_number(price, 3, trim=True)} an hour, {format_int(context)} tokens each"),
        v.stat("At one conversation", f"${format_number(rows[0].usd_per_million_tokens, 3)}", "per million",
               note="output tokens, decode steady state", quantity="usd_per_million_tokens"),
        v.stat(f"At the largest batch that fits ({format_int(last.batch)})",
               f"${format_number(last.usd_per_million_tokens, 3)}", "per million",
               note=f"output tokens, decode steady state: {format_number(last.tokens_per_s_total, 3)} tokens/s in "
               f"total, {last.bound}-bound"),
        *expected_views(f"At batch {format_int(last.batch)}", last.usd_per_million_tokens, accelerator, last.bound,
                        inverse=True, fmt=_dollars, unit="per million"),
        v.stat("Prompt tokens are cheaper by", format_number(ratio, 3), "x",
               note=f"at that batch: a decode token's time over a prompt token's. The prefill of all "
               f"{format_int(context)} prompt tokens is {prefill_bound}-bound"
               + (", its time set by its arithmetic" if prefill_bound == "compute" else "") + "; a "
               f"decode step reads the weights once per {format_int(last.batch)} output tokens"),
        v.note(f"The list stops at batch {format_int(last.batch)}: one more conversation's KV cache would not "
               f"fit beside the weights. Each row is a floor: a real server is not busy every second and runs "
               f"below its ceiling.", "info"),
    ]


def _dollars(x: float) -> str:
    return f"${format_number(x, 3)}"


def price_summary(rows: list[economics.TokenCost]) -> dict:
    """What the price widget compares (:data:`PRICE_COMPARED`) from its rows (:func:`descent.economics.cost_by_batch`):
    None where not one conversation fits."""
    if not rows:
        return {"usd_per_million_tokens": None, "usd_at_max_batch": None, "max_batch": 0}
    return {"usd_per_million_tokens": rows[0].usd_per_million_tokens,
            "usd_at_max_batch": rows[-1].usd_per_million_tokens, "max_batch": rows[-1].batch}


def _comparison(pinned: str, rows: list[economics.TokenCost]) -> dict:
    """The pinned set-up's prices beside the current ones (:func:`descent.economics.compare`).

    Raises:
        FieldError: (field ``pinned``) as :func:`descent.widgets._compare.parse_pinned`.
    """
    params = {"model": P.MODEL, "accelerator": P.ACCELERATOR, "weights": P.WEIGHTS, "context": _CONTEXT,
              "price": P.PRICE}
    p = _compare.parse_pinned(pinned, params)
    before = economics.cost_by_batch(p["model"], p["accelerator"], p["weights"], "bf16", p["context"], p["price"])

    def cells(c):
        if c.field == "max_batch":
            return f"{c.label}, conversations", format_int(c.before), format_int(c.after)
        show = lambda x: "does not fit" if x is None else format_number(x, 3)  # noqa: E731
        return f"{c.label}, $ per million", show(c.before), show(c.after)

    return _compare.table(economics.compare(price_summary(before), price_summary(rows), PRICE_COMPARED), cells,
                          _compare.describe(p, tuple(params)))


def _times(ratio: float) -> str:
    """``"9.5 times that"`` or ``"40% of that"``."""
    if ratio >= 1:
        return f"{format_number(ratio, 2, trim=True)} times that"
    return f"{format_percent(ratio, 2)} of that"


@widget(
    "joules_per_token",
    title="Joules per token",
    description="The energy one output token takes: the accelerator's board power, times the data "
    "centre's overhead, divided by the tokens it writes each second.",
    inputs=[Input(P.MODEL, "select"), Input(P.ACCELERATOR, "select"), Input(P.WEIGHTS, "select"),
            Input(_CONTEXT, "range", log=True), Input(P.BATCH, "range", log=True), Input(P.PUE, "number")],
    tries=[
        ('Raise the batch.', 'The board draws about the same power while writing more tokens: energy per token falls.', {"batch": 16}),
        ('Lower the PUE towards 1.', 'Less cooling and conversion overhead per joule the chip itself uses.', {"pue": 1.1}),
    ],
)
def joules_per_token(model: str, accelerator: str, weights: str, context: int, batch: int,
                     pue: float) -> list[dict]:
    """Views: joules per token at this batch and at one, a 500-token answer in joules and
    watt-hours, and two sourced comparisons.

    Raises:
        ValueError: from :mod:`descent.economics`.
    """
    a = catalog.accelerator(accelerator)
    c = economics.token_cost(model, accelerator, weights, "bf16", context, batch, pue=pue)
    one = economics.token_cost(model, accelerator, weights, "bf16", context, 1, pue=pue)
    answer_j = c.joules_per_token * ANSWER_TOKENS
    out = []
    if not c.fits:
        out.append(v.does_not_fit("This batch", a.name))
    out += [
        v.stat("Per token", format_number(c.joules_per_token, 3), "J", quantity="joules_per_token",
               note=f"{format_number(a.power_watts, 4, trim=True)} W x {format_number(pue, 3, trim=True)} / "
               f"{format_number(c.tokens_per_s_total, 3)} tokens/s"),
        v.stat("At one conversation", format_number(one.joules_per_token, 3), "J",
               note="the same chip writing for one person: the weight reads are not shared"),
        v.stat(f"A {ANSWER_TOKENS}-token answer", format_number(answer_j, 3), "J",
               note=f"{format_number(answer_j / J_PER_WH, 3)} Wh; a {format_number(LED_BULB_W, 2, trim=True)} W "
               f"LED bulb uses that in {format_number(answer_j / LED_BULB_W, 3)} s"),
        v.note(f"For scale: Google measured the median Gemini text prompt at {GEMINI_MEDIAN_PROMPT_WH} Wh "
               f"({format_int(round(GEMINI_MEDIAN_PROMPT_WH * J_PER_WH))} J) for its whole serving stack; "
               f"this answer's {format_number(answer_j / J_PER_WH, 3)} Wh is {_times(answer_j / J_PER_WH / GEMINI_MEDIAN_PROMPT_WH)}, "
               f"counting the accelerator alone at its full board power and one answer at a time.", "info"),
    ]
    return out
