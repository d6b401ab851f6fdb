"""Exact arithmetic of a decoder-only transformer: parameter counts, KV-cache sizes, FLOPs per token.

Everything here is integer arithmetic on a catalog :class:`~descent.catalog.Model` (except
:func:`flops_per_token`, which returns a float for convenience). The core rule holds: this module
imports only the standard library and the catalog, so it runs unchanged in Pyodide.

Symbols (DESIGN.md): L layers, D d_model, H query heads, K key/value heads, d_head, F FFN width,
V vocabulary, E routed experts, k experts per token, T context tokens.

Architecture assumptions, checked against ``transformers`` on the meta device by
``tests/test_peer_params.py`` for every catalog model:

* every FFN (dense, routed expert, shared expert) is gated: three D x F matrices (gate, up, down),
  as in SwiGLU / GeGLU (Shazeer 2020, "GLU Variants Improve Transformer", eq. 5-6; the row's
  ``ffn_gate`` says which);
* normalisation is RMSNorm, one weight vector per norm and no bias (Zhang & Sennrich 2019);
* positions are rotary (RoPE) or absent (Llama 4's full-attention layers), so there is no
  position-embedding table.

**Layer kinds and the cache** (:func:`layer_kind`). A full-attention layer caches a key and a value
(or MLA's latent) for every token of the context; a sliding-window layer at most ``window`` of them;
a chunked layer (Llama 4) at most one chunk; a **linear-attention layer** of a hybrid model
(Qwen3-Next's Gated DeltaNet) caches nothing per token but keeps a fixed-size state per sequence,
the same at ten tokens as at a million. :func:`kv_cache_elements` counts all of it:
``sum over attention layers of per-token values x tokens held + the linear layers' fixed state``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache, wraps

from descent import params
from descent.catalog import ROUTER_SCORINGS, Model
from descent.checks import is_int, is_real
from descent.units import format_int

__all__ = [
    "FLOP_PER_MAC",
    "GATED_FFN_MATRICES",
    "KV_TENSORS",
    "LAYER_KINDS",
    "LINEAR_STATE_MACS",
    "MAX_CONTEXT_TOKENS",
    "ParamCounts",
    "attended_tokens",
    "attention_flops_per_token",
    "beyond_max_context",
    "cached_tokens",
    "check_context",
    "check_tp",
    "tp_degrees",
    "tp_message",
    "flops_per_token",
    "kv_cache_elements",
    "kv_cache_bytes",
    "STATE_BITS",
    "kv_elements_per_token",
    "kv_elements_per_token_mha",
    "kv_elements_per_token_per_layer",
    "layer_kind",
    "matmul_params_per_token",
    "param_counts",
    "published_active_convention",
    "state_elements",
    "state_elements_per_layer",
    # Part 1 additions
    "CLASSIC_FFN_MATRICES",
    "NORM_WEIGHTS",
    "ROUTER_SCORING",
    "StackCount",
    "attend",
    "route",
    "softmax",
    "stack_params",
]


def _memo(fn):
    """Remember ``fn``'s results by argument (models are frozen, hashable records): the sizing of
    a whole field of chips asks for the same model's counts hundreds of times, and each is a loop
    over layers. An unhashable argument is computed directly, so the function's own checks name it.
    """
    cached = lru_cache(maxsize=4096, typed=True)(fn)  # typed: True is not the context 1

    @wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return cached(*args, **kwargs)
        except TypeError as err:
            if "unhashable" not in str(err):
                raise
            return fn(*args, **kwargs)

    return wrapper


#: Largest context, in tokens, any function here accepts. A calculator bound, not a model property:
#: a model's own limit is ``Model.max_context`` (config.json ``max_position_embeddings``); asking
#: for more is allowed so readers can explore, and :func:`beyond_max_context` says when they do.
MAX_CONTEXT_TOKENS = params.CONTEXT.max

#: FLOP per multiply-accumulate: one multiply plus one add (Kaplan et al. 2020, "Scaling Laws for
#: Neural Language Models", arXiv:2001.08361, section 2.1: "2N" forward FLOPs per token).
FLOP_PER_MAC = 2

#: Tensors a standard attention layer caches per token and KV head: one key and one value.
KV_TENSORS = 2

#: Weight matrices of one gated FFN: gate, up and down projections (Shazeer 2020, eq. 5-6).
GATED_FFN_MATRICES = 3

#: Multiply-accumulates per state element and token in a linear-attention (Gated DeltaNet) layer:
#: the state times the key (what it recalls), the rank-1 update, the state times the query (the
#: output); the decay's one multiply per element is left out like softmax's exponentials
#: (Yang, Kautz & Hatamizadeh 2024, arXiv:2412.06464, section 2, the gated delta rule).
LINEAR_STATE_MACS = 3

#: Bits per value of a linear-attention layer's fixed state (recurrent matrices and convolution
#: window). vLLM keeps it in the model's own dtype, BF16, whatever the KV-cache dtype: its
#: ``cache_config.mamba_cache_dtype`` defaults to "auto" (the model dtype) and
#: ``MambaStateDtypeCalculator.gated_delta_net_state_dtype`` reads that, not ``kv_cache_dtype``
#: (vllm/model_executor/layers/mamba/mamba_utils.py). So an FP8 KV cache leaves the state 16-bit.
STATE_BITS = 16


@dataclass(frozen=True)
class ParamCounts:
    """Exact parameter counts of one model, by component. Unit: parameters (weights), integers.

    Attributes:
        embedding: the input embedding table, V x D. When the output head is tied it is this
            same matrix and is counted here, once.
        attention: every layer's attention projections (Q, K, V, O, or MLA's down/up
            projections), their biases and gpt-oss's attention sinks; not the q/k norms.
        dense_ffn: every dense (non-expert) FFN, all layers, with biases.
        experts: all routed experts of all MoE layers, with biases.
        shared_experts: the always-on shared experts of all MoE layers (DeepSeek-V3).
        router: every MoE layer's router (gate) weights, biases, score-correction biases and
            shared-expert gate (Qwen2-MoE).
        norms: every RMSNorm weight: the per-layer norms, the q/k norms, MLA's latent norms and
            the final norm.
        output_head: the untied output projection (LM head), D x V; 0 when tied.
        active_experts: the routed-expert parameters one token uses: k of E experts in every
            MoE layer (E divides the per-layer total exactly, so this is an integer).

    Properties:
        total: the sum of every component (``active_experts`` is a share of ``experts``, not
            an extra component).
        active: parameters used to produce one token, **the site's one convention** (stated on
            Part 1's page, used by every page, widget and the CLI): everything except the routed
            experts a token does not pick, **including the whole embedding table** (although a
            token reads only one row of it), as Mixtral, Qwen3-235B and Llama 4 publish it. For a
            dense model ``active == total``. Publishers who count otherwise (gpt-oss, DeepSeek-V3,
            Kimi K2 without the embedding table; Qwen3-Next without the output head too) are
            matched by :func:`published_active_convention`. Code that needs bytes read per decoded
            token should sum the components itself and decide the embedding rule there.
    """

    embedding: int
    attention: int
    dense_ffn: int
    experts: int
    shared_experts: int
    router: int
    norms: int
    output_head: int
    active_experts: int

    @property
    def in_layers(self) -> int:
        """The layer stack's weights: attention, dense FFNs, routed and shared experts, routers (no norms)."""
        return self.attention + self.dense_ffn + self.experts + self.shared_experts + self.router

    @property
    def embeddings(self) -> int:
        """The embedding table plus the untied output head (0 when tied)."""
        return self.embedding + self.output_head

    @property
    def total(self) -> int:
        return (
            self.embedding
            + self.attention
            + self.dense_ffn
            + self.experts
            + self.shared_experts
            + self.router
            + self.norms
            + self.output_head
        )

    @property
    def active(self) -> int:
        return self.total - self.experts + self.active_experts

    @property
    def non_embedding(self) -> int:
        """``total`` minus the embedding table (and minus the untied head), as Qwen's cards count."""
        return self.total - self.embedding - self.output_head


