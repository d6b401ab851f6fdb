"""Any model from its config.json: a Hugging Face ``config.json`` read into a catalog ``Model``.

A model on the Hugging Face Hub ships a ``config.json`` whose keys say the shape of the network:
``hidden_size`` (D), ``num_hidden_layers`` (L), ``num_attention_heads`` (H),
``num_key_value_heads`` (K), ``head_dim``, ``intermediate_size`` (F), ``vocab_size`` (V), and
per architecture the mixture-of-experts, latent-attention and sliding-window fields.
:func:`read_config` turns that text into the same :class:`descent.catalog.Model` record the
catalog's rows are, so every calculator (parameter counts, KV cache, memory, decode speed) works
on a model the catalog does not have. Nothing is fetched: the reader pastes the text or the
command line reads a file.

**Which key means what** is each architecture's ``transformers`` configuration class
(``transformers/models/<type>/configuration_<type>.py``) and modeling code, read for the version
the tests pin (5.x): the key names, the defaults a release may leave out (Gemma 3's ``text_config``
has no ``vocab_size``: ``Gemma3TextConfig`` supplies 262,208), and the rules that are code rather
than keys (Qwen2 always puts a bias on q, k and v; gpt-oss always has attention sinks; Gemma 2
and 3 have four norms per layer). A value taken from a default is recorded in
``Model.sources`` under its field, so ``model.source_of("vocab_size")`` says where it came from.

Architectures (``model_type``, see :data:`ARCHITECTURES`):

* ``llama`` (Llama 2/3, SmolLM2, TinyLlama...), ``mistral``, ``mixtral``, ``qwen2``, ``qwen2_moe``,
  ``qwen3``, ``qwen3_moe``, ``gemma2``, ``gemma3_text`` and ``gemma3`` (the language model in
  ``text_config``; the vision tower is not counted), ``deepseek_v2``, ``deepseek_v3`` and
  ``kimi_k2`` (Multi-head Latent Attention, DeepSeek-V2 paper, arXiv:2405.04434, section 2.1),
  ``gpt_oss``, ``phi3`` (Phi-3, Phi-3.5-mini, Phi-4: fused qkv and gate/up projections, the same
  parameter count as separate ones).
* ``llama4`` (the language model in ``text_config``) and ``llama4_text``: Llama 4's chunked local
  attention (``attention_chunk_size``, every n-th layer full and without RoPE: ``layer_types``,
  ``no_rope_layers`` or ``no_rope_layer_interval``), routed experts plus a shared expert
  (``intermediate_size`` is one expert's width, ``intermediate_size_mlp`` a dense layer's).
* ``qwen3_next``: Qwen3-Next's hybrid layers, Gated DeltaNet linear attention (``linear_*``) with
  every n-th layer full, gated attention (``layer_types`` or ``full_attention_interval``), routed
  experts plus a sigmoid-gated shared expert.
* Any other config whose ``text_config`` holds one of these (a vision-language wrapper): the text
  model is read and the wrapper named in the sources.

What this cannot express it refuses with a message instead of guessing: a sliding-window, chunked
or linear-attention layout that is not "every n-th layer full" (Qwen2's ``use_sliding_window``
with full lower layers), MoE layers that are not "all but the first few" (``decoder_sparse_step``
> 1, ``moe_layer_freq`` > 1, Llama 4 Maverick's ``interleave_moe_layer_step`` 2), a hybrid model
without any full-attention layer.

Errors are :class:`ConfigError` (a ``ValueError``) whose ``key`` names the config.json key at
fault (``"text_config.hidden_size"``) and whose message says what is allowed; an unknown
architecture's message names its ``model_type`` and the known ones.

Standard library only (``json``), so it runs in Pyodide.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from descent.catalog import MLA, TORCH_DTYPES, ChunkedAttention, LinearAttention, Model, MoE, SlidingWindow
from descent.checks import is_int
from descent.units import format_int

__all__ = [
    "ARCHITECTURES",
    "CUSTOM_ID",
    "ConfigError",
    "LIMITS",
    "MAX_CONFIG_CHARS",
    "MAX_DEPTH",
    "known_model_types",
    "model_from_config",
    "read_config",
    "released_by_group",
]

#: The id a model read from a config.json gets (it is not a catalog row).
CUSTOM_ID = "custom"

#: Longest config.json text accepted, characters. Released configs are 0.5 to 5 kB (gpt-oss-120b's,
#: with its 36-entry ``layer_types``, is about 1.7 kB); the limit keeps a browser worker call short.
MAX_CONFIG_CHARS = 50_000

#: Deepest nesting of lists and objects accepted. Released configs nest 3 deep (gpt-oss's
#: quantization_config list); the check runs before ``json.loads``, whose own limit differs
#: between CPython 3.11 (RecursionError near 1,000) and Pyodide's Python 3.14.
MAX_DEPTH = 64

#: Inclusive bounds of each integer key, (low, high). Guards against typos and against numbers so
#: large that a count overflows a float; every released model sits far inside them (the widest
#: catalog model, Llama 3.1 405B, has hidden_size 16,384 and intermediate_size 53,248).
LIMITS: dict[str, tuple[int, int]] = {
    "hidden_size": (1, 2**20),
    "num_hidden_layers": (1, 4096),
    "num_attention_heads": (1, 2**14),
    "num_key_value_heads": (1, 2**14),
    "head_dim": (1, 2**14),
    "intermediate_size": (1, 2**22),
    "moe_intermediate_size": (1, 2**22),
    "shared_expert_intermediate_size": (0, 2**22),
    "vocab_size": (1, 2**24),
    "max_position_embeddings": (1, 2**31 - 1),
    "sliding_window": (1, 2**31 - 1),
    "sliding_window_pattern": (1, 4096),
    "max_window_layers": (0, 4096),
    "num_experts": (0, 2**16),
    "num_local_experts": (1, 2**16),
    "n_routed_experts": (1, 2**16),
    "num_experts_per_tok": (1, 2**16),
    "experts_per_token": (1, 2**16),
    "n_shared_experts": (0, 2**10),
    "first_k_dense_replace": (0, 4096),
    "moe_layer_freq": (1, 4096),
    "decoder_sparse_step": (1, 4096),
    "q_lora_rank": (1, 2**16),
    "kv_lora_rank": (1, 2**16),
    "qk_rope_head_dim": (1, 2**14),
    "qk_nope_head_dim": (0, 2**14),
    "v_head_dim": (1, 2**14),
    "intermediate_size_mlp": (1, 2**22),
    "interleave_moe_layer_step": (1, 4096),
    "attention_chunk_size": (1, 2**31 - 1),
    "no_rope_layer_interval": (1, 4096),
    "full_attention_interval": (1, 4096),
    "linear_num_key_heads": (1, 2**14),
    "linear_num_value_heads": (1, 2**14),
    "linear_key_head_dim": (1, 2**14),
    "linear_value_head_dim": (1, 2**14),
    "linear_conv_kernel_dim": (1, 1024),
}

#: What each key is, for "config.json has no 'hidden_size' (...)" messages.
MEANING: dict[str, str] = {
    "hidden_size": "the model width D",
    "num_hidden_layers": "the number of layers L",
    "num_attention_heads": "the query heads H",
    "intermediate_size": "the FFN width F",
    "vocab_size": "the vocabulary size V",
    "num_local_experts": "the routed experts per layer E",
    "num_experts": "the routed experts per layer E",
    "n_routed_experts": "the routed experts per layer E",
    "num_experts_per_tok": "the experts each token uses k",
    "moe_intermediate_size": "one expert's FFN width",
    "kv_lora_rank": "the rank of MLA's key/value latent",
    "qk_rope_head_dim": "the RoPE part of each query/key head",
    "qk_nope_head_dim": "the non-RoPE part of each query/key head",
    "v_head_dim": "the width of each value head",
}

#: The ``layer_types`` entries beside ``full_attention`` that :func:`_pattern` reads (transformers'
#: names), in words, and the releases that use each (for its messages).
LOCAL_WORDS = {"sliding_attention": "sliding", "chunked_attention": "chunked", "linear_attention": "linear-attention"}
LOCAL_EXAMPLES = {"sliding_attention": "Gemma 3 and gpt-oss", "chunked_attention": "Llama 4 Scout",
                  "linear_attention": "Qwen3-Next"}


class ConfigError(ValueError):
    """A config.json that cannot be read as a model.

    ``key`` is the config.json key at fault (``"num_key_value_heads"``, ``"text_config.head_dim"``),
    or ``None`` when the text as a whole is wrong (not JSON, not an object, too long); ``message``
    is a sentence the reader can act on.
    """

    def __init__(self, key: str | None, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


def _show(value: Any) -> str:
    """A short rendering of a bad value for a message (JSON spelling: true, null, "text")."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):  # pragma: no cover - json.loads only yields JSON types
        text = type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


