"""The catalog: real models and accelerators as data, every value with its source.

Four TOML files ship inside the package:

* ``models.toml``: one table per model, architecture fields copied from the model's published
  ``config.json`` (text model only where the release also has a vision tower), plus the published
  total/active parameter counts from the model card or paper.
* ``accelerators.toml``: one table per chip, from datasheets and vendor documentation.
* ``links.toml``: the wires between chips (and the paths a KV cache moves over), with the
  bandwidth and the latency a collective pays on them.
* ``released.toml``: how each model's checkpoint stores its weights (read by descent.weights).

Each row has a ``[X.sources]`` table. ``sources.default`` names where most fields come from; any
field may be given its own source by a key of the same name (``sources.memory_bandwidth = "..."``).
A source that starts with ``estimate:`` or ``derived:`` marks a value the catalog worked out (Apple
publishes no FLOP/s; a card's peak scaled from its bigger sibling's); pages label such values.
:func:`Model.source_of` / :func:`Accelerator.source_of` answer "where does this number come from"
for any field, so reference pages can print a source next to every value.

Loading validates every row: a missing or mistyped field, an unknown key or an impossible value
raises :class:`CatalogError` naming the file, the row and the field. The catalog hands its ids to
``descent.params`` as the choices of ``model``, ``accelerator`` and ``link`` (``params.provide``).
The core rule holds here: standard library only, so it runs unchanged in Pyodide.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from descent import params as P
from descent.checks import is_int, is_real
from descent.units import format_limit

__all__ = [
    "Accelerator",
    "COMPUTE_PRECISIONS",
    "CatalogError",
    "Link",
    "ChunkedAttention",
    "FFN_GATES",
    "LinearAttention",
    "MLA",
    "MoE",
    "Model",
    "ROUTER_SCORINGS",
    "SHARDED_KINDS",
    "SlidingWindow",
    "TORCH_DTYPES",
    "accelerator",
    "accelerators",
    "load_accelerators",
    "link",
    "links",
    "load_links",
    "load_models",
    "model",
    "models",
    "resolve_accelerator",
    "resolve_model",
    "read_file",
]

#: Compute precision -> the Accelerator field holding its dense peak FLOP/s (FP16 runs at the
#: 16-bit peak). Which precision a weight format's matmuls run in is ``numerics.MATMUL_PRECISION``.
COMPUTE_PRECISIONS: dict[str, str] = {
    "bf16": "bf16_flops",
    "fp16": "bf16_flops",
    "fp8": "fp8_flops",
    "fp4": "fp4_flops",
    "mxfp4": "fp4_flops",
    "nvfp4": "fp4_flops",
}


class CatalogError(ValueError):
    """A catalog row is malformed. The message names the file, the row and the field."""


#: How a MoE router turns its logits into the weights of the chosen experts: ``softmax`` (Mixtral,
#: arXiv:2401.04088, section 2.1; Qwen3-MoE; gpt-oss) or ``sigmoid`` (DeepSeek-V3, arXiv:2412.19437,
#: section 2.1.2, eq. 15; Kimi K2; Llama 4, transformers ``Llama4Router``).
ROUTER_SCORINGS = ("softmax", "sigmoid")

#: The gated FFNs of the catalog, by the bend on the gate path: ``SwiGLU`` (SiLU; Shazeer 2020, "GLU
#: Variants Improve Transformer", eq. 6; config ``hidden_act = "silu"``), ``GeGLU`` (GELU, same
#: paper eq. 5; Gemma 3 ``hidden_activation = "gelu_pytorch_tanh"``) and ``clamped SwiGLU``
#: (gpt-oss: gate and up clamped to 7 and the gate a sigmoid of 1.702 x gate, arXiv:2508.10925,
#: section 2; transformers ``GptOssExperts``). All three have the same three D x F matrices.
FFN_GATES = ("SwiGLU", "GeGLU", "clamped SwiGLU")

#: config.json ``torch_dtype`` (transformers 5 calls it ``dtype``) -> ``descent.numerics.PRECISIONS``
#: name: the values a catalog row's ``torch_dtype`` may take, and how ``descent.hfconfig`` reads the file.
TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


@dataclass(frozen=True)
class MoE:
    """Mixture-of-Experts feed-forward layers (Shazeer et al. 2017; Fedus et al. 2021).

    Attributes:
        num_experts: E, routed experts per MoE layer (config ``num_local_experts`` /
            ``n_routed_experts`` / ``num_experts``).
        experts_per_token: k, routed experts each token uses (``num_experts_per_tok``).
        expert_intermediate_size: F_e, hidden width of one expert's gated FFN
            (``moe_intermediate_size``; equals ``intermediate_size`` for Mixtral and gpt-oss).
        num_shared_experts: experts every token always uses (DeepSeek-V3: 1).
        shared_expert_intermediate_size: width of one shared expert (DeepSeek-V3: equal to F_e).
        first_dense_layers: the first N layers use a dense FFN of width ``Model.intermediate_size``
            instead of experts (DeepSeek-V3 ``first_k_dense_replace`` = 3).
        router_bias: the router's linear layer has a bias (gpt-oss).
        router_scoring: how the router weights the chosen experts, one of :data:`ROUTER_SCORINGS`
            (``config.json`` ``scoring_func``; softmax unless the row says otherwise).
        router_normalize: the chosen experts' weights are divided by their sum, so they add up to 1
            (Mixtral's softmax over the top k; ``norm_topk_prob`` in Qwen, DeepSeek-V3 and Kimi K2
            configs). False for Llama 4, whose chosen expert is weighted by its sigmoid as is
            (transformers ``Llama4Router``).
        shared_expert_gate: the shared expert's output is scaled by a learned sigmoid gate, one
            D x 1 weight vector per MoE layer (Qwen3-Next ``shared_expert_gate``); counted as router
            parameters.
        expert_bias: each expert's projections have biases (gpt-oss).
        router_score_correction_bias: the router stores one load-balancing bias per expert,
            added to the scores only to choose experts (DeepSeek-V3 ``e_score_correction_bias``,
            auxiliary-loss-free balancing, DeepSeek-V3 Technical Report, arXiv:2412.19437,
            section 2.1.2). Counted as router parameters: the checkpoint stores it.
        shared_expert_gate: a D x 1 linear layer (no bias) scales the shared expert's output by a
            sigmoid (Qwen2-MoE ``shared_expert_gate``; transformers Qwen2MoeSparseMoeBlock).
            Counted as router parameters.
    """

    num_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    num_shared_experts: int = 0
    shared_expert_intermediate_size: int = 0
    first_dense_layers: int = 0
    router_bias: bool = False
    expert_bias: bool = False
    router_score_correction_bias: bool = False
    router_scoring: str = "softmax"
    router_normalize: bool = True
    shared_expert_gate: bool = False


@dataclass(frozen=True)
class MLA:
    """Multi-head Latent Attention (DeepSeek-V2 paper, arXiv:2405.04434, section 2.1).

    The KV cache holds, per layer and token, one compressed latent of ``kv_lora_rank`` values
    plus one decoupled RoPE key of ``qk_rope_head_dim`` values shared by all heads (eq. 9-10).

    Attributes:
        q_lora_rank: rank of the query down-projection (``q_lora_rank``; 0 = no query compression).
        kv_lora_rank: d_c, rank of the joint KV latent (``kv_lora_rank``).
        qk_rope_head_dim: d_h^R, per-head dimension of the decoupled RoPE part of Q and K.
        qk_nope_head_dim: per-head dimension of the non-RoPE part of Q and K.
        v_head_dim: per-head dimension of V.
    """

    q_lora_rank: int
    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class SlidingWindow:
    """Sliding-window attention (Mistral 7B paper, arXiv:2310.06825, section 2).

    Attributes:
        window: tokens a sliding layer attends to (config ``sliding_window``); its KV cache never
            holds more than this many tokens.
        full_attention_every: None if every layer slides (Mistral 7B v0.1); otherwise every n-th
            layer (1-based: layers n, 2n, ...) is a full-attention layer and the rest slide
            (gpt-oss: 2, Gemma 3: 6, from ``layer_types`` / ``sliding_window_pattern``).
    """

    window: int
    full_attention_every: int | None = None

    def is_sliding(self, layer: int) -> bool:
        """True if 0-based ``layer`` uses the sliding window."""
        if self.full_attention_every is None:
            return True
        return (layer + 1) % self.full_attention_every != 0


@dataclass(frozen=True)
class ChunkedAttention:
    """Chunked local attention (Llama 4, "iRoPE"; transformers ``Llama4TextConfig``).

    The sequence is cut into consecutive chunks of ``chunk`` tokens, and a chunked layer attends only
    to the tokens of the current chunk (itself included): at context T it attends to
    ((T - 1) mod chunk) + 1 tokens and never needs more than ``chunk`` of them in its KV cache. Unlike a
    sliding window, the span restarts at every chunk boundary.

    Attributes:
        chunk: tokens per chunk (config ``attention_chunk_size``; Llama 4 Scout 8,192).
        full_attention_every: None if every layer is chunked; otherwise every n-th layer (1-based:
            layers n, 2n, ...) attends to the whole context (Llama 4 Scout: 4, the layers without
            RoPE, ``no_rope_layers`` / ``layer_types``).
    """

    chunk: int
    full_attention_every: int | None = None

    def is_chunked(self, layer: int) -> bool:
        """True if 0-based ``layer`` attends only within its chunk."""
        if self.full_attention_every is None:
            return True
        return (layer + 1) % self.full_attention_every != 0


@dataclass(frozen=True)
class LinearAttention:
    """Linear-attention layers of a hybrid model: Gated DeltaNet (Yang, Kautz & Hatamizadeh 2024,
    "Gated Delta Networks", arXiv:2412.06464, section 2; Qwen3-Next, transformers
    ``Qwen3NextGatedDeltaNet``).

    Such a layer keeps no KV cache. Per sequence it keeps a **fixed-size state** that does not grow
    with the context: one d_k x d_v matrix per value head (the recurrent state S of the delta rule)
    plus the last ``conv_kernel - 1`` inputs of its short causal convolution over q, k and v. Its
    parameters: a q/k/v/z input projection (D x (2 H_k d_k + 2 H_v d_v)), a beta/alpha projection
    (D x 2 H_v), the depthwise convolution ((2 H_k d_k + H_v d_v) x conv_kernel), a gated RMSNorm of
    d_v, ``dt_bias`` and ``A_log`` (H_v each) and an output projection (H_v d_v x D).

    Attributes:
        num_key_heads: H_k (``linear_num_key_heads``).
        num_value_heads: H_v (``linear_num_value_heads``); one state matrix per value head.
        key_head_dim: d_k (``linear_key_head_dim``).
        value_head_dim: d_v (``linear_value_head_dim``).
        conv_kernel: width of the causal convolution (``linear_conv_kernel_dim``).
        full_attention_every: every n-th layer (1-based: layers n, 2n, ...) is a full (softmax)
            attention layer and the others are linear (``full_attention_interval``; Qwen3-Next 4).
    """

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int
    full_attention_every: int

    def is_linear(self, layer: int) -> bool:
        """True if 0-based ``layer`` is a linear-attention layer."""
        return (layer + 1) % self.full_attention_every != 0

    @property
    def conv_dim(self) -> int:
        """Channels of the causal convolution: q, k and v, ``2 H_k d_k + H_v d_v``."""
        return 2 * self.num_key_heads * self.key_head_dim + self.num_value_heads * self.value_head_dim

    @property
    def state_elements(self) -> int:
        """Values one layer keeps per sequence, whatever the context: ``H_v d_k d_v`` (the
        recurrent states) + ``(conv_kernel - 1) x conv_dim`` (the convolution's last inputs, as vLLM
        keeps them, ``MambaStateShapeCalculator.gated_delta_net_state_shape``)."""
        recurrent = self.num_value_heads * self.key_head_dim * self.value_head_dim
        return recurrent + (self.conv_kernel - 1) * self.conv_dim


@dataclass(frozen=True)
class Model:
    """One model's architecture, from its published config.json.

    Symbols: L layers, D d_model, H query heads, K key/value heads, d_head, F FFN width, V vocab.

    Attributes:
        id: catalog id, e.g. ``"llama-3.1-70b"``.
        name: display name.
        hf_repo: the Hugging Face repository whose config.json the fields come from.
        hidden_size: D (``hidden_size``).
        num_layers: L (``num_hidden_layers``).
        num_heads: H (``num_attention_heads``).
        num_kv_heads: K (``num_key_value_heads``; K = H is MHA, K = 1 is MQA, 1 < K < H is GQA).
        head_dim: d_head (``head_dim``; not always D / H: Qwen3, gpt-oss, Gemma 3 differ).
        intermediate_size: F, width of a dense gated FFN (``intermediate_size``).
        vocab_size: V (``vocab_size``).
        tie_embeddings: the output head reuses the input embedding (``tie_word_embeddings``).
        max_context: longest context the release supports, tokens (``max_position_embeddings``).
        attention_bias: Q, K and V projections have biases (Qwen2, gpt-oss).
        attention_out_bias: the attention output projection has a bias (gpt-oss).
        mlp_bias: dense FFN projections have biases.
        qk_norm: RMSNorm on each head's Q and K, weight of size d_head (Qwen3, Gemma 3; Llama 4's
            parameter-free L2 norm is not one).
        norms_per_layer: RMSNorm weight vectors of size D per layer (2 pre-norm; Gemma 3 has 4).
        attention_sinks: one learned sink logit per query head per layer (gpt-oss).
        attention_output_gate: the attention output is multiplied by a sigmoid gate computed from
            the layer input, so the query projection is twice as wide, D x 2 H d_head (Qwen3-Next
            "gated attention"; transformers ``Qwen3NextAttention``).
        ffn_gate: the gated FFN's kind, one of :data:`FFN_GATES` (from ``hidden_act``); every kind
            has three D x F matrices.
        moe: Mixture-of-Experts shape, or None for a dense model.
        mla: Multi-head Latent Attention shape, or None.
        sliding: sliding-window attention, or None.
        chunked: chunked local attention (Llama 4), or None.
        linear_attention: the linear-attention layers of a hybrid model (Qwen3-Next), or None.
        params_total_published: total parameters as the publisher states them.
        params_active_published: active parameters per token as published (None for dense).
        params_published_note: what the published count includes (embeddings? MTP module?).
        torch_dtype: the checkpoint's dtype as its config.json names it (``torch_dtype``, one of
            :data:`TORCH_DTYPES`). Read only for a row with no row of its own in ``released.toml``:
            such a model is sized "as released" at this dtype in every weight group, and the sizing
            says so (``descent.weights.released_map``). None: the row relies on ``released.toml``.
        sources: ``{"default": ..., field_name: ...}``; see :meth:`source_of`.
        released_by_group: for a record read from a config.json (:mod:`descent.hfconfig`), the
            published checkpoint's precision per weight group (``descent.weights.GROUPS`` ->
            a ``descent.numerics.PRECISIONS`` name), from its ``torch_dtype`` and
            ``quantization_config``; None for a catalog row, whose map is ``released.toml``'s.
    """

    id: str
    name: str
    hf_repo: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_embeddings: bool
    max_context: int
    params_total_published: float
    attention_bias: bool = False
    attention_out_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False
    norms_per_layer: int = 2
    attention_sinks: bool = False
    attention_output_gate: bool = False
    ffn_gate: str = "SwiGLU"
    moe: MoE | None = None
    mla: MLA | None = None
    sliding: SlidingWindow | None = None
    chunked: ChunkedAttention | None = None
    linear_attention: LinearAttention | None = None
    params_active_published: float | None = None
    params_published_note: str = ""
    torch_dtype: str | None = None
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    released_by_group: dict[str, str] | None = field(default=None, compare=False, hash=False)

    def source_of(self, name: str) -> str:
        """Where the value of field ``name`` (e.g. ``"moe.num_experts"``) comes from."""
        return _source_of(self.sources, name)

    @property
    def is_moe(self) -> bool:
        return self.moe is not None


@dataclass(frozen=True)
class Accelerator:
    """One accelerator (a GPU, TPU, or other chip), from datasheets.

    Units: bytes, bytes/s, FLOP/s, watts. GB = 1e9 bytes, GiB = 2**30 bytes.

    Attributes:
        id: catalog id, e.g. ``"h100-sxm"``.
        name: display name.
        vendor: maker.
        kind: ``"gpu"``, ``"tpu"``, ``"asic"`` (Trainium), ``"soc"`` (Apple) or ``"sram"``
            (Groq LPU, Cerebras WSE-3: weights live in on-chip SRAM).
        memory_bytes: capacity of the main memory holding weights and KV cache, bytes (for SRAM
            machines: the on-chip SRAM of one chip, the same number as ``on_chip_memory_bytes``).
        memory_marketed: the vendor's own label, e.g. ``"80 GB"``.
        memory_marketed_unit_is_gib: True when the vendor's "GB" is really GiB (H100's 80 GB of
            HBM3 is 80 GiB); the ``memory_bytes`` field already holds the true byte count.
        memory_type: ``"HBM3e"``, ``"GDDR7"``, ``"LPDDR5"``, ``"SRAM"``...
        memory_bandwidth: bytes/s from that memory (TB/s = 1e12 bytes/s).
        bf16_flops: dense 16-bit floating-point matrix peak, FLOP/s (not 2:4 sparse), with FP32
            accumulation: BF16, or FP16 on chips without BF16 (``peak_16bit_format`` says which).
            GeForce cards run FP16 with FP16 accumulation at twice this rate; the notes say so.
        fp8_flops: dense FP8 peak with FP32 accumulation, FLOP/s, or None where the chip has no
            FP8 (GeForce cards run FP8 with FP16 accumulation at twice this rate).
        fp4_flops: dense FP4 peak, FLOP/s, or None where the chip has no FP4.
        power_watts: board (or module/system) power, W.
        compute_units: SMs, CUs, cores: whatever the vendor counts (``compute_units_name``).
        compute_units_name: what ``compute_units`` counts (``"SM"``, ``"CU"``, ``"TensorCore"``...).
        l2_bytes: the GPU's L2 cache, whole chip, bytes: a hardware-managed cache every SM/CU
            shares, between the SMs and HBM. None: not published, or the chip has none (TPUs,
            Trainium and the SRAM machines manage their on-chip memory in software instead).
        last_level_cache_bytes: a memory-side cache behind L2 (AMD's Infinity Cache), bytes, or
            None where the chip has none.
        on_chip_memory_bytes: software-managed on-chip SRAM that holds operands and results (not a
            cache): Groq's and Cerebras's whole memory, Trainium's SBUF, a TPU's VMEM; bytes, or
            None where not published or not applicable (GPUs: see ``shared_memory_per_unit_bytes``).
        tensor_cores_per_unit: matrix-multiply units per compute unit (NVIDIA tensor cores per SM,
            AMD matrix cores per CU), or None.
        register_file_per_unit_bytes: register file of one SM/CU, bytes, or None.
        shared_memory_per_unit_bytes: the most shared memory (NVIDIA) or LDS (AMD) one SM/CU
            can give a kernel, bytes: the programmer-managed scratchpad tiles are loaded into.
        shared_memory_bytes_per_clock: bytes one SM/CU's shared memory delivers per clock
            (NVIDIA: 32 banks x 4 bytes), or None.
        clock_hz: the boost clock the datasheet's peaks are given at, Hz, or None.
        scale_up_bandwidth: per-chip scale-up link bandwidth (NVLink, Infinity Fabric, ICI),
            bytes/s, both directions added, or None.
        scale_up_name: the link's name.
        year: year of release.
        peak_16bit_format: the 16-bit format ``bf16_flops`` is for: ``"BF16"``, or ``"FP16"`` where
            the vendor publishes no BF16 rate (NVIDIA T4 has no BF16; Groq's LPU and Cerebras's
            WSE-3 quote FP16).
        peak_dense_stated: False where the vendor does not say whether its peaks are dense or
            count sparsity (Cerebras's "125 petaflops of peak AI performance"): the figure is
            recorded as given and flagged, and pages mark it.
        sources: ``{"default": ..., field_name: ...}``; see :meth:`source_of`.
        notes: where sources disagree, which value was chosen and why.
    """

    id: str
    name: str
    vendor: str
    kind: str
    memory_bytes: int
    memory_marketed: str
    memory_marketed_unit_is_gib: bool
    memory_type: str
    memory_bandwidth: float
    bf16_flops: float
    power_watts: float
    compute_units: int
    compute_units_name: str
    year: int
    fp8_flops: float | None = None
    fp4_flops: float | None = None
    scale_up_bandwidth: float | None = None
    scale_up_name: str = ""
    peak_16bit_format: str = "BF16"
    peak_dense_stated: bool = True
    l2_bytes: int | None = None
    last_level_cache_bytes: int | None = None
    on_chip_memory_bytes: int | None = None
    tensor_cores_per_unit: int | None = None
    register_file_per_unit_bytes: int | None = None
    shared_memory_per_unit_bytes: int | None = None
    shared_memory_bytes_per_clock: int | None = None
    clock_hz: float | None = None
    notes: str = ""
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    def source_of(self, name: str) -> str:
        """Where the value of field ``name`` comes from."""
        return _source_of(self.sources, name)

    def unverified(self, name: str) -> bool:
        """True when field ``name``'s source says the value is unverified (a third-party figure the
        vendor does not publish): pages print it with that warning."""
        return "unverified" in self.source_of(name).lower()

    @property
    def single_chip_comparable(self) -> bool:
        """False for the machines that hold a catalog model only across many chips
        (:data:`SHARDED_KINDS`: Groq, Cerebras): comparisons of one chip's decode ceiling leave them
        out (a one-chip speed "if it fit" is not how they serve) and say how many chips it takes."""
        return self.kind not in SHARDED_KINDS

    def peak(self, precision: str) -> float:
        """Dense peak FLOP/s in a compute precision (:data:`COMPUTE_PRECISIONS`), FLOP/s.

        Raises:
            ValueError: unknown precision, or the chip has no peak for it (FP4 on an H100); the
                message lists the precisions this chip has.
        """
        if precision not in COMPUTE_PRECISIONS:
            raise ValueError(f"compute precision must be one of {', '.join(COMPUTE_PRECISIONS)}, got {precision!r}")
        value = getattr(self, COMPUTE_PRECISIONS[precision])
        if value is None:
            have = [p for p, f in COMPUTE_PRECISIONS.items() if getattr(self, f) is not None]
            raise ValueError(f"{self.name} has no {precision} peak; allowed for this chip: {', '.join(have)}")
        return value

    def provenance(self, name: str) -> str:
        """``"estimate"`` or ``"derived"`` when field ``name``'s source starts with that word and a
        colon (a value this catalog worked out, not one the vendor printed), else ``""``."""
        head = self.source_of(name).split(":", 1)[0].strip().lower()
        return head if head in ("estimate", "derived") else ""

    @property
    def peak_16bit_caveat(self) -> str:
        """What a "BF16 dense" label must add for this chip's ``bf16_flops``: ``""`` (a dense BF16
        peak from the vendor), ``"FP16"`` (no BF16 rate published), ``"dense or sparse not
        stated"``, ``"estimate"`` / ``"derived"`` (see :meth:`provenance`), joined by ``"; "``."""
        parts = [] if self.peak_16bit_format == "BF16" else [self.peak_16bit_format]
        if not self.peak_dense_stated:
            parts.append("dense or sparse not stated")
        if self.provenance("bf16_flops"):
            parts.append(self.provenance("bf16_flops"))
        return "; ".join(parts)


