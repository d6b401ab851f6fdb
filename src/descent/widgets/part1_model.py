"""Part 1 widgets ("The transformer"): embeddings, the layer stack, attention and mixture-of-experts.

* ``embedding_neighbours``: pick a word; its nearest tokens in SmolLM2-135M's embedding table by
  cosine similarity over the whole vocabulary, and an analogy check (``b - a + c``), from
  ``descent/data/embeddings.json`` (exported at build by :mod:`descent.trace.embeddings`).
* ``stack_calculator``: attention + FFN weights of a stack of identical blocks
  (:func:`descent.transformer.stack_params`).
* ``attention_fan``: where the last prompt token's attention goes, for one layer and head of the
  real SmolLM2 trace (``descent/data/traces.json``, exported by the trace pipeline).
* ``qkv_example``: a 4-token, d = 4 worked example of scaled dot-product attention
  (:func:`descent.transformer.attend`).
* ``moe_router``: top-k routing of one token in a catalog MoE model with illustrative router
  logits, and the computed total and active parameters (:func:`descent.transformer.param_counts`).

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

import dataclasses
import math
import random
import zlib

from descent import catalog, transformer
from descent import params as P
from descent.recorded import embedding_data  # noqa: F401  (re-exported)
from descent.recorded import trace_data as _recorded
from descent.units import format_count, format_fixed, format_int, format_percent, visible_whitespace
from descent.widgets import Constraint, FieldError, Input, Look, model_options, part0, widget
from descent.widgets import views as v

__all__ = [
    "MOE_MODELS",
    "QKV_PRESETS",
    "ROUTER_TOKENS",
    "attention_fan",
    "fan_views",
    "embedding_neighbours",
    "moe_router",
    "qkv_example",
    "router_logits",
    "stack_calculator",
    "trace_prompts",
]

#: Percent per unit fraction.
PERCENT = 100


def _show_token(text: str) -> str:
    """A token's text with its whitespace made visible (:func:`descent.units.visible_whitespace`); an empty text reads "(empty)"."""
    return visible_whitespace(text) or "(empty)"


# ---------------------------------------------------------------------------------------------
# embedding_neighbours
# ---------------------------------------------------------------------------------------------


def _word_options() -> list[tuple[str, str]]:
    return [(w["word"], f"{w['word']} ({w['group']})") for w in embedding_data()["words"]]


def _analogy_options() -> list[tuple[str, str]]:
    return [(str(i), a["label"]) for i, a in enumerate(embedding_data()["analogies"])]


#: A word of the embedding slice.
WORD = P.declare(P.Param(
    "word", "Word", "choice", "king", choices=_word_options,
    help="Each word is one token, with the leading space it has mid-sentence.",
))
#: An analogy of the embedding slice, by index.
ANALOGY = P.declare(P.Param("analogy", "Analogy", "choice", "0", choices=_analogy_options,
                            help="Add and subtract whole vectors, then look for the nearest word."))


@widget(
    "embedding_neighbours",
    title="Nearest tokens in SmolLM2's embedding table",
    description=(
        "Cosine similarity between the chosen word's 576-number vector and every one of the "
        "49,152 rows of the real embedding table. The analogy adds and subtracts whole vectors."
    ),
    inputs=[
        Input(WORD, "select"),
        Input(ANALOGY, "select"),
    ],
    tries=[
        ("Pick a colour.", "Its nearest rows are other colours: the table has learnt groups of words.", {"word": "red"}),
        ("Pick a country.", "Its nearest rows are other countries and words tied to it, such as its language; "
         "its capital is not among them.", {"word": "France"}),
        ("Try each analogy.", "The expected word is near the top, but one of the input words often ranks above it; "
         "set the input words aside and it is usually first.", {"analogy": "1"}),
    ],
)
def embedding_neighbours(word: str, analogy: str) -> list[dict]:
    data = embedding_data()
    row = next(w for w in data["words"] if w["word"] == word)
    a = data["analogies"][int(analogy)]
    bars = [
        v.bar(_show_token(n["text"]), n["cosine"], display=f"{format_fixed(n['cosine'], 3)}") for n in row["neighbours"]
    ]
    top = [
        v.bar(
            _show_token(t["text"]),
            t["cosine"],
            display=f"{format_fixed(t['cosine'], 3)}",
            greyed=t["text"].strip() in (a["a"], a["b"], a["c"]),
            note="an input word" if t["text"].strip() in (a["a"], a["b"], a["c"]) else "",
        )
        for t in a["top"]
    ]
    return [
        v.stat("Token id", row["id"], note=f"'{_show_token(row['text'])}'"),
        v.stat(
            "Closest other token",
            _show_token(row["neighbours"][0]["text"]),
            note=f"cosine {format_fixed(row['neighbours'][0]['cosine'], 3)}",
        ),
        v.bar_list(
            bars,
            caption=f"The {len(bars)} tokens nearest to '{_show_token(row['text'])}' "
            f"(cosine similarity, 1 = same direction), out of {format_int(data['vocab_size'])}",
            max=1,
        ),
        v.bar_list(top, caption=f"{a['label']}: the closest tokens to the result vector (cosine)", max=1),
        v.note(
            f"'{a['expected']}' ranks {a['rank_all']} among all tokens (cosine {format_fixed(a['cosine'], 3)}) and "
            f"{a['rank_excluding_inputs']} once the three input words are set aside."
        ),
    ]