# ---------------------------------------------------------------------------------------------
# Reading one config object
# ---------------------------------------------------------------------------------------------

_ABSENT = object()


@dataclass
class _Reader:
    """Typed access to one JSON object: the architecture's defaults fill keys the file leaves out,
    and every default used is noted for ``Model.sources``."""

    data: Mapping[str, Any]
    arch: Architecture
    prefix: str = ""  # "text_config." when reading a wrapper's text model
    notes: dict[str, str] = field(default_factory=dict)

    def name(self, key: str) -> str:
        return self.prefix + key

    def raw(self, key: str, *, required: bool = False, note_as: str | None = None) -> Any:
        """The value of ``key``: the file's (possibly JSON null, returned as None), else the
        architecture's default, else ``_ABSENT``; a missing required key raises."""
        if key in self.data:
            return self.data[key]
        if key in self.arch.defaults:
            value = self.arch.defaults[key]
            if note_as:
                self.notes[note_as] = (
                    f"config.json has no {self.name(key)}: the transformers {self.arch.config_class} "
                    f"default {_show(value)} applies"
                )
            return value
        if required:
            meaning = f" ({MEANING[key]})" if key in MEANING else ""
            raise ConfigError(
                self.name(key),
                f"config.json must have {self.name(key)!r}{meaning}: a {self.arch.model_type} config needs it",
            )
        return _ABSENT

    def int(self, key: str, *, required: bool = False, note_as: str | None = None,
            low: int | None = None, high: int | None = None) -> int | None:
        """An integer key within :data:`LIMITS` (or ``low``/``high``); None for JSON null or absent."""
        value = self.raw(key, required=required, note_as=note_as)
        if value is _ABSENT or value is None:
            if required and value is None:
                raise ConfigError(self.name(key), f"config.json: {self.name(key)!r} must be a whole number, got null")
            return None
        lo, hi = LIMITS.get(key, (0, 2**31 - 1))
        lo = lo if low is None else low
        hi = hi if high is None else high
        if not is_int(value) or not lo <= value <= hi:
            raise ConfigError(
                self.name(key),
                f"config.json: {self.name(key)!r} must be a whole number from {format_int(lo)} to "
                f"{format_int(hi)}, got {_show(value)}",
            )
        return value

    def bool(self, key: str, default: bool, *, note_as: str | None = None) -> bool:
        """A true/false key; JSON null or absent (with no architecture default) gives ``default``."""
        value = self.raw(key, note_as=note_as)
        if value is _ABSENT or value is None:
            return default
        if not isinstance(value, bool):
            raise ConfigError(self.name(key), f"config.json: {self.name(key)!r} must be true or false, got {_show(value)}")
        return value

    def list_of(self, key: str, kind: type, what: str) -> list | None:
        """A JSON array of ``kind`` (``str`` or ``int``); None when absent or null."""
        value = self.raw(key)
        if value is _ABSENT or value is None:
            return None
        ok = isinstance(value, list) and all(
            isinstance(v, str) if kind is str else is_int(v) for v in value
        )
        if not ok:
            raise ConfigError(self.name(key), f"config.json: {self.name(key)!r} must be a list of {what}, got {_show(value)}")
        return value


@dataclass(frozen=True)
class Architecture:
    """One ``model_type`` this module reads.

    Attributes:
        model_type: config.json ``model_type``.
        label: a reader's name for the family ("Llama", "DeepSeek-V3").
        config_class: the transformers configuration class whose defaults apply.
        defaults: keys a release may leave out, with that class's default (transformers 5.x).
        read: builds the Model fields from a :class:`_Reader`.
        text_config: this type is a wrapper whose language model is in ``text_config`` with this
            inner ``model_type`` (Gemma 3: ``gemma3_text``); empty for a text model.
    """

    model_type: str
    label: str
    config_class: str
    defaults: Mapping[str, Any]
    read: Callable[[_Reader], dict[str, Any]]
    text_config: str = ""


# ---------------------------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------------------------