# ---------------------------------------------------------------------------------------------
# Parameter counts
# ---------------------------------------------------------------------------------------------


#: Layer kinds of :func:`layer_kind`.
LAYER_KINDS = ("full", "sliding", "chunked", "linear")


def layer_kind(model: Model, layer: int) -> str:
    """How 0-based ``layer`` attends: ``"linear"`` (a linear-attention layer of a hybrid model,
    fixed-size state, :class:`~descent.catalog.LinearAttention`), ``"sliding"`` (a sliding window),
    ``"chunked"`` (Llama 4's chunked local attention) or ``"full"`` (every earlier token).

    Raises:
        ValueError: ``layer`` is not 0 to L - 1.
    """
    _check_layer(model, layer)
    if model.linear_attention is not None and model.linear_attention.is_linear(layer):
        return "linear"
    if model.sliding is not None and model.sliding.is_sliding(layer):
        return "sliding"
    if model.chunked is not None and model.chunked.is_chunked(layer):
        return "chunked"
    return "full"


def _linear_weights(m: Model) -> int:
    """Weight-matrix entries of one linear-attention (Gated DeltaNet) layer: the q/k/v/z input
    projection, the beta/alpha projection and the output projection (transformers
    ``Qwen3NextGatedDeltaNet``: in_proj_qkvz, in_proj_ba, out_proj)."""
    la, D = m.linear_attention, m.hidden_size
    key, value = la.num_key_heads * la.key_head_dim, la.num_value_heads * la.value_head_dim
    return D * (2 * key + 2 * value) + D * 2 * la.num_value_heads + value * D


def _attention_weights(m: Model, layer: int) -> int:
    """Weight-matrix entries (no biases, no sinks) of ``layer``'s attention (or linear attention)."""
    if layer_kind(m, layer) == "linear":
        return _linear_weights(m)
    D, H = m.hidden_size, m.num_heads
    if m.mla is not None:
        a = m.mla
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        if a.q_lora_rank:
            q = D * a.q_lora_rank + a.q_lora_rank * H * qk  # W^DQ (D, d_c') and W^UQ, W^QR (d_c', H*qk)
        else:
            q = D * H * qk
        kv_down = D * (a.kv_lora_rank + a.qk_rope_head_dim)  # W^DKV and the shared W^KR (eq. 9-10)
        kv_up = a.kv_lora_rank * H * (a.qk_nope_head_dim + a.v_head_dim)  # W^UK and W^UV
        o = H * a.v_head_dim * D
        return q + kv_down + kv_up + o
    q = D * H * m.head_dim * (2 if m.attention_output_gate else 1)  # + the output gate's half
    kv = 2 * D * m.num_kv_heads * m.head_dim
    o = H * m.head_dim * D
    return q + kv + o