# ---------------------------------------------------------------------------------------------
# stack_calculator
# ---------------------------------------------------------------------------------------------

#: Defaults: the core's example stack (:data:`descent.transformer.STACK_EXAMPLE`).
STACK_DEFAULTS = transformer.STACK_EXAMPLE

#: The normalisation of the stack: GPT-2 and BERT use LayerNorm, the catalog's models RMSNorm.
NORM = P.declare(P.Param(
    "norm", "Normalisation", "choice", STACK_DEFAULTS["norm"], key="stack_norm",
    choices=[("layernorm", "LayerNorm (gain and bias: GPT-2, BERT)"), ("rmsnorm", "RMSNorm (gain only: Llama, Qwen...)")],
    help="Norm weights are counted beside the total, not in it.",
))


#: The stack's rules between inputs: each query head gets a whole share of d_model, and the query
#: heads split evenly into key/value groups (GQA; Ainslie et al. 2023, section 2). Declared once:
#: the sliders step through the values they allow and a broken rule is reported under the control
#: the reader moved.
STACK_RULES = (
    Constraint(
        ("d_model", "heads"),
        ok=lambda d_model, heads: d_model % heads == 0,
        messages={
            "d_model": lambda d_model, heads: f"d_model must be a multiple of the query heads ({format_int(heads)}) "
            f"so that each head gets a whole share; {format_int(d_model)} is not.",
            "heads": lambda d_model, heads: f"Query heads must divide d_model ({format_int(d_model)}) so that each "
            f"head gets a whole share; {format_int(heads)} does not.",
        },
    ),
    Constraint(
        ("heads", "kv_heads"),
        ok=lambda heads, kv_heads: heads % kv_heads == 0,
        messages={
            "heads": lambda heads, kv_heads: f"Query heads must be a multiple of the key/value heads "
            f"({format_int(kv_heads)}), so each key/value head serves the same number; {format_int(heads)} is not.",
            "kv_heads": lambda heads, kv_heads: f"Key/value heads must divide the query heads ({format_int(heads)}), "
            f"so each serves the same number of them; {format_int(kv_heads)} does not.",
        },
    ),
)