def _attention(r: _Reader, *, head_dim_default: str = "derived") -> dict[str, Any]:
    """D, L, H, K, d_head, F, V, tied embeddings and the context limit: the keys every architecture has.

    ``head_dim`` absent or null: D // H (transformers' rule) unless the class has a numeric default
    (Gemma: 256; Qwen3: 128), which :attr:`Architecture.defaults` supplies.
    """
    out: dict[str, Any] = {}
    out["hidden_size"] = r.int("hidden_size", required=True)
    out["num_layers"] = r.int("num_hidden_layers", required=True)
    heads = r.int("num_attention_heads", required=True)
    out["num_heads"] = heads
    kv = r.int("num_key_value_heads", note_as="num_kv_heads")
    if kv is None:  # transformers: num_key_value_heads None -> num_attention_heads (multi-head attention)
        kv = heads
        r.notes.setdefault("num_kv_heads", f"config.json has no {r.name('num_key_value_heads')}: "
                                          f"as many key/value heads as query heads ({format_int(heads)})")
    if heads % kv:
        raise ConfigError(
            r.name("num_key_value_heads"),
            f"config.json: {r.name('num_key_value_heads')!r} ({format_int(kv)}) must divide "
            f"{r.name('num_attention_heads')!r} ({format_int(heads)}): each key/value head serves a whole group of query heads",
        )
    out["num_kv_heads"] = kv
    head_dim = r.int("head_dim", note_as="head_dim")
    if head_dim is None:
        head_dim = out["hidden_size"] // heads
        if head_dim < 1:
            raise ConfigError(
                r.name("num_attention_heads"),
                f"config.json: {r.name('num_attention_heads')!r} ({format_int(heads)}) must be at most "
                f"{r.name('hidden_size')!r} ({format_int(out['hidden_size'])}) when there is no head_dim",
            )
        r.notes.setdefault("head_dim", f"config.json has no {r.name('head_dim')}: hidden_size / num_attention_heads = "
                                       f"{format_int(out['hidden_size'])} / {format_int(heads)} = {format_int(head_dim)}")
    out["head_dim"] = head_dim
    out["intermediate_size"] = r.int("intermediate_size", required=True)
    out["vocab_size"] = r.int("vocab_size", required=True, note_as="vocab_size")
    out["tie_embeddings"] = r.bool("tie_word_embeddings", False, note_as="tie_embeddings")
    out["max_context"] = r.int("max_position_embeddings", required=True, note_as="max_context")
    return out


def _pattern(r: _Reader, layer_types: list[str], layers: int, local: str = "sliding_attention") -> int | None:
    """``full_attention_every`` from a ``layer_types`` list whose other layers are ``local``
    (``sliding_attention``, ``chunked_attention`` or ``linear_attention``): None when every layer is
    local, n when layers n, 2n, ... (1-based) are the full ones, 0 when no layer is local.

    Raises ConfigError for another type or another layout (the catalog's record cannot hold it)."""
    key = r.name("layer_types")
    allowed = ("full_attention", local)
    if len(layer_types) != layers:
        raise ConfigError(key, f"config.json: {key!r} must list one type per layer ({format_int(layers)}), "
                               f"got {format_int(len(layer_types))}")
    for t in layer_types:
        if t not in allowed:
            raise ConfigError(key, f"config.json: {key!r} holds {_show(t)}; allowed layer types: "
                                   f"{', '.join(allowed)}")
    full = [i for i, t in enumerate(layer_types) if t == "full_attention"]
    if not full:
        return None
    if len(full) == layers:
        return 0
    n = full[0] + 1
    if all((t == "full_attention") == ((i + 1) % n == 0) for i, t in enumerate(layer_types)):
        return n
    raise ConfigError(key, f"config.json: {key!r} must repeat one pattern, {LOCAL_WORDS[local]} layers then one "
                           f"full layer (as {LOCAL_EXAMPLES[local]} do); this layout is not supported")


def _sliding(r: _Reader, window: int | None, every: int | None) -> SlidingWindow | None:
    """A SlidingWindow, or None when there is no window or no layer uses it (``every == 0``)."""
    if window is None or every == 0:
        return None
    return SlidingWindow(window=window, full_attention_every=every)


def _sliding_from_layer_types(r: _Reader, layers: int, pattern_default: int) -> SlidingWindow | None:
    """Gemma 2/3 and gpt-oss: ``sliding_window`` plus ``layer_types`` (or the class's default
    pattern: layer i slides unless (i + 1) is a multiple of ``pattern_default``)."""
    window = r.int("sliding_window", note_as="sliding")
    types = r.list_of("layer_types", str, "layer type names")
    if types is None:
        pattern = r.int("sliding_window_pattern")
        if pattern is None:
            pattern = pattern_default
        types = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)]
        r.notes.setdefault("sliding", f"config.json has no {r.name('layer_types')}: the transformers "
                                      f"{r.arch.config_class} rule applies (every {format_int(pattern)}th layer is full)")
    return _sliding(r, window, _pattern(r, types, layers))


def _check_moe(r: _Reader, moe: MoE, e_key: str, k_key: str) -> MoE:
    if moe.experts_per_token > moe.num_experts:
        raise ConfigError(r.name(k_key), f"config.json: {r.name(k_key)!r} ({format_int(moe.experts_per_token)}) "
                                         f"must be at most {r.name(e_key)!r} ({format_int(moe.num_experts)})")
    return moe


def _dense_prefix(r: _Reader, layers: int) -> int:
    """Qwen-MoE: how many leading layers are dense, from ``mlp_only_layers`` and
    ``decoder_sparse_step`` (transformers: layer i is MoE when i is not in mlp_only_layers and
    (i + 1) % decoder_sparse_step == 0). Only "the first n layers dense" is expressible."""
    step = r.int("decoder_sparse_step") or 1
    if step != 1:
        raise ConfigError(r.name("decoder_sparse_step"), f"config.json: {r.name('decoder_sparse_step')!r} must be 1 "
                                                          f"(every layer may be MoE), got {format_int(step)}; "
                                                          "interleaved dense and MoE layers are not supported")
    only = r.list_of("mlp_only_layers", int, "layer numbers") or []
    dense = sorted(set(only))
    if dense != list(range(len(dense))) or len(dense) > layers:
        raise ConfigError(r.name("mlp_only_layers"), f"config.json: {r.name('mlp_only_layers')!r} must be the first "
                                                     f"layers (0, 1, 2, ...), got {_show(only)}")
    return len(dense)


def _qwen_sliding(r: _Reader, layers: int) -> SlidingWindow | None:
    """Qwen2/Qwen3: ``sliding_window`` counts only with ``use_sliding_window``; then layers from
    ``max_window_layers`` on slide (or as ``layer_types`` says)."""
    if not r.bool("use_sliding_window", False):
        return None
    window = r.int("sliding_window", note_as="sliding")
    if window is None:
        return None
    types = r.list_of("layer_types", str, "layer type names")
    if types is None:
        first = r.int("max_window_layers")
        first = layers if first is None else first
        types = ["sliding_attention" if i >= first else "full_attention" for i in range(layers)]
    return _sliding(r, window, _pattern(r, types, layers))


# ---------------------------------------------------------------------------------------------
# How the release stores its weights
# ---------------------------------------------------------------------------------------------

#: config.json ``torch_dtype`` (or transformers 5's ``dtype``) -> precision name: the catalog's table,
#: which a row's own ``torch_dtype`` field uses too.
DTYPES = TORCH_DTYPES

#: Weight groups (descent.weights.GROUPS) a quantization_config converts: the matmul weights.
#: Embeddings, the output head, norms and routers stay in the checkpoint's dtype, as gpt-oss's
#: modules_to_not_convert and DeepSeek-V3's README_WEIGHTS.md say of theirs.
QUANTIZED_GROUPS = ("attention", "dense_ffn", "experts", "shared_experts")
ALL_GROUPS = ("embedding", "output_head", *QUANTIZED_GROUPS, "router", "norms")