LINK_SCOPES = ("scale-up", "scale-out", "storage")


@dataclass(frozen=True)
class Link:
    """A kind of wire between accelerators, or a place a KV cache can be moved to.

    Units: bytes/s, seconds.

    Attributes:
        id: catalog id, ``"nvlink4"``. label: display name.
        bytes_per_s: per GPU, ONE direction, bytes/s.
        scope: ``"scale-up"`` (GPU to GPU inside a server or rack), ``"scale-out"`` (between
            servers, a network card per GPU) or ``"storage"`` (an SSD: no collectives).
        domain: how many GPUs it joins directly (0: a network, no fixed limit).
        base_latency_s: the fixed latency of one collective, s.
        step_latency_s: the latency of each ring step, s (an all-reduce over p devices takes
            2 (p - 1) steps). Both from NCCL's cost model (links.toml's header).
        sources: ``{"default": ..., field_name: ...}``.
    """

    id: str
    label: str
    bytes_per_s: float
    scope: str
    domain: int
    base_latency_s: float
    step_latency_s: float
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    def source_of(self, name: str) -> str:
        """Where the value of field ``name`` comes from."""
        return _source_of(self.sources, name)

    @property
    def source(self) -> str:
        """Where the bandwidth comes from."""
        return self.source_of("bytes_per_s")


