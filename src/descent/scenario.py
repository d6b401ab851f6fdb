"""One scenario: the set-up every computed number is a function of, validated once.

A :class:`Scenario` names a model on some chips: the model and the chip (catalog ids, or records
read from a config.json or described by three numbers), how the weights and the KV cache are
stored, the context and the batch, the prompt, how the model is split over devices and the wire
between them, and the prices. Every field's default, range and message come from its declaration
in :mod:`descent.params`, so a scenario built here, by a widget, by a shortcode or by a command
line accepts and refuses the same values. Defaults are the site's running example: Llama 3.1 70B,
FP8 weights, a BF16 KV cache, 8,192 tokens, batch 1, on one H200.

The step model (:mod:`descent.step`) takes a scenario; so do the views built on it.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from descent import params as P
from descent import transformer
from descent.catalog import Accelerator, Model, resolve_accelerator, resolve_model

__all__ = ["MOE_ROUTINGS", "Scenario"]

#: How a batch of tokens spreads over MoE experts: ``uniform`` (each token picks k of E experts
#: independently and uniformly: the expected share touched at batch B is 1 - (1 - k/E)^B) or
#: ``active`` (the k-of-E share of one token at every batch, the lower bound usually quoted).
MOE_ROUTINGS = ("uniform", "active")

#: Scenario field -> the parameter that declares it (default, range, message).
_PARAMS = {
    "weights": P.WEIGHTS, "kv": P.KV, "context": P.CONTEXT, "batch": P.BATCH,
    "prompt_tokens": P.PROMPT_TOKENS, "tp": P.TP, "pp": P.PP, "ep": P.EP,
    "microbatches": P.MICROBATCHES, "link": P.LINK, "price": P.PRICE, "pue": P.PUE,
    "runtime_percent": P.RUNTIME,
}


@dataclass(frozen=True)
class Scenario:
    """A model on some chips, and everything a step's cost depends on. Frozen and hashable.

    Attributes:
        model: a catalog id or a ``Model`` record (``descent.hfconfig.read_config``).
        accelerator: a catalog id or an ``Accelerator`` record (``descent.custom.chip``).
        weights: how the weights are stored: ``released``, a GGUF mix or a precision
            (``params.WEIGHTS``). kv: the KV cache's precision (``params.KV``).
        context: tokens in each sequence's KV cache when it decodes, 1 to 20,000,000 (beyond the
            model's own context is allowed; the sizing flags it).
        batch: B, sequences decoded together.
        prompt_tokens: the prompt one request prefills (TTFT), tokens.
        tp, pp, ep: tensor, pipeline and expert parallel degrees; ``devices = tp x pp x ep`` (expert
            parallelism as DeepSeek's layout: attention data-parallel over the ep groups, the
            routed experts spread over all devices; descent.step).
        microbatches: groups of the batch in flight through the pipeline (1 to the batch).
        link: the wire between devices (catalog ``links.toml``).
        price: dollars per accelerator-hour. pue: data-centre overhead (facility / IT power).
        runtime_percent: memory kept back for the runtime, percent of each device's memory.
        moe_routing: :data:`MOE_ROUTINGS`.

    Raises:
        ValueError (``params.ParamError`` for a field out of its declared range): the first field
        that is not allowed, with what is; also a split the model cannot take (a tp that does not divide its query heads or KV heads
        evenly, :func:`descent.transformer.tp_degrees`; pp above its layers, ep above its experts or on a
        dense model, a batch that ep does not divide, more micro-batches than sequences).
    """

    model: str | Model = P.MODEL.default
    accelerator: str | Accelerator = P.ACCELERATOR.default
    weights: str = P.WEIGHTS.default
    kv: str = P.KV.default
    context: int = P.CONTEXT.default
    batch: int = P.BATCH.default
    prompt_tokens: int = P.PROMPT_TOKENS.default
    tp: int = P.TP.default
    pp: int = P.PP.default
    ep: int = P.EP.default
    microbatches: int = P.MICROBATCHES.default
    link: str = P.LINK.default
    price: float = P.PRICE.default
    pue: float = P.PUE.default
    runtime_percent: float = P.RUNTIME.default
    moe_routing: str = "uniform"

    def __post_init__(self) -> None:
        m = self.model if isinstance(self.model, Model) else resolve_model(P.MODEL.check(self.model))
        if not isinstance(self.accelerator, Accelerator):
            P.ACCELERATOR.check(self.accelerator)
        for name, param in _PARAMS.items():
            param.check(getattr(self, name))
        if self.moe_routing not in MOE_ROUTINGS:
            raise ValueError(f"moe_routing must be one of {', '.join(MOE_ROUTINGS)}, got {self.moe_routing!r}")
        transformer.check_context(m, self.context)
        transformer.check_tp(m, self.tp)
        if self.pp > m.num_layers:
            raise ValueError(f"pp must be at most {m.num_layers} ({m.name}'s layers), got {self.pp}")
        if self.ep > 1 and m.moe is None:
            raise ValueError(f"ep must be 1 for {m.name}: it is dense, it has no experts to spread")
        if m.moe is not None and self.ep > m.moe.num_experts:
            raise ValueError(f"ep must be at most {m.moe.num_experts} ({m.name}'s experts), got {self.ep}")
        if self.microbatches > self.batch:
            raise ValueError(f"Micro-batches must be at most the batch ({self.batch}): each holds at least "
                             f"one sequence, got {self.microbatches}")
        if self.batch % self.ep:
            raise ValueError(f"ep ({self.ep}) must divide the batch ({self.batch}): each device takes "
                             "batch / ep sequences")

    # -- the records the ids name -----------------------------------------------------------------

    @property
    def model_row(self) -> Model:
        """The ``Model`` record (the catalog row, or the record given)."""
        return resolve_model(self.model)

    @property
    def chip(self) -> Accelerator:
        """The ``Accelerator`` record (the catalog row, or the record given)."""
        return resolve_accelerator(self.accelerator)

    @property
    def devices(self) -> int:
        """Accelerators one replica uses: ``tp x pp x ep``."""
        return self.tp * self.pp * self.ep

    @property
    def usable_bytes(self) -> float:
        """Memory one device gives the weights and the KV cache: capacity x (1 - runtime%), bytes.
        THE runtime-allowance rule (``params.RUNTIME``: 10% = 1 - vLLM's gpu_memory_utilization)."""
        return self.chip.memory_bytes * (1 - self.runtime_percent / 100)

    def but(self, **changes) -> Scenario:
        """This scenario with some fields changed (validated again)."""
        return replace(self, **changes)

    def one_device(self) -> Scenario:
        """The same set-up on one device (no split)."""
        return replace(self, tp=1, pp=1, ep=1, microbatches=1)


#: Field names of a scenario, in order.
FIELDS = tuple(f.name for f in fields(Scenario))