@widget(
    "stack_calculator",
    title="Count the weights of a layer stack",
    description="Attention and feed-forward weight matrices of L identical blocks. "
    "Embeddings, the output head, biases and norm weights are not included.",
    inputs=[
        Input(P.LAYERS.but(default=STACK_DEFAULTS["layers"]), "range"),
        Input(P.D_MODEL.but(default=STACK_DEFAULTS["d_model"]), "range"),
        Input(P.HEADS.but(default=STACK_DEFAULTS["heads"]), "range"),
        Input(P.KV_HEADS.but(default=STACK_DEFAULTS["kv_heads"]), "range"),
        Input(P.FFN.but(default=STACK_DEFAULTS["ffn"]), "range"),
        Input(P.GATED.but(default=STACK_DEFAULTS["gated"]), "toggle"),
        Input(NORM, "select"),
    ],
    constraints=STACK_RULES,
    tries=[
        ("Double the layers.", "Every count doubles: the blocks are identical, so weights grow in step with depth.",
         {"layers": 24}),
        ("Double d_model and the FFN width with it.",
         "The total roughly quadruples: every matrix is d_model wide on at least one side.", {"d_model": 1536, "ffn": 6144}),
        ("Lower the key/value heads to 1 (MQA).", "Only the K and V row shrinks; Q, O and the FFN stay the same.",
         {"kv_heads": 1}),
        ("Turn on the gated FFN.", "The feed-forward weights grow by half: three matrices instead of two.",
         {"gated": True}),
    ],
)
def stack_calculator(layers, d_model, heads, kv_heads, ffn, gated, norm) -> list[dict]:
    s = transformer.stack_params(layers, d_model, heads, kv_heads, ffn, gated, norm=norm)
    head_dim = d_model // heads
    share = s.ffn / s.total
    return [
        v.stat("Attention + FFN weights", format_count(s.total), note=f"{format_int(s.total)} exactly"),
        v.stat("Attention", format_count(s.attention), note=f"{format_int(s.attention_per_layer)} per layer"),
        v.stat(
            "Feed-forward",
            format_count(s.ffn),
            note=f"{format_int(s.ffn_per_layer)} per layer, {format_percent(share, decimals=0)} of the total",
        ),
        v.table(
            ["Part", "Count", "Per layer"],
            [
                ["Q and O", "2 × d_model × heads × d_head", 2 * d_model * heads * head_dim],
                ["K and V", "2 × d_model × KV heads × d_head", 2 * d_model * kv_heads * head_dim],
                ["FFN", f"{3 if gated else 2} × d_model × FFN width", s.ffn_per_layer],
                ["LayerNorm, gain and bias (not in the total)", "2 × 2 × d_model", s.norms_per_layer]
                if norm == "layernorm"
                else ["RMSNorm, gain only (not in the total)", "2 × d_model", s.norms_per_layer],
            ],
            caption=f"Where the count comes from (d_head = d_model / heads = {format_int(head_dim)})",
            numeric=[False, False, True],
        ),
    ]


# ---------------------------------------------------------------------------------------------
# attention_fan
# ---------------------------------------------------------------------------------------------


def trace_prompts() -> list[dict]:
    """The prompts of ``traces.json``: a list of ``{"id", "prompt", "tokens", "attention_last", ...}``.

    The file is read once, by :func:`descent.widgets.part0.trace_data` (``attention_last`` is
    (L, H, T) per prompt; layout in :mod:`descent.trace.export`).
    """
    return _recorded()["prompts"]


def _prompt_options() -> list[tuple[str, str]]:
    return [(p["id"], p.get("prompt", p["id"])) for p in trace_prompts()]


def _trace_shape() -> tuple[int, int]:
    try:
        att = trace_prompts()[0]["attention_last"]
        return len(att), len(att[0])
    except (IndexError, KeyError, TypeError):
        c = catalog.model("smollm2-135m")
        return c.num_layers, c.num_heads


_LAYERS, _HEADS = _trace_shape()

#: A layer of the traced model, counted from 1.
TRACE_LAYER = P.declare(P.Param("layer", "Layer", "int", 1, key="trace_layer", min=1, max=_LAYERS,
                                help="Which of the traced model's layers, counted from 1."))
#: A head of the traced model, counted from 1.
TRACE_HEAD = P.declare(P.Param("head", "Head", "int", 1, key="trace_head", min=1, max=_HEADS,
                               help="Which attention head of that layer, counted from 1."))


def head_tops(prompt: str, layer: int) -> list[int]:
    """For each head of ``layer`` (from 1) on the traced ``prompt``: the prompt position (from 0)
    its last token gives the most weight."""
    p = next(x for x in trace_prompts() if x["id"] == prompt)
    return [max(range(len(w)), key=lambda i: w[i]) for w in p["attention_last"][layer - 1]]


def _hint_first_token() -> dict:
    """The attention fan's first hint: the first layer of the default prompt where most heads look
    at the first token, and a head there that does not."""
    prompt = _prompt_options()[0][0]
    for layer in range(1, _LAYERS + 1):
        tops = head_tops(prompt, layer)
        if 2 * tops.count(0) > len(tops) and any(tops):
            return {"layer": layer, "head": next(h for h, t in enumerate(tops, start=1) if t),
                    "on_first": tops.count(0), "heads": len(tops)}
    raise ValueError(f"attention_fan: no layer of {prompt!r} has most heads on the first token")


