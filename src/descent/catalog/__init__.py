"""The catalog: real models and accelerators as data, every value with its source.

Two TOML files ship inside the package:

* ``models.toml``: one table per model, architecture fields copied from the model's published
  ``config.json`` (text model only where the release also has a vision tower), plus the published
  total/active parameter counts from the model card or paper.
* ``accelerators.toml``: one table per chip, from datasheets and vendor documentation.

Each row has a ``[X.sources]`` table. ``sources.default`` names where most fields come from; any
field may be given its own source by a key of the same name (``sources.memory_bandwidth = "..."``).
:func:`Model.source_of` / :func:`Accelerator.source_of` answer "where does this number come from"
for any field, so reference pages can print a source next to every value.

Loading validates every row: a missing or mistyped field, an unknown key or an impossible value
raises :class:`CatalogError` naming the file, the row and the field. The core rule holds here: this
module imports only the standard library, so it runs unchanged in Pyodide.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from descent.checks import is_int, is_real

__all__ = [
    "Accelerator",
    "CatalogError",
    "MLA",
    "MoE",
    "Model",
    "SlidingWindow",
    "accelerator",
    "accelerators",
    "load_accelerators",
    "load_models",
    "model",
    "models",
]


class CatalogError(ValueError):
    """A catalog row is malformed. The message names the file, the row and the field."""


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
        expert_bias: each expert's projections have biases (gpt-oss).
        router_score_correction_bias: the router stores one load-balancing bias per expert,
            added to the scores only to choose experts (DeepSeek-V3 ``e_score_correction_bias``,
            auxiliary-loss-free balancing, DeepSeek-V3 Technical Report, arXiv:2412.19437,
            section 2.1.2). Counted as router parameters: the checkpoint stores it.
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
        qk_norm: RMSNorm on each head's Q and K, weight of size d_head (Qwen3, Gemma 3).
        norms_per_layer: RMSNorm weight vectors of size D per layer (2 pre-norm; Gemma 3 has 4).
        attention_sinks: one learned sink logit per query head per layer (gpt-oss).
        moe: Mixture-of-Experts shape, or None for a dense model.
        mla: Multi-head Latent Attention shape, or None.
        sliding: sliding-window attention, or None.
        params_total_published: total parameters as the publisher states them.
        params_active_published: active parameters per token as published (None for dense).
        params_published_note: what the published count includes (embeddings? MTP module?).
        sources: ``{"default": ..., field_name: ...}``; see :meth:`source_of`.
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
    moe: MoE | None = None
    mla: MLA | None = None
    sliding: SlidingWindow | None = None
    params_active_published: float | None = None
    params_published_note: str = ""
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

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
        bf16_flops: dense BF16 peak, FLOP/s (not 2:4 sparse).
        fp8_flops: dense FP8 peak, FLOP/s, or None where the chip has no FP8.
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


#: Fields that were renamed, with what to write instead (a row still using the old name is refused
#: with this message rather than a bare "unknown field").
RENAMED_FIELDS = {
    "sram_bytes": "sram_bytes was split by what it holds: l2_bytes (a GPU's L2 cache), "
    "last_level_cache_bytes (AMD's Infinity Cache) or on_chip_memory_bytes (software-managed SRAM: "
    "Groq, Cerebras, Trainium's SBUF)",
}


ACCELERATOR_KINDS = ("gpu", "tpu", "asic", "soc", "sram")

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

_NESTED = {"moe": MoE, "mla": MLA, "sliding": SlidingWindow}


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


def _validate_model(m: Model, file: str) -> None:
    where = f"{file}: [{m.id}]"
    positive = ["hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "vocab_size", "max_context"]
    for name in positive:
        if getattr(m, name) <= 0:
            raise CatalogError(f"{where}: field {name!r} must be a positive integer, got {getattr(m, name)}")
    if m.num_heads % m.num_kv_heads:
        raise CatalogError(
            f"{where}: field 'num_kv_heads' ({m.num_kv_heads}) must divide num_heads ({m.num_heads})"
        )
    if m.moe is not None and not 1 <= m.moe.experts_per_token <= m.moe.num_experts:
        raise CatalogError(f"{where}: field 'moe.experts_per_token' must be 1 to moe.num_experts")
    if "default" not in m.sources:
        raise CatalogError(f"{where}: field 'sources.default' is required (where the values come from)")


def _validate_accelerator(a: Accelerator, file: str) -> None:
    where = f"{file}: [{a.id}]"
    if a.kind not in ACCELERATOR_KINDS:
        raise CatalogError(f"{where}: field 'kind' must be one of {', '.join(ACCELERATOR_KINDS)}, got {a.kind!r}")
    for name in ("memory_bytes", "memory_bandwidth", "bf16_flops", "power_watts"):
        if not getattr(a, name) > 0:
            raise CatalogError(f"{where}: field {name!r} must be positive, got {getattr(a, name)}")
    for name in _OPTIONAL_POSITIVE:
        if getattr(a, name) is not None and not getattr(a, name) > 0:
            raise CatalogError(f"{where}: field {name!r} must be positive, or left out when not published; "
                               f"got {getattr(a, name)}")
    if "default" not in a.sources:
        raise CatalogError(f"{where}: field 'sources.default' is required (where the values come from)")


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


def _read(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


@cache
def models() -> dict[str, Model]:
    """Every catalog model by id, in file order."""
    return load_models(_read("models.toml"))


@cache
def accelerators() -> dict[str, Accelerator]:
    """Every catalog accelerator by id, in file order."""
    return load_accelerators(_read("accelerators.toml"))


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
