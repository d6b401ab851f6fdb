"""SmolLM2-135M measured on the build machine for Part 3 (:mod:`descent.trace.measure`, taken at
build, cached by the GGUF's SHA-256): prefill and decode speeds, batches, constrained and
speculative decoding. Moved here unchanged from ``values_part3``.
"""

from __future__ import annotations

from functools import cache

from descent.site.shortcodes import table, value
from descent.site.values.serving import field_choice
from descent.site.values.text import fmt_num, md_table
from descent.units import (
    format_int,
    format_number,
    format_percent,
    format_time,
    visible_whitespace,
)


@cache
def _measured() -> dict:
    from descent.trace.measure import measurements

    return measurements()

def measured_label() -> str:
    """Where and when the SmolLM2 measurements were taken, as one phrase."""
    d = _measured()
    mc = d["machine"]
    load = f", load average {format_number(mc['load_average'], 2, trim=True)}" if mc.get("load_average") is not None else ""
    return (f"measured on {mc['cpu']} ({plural_cores(mc['cores'])}{load}), NumPy {mc['numpy']} on one BLAS thread, "
            f"{d['date']}, median of {format_int(d['repeats'])} runs")

def plural_cores(n: int) -> str:
    return f"{format_int(n)} core" + ("" if n == 1 else "s")

def _batch(b: int) -> dict:
    for row in _measured()["batched"]:
        if row["batch"] == b:
            return row
    raise ValueError(f"no measurement at batch {b}")

MEASURED_FIELD = field_choice("serving_measured_field", "Measured fact", (
    "label", "date", "prefill_tokens", "prefill_tokens_per_s", "decode_tokens_per_s", "speed_ratio",
    "batch_context", "batch1_tokens_per_s", "batch16_tokens_per_s", "batch_gain", "batch_step_growth",
    "batch2_vs_1", "batch_note", "batch_max", "constrained_prompt", "constrained_text", "constrained_free_text", "constrained_steps",
    "first_allowed", "first_mass", "first_free_top", "first_free_top_p", "first_token", "first_token_p",
    "first_renormalized", "min_mass", "spec_tokens", "spec_passes", "spec_drafted",
    "spec_accepted", "spec_acceptance", "spec_tokens_per_pass", "spec_equal", "spec_seconds_greedy",
    "spec_seconds", "spec_wall_speedup", "spec_text"),
    "one measured number or text from SmolLM2 on the build machine")

def _text(t: str) -> str:
    return "“" + visible_whitespace(t) + "”" if t.strip() != t or "\n" in t else "“" + t + "”"

def _code(t: str) -> str:
    """Model output for running text: inline code (double backticks, so the text may hold one), newlines
    shown as ↵ (a shortcode value is one line)."""
    return "`` " + t.replace("\n", "↵") + " ``"

@value("serving_measured", MEASURED_FIELD)
def measured(field: str) -> str:
    """SmolLM2-135M measured when the site was built (descent.trace.measure): speeds, constrained and speculative decoding."""
    d = _measured()
    c, s = d["constrained"], d["speculative"]
    first = c["steps"][0]
    b1, b16 = _batch(1), _measured()["batched"][-1]
    return {
        "label": measured_label,
        "date": lambda: d["date"],
        "prefill_tokens": lambda: format_int(d["prefill"]["tokens"]),
        "prefill_tokens_per_s": lambda: f"{fmt_num(d['prefill']['tokens_per_s'])} tokens/s",
        "decode_tokens_per_s": lambda: f"{fmt_num(d['decode']['tokens_per_s'])} tokens/s",
        "speed_ratio": lambda: fmt_num(d["prefill"]["speed_vs_decode"], 2),
        "batch_context": lambda: format_int(d["batch_context"]),
        "batch1_tokens_per_s": lambda: f"{fmt_num(b1['tokens_per_s'])} tokens/s",
        "batch16_tokens_per_s": lambda: f"{fmt_num(b16['tokens_per_s'])} tokens/s",
        "batch_gain": lambda: fmt_num(b16["vs_batch_1"]["tokens_per_s"], 2),
        "batch_step_growth": lambda: fmt_num(b16["vs_batch_1"]["seconds_per_step"], 2),
        "batch2_vs_1": lambda: fmt_num(_batch(2)["vs_batch_1"]["seconds_per_step"], 2),
        "batch_note": lambda: _batch_note(_batch(2), b16),
        "batch_max": lambda: format_int(b16["batch"]),
        "constrained_prompt": lambda: "“" + c["prompt"] + "”",
        "constrained_text": lambda: _code(c["text"]),
        "constrained_free_text": lambda: _code(c["free_text"]),
        "constrained_steps": lambda: format_int(len(c["steps"])),
        "first_allowed": lambda: format_int(first["allowed"]),
        "first_mass": lambda: format_percent(first["allowed_mass"]),
        "first_free_top": lambda: _text(first["free_top"]["text"]),
        "first_free_top_p": lambda: format_percent(first["free_top"]["probability"]),
        "first_token": lambda: _text(first["token"]["text"]),
        "first_token_p": lambda: format_percent(first["probability"]),
        "first_renormalized": lambda: format_percent(first["renormalized"]),
        "min_mass": lambda: format_percent(min(st["allowed_mass"] for st in c["steps"])),
        "spec_tokens": lambda: format_int(s["tokens"]),
        "spec_passes": lambda: format_int(s["passes"]),
        "spec_drafted": lambda: format_int(s["drafted"]),
        "spec_accepted": lambda: format_int(s["accepted"]),
        "spec_acceptance": lambda: format_percent(s["acceptance"]),
        "spec_tokens_per_pass": lambda: fmt_num(s["tokens_per_pass"]),
        "spec_equal": lambda: "identical" if s["equals_greedy"] else "different",
        "spec_seconds_greedy": lambda: format_time(s["seconds_greedy"]),
        "spec_seconds": lambda: format_time(s["seconds_speculative"]),
        "spec_wall_speedup": lambda: fmt_num(s["wall_speedup"], 2),
        "spec_text": lambda: _code(s["text"]),
    }[field]()

