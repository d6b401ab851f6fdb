"""Part 5 widget ``server_dials``: one model on a tensor-parallel server, on :mod:`descent.dials`.

The reply streamed in the text box is SmolLM2-135M-Instruct's real, recorded answer to the chat
prompt (:mod:`descent.recorded`), replayed at the computed rate by ``docs/assets/descent/stream.js``.

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

from descent import catalog, dials, recorded, transformer
from descent import params as P
from descent.compare import SPARE_FIELDS, spare_text
from descent.units import GB, format_bytes, format_int, format_number, format_time
from descent.widgets import Input, _compare, widget
from descent.widgets import views as v
from descent.widgets.expected import expected_views

__all__ = ["PINNED", "REPLY_PROMPT", "reply_tokens", "server_dials"]

#: The recorded prompt whose reply is streamed.
REPLY_PROMPT = "chat"

_ACCELERATOR = P.ACCELERATOR.but(default="h100-sxm")
_TP = P.TP.but(default=8, max=128, label="Accelerators (tensor parallel)",
               help="N: accelerators in the server, each holding 1/N of every weight matrix.")
_CONTEXT = P.CONTEXT.but(help="Tokens each conversation holds; the time to first token prefills a prompt this long.")
#: The dials' pinned set-up (issue 26): filled by share.js's Pin button, compared with the current one.
PINNED = _compare.pinned_param("dials_pinned")


def reply_tokens() -> list[str]:
    """The recorded reply to the chat prompt, one string per SmolLM2 token (the stop token left out)."""
    g = recorded.prompt_trace(REPLY_PROMPT)["generation"]
    steps = g["steps"][:-1] if g["stop_reason"] == "stop_token" else g["steps"]
    return [s["token"]["text"] for s in steps]


@widget(
    "server_dials",
    tries=[("Raise the batch to 32.", "Each user slows a little; the server as a whole writes far more.", {"batch": 32}), ("Use two chips instead of eight.", "Each chip holds more of the model and the all-reduces cost less.", {"tp": 2})],
    title="The server dials",
    description="One model served by N accelerators that split every weight matrix between them: "
    "how long the first token takes, how fast each reader and the whole server are served, what a "
    "million tokens cost and how much memory each accelerator has left.",
    inputs=[Input(P.MODEL, "select"), Input(_ACCELERATOR, "select"), Input(P.WEIGHTS_UNIFORM, "select"),
            Input(_TP, "number"), Input(P.BATCH, "range", log=True), Input(_CONTEXT, "range", log=True),
            Input(P.PRICE, "number"), Input(PINNED, "text", placeholder=_compare.PLACEHOLDER)],
)
def server_dials(model: str, accelerator: str, weights: str, tp: int, batch: int, context: int,
                 price: float, pinned: str = PINNED.default) -> list[dict]:
    """Views: TTFT, tokens/s per user and in total, $ per million, spare memory per device, and
    the recorded reply streamed at the per-user rate after the TTFT.

    Raises:
        ValueError: from :func:`descent.dials.server_dials`.
    """
    a, m = catalog.accelerator(accelerator), catalog.model(model)
    out = []
    before = _pinned(pinned) if pinned.strip() else None
    # The accelerators follow the model (issue 24: a control never offers a value that fails): a
    # model whose heads do not split over tp is served over the largest degree below it that does.
    degrees = transformer.tp_degrees(m)
    if tp not in degrees:
        used = max(t for t in degrees if t <= tp)
        out.append(v.note(f"{transformer.tp_message(m, tp)}: the dials show {format_int(used)} "
                          f"{'accelerator' if used == 1 else 'accelerators'}.", "info"))
        tp = used
    d = dials.server_dials(model, accelerator, weights, "bf16", context, batch, tp, price)
    if before is not None:
        out.insert(0, _comparison(*before, d))
    if not d.fits:
        out.append(v.note(f"This does not fit: each {a.name} would need {format_bytes(-d.free_bytes)} more "
                          f"than it has after the runtime allowance. The speeds are what the server would do if it did; add accelerators, "
                          f"shorten the context or lower the batch.", "warn"))
    words = len(reply_tokens())
    out += [
        # "Copy as JSON": the keys of `descent dials --json` (its inputs, then the server's numbers).
        v.export({"model": model, "accelerator": accelerator, "weights": weights, "kv": "bf16", "context": context,
                  "batch": batch, "tp": tp, "price": price, "link": P.LINK.default, "ttft_s": d.ttft_s,
                  "tokens_per_s_per_user": d.tokens_per_s_per_user, "tokens_per_s_total": d.tokens_per_s_total,
                  "usd_per_million_tokens": d.usd_per_million_tokens, "free_bytes": d.free_bytes, "fits": d.fits,
                  "bound": d.bound}),
        v.stat("Time to first token", format_time(d.ttft_s), quantity="ttft_s",
               note=f"prefill over {format_int(tp)}, {format_time(d.prefill_comm_s)} of it all-reduces"),
        *expected_views("Time to first token", d.ttft_s, accelerator, d.prefill_bound, inverse=True,
                        fmt=format_time, unit=""),
        v.stat("Per user", format_number(d.tokens_per_s_per_user, 3), "tokens/s", quantity="tokens_per_s_per_user",
               note=f"one step every {format_time(d.step_s)}, {d.bound}-bound; {format_time(d.comm_s)} of it all-reduces"),
        *expected_views("Per user", d.tokens_per_s_per_user, accelerator, d.bound),
        v.stat("Whole server", format_number(d.tokens_per_s_total, 3), "tokens/s", quantity="tokens_per_s_total",
               note=f"{format_int(batch)} conversation{'' if batch == 1 else 's'} at once"),
        v.stat("Per million output tokens", f"${format_number(d.usd_per_million_tokens, 3)}",
               quantity="server_usd_per_million_tokens",
               note=f"decode steady state; {format_int(tp)} x ${format_number(price, 3, trim=True)} an hour"),
        v.stat("Spare memory per accelerator", spare_text(d.free_bytes, format_bytes), quantity="free_bytes_per_device",
               note="after its share of weights and KV cache and the runtime allowance"),
        v.stream(reply_tokens(), d.tokens_per_s_per_user, d.ttft_s,
                 caption=f"A real {words}-token reply (SmolLM2-135M's own, mistakes included), written at "
                 f"{format_number(d.tokens_per_s_per_user, 3)} tokens/s after {format_time(d.ttft_s)}"),
    ]
    return out


def _served_tp(m: catalog.Model, tp: int) -> int:
    """The accelerators the dials use: ``tp``, or the largest degree below it the model's heads split over."""
    return max(t for t in transformer.tp_degrees(m) if t <= tp)


