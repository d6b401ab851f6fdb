"""Part 5 widget ``one_token_replayed``: a stepper over the ten stages that turn "The capital of
France is" into " Paris", each with the recorded numbers (:mod:`descent.replay`) and a link to the
section that explains it: the token ids; the chosen token's embedding row as the GGUF stores it
(``embedding_rows.json``); a layer's attention weights; the feed-forward matrices; the logits and
the greedy pick; a stored Q4_1 block; the recorded prefill and decode steps; the bytes and FLOPs of
the step that wrote " Paris" on a chosen chip; the token appended and its own row looked up next.

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

from descent import catalog, gguf_types, recorded, replay, weights_sample
from descent import params as P
from descent.units import (
    format_bytes,
    format_fixed,
    format_int,
    format_number,
    format_percent,
    format_si,
    format_time,
    visible_whitespace,
)
from descent.widgets import Input, widget
from descent.widgets import views as v

__all__ = ["LAYER", "STAGE", "TOKEN", "one_token_replayed"]

_LAYERS = recorded.trace_data()["model"]["layers"]
_TOKENS = recorded.prompt_trace(replay.PROMPT)["tokens"]

#: The stage shown, counted from 1.
STAGE = P.declare(P.Param(
    "stage", "Stage", "int", 1, key="replay_stage", min=1, max=len(replay.STAGES),
    help="Which of the ten stages of one token's trip to show; step through them in order.",
))
#: The prompt token whose embedding row stage 2 shows, counted from 1 (default: the last, " is",
#: whose vector the attention of stage 3 and the logits of stage 5 come from).
TOKEN = P.declare(P.Param(
    "token", "Token", "choice", len(_TOKENS), key="replay_token",
    choices=[(i, f"{format_int(i)}: {visible_whitespace(t['text'])}") for i, t in enumerate(_TOKENS, start=1)],
    help="Which prompt token's row of the embedding table stage 2 shows.",
))
#: The layer whose attention and weights are shown, counted from 1.
LAYER = P.declare(P.Param(
    "layer", "Layer", "int", 1, key="replay_layer", min=1, max=_LAYERS,
    help="Which of the model's layers the attention, feed-forward and weight stages show, counted from 1.",
))
_ACCELERATOR = P.ACCELERATOR  # the running example's chip (H200), as every widget

_IDS = [sid for sid, *_ in replay.STAGES]
#: The stages each control changes, counted from 1: elsewhere it is not offered (``when=``).
TOKEN_STAGES = (_IDS.index("embed") + 1,)
LAYER_STAGES = (_IDS.index("attention") + 1, _IDS.index("weights") + 1)
CHIP_STAGES = (_IDS.index("serve") + 1, _IDS.index("chip") + 1)

#: Steps of the recorded run listed in stage 8 (the prefill and the first decode steps).
_SERVE_STEPS = 4

#: The stage a click on a token chip goes to: its embedding row.
_EMBED_STAGE = TOKEN_STAGES[0]

#: Codes of the stored Q4_1 block shown in stage 7.
_BLOCK_VALUES = 8

#: Numbers of a row shown per token in stage 2's table (the chosen token shows every stored one).
_TABLE_VALUES = 4


def _and(items) -> str:
    """``"2"``, ``"3 and 7"``, ``"the token and the layer"``."""
    xs = [str(x) for x in items]
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]


def _stage_values(stages: tuple[int, ...]) -> tuple[str, ...]:
    return tuple(str(n) for n in stages)


def _where(n: int) -> dict:
    _id, title, page, heading = replay.stage(n)
    part = page.split("-")[1]
    return v.note(f"Stage {n} of {len(replay.STAGES)}, {title}: explained in", "info",
                  link=f"Part {part}, \"{heading}\"", href=replay.section_href(n))


def _quoted(text: str) -> str:
    return f"\"{text}\""


def _embed(token: int) -> list[dict]:
    row = replay.embedding_row(token)
    block = gguf_types.block_type(row.type)
    blocks = row.width // block.block_size
    prompt = [r for r in replay.embedding_rows() if r.role == "prompt"]
    return [
        v.stat("Row", format_int(row.id), note=f"token {_quoted(row.text)}, of {format_int(row.vocab)} rows"),
        v.stat("Length", format_number(row.norm, 4),
               note=f"square root of the sum of its {format_int(row.width)} numbers squared"),
        v.stat("Stored in", format_bytes(row.row_bytes),
               note=f"{format_int(blocks)} {row.type} blocks of {format_int(block.block_bytes)} bytes"),
        v.kv([("scale d of its first block", format_number(row.scale, 4)),
              (f"first {format_int(len(row.codes))} of {format_int(row.width)} codes q",
               " ".join(format_int(q) for q in row.codes)),
              ("their numbers, d x q", " ".join(format_fixed(x, 4) for x in row.values))],
             caption=f"The start of row {format_int(row.id)} ({_quoted(row.text)}) as the model file stores it"),
        v.table(["token", "row", f"first {format_int(_TABLE_VALUES)} numbers", "length"],
                [[r.text, format_int(r.id), " ".join(format_fixed(x, 3) for x in r.values[:_TABLE_VALUES]),
                  format_number(r.norm, 4)] for r in prompt],
                caption=f"The {format_int(len(prompt))} rows looked up: a {format_int(len(prompt))} x "
                f"{format_int(row.width)} block of numbers that enters layer 1"),
        v.note(f"Every row takes the same {format_bytes(row.row_bytes)}: the whole table is "
               f"{format_bytes(row.table_bytes)} of the file. Part 1's map of the table shows where words sit.",
               "info"),
    ]


def _stage_views(n: int, layer: int, accelerator: str, token: int) -> list[dict]:
    tr = recorded.prompt_trace(replay.PROMPT)
    m = catalog.model(replay.MODEL)
    tokens = tr["tokens"]
    steps = tr["generation"]["steps"]
    sid = replay.stage(n)[0]
    if sid == "tokenize":
        return [v.chips([v.chip(t["text"], t["id"], title="show its embedding row",
                                set={"stage": _EMBED_STAGE, "token": i}) for i, t in enumerate(tokens, start=1)],
                        caption=f"\"{tr['prompt']}\" becomes {format_int(len(tokens))} tokens, each a row number in "
                        f"a vocabulary of {format_int(m.vocab_size)}; click one to see its row")]
    if sid == "embed":
        return _embed(token)
    if sid == "attention":
        heads = tr["attention_last"][layer - 1]
        rows = [[f"head {h + 1}", *(format_percent(x, 2) for x in w)] for h, w in enumerate(heads)]
        return [v.table(["", *(t["text"] for t in tokens)], rows,
                        caption=f"Layer {layer}: how much the last token (\"{tokens[-1]['text']}\") takes from each "
                        f"prompt token, per head (each row sums to 100%)")]
    if sid == "ffn":
        mats = [weights_sample.layer_tensor(f"ffn_{x}") for x in ("gate", "up", "down")]
        per_layer = sum(t["weights"] for t in mats)
        return [v.stat("Inner width", format_int(m.intermediate_size), note=f"{format_int(m.hidden_size)} numbers widen to this"),
                v.stat("Weights per layer", format_int(per_layer), note="gate, up and down matrices (SwiGLU)"),
                v.stat("Stored in", format_bytes(sum(t["bytes"] for t in mats)),
                       note=f"each layer's three matrices, {mats[1]['type']} in the file"),
                v.stat("FLOPs per token", format_si(2 * per_layer, "FLOP"), note="in each layer: a multiply and an add per weight"),
                v.note(f"Each token's vector goes through the same three matrices in each of the "
                       f"{format_int(_LAYERS)} layers; SmolLM2 is dense, every token uses every weight.",
                       "info")]
    if sid == "logits":
        top = tr["next"][:5]
        return [v.table(["token", "logit", "probability"],
                        [[c["text"], format_fixed(c["logit"], 2), format_percent(c["probability"], 3)] for c in top],
                        caption=f"The {format_int(len(top))} highest of {format_int(m.vocab_size)} logits after the "
                        f"last layer, and their probabilities (softmax at temperature 1)")]
    if sid == "sample":
        first = steps[0]
        return [v.stat("Chosen", first["token"]["text"], note=f"token {format_int(first['token']['id'])}"),
                v.stat("Its probability", format_percent(first["probability"], 3)),
                v.stat("Uncertainty", format_number(tr["entropy_bits"], 3), "bits", note="entropy of the distribution"),
                v.note("The recorded reply took the most likely token at every step (greedy decoding).", "info")]
    if sid == "weights":
        d, mn, codes = weights_sample.block(layer - 1, "attn_q")
        vals = [d * q + mn for q in codes[:_BLOCK_VALUES]]
        return [v.kv([("scale d", format_number(d, 4)), ("minimum m", format_number(mn, 4)),
                      (f"first {format_int(_BLOCK_VALUES)} of {format_int(len(codes))} codes",
                       " ".join(format_int(c) for c in codes[:_BLOCK_VALUES])),
                      ("their weights, d x q + m", " ".join(format_fixed(x, 3) for x in vals))],
                     caption=f"Layer {layer}'s query matrix, first Q4_1 block of row 0, as stored in the file"),
                v.note(f"The file holds {format_bytes(replay.file_bytes())} of weights; every step reads them all.",
                       "info")]
    pre = replay.prefill_step(accelerator)
    decs = [replay.decode_step(accelerator, s["context_length"]) for s in steps[1:]]
    if sid == "serve":
        shown = steps[:_SERVE_STEPS]
        times = [pre, *decs][:_SERVE_STEPS]
        rows = [[format_int(s["step"] + 1), "prefill" if s["step"] == 0 else "decode", format_int(s["fed"]),
                 format_int(s["context_length"]), visible_whitespace(s["token"]["text"]), format_time(c.seconds)]
                for s, c in zip(shown, times, strict=True)]
        return [v.stat("Prefill", format_time(pre.seconds),
                       note=f"{format_int(steps[0]['fed'])} prompt tokens in one pass, then {_quoted(steps[0]['token']['text'])}"),
                v.stat("Next decode step", format_time(decs[0].seconds),
                       note=f"{format_int(steps[1]['fed'])} new token, {format_int(steps[1]['context_length'])} in the cache"),
                v.table(["step", "kind", "tokens fed", "tokens seen", "wrote", "time on the chip"], rows,
                        caption=f"The recorded run's first {format_int(len(shown))} steps, each timed at the "
                        f"roofline ceiling of the chosen chip"),
                v.note("Prefill builds the KV cache for the whole prompt and yields the first token; each later step "
                       "feeds only the newest token and reuses the cache.", "info")]
    if sid == "chip":
        a = catalog.accelerator(accelerator)
        dec = decs[0]
        return [v.stat("Bytes read", format_bytes(pre.bytes), note=f"weights {format_bytes(pre.weight_bytes)}, "
                       f"cache {format_bytes(pre.kv_bytes)}"),
                v.stat("FLOPs", format_si(pre.flops, "FLOP"), note=f"{format_int(steps[0]['fed'])} tokens through every weight"),
                v.stat("Time", format_time(pre.seconds), note=f"{pre.bound}-bound on one {a.name}"),
                v.table(["step", "bytes", "FLOPs", "reading", "arithmetic", "bound"],
                        [[label, format_bytes(c.bytes), format_si(c.flops, "FLOP"), format_time(c.memory_s),
                          format_time(c.compute_s), c.bound]
                         for label, c in ((f"prefill, wrote {_quoted(steps[0]['token']['text'])}", pre),
                                          (f"decode, wrote {_quoted(visible_whitespace(steps[1]['token']['text']))}", dec))],
                        caption=f"The step that wrote {_quoted(steps[0]['token']['text'])} and the one after it, "
                        f"on one {a.name}"),
                v.note(f"Reading takes {format_time(pre.memory_s)}, the arithmetic {format_time(pre.compute_s)}: "
                       + ("the chip waits on memory." if pre.bound == "memory"
                          else "this chip reads faster than it multiplies."), "info")]
    paris = next(r for r in replay.embedding_rows() if r.role == "reply")
    nxt = steps[1]
    gen = tr["generation"]
    end = (f"until the model writes its stop token: {format_int(len(steps))} steps"
           if gen["stop_reason"] == "stop_token"
           else f"until it writes a stop token or reaches a length limit; the recorded run was cut at "
           f"{format_int(len(steps))} steps")
    return [v.chips([*(v.chip(t["text"], t["id"]) for t in tokens),
                     v.chip(steps[0]["token"]["text"], steps[0]["token"]["id"], cls="is-new")],
                    caption=f"{_quoted(steps[0]['token']['text'])} joins the text; the next step feeds only it"),
            v.stat("Its row", format_int(paris.id), note=f"looked up in the embedding table, length {format_number(paris.norm, 4)}"),
            v.stat("Next token", visible_whitespace(nxt["token"]["text"]), note=f"probability {format_percent(nxt['probability'], 3)}"),
            v.note(f"The loop runs {end}: {_quoted(gen['text'])}.", "info")]


@widget(
    "one_token_replayed",
    tries=[("Step through the ten stages.", "The same token, ' Paris', seen as numbers, bytes and time.", {"stage": 5}),
           ("At stage 2, choose another token.",
            "Each row has its own numbers and length, but every row takes the same bytes in the file.", {"stage": 2, "token": 4}),
           ("At stage 8, compare the prefill with a decode step.",
            "On most chips they take the same time: both read every weight once, and a few tokens of "
            "arithmetic are small next to that.", {"stage": 8}),
           ("At stage 9, pick another chip.", "The step's bytes stay the same; its time follows the bandwidth.",
            {"stage": CHIP_STAGES[-1], "accelerator": "b200"})],
    title="One token, replayed",
    description="The ten stages from \"The capital of France is\" to \" Paris\", each with the numbers "
    "the real model produced or the site computes for it.",
    inputs=[Input(STAGE, "range"),
            Input(TOKEN.but(help=f"Which prompt token's row of the embedding table stage {TOKEN_STAGES[0]} shows "
                            f"(offered at that stage only)."), "select", when=("stage", _stage_values(TOKEN_STAGES))),
            Input(LAYER.but(help=f"Which of the model's layers stages {_and(LAYER_STAGES)} show, counted from 1 "
                            f"(offered at those stages only)."), "number", when=("stage", _stage_values(LAYER_STAGES))),
            Input(_ACCELERATOR.but(help=f"The chip stages {_and(CHIP_STAGES)} time the steps on (offered at those "
                                   f"stages only)."), "select", when=("stage", _stage_values(CHIP_STAGES)))],
)
def one_token_replayed(stage: int, layer: int, accelerator: str, token: int = TOKEN.default) -> list[dict]:
    """Views of stage ``stage`` (1 to 10): its numbers, then where it is explained (a link to the
    section). ``layer`` (1 to 30) picks the layer of stages 3, 4 and 7; ``token`` (1 to 5) the
    prompt token whose embedding row stage 2 shows.

    Raises:
        ValueError: stage, layer or token out of range, unknown accelerator.
    """
    if not 1 <= layer <= _LAYERS:
        raise ValueError(f"Layer must be 1 to {_LAYERS}, got {layer}")
    replay.embedding_row(token)  # checks the range on every stage
    return [*_stage_views(stage, layer, accelerator, token), _controls(stage), _where(stage)]


def _controls(n: int) -> dict:
    """The note that says which of the token, layer and chip controls stage ``n`` uses: the others
    are not offered there, since they change nothing at this stage."""
    uses = [what for what, at in (("the token", TOKEN_STAGES), ("the layer", LAYER_STAGES), ("the chip", CHIP_STAGES))
            if n in at]
    where = "; ".join(f"{what} at stage{'s' if len(at) > 1 else ''} {_and(at)}"
                      for what, at in (("the token", TOKEN_STAGES), ("the layer", LAYER_STAGES), ("the chip", CHIP_STAGES)))
    head = (f"This stage changes with {_and(uses)}." if uses
            else "No control changes this stage.")
    return v.note(f"{head} Each control is offered only at the stages it changes: {where}.", "info")