def released_by_group(config: Mapping[str, Any], inner: Mapping[str, Any] | None = None) -> tuple[dict[str, str] | None, str]:
    """The published checkpoint's precision per weight group, from ``torch_dtype`` and
    ``quantization_config``, and a sentence saying how it was read.

    * no quantization_config: every group in ``torch_dtype`` (BF16 when the file names none);
    * ``quant_method`` ``mxfp4`` (gpt-oss): the routed experts in MXFP4 (modules_to_not_convert
      keeps attention, routers, embeddings and head in the dtype);
    * ``fp8``: the matmul weights in FP8, with ``weight_block_size`` [128, 128] as
      ``fp8_b128`` (one FP32 scale per block: DeepSeek-V3);
    * ``awq`` / ``gptq`` with ``bits`` 4 or 8: the matmul weights as ``int4`` (group 128 scales)
      or ``int8``.

    Returns ``(None, why)`` for another method (the reader then picks a precision).
    """
    def dtype_of(d: Mapping[str, Any] | None) -> str | None:
        if not isinstance(d, Mapping):
            return None
        t = d.get("torch_dtype", d.get("dtype"))
        return DTYPES.get(t) if isinstance(t, str) else None

    base = dtype_of(inner) or dtype_of(config)
    how = "config.json torch_dtype" if base else "config.json names no torch_dtype: BF16 assumed"
    base = base or "bf16"
    q = config.get("quantization_config")
    if q is None and isinstance(inner, Mapping):
        q = inner.get("quantization_config")
    groups = dict.fromkeys(ALL_GROUPS, base)
    if q is None:
        return groups, f"{how}: {base.upper()} throughout"
    method = q.get("quant_method") if isinstance(q, Mapping) else None
    if method == "mxfp4":
        groups["experts"] = "mxfp4"
        return groups, f"config.json quantization_config mxfp4: routed experts in MXFP4, the rest {base.upper()}"
    if method == "fp8":
        block = q.get("weight_block_size")
        p = "fp8_b128" if block == [128, 128] else "fp8"
        groups.update(dict.fromkeys(QUANTIZED_GROUPS, p))
        return groups, (f"config.json quantization_config fp8{' with 128 x 128 blocks' if p == 'fp8_b128' else ''}: "
                        f"matmul weights in FP8; embeddings, head, norms and routers {base.upper()}")
    if method in ("awq", "gptq") and q.get("bits") in (4, 8):
        p = "int4" if q["bits"] == 4 else "int8"
        groups.update(dict.fromkeys(QUANTIZED_GROUPS, p))
        return groups, f"config.json quantization_config {method} {q['bits']}-bit: matmul weights in {p.upper()}"
    return None, (f"config.json quantization_config (quant_method {_show(method)}) is not one this calculator "
                  "reads as released (allowed: mxfp4, fp8, awq, gptq); choose a weight precision instead")


# ---------------------------------------------------------------------------------------------
# The architectures
# ---------------------------------------------------------------------------------------------


def _llama(r: _Reader) -> dict[str, Any]:
    out = _attention(r)
    bias = r.bool("attention_bias", False)  # LlamaAttention: q, k, v and o projections
    return {**out, "attention_bias": bias, "attention_out_bias": bias, "mlp_bias": r.bool("mlp_bias", False)}


def _mistral(r: _Reader) -> dict[str, Any]:
    out = _attention(r)
    # MistralConfig/MixtralConfig: every layer slides when sliding_window is set (null: none).
    out["sliding"] = _sliding(r, r.int("sliding_window", note_as="sliding"), None)
    return out


def _mixtral(r: _Reader) -> dict[str, Any]:
    out = _mistral(r)
    e = r.int("num_local_experts", required=True)
    k = r.int("num_experts_per_tok", required=True)
    # Each expert is a gated FFN of width intermediate_size (MixtralExperts).
    out["moe"] = _check_moe(r, MoE(e, k, out["intermediate_size"]), "num_local_experts", "num_experts_per_tok")
    return out


def _qwen2(r: _Reader) -> dict[str, Any]:
    out = _attention(r)
    # Qwen2Attention: q, k and v projections always have a bias, o_proj none.
    return {**out, "attention_bias": True, "sliding": _qwen_sliding(r, out["num_layers"])}


def _qwen_moe(r: _Reader, *, shared: bool, sliding: bool = True) -> dict[str, Any]:
    """Qwen2-MoE, Qwen3-MoE and Qwen3-Next: routed experts of moe_intermediate_size, with ``shared``
    one shared expert behind a sigmoid gate; ``sliding``: the class reads use_sliding_window."""
    out = _attention(r)
    if sliding:
        out["sliding"] = _qwen_sliding(r, out["num_layers"])
    e = r.int("num_experts", required=True)
    if e == 0:  # transformers: num_experts > 0 is required for an MoE layer; 0 = a dense model
        return out
    k = r.int("num_experts_per_tok", required=True)
    width = r.int("moe_intermediate_size", required=True)
    shared_width = r.int("shared_expert_intermediate_size", note_as="moe") if shared else 0
    moe = MoE(
        num_experts=e,
        experts_per_token=k,
        expert_intermediate_size=width,
        # Qwen2MoeSparseMoeBlock: one shared expert of shared_expert_intermediate_size, scaled by a
        # sigmoid gate (a D x 1 linear layer, no bias).
        num_shared_experts=1 if shared_width else 0,
        shared_expert_intermediate_size=shared_width or 0,
        shared_expert_gate=bool(shared_width),
        first_dense_layers=_dense_prefix(r, out["num_layers"]),
    )
    out["moe"] = _check_moe(r, moe, "num_experts", "num_experts_per_tok")
    return out


def _qwen2_moe(r: _Reader) -> dict[str, Any]:
    out = _qwen_moe(r, shared=True)
    return {**out, "attention_bias": r.bool("qkv_bias", True)}  # Qwen2MoeAttention: q, k, v bias = qkv_bias


def _qwen3(r: _Reader) -> dict[str, Any]:
    out = _attention(r)
    bias = r.bool("attention_bias", False)  # Qwen3Attention: q, k, v and o projections
    return {**out, "attention_bias": bias, "attention_out_bias": bias, "qk_norm": True,
            "sliding": _qwen_sliding(r, out["num_layers"])}


def _qwen3_moe(r: _Reader) -> dict[str, Any]:
    out = _qwen_moe(r, shared=False)
    bias = r.bool("attention_bias", False)
    return {**out, "attention_bias": bias, "attention_out_bias": bias, "qk_norm": True}