#: Above this ratio of batch 2's step time to batch 1's, the page explains the jump (see _batch_note).
BATCH2_JUMP = 1.5

def _batch_note(b2: dict, b16: dict) -> str:
    """A sentence on what the measured step times show, chosen by the numbers themselves (the ratios
    come ready with each batch row: descent.trace.measure.timings)."""
    jump = b2["vs_batch_1"]["seconds_per_step"]
    tail = b16["vs_batch_2"]["seconds_per_step"]
    # One idea a sentence, at most three numbers each (issue 23: tests/test_page_prose.py counts them).
    if jump > BATCH2_JUMP:
        return (f"On this machine a single sequence is the odd one out. NumPy multiplies a single row by a weight "
                f"matrix with a routine that streams the matrix once, but two or more rows with a general one that "
                f"first copies the matrix into its own layout. So a step at batch 2 takes {fmt_num(jump, 2)}× as "
                f"long as at batch 1. From batch 2 to batch {format_int(b16['batch'])}, the step time grows by "
                f"{fmt_num(tail, 2)}×.")
    return (f"A step at batch {format_int(b16['batch'])} takes "
            f"{fmt_num(b16['vs_batch_1']['seconds_per_step'], 2)}× as long as at batch 1 for "
            f"{fmt_num(b16['vs_batch_1']['batch'])} times the tokens.")

@table("measured_speeds")
def measured_speeds() -> str:
    """SmolLM2 on the build machine: a prompt read in one pass against one token per pass."""
    d = _measured()
    pre, dec = d["prefill"], d["decode"]
    return md_table(
        ["phase", "tokens per pass", "time per pass", "tokens/s"],
        [["prefill (the prompt in one pass)", format_int(pre["tokens"]), format_time(pre["seconds"]),
          fmt_num(pre["tokens_per_s"])],
         [f"decode (one token, {format_int(dec['context'])} cached)", "1", format_time(dec["seconds_per_token"]),
          fmt_num(dec["tokens_per_s"])]],
        "lrrr",
    )

@table("measured_batches")
def measured_batches() -> str:
    """SmolLM2 decode on the build machine at batch 1 to 16: time per step and tokens/s."""
    rows = _measured()["batched"]
    return md_table(
        ["batch", "time per step", "tokens/s", "tokens/s vs batch 1"],
        [[format_int(r["batch"]), format_time(r["seconds_per_step"]), fmt_num(r["tokens_per_s"]),
          fmt_num(r["vs_batch_1"]["tokens_per_s"], 2) + "×"] for r in rows],
        "rrrr",
    )

def _cell_token(t: str) -> str:
    return "`" + visible_whitespace(t).replace("`", "'") + "`"

@table("constrained_steps")
def constrained_steps() -> str:
    """Each step of SmolLM2's constrained reply: tokens allowed, probability on them, and the choice before and after masking."""
    rows = []
    for i, st in enumerate(_measured()["constrained"]["steps"], 1):
        rows.append([
            format_int(i), format_int(st["allowed"]), format_percent(st["masked_share"], 5),
            format_percent(st["allowed_mass"]),
            f"{_cell_token(st['free_top']['text'])} {format_percent(st['free_top']['probability'])}",
            f"{_cell_token(st['token']['text'])} {format_percent(st['probability'])} → "
            f"{format_percent(st['renormalized'])}",
        ])
    return md_table(["step", "tokens allowed", "masked", "probability on allowed", "model's favourite",
                     "chosen: before → after renormalizing"], rows, "rrrrll")
