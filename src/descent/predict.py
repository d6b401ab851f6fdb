"""Each public measurement beside the step model's ceiling for the same configuration.

A row of ``catalog/measurements.toml`` says what ran (model, weights, chip and how many, split,
batch, prompt and output lengths) and what it reached. :func:`predict` builds the
:class:`~descent.scenario.Scenario` of that configuration and asks the step model
(:mod:`descent.step`) for the same kind of speed:

The KV cache is held in the precision the row's source states (``kv``, with ``kv_source``); where
the source is silent, in the engine's default (``ENGINE_KV_DEFAULT``: FP16 for llama.cpp, the model's
own BF16 for vLLM and SGLang, BF16 otherwise: 16 bits each), and the row's notes say so. An engine
that ran an FP8 cache where the ceiling assumes 16 bits fits about twice the batch the ceiling
assumes, so a share above 1 at maximum load can come from that assumption. TensorRT-LLM keeps the
checkpoint's own setting, and NVIDIA's ModelOpt checkpoints ask for FP8: those rows state ``kv = "fp8"``.

* ``decode_tokens_per_s`` (and ``itl_s``): one decode step of ``batch`` sequences, each at the
  run's middle context ``prompt + output // 2`` (the step's time grows with the context in a straight
  line, so the middle step's time is the run's mean); the ceiling is ``1 / seconds`` per sequence
  (the time between tokens is ``seconds``).
* ``prefill_tokens_per_s`` (and ``ttft_s``): the prompt read in one pass (:func:`descent.step.prefill`);
  the ceiling is ``prompt / seconds`` (TTFT is ``seconds``).
* ``output_tokens_per_s``: ``batch`` requests served together: one step reads all their prompts,
  then ``output`` decode steps at the middle context; the ceiling is
  ``batch x output / (prefill seconds + output x decode seconds)``. A row run at maximum load
  (``batch = 0``) takes the largest batch whose weights and KV cache at the middle context fit the
  usable memory (:func:`descent.step.footprint`): under continuous batching a finished request's
  place is taken at once, so the sequences in flight hold ``prompt + output / 2`` tokens on average.

The **share of the ceiling** a row reached is measured speed / ceiling speed (for a time, the
ceiling's time / the measured time): 1 would be the ceiling itself; the step model is a lower bound
on time (nothing overlaps), so a real engine stays below 1 unless the model misses something.

The **bound** is the step's (memory or compute); for ``output_tokens_per_s`` it is the bound of
whichever part takes longer, the prompts or the decode steps.

Summaries (:func:`spread`, :func:`expected`, :func:`leave_one_out`) group rows by engine, chip
class (:func:`descent.catalog.measurements.chip_class`) and bound. The expected range of a class is
the lowest to the highest share its measurements reached, with their median.

The calculators' expected range (:func:`expected_range`) reads the shares by chip class and bound
from a committed derived record, ``data/expected_shares.json`` (:data:`SHARES_FILE`), so that a
recomputation in the reader's browser looks them up instead of running every row through the step
model again (a third of a second in CPython, several times that in Pyodide). The record keeps the
sha256 of the catalog files it was made from (:data:`CATALOG_FILES`); when one has changed since,
the shares are computed from the rows instead (correct, only slower), and
``tests/test_measurements.py`` fails until the record is written again: ``python -m descent.predict``.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import hashlib
import json
import statistics
import sys
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from descent import catalog, custom, numerics, recorded, replay, step
from descent import params as P
from descent.catalog import Accelerator
from descent.catalog import measurements as M
from descent.scenario import Scenario

__all__ = [
    "Coverage",
    "Expected",
    "CATALOG_FILES",
    "Point",
    "Prediction",
    "ReaderPoint",
    "SHARES_FILE",
    "Spread",
    "build_machine_chip",
    "chip_class_of",
    "class_of",
    "class_shares",
    "classes",
    "expected",
    "expected_range",
    "figure_points",
    "group",
    "leave_one_out",
    "predict",
    "prefill_bound",
    "reader_point",
    "predictions",
    "scenario_for",
    "shares_record",
    "spread",
    "write_shares_record",
]


def build_machine_chip() -> Accelerator:
    """The build machine as it measured itself (``descent.recorded``): its streaming-read bandwidth
    (``stream``: bytes / seconds) and its float32 matrix-product rate (``gemm``: FLOP / seconds), as a
    :func:`descent.custom.accelerator`. The record keeps no memory size; capacity plays no part in a
    ceiling at one sequence, so it is the custom chip's declared default."""
    bandwidth = recorded.measurement("stream").rate
    flops = recorded.measurement("gemm").rate
    return custom.accelerator(P.MEMORY_GB.default, bandwidth / 1e9, flops / 1e12, name="the build machine (measured)")


