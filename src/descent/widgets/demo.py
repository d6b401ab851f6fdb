"""``kv_demo``: a small widget that proves the runtime end to end (build, worker, browser).

It computes the KV-cache size of a plain GQA transformer from five inputs. The defaults are the
shape of Llama 3.1 8B from the catalog (its config.json: num_hidden_layers 32,
num_key_value_heads 8, head_dim 128) in BF16; preset chips (a clickable output) load the shape of
each catalog model whose every layer caches every token (no MLA, no window or chunk, no
linear-attention layers), which is
what this formula describes.

    KV bytes per token = 2 (one K and one V vector) x L x K x d_head x bytes per element
    KV bytes           = KV bytes per token x T

Source: the KV-cache size of multi-head / grouped-query attention, e.g. Pope et al. 2022,
"Efficiently Scaling Transformer Inference", section 3.1 (memory of the KV cache), and Ainslie
et al. 2023, "GQA", section 2 (K key/value heads shared by groups of query heads).
"""

from __future__ import annotations

from descent import catalog
from descent import params as P
from descent.units import GiB, KiB, format_int
from descent.widgets import FieldError, Input, widget
from descent.widgets import views as v

#: The catalog model whose shape gives the defaults.
DEFAULT_MODEL = "llama-3.1-8b"

#: K and V: the cache stores two vectors per layer, per KV head, per token.
KV_TENSORS = 2

#: Bytes per KV element of the precisions offered, by name (FP32 4, BF16/FP16 2, FP8 1).
PRECISION_BYTES = {"fp32": 4, "bf16": 2, "fp8": 1}



def _gib(n: int) -> str:
    return f"{v.fmt(n / GiB)} GiB"


def preset_models() -> list[catalog.Model]:
    """Catalog models the plain formula describes: no MLA (compressed latent cache), no sliding
    window or chunk (layers that keep only the last W tokens) and no linear-attention layers (a
    fixed state instead of a cache), in catalog order."""
    return [m for m in catalog.models().values()
            if m.mla is None and m.sliding is None and m.chunked is None and m.linear_attention is None]


_DEFAULT = catalog.model(DEFAULT_MODEL)
_HEAD_DIMS = sorted({m.head_dim for m in preset_models()} | {_DEFAULT.head_dim})

#: The demo offers the head widths the catalog's models use.
HEAD_DIM = P.declare(P.Param(
    "head_dim", "Head dimension", "choice", _DEFAULT.head_dim, key="kv_demo_head_dim",
    choices=[(d, str(d)) for d in _HEAD_DIMS],
    help="d_head: width of one K or V vector (the values the catalog's models use).",
))


@widget(
    "kv_demo",
    title="KV cache size",
    description="How many bytes the KV cache holds for one sequence: two vectors (K and V) per layer, "
    "per KV head, per token.",
    inputs=[
        Input(P.LAYERS.but(default=_DEFAULT.num_layers, help="L: transformer blocks, each with its own K and V."),
              "range"),
        Input(P.KV_HEADS.but(default=_DEFAULT.num_kv_heads, max=128, label="KV heads", unit="heads",
                             help="K: key/value heads (GQA shares each across a group of query heads)."), "range"),
        Input(HEAD_DIM, "select"),
        Input(P.CONTEXT.but(help="T: tokens held in the cache (prompt plus generated)."), "range", log=True),
        Input(P.KV.but(default="bf16", label="KV precision",
                       choices=[(n, n.upper()) for n in PRECISION_BYTES]), "segmented"),
    ],
    tries=[
        ("Double the context.", "The cache doubles: it holds every token's keys and values.", {"context": 16384}),
        ("Switch to FP8.", "Half the bytes for the same tokens.", {"kv": "fp8"}),
    ],
)
def kv_demo(layers: int, kv_heads: int, head_dim: int, context: int, kv: str) -> list[dict]:
    """Views for the KV-cache size of one sequence.

    Args:
        layers: L, 1 to 200. kv_heads: K, 1 to 128. head_dim: d_head, one of the offered sizes.
        context: T tokens, 1 to 20,000,000. kv: a key of :data:`PRECISION_BYTES`.

    Returns:
        A stat for bytes per token (KiB), a stat for the whole cache (GiB) and a bar list of the
        cache at each offered precision (the chosen one highlighted).

    Raises:
        FieldError: never for in-range inputs; kept for the runtime's contract.
    """
    if kv not in PRECISION_BYTES:
        raise FieldError("kv", f"KV precision must be one of {', '.join(PRECISION_BYTES)}")
    per_elem = PRECISION_BYTES[kv]
    per_token = KV_TENSORS * layers * kv_heads * head_dim * per_elem
    total = per_token * context
    rows = []
    for name, b in PRECISION_BYTES.items():
        size = KV_TENSORS * layers * kv_heads * head_dim * b * context
        rows.append(v.bar(name.upper(), size, display=_gib(size), cls="is-selected" if name == kv else "",
                          greyed=name != kv))
    presets = [
        v.chip(m.name, cls="is-selected" if (m.num_layers, m.num_kv_heads, m.head_dim) == (layers, kv_heads, head_dim)
               else "", title=f"{m.num_layers} layers, {m.num_kv_heads} KV heads, head_dim {m.head_dim}",
               set={"layers": m.num_layers, "kv_heads": m.num_kv_heads, "head_dim": m.head_dim})
        for m in preset_models()
    ]
    return [
        v.stat("KV cache per token", f"{v.fmt(per_token / KiB)}", "KiB",
               note=f"2 x {layers} x {kv_heads} x {head_dim} x {per_elem} B = {format_int(per_token)} bytes"),
        v.stat("KV cache for the context", f"{v.fmt(total / GiB)}", "GiB",
               note=f"{format_int(per_token)} bytes x {format_int(context)} tokens = {format_int(total)} bytes"),
        v.bar_list(rows, caption=f"The same cache at each precision ({format_int(context)} tokens)"),
        v.chips(presets, caption="Load a model's shape (from the catalog)", tokens=False),
    ]