#: Fields that were renamed, with what to write instead (a row still using the old name is refused
#: with this message rather than a bare "unknown field").
RENAMED_FIELDS = {
    "sram_bytes": "sram_bytes was split by what it holds: l2_bytes (a GPU's L2 cache), "
    "last_level_cache_bytes (AMD's Infinity Cache) or on_chip_memory_bytes (software-managed SRAM: "
    "Groq, Cerebras, Trainium's SBUF)",
}


ACCELERATOR_KINDS = ("gpu", "tpu", "asic", "soc", "sram")

#: Accelerator kinds whose chips hold a catalog model only across many of them (weights in on-chip
#: SRAM: Groq LPU, Cerebras WSE-3). A one-chip decode ceiling "if it fit" says nothing about how
#: they serve, so the comparisons across chips leave them out and say how many chips it would take.
SHARDED_KINDS = ("sram",)

#: The 16-bit formats an accelerator's ``bf16_flops`` may be for.
PEAK_16BIT_FORMATS = ("BF16", "FP16")

#: Plausible ranges of the models' numeric fields, inclusive: ``field: (low, high, unit)``. A value
#: outside is a typo in the row (an extra three zeros, a byte count in the wrong unit), reported
#: as the row's problem before anything computes with it (a row with 10^12 layers made the build
#: loop for ever). The high ends sit well above the largest published models (2025: 126 layers,
#: D = 16,384, F = 53,248, V = 262,208, 10M tokens of context, about 1T parameters); a real model
#: beyond one is a reason to widen it here, with its source. Fields not listed are only checked
#: to be non-negative.
PLAUSIBLE_MODEL: dict[str, tuple[float, float, str]] = {
    "hidden_size": (1, 131_072, ""),
    "num_layers": (1, 1_000, "layers"),
    "num_heads": (1, 4_096, "heads"),
    "num_kv_heads": (1, 4_096, "heads"),
    "head_dim": (1, 4_096, ""),
    "intermediate_size": (0, 1_048_576, ""),
    "vocab_size": (1, 10_000_000, "tokens"),
    "max_context": (1, 20_000_000, "tokens"),  # the same limit as descent.params.CONTEXT
    "params_total_published": (1, 1e14, "parameters"),
    "params_active_published": (1, 1e14, "parameters"),
    "norms_per_layer": (0, 16, ""),
    "moe.num_experts": (1, 100_000, "experts"),
    "moe.experts_per_token": (1, 1_000, "experts"),
    "moe.expert_intermediate_size": (1, 1_048_576, ""),
    "moe.num_shared_experts": (0, 1_000, "experts"),
    "moe.shared_expert_intermediate_size": (0, 1_048_576, ""),
    "moe.first_dense_layers": (0, 1_000, "layers"),
    "mla.q_lora_rank": (0, 1_048_576, ""),
    "mla.kv_lora_rank": (1, 1_048_576, ""),
    "mla.qk_rope_head_dim": (0, 4_096, ""),
    "mla.qk_nope_head_dim": (0, 4_096, ""),
    "mla.v_head_dim": (1, 4_096, ""),
    "sliding.window": (1, 20_000_000, "tokens"),
    "sliding.full_attention_every": (1, 1_000, "layers"),
}
#: Plausible ranges of the accelerators' numeric fields (see :data:`PLAUSIBLE_MODEL`). Each range
#: holds every row and refuses a value in the wrong unit: "4800" typed for 4,800 GB/s (off by 1e9),
#: "141" for 141 GB, "989" for 989 TFLOP/s (1e12), "700" W in kW; and a value off by 1e3 from the
#: catalog's smallest or largest row (a kilo/mega slip). The ends, against the rows (2025):
#: memory 230 MB (Groq LPU's SRAM) to 512 GiB (M3 Ultra); bandwidth 300 GB/s (L4) to 21 PB/s
#: (Cerebras WSE-3's SRAM); 16-bit peaks 17.2 TFLOP/s (M4 Max) to 125 PFLOP/s (WSE-3); FP4 up to
#: 13.5 PFLOP/s (B300); power 70 W (T4) to 23 kW (WSE-3: typed in kW, 23, it is refused); L2 4 MiB (T4) to 126 MB (B200); on-chip
#: memory to 44 GB (WSE-3); clocks 1.8 to 2.4 GHz. Widen a range only with the source of a real
#: value beyond it (``tests/test_catalog_accelerators.py`` checks each row is inside, and that a
#: wrong-unit value of each field is refused).
PLAUSIBLE_ACCELERATOR: dict[str, tuple[float, float, str]] = {
    "memory_bytes": (1e8, 1e13, "bytes"),
    "memory_bandwidth": (1e9, 1e17, "bytes/s"),
    "bf16_flops": (1e11, 1e18, "FLOP/s"),
    "fp8_flops": (1e11, 1e18, "FLOP/s"),
    "fp4_flops": (1e12, 1e18, "FLOP/s"),
    "power_watts": (50, 100_000, "W"),
    "compute_units": (1, 10_000_000, ""),
    "l2_bytes": (1e5, 1e10, "bytes"),
    "last_level_cache_bytes": (1e6, 1e11, "bytes"),
    "on_chip_memory_bytes": (1e6, 1e13, "bytes"),
    "scale_up_bandwidth": (1e9, 1e14, "bytes/s"),
    "tensor_cores_per_unit": (1, 1_000, ""),
    "register_file_per_unit_bytes": (1e3, 1e8, "bytes"),
    "shared_memory_per_unit_bytes": (1e3, 1e8, "bytes"),
    "shared_memory_bytes_per_clock": (1, 100_000, "bytes"),
    "clock_hz": (1e7, 1e11, "Hz"),
    "year": (1990, 2100, ""),
}
#: Plausible ranges of the links' numeric fields (links.toml): 7.45 GB/s (an NVMe SSD) to 900 GB/s
#: (NVLink 5) a direction, so "900" typed for GB/s, or a value off by 1e3 from either end, is refused;
#: latencies of microseconds (typed in microseconds, 3.6, they are refused).
PLAUSIBLE_LINK: dict[str, tuple[float, float, str]] = {
    "bytes_per_s": (1e8, 1e14, "bytes/s"),
    "base_latency_s": (0, 1e-3, "s"),
    "step_latency_s": (0, 1e-3, "s"),
}
#: Optional accelerator fields that, when given, must be positive (None means "not published").
_OPTIONAL_POSITIVE = (
    "l2_bytes", "last_level_cache_bytes", "on_chip_memory_bytes", "tensor_cores_per_unit",
    "register_file_per_unit_bytes", "shared_memory_per_unit_bytes", "shared_memory_bytes_per_clock", "clock_hz",
)