def _gemma(r: _Reader, *, pattern: int, qk_norm: bool) -> dict[str, Any]:
    out = _attention(r)
    bias = r.bool("attention_bias", False)
    # Gemma2/3DecoderLayer: input, post-attention, pre-feedforward and post-feedforward RMSNorm.
    # hidden_activation gelu_pytorch_tanh: a GELU-gated FFN (GeGLU), not SwiGLU.
    return {**out, "attention_bias": bias, "attention_out_bias": bias, "norms_per_layer": 4, "qk_norm": qk_norm,
            "ffn_gate": "GeGLU", "sliding": _sliding_from_layer_types(r, out["num_layers"], pattern)}


def _gpt_oss(r: _Reader) -> dict[str, Any]:
    out = _attention(r)
    e = r.int("num_local_experts", required=True)
    if "num_experts_per_tok" not in r.data and "experts_per_token" in r.data:
        k = r.int("experts_per_token", required=True)  # the original release's name for it
    else:
        k = r.int("num_experts_per_tok", required=True, note_as="moe")
    bias = r.bool("attention_bias", True)
    moe = MoE(e, k, out["intermediate_size"], router_bias=True, expert_bias=True)  # GptOssTopKRouter.bias, GptOssExperts biases
    return {
        **out,
        "ffn_gate": "clamped SwiGLU",  # GptOssExperts: the gate and up values are clamped (limit 7.0)
        "attention_bias": bias,
        "attention_out_bias": bias,
        "attention_sinks": True,  # GptOssAttention.sinks: one learned logit per head
        "moe": _check_moe(r, moe, "num_local_experts", "num_experts_per_tok"),
        "sliding": _sliding_from_layer_types(r, out["num_layers"], 2),
    }


def _phi3(r: _Reader) -> dict[str, Any]:
    out = _attention(r)
    # Phi3Attention: every layer uses sliding_window when it is set.
    return {**out, "sliding": _sliding(r, r.int("sliding_window", note_as="sliding"), None)}


def _deepseek(r: _Reader, *, correction_bias: bool) -> dict[str, Any]:
    out = _attention(r)
    nope = r.int("qk_nope_head_dim", required=True)
    rope = r.int("qk_rope_head_dim", required=True)
    q_rank = r.int("q_lora_rank", note_as="mla")  # null: queries are not compressed
    mla = MLA(
        q_lora_rank=q_rank or 0,
        kv_lora_rank=r.int("kv_lora_rank", required=True),
        qk_rope_head_dim=rope,
        qk_nope_head_dim=nope,
        v_head_dim=r.int("v_head_dim", required=True),
    )
    out["head_dim"] = nope + rope  # the query/key head width (DeepSeek-V2 paper, section 2.1.3)
    out["mla"] = mla
    r.notes["head_dim"] = (f"qk_nope_head_dim + qk_rope_head_dim = {format_int(nope)} + {format_int(rope)} "
                           f"= {format_int(nope + rope)}")
    bias = r.bool("attention_bias", False)
    if bias and not mla.q_lora_rank:
        raise ConfigError(r.name("attention_bias"), f"config.json: {r.name('attention_bias')!r} must be false "
                                                    "when q_lora_rank is null (not supported)")
    out["attention_bias"] = out["attention_out_bias"] = bias  # q_a_proj, kv_a_proj_with_mqa and o_proj
    freq = r.int("moe_layer_freq") or 1
    if freq != 1:
        raise ConfigError(r.name("moe_layer_freq"), f"config.json: {r.name('moe_layer_freq')!r} must be 1 (every layer "
                                                    f"after the first dense ones is MoE), got {format_int(freq)}")
    e = r.int("n_routed_experts", required=True)
    width = r.int("moe_intermediate_size", required=True)
    dense = r.int("first_k_dense_replace", note_as="moe", high=out["num_layers"]) or 0
    moe = MoE(
        num_experts=e,
        experts_per_token=r.int("num_experts_per_tok", required=True),
        expert_intermediate_size=width,
        num_shared_experts=r.int("n_shared_experts", note_as="moe") or 0,
        shared_expert_intermediate_size=width,  # one MLP of n_shared x moe_intermediate_size = n_shared of width F_e
        first_dense_layers=dense,
        # DeepseekV3TopkRouter.e_score_correction_bias: one per expert, stored in the checkpoint.
        router_score_correction_bias=correction_bias,
        # scoring_func: DeepSeek-V3 and Kimi K2 score experts with a sigmoid (DeepSeek-V2: softmax);
        # norm_topk_prob: the chosen weights are divided by their sum.
        router_scoring="sigmoid" if r.data.get("scoring_func", "softmax") == "sigmoid" else "softmax",
        router_normalize=bool(r.data.get("norm_topk_prob", True)),
    )
    out["moe"] = _check_moe(r, moe, "n_routed_experts", "num_experts_per_tok")
    return out


def _llama4(r: _Reader) -> dict[str, Any]:
    """Llama 4's text model (transformers Llama4TextConfig, Llama4TextDecoderLayer).

    Its ``intermediate_size`` is one expert's width (and the shared expert's); a dense layer is
    ``intermediate_size_mlp`` wide, which is what ``Model.intermediate_size`` holds. Layers in
    ``moe_layers`` (default: every ``interleave_moe_layer_step``-th) are MoE: a sigmoid router that
    does not renormalise (Llama4Router), the routed experts and one shared expert. ``layer_types``
    (or ``no_rope_layers``, or every ``no_rope_layer_interval``-th layer) says which layers attend to
    the whole context; the others attend within chunks of ``attention_chunk_size`` (null: none do).
    The query/key norm (``use_qk_norm``) is an L2 norm without weights: no parameters.
    """
    out = _attention(r)
    layers = out["num_layers"]
    expert_width = out["intermediate_size"]
    dense = r.int("intermediate_size_mlp", required=True, note_as="intermediate_size")
    out["intermediate_size"] = dense
    r.notes.setdefault("intermediate_size", f"config.json {r.name('intermediate_size_mlp')} = {format_int(dense)}, the "
                                            f"width of a dense FFN layer ({r.name('intermediate_size')} = "
                                            f"{format_int(expert_width)} is each expert's, Llama4TextConfig)")
    bias = r.bool("attention_bias", False)  # Llama4TextAttention: q, k, v and o projections
    out["attention_bias"] = out["attention_out_bias"] = bias
    listed = r.list_of("moe_layers", int, "layer numbers")
    if listed is None:
        key = "interleave_moe_layer_step"
        step = r.int(key) or 1
        listed = list(range(step - 1, layers, step))  # Llama4TextConfig.__post_init__
    else:
        key = "moe_layers"
    moe_layers = sorted(set(listed))
    if moe_layers:
        first = moe_layers[0]
        if first < 0 or moe_layers != list(range(first, layers)):
            raise ConfigError(r.name(key), f"config.json: {r.name(key)!r} must make every layer MoE from the first MoE "
                                           f"layer on (Llama 4 Scout: interleave_moe_layer_step 1), got MoE layers "
                                           f"{_show(moe_layers)}; interleaved dense and MoE layers are not supported")
        e = r.int("num_local_experts", required=True)
        moe = MoE(
            num_experts=e,
            experts_per_token=r.int("num_experts_per_tok", required=True),
            expert_intermediate_size=expert_width,
            # Llama4TextMoe: a shared expert as wide as a routed one, in every MoE layer; Llama4Router
            # weights the chosen expert by the sigmoid of its score, not renormalised.
            num_shared_experts=1,
            shared_expert_intermediate_size=expert_width,
            first_dense_layers=first,
            router_scoring="sigmoid",
            router_normalize=False,
        )
        out["moe"] = _check_moe(r, moe, "num_local_experts", "num_experts_per_tok")
    out["chunked"] = _chunked(r, layers)
    return out