def _hint_content_word() -> dict:
    """The attention fan's second hint: in the later two thirds of the layers of the default prompt,
    the layer with the most heads on one token other than the first and the last; its first such
    head."""
    prompt = _prompt_options()[0][0]
    n = len(next(x for x in trace_prompts() if x["id"] == prompt)["tokens"])
    best = (0, 0, 0)
    for layer in range(_LAYERS // 3 + 1, _LAYERS + 1):
        tops = head_tops(prompt, layer)
        for pos in range(1, n - 1):
            if tops.count(pos) > best[0]:
                best = (tops.count(pos), layer, tops.index(pos) + 1)
    return {"layer": best[1], **({"head": best[2]} if best[2] != TRACE_HEAD.default else {})}


#: The first hint's layer, its count of heads on the first token and a head that looks elsewhere.
_FIRST = _hint_first_token()


@widget(
    "attention_fan",
    title="Where the last token looks",
    description=(
        "Recorded from SmolLM2-135M on the site's prompts: the attention weights of the last "
        "prompt token over every prompt token, for one layer and one head. Each row sums to 100%."
    ),
    inputs=[
        Input(part0.PROMPT.but(choices=_prompt_options, default=_prompt_options()[0][0]), "select"),
        Input(TRACE_LAYER, "range"),
        Input(TRACE_HEAD, "range"),
    ],
    tries=[
        (f"Step through the heads of layer {_FIRST['layer']}.",
         f"It is the first layer where most heads ({_FIRST['on_first']} of {_FIRST['heads']}) put most of "
         "their weight on the first token; the layers below it do so less, and a few heads here look elsewhere.",
         {"layer": _FIRST["layer"], "head": _FIRST["head"]}),
        ("Go to a middle or late layer.",
         "Some heads put most of their weight on a content word: in the capital question, the country.",
         _hint_content_word()),
        ("Watch the spread.", "Near 1 the head looks at one token; a large spread means it averages many.",
         Look(html="Spread")),
    ],
)
def attention_fan(prompt: str, layer: int, head: int) -> list[dict]:
    p = next(x for x in trace_prompts() if x["id"] == prompt)
    weights = p["attention_last"][layer - 1][head - 1]  # (T,)
    tokens = p["tokens"]
    if len(weights) != len(tokens):
        raise ValueError(f"trace {prompt!r}: {len(weights)} attention weights for {len(tokens)} tokens")
    return fan_views([t["text"] for t in tokens], weights, layer, head)


def fan_views(tokens: list[str], weights: list[float], layer: int, head: int) -> list[dict]:
    """The fan's views for the last of ``tokens`` looking at all of them with ``weights`` (same
    length, summing to 1): the most-attended token, the spread (2 to the entropy in bits) and one
    bar per token. Shared by ``attention_fan`` and Part 1's any-token player."""
    top = max(range(len(weights)), key=lambda i: weights[i])
    rows = [
        v.bar(
            f"{i + 1}. {_show_token(t)}",
            w * PERCENT,
            display=f"{format_percent(w, decimals=1)}",
            cls="is-top" if i == top else "",
            note="the token doing the looking" if i == len(tokens) - 1 else "",
        )
        for i, (t, w) in enumerate(zip(tokens, weights, strict=True))
    ]
    ent = -sum(w * math.log2(w) for w in weights if w > 0)
    return [
        v.stat(
            "Most attention on",
            _show_token(tokens[top]),
            note=f"position {top + 1}, {format_percent(weights[top], decimals=1)}",
        ),
        v.stat(
            "Spread",
            f"{format_fixed(2**ent, 1)}",
            "tokens",
            note="about how many tokens share the weight: as if it were split evenly over this many",
        ),
        v.bar_list(
            rows,
            caption=f"Layer {layer}, head {head}: attention of "
            f"'{_show_token(tokens[-1])}' over the prompt",
            max=PERCENT,
        ),
    ]


# ---------------------------------------------------------------------------------------------
# qkv_example
# ---------------------------------------------------------------------------------------------

#: Worked examples: four tokens, each with a key and a value of d = 4 numbers; the query is the
#: last token's. Made-up numbers chosen to show one behaviour each (not from a model).
QKV_PRESETS: dict[str, dict] = {
    "pronoun": {
        "label": "'it' looks for a noun",
        "tokens": ("the", "cat", "slept", "it"),
        "query": (1.0, 0.0, 1.0, 0.0),
        "keys": ((0.0, 1.0, 0.0, 0.0), (1.0, 0.0, 1.0, 0.5), (0.0, 0.5, 0.0, 1.0), (0.5, 0.0, 0.5, 0.0)),
        "values": ((0.1, 0.0, 0.0, 0.2), (1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0)),
    },
    "two": {
        "label": "two keys match equally",
        "tokens": ("red", "and", "blue", "paint"),
        "query": (0.0, 1.0, 0.0, 1.0),
        "keys": ((0.0, 1.0, 0.0, 1.0), (0.5, 0.0, 0.5, 0.0), (0.0, 1.0, 0.0, 1.0), (0.0, 0.5, 0.5, 0.0)),
        "values": ((1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0)),
    },
    "flat": {
        "label": "nothing stands out",
        "tokens": ("so", "we", "went", "home"),
        "query": (0.5, 0.5, 0.5, 0.5),
        "keys": ((0.5, 0.0, 0.0, 0.5), (0.0, 0.5, 0.5, 0.0), (0.5, 0.5, 0.0, 0.0), (0.0, 0.0, 0.5, 0.5)),
        "values": ((1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)),
    },
}


def _num(x: float) -> str:
    """Up to two decimals, trailing zeros dropped: 1.0 -> "1", 0.5 -> "0.5", 0.157 -> "0.16"."""
    text = f"{format_fixed(x, 2)}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _vec(xs) -> str:
    return "[" + ", ".join(_num(x) for x in xs) + "]"


#: The hand-worked attention example's inputs.
QKV_PRESET = P.declare(P.Param("preset", "Example", "choice", "pronoun",
                               choices=lambda: [(k, p["label"]) for k, p in QKV_PRESETS.items()],
                               help="Four tokens with made-up 4-number queries, keys and values."))
QKV_SCALE = P.declare(P.Param(
    "scale", "Multiply queries and keys by", "float", 1.0, min=0.25, max=8.0, step=0.25,
    help="Larger vectors give larger dot products: watch the softmax sharpen.",
))
QKV_DIVIDE = P.declare(P.Param("divide", "Divide by the square root of d", "bool", True,
                               help="Attention divides the scores by the square root of the key width."))


@widget(
    "qkv_example",
    title="Attention by hand: four tokens, d = 4",
    description="The last token's query is compared with every key; the scores are divided by "
    "the square root of d, turned into weights by a softmax, and the values are "
    "mixed with those weights.",
    inputs=[
        Input(QKV_PRESET, "select"),
        Input(QKV_SCALE, "range"),
        Input(QKV_DIVIDE, "toggle"),
    ],
    tries=[
        ("Raise the multiplier.", "The scores grow and the softmax sharpens until one token takes nearly all the weight.",
         {"scale": 4.0}),
        ("Turn off the division.", "The same sharpening comes sooner: dividing keeps the scores in a range where softmax stays soft.",
         {"divide": False}),
        ("Pick 'two keys match equally'.", "The two matching tokens share the weight, and the output is a blend of their values.",
         {"preset": "two"}),
    ],
)
def qkv_example(preset: str, scale: float, divide: bool) -> list[dict]:
    p = QKV_PRESETS[preset]
    q = [x * scale for x in p["query"]]
    keys = [[x * scale for x in k] for k in p["keys"]]
    r = transformer.attend(q, keys, p["values"], scale=divide)
    d = len(q)
    rows = [
        [tok, f"{format_fixed(s, 3)}", f"{format_fixed(sc, 3)}", f"{format_percent(w, decimals=1)}", _vec(k), _vec(val)]
        for tok, k, val, s, sc, w in zip(
            p["tokens"], keys, p["values"], r["scores"], r["scaled"], r["weights"], strict=True
        )
    ]
    top = max(r["weights"])
    return [
        v.stat("Query of", f"'{p['tokens'][-1]}'", note=_vec(q)),
        v.stat(
            "Largest weight",
            f"{format_fixed(top * PERCENT, 1)}",
            "%",
            note=f"d = {d}, divisor {format_fixed(math.sqrt(d), 0)}" if divide else "no division",
        ),
        v.table(
            ["Token", "q · k", "q · k / √d" if divide else "q · k (undivided)", "Weight", "Key k", "Value v"],
            rows,
            caption="Scores, scaled scores and softmax weights",
            numeric=[False, True, True, True, False, False],
        ),
        v.kv(
            [("Output = sum of weight x value", _vec(r["output"]))], caption="The result for the last token"
        ),
    ]


# ---------------------------------------------------------------------------------------------
# moe_router
# ---------------------------------------------------------------------------------------------

#: The widget's default model.
MOE_DEFAULT = "gpt-oss-120b"

#: The catalog's MoE models, default first, then catalog order.
MOE_MODELS = (MOE_DEFAULT, *(i for i, m in catalog.models().items() if m.moe is not None and i != MOE_DEFAULT))

#: Example tokens; each seeds the illustrative router logits.
ROUTER_TOKENS = (" the", " Paris", " 7", "def", " because")

#: The token routed, and how many experts it goes to.
ROUTER_TOKEN = P.declare(P.Param("token", "Token", "choice", ROUTER_TOKENS[0], key="router_token",
                                 choices=lambda: [(t, _show_token(t)) for t in ROUTER_TOKENS],
                                 help="Each token seeds its own illustrative router scores."))
ROUTER_K = P.declare(P.Param(
    "k", "Experts per token k (0 = the model's own)", "int", 0, key="router_k", min=0, max=256,
    help="The model's own top-k gives its published active count; another k is recomputed.",
))

#: Standard deviation of the illustrative router logits (dimensionless): an arbitrary spread that
#: makes a few experts stand out, as trained routers do; NOT measured from any model.
ROUTER_LOGIT_STD = 1.5

#: Experts shown in the bar list: the chosen ones, or at least this many of the highest scores.
ROUTER_BARS_MIN = 12

#: Experts per row of the grid; :data:`GRID_COLUMNS_WIDE` when a layer has more than
#: :data:`GRID_WIDE_FROM` experts (Kimi K2's 384, Qwen3-Next's 512), so the grid stays short.
GRID_COLUMNS = 8
GRID_COLUMNS_WIDE = 16
GRID_WIDE_FROM = 256


def router_logits(model_id: str, token: str, experts: int) -> list[float]:
    """Illustrative router logits for ``experts`` experts: Gaussian, seeded by model id and token.

    Deterministic (``random.Random`` seeded with a CRC-32 of ``"model|token"``), identical in
    CPython and Pyodide. NOT the model's router: we do not run these models.
    """
    rng = random.Random(zlib.crc32(f"{model_id}|{token}".encode()))
    return [rng.gauss(0.0, ROUTER_LOGIT_STD) for _ in range(experts)]


def _experts(model: str) -> int:
    return catalog.model(model).moe.num_experts


#: k can be at most the model's number of experts (0 picks the model's own k).
ROUTER_RULES = (
    Constraint(
        ("model", "k"),
        ok=lambda model, k: k <= _experts(model),
        messages={
            "model": lambda model, k: f"{catalog.model(model).name} has only {format_int(_experts(model))} experts, "
            f"fewer than the {format_int(k)} experts per token set below: lower k to at most "
            f"{format_int(_experts(model))} first, or set it to 0 for the model's own.",
            "k": lambda model, k: f"Experts per token must be 0 to {format_int(_experts(model))} for "
            f"{catalog.model(model).name} ({format_int(_experts(model))} experts), got {format_int(k)}.",
        },
    ),
)


@widget(
    "moe_router",
    title="Route one token through a mixture-of-experts layer",
    description=(
        "The router scores every expert and the token goes to the top k. The scores here are "
        "illustrative random numbers seeded by the token (we do not run these models); the "
        "parameter counts are computed from each model's published configuration."
    ),
    inputs=[
        Input(P.MODEL.but(default=MOE_MODELS[0], choices=lambda: model_options(MOE_MODELS)), "select"),
        Input(ROUTER_TOKEN, "select"),
        Input(ROUTER_K, "range"),
    ],
    constraints=ROUTER_RULES,
    tries=[
        ("Raise k.", "More experts light up and the active count grows, while the total stays put: "
         "every expert is stored whether or not it runs.", {"k": 8}),
        ("Switch to Mixtral 8x7B.", "Only eight experts, two per token: a quarter of the expert weights run.",
         {"model": "mixtral-8x7b"}),
        ("Pick another token.", "Different experts win; the counts do not change, because they depend on k, not on the token.",
         {"token": " Paris"}),
    ],
)
def moe_router(model: str, token: str, k: int) -> list[dict]:
    m = catalog.model(model)
    E, own_k = m.moe.num_experts, m.moe.experts_per_token
    if k > E:
        raise FieldError("k", f"Experts per token must be 0 to {E} for {m.name} ({E} experts), got {k}")
    k = k or own_k
    scoring = m.moe.router_scoring  # catalog: config.json scoring_func (softmax unless stated)
    logits = router_logits(model, token, E)
    chosen = dict(transformer.route(logits, k, scoring, m.moe.router_normalize))
    if scoring == "softmax":
        scores = transformer.softmax(logits)
        score_name = "softmax over all experts"
    else:
        scores = [1 / (1 + math.exp(-x)) for x in logits]
        score_name = "sigmoid"
    counts = transformer.param_counts(
        m if k == own_k else dataclasses.replace(m, moe=dataclasses.replace(m.moe, experts_per_token=k))
    )
    order = sorted(range(E), key=lambda i: (-scores[i], i))[: max(k, ROUTER_BARS_MIN)]
    bars = [
        v.bar(
            f"Expert {i}",
            scores[i],
            display=f"{format_fixed(scores[i], 3)}",
            cls="is-selected" if i in chosen else "",
            greyed=i not in chosen,
            note=f"chosen: weight {format_percent(chosen[i], decimals=1)}" if i in chosen else "",
        )
        for i in order
    ]
    cols = GRID_COLUMNS_WIDE if E > GRID_WIDE_FROM else GRID_COLUMNS
    grid = [
        [
            v.cell(
                "is-used" if i in chosen else "is-free",
                title=f"Expert {i}: score {format_fixed(scores[i], 3)}, " + ("chosen" if i in chosen else "not chosen"),
            )
            for i in range(r, min(r + cols, E))
        ]
        for r in range(0, E, cols)
    ]
    if len(grid[-1]) != len(grid[0]):  # pad the last row (E not a multiple of the row width)
        grid[-1] += [v.cell("", title="no expert") for _ in range(len(grid[0]) - len(grid[-1]))]
    share = counts.active / counts.total
    notes = []
    if k == own_k and m.params_active_published:
        how, theirs = transformer.published_active_convention(m)
        notes.append(
            v.note(
                f"{m.name} routes each token to {own_k} of {E} experts. Active here means every "
                f"parameter except the experts a token does not use, the whole input embedding table "
                f"included (a token reads one row of it): {format_count(counts.active)}. The published "
                f"{format_count(m.params_active_published)} {how} ({format_count(theirs)} counted that way)."
            )
        )
    elif k != own_k:
        notes.append(
            v.note(
                f"{m.name} itself uses k = {own_k}; the active count is recomputed for k = {k}.", tone="warn"
            )
        )
    if m.moe.num_shared_experts:
        notes.append(
            v.note(
                f"Every token also runs {m.moe.num_shared_experts} shared expert(s) in each "
                f"MoE layer, counted as active."
            )
        )
    if scoring == "sigmoid":
        how = ("the chosen experts' weights are their sigmoids divided by their sum" if m.moe.router_normalize
               else "each chosen expert is weighted by its own sigmoid, not rescaled to add up to 1")
        notes.append(v.note(f"{m.name}'s router scores each expert with a sigmoid; {how}."))
    return [
        v.stat("Total parameters", format_count(counts.total), note=f"{format_int(counts.total)}"),
        v.stat("Active per token", format_count(counts.active), note=f"{format_int(counts.active)}"),
        v.stat("Share active", f"{format_fixed(share * PERCENT, 1)}", "%", note=f"k = {k} of {E} experts per layer"),
        v.cell_grid(
            grid,
            caption=f"All {E} experts of one MoE layer; chosen for '{_show_token(token)}' in colour",
            legend=[("is-used", "chosen"), ("is-free", "not chosen")],
        ),
        v.bar_list(
            bars,
            caption=f"Router scores ({score_name}), highest first; the chosen "
            "experts (in bold) are mixed with the weights shown",
            max=max(scores),
        ),
        *notes,
    ]