def _source_of(sources: dict[str, str], name: str) -> str:
    if name in sources:
        return sources[name]
    head = name.split(".")[0]
    if head in sources:
        return sources[head]
    return sources["default"]


# ---------------------------------------------------------------------------------------------
# Loading and validation
# ---------------------------------------------------------------------------------------------

_NESTED = {
    "moe": MoE,
    "mla": MLA,
    "sliding": SlidingWindow,
    "chunked": ChunkedAttention,
    "linear_attention": LinearAttention,
}


def _check_type(value: Any, annotation: str) -> bool:
    """Does ``value`` (parsed from TOML) match a dataclass field annotation (as a string)?"""
    allowed = [a.strip() for a in annotation.split("|")]
    for a in allowed:
        if a == "None" and value is None:
            return True
        if a == "bool" and isinstance(value, bool):
            return True
        if a == "int" and is_int(value):
            return True
        if a == "float" and is_real(value):
            return True
        if a == "str" and isinstance(value, str):
            return True
        if a.startswith("dict") and isinstance(value, dict):
            return True
    return False


def _build(cls: type, row: dict[str, Any], where: str, file: str) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(row) - set(fields))
    renamed = [u for u in unknown if u in RENAMED_FIELDS]
    if renamed and cls is Accelerator:
        raise CatalogError(f"{file}: {where}: field {renamed[0]!r} is gone: {RENAMED_FIELDS[renamed[0]]}")
    if unknown:
        raise CatalogError(
            f"{file}: {where}: unknown field {unknown[0]!r}; allowed: {', '.join(sorted(fields))}"
        )
    kwargs: dict[str, Any] = {}
    for name, f in fields.items():
        if name not in row:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise CatalogError(f"{file}: {where}: missing required field {name!r}")
            continue
        value = row[name]
        if name in _NESTED:
            if not isinstance(value, dict):
                raise CatalogError(f"{file}: {where}: field {name!r} must be a table")
            value = _build(_NESTED[name], value, f"{where}.{name}", file)
        elif not _check_type(value, str(f.type)):
            raise CatalogError(
                f"{file}: {where}: field {name!r} must be {f.type}, got {type(value).__name__} {value!r}"
            )
        if isinstance(value, float) and not math.isfinite(value):  # TOML allows nan and inf
            raise CatalogError(f"{file}: {where}: field {name!r} must be a finite number, got {value!r}")
        if is_real(value) and value < 0:
            raise CatalogError(f"{file}: {where}: field {name!r} must not be negative, got {value!r}")
        kwargs[name] = value
    return cls(**kwargs)