def _chunked(r: _Reader, layers: int) -> ChunkedAttention | None:
    """Llama 4's chunked local attention: ``attention_chunk_size`` and which layers are full."""
    chunk = r.int("attention_chunk_size", note_as="chunked.chunk")
    types = r.list_of("layer_types", str, "layer type names")
    if types is None:
        nope = r.list_of("no_rope_layers", int, "0 or 1 per layer (1: a RoPE layer)")
        if nope:  # Llama4TextConfig: an empty list means "every no_rope_layer_interval-th layer"
            if len(nope) != layers or any(v not in (0, 1) for v in nope):
                key = r.name("no_rope_layers")
                raise ConfigError(key, f"config.json: {key!r} must hold one 0 or 1 per layer ({format_int(layers)} "
                                       f"layers; 0 marks a layer without RoPE, which attends to the whole context), "
                                       f"got {_show(nope)}")
            rope = [bool(v) for v in nope]
            how = f"the layers {r.name('no_rope_layers')} marks 0 (no RoPE)"
        else:
            n = r.int("no_rope_layer_interval") or 4
            rope = [(i + 1) % n != 0 for i in range(layers)]
            source = "" if "no_rope_layer_interval" in r.data else f", the Llama4TextConfig default {format_int(n)}"
            how = (f"every {format_int(n)}th layer, the ones without RoPE ({r.name('no_rope_layers')} empty or absent: "
                   f"{r.name('no_rope_layer_interval')}{source})")
        # Llama4TextConfig.__post_init__: a RoPE layer is chunked when there is a chunk size.
        types = ["chunked_attention" if use_rope and chunk is not None else "full_attention" for use_rope in rope]
    else:
        how = f"the full_attention layers of {r.name('layer_types')}"
    every = _pattern(r, types, layers, "chunked_attention")
    if chunk is None or every == 0:
        return None
    r.notes.setdefault("chunked", f"config.json {r.name('attention_chunk_size')} = {format_int(chunk)}: full attention "
                                  f"on {how}; the other layers attend within their chunk")
    return ChunkedAttention(chunk=chunk, full_attention_every=every)


def _qwen3_next(r: _Reader) -> dict[str, Any]:
    """Qwen3-Next (transformers Qwen3NextConfig, Qwen3NextDecoderLayer): Gated DeltaNet layers with every
    n-th layer full (gated) attention, routed experts plus a gated shared expert on every layer.

    Code rules, not keys: the full-attention layers have a sigmoid output gate (q_proj is twice as
    wide) and RMSNorm on each head's query and key (q_norm, k_norm of head_dim). There is no sliding
    window. ``partial_rotary_factor`` (RoPE on a quarter of each head) changes no count.
    """
    out = _qwen_moe(r, shared=True, sliding=False)
    bias = r.bool("attention_bias", False)  # Qwen3NextAttention: q, k, v and o projections
    out.update(attention_bias=bias, attention_out_bias=bias, qk_norm=True, attention_output_gate=True)
    out["linear_attention"] = _linear_attention(r, out["num_layers"])
    return out


def _linear_attention(r: _Reader, layers: int) -> LinearAttention | None:
    """Qwen3-Next's Gated DeltaNet layers: which layers (``layer_types``, else every layer but each
    ``full_attention_interval``-th) and their shape (``linear_*``); None when every layer is full."""
    types = r.list_of("layer_types", str, "layer type names")
    if types is None:
        key = "full_attention_interval"
        n = r.int(key) or 4
        types = ["linear_attention" if (i + 1) % n else "full_attention" for i in range(layers)]
        source = "" if key in r.data else f", the Qwen3NextConfig default {format_int(n)}"
        how = (f"every {format_int(n)}th layer full attention ({r.name(key)}{source}), the others Gated DeltaNet "
               "linear attention")
    else:
        key = "layer_types"
        how = f"{r.name(key)}: its linear_attention layers are Gated DeltaNet, the others full attention"
    every = _pattern(r, types, layers, "linear_attention")
    if every == 0:
        return None
    if every is None:
        raise ConfigError(r.name(key), f"config.json: {r.name(key)!r} must leave at least one full-attention layer "
                                       f"among the {format_int(layers)}; a model of linear-attention layers only is "
                                       "not supported")
    fields = {
        name: r.int(key_, required=True, note_as=f"linear_attention.{name}")
        for name, key_ in (("num_key_heads", "linear_num_key_heads"), ("num_value_heads", "linear_num_value_heads"),
                           ("key_head_dim", "linear_key_head_dim"), ("value_head_dim", "linear_value_head_dim"),
                           ("conv_kernel", "linear_conv_kernel_dim"))
    }
    if fields["num_value_heads"] % fields["num_key_heads"]:
        key = r.name("linear_num_key_heads")
        raise ConfigError(key, f"config.json: {key!r} ({format_int(fields['num_key_heads'])}) must divide "
                               f"{r.name('linear_num_value_heads')!r} ({format_int(fields['num_value_heads'])}): each "
                               "query/key head serves a whole group of value heads (Qwen3NextGatedDeltaNet)")
    r.notes.setdefault("linear_attention", f"config.json: {how}")
    return LinearAttention(**fields, full_attention_every=every)


def _wrapper(r: _Reader) -> dict[str, Any]:  # pragma: no cover - model_from_config reads text_config instead
    raise ConfigError("text_config", f"config.json: a {r.arch.model_type} config must keep its language model in 'text_config'")


def _arch(model_type: str, label: str, config_class: str, read: Callable[[_Reader], dict[str, Any]],
          text_config: str = "", **defaults: Any) -> Architecture:
    return Architecture(model_type, label, config_class, defaults, read, text_config)