def _chip(m: M.Measurement) -> str | Accelerator:
    return build_machine_chip() if m.chip == M.BUILD_MACHINE else m.chip


def scenario_for(m: M.Measurement, batch: int | None = None) -> Scenario:
    """The scenario of measurement ``m``: its model, weights, KV-cache precision (the row's
    :attr:`~descent.catalog.measurements.Measurement.kv_precision`: as its source states it, else the
    engine's default),
    chip, split and link, ``batch`` sequences (default the row's) at the run's middle context
    ``prompt + output // 2`` (at least 1).

    Raises:
        ValueError: the configuration is not one the step model takes (a split the model refuses).
    """
    b = m.batch if batch is None else batch
    kwargs = {} if not m.link else {"link": m.link}
    return Scenario(model=m.model, accelerator=_chip(m), weights=m.weights, kv=m.kv_precision,
                    context=max(1, m.prompt_tokens + m.output_tokens // 2),
                    batch=max(1, b), prompt_tokens=max(1, m.prompt_tokens), tp=m.tp, pp=m.pp, ep=m.ep, **kwargs)


def _max_batch(m: M.Measurement) -> int:
    """The largest batch whose weights and KV cache at the middle context fit every device.

    Raises:
        ValueError: not even one sequence fits.
    """
    full = scenario_for(m, 1)
    if not step.footprint(full).fits:
        raise ValueError(f"measurement {m.id!r}: the weights and one sequence's KV cache do not fit the chips' "
                         "usable memory, so no batch size can be worked out")
    low, high = 1, P.BATCH.max
    while low < high:  # the largest b that fits
        mid = (low + high + 1) // 2
        if step.footprint(full.but(batch=mid)).fits:
            low = mid
        else:
            high = mid - 1
    return low


@dataclass(frozen=True)
class Prediction:
    """A measurement beside the step model's ceiling.

    Attributes:
        row: the measurement (``descent.catalog.measurements.Measurement``).
        measured: the measured figure in the row's unit (tokens/s or s); for the build machine's
            row, its recording's.
        ceiling: the step model's figure for the same configuration, same unit.
        share: the share of the ceiling reached: measured / ceiling for a speed, ceiling / measured
            for a time.
        measured_rate, ceiling_rate: both as speeds, tokens/s (a TTFT as prompt / TTFT, a time
            between tokens as its inverse): the axes of the page's figure.
        bound: ``"memory"`` or ``"compute"`` (module docstring).
        batch: the batch the ceiling used (the row's, or the largest that fits for ``batch = 0``).
        fits: the weights and the batch's KV cache at the middle context fit the chips' usable memory.
        chip_class: :func:`descent.catalog.measurements.chip_class`. engine: the row's engine.
        date, source, quote: the row's, or for the build machine the recording's date and file.
    """

    row: M.Measurement
    measured: float
    ceiling: float
    share: float
    measured_rate: float
    ceiling_rate: float
    bound: str
    batch: int
    fits: bool
    chip_class: str
    engine: str
    date: str
    source: str
    quote: str

    @property
    def id(self) -> str:
        """The measurement's id."""
        return self.row.id


def _measured(m: M.Measurement) -> tuple[float, str, str, str]:
    """(value, date, source, quote): the row's own, or its build-machine recording's."""
    if not m.recorded:
        return m.value, m.date, m.source, m.quote
    r = recorded.measurement(m.recorded)
    value = r.rate if m.unit == "tokens/s" else r.value
    return value, r.date, f"src/descent/data/{recorded.MACHINE_FILE} ({m.recorded!r}: {r.what})", r.what


def predict(m: str | M.Measurement) -> Prediction:
    """Measurement ``m`` (an id or a row) beside the step model's ceiling (module docstring).

    Raises:
        ValueError: an unknown id, or a configuration the step model does not take.
    """
    m = M.measurement(m) if isinstance(m, str) else m
    measured, date, source, quote = _measured(m)
    batch = _max_batch(m) if m.batch == 0 else m.batch
    sc = scenario_for(m, batch)
    if m.what in ("decode_tokens_per_s", "itl_s"):
        c = step.cost(sc, decode_contexts=[sc.context] * batch)
        ceiling_rate, ceiling_time, bound = 1 / c.seconds, c.seconds, c.bound
    elif m.what in ("prefill_tokens_per_s", "ttft_s"):
        c = step.prefill(sc)
        ceiling_rate, ceiling_time, bound = m.prompt_tokens / c.seconds, c.seconds, c.bound
    else:  # output_tokens_per_s
        d = step.cost(sc, decode_contexts=[sc.context] * batch)
        decode_s = m.output_tokens * d.seconds
        prefill_s, bound = 0.0, d.bound
        if m.prompt_tokens:
            p = step.cost(sc.but(microbatches=1), prefill_spans=[(0, m.prompt_tokens)] * batch)
            prefill_s = p.seconds
            if prefill_s > decode_s:
                bound = p.bound
        ceiling_time = prefill_s + decode_s
        ceiling_rate = batch * m.output_tokens / ceiling_time
    if m.is_time:
        ceiling = ceiling_time
        share = ceiling_time / measured
        measured_rate = m.prompt_tokens / measured if m.what == "ttft_s" else 1 / measured
    else:
        ceiling, share, measured_rate = ceiling_rate, measured / ceiling_rate, measured
    fits = step.footprint(sc).fits
    return Prediction(m, measured, ceiling, share, measured_rate, ceiling_rate, bound, batch, fits,
                      M.chip_class(m.chip), m.engine, date, source, quote)


@cache
def predictions() -> tuple[Prediction, ...]:
    """Every catalog measurement beside its ceiling, in file order."""
    return tuple(predict(m) for m in M.measurements().values())


def group(name: str, rows: tuple[Prediction, ...] | None = None) -> tuple[Prediction, ...]:
    """The predictions of group ``name`` (``params.MEASURED_GROUP``: ``all``, an engine, a chip class
    or a bound).

    Raises:
        ValueError: an unknown group (the message lists them).
    """
    rows = predictions() if rows is None else rows
    if name not in M.GROUPS:
        raise ValueError(f"group must be one of {', '.join(M.GROUPS)}, got {name!r}")
    _, field, value = M.GROUPS[name]
    return rows if not field else tuple(p for p in rows if getattr(p, field) == value)


@dataclass(frozen=True)
class Spread:
    """The shares of the ceiling a set of measurements reached.

    Attributes:
        count: how many. median: their median. low, high: the lowest and the highest.
    """

    count: int
    median: float
    low: float
    high: float


def spread(rows: tuple[Prediction, ...]) -> Spread:
    """Median and range of the rows' shares of their ceilings.

    Raises:
        ValueError: no rows.
    """
    if not rows:
        raise ValueError("no measurements in this group")
    shares = [p.share for p in rows]
    return Spread(len(shares), statistics.median(shares), min(shares), max(shares))


def class_of(p: Prediction) -> tuple[str, str, str]:
    """A prediction's class: (chip class, engine, bound)."""
    return (p.chip_class, p.engine, p.bound)


def classes(rows: tuple[Prediction, ...] | None = None) -> dict[tuple[str, str, str], tuple[Prediction, ...]]:
    """The rows by class (:func:`class_of`), classes in order of first appearance."""
    out: dict[tuple[str, str, str], list[Prediction]] = {}
    for p in predictions() if rows is None else rows:
        out.setdefault(class_of(p), []).append(p)
    return {k: tuple(v) for k, v in out.items()}


def expected(chip_class: str, engine: str, bound: str, rows: tuple[Prediction, ...] | None = None) -> Spread | None:
    """The expected share of the ceiling for a class, from the measurements of that class (chip class,
    engine, bound): their median, lowest and highest; None when no measurement covers it."""
    members = classes(rows).get((chip_class, engine, bound), ())
    return spread(members) if members else None


@dataclass(frozen=True)
class Coverage:
    """Leave-one-out: how often a measurement falls inside the range the rest of its class gives.

    Attributes:
        tested: measurements whose class has at least two others (a range needs two ends).
        inside: of those, how many fall between the lowest and the highest share of the others.
    """

    tested: int
    inside: int

    @property
    def share(self) -> float:
        """``inside / tested``. Raises ValueError when nothing could be tested."""
        if not self.tested:
            raise ValueError("no class has three or more measurements, so nothing can be left out and tested")
        return self.inside / self.tested


def leave_one_out(rows: tuple[Prediction, ...] | None = None, *, pooled: bool = False) -> Coverage:
    """For each row whose class has at least two other rows: is its share between the lowest and the
    highest share of the others? (Leave-one-out cross-validation of the expected range.)

    By default the class is (chip class, engine, bound) (:func:`class_of`) and the shares are as
    measured. With ``pooled`` it tests the range the calculators print (:func:`expected_range`):
    classes of (chip class, bound), every engine together, each share counted at most 1."""
    tested = inside = 0
    for shares in (_shares_by_class(rows) if not pooled else _pooled_shares(rows)):
        if len(shares) < 3:
            continue
        for i, x in enumerate(shares):
            others = shares[:i] + shares[i + 1:]
            tested += 1
            inside += min(others) <= x <= max(others)
    return Coverage(tested, inside)


def _shares_by_class(rows: tuple[Prediction, ...] | None) -> list[list[float]]:
    return [[p.share for p in members] for members in classes(rows).values()]


def _pooled_shares(rows: tuple[Prediction, ...] | None) -> list[list[float]]:
    return [list(v) for v in _shares_of(predictions() if rows is None else rows).values()]


# ---------------------------------------------------------------------------------------------
# The expected range beside a calculator's ceiling
# ---------------------------------------------------------------------------------------------


def chip_class_of(accelerator: str | Accelerator) -> str | None:
    """The chip class of a catalog chip (:func:`descent.catalog.measurements.chip_class`); None for a
    chip described by its numbers (``descent.custom``), which no class covers."""
    name = accelerator.id if isinstance(accelerator, Accelerator) else accelerator
    return None if name == custom.CUSTOM_ID else M.chip_class(name)


@dataclass(frozen=True)
class Expected:
    """What published engines reached of ceilings like this one: the ceiling times the lowest, median
    and highest share of the measurements of its class (for a time, the ceiling divided by them).

    Attributes:
        low, median, high: the expected value, in the ceiling's unit (for a time ``low`` is the fastest).
        measurements: how many measurements the range comes from.
        chip_class, bound: the class.
    """

    low: float
    median: float
    high: float
    measurements: int
    chip_class: str
    bound: str

    def as_json(self) -> dict:
        """``{"low", "median", "high", "measurements"}`` (the command line's ``*_expected`` keys)."""
        return {"low": self.low, "median": self.median, "high": self.high, "measurements": self.measurements}


def expected_range(ceiling: float, accelerator: str | Accelerator, bound: str, *, time: bool = False,
                   rows: tuple[Prediction, ...] | None = None) -> Expected | None:
    """The expected range beside a ceiling on ``accelerator`` whose step is ``bound``: from the
    measurements on the same chip class whose ceiling had the same bound, every engine together (a
    calculator does not know the engine). None when no measurement covers the class, or the chip is
    one described by its numbers. A share above 1 counts as 1: it comes from an assumption of the
    prediction (the batch a maximum-load benchmark held), not from an engine beating the ceiling, so
    the range never passes the ceiling.

    Args:
        ceiling: a speed (tokens/s), or with ``time`` a time (s: TTFT, time between tokens).

    Raises:
        ValueError: ``bound`` is not memory or compute.
    """
    if bound not in M.BOUNDS:
        raise ValueError(f"bound must be one of {', '.join(M.BOUNDS)}, got {bound!r}")
    cls = chip_class_of(accelerator)
    if cls is None:
        return None
    shares = (class_shares() if rows is None else class_shares(rows)).get((cls, bound))
    if not shares:
        return None
    s = Spread(len(shares), statistics.median(shares), min(shares), max(shares))
    if time:
        return Expected(ceiling / s.high, ceiling / s.median, ceiling / s.low, s.count, cls, bound)
    return Expected(ceiling * s.low, ceiling * s.median, ceiling * s.high, s.count, cls, bound)


# ---------------------------------------------------------------------------------------------
# The shares by chip class and bound, computed once (the committed record data/expected_shares.json)
# ---------------------------------------------------------------------------------------------

#: The committed derived record of :func:`class_shares` (under ``descent/data/``).
SHARES_FILE = "expected_shares.json"


def _shares_of(rows: tuple[Prediction, ...]) -> dict[tuple[str, str], tuple[float, ...]]:
    out: dict[tuple[str, str], list[float]] = {}
    for p in rows:
        out.setdefault((p.chip_class, p.bound), []).append(min(p.share, 1.0))
    return {k: tuple(sorted(v)) for k, v in sorted(out.items())}


#: The catalog files the predictions read: the record is keyed to their text.
CATALOG_FILES = ("measurements.toml", "models.toml", "accelerators.toml", "released.toml", "links.toml")


def _catalog_digest() -> str:
    h = hashlib.sha256()
    for name in CATALOG_FILES:
        h.update(name.encode("utf-8") + b"\0" + catalog.read_file(name).encode("utf-8") + b"\0")
    return h.hexdigest()


def shares_record(rows: tuple[Prediction, ...] | None = None) -> dict:
    """The record :data:`SHARES_FILE` holds: the sha256 of the catalog files (:data:`CATALOG_FILES`), how many rows,
    and by chip class and bound the shares of the ceiling (each at most 1, sorted) of ``rows``
    (default every catalog measurement)."""
    rows = predictions() if rows is None else rows
    return {
        "what": "shares of the step model's ceiling reached by the public measurements of "
                "catalog/measurements.toml, by chip class and bound (descent.predict.class_shares); "
                "written by: python -m descent.predict",
        "catalog_sha256": _catalog_digest(),
        "measurements": len(rows),
        "classes": [{"chip_class": c, "bound": b, "shares": list(v)} for (c, b), v in _shares_of(rows).items()],
        "points": [{"id": p.id, "ceiling_rate": p.ceiling_rate, "measured_rate": p.measured_rate, "engine": p.engine,
                    "chip_class": p.chip_class} for p in rows],
    }


@cache
def _record() -> dict | None:
    """The committed record, or None when a catalog file (:data:`CATALOG_FILES`) changed since it was written."""
    record = json.loads(resources.files("descent").joinpath("data", SHARES_FILE).read_text(encoding="utf-8"))
    return record if record["catalog_sha256"] == _catalog_digest() else None


def _recorded_shares() -> dict[tuple[str, str], tuple[float, ...]] | None:
    record = _record()
    return None if record is None else {(c["chip_class"], c["bound"]): tuple(c["shares"]) for c in record["classes"]}


@dataclass(frozen=True)
class Point:
    """One measurement on the figure: its id, the ceiling and the measured figure as speeds
    (tokens/s: :attr:`Prediction.ceiling_rate`, :attr:`Prediction.measured_rate`), engine, chip class."""

    id: str
    ceiling_rate: float
    measured_rate: float
    engine: str
    chip_class: str


def figure_points() -> tuple[Point, ...]:
    """Every catalog measurement as a point of the figure "measured against ceiling", in file order:
    from the committed record while it matches ``measurements.toml``, else from :func:`predictions`."""
    record = _record()
    if record is None:
        return tuple(Point(p.id, p.ceiling_rate, p.measured_rate, p.engine, p.chip_class) for p in predictions())
    return tuple(Point(**q) for q in record["points"])


def class_shares(rows: tuple[Prediction, ...] | None = None) -> dict[tuple[str, str], tuple[float, ...]]:
    """By (chip class, bound): the shares of the ceiling the measurements reached, each counted at most
    1 (:func:`expected_range`), sorted. Without ``rows``: every catalog measurement's, read from the
    committed record (:data:`SHARES_FILE`) while it matches ``measurements.toml``, else computed."""
    if rows is not None:
        return _shares_of(rows)
    recorded_shares = _recorded_shares()
    return _shares_of(predictions()) if recorded_shares is None else recorded_shares


def write_shares_record(path: Path | None = None) -> Path:
    """Write :func:`shares_record` to ``path`` (default the package's ``data/`` :data:`SHARES_FILE`)."""
    path = Path(__file__).parent / "data" / SHARES_FILE if path is None else path
    path.write_text(json.dumps(shares_record(), indent=1) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# The reader's own machine (Part 0: the model runs in the reader's browser)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReaderPoint:
    """The reader's browser on the figure: its decode speed against the ceiling its own memory allows.

    Attributes:
        decode_tokens_per_s, prefill_tokens_per_s: measured by the engine in the reader's browser.
        stream_bytes_per_s: the memory bandwidth the page measured there (one thread reading an array).
        bytes_per_token: what one decode step of the browser's model reads: the shipped GGUF's tensors
            (:func:`descent.replay.file_bytes`) and the engine's KV cache at the run's middle context.
        decode_ceiling: ``stream_bytes_per_s / bytes_per_token``, tokens/s: the step model's decode
            ceiling on a chip of that bandwidth (no arithmetic peak is measured, so no compute ceiling).
        share: measured decode over its ceiling.
        context: the middle context of the timed run (prompt + decode tokens / 2), tokens.
        threads: the engine's threads. browser: the browser's name and version.
    """

    decode_tokens_per_s: float
    prefill_tokens_per_s: float
    stream_bytes_per_s: float
    bytes_per_token: float
    decode_ceiling: float
    share: float
    context: int
    threads: int
    browser: str


def reader_point(speed: dict, kv: str) -> ReaderPoint:
    """The reader's decode speed beside the ceiling of their own machine, from the engine's ``speed``
    answer (:func:`descent.engine.speed`: measured speeds, token counts, ``stream_bytes_per_s`` > 0,
    ``threads``, ``browser``) and the engine's KV-cache precision ``kv``. The ceiling is the step
    model's for one decode step of one sequence on a chip of the measured bandwidth and no known peak
    (memory-bound: bytes over bandwidth): the bytes are the browser's model file
    (:func:`descent.replay.file_bytes`, the shipped GGUF's tensors) and its KV cache at the middle context.
    """
    context = speed["prompt_tokens"] + speed["decode_tokens"] // 2
    model = catalog.model(replay.MODEL)
    nbytes = replay.file_bytes() + step.kv_cache_bytes(model, numerics.kv_precision(kv), context, 1)
    bandwidth = float(speed["stream_bytes_per_s"])
    ceiling = bandwidth / nbytes
    return ReaderPoint(speed["decode_tokens_per_s"], speed["prefill_tokens_per_s"], bandwidth, nbytes,
                       ceiling, speed["decode_tokens_per_s"] / ceiling, context, speed["threads"], speed["browser"])


def prefill_bound(sc: Scenario) -> str:
    """What bounds reading the scenario's prompt in one pass (:func:`descent.step.prefill`)."""
    return step.prefill(sc).bound


if __name__ == "__main__":  # python -m descent.predict: write the committed shares record
    print(f"wrote {write_shares_record()}", file=sys.stderr)
