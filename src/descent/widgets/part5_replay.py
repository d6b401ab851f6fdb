"""Part 5 widget ``one_token_replayed``: a stepper over the ten stages that turn "The capital of
France is" into " Paris", each with the recorded numbers (:mod:`descent.replay`).

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

from descent import catalog, recorded, replay, weights_sample
from descent import params as P
from descent.units import (
    format_bytes,
    format_fixed,
    format_int,
    format_number,
    format_percent,
    format_si,
    format_time,
)
from descent.widgets import Input, widget
from descent.widgets import views as v

__all__ = ["STAGE", "one_token_replayed"]

_LAYERS = recorded.trace_data()["model"]["layers"]

#: The stage shown, counted from 1.
STAGE = P.declare(P.Param(
    "stage", "Stage", "int", 1, key="replay_stage", min=1, max=len(replay.STAGES),
    help="Which of the ten stages of one token's trip to show; step through them in order.",
))
#: The layer whose attention and weights are shown, counted from 1.
LAYER = P.declare(P.Param(
    "layer", "Layer", "int", 1, key="replay_layer", min=1, max=_LAYERS,
    help="Which of the model's layers the attention and weight stages show, counted from 1.",
))
_ACCELERATOR = P.ACCELERATOR.but(default="h100-sxm")


def _where(n: int) -> dict:
    _id, title, page, heading = replay.stage(n)
    part = page.split("-")[1]
    return v.note(f"Stage {n} of {len(replay.STAGES)}, {title}: explained in Part {part}, section \"{heading}\".",
                  "info")


def _stage_views(n: int, layer: int, accelerator: str) -> list[dict]:
    tr = recorded.prompt_trace(replay.PROMPT)
    m = catalog.model(replay.MODEL)
    tokens = tr["tokens"]
    sid = replay.stage(n)[0]
    if sid == "tokenize":
        return [v.chips([v.chip(t["text"], t["id"]) for t in tokens],
                        caption=f"\"{tr['prompt']}\" becomes {format_int(len(tokens))} tokens, each a row number in "
                        f"a vocabulary of {format_int(m.vocab_size)}")]
    if sid == "embed":
        return [v.stat("Numbers per token", format_int(m.hidden_size), note="one row of the embedding table each"),
                v.stat("Table size", format_int(m.vocab_size * m.hidden_size), "numbers",
                       note=f"{format_int(m.vocab_size)} rows x {format_int(m.hidden_size)}"),
                v.note(f"The {format_int(len(tokens))} rows looked up form a {format_int(len(tokens))} x "
                       f"{format_int(m.hidden_size)} block that enters layer 1. The rows' numbers themselves "
                       f"were not recorded; Part 1's map of the table shows where these words sit.", "info")]
    if sid == "attention":
        heads = tr["attention_last"][layer - 1]
        rows = [[f"head {h + 1}", *(format_percent(x, 2) for x in w)] for h, w in enumerate(heads)]
        return [v.table(["", *(t["text"] for t in tokens)], rows,
                        caption=f"Layer {layer}: how much the last token (\"{tokens[-1]['text']}\") takes from each "
                        f"prompt token, per head (each row sums to 100%)")]
    if sid == "ffn":
        up = weights_sample.layer_tensor("ffn_up")
        return [v.stat("Inner width", format_int(m.intermediate_size), note=f"{format_int(m.hidden_size)} numbers widen to this"),
                v.stat("Weights per layer", format_int(3 * m.hidden_size * m.intermediate_size),
                       note="gate, up and down matrices (SwiGLU)"),
                v.note(f"Each token's vector goes through the same three matrices ({up['type']} in the file) in "
                       f"each of the {format_int(_LAYERS)} layers; SmolLM2 is dense, every token uses every weight.",
                       "info")]
    if sid == "logits":
        top = tr["next"][:5]
        return [v.table(["token", "logit", "probability"],
                        [[c["text"], format_fixed(c["logit"], 2), format_percent(c["probability"], 3)] for c in top],
                        caption=f"The {format_int(len(top))} highest of {format_int(m.vocab_size)} logits after the "
                        f"last layer, and their probabilities (softmax at temperature 1)")]
    if sid == "sample":
        first = tr["generation"]["steps"][0]
        return [v.stat("Chosen", first["token"]["text"], note=f"token {format_int(first['token']['id'])}"),
                v.stat("Its probability", format_percent(first["probability"], 3)),
                v.stat("Uncertainty", format_number(tr["entropy_bits"], 3), "bits", note="entropy of the distribution"),
                v.note("The recorded reply took the most likely token at every step (greedy decoding).", "info")]
    if sid == "weights":
        d, mn, codes = weights_sample.block(layer - 1, "attn_q")
        vals = [d * q + mn for q in codes[:8]]
        return [v.kv([("scale d", format_number(d, 4)), ("minimum m", format_number(mn, 4)),
                      ("first 8 of 32 codes", " ".join(str(c) for c in codes[:8])),
                      ("their weights, d x q + m", " ".join(format_fixed(x, 3) for x in vals))],
                     caption=f"Layer {layer}'s query matrix, first Q4_1 block of row 0, as stored in the file"),
                v.note(f"The file holds {format_bytes(replay.file_bytes())} of weights; every step reads them all.",
                       "info")]
    if sid == "serve":
        pre, dec = replay.prefill_step(accelerator), replay.decode_step(accelerator)
        return [v.stat("Prefill", format_time(pre.seconds), note=f"{format_int(len(tokens))} prompt tokens in one pass"),
                v.stat("Each decode step", format_time(dec.seconds), note="one new token, the cache reused"),
                v.note("Prefill builds the KV cache for the prompt and yields \" Paris\"; each later step feeds "
                       "only the newest token. Both are roofline ceilings on the chosen chip.", "info")]
    if sid == "chip":
        a = catalog.accelerator(accelerator)
        dec = replay.decode_step(accelerator)
        return [v.stat("Bytes read", format_bytes(dec.bytes), note=f"weights {format_bytes(dec.weight_bytes)}, "
                       f"cache {format_bytes(dec.kv_bytes)}"),
                v.stat("FLOPs", format_si(dec.flops, "FLOP")),
                v.stat("Time", format_time(dec.seconds), note=f"{dec.bound}-bound on one {a.name}"),
                v.note(f"Reading takes {format_time(dec.memory_s)}, the arithmetic {format_time(dec.compute_s)}: "
                       f"the chip waits on memory.", "info")]
    nxt = tr["generation"]["steps"][1]
    return [v.chips([*(v.chip(t["text"], t["id"]) for t in tokens),
                     v.chip(tr["generation"]["steps"][0]["token"]["text"], tr["generation"]["steps"][0]["token"]["id"], cls="is-new")],
                    caption="\" Paris\" joins the text; the next step feeds only it"),
            v.stat("Next token", nxt["token"]["text"], note=f"probability {format_percent(nxt['probability'], 3)}"),
            v.note(f"The loop runs until the model writes its stop token: {format_int(len(tr['generation']['steps']))} "
                   f"steps in the recorded run, \"{tr['generation']['text']}\".", "info")]


@widget(
    "one_token_replayed",
    title="One token, replayed",
    description="The ten stages from \"The capital of France is\" to \" Paris\", each with the numbers "
    "the real model produced or the site computes for it.",
    inputs=[Input(STAGE, "range"), Input(LAYER, "number"), Input(_ACCELERATOR, "select")],
)
def one_token_replayed(stage: int, layer: int, accelerator: str) -> list[dict]:
    """Views of stage ``stage`` (1 to 10): its numbers, then where it is explained.

    Raises:
        ValueError: stage or layer out of range, unknown accelerator.
    """
    if not 1 <= layer <= _LAYERS:
        raise ValueError(f"Layer must be 1 to {_LAYERS}, got {layer}")
    return [*_stage_views(stage, layer, accelerator), _where(stage)]