def _attention_extras(m: Model, layer: int) -> int:
    """Biases, sinks and other non-matmul parameters of ``layer``'s attention (no norms)."""
    H = m.num_heads
    if layer_kind(m, layer) == "linear":
        la = m.linear_attention
        # the depthwise causal convolution (conv_dim x kernel, no bias), dt_bias and A_log
        return la.conv_dim * la.conv_kernel + 2 * la.num_value_heads
    n = 0
    if m.mla is not None:
        a = m.mla
        if m.attention_bias:  # transformers DeepseekV3Attention: bias on q_a_proj and kv_a_proj_with_mqa
            n += a.q_lora_rank or H * (a.qk_nope_head_dim + a.qk_rope_head_dim)
            n += a.kv_lora_rank + a.qk_rope_head_dim
    elif m.attention_bias:
        n += H * m.head_dim + 2 * m.num_kv_heads * m.head_dim
    if m.attention_out_bias:
        n += m.hidden_size
    if m.attention_sinks:
        n += H  # one sink logit per query head (gpt-oss model card, section 2.1)
    return n


def _norms(m: Model, layer: int) -> int:
    """RMSNorm weights of ``layer``: the per-layer norms, q/k norms, MLA's latent norms, and a
    linear-attention layer's gated norm of width d_v."""
    n = m.norms_per_layer * m.hidden_size
    if layer_kind(m, layer) == "linear":
        return n + m.linear_attention.value_head_dim  # RMSNormGated, shared by the value heads
    if m.qk_norm:
        n += 2 * m.head_dim  # q_norm and k_norm, shared by all heads
    if m.mla is not None:
        n += m.mla.kv_lora_rank + m.mla.q_lora_rank  # kv_a_layernorm, q_a_layernorm (0 if no q LoRA)
    return n


def _gated_ffn(d_model: int, width: int, bias: bool) -> int:
    """One gated FFN: gate and up (D x F each), down (F x D), biases 2F + D if present."""
    return GATED_FFN_MATRICES * d_model * width + ((2 * width + d_model) if bias else 0)


def _layer_split(m: Model) -> tuple[int, int]:
    """(dense FFN layers, MoE layers)."""
    if m.moe is None:
        return m.num_layers, 0
    dense = min(m.moe.first_dense_layers, m.num_layers)
    return dense, m.num_layers - dense


@_memo
def param_counts(model: Model) -> ParamCounts:
    """Exact parameter counts of ``model``, by component.

    Args:
        model: a catalog model.

    Returns:
        :class:`ParamCounts` (integers, unit: parameters). ``total`` equals
        ``sum(p.numel() for p in model.parameters())`` of the matching ``transformers`` CausalLM
        (plus DeepSeek-V3's ``e_score_correction_bias``, which transformers keeps as a buffer).

    Per layer: attention Q (D x H*d_head; twice that with an output gate), K and V (D x K*d_head
    each), O (H*d_head x D); a linear-attention layer as :class:`~descent.catalog.LinearAttention`
    describes it; MLA
    (DeepSeek-V2 paper, arXiv:2405.04434, section 2.1, eq. 9-13): W^DQ (D x q_lora_rank),
    W^UQ+W^QR (q_lora_rank x H*(d_nope+d_rope)), W^DKV+W^KR (D x (kv_lora_rank+d_rope)),
    W^UK+W^UV (kv_lora_rank x H*(d_nope+d_v)), O (H*d_v x D). FFN: 3*D*F (gated). Norms: RMSNorm
    weights of size D, d_head (q/k norm), q_lora_rank and kv_lora_rank (MLA latents).
    Whole model: V x D embedding, a final D norm, and a D x V head unless tied.

    Raises:
        Nothing beyond what the catalog already validated.
    """
    m = model
    D, L = m.hidden_size, m.num_layers
    embedding = m.vocab_size * D
    output_head = 0 if m.tie_embeddings else m.vocab_size * D
    attention = sum(_attention_weights(m, i) + _attention_extras(m, i) for i in range(L))
    norms = sum(_norms(m, i) for i in range(L)) + D  # + the final norm

    dense_layers, moe_layers = _layer_split(m)
    dense_ffn = dense_layers * _gated_ffn(D, m.intermediate_size, m.mlp_bias)
    experts = shared = router = active_experts = 0
    if m.moe is not None:
        e = m.moe
        per_expert = _gated_ffn(D, e.expert_intermediate_size, e.expert_bias)
        experts = moe_layers * e.num_experts * per_expert
        active_experts = moe_layers * e.experts_per_token * per_expert
        shared = (
            moe_layers * e.num_shared_experts * _gated_ffn(D, e.shared_expert_intermediate_size, m.mlp_bias)
        )
        per_router = e.num_experts * D
        per_router += e.num_experts if e.router_bias else 0
        per_router += e.num_experts if e.router_score_correction_bias else 0
        per_router += D if e.shared_expert_gate else 0  # Qwen3-Next: Linear(D, 1) on the shared expert
        router = moe_layers * per_router

    return ParamCounts(
        embedding=embedding,
        attention=attention,
        dense_ffn=dense_ffn,
        experts=experts,
        shared_experts=shared,
        router=router,
        norms=norms,
        output_head=output_head,
        active_experts=active_experts,
    )