def _check_plausible(item: Any, ranges: dict[str, tuple[float, float, str]], where: str, table: str) -> None:
    """Every numeric field named in ``ranges`` (dotted for nested tables) within its range."""
    for name, (low, high, unit) in ranges.items():
        value: Any = item
        for part in name.split("."):
            value = getattr(value, part, None)
        if value is None or isinstance(value, bool) or not is_real(value):
            continue
        if not low <= value <= high:
            raise CatalogError(
                f"{where}: field {name!r} = {format_limit(value)} is outside its plausible range {format_limit(low)} to "
                f"{format_limit(high)}{' ' + unit if unit else ''} (descent.catalog.{table}); fix the row, "
                "or widen the range there with the source of a real value beyond it"
            )


def _check_sources(item: Any, where: str) -> None:
    """``sources`` maps 'default' or a field name (dotted for nested ones) to non-empty text."""
    if "default" not in item.sources:
        raise CatalogError(f"{where}: field 'sources.default' is required (where the values come from)")
    names = {f.name for f in dataclasses.fields(item)} - {"sources"}
    for name, cls in _NESTED.items():
        if name in names:
            names |= {f"{name}.{f.name}" for f in dataclasses.fields(cls)}
    for key, text in item.sources.items():
        if key != "default" and key not in names:
            raise CatalogError(f"{where}: field 'sources.{key}' names no field of the row; allowed: default, "
                               "or a field name (dotted for a nested one, e.g. moe.num_experts)")
        if not isinstance(text, str) or not text.strip():
            raise CatalogError(f"{where}: field 'sources.{key}' must be non-empty text saying where the value "
                               f"comes from (a URL, a datasheet, a worked derivation), got {text!r}")