def _pinned(text: str) -> tuple[dict, dials.Dials]:
    """The pinned set-up (:data:`PINNED`) and its dials, at the accelerators the dials would use.

    Raises:
        FieldError: (field ``pinned``) as :func:`descent.widgets._compare.parse_pinned`.
    """
    params = {"model": P.MODEL, "accelerator": _ACCELERATOR, "weights": P.WEIGHTS_UNIFORM, "tp": _TP,
              "batch": P.BATCH, "context": _CONTEXT, "price": P.PRICE}
    p = _compare.parse_pinned(text, params)
    p["tp"] = _served_tp(catalog.model(p["model"]), p["tp"])
    return p, dials.server_dials(p["model"], p["accelerator"], p["weights"], "bf16", p["context"], p["batch"],
                                 p["tp"], p["price"])


def _comparison(pinned: dict, before: dials.Dials, now: dials.Dials) -> dict:
    """The pinned server beside the current one (:func:`descent.dials.compare`)."""
    def cells(c):
        if c.field == "fits":
            return c.label, _compare.yes_no(c.before), _compare.yes_no(c.after)
        if c.field == "ttft_s":
            return c.label, format_time(c.before), format_time(c.after)
        if c.field in SPARE_FIELDS:  # memory left: a negative one is a shortfall, not a number to divide
            gb = lambda x: format_number(x / GB, 3)  # noqa: E731
            return f"{c.label}, GB", spare_text(c.before, gb, "GB"), spare_text(c.after, gb, "GB")
        if c.field == "usd_per_million_tokens":
            return f"{c.label}, $", format_number(c.before, 3), format_number(c.after, 3)
        return f"{c.label}, tokens/s", format_number(c.before, 3), format_number(c.after, 3)

    what = _compare.describe(pinned, ("model", "accelerator", "weights", "tp", "batch", "context", "price"))
    return _compare.table(dials.compare(before, now), cells, what)
