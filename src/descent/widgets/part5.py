"""Part 5 widgets: ``size_it_yourself`` (the sizing sandbox) and ``decode_across_field``.

``size_it_yourself`` stacks a model's weights, its KV cache and the runtime allowance against one
accelerator's memory (:func:`descent.memory.size`), says whether that fits and how many such chips
the weights and KV cache would need, and gives the memory-bandwidth ceiling on decode speed
(:mod:`descent.hardware`): per sequence, over the batch, the bytes one decode step reads and the KV
bytes each token adds. For a mixture-of-experts model it says how many parameters are stored and
how many run per token (:func:`descent.transformer.param_counts`).

``decode_across_field`` puts one model at one precision on every catalog accelerator: the decode
ceiling per sequence as a bar each, the chips that cannot hold the weights (+ KV cache + runtime
allowance) greyed and marked "won't fit". :func:`across_field` computes its rows; the site's
``decode_speed_across_field`` table and the ``decode-speed-across-field`` figure use the same
function, so the three cannot disagree.

Sources: the memory rule and the runtime allowance are :mod:`descent.memory`'s (vLLM's default
``gpu_memory_utilization`` = 0.9); the decode ceiling is Pope et al. 2022, "Efficiently Scaling
Transformer Inference", section 2, with the roofline of Williams et al. 2009 (see
:mod:`descent.hardware`).

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

from descent import catalog, custom, hfconfig, numerics
from descent import params as P
from descent.compare import SPARE_FIELDS, spare_text
from descent.hardware import decode_step_bytes
from descent.memory import (
    Sizing,
    across_field,
    as_json,
    compare,
    fit_cell,
    fit_sentence,
    moe_line,
    sharded_sentence,
    size,
    split_field,
)
from descent.units import (
    GB,
    KiB,
    format_bytes,
    format_count,
    format_int,
    format_number,
    format_percent,
    format_rate,
    format_si,
)
from descent.weights import describe
from descent.widgets import Input, _compare, widget
from descent.widgets import views as v
from descent.widgets.expected import expected_views

__all__ = [
    "DEFAULTS",
    "FIELD_BATCH",
    "FIELD_KV",
    "across_field",
    "decode_across_field",
    "field_bars",
    "moe_line",
    "parse_pinned",
    "rate_text",
    "size_it_yourself",
]

#: ``decode_across_field`` fixes the KV precision and the batch: one BF16 sequence (the
#: declared defaults of :data:`descent.params.KV` and :data:`descent.params.BATCH`).
FIELD_KV = P.KV.default
FIELD_BATCH = P.BATCH.default

#: The sandbox's default inputs: the declared defaults of its parameters (the running example).
DEFAULTS = {p.name: p.default for p in (P.MODEL, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH, P.ACCELERATOR)}

#: The choice that means "the model in the config.json box" / "the chip in the number boxes".
CUSTOM = "custom"

#: The config.json the "your model" box starts with: Qwen3-32B's, as published
#: (https://huggingface.co/Qwen/Qwen3-32B/blob/main/config.json; the same text is
#: tests/data/configs/other/qwen3-32b.json, and a test keeps the two equal). A model the catalog
#: does not have, of the size readers ask about for a 24 GB card.
EXAMPLE_CONFIG = """{
  "architectures": [
    "Qwen3ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 5120,
  "initializer_range": 0.02,
  "intermediate_size": 25600,
  "max_position_embeddings": 40960,
  "max_window_layers": 64,
  "model_type": "qwen3",
  "num_attention_heads": 64,
  "num_hidden_layers": 64,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
}
"""

# The sandbox's model and chip lists: the catalog's (descent.params.MODEL / ACCELERATOR) plus one
# entry each for a model read from a pasted config.json and a chip typed in as numbers.
SANDBOX_MODEL = P.declare(P.Param(
    "model", P.MODEL.label, "choice", P.MODEL.default, key="sandbox_model",
    choices=lambda: [*P.MODEL.options(), (CUSTOM, "Your model: paste its config.json")],
    help=P.MODEL.help + " Or your own: paste its config.json.",
))
SANDBOX_ACCELERATOR = P.declare(P.Param(
    "accelerator", P.ACCELERATOR.label, "choice", P.ACCELERATOR.default, key="sandbox_accelerator",
    choices=lambda: [*P.ACCELERATOR.options(), (CUSTOM, "Your chip: type its numbers")],
    help="One chip of the catalog (vendor datasheets), or your own: its memory, bandwidth and peak.",
))
CONFIG_JSON = P.declare(P.Param(
    "config_json", "config.json", "text", EXAMPLE_CONFIG, max_length=hfconfig.MAX_CONFIG_CHARS,
    help="Your model's config.json, from its Hugging Face page (Files and versions); architectures: "
    + ", ".join(hfconfig.known_model_types()) + ".",
))

#: The sandbox's pinned set-up (issue 26: compare two set-ups): the inputs held by its "Pin" button,
#: as ``field:value`` pairs joined by ``;`` (the form share.js writes into the page's address).
PINNED = _compare.pinned_param("sandbox_pinned")
#: The inputs a pinned set-up may hold: catalog models and chips only (a pasted config.json or typed
#: chip numbers are too long for it).
PINNABLE = ("model", "weights", "kv", "context", "batch", "accelerator", "runtime_percent")


def resolve(model: str, accelerator: str, config_json: str, memory_gb: float, bandwidth_gbs: float,
            tflops: float) -> tuple[catalog.Model, catalog.Accelerator]:
    """The sandbox's model and chip: catalog rows, or the pasted config.json
    (:func:`descent.hfconfig.read_config`) and the typed numbers (:func:`descent.custom.accelerator`).

    Raises:
        FieldError: (field ``config_json``) the pasted text is not a config.json the reader takes;
            the message says what is wrong and what is allowed.
    """
    if model == CUSTOM:
        try:
            m = hfconfig.read_config(config_json, source="the pasted config.json")
        except hfconfig.ConfigError as exc:
            raise P.ParamError(CONFIG_JSON.name, exc.message) from None
    else:
        m = catalog.model(model)
    if accelerator == CUSTOM:
        a = custom.accelerator(memory_gb, bandwidth_gbs, tflops)
    else:
        a = catalog.accelerator(accelerator)
    return m, a


def _gb_gib(n: float) -> str:
    """Bytes in GB (1e9) and GiB (2**30), both labelled: ``"88.4 GB (82.3 GiB)"``."""
    return f"{format_bytes(n, 'GB')} ({format_bytes(n, 'GiB')})"


#: Significant figures of a tokens/s ceiling shown to the reader.
RATE_SIG = 3


def rate_text(x: float) -> str:
    """A tokens/s ceiling as text: 3 significant figures, thousands separators (``"291,000"``)
    (:func:`descent.units.format_number`)."""
    return format_number(float(x), RATE_SIG)


# ---------------------------------------------------------------------------------------------
# size_it_yourself
# ---------------------------------------------------------------------------------------------


@widget(
    "size_it_yourself",
    title="Size it yourself",
    description="Choose a model, how its weights and KV cache are stored, how much text each "
    "conversation holds, how many conversations run at once, and a chip. The bar stacks the memory "
    "this needs against the chip's memory; the numbers below give the fastest decode the chip's "
    "memory bandwidth allows.",
    inputs=[
        Input(SANDBOX_MODEL, "select"),
        Input(CONFIG_JSON, "text", when=("model", CUSTOM)),
        Input(P.WEIGHTS, "select"),
        Input(P.KV, "select"),
        Input(P.CONTEXT, "range", log=True),
        Input(P.BATCH, "range", log=True),
        Input(SANDBOX_ACCELERATOR, "select"),
        Input(P.MEMORY_GB, "number", when=("accelerator", CUSTOM)),
        Input(P.BANDWIDTH_GBS, "number", when=("accelerator", CUSTOM)),
        Input(P.TFLOPS, "number", when=("accelerator", CUSTOM)),
        Input(P.RUNTIME, "range"),
        Input(PINNED, "text", placeholder=_compare.PLACEHOLDER),
    ],
    tries=[
        ("Change the weights to BF16.", "Two bytes per weight: the weights grow, and the running example no longer "
            "fits one chip.", {"weights": "bf16"}),
        ("Raise the context and the batch.", "The KV cache outgrows the weights: long chats and many users are paid for in cache.", {"context": 65536, "batch": 8}),
        ("Pick a mixture-of-experts model.", "All of it must be stored, but a step reads only the experts in use, so it decodes faster.", {"model": "gpt-oss-120b"}),
        ("Raise the batch.", "Each conversation slows a little while the chip as a whole writes more tokens per second.", {"batch": 16}),
    ],
)
def size_it_yourself(
    model: str, weights: str, kv: str, context: int, batch: int, accelerator: str,
    runtime_percent: float = P.RUNTIME.default, config_json: str = EXAMPLE_CONFIG,
    memory_gb: float = P.MEMORY_GB.default, bandwidth_gbs: float = P.BANDWIDTH_GBS.default,
    tflops: float = P.TFLOPS.default, pinned: str = PINNED.default,
) -> list[dict]:
    """Views for one sizing (:func:`descent.memory.size` with these arguments); with ``pinned``
    (:data:`PINNED`), first a table that sets the pinned set-up's sizing beside this one
    (:func:`descent.memory.compare`).

    Args:
        model, accelerator: catalog ids, or :data:`CUSTOM`: the model in ``config_json`` (a
        config.json's text) and the chip of ``memory_gb`` GB, ``bandwidth_gbs`` GB/s and
        ``tflops`` TFLOP/s (see :func:`resolve`). weights / kv: precision names. context: tokens
        per sequence, 1 to 20,000,000. batch: sequences, 1 to 100,000. (Validated by the inputs.)

    Returns:
        A fits / does-not-fit note (by how much), a stacked bar (weights, KV cache, runtime
        allowance; free or over capacity; capacity and total in GB and GiB), stats (memory needed
        and memory the chip offers in GB, decode ceiling per sequence and over the batch in
        tokens/s, bytes per decode step in GB, KV bytes per token in KiB),
        then notes: MoE stored vs active parameters, context beyond the model's maximum.

    Raises:
        FieldError: (``config_json``) a pasted config.json that cannot be read.
        ValueError: from :func:`descent.memory.size` for inputs outside its limits.
    """
    m, a = resolve(model, accelerator, config_json, memory_gb, bandwidth_gbs, tflops)
    s = size(m, a, weights, kv, context, batch, runtime_percent)
    kp = numerics.kv_precision(kv)
    w_label = describe(m, weights)
    one = a.name if a.id == CUSTOM else f"one {a.name}"  # "your chip (24 GB, ...)" is one already
    seqs = "sequence" if batch == 1 else "sequences"

    out: list[dict] = [v.export(as_json(s))]
    if pinned.strip():
        out.append(_comparison(parse_pinned(pinned), s))
    out.append(v.note(fit_sentence(s, lambda n: format_bytes(n, "GB"), on=one), "info" if s.fits else "warn"))

    segs = [
        v.segment(
            f"weights ({w_label}, {format_count(s.params_total)} parameters)",
            s.weights_bytes,
            "is-weights",
            format_bytes(s.weights_bytes, "GB"),
        ),
        v.segment(
            f"KV cache ({kp.label}, {format_int(context)} tokens x {format_int(batch)} {seqs})",
            s.kv_cache_bytes,
            "is-kv",
            format_bytes(s.kv_cache_bytes, "GB"),
        ),
        v.segment(
            f"runtime allowance ({format_number(runtime_percent, 3, trim=True)}% of the chip's memory, kept back)",
            s.runtime_bytes,
            "is-other",
            format_bytes(s.runtime_bytes, "GB"),
        ),
    ]
    out.append(
        v.stacked_bar(
            segs,
            s.capacity_bytes,
            caption=f"Memory of {one}: the model's weights and KV cache, and the runtime allowance the chip keeps back",
            capacity_label=f"{a.name} memory",
            fmt_bytes=_gb_gib,
            summary=f"{_gb_gib(s.need_bytes)} needed and {_gb_gib(s.runtime_bytes)} kept back, of "
                    f"{_gb_gib(s.capacity_bytes)} {a.name} memory",
        )
    )

    # The numbers behind the fit sentence (which keeps one: by how much it fits, or not).
    out.append(v.stat("Memory needed", v.fmt(s.need_bytes / GB), "GB", quantity="need_bytes",
                      note=f"= {format_bytes(s.need_bytes, 'GiB')}: weights and KV cache, the same on every chip"))
    out.append(v.stat("Memory the chip offers", v.fmt(s.usable_bytes / GB), "GB",
                      note=f"= {format_bytes(s.usable_bytes, 'GiB')}: its {_gb_gib(s.capacity_bytes)} less the "
                           f"{format_number(runtime_percent, 3, trim=True)}% runtime allowance"))
    if_fit = "" if s.fits else " (if it fit)"
    step = decode_step_bytes(m, weights, kv, context, batch)
    if s.bound == "memory":
        why = (f"memory-bound: {format_rate(s.memory_bandwidth)} of bandwidth / "
               f"{format_bytes(s.bytes_per_decode_step, 'GB')} per step")
    else:
        why = (f"compute-bound: {format_si(s.peak_flops, 'FLOP/s')} {s.compute_precision.upper()} peak / "
               f"{format_si(s.flops_per_decode_step, 'FLOP')} per step")
    out.append(
        v.stat(
            f"Decode ceiling per sequence{if_fit}",
            rate_text(s.decode_tokens_per_s),
            "tokens/s",
            quantity="decode_tokens_per_s",
            note=why,
        )
    )
    out += expected_views(f"Decode per sequence{if_fit}", s.decode_tokens_per_s, a, s.bound)
    out.append(
        v.stat(
            f"Decode ceiling in total{if_fit}",
            rate_text(s.decode_tokens_per_s_total),
            "tokens/s",
            quantity="decode_tokens_per_s_total",
            note=f"{format_int(batch)} {seqs}, one token each per step",
        )
    )
    step_note = (
        f"weights read {format_bytes(step.weights_bytes, 'GB')} + KV cache "
        f"{format_bytes(step.kv_cache_bytes, 'GB')}"
    )
    if not m.tie_embeddings:  # descent.step.read_shares: an untied embedding table is looked up
        step_note += "; fewer weights than the model holds, because the embedding table is looked up, a row per token, not read whole"
    if m.moe is not None and batch > 1:
        step_note += f"; about {format_percent(step.routed_expert_share, decimals=0)} of the experts are touched"
    out.append(
        v.stat("Bytes read per decode step", v.fmt(s.bytes_per_decode_step / GB), "GB", note=step_note,
               quantity="bytes_per_step")
    )
    if s.compute_bound_batch is None:
        roof = ("decode never turns compute-bound, up to the batch limit: each sequence's KV cache takes "
                "longer to read than its arithmetic")
    elif s.compute_bound_batch == 1:
        roof = "decode turns compute-bound already at batch 1"
    else:
        roof = f"decode turns compute-bound from batch {format_int(s.compute_bound_batch)} on, at this context"
    out.append(
        v.stat(
            "Compute ceiling in total",
            rate_text(s.decode_compute_tokens_per_s * batch),
            "tokens/s",
            quantity="decode_compute_tokens_per_s_total",
            note=f"the most {format_si(s.peak_flops, 'FLOP/s')} of {s.compute_precision.upper()} arithmetic allows "
            f"over the batch; {roof}",
        )
    )
    out.append(
        v.stat(
            "KV cache per token",
            v.fmt(s.kv_bytes_per_token / KiB),
            "KiB",
            quantity="kv_bytes_per_token",
            note=f"one sequence, all {m.num_layers} layers, keys and values, {kp.label}",
        )
    )

    moe = moe_line(m)
    if moe is not None:
        out.append(v.note(moe, "info"))
    if s.beyond_max_context:
        out.append(
            v.note(
                f"{format_int(context)} tokens is more than {m.name} was built for ({format_int(m.max_context)} tokens): the "
                f"memory is what the cache would take, but the model's answers beyond its limit are not to be trusted.",
                "warn",
            )
        )
    return out


# ---------------------------------------------------------------------------------------------
# decode_across_field
# ---------------------------------------------------------------------------------------------


def field_bars(rows: list[Sizing]) -> list[dict]:
    """``bar_list`` rows for :func:`across_field`'s result: won't-fit chips greyed, with a note."""
    bars = []
    for s in rows:
        a = catalog.accelerator(s.accelerator)
        note = "" if s.fits else fit_cell(s, lambda n: format_bytes(n, "GB"))
        bars.append(
            v.bar(
                a.name,
                s.decode_tokens_per_s,
                display=f"{rate_text(s.decode_tokens_per_s)} tokens/s",
                greyed=not s.fits,
                note=note,
            )
        )
    return bars


@widget(
    "decode_across_field",
    title="Decode speed across the field",
    description="One model on every chip of the catalog: the fastest decode each chip's memory "
    "bandwidth allows for one conversation. Greyed chips cannot hold the model.",
    inputs=[Input(P.MODEL, "select"), Input(P.WEIGHTS_UNIFORM, "select"), Input(P.CONTEXT, "range", log=True)],
    tries=[
        ("Switch the weights to BF16.", "Every bar shrinks: more bytes to read per token, and fewer chips can hold the model.",
         {"weights": "bf16"}),
        ("Pick a small model.", "Nearly every chip fits it, and the order of the bars is the order of their memory bandwidth.", {"model": "llama-3.1-8b"}),
    ],
)
def decode_across_field(model: str, weights: str, context: int) -> list[dict]:
    """Views: a log-scale bar list of the decode ceiling per sequence on every accelerator.

    KV cache in BF16, one sequence (:data:`FIELD_KV`, :data:`FIELD_BATCH`). Chips that cannot hold weights + KV cache +
    runtime allowance are greyed and say "won't fit".

    Raises:
        ValueError: from :func:`across_field`.
    """
    kv, batch = FIELD_KV, FIELD_BATCH
    rows, left = split_field(across_field(model, weights, kv, context, batch))
    m = catalog.model(model)
    n_fit = sum(1 for s in rows if s.fits)
    # The count over the whole catalog, as Part 5's prose prints it (quantity chips_that_fit over
    # count what=accelerators): the machines left out of the bars are counted too.
    n_fit_all = n_fit + sum(1 for s in left if s.fits)
    out = [
        v.bar_list(
            field_bars(rows),
            log=True,
            caption=f"{m.name}, {numerics.precision(weights).label} weights, {format_int(context)} tokens, "
            f"one sequence: decode ceiling, tokens/s",
        )
    ]
    out.append(
        v.note(
            f"{n_fit_all} of the {len(rows) + len(left)} chips in the catalog hold it on their own"
            + (f" ({n_fit} of the {len(rows)} drawn)" if left and n_fit != n_fit_all else "")
            + "; on the others the number is what their bandwidth would allow if it fit.",
            "info" if n_fit else "warn",
        )
    )
    if left:
        out.append(v.note(sharded_sentence(left), "info"))
    return out


def parse_pinned(text: str) -> dict:
    """A pinned set-up (:data:`PINNED`) as the sizing's inputs, every one checked by its own
    parameter; the inputs it does not name take their defaults (:func:`_compare.parse_pinned`).

    Raises:
        FieldError: (field ``pinned``) a pair that is not ``field:value``, a field it may not hold,
            or a value its parameter refuses (that parameter's message).
    """
    params = {"model": P.MODEL, "weights": P.WEIGHTS, "kv": P.KV, "context": P.CONTEXT, "batch": P.BATCH,
              "accelerator": P.ACCELERATOR, "runtime_percent": P.RUNTIME}
    return _compare.parse_pinned(text, params, PINNED.label)


def _comparison(pinned: dict, now: Sizing) -> dict:
    """The pinned set-up's sizing beside ``now``: each output with both values, now / pinned and
    which is better (:func:`descent.memory.compare`)."""
    before = size(pinned["model"], pinned["accelerator"], pinned["weights"], pinned["kv"], pinned["context"],
                  pinned["batch"], pinned["runtime_percent"])

    def cells(c):
        # Units in the row's label, bare numbers in the cells: five columns fit a phone's width.
        if c.field == "fits":
            return c.label, _compare.yes_no(c.before), _compare.yes_no(c.after)
        if c.field in SPARE_FIELDS:  # memory left: a negative one is a shortfall, not a number to divide
            gb = lambda x: v.fmt(x / GB)  # noqa: E731
            return f"{c.label}, GB", spare_text(c.before, gb, "GB"), spare_text(c.after, gb, "GB")
        if c.field.endswith("bytes"):
            return f"{c.label}, GB", v.fmt(c.before / GB), v.fmt(c.after / GB)
        return f"{c.label}, tokens/s", rate_text(c.before), rate_text(c.after)

    what = _compare.describe(pinned, ("model", "weights", "kv", "context", "batch", "accelerator"))
    return _compare.table(compare(before, now), cells, what)