def _validate_model(m: Model, file: str) -> None:
    where = f"{file}: [{m.id}]"
    positive = ["hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "vocab_size", "max_context"]
    for name in positive:
        if getattr(m, name) <= 0:
            raise CatalogError(f"{where}: field {name!r} must be a positive integer, got {getattr(m, name)}")
    _check_plausible(m, PLAUSIBLE_MODEL, where, "PLAUSIBLE_MODEL")
    if m.num_heads % m.num_kv_heads:
        raise CatalogError(
            f"{where}: field 'num_kv_heads' ({m.num_kv_heads}) must divide num_heads ({m.num_heads})"
        )
    if m.moe is not None and not 1 <= m.moe.experts_per_token <= m.moe.num_experts:
        raise CatalogError(f"{where}: field 'moe.experts_per_token' must be 1 to moe.num_experts")
    if m.moe is not None and m.moe.router_scoring not in ROUTER_SCORINGS:
        raise CatalogError(
            f"{where}: field 'moe.router_scoring' must be one of {', '.join(ROUTER_SCORINGS)}, got {m.moe.router_scoring!r}"
        )
    if m.torch_dtype is not None and m.torch_dtype not in TORCH_DTYPES:
        raise CatalogError(f"{where}: field 'torch_dtype' must be one of {', '.join(TORCH_DTYPES)} "
                           f"(as config.json writes it), got {m.torch_dtype!r}")
    if m.ffn_gate not in FFN_GATES:
        raise CatalogError(f"{where}: field 'ffn_gate' must be one of {', '.join(FFN_GATES)}, got {m.ffn_gate!r}")
    patterns = [n for n in ("sliding", "chunked", "linear_attention") if getattr(m, n) is not None]
    if len(patterns) > 1:
        raise CatalogError(f"{where}: fields {' and '.join(repr(n) for n in patterns)} exclude each other (one layer pattern per model)")
    for name, span in (("sliding", "window"), ("chunked", "chunk")):
        nested = getattr(m, name)
        if nested is not None and getattr(nested, span) < 1:
            raise CatalogError(f"{where}: field '{name}.{span}' must be a positive integer, got {getattr(nested, span)}")
    for name in ("sliding", "chunked", "linear_attention"):
        every = getattr(getattr(m, name), "full_attention_every", None)
        if every is not None and not 1 <= every <= m.num_layers:
            raise CatalogError(f"{where}: field '{name}.full_attention_every' must be 1 to num_layers ({m.num_layers}), got {every}")
    if m.linear_attention is not None:
        la = m.linear_attention
        for f in ("num_key_heads", "num_value_heads", "key_head_dim", "value_head_dim", "conv_kernel"):
            if getattr(la, f) < 1:
                raise CatalogError(f"{where}: field 'linear_attention.{f}' must be a positive integer, got {getattr(la, f)}")
    _check_sources(m, where)


def _validate_accelerator(a: Accelerator, file: str) -> None:
    where = f"{file}: [{a.id}]"
    if a.kind not in ACCELERATOR_KINDS:
        raise CatalogError(f"{where}: field 'kind' must be one of {', '.join(ACCELERATOR_KINDS)}, got {a.kind!r}")
    for name in ("memory_bytes", "memory_bandwidth", "bf16_flops", "power_watts"):
        if not getattr(a, name) > 0:
            raise CatalogError(f"{where}: field {name!r} must be positive, got {getattr(a, name)}")
    if a.peak_16bit_format not in PEAK_16BIT_FORMATS:
        raise CatalogError(
            f"{where}: field 'peak_16bit_format' must be one of {', '.join(PEAK_16BIT_FORMATS)}, got {a.peak_16bit_format!r}"
        )
    _check_plausible(a, PLAUSIBLE_ACCELERATOR, where, "PLAUSIBLE_ACCELERATOR")
    _check_sources(a, where)
    for name in _OPTIONAL_POSITIVE:
        if getattr(a, name) is not None and not getattr(a, name) > 0:
            raise CatalogError(f"{where}: field {name!r} must be positive, or left out when not published; "
                               f"got {getattr(a, name)}")


def _validate_link(x: Link, file: str) -> None:
    where = f"{file}: [{x.id}]"
    if x.scope not in LINK_SCOPES:
        raise CatalogError(f"{where}: field 'scope' must be one of {', '.join(LINK_SCOPES)}, got {x.scope!r}")
    for name in PLAUSIBLE_LINK:
        if not is_real(getattr(x, name)) or isinstance(getattr(x, name), bool):
            raise CatalogError(f"{where}: field {name!r} must be a number, got {getattr(x, name)!r}")
    _check_plausible(x, PLAUSIBLE_LINK, where, "PLAUSIBLE_LINK")
    if x.domain < 0:
        raise CatalogError(f"{where}: field 'domain' must be 0 (a network) or a number of GPUs, got {x.domain}")
    _check_sources(x, where)


def _load(text: str, file: str, cls: type, validate) -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CatalogError(f"{file}: not valid TOML: {e}") from None
    out: dict[str, Any] = {}
    for row_id, row in data.items():
        if not isinstance(row, dict):
            raise CatalogError(f"{file}: [{row_id}]: every top-level entry must be a table")
        item = _build(cls, {"id": row_id, **row}, f"[{row_id}]", file)
        validate(item, file)
        out[row_id] = item
    return out


def load_models(text: str, file: str = "models.toml") -> dict[str, Model]:
    """Parse and validate a models TOML document. Raises CatalogError naming file, row, field."""
    return _load(text, file, Model, _validate_model)


def load_accelerators(text: str, file: str = "accelerators.toml") -> dict[str, Accelerator]:
    """Parse and validate an accelerators TOML document. Raises CatalogError naming file, row, field."""
    return _load(text, file, Accelerator, _validate_accelerator)


def load_links(text: str, file: str = "links.toml") -> dict[str, Link]:
    """Parse and validate a links TOML document. Raises CatalogError naming file, row, field."""
    return _load(text, file, Link, _validate_link)


def read_file(name: str) -> str:
    """The text of the catalog file ``name`` (``models.toml``, ``accelerators.toml``, ``released.toml``):
    the one place the catalog's files are read (a test points it at a copy)."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


@cache
def models() -> dict[str, Model]:
    """Every catalog model by id, in file order."""
    return load_models(read_file("models.toml"), "descent/catalog/models.toml")


@cache
def accelerators() -> dict[str, Accelerator]:
    """Every catalog accelerator by id, in file order."""
    return load_accelerators(read_file("accelerators.toml"), "descent/catalog/accelerators.toml")


def model(model_id: str) -> Model:
    """The model with this id. Raises ValueError listing the allowed ids."""
    try:
        return models()[model_id]
    except KeyError:
        raise ValueError(f"unknown model {model_id!r}; allowed: {', '.join(models())}") from None


def accelerator(accelerator_id: str) -> Accelerator:
    """The accelerator with this id. Raises ValueError listing the allowed ids."""
    try:
        return accelerators()[accelerator_id]
    except KeyError:
        raise ValueError(
            f"unknown accelerator {accelerator_id!r}; allowed: {', '.join(accelerators())}"
        ) from None


@cache
def links() -> dict[str, Link]:
    """Every catalog link by id, fastest first (file order)."""
    return load_links(read_file("links.toml"), "descent/catalog/links.toml")


def link(link_id: str) -> Link:
    """The link with this id. Raises ValueError listing the allowed ids."""
    try:
        return links()[link_id]
    except (KeyError, TypeError):
        raise ValueError(f"link must be one of {', '.join(links())}, got {link_id!r}") from None


def resolve_model(m: str | Model) -> Model:
    """A ``Model`` from itself or its catalog id. Raises ValueError listing the allowed ids."""
    return m if isinstance(m, Model) else model(m)


def resolve_accelerator(a: str | Accelerator) -> Accelerator:
    """An ``Accelerator`` from itself or its catalog id. Raises ValueError listing the allowed ids."""
    return a if isinstance(a, Accelerator) else accelerator(a)


# The catalog's ids are the choices of params' catalog-backed parameters.
# Tuples: params remembers a tuple of choices it has checked once (descent.params.Param.options).
P.provide("model", lambda: tuple((m.id, m.name) for m in models().values()))
P.provide("accelerator", lambda: tuple((a.id, a.name) for a in accelerators().values()))
P.provide("link", lambda: tuple((x.id, x.label) for x in links().values() if x.scope != "storage"))