def published_active_convention(m: Model) -> tuple[str, int]:
    """How a MoE model's published active count was counted: of the three conventions publishers use
    (the whole embedding table counted, as Mixtral, Qwen3-235B and Llama 4 do and this site does;
    the embedding table left out, as gpt-oss, DeepSeek-V3 and Kimi K2 do; the embedding table and
    the output head both left out, Qwen3-Next), the one whose exact count is nearest the published
    figure. Returns (words for the sentence, that exact count).

    Raises:
        ValueError: a dense model (no published active count).
    """
    if m.params_active_published is None:
        raise ValueError(f"{m.name} has no published active count")
    p = param_counts(m)
    ways = [
        ("counts the whole embedding table too", p.active),
        ("leaves the embedding table out", p.active - p.embedding),
        ("leaves out the embedding table and the output head", p.active - p.embedding - p.output_head),
    ]
    return min(ways, key=lambda w: abs(w[1] - m.params_active_published))


# ---------------------------------------------------------------------------------------------
# Context and the KV cache
# ---------------------------------------------------------------------------------------------


def check_context(model: Model, context: int) -> None:
    """Raise ``ValueError`` unless ``context`` is an integer from 1 to :data:`MAX_CONTEXT_TOKENS`.

    Contexts beyond ``model.max_context`` are allowed (see :func:`beyond_max_context`).
    """
    try:
        params.CONTEXT.check(context)
    except params.ParamError as exc:
        raise params.ParamError("context", f"{exc.message} ({model.name} supports up to {format_int(model.max_context)})") from None


def tp_degrees(model: Model) -> list[int]:
    """The tensor-parallel degrees ``model`` can be split by, in order: Megatron-LM's rule (Shoeybi
    et al. 2019, section 3; vLLM's and TensorRT-LLM's checks): the H query heads divide evenly
    (H % tp == 0) and so do the K key/value heads, or each KV head is copied to tp / K devices
    (K % tp == 0 or tp % K == 0)."""
    h, k = model.num_heads, model.num_kv_heads
    return [t for t in range(1, h + 1) if h % t == 0 and (k % t == 0 or t % k == 0)]


def _or_list(xs: list[int]) -> str:
    words = [format_int(x) for x in xs]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def tp_message(model: Model, tp: int) -> str:
    """Why ``tp`` cannot split ``model``, naming the degrees that can (:func:`tp_degrees`)."""
    got = format_int(tp) if is_int(tp) else repr(tp)
    return (f"tp must divide {model.name}'s {format_int(model.num_heads)} query heads and divide, or be a "
            f"multiple of, its {format_int(model.num_kv_heads)} KV heads: {_or_list(tp_degrees(model))}; got {got}")


def check_tp(model: Model, tp: int) -> None:
    """Raise ``ParamError`` (field ``tp``) unless ``tp`` is one of :func:`tp_degrees`."""
    if tp not in tp_degrees(model):
        raise params.ParamError("tp", tp_message(model, tp))


def beyond_max_context(model: Model, context: int) -> bool:
    """True when ``context`` tokens exceed what the release supports (``model.max_context``,
    config.json ``max_position_embeddings``). Raises ``ValueError`` for a bad context."""
    check_context(model, context)
    return context > model.max_context


def _check_layer(model: Model, layer: int) -> None:
    if not is_int(layer) or not 0 <= layer < model.num_layers:
        raise ValueError(
            f"layer must be 0 to {model.num_layers - 1} ({model.name} has {model.num_layers} layers), got {layer!r}"
        )


def kv_elements_per_token_per_layer(model: Model, layer: int) -> int:
    """Values one token adds to ``layer``'s KV cache (elements, not bytes).

    * MHA / GQA / MQA: ``2 * K * d_head``: a key and a value for each of the K key/value heads
      (GQA: Ainslie et al. 2023, arXiv:2305.13245, section 2; K = H is MHA, K = 1 is MQA).
    * MLA: ``kv_lora_rank + qk_rope_head_dim``: one compressed latent c^KV plus one decoupled
      RoPE key k^R shared by all heads, with no factor 2 and no factor H (DeepSeek-V2 paper,
      arXiv:2405.04434, section 2.1.2-2.1.3, eq. 9-10 and table 1).
    * a linear-attention layer of a hybrid model: 0. It keeps a fixed-size state instead, which
      does not grow with the context (:func:`state_elements_per_layer`).

    Every attention layer caches the same per-token amount in the catalog's models; for them
    ``layer`` matters only for how many tokens are held (see :func:`cached_tokens`).

    Args:
        model: a catalog model.
        layer: 0-based layer index, 0 to L - 1.

    Raises:
        ValueError: ``layer`` is out of range.
    """
    if layer_kind(model, layer) == "linear":
        return 0
    if model.mla is not None:
        return model.mla.kv_lora_rank + model.mla.qk_rope_head_dim
    return KV_TENSORS * model.num_kv_heads * model.head_dim


def state_elements_per_layer(model: Model, layer: int) -> int:
    """Values ``layer`` keeps per sequence whatever the context (elements): the recurrent state and
    convolution window of a linear-attention layer (:attr:`descent.catalog.LinearAttention.state_elements`:
    ``H_v * d_k * d_v + (conv_kernel - 1) * conv_dim``; Gated DeltaNet, arXiv:2412.06464, section 2),
    0 for an attention layer.

    Raises:
        ValueError: ``layer`` is out of range.
    """
    if layer_kind(model, layer) != "linear":
        return 0
    return model.linear_attention.state_elements


