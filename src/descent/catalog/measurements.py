"""Public measurements of inference speed: ``measurements.toml``, one sourced row per measurement.

Each row is one figure somebody measured and published (a llama-bench table row, a benchmark
log line, a vendor's throughput table) with everything needed to run the same configuration
through the step model (:mod:`descent.predict`): the model (a catalog id), its weights format, the
chip (a catalog id) and how many, the split, the batch or concurrency, the prompt and output
lengths. It also keeps what makes the figure checkable: the engine and its version, the date, the
source's address and the figure as the source prints it (``quote``, verbatim).

One row, ``recorded = NAME``, is the build machine's own measurement: its value, date and source
are the committed recording's (:func:`descent.recorded.measurement`), read by :mod:`descent.predict`.

Loading validates every row the way the other catalog files are validated: a missing or mistyped
field, an unknown key, a model or chip the catalog lacks, a split that does not multiply to the
chip count, a date not written ``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``, or a value outside its
plausible range raises :class:`descent.catalog.CatalogError` naming the file, the row and the field.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from descent import catalog
from descent import params as P
from descent.catalog import CatalogError
from descent.units import format_limit

__all__ = [
    "BOUNDS",
    "BUILD_MACHINE",
    "CHIP_CLASSES",
    "ENGINES",
    "GROUPS",
    "KINDS",
    "Measurement",
    "PLAUSIBLE_MEASUREMENT",
    "chip_class",
    "load_measurements",
    "measurement",
    "measurements",
]

#: What a row measured -> (its unit, a label). Speeds are tokens/s; times are seconds.
#: ``decode_tokens_per_s``: tokens/s one sequence sees while decoding (batch ``batch``);
#: ``output_tokens_per_s``: output tokens/s of the whole server at a concurrency (``batch``; 0: the
#: most the memory holds); ``prefill_tokens_per_s``: prompt tokens/s of one prompt read in one pass;
#: ``ttft_s``: time to the first token of one request; ``itl_s``: time between two tokens of a sequence.
KINDS: dict[str, tuple[str, str]] = {
    "decode_tokens_per_s": ("tokens/s", "decode tokens/s per sequence"),
    "output_tokens_per_s": ("tokens/s", "output tokens/s, whole server"),
    "prefill_tokens_per_s": ("tokens/s", "prefill tokens/s"),
    "ttft_s": ("s", "time to first token"),
    "itl_s": ("s", "time between tokens"),
}

#: The engines rows may name. ``NumPy (descent)`` is the site's own forward pass on the build machine;
#: ``NVIDIA NIM`` a NIM container, whose 1.x releases run TensorRT-LLM or vLLM by profile without saying which.
ENGINES = ("llama.cpp", "vLLM", "SGLang", "TensorRT-LLM", "NVIDIA NIM", "NumPy (descent)")

#: The KV-cache precision an engine keeps when nothing sets it, which a row's prediction assumes where its
#: source is silent. llama.cpp: F16 (``-ctk``/``-ctv``, "default: f16", llama.cpp's tools/server/README.md).
#: vLLM and SGLang: the model's own dtype (``kv_cache_dtype="auto"``), BF16 for every model these rows run.
#: Any other engine: ``params.KV.default`` (BF16). BF16 and FP16 are both 16 bits: the same bytes.
ENGINE_KV_DEFAULT: dict[str, str] = {"llama.cpp": "fp16", "vLLM": "bf16", "SGLang": "bf16"}

#: The chip id of the build machine (not a catalog row: :mod:`descent.predict` builds it from the
#: machine's own recorded bandwidth and matrix-product rate).
BUILD_MACHINE = "build-machine"

#: Plausible ranges of a row's numbers: a figure typed in the wrong unit (ms for s, tokens/min) or
#: off by a factor of 1,000 falls outside. Speeds from 0.01 tokens/s (a 400B model off a disk) to
#: 10 million (a rack's prefill); times from 10 microseconds to an hour.
PLAUSIBLE_MEASUREMENT: dict[str, tuple[float, float, str]] = {
    "tokens/s": (1e-2, 1e7, "tokens/s"),
    "s": (1e-5, 3600.0, "s"),
    "prompt_tokens": (0, 10_000_000, "tokens"),
    "output_tokens": (0, 10_000_000, "tokens"),
    "batch": (0, 100_000, "sequences"),
    "chips": (1, 100_000, "chips"),
}

_DATE = re.compile(r"^(19|20)\d\d(-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?)?$")


@dataclass(frozen=True)
class Measurement:
    """One published measurement and the configuration it ran.

    Attributes:
        id: the row's id (``"llamacpp-rtx-4090-llama3-8b-q4km-tg512"``).
        what: what was measured, one of :data:`KINDS`.
        value: the figure, in the unit :data:`KINDS` gives ``what`` (None for a ``recorded`` row).
        recorded: the build machine's recording this row reads (``descent.recorded``), or "".
        quote: the figure as the source prints it, verbatim (a table row, a log line).
        model: a catalog model id. model_note: the exact model the source ran, where the catalog row
            stands in for it (Llama 3 8B for Llama 3.1 8B: the same shapes).
        weights: the weights format as the step model takes it (``params.WEIGHTS``: ``q4_k_m``,
            ``fp8``, ``released``...). weights_note: the exact checkpoint or file format.
        kv: the KV cache's precision (``params.KV``: ``bf16``, ``fp8``, ``fp32``...) where the source
            states it, and ``kv_source``: where it says so. "" where the source is silent: the
            prediction then takes the engine's default (:attr:`kv_precision`), and the row's
            ``notes`` say that the source does not state it.
        engine: one of :data:`ENGINES`. engine_version: its version or build, as the source states it.
        chip: a catalog accelerator id, or :data:`BUILD_MACHINE`. chips: how many.
        tp, pp, ep: the split (tensor, pipeline, expert parallel); ``tp x pp x ep = chips``.
        link: the catalog link between the chips ("" for the step model's default).
        batch: sequences decoded together, or the server's concurrency; 0 for "as many as the memory
            holds" (a benchmark run at maximum load).
        prompt_tokens, output_tokens: tokens of each request's prompt and of its output.
        date: when it was measured or published, ``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``.
        source: the address of the page, file or thread holding ``quote``.
        notes: where in the source (table, column), and anything the fields cannot say.
    """

    id: str
    what: str
    model: str
    weights: str
    engine: str
    chip: str
    batch: int
    prompt_tokens: int
    output_tokens: int
    value: float | None = None
    recorded: str = ""
    quote: str = ""
    model_note: str = ""
    weights_note: str = ""
    kv: str = ""
    kv_source: str = ""
    engine_version: str = ""
    chips: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    link: str = ""
    date: str = ""
    source: str = ""
    notes: str = ""

    def __post_init__(self) -> None:
        if self.value is not None:  # TOML's 115 and 115.0 are one figure
            object.__setattr__(self, "value", float(self.value))

    @property
    def kv_precision(self) -> str:
        """The KV-cache precision the prediction uses: :attr:`kv` where the source states it, else the
        engine's default (:data:`ENGINE_KV_DEFAULT`: FP16 for llama.cpp, BF16 otherwise)."""
        return self.kv or ENGINE_KV_DEFAULT.get(self.engine, P.KV.default)

    @property
    def kv_stated(self) -> bool:
        """True when the source states the KV cache's precision (:attr:`kv` is given)."""
        return bool(self.kv)

    @property
    def unit(self) -> str:
        """``"tokens/s"`` or ``"s"``: the unit of :attr:`value`."""
        return KINDS[self.what][0]

    @property
    def is_time(self) -> bool:
        """True for a time (TTFT, time between tokens), False for a speed."""
        return self.unit == "s"


def _in_range(where: str, name: str, value: float, key: str) -> None:
    low, high, unit = PLAUSIBLE_MEASUREMENT[key]
    if not (value == value and low <= value <= high):  # NaN fails
        raise CatalogError(f"{where}: field {name!r} = {format_limit(value)} is outside its plausible range "
                           f"{format_limit(low)} to {format_limit(high)} {unit} "
                           "(descent.catalog.measurements.PLAUSIBLE_MEASUREMENT); fix the row, or widen the "
                           "range there with the source of a real value beyond it")


def _validate(m: Measurement, file: str) -> None:
    where = f"{file}: [{m.id}]"
    if m.what not in KINDS:
        raise CatalogError(f"{where}: field 'what' must be one of {', '.join(KINDS)}, got {m.what!r}")
    if m.engine not in ENGINES:
        raise CatalogError(f"{where}: field 'engine' must be one of {', '.join(ENGINES)}, got {m.engine!r}")
    if m.model not in catalog.models():
        raise CatalogError(f"{where}: field 'model' must be a catalog model id ({', '.join(catalog.models())}), "
                           f"got {m.model!r}")
    if m.chip != BUILD_MACHINE and m.chip not in catalog.accelerators():
        raise CatalogError(f"{where}: field 'chip' must be a catalog accelerator id or {BUILD_MACHINE!r}, "
                           f"got {m.chip!r}")
    if m.link and m.link not in catalog.links():
        raise CatalogError(f"{where}: field 'link' must be a catalog link id ({', '.join(catalog.links())}), "
                           f"got {m.link!r}")
    if m.kv:
        allowed = [name for name, _ in P.KV.choices()]
        if m.kv not in allowed:
            raise CatalogError(f"{where}: field 'kv' must be one of {', '.join(allowed)} (params.KV), got {m.kv!r}")
        if not m.kv_source.strip():
            raise CatalogError(f"{where}: field 'kv_source' is required with 'kv': where the source states the "
                               "KV cache's precision")
    elif m.kv_source:
        raise CatalogError(f"{where}: field 'kv_source' is given without 'kv'; give the precision it states, or "
                           "leave both out and say in 'notes' that the source is silent")
    if (m.value is None) == (not m.recorded):
        raise CatalogError(f"{where}: field 'value' must be given, or field 'recorded' instead (a build-machine "
                           "recording), not both and not neither")
    if m.value is not None:
        _in_range(where, "value", m.value, m.unit)
        for name in ("quote", "date", "source"):
            if not getattr(m, name).strip():
                raise CatalogError(f"{where}: field {name!r} is required: "
                                   + {"quote": "the figure as the source prints it, verbatim",
                                      "date": "when it was measured or published (YYYY, YYYY-MM or YYYY-MM-DD)",
                                      "source": "the address of the page or file holding the quote"}[name])
        if not _DATE.match(m.date):
            raise CatalogError(f"{where}: field 'date' must be written YYYY, YYYY-MM or YYYY-MM-DD, got {m.date!r}")
        if not m.source.startswith("https://"):
            raise CatalogError(f"{where}: field 'source' must be an https:// address, got {m.source!r}")
    elif m.chip != BUILD_MACHINE:
        raise CatalogError(f"{where}: field 'recorded' is for the build machine only (chip {BUILD_MACHINE!r}), "
                           f"got chip {m.chip!r}")
    for name in ("prompt_tokens", "output_tokens", "batch", "chips"):
        _in_range(where, name, getattr(m, name), name)
    for name in ("tp", "pp", "ep"):
        if getattr(m, name) < 1:
            raise CatalogError(f"{where}: field {name!r} must be a positive integer, got {getattr(m, name)}")
    if m.tp * m.pp * m.ep != m.chips:
        raise CatalogError(f"{where}: fields 'tp' x 'pp' x 'ep' ({m.tp} x {m.pp} x {m.ep}) must equal 'chips' ({m.chips})")
    if m.what.startswith(("prefill", "ttft")) and m.prompt_tokens < 1:
        raise CatalogError(f"{where}: field 'prompt_tokens' must be at least 1 for a {m.what} row")
    if m.what.startswith(("decode", "output", "itl")) and m.output_tokens < 1:
        raise CatalogError(f"{where}: field 'output_tokens' must be at least 1 for a {m.what} row")
    if m.batch == 0 and m.what != "output_tokens_per_s":
        raise CatalogError(f"{where}: field 'batch' may be 0 (the most the memory holds) only for an "
                           "output_tokens_per_s row; give the batch the source ran")


def load_measurements(text: str, file: str = "measurements.toml") -> dict[str, Measurement]:
    """Parse and validate a measurements TOML document with the catalog's one loader
    (:func:`descent.catalog._load`: the TOML parse, one table per row, the fields' types, finite
    non-negative numbers), then this file's own rules (:func:`_validate`).

    Raises:
        CatalogError: naming the file, the row and the field (module docstring).
    """
    return catalog._load(text, file, Measurement, _validate)


@cache
def measurements() -> dict[str, Measurement]:
    """Every measurement by id, in file order."""
    return load_measurements(catalog.read_file("measurements.toml"), "descent/catalog/measurements.toml")


def measurement(measurement_id: str) -> Measurement:
    """The measurement with this id. Raises ValueError listing how to find the ids."""
    try:
        return measurements()[measurement_id]
    except (KeyError, TypeError):
        raise ValueError(f"unknown measurement {measurement_id!r}; the ids are the tables of "
                         "descent/catalog/measurements.toml") from None


#: The classes of chip the summaries group by: a system-on-chip is Apple Silicon (the catalog's
#: ``soc`` rows), a GPU whose name says GeForce is a consumer GPU, any other GPU a data-centre one,
#: every other kind (TPU, Trainium, the SRAM machines) another accelerator, and the build machine a CPU.
CHIP_CLASSES = ("consumer GPU", "Apple Silicon", "data-centre GPU", "other accelerator", "CPU")

#: What bounds a step (descent.step): reading memory or computing.
BOUNDS = ("memory", "compute")


def chip_class(chip: str) -> str:
    """The class of ``chip`` (a catalog id or :data:`BUILD_MACHINE`), one of :data:`CHIP_CLASSES`."""
    if chip == BUILD_MACHINE:
        return "CPU"
    a = catalog.accelerator(chip)
    if a.kind == "soc":
        return "Apple Silicon"
    if a.kind != "gpu":
        return "other accelerator"
    return "consumer GPU" if "GeForce" in a.name else "data-centre GPU"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


#: The groups a summary may take (``params.MEASURED_GROUP``): slug -> (label, field, value), the
#: field being ``engine``, ``chip_class`` or ``bound`` of a prediction; ``all`` takes every row.
GROUPS: dict[str, tuple[str, str, str]] = {
    "all": ("every measurement", "", ""),
    **{_slug(e): (e, "engine", e) for e in ENGINES},
    **{_slug(c): (c, "chip_class", c) for c in CHIP_CLASSES},
    **{b: (f"{b}-bound", "bound", b) for b in BOUNDS},
}

# The measurements' ids and the summaries' groups are the choices of params.MEASUREMENT and
# params.MEASURED_GROUP.
P.provide("measurement", lambda: [(m.id, m.id) for m in measurements().values()])
P.provide("measured_group", lambda: [(k, v[0]) for k, v in GROUPS.items()])
