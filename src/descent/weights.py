"""Weights as stored: every weight matrix of a model, its group, and the bytes each group takes.

A model's parameters fall into groups (:data:`GROUPS`): the input embedding table, the output head,
attention, dense FFNs, routed experts, shared experts, the MoE routers and the norm vectors. A real
checkpoint does not store them all alike:

* **As released** (:func:`released_map`, from ``catalog/released.toml``): gpt-oss keeps its routed
  experts in MXFP4 (4.25 bits per weight with the block scales) and everything else in BF16;
  DeepSeek-V3 ships FP8 with one FP32 scale per 128 x 128 block and keeps embeddings, head, norms
  and routers in BF16; Llama 3.1 is BF16 throughout.
* **A GGUF mix** (``q4_k_m``, ``q5_k_m``, ``q6_k``, ``q8_0``, ``q4_0``): llama.cpp's quantizer picks
  a type per tensor (:func:`gguf_tensor_type`): the output head gets Q6_K, half of the ``attn_v``
  and ``ffn_down`` tensors get more bits, a tensor whose rows are not a whole number of 256-value
  super-blocks falls back to a 32-value type, vectors stay F32, and expert tensors that the source
  file already holds in MXFP4 (gpt-oss) are kept. The rules are llama.cpp's
  ``llama_tensor_get_type`` (src/llama-quant.cpp), applied to the tensor shapes that the catalog's
  config gives.
* **One precision for all** (``bf16``, ``fp8``, ``mxfp4``, ...): every parameter at that width, the
  "what if" of the sizing sandbox; except that a format whose published checkpoints quantize only
  the linear layers inside the transformer blocks (FP8 and NVFP4 as NVIDIA's Model Optimizer writes
  them, block-scaled FP8 as DeepSeek's) keeps the groups those checkpoints keep in BF16: the
  embedding table, the output head, the norms and the routers (:data:`KEPT_IN_BF16`).

:func:`bytes_by_group` gives the bytes of each group; its sum is what memory holds. A decode step
reads each group once, except that it reads only the looked-up rows of an untied embedding table
and only the routed experts the batch's tokens pick (:func:`descent.hardware.decode_step_bytes`).

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache, lru_cache

from descent import catalog, numerics, transformer
from descent.catalog import TORCH_DTYPES, Model, resolve_model
from descent.numerics import BITS_PER_BYTE

__all__ = [
    "GGUF_MIXES",
    "GGUF_TYPE_BITS",
    "GROUPS",
    "KEPT_GROUPS",
    "KEPT_IN_BF16",
    "RELEASED",
    "Tensor",
    "Q4_RULE_BITS_PER_WEIGHT",
    "Q4_RULE_GB_PER_BILLION",
    "bits_per_param",
    "bytes_by_group",
    "describe",
    "gguf_tensor_type",
    "released_map",
    "scheme_names",
    "q4_rule_bytes",
    "tensors",
    "total_bytes",
]

#: The weight groups, in display order.
GROUPS = ("embedding", "output_head", "attention", "dense_ffn", "experts", "shared_experts", "router", "norms")

#: Each group in words.
GROUP_LABELS = {"embedding": "embedding", "output_head": "output head", "attention": "attention",
                "dense_ffn": "dense FFN", "experts": "experts", "shared_experts": "shared experts",
                "router": "router", "norms": "norms"}

#: The groups a checkpoint that quantizes only the linear layers inside the transformer blocks keeps
#: in BF16: the embedding table (a look-up, not a linear layer), the output head (outside the blocks),
#: the norm vectors and the MoE routers.
KEPT_GROUPS = ("embedding", "output_head", "norms", "router")

#: Weight formats whose published checkpoints keep :data:`KEPT_GROUPS` in BF16, so that "every weight
#: in FP8" is sized as those checkpoints are released, not one byte for every parameter. Sources:
#:
#: * ``fp8`` and ``nvfp4``, NVIDIA Model Optimizer (ModelOpt), the checkpoints TensorRT-LLM's
#:   performance tables run (nvidia/Llama-3.1-70B-Instruct-FP8, nvidia/Llama-3.3-70B-Instruct-FP4 and
#:   kin): their model cards say "Only the weights and activations of the linear operators within
#:   transformers blocks are quantized" (https://huggingface.co/nvidia/Llama-3.1-70B-Instruct-FP8);
#:   ModelOpt attaches quantizers to linear layers only (an embedding table gets none) and its default
#:   configuration disables those of ``*lm_head*`` and the routers (``*router*``, ``*mlp.gate.*``,
#:   ``*block_sparse_moe.gate*``): ``_default_disabled_quantizer_cfg`` in
#:   modelopt/torch/quantization/config.py (https://github.com/NVIDIA/TensorRT-Model-Optimizer).
#: * ``fp8_b128``, DeepSeek-V3's format (also Kimi K2's): the DeepSeek-V3 Technical Report
#:   (arXiv:2412.19437, section 3.3.1, "Mixed Precision Framework") keeps "the embedding module, the
#:   output head, MoE gating modules, normalization operators" in their original precision while the
#:   linear layers' GEMMs run in FP8; the released checkpoint stores FP8 only for those linear weights
#:   (config.json's quantization_config, weight_block_size [128, 128]; the ``released.toml`` rows of
#:   both models).
KEPT_IN_BF16: dict[str, tuple[str, ...]] = {"fp8": KEPT_GROUPS, "nvfp4": KEPT_GROUPS, "fp8_b128": KEPT_GROUPS}

#: The weight choice that means "as the publisher released the checkpoint".
RELEASED = numerics.RELEASED

#: Bits per weight of the GGUF tensor types the mixes use: block bytes x 8 / block values, from the
#: block structs of ggml-common.h (block_q4_0 18 B / 32, block_q4_1 20 B / 32, block_q5_0 22 B / 32,
#: block_q5_1 24 B / 32, block_q8_0 34 B / 32, block_q4_K 144 B / 256, block_q5_K 176 B / 256,
#: block_q6_K 210 B / 256, block_mxfp4 17 B / 32), and F16 / F32.
GGUF_TYPE_BITS = {
    "F32": 32.0, "F16": 16.0, "Q8_0": 8.5, "Q6_K": 6.5625, "Q5_K": 5.5, "Q5_1": 6.0, "Q5_0": 5.5,
    "Q4_K": 4.5, "Q4_1": 5.0, "Q4_0": 4.5, "MXFP4": 4.25,
}
#: Values per block of each GGUF type (a row must hold a whole number of blocks).
GGUF_BLOCK = {"F32": 1, "F16": 1, "Q8_0": 32, "Q6_K": 256, "Q5_K": 256, "Q5_1": 32, "Q5_0": 32,
              "Q4_K": 256, "Q4_1": 32, "Q4_0": 32, "MXFP4": 32}
#: llama.cpp's fallback when a row is not a whole number of 256-value super-blocks
#: (``tensor_type_fallback``: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0).
GGUF_FALLBACK = {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}

#: GGUF file types (``llama-quantize`` names) and the type most of their tensors get.
GGUF_MIXES = {"q8_0": "Q8_0", "q6_k": "Q6_K", "q5_k_m": "Q5_K", "q4_k_m": "Q4_K", "q4_0": "Q4_0"}


@dataclass(frozen=True)
class Tensor:
    """One weight matrix of a model (``count`` identical ones for a layer's experts).

    Attributes:
        group: a key of :data:`GROUPS`.
        role: llama.cpp's tensor category: ``token_embd``, ``output``, ``attn_q``, ``attn_k``,
            ``attn_v``, ``attn_kv_b`` (MLA's key/value up-projection, treated as ``attn_v``),
            ``attn_output``, ``attn_other`` (MLA's down-projections), ``ffn_gate``, ``ffn_up``,
            ``ffn_down``, ``ffn_gate_inp`` (the router).
        layer: 0-based layer, or None for the embedding and the head.
        rows, cols: output and input features; ``cols`` is GGUF's ``ne[0]``, the row length that
            must hold whole blocks.
        count: identical matrices (E routed experts of one layer, or the shared experts).
    """

    group: str
    role: str
    layer: int | None
    rows: int
    cols: int
    count: int = 1

    @property
    def params(self) -> int:
        return self.rows * self.cols * self.count


def tensors(m: Model) -> list[Tensor]:
    """Every weight matrix of ``m``, from its config shapes (same conventions as
    :func:`descent.transformer.param_counts`, whose per-group totals these matrices plus the
    vectors -- biases, norms, sinks -- add up to exactly)."""
    D, H, K, dh, L = m.hidden_size, m.num_heads, m.num_kv_heads, m.head_dim, m.num_layers
    out = [Tensor("embedding", "token_embd", None, m.vocab_size, D)]
    dense_layers = L if m.moe is None else min(m.moe.first_dense_layers, L)
    for i in range(L):
        if m.mla is not None:
            a = m.mla
            qk = a.qk_nope_head_dim + a.qk_rope_head_dim
            if a.q_lora_rank:
                out += [Tensor("attention", "attn_other", i, a.q_lora_rank, D),
                        Tensor("attention", "attn_q", i, H * qk, a.q_lora_rank)]
            else:
                out.append(Tensor("attention", "attn_q", i, H * qk, D))
            out += [Tensor("attention", "attn_other", i, a.kv_lora_rank + a.qk_rope_head_dim, D),
                    Tensor("attention", "attn_kv_b", i, H * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank),
                    Tensor("attention", "attn_output", i, D, H * a.v_head_dim)]
        else:
            out += [Tensor("attention", "attn_q", i, H * dh, D), Tensor("attention", "attn_k", i, K * dh, D),
                    Tensor("attention", "attn_v", i, K * dh, D), Tensor("attention", "attn_output", i, D, H * dh)]
        if i < dense_layers:
            F = m.intermediate_size
            out += [Tensor("dense_ffn", "ffn_gate", i, F, D), Tensor("dense_ffn", "ffn_up", i, F, D),
                    Tensor("dense_ffn", "ffn_down", i, D, F)]
        else:
            e = m.moe
            Fe, E = e.expert_intermediate_size, e.num_experts
            out += [Tensor("router", "ffn_gate_inp", i, E, D),
                    Tensor("experts", "ffn_gate", i, Fe, D, E), Tensor("experts", "ffn_up", i, Fe, D, E),
                    Tensor("experts", "ffn_down", i, D, Fe, E)]
            if e.num_shared_experts:
                Fs, S = e.shared_expert_intermediate_size, e.num_shared_experts
                out += [Tensor("shared_experts", "ffn_gate", i, Fs, D, S),
                        Tensor("shared_experts", "ffn_up", i, Fs, D, S),
                        Tensor("shared_experts", "ffn_down", i, D, Fs, S)]
    if not m.tie_embeddings:
        out.append(Tensor("output_head", "output", None, m.vocab_size, D))
    return out


def _vectors_by_group(m: Model, ts: list[Tensor]) -> dict[str, int]:
    """Parameters of each group that are not in a matrix: biases, norm weights, attention sinks,
    router score-correction biases."""
    pc = transformer.param_counts(m)
    total = {g: getattr(pc, g) for g in GROUPS}
    for t in ts:
        total[t.group] -= t.params
    if any(v < 0 for v in total.values()):
        raise AssertionError(f"{m.id}: matrices exceed param_counts: {total}")
    return total


# ---------------------------------------------------------------------------------------------
# As released
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReleasedMap:
    """The precision of each weight group in a model's published checkpoint.

    Attributes:
        model: catalog model id.
        by_group: group -> precision name (``descent.numerics.PRECISIONS``).
        note: what the checkpoint stores, in a sentence.
        source: the checkpoint's config.json / model card.
        from_dtype: True when the catalog row has no row in ``released.toml`` and the map is its
            config.json ``torch_dtype`` in every group (:data:`FROM_DTYPE_NOTE` says so).
    """

    model: str
    by_group: dict[str, str]
    note: str
    source: str
    from_dtype: bool = False


#: What the sizing says of a catalog row with no row in ``released.toml``: it is sized at its
#: ``torch_dtype`` (``{label}``: the precision's label, e.g. BF16).
FROM_DTYPE_NOTE = "sized at its config.json dtype, {label}: no 'as released' row in catalog/released.toml"


@cache
def _released_table() -> dict[str, ReleasedMap]:
    raw = tomllib.loads(catalog.read_file("released.toml"))
    out = {}
    for mid, row in raw.items():
        default = row.get("default")
        by_group = {g: row.get(g, default) for g in GROUPS}
        for g, p in by_group.items():
            if p not in numerics.PRECISIONS:
                raise ValueError(f"released.toml [{mid}] {g} = {p!r}: allowed: {', '.join(numerics.PRECISIONS)}")
        unknown = set(row) - {*GROUPS, "default", "note", "source"}
        if unknown:
            raise ValueError(f"released.toml [{mid}]: unknown keys {sorted(unknown)}; allowed: default, note, "
                             f"source, {', '.join(GROUPS)}")
        if not isinstance(row.get("source"), str) or not row["source"].strip():
            raise ValueError(f"released.toml [{mid}]: every row needs a non-empty source")
        out[mid] = ReleasedMap(mid, by_group, row.get("note", ""), row["source"])
    return out


def released_map(model: str | Model) -> ReleasedMap:
    """The published checkpoint's precision per group for ``model``.

    A model read from a config.json (:mod:`descent.hfconfig`) carries its own map
    (``Model.released_by_group``, from the file's ``torch_dtype`` and ``quantization_config``).
    A catalog row with no row in ``catalog/released.toml`` is its ``torch_dtype`` field in every
    group (a model added as one catalog row), with ``from_dtype`` set and :data:`FROM_DTYPE_NOTE`
    as its note.

    Raises:
        ValueError: the model has no row in ``catalog/released.toml``, no map of its own and no
            ``torch_dtype``.
    """
    if isinstance(model, Model) and model.released_by_group is not None:  # read from a config.json
        return ReleasedMap(model.id, {g: model.released_by_group.get(g, "bf16") for g in GROUPS},
                           model.sources.get("released_by_group", ""), model.sources.get("default", ""))
    mid = model.id if isinstance(model, Model) else model
    if isinstance(model, Model) and mid not in _released_table() and "released_by_group" in model.sources:
        raise ValueError(model.sources["released_by_group"])  # why its config.json gives no map
    if mid in _released_table():
        return _released_table()[mid]
    if isinstance(model, str):
        model = catalog.models().get(mid, model)
    if isinstance(model, Model) and model.torch_dtype is not None:
        p = TORCH_DTYPES[model.torch_dtype]
        note = FROM_DTYPE_NOTE.format(label=numerics.precision(p).label)
        return ReleasedMap(mid, dict.fromkeys(GROUPS, p), note, model.source_of("torch_dtype"), from_dtype=True)
    raise ValueError(f"{mid!r} has no 'as released' row in catalog/released.toml and its catalog row no "
                     f"torch_dtype; add either. Rows: {', '.join(_released_table())}")


# ---------------------------------------------------------------------------------------------
# GGUF mixes
# ---------------------------------------------------------------------------------------------


def _use_more_bits(i: int, n: int) -> bool:
    """llama.cpp's ``use_more_bits``: the first and last eighth of the layers, and every third one
    in between, get the wider type in the _M mixes."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _is_llama_70b(m: Model) -> bool:
    """llama.cpp's ``LLM_TYPE_70B``: a Llama-architecture model of 80 layers with grouped KV heads."""
    llama = m.id.startswith("llama") or m.sources.get("model_type") == "llama"  # a catalog row or a config.json
    return llama and m.num_layers == 80 and m.num_kv_heads < m.num_heads


def gguf_tensor_type(m: Model, mix: str, t: Tensor, ctx: dict[str, int]) -> str:
    """The GGUF type llama.cpp's quantizer gives tensor ``t`` of ``m`` for file type ``mix``.

    ``ctx`` carries the counters the quantizer keeps while it walks the tensors in order:
    ``i_attention_wv``/``n_attention_wv`` and ``n_ffn_down``. Rules from ``llama_tensor_get_type``
    (llama.cpp, src/llama-quant.cpp) for the mixes of :data:`GGUF_MIXES`; expert tensors that the
    source GGUF already stores in MXFP4 (gpt-oss, converted from its MXFP4 release) are kept.

    Raises:
        ValueError: ``mix`` is not a key of :data:`GGUF_MIXES`.
    """
    if mix not in GGUF_MIXES:
        raise ValueError(f"GGUF mix must be one of {', '.join(GGUF_MIXES)}, got {mix!r}")
    base = GGUF_MIXES[mix]
    role = t.role
    if role == "ffn_gate_inp":
        return "F32"  # routers are not quantized (tensor_allows_quantization: ffn_gate_inp)
    if t.group == "experts" and released_map(m).by_group["experts"] == "mxfp4":
        return "MXFP4"
    n_expert = m.moe.num_experts if m.moe else 1
    new = base
    if role == "output" or (role == "token_embd" and m.tie_embeddings):
        if t.cols % GGUF_BLOCK[base] != 0:
            return "Q8_0"
        return base if base == "Q8_0" else "Q6_K"
    if role in ("attn_v", "attn_kv_b"):
        if mix in ("q4_k_m", "q5_k_m") and _use_more_bits(ctx["i_attention_wv"], ctx["n_attention_wv"]):
            new = "Q6_K"
        if _is_llama_70b(m) and new == "Q4_K":
            new = "Q5_K"  # 70B: attn_v is 8x smaller than attn_q, more bits cost little
        if n_expert == 8:
            new = "Q8_0"
        ctx["i_attention_wv"] += 1
    elif role == "attn_k" and n_expert == 8:
        new = "Q8_0"
    elif role == "ffn_down":
        i_layer = t.layer
        n_layer = ctx["n_ffn_down"]
        if mix in ("q4_k_m", "q5_k_m") and _use_more_bits(i_layer, n_layer):
            new = "Q6_K"
    elif role == "attn_output" and n_expert == 8 and mix == "q4_k_m":
        new = "Q5_K"
    if t.cols % GGUF_BLOCK[new] != 0:  # tensor_type_fallback
        new = GGUF_FALLBACK.get(new, new)
        if t.cols % GGUF_BLOCK[new] != 0:
            new = "F16"
    return new


def _gguf_bytes(m: Model, mix: str, ts: list[Tensor], vectors: dict[str, int]) -> dict[str, float]:
    out = dict.fromkeys(GROUPS, 0.0)
    ffn_down = [t for t in ts if t.role == "ffn_down"]
    ctx = {"i_attention_wv": 0, "n_attention_wv": sum(1 for t in ts if t.role in ("attn_v", "attn_kv_b")),
           # dense models count ffn_down tensors in order; MoE models read the layer from the name
           # and compare it with the number of ffn_down tensors (merged expert tensors count once).
           "n_ffn_down": len(ffn_down)}
    i_down = 0
    for t in ts:
        if t.role == "ffn_down" and m.moe is None:
            t = Tensor(t.group, t.role, i_down, t.rows, t.cols, t.count)
            i_down += 1
        out[t.group] += t.params * GGUF_TYPE_BITS[gguf_tensor_type(m, mix, t, ctx)] / BITS_PER_BYTE
    for g, n in vectors.items():
        out[g] += n * GGUF_TYPE_BITS["F32"] / BITS_PER_BYTE  # 1-D tensors stay F32
    return out


def describe(model: str, weights: str) -> str:
    """How the weights are stored, in a few words: ``"FP8, embedding, output head and norms in BF16"``
    (the groups its checkpoints keep in BF16: :data:`KEPT_IN_BF16`), ``"as released: BF16 embedding,
    attention, ...; MXFP4 the rest"``, ``"GGUF Q4_K_M mix"``. Raises ValueError for an unknown model
    or weight choice."""
    if weights == RELEASED:
        rm = released_map(model)
        if rm.from_dtype:  # no released.toml row: the row's torch_dtype throughout
            return f"{numerics.precision(rm.by_group[GROUPS[0]]).label}, its config.json dtype"
        pc = transformer.param_counts(_model(model))
        kinds: dict[str, list[str]] = {}
        for g in GROUPS:
            if getattr(pc, g):
                kinds.setdefault(numerics.precision(rm.by_group[g]).label, []).append(g)
        if len(kinds) == 1:
            return f"as released: {next(iter(kinds))}"
        main = max(kinds, key=lambda k: sum(getattr(pc, g) for g in kinds[k]))
        rest = [f"{k} {', '.join(GROUP_LABELS[g] for g in gs)}" for k, gs in kinds.items() if k != main]
        return f"as released: {'; '.join(rest)}; {main} the rest"
    p = numerics.precision(weights)
    if weights in KEPT_IN_BF16:
        pc = transformer.param_counts(_model(model))
        kept = [GROUP_LABELS[g] for g in KEPT_IN_BF16[weights] if getattr(pc, g)]
        listed = kept[0] if len(kept) == 1 else f"{', '.join(kept[:-1])} and {kept[-1]}"
        return f"{p.label}, {listed} in BF16" if kept else p.label
    return f"{p.label} mix" if weights in ("q4_k_m", "q5_k_m") else p.label


def _model(model: str | Model) -> Model:
    return resolve_model(model)


# ---------------------------------------------------------------------------------------------
# Bytes by group
# ---------------------------------------------------------------------------------------------


def scheme_names() -> list[str]:
    """Every weight choice: ``released``, the GGUF mixes, and each uniform precision."""
    return [RELEASED, *numerics.PRECISIONS]


def bytes_by_group(model: str | Model, weights: str) -> dict[str, float]:
    """Bytes each weight group of ``model`` takes when stored as ``weights``.

    Args:
        model: a Model or catalog id.
        weights: ``"released"`` (the published checkpoint, :func:`released_map`), a GGUF mix
            (:data:`GGUF_MIXES`: per-tensor types, :func:`gguf_tensor_type`), or any other name in
            ``descent.numerics.PRECISIONS`` (every parameter at that width, except the groups
            :data:`KEPT_IN_BF16` names for the format: those at BF16, 2 bytes a parameter, as the
            format's published checkpoints keep them; sources there).

    Returns:
        ``{group: bytes}`` for every group of :data:`GROUPS` (0.0 for a group the model lacks);
        the values add up to the bytes memory holds.

    Raises:
        ValueError: unknown model or weight choice (the message lists the allowed ones).
    """
    m = resolve_model(model)
    try:
        return dict(_bytes_by_group(m, weights))  # a copy: callers may change theirs
    except TypeError as err:  # an unhashable weights value: the checks below name it
        if "unhashable" not in str(err):
            raise
        return _bytes_by_group.__wrapped__(m, weights)


@lru_cache(maxsize=1024, typed=True)
def _bytes_by_group(m: Model, weights: str) -> dict[str, float]:
    pc = transformer.param_counts(m)
    if weights in GGUF_MIXES:
        ts = tensors(m)
        return _gguf_bytes(m, weights, ts, _vectors_by_group(m, ts))
    if weights == RELEASED:
        rm = released_map(m)
        return {g: getattr(pc, g) * numerics.precision(rm.by_group[g]).bits_per_weight / BITS_PER_BYTE
                for g in GROUPS}
    if weights not in numerics.PRECISIONS:
        raise ValueError(f"weights must be one of {', '.join(scheme_names())}; got {weights!r}")
    bpw = numerics.precision(weights).bits_per_weight
    kept, bf16 = KEPT_IN_BF16.get(weights, ()), numerics.precision("bf16").bits_per_weight
    return {g: getattr(pc, g) * (bf16 if g in kept else bpw) / BITS_PER_BYTE for g in GROUPS}


def total_bytes(model: str | Model, weights: str) -> float:
    """Bytes of every weight of ``model`` stored as ``weights``: the sum of :func:`bytes_by_group`."""
    return sum(bytes_by_group(model, weights).values())


def bits_per_param(model: str | Model, weights: str) -> float:
    """Bits per parameter of ``model`` stored as ``weights`` (scales and per-tensor mixes included):
    :func:`total_bytes` x 8 over the parameters of :func:`descent.transformer.param_counts`."""
    m = resolve_model(model)
    return total_bytes(m, weights) * BITS_PER_BYTE / transformer.param_counts(m).total


#: The rule of thumb "a Q4 file takes about 0.6 GB per billion parameters" (GB = 1e9 bytes), as
#: repeated in llama.cpp discussions and model cards; Part 2 checks it against llama.cpp's mixes.
Q4_RULE_GB_PER_BILLION = 0.6

#: The bits per weight that rule means: 1 GB per billion parameters is 8 bits per parameter.
Q4_RULE_BITS_PER_WEIGHT = Q4_RULE_GB_PER_BILLION * BITS_PER_BYTE


def q4_rule_bytes(model: str | Model) -> float:
    """The rule of thumb's size of ``model`` at Q4: :data:`Q4_RULE_GB_PER_BILLION` GB per billion of
    its published parameters (``params_total_published``), in bytes."""
    m = resolve_model(model)
    return Q4_RULE_GB_PER_BILLION * (m.params_total_published / 1e9) * 1e9