@_memo
def state_elements(model: Model) -> int:
    """The fixed-size part of one sequence's cache, all layers (elements): what the linear-attention
    layers of a hybrid model keep instead of keys and values. 0 for a model without them.

    Example: Qwen3-Next-80B-A3B: 36 linear layers x (32 x 128 x 128 + 3 x 8,192) = 19,759,104 values
    (39.5 MB at BF16), the same at 10 tokens and at 262,144.
    """
    return sum(state_elements_per_layer(model, i) for i in range(model.num_layers))


@_memo
def kv_elements_per_token(model: Model) -> int:
    """Values one token adds to the KV cache, summed over the layers whose cache grows (elements).

    Ignores sliding windows and chunks: this is the per-token cost while the context is shorter
    than every window. Linear-attention layers add nothing per token (their state is fixed; see
    :func:`state_elements`). For a whole sequence use :func:`kv_cache_elements`.
    Example: Llama 3.1 70B: 2 * 8 * 128 * 80 = 163,840 elements (327,680 bytes at BF16).
    """
    return sum(kv_elements_per_token_per_layer(model, i) for i in range(model.num_layers))


def kv_elements_per_token_mha(model: Model) -> int:
    """Values one token would add to the KV cache if every query head had its own key and value
    head (MHA): ``2 * H * d_head`` per layer that caches keys and values (a hybrid's linear-attention
    layers keep a state instead). The yardstick GQA and MQA are measured against (Ainslie et al.
    2023, section 2). Raises ValueError for an MLA model (it caches a latent, not heads).
    """
    if model.mla is not None:
        raise ValueError(f"{model.name} uses MLA: it caches a latent, not key/value heads")
    caching = sum(1 for i in range(model.num_layers) if layer_kind(model, i) != "linear")
    return KV_TENSORS * caching * model.num_heads * model.head_dim


def cached_tokens(model: Model, layer: int, context: int) -> int:
    """Tokens ``layer`` must hold in its KV cache to serve ``context`` tokens.

    * sliding window: ``min(context, window)`` (Mistral 7B paper, arXiv:2310.06825, section 2,
      rolling buffer cache);
    * chunked (Llama 4): ``min(context, chunk)``: a chunked layer attends only within the current
      chunk, so it never needs more than one chunk (it holds ((context - 1) mod chunk) + 1 tokens
      at exactly ``context``; the memory to reserve is the fullest chunk on the way);
    * linear attention: 0 (a fixed state instead, :func:`state_elements_per_layer`);
    * full attention: ``context``.

    Raises:
        ValueError: bad ``layer`` or ``context``.
    """
    kind = layer_kind(model, layer)
    check_context(model, context)
    if kind == "sliding":
        return min(context, model.sliding.window)
    if kind == "chunked":
        return min(context, model.chunked.chunk)
    if kind == "linear":
        return 0
    return context


def attended_tokens(model: Model, layer: int, context: int) -> int:
    """Tokens the newest token attends to in ``layer`` at ``context`` tokens (itself included):
    :func:`cached_tokens`, except on a chunked layer, where only the current chunk counts:
    ``((context - 1) mod chunk) + 1``. 0 on a linear-attention layer (no attention scores).

    Raises:
        ValueError: bad ``layer`` or ``context``.
    """
    if layer_kind(model, layer) == "chunked":
        check_context(model, context)
        return (context - 1) % model.chunked.chunk + 1
    return cached_tokens(model, layer, context)


@_memo
def kv_cache_elements(model: Model, context: int) -> int:
    """Values in one sequence's KV cache at ``context`` tokens, all layers (elements).

    ``sum over layers l of kv_elements_per_token_per_layer(l) * cached_tokens(l, context)``, plus
    the fixed state of any linear-attention layers (:func:`state_elements`): sliding-window and
    chunked layers hold at most a window or a chunk of tokens, and a linear-attention layer holds
    the same state at every context. For bytes use :func:`kv_cache_bytes` (the state has its own
    precision, :data:`STATE_BITS`); multiply by the batch for a batch.

    Args:
        model: a catalog model.
        context: tokens in the sequence, 1 to :data:`MAX_CONTEXT_TOKENS` (may exceed
            ``model.max_context``; see :func:`beyond_max_context`).

    Raises:
        ValueError: ``context`` is not a whole number from 1 to :data:`MAX_CONTEXT_TOKENS`.
    """
    check_context(model, context)
    growing = sum(
        kv_elements_per_token_per_layer(model, i) * cached_tokens(model, i, context)
        for i in range(model.num_layers)
    )
    return growing + state_elements(model)


def kv_cache_bytes(model: Model, context: int, kv_bits: float) -> float:
    """Bytes of one sequence's cache at ``context`` tokens (bytes): the growing keys and values at
    ``kv_bits`` per value, plus any linear-attention state at :data:`STATE_BITS` per value (its own
    precision: quantizing the KV cache does not quantize the state).

    ``(kv_cache_elements - state_elements) x kv_bits / 8 + state_elements x STATE_BITS / 8``.
    Example: Qwen3-Next-80B-A3B at 4,096 tokens with an FP8 KV cache: 12 full-attention layers x
    2 x 2 heads x 256 x 4,096 values at 1 byte + 19,759,104 state values at 2 bytes.

    Raises:
        ValueError: ``context`` out of range (as :func:`kv_cache_elements`), or ``kv_bits`` not a
            positive number.
    """
    if not is_real(kv_bits) or not kv_bits > 0:
        raise ValueError(f"KV bits per value must be a positive number, got {kv_bits!r}")
    state = state_elements(model)
    growing = kv_cache_elements(model, context) - state
    return (growing * kv_bits + state * STATE_BITS) / 8