#: Every architecture read, by ``model_type``. ``defaults`` are the transformers 5.x class
#: defaults for keys a release may leave out (the five shape keys D, L, H, F, V never default,
#: except Gemma 3's vocab_size, which its releases omit).
ARCHITECTURES: dict[str, Architecture] = {
    a.model_type: a
    for a in (
        _arch("llama", "Llama", "LlamaConfig", _llama, max_position_embeddings=2048, tie_word_embeddings=False),
        _arch("mistral", "Mistral", "MistralConfig", _mistral, max_position_embeddings=131072,
              tie_word_embeddings=False, num_key_value_heads=8, sliding_window=4096),
        _arch("mixtral", "Mixtral", "MixtralConfig", _mixtral, max_position_embeddings=131072,
              tie_word_embeddings=False, num_key_value_heads=8, sliding_window=None),
        _arch("qwen2", "Qwen2", "Qwen2Config", _qwen2, max_position_embeddings=32768,
              tie_word_embeddings=False, num_key_value_heads=32, sliding_window=4096, max_window_layers=28),
        _arch("qwen2_moe", "Qwen2-MoE", "Qwen2MoeConfig", _qwen2_moe, max_position_embeddings=32768,
              tie_word_embeddings=False, num_key_value_heads=16, sliding_window=4096, max_window_layers=28,
              shared_expert_intermediate_size=5632, decoder_sparse_step=1, mlp_only_layers=[]),
        _arch("qwen3", "Qwen3", "Qwen3Config", _qwen3, max_position_embeddings=32768,
              tie_word_embeddings=False, num_key_value_heads=32, head_dim=128, sliding_window=4096,
              max_window_layers=28),
        _arch("qwen3_moe", "Qwen3-MoE", "Qwen3MoeConfig", _qwen3_moe, max_position_embeddings=32768,
              tie_word_embeddings=False, num_key_value_heads=4, sliding_window=4096, max_window_layers=28,
              decoder_sparse_step=1, mlp_only_layers=[]),
        _arch("gemma2", "Gemma 2", "Gemma2Config", lambda r: _gemma(r, pattern=2, qk_norm=False),
              max_position_embeddings=8192, tie_word_embeddings=True, num_key_value_heads=4, head_dim=256,
              sliding_window=4096),
        _arch("gemma3_text", "Gemma 3", "Gemma3TextConfig", lambda r: _gemma(r, pattern=6, qk_norm=True),
              max_position_embeddings=131072, tie_word_embeddings=True, num_key_value_heads=4, head_dim=256,
              vocab_size=262208, sliding_window=4096),
        _arch("gemma3", "Gemma 3", "Gemma3Config", _wrapper, text_config="gemma3_text"),
        _arch("deepseek_v2", "DeepSeek-V2", "DeepseekV2Config", lambda r: _deepseek(r, correction_bias=False),
              max_position_embeddings=2048, tie_word_embeddings=False, q_lora_rank=1536,
              first_k_dense_replace=0, n_shared_experts=2),
        _arch("deepseek_v3", "DeepSeek-V3", "DeepseekV3Config", lambda r: _deepseek(r, correction_bias=True),
              max_position_embeddings=4096, tie_word_embeddings=False, num_key_value_heads=128, q_lora_rank=1536,
              first_k_dense_replace=3, n_shared_experts=1),
        # Kimi K2 ships the DeepSeek-V3 architecture (architectures: DeepseekV3ForCausalLM) under its own type.
        _arch("kimi_k2", "Kimi K2 (DeepSeek-V3 architecture)", "DeepseekV3Config",
              lambda r: _deepseek(r, correction_bias=True), max_position_embeddings=4096,
              tie_word_embeddings=False, num_key_value_heads=128, q_lora_rank=1536, first_k_dense_replace=3,
              n_shared_experts=1),
        _arch("gpt_oss", "gpt-oss", "GptOssConfig", _gpt_oss, max_position_embeddings=131072,
              tie_word_embeddings=False, num_key_value_heads=8, head_dim=64, sliding_window=128,
              num_experts_per_tok=4),
        _arch("phi3", "Phi-3", "Phi3Config", _phi3, max_position_embeddings=4096, tie_word_embeddings=False,
              sliding_window=None),
        _arch("llama4_text", "Llama 4", "Llama4TextConfig", _llama4, max_position_embeddings=131072,
              tie_word_embeddings=False, num_key_value_heads=8, head_dim=128, intermediate_size_mlp=16384,
              interleave_moe_layer_step=1, attention_chunk_size=8192, no_rope_layer_interval=4),
        _arch("llama4", "Llama 4", "Llama4Config", _wrapper, text_config="llama4_text"),
        _arch("qwen3_next", "Qwen3-Next", "Qwen3NextConfig", _qwen3_next, max_position_embeddings=32768,
              tie_word_embeddings=False, num_key_value_heads=2, head_dim=256, shared_expert_intermediate_size=512,
              decoder_sparse_step=1, mlp_only_layers=[], full_attention_interval=4, linear_num_key_heads=16,
              linear_num_value_heads=32, linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel_dim=4),
    )
}

#: ``architectures`` class names that identify a model_type when a config has none.
_BY_CLASS = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2", "Qwen2MoeForCausalLM": "qwen2_moe", "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe", "Gemma2ForCausalLM": "gemma2", "Gemma3ForCausalLM": "gemma3_text",
    "Gemma3ForConditionalGeneration": "gemma3", "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3", "GptOssForCausalLM": "gpt_oss", "Phi3ForCausalLM": "phi3",
    "Llama4ForCausalLM": "llama4_text", "Llama4ForConditionalGeneration": "llama4",
    "Qwen3NextForCausalLM": "qwen3_next",
}


def known_model_types() -> list[str]:
    """The ``model_type`` values :func:`read_config` accepts, in a stable order."""
    return list(ARCHITECTURES)


def _model_type(data: Mapping[str, Any], where: str) -> tuple[str, str]:
    """(model_type, how it was found) of one config object."""
    key = where + "model_type"
    mt = data.get("model_type", _ABSENT)
    if mt is _ABSENT or mt is None:
        classes = data.get("architectures")
        if isinstance(classes, list):
            for c in classes:
                if isinstance(c, str) and c in _BY_CLASS:
                    return _BY_CLASS[c], f"architectures {c}"
        raise ConfigError(key, f"config.json must have {key!r}; allowed: {', '.join(known_model_types())}")
    if not isinstance(mt, str):
        raise ConfigError(key, f"config.json: {key!r} must be text, got {_show(mt)}; allowed: {', '.join(known_model_types())}")
    return mt, "model_type"


def model_from_config(
    config: Mapping[str, Any], *, name: str | None = None, source: str = "config.json", model_id: str = CUSTOM_ID
) -> Model:
    """A :class:`~descent.catalog.Model` from a parsed config.json (a dict).

    Args:
        config: the JSON object, as ``json.loads`` returns it.
        name: display name; default ``"<family> from config.json"`` (or the config's
            ``_name_or_path`` when it has one).
        source: where the text came from (a path, "pasted config.json"), for ``Model.sources``.
        model_id: the record's id (default :data:`CUSTOM_ID`).

    Returns:
        A Model whose architecture fields follow the transformers class of its ``model_type``;
        ``params_total_published`` is 0 (nothing published: the counts are computed).

    Raises:
        ConfigError: unknown ``model_type`` (the message lists :func:`known_model_types`), a
            missing shape key, a key of the wrong type or out of :data:`LIMITS`, heads that do not
            divide, a layout the record cannot express.
    """
    if not isinstance(config, Mapping):
        raise ConfigError(None, f"config.json must be a JSON object {{...}}, got {_show(config)}")
    mt, found = _model_type(config, "")
    outer = None
    data, prefix = config, ""
    if mt not in ARCHITECTURES or ARCHITECTURES[mt].text_config:
        inner = config.get("text_config")
        wrapper = ARCHITECTURES.get(mt)
        if isinstance(inner, Mapping):
            inner_mt = inner.get("model_type") or (wrapper.text_config if wrapper else None)
            if isinstance(inner_mt, str) and inner_mt in ARCHITECTURES and not ARCHITECTURES[inner_mt].text_config:
                outer, data, prefix, mt = mt, inner, "text_config.", inner_mt
        elif inner is not None and wrapper is not None:
            raise ConfigError("text_config", f"config.json: 'text_config' must be a JSON object, got {_show(inner)}")
        elif wrapper is not None:
            raise ConfigError("text_config", f"config.json: a {wrapper.model_type} config must have its 'text_config' "
                                             "(the language model's keys)")
    if mt not in ARCHITECTURES:
        raise ConfigError("model_type", f"config.json: model_type {_show(mt)} is not an architecture this "
                                        f"calculator reads; allowed: {', '.join(known_model_types())}")
    arch = ARCHITECTURES[mt]
    r = _Reader(data, arch, prefix)
    fields = arch.read(r)
    if outer is not None and "tie_word_embeddings" not in data and isinstance(config.get("tie_word_embeddings"), bool):
        fields["tie_embeddings"] = config["tie_word_embeddings"]  # the wrapper's own key (Gemma3Config)
        r.notes["tie_embeddings"] = "config.json tie_word_embeddings (top level)"
    label = arch.label
    path = config.get("_name_or_path")
    if name is None:
        name = path if isinstance(path, str) and 0 < len(path) <= 80 else f"{label} from config.json"
    where = f"{source}, model_type {mt}" + (f" in the {outer} config's text_config" if outer else "")
    if found != "model_type":
        where += f" (read from {found})"
    released, how = released_by_group(config, data if outer is not None else None)
    # sources["model_type"]: the architecture, for rules keyed on it (descent.weights: llama.cpp's
    # 70B attn_v rule applies to an 80-layer Llama, catalog row or config.json alike).
    sources = {"default": where, **r.notes, "released_by_group": how, "model_type": mt}
    note = f"Read from {source} ({label} architecture); nothing published, every count is computed."
    if outer:
        note += f" The {outer} wrapper's other towers (vision, audio) are not counted."
    return Model(
        id=model_id,
        name=name,
        hf_repo=path if isinstance(path, str) and path.count("/") == 1 and len(path) <= 96 else "",
        params_total_published=0.0,
        params_published_note=note,
        sources=sources,
        released_by_group=released,
        **fields,
    )


def _depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in ``text``, outside JSON strings."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def read_config(text: str, *, name: str | None = None, source: str = "config.json", model_id: str = CUSTOM_ID) -> Model:
    """A :class:`~descent.catalog.Model` from the text of a config.json.

    Args:
        text: the file's text (at most :data:`MAX_CONFIG_CHARS` characters).
        name, source, model_id: as :func:`model_from_config`.

    Raises:
        ConfigError: empty or too long text, nesting deeper than :data:`MAX_DEPTH`, not JSON (the
            message gives line and column), a number too long to read, and every error of
            :func:`model_from_config`.
    """
    if not isinstance(text, str):
        raise ConfigError(None, f"config.json must be text, got {type(text).__name__}")
    if not text.strip():
        raise ConfigError(None, "config.json must not be empty: paste the model's config.json, a JSON object {...}")
    if len(text) > MAX_CONFIG_CHARS:
        raise ConfigError(None, f"config.json must be at most {format_int(MAX_CONFIG_CHARS)} characters, "
                                f"got {format_int(len(text))}")
    if _depth(text) > MAX_DEPTH:
        raise ConfigError(None, f"config.json must not nest lists or objects more than {format_int(MAX_DEPTH)} deep")
    try:
        data = json.loads(text, parse_int=_json_int, parse_float=_json_float, parse_constant=_json_constant,
                          object_pairs_hook=_json_object)
    except ConfigError:
        raise
    except json.JSONDecodeError as exc:
        raise ConfigError(None, f"config.json must be valid JSON: {exc.msg} (line {format_int(exc.lineno)}, "
                                f"column {format_int(exc.colno)})") from None
    except RecursionError:  # pragma: no cover - _depth keeps json.loads far from its limit
        raise ConfigError(None, "config.json must not nest lists or objects this deeply") from None
    except ValueError:  # pragma: no cover - _json_int and _json_float read every number first
        raise ConfigError(None, "config.json must hold numbers that can be read") from None
    return model_from_config(data, name=name, source=source, model_id=model_id)


#: Most digits a config.json number may have: released configs' longest are about 20 (a rope
#: theta of 500000.0, an epsilon of 1e-05); Python refuses integers past 4,300 digits in its own words.
MAX_NUMBER_DIGITS = 100


def _json_int(digits: str) -> int:
    """json.loads' integer reader: refuses an integer of more than :data:`MAX_NUMBER_DIGITS` digits."""
    if len(digits.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise ConfigError(None, f"config.json must hold numbers of at most {format_int(MAX_NUMBER_DIGITS)} digits; "
                                f"one integer has {format_int(len(digits.lstrip('-')))} digits, too many digits to be a size")
    return int(digits)


def _json_float(text: str) -> float:
    """json.loads' real-number reader: refuses one too large for a float (``1e999``), which Python
    would read as infinity, and one too long to be a written value."""
    if len(text) > MAX_NUMBER_DIGITS:
        raise ConfigError(None, f"config.json must hold numbers of at most {format_int(MAX_NUMBER_DIGITS)} "
                                f"characters; one has {format_int(len(text))}, too many digits")
    x = float(text)
    if not math.isfinite(x):
        raise ConfigError(None, f"config.json must hold finite numbers: {text} is too large to be a number "
                                f"here (the largest is about 1.8e308)")
    return x


def _json_constant(word: str) -> float:
    """json.loads' reader for NaN, Infinity and -Infinity, which Python accepts and JSON does not."""
    raise ConfigError(None, f"config.json must hold finite numbers: {word} is not a number JSON allows "
                            "(write a number such as 4096)")


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json.loads' object builder: refuses a key written twice (JSON would silently keep the last)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ConfigError(key, f"config.json must give each key once: {key!r} appears twice; "
                                   "keep the one you mean")
        out[key] = value
    return out