# ---------------------------------------------------------------------------------------------
# FLOPs
# ---------------------------------------------------------------------------------------------


@_memo
def matmul_params_per_token(model: Model) -> int:
    """Weight-matrix entries one token multiplies by (parameters): attention projections, the
    dense FFNs, the shared experts, k of E routed experts, the routers and the output head
    (the V x D matrix, counted even when tied to the embedding). Excludes the embedding lookup
    (a gather, not a matmul), norms, biases and sinks (element-wise, negligible).
    """
    m = model
    D = m.hidden_size
    n = sum(_attention_weights(m, i) for i in range(m.num_layers))
    dense_layers, moe_layers = _layer_split(m)
    n += dense_layers * GATED_FFN_MATRICES * D * m.intermediate_size
    if m.moe is not None:
        e = m.moe
        per_layer = e.experts_per_token * e.expert_intermediate_size
        per_layer += e.num_shared_experts * e.shared_expert_intermediate_size
        n += moe_layers * (GATED_FFN_MATRICES * D * per_layer + e.num_experts * D)
        n += moe_layers * D if e.shared_expert_gate else 0
    n += m.vocab_size * D
    return n


@_memo
def attention_flops_per_token(model: Model, context: int) -> int:
    """FLOPs of the attention scores and the weighted sum of values for one new token that
    attends to ``context`` tokens (itself included), all layers (FLOP).

    Per attention layer: ``2 * H * d_qk * T`` for the scores Q K^T plus ``2 * H * d_v * T`` for
    the weighted sum of V, with T = :func:`attended_tokens` (capped on sliding layers, the current
    chunk on chunked ones). d_qk = d_v = d_head, except MLA: d_qk = d_nope + d_rope, d_v =
    v_head_dim (the unabsorbed form). Source: Hoffmann et al. 2022 ("Chinchilla",
    arXiv:2203.15556), appendix F, "logits" and "reductions" rows; Kaplan et al. 2020, table 1
    folds both into 2 * L * n_ctx * d_attn.

    Per linear-attention layer, whatever the context: ``2 * LINEAR_STATE_MACS * H_v * d_k * d_v``
    (:data:`LINEAR_STATE_MACS` passes over the state: read it with the key, update it, read it
    with the query; Gated DeltaNet, arXiv:2412.06464, section 2, the recurrent form).

    Raises:
        ValueError: bad ``context``.
    """
    m = model
    check_context(m, context)
    if m.mla is not None:
        d_qk = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim
        d_v = m.mla.v_head_dim
    else:
        d_qk = d_v = m.head_dim
    per_token_key = FLOP_PER_MAC * m.num_heads * (d_qk + d_v)
    total = 0
    for i in range(m.num_layers):
        if layer_kind(m, i) == "linear":
            la = m.linear_attention
            total += FLOP_PER_MAC * LINEAR_STATE_MACS * la.num_value_heads * la.key_head_dim * la.value_head_dim
        else:
            total += per_token_key * attended_tokens(m, i, context)
    return total


@_memo
def flops_per_token(model: Model, context: int) -> float:
    """Forward-pass FLOPs to produce one token at ``context`` tokens of context (FLOP).

    ``2 * matmul_params_per_token(model) + attention_flops_per_token(model, context)``: two FLOPs
    per multiply-accumulate with every active weight (Kaplan et al. 2020, arXiv:2001.08361,
    section 2.1 and table 1, C_forward = 2N + 2 n_layer n_ctx d_attn), and the attention over the
    context counted as in Hoffmann et al. 2022, appendix F. Norms, softmax, activations and
    biases are left out (under 1% at these sizes, Kaplan et al. table 1).

    Args:
        model: a catalog model.
        context: tokens attended to, 1 to :data:`MAX_CONTEXT_TOKENS`.

    Raises:
        ValueError: bad ``context``.
    """
    return float(FLOP_PER_MAC * matmul_params_per_token(model) + attention_flops_per_token(model, context))


# ---------------------------------------------------------------------------------------------
# Softmax, scaled dot-product attention, MoE routing and the layer-stack count (Part 1 widgets)
# ---------------------------------------------------------------------------------------------

#: Weight matrices of one classic (ungated) FFN: up and down (Vaswani et al. 2017, section 3.3, eq. 2).
CLASSIC_FFN_MATRICES = 2

#: Router scoring functions: ``softmax`` (Mixtral, Qwen3-MoE, gpt-oss) and ``sigmoid`` (DeepSeek-V3,
#: arXiv:2412.19437, section 2.1.2, eq. 15).
ROUTER_SCORING = ROUTER_SCORINGS


def _finite_list(values, field: str) -> list[float]:
    import math

    out = []
    try:
        items = list(values)
    except TypeError:
        raise ValueError(f"{field} must be a list of numbers, got {type(values).__name__}") from None
    if not items:
        raise ValueError(f"{field} must hold at least one number, got an empty list")
    for i, x in enumerate(items):
        if not is_real(x) or not math.isfinite(x):
            raise ValueError(f"{field}[{i}] must be a finite number, got {x!r}")
        out.append(float(x))
    return out


def softmax(scores) -> list[float]:
    """``exp(s_i) / sum_j exp(s_j)`` over a list of finite scores (max-subtracted, so no overflow).

    Shapes: scores (n,) -> probabilities (n,), each in [0, 1], summing to 1.
    Source: Bridle 1990; as used in Vaswani et al. 2017, eq. 1.

    Raises:
        ValueError: empty list or a non-finite score (named by index).
    """
    import math

    s = _finite_list(scores, "scores")
    top = max(s)
    e = [math.exp(x - top) for x in s]
    total = sum(e)
    return [x / total for x in e]


def attend(query, keys, values, scale: bool = True) -> dict:
    """Scaled dot-product attention of one query over T keys and values, in plain Python.

    ``scores_t = q . k_t``; ``scaled_t = scores_t / sqrt(d_k)`` (or unscaled if ``scale`` is
    False); ``weights = softmax(scaled)``; ``output = sum_t weights_t * v_t``.
    Shapes: query (d_k,), keys (T, d_k), values (T, d_v) -> a dict with ``scores`` (T,),
    ``scaled`` (T,), ``weights`` (T,) and ``output`` (d_v,).
    Source: Vaswani et al. 2017, "Attention Is All You Need", section 3.2.1, eq. 1.

    Raises:
        ValueError: empty inputs, non-finite numbers, or mismatched lengths (named).
    """
    import math

    q = _finite_list(query, "query")
    ks = [_finite_list(k, f"keys[{t}]") for t, k in enumerate(keys)]
    vs = [_finite_list(v, f"values[{t}]") for t, v in enumerate(values)]
    if not ks:
        raise ValueError("keys must hold at least one key vector, got none")
    if len(vs) != len(ks):
        raise ValueError(f"values must hold one vector per key ({len(ks)}), got {len(vs)}")
    for t, k in enumerate(ks):
        if len(k) != len(q):
            raise ValueError(f"keys[{t}] must have the query's length {len(q)}, got {len(k)}")
    d_v = len(vs[0])
    for t, v in enumerate(vs):
        if len(v) != d_v:
            raise ValueError(f"values[{t}] must have length {d_v} like values[0], got {len(v)}")
    scores = [sum(a * b for a, b in zip(q, k, strict=True)) for k in ks]
    div = math.sqrt(len(q)) if scale else 1.0
    scaled = [s / div for s in scores]
    weights = softmax(scaled)
    output = [sum(w * v[c] for w, v in zip(weights, vs, strict=True)) for c in range(d_v)]
    return {"scores": scores, "scaled": scaled, "weights": weights, "output": output}


def route(scores, k: int, scoring: str = "softmax", normalize: bool = True) -> list[tuple[int, float]]:
    """Top-k expert routing of one token: the experts chosen and their mixing weights.

    ``scoring="softmax"``: the k largest router logits; with ``normalize`` their weights are a
    softmax over those k (equal to a softmax over all E renormalised over the k chosen: Mixtral,
    arXiv:2401.04088, section 2.1, eq. 1 and "TopK"; Qwen ``norm_topk_prob``; gpt-oss
    ``GptOssTopKRouter``), without it the softmax over all E of each chosen one.
    ``scoring="sigmoid"``: each score is ``sigmoid(logit)``; the k largest are chosen; with
    ``normalize`` their weights are those sigmoids divided by their sum (DeepSeek-V3,
    arXiv:2412.19437, section 2.1.2, eq. 13-15; Kimi K2), without it the sigmoids themselves
    (Llama 4, transformers ``Llama4Router``). DeepSeek-V3 additionally adds a per-expert balancing
    bias when choosing, picks within 4 of 8 expert groups, and multiplies the weights by
    ``routed_scaling_factor`` = 2.5; those are left out here.

    Shapes: scores (E,) -> k pairs ``(expert index, weight)``, largest weight first (ties: lower
    index first); normalised weights sum to 1.

    Raises:
        ValueError: empty or non-finite scores, k not 1 to E, unknown scoring, normalize not a bool.
    """
    import math

    s = _finite_list(scores, "scores")
    if not is_int(k) or not 1 <= k <= len(s):
        raise ValueError(f"k (experts per token) must be 1 to {len(s)}, got {k!r}")
    if scoring not in ROUTER_SCORING:
        raise ValueError(f"scoring must be one of {', '.join(ROUTER_SCORING)}, got {scoring!r}")
    if not isinstance(normalize, bool):
        raise ValueError(f"normalize must be true or false, got {normalize!r}")
    order = sorted(range(len(s)), key=lambda i: (-s[i], i))[:k]
    if scoring == "softmax":
        if normalize:
            weights = softmax([s[i] for i in order])
        else:
            full = softmax(s)
            weights = [full[i] for i in order]
    else:
        sig = [1.0 / (1.0 + math.exp(-s[i])) if s[i] >= 0 else math.exp(s[i]) / (1.0 + math.exp(s[i]))
               for i in order]
        total = sum(sig) if normalize else 1.0
        weights = [x / total for x in sig]
    return list(zip(order, weights, strict=True))


@dataclass(frozen=True)
class StackCount:
    """Weights of a layer stack, by part (unit: parameters). No embeddings, head, biases or norms.

    Attributes:
        attention_per_layer: Q and O (D x H*d_head each) plus K and V (D x K*d_head each).
        ffn_per_layer: 3*D*F gated (SwiGLU) or 2*D*F classic.
        layers: L.
        norms_per_layer: two RMSNorm weight vectors of size D (pre-norm before attention and FFN);
            reported separately, not in ``total``.
    """

    attention_per_layer: int
    ffn_per_layer: int
    layers: int
    norms_per_layer: int
    norm: str = "rmsnorm"

    @property
    def attention(self) -> int:
        return self.layers * self.attention_per_layer

    @property
    def ffn(self) -> int:
        return self.layers * self.ffn_per_layer

    @property
    def total(self) -> int:
        """Attention + FFN weight matrices of every layer."""
        return self.attention + self.ffn


#: The example layer stack of Part 1's weight counter and its page numbers: GPT-2 small / BERT-base
#: proportions (Radford et al. 2019, table 2: 12 layers, d_model 768; FFN 4 * d_model as in
#: Vaswani et al. 2017, section 3.3), classic 2-matrix FFN, LayerNorm with gain and bias (GPT-2's
#: ``ln_1``/``ln_2``, BERT's ``LayerNorm``; Ba et al. 2016), not the catalog models' RMSNorm.
STACK_EXAMPLE = {"layers": 12, "d_model": 768, "heads": 12, "kv_heads": 12, "ffn": 3072, "gated": False,
                 "norm": "layernorm"}

#: Norm kinds of :func:`stack_params` -> weights per number normalised: RMSNorm has a gain
#: (Zhang & Sennrich 2019, eq. 4), LayerNorm a gain and a bias (Ba et al. 2016, eq. 4).
NORM_WEIGHTS = {"rmsnorm": 1, "layernorm": 2}

#: Norms per block: one before attention, one before the FFN (pre-norm; Xiong et al. 2020).
NORMS_PER_BLOCK = 2

#: Keys drawn for :func:`softmax_saturation`: one query against this many keys, entries from a
#: standard normal (mean 0, variance 1, the assumption of Vaswani et al. 2017, footnote 4).
SATURATION_KEYS = 16
#: Seed of :func:`softmax_saturation`'s draw.
SATURATION_SEED = 7


def softmax_saturation(d: int) -> dict:
    """Softmax of one random query against :data:`SATURATION_KEYS` random keys of width ``d``:
    why attention divides its scores by sqrt(d) (Vaswani et al. 2017, section 3.2.1).

    Returns ``score_std`` (standard deviation of the raw dot products: about sqrt(d)), and the
    largest softmax weight with the scores divided by sqrt(d) (``scaled_max``) and without
    (``unscaled_max``), plus the effective number of keys attended (2 to the entropy in bits) for
    each. Deterministic (``random.Random(SATURATION_SEED)``).

    Raises:
        ValueError: d not 1 to 16,384.
    """
    import random

    if not is_int(d) or not 1 <= d <= 16384:
        raise ValueError(f"d must be 1 to 16,384, got {d!r}")
    rng = random.Random(SATURATION_SEED)
    q = [rng.gauss(0, 1) for _ in range(d)]
    keys = [[rng.gauss(0, 1) for _ in range(d)] for _ in range(SATURATION_KEYS)]
    zero = [[0.0] for _ in keys]
    scaled = attend(q, keys, zero, scale=True)
    raw = attend(q, keys, zero, scale=False)
    mean = sum(raw["scores"]) / len(keys)
    std = math.sqrt(sum((s - mean) ** 2 for s in raw["scores"]) / len(keys))

    def spread(w: list[float]) -> float:
        return 2 ** -sum(x * math.log2(x) for x in w if x > 0)

    return {
        "score_std": std,
        "scaled_max": max(scaled["weights"]),
        "unscaled_max": max(raw["weights"]),
        "scaled_spread": spread(scaled["weights"]),
        "unscaled_spread": spread(raw["weights"]),
    }


def stack_params(layers: int, d_model: int, heads: int, kv_heads: int, ffn: int, gated: bool,
                 head_dim: int | None = None, norm: str = "rmsnorm") -> StackCount:
    """Weights of the attention and FFN matrices of a stack of ``layers`` identical blocks.

    Per layer: attention ``D*H*d_head`` (Q) + ``2*D*K*d_head`` (K, V) + ``H*d_head*D`` (O), so
    ``4*D^2`` for MHA with ``d_head = D/H`` (Vaswani et al. 2017, section 3.2.2); FFN ``3*D*F``
    gated (Shazeer 2020, eq. 6) or ``2*D*F`` classic (Vaswani et al. 2017, eq. 2). ``head_dim``
    defaults to ``D / H``, which must then be a whole number.

    Raises:
        ValueError: a non-positive or non-integer size, K not dividing H, or D not divisible by H
            when ``head_dim`` is not given (each message names the field).
    """
    for name, val in (("layers", layers), ("d_model", d_model), ("heads", heads), ("kv_heads", kv_heads),
                      ("ffn", ffn)):
        if not is_int(val) or val < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {val!r}")
    if not isinstance(gated, bool):
        raise ValueError(f"gated must be true or false, got {gated!r}")
    if norm not in NORM_WEIGHTS:
        raise ValueError(f"norm must be one of {', '.join(NORM_WEIGHTS)}, got {norm!r}")
    if kv_heads > heads or heads % kv_heads:
        raise ValueError(f"kv_heads must divide heads ({heads}), got {kv_heads}")
    if head_dim is None:
        if d_model % heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by heads ({heads}) when head_dim is not given")
        head_dim = d_model // heads
    elif not is_int(head_dim) or head_dim < 1:
        raise ValueError(f"head_dim must be a whole number >= 1, got {head_dim!r}")
    attn = 2 * d_model * heads * head_dim + KV_TENSORS * d_model * kv_heads * head_dim
    ffn_w = (GATED_FFN_MATRICES if gated else CLASSIC_FFN_MATRICES) * d_model * ffn
    return StackCount(attn, ffn_w, layers, NORMS_PER_BLOCK * NORM_WEIGHTS[norm] * d_model, norm)
