"""What the build recorded from the real model, read back: the traces and the embedding table.

``descent/data/traces.json`` holds SmolLM2-135M-Instruct's tokens, next-token candidates and
attention for the site's prepared prompts (written by :mod:`descent.trace.export`), and
``descent/data/embeddings.json`` a slice of its real embedding table with neighbours and analogies
(written by :mod:`descent.trace.embeddings`), ``descent/data/embedding_rows.json`` the stored
embedding rows of the tokens Part 5 replays (written by :mod:`descent.trace.embedding_rows`), and
``descent/data/model_file.json`` the facts of the
model file the site ships for the reader's browser (written by :mod:`descent.site.wllama`: size,
parts, hashes, the engine's version). ``descent/data/build_machine.json`` holds every timing taken on
the machine that builds the site (written by ``python -m descent.trace.machine_record``, never by
a build): :func:`measurement` reads one as a :class:`Recording`. Pages, widgets and the command line
read them here, so the recorded numbers have one reader.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import functools
import json
import operator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from descent import params as P

__all__ = [
    "ATTENTION_FILE",
    "DATA_FILE",
    "EMBEDDINGS_FILE",
    "EMBEDDING_ROWS_FILE",
    "MACHINE_FILE",
    "MACHINE_FORMAT",
    "MODEL_FILE",
    "PROMPT",
    "PROMPT_LABELS",
    "RATIO_OF",
    "SPECULATIVE_FILE",
    "Recording",
    "attention_rows",
    "embedding_data",
    "embedding_rows",
    "find_prompt",
    "machine_path",
    "machine_record",
    "measurement",
    "measurements",
    "model_file",
    "pca_explained",
    "prompt_ids",
    "prompt_options",
    "prompt_trace",
    "ratio",
    "speculative_run",
    "trace_data",
]

#: The recorded traces, in ``descent/data/``.
DATA_FILE = "traces.json"

#: The recorded embedding slice, in ``descent/data/``.
EMBEDDINGS_FILE = "embeddings.json"

#: The stored embedding rows of the replayed run's tokens, in ``descent/data/``.
EMBEDDING_ROWS_FILE = "embedding_rows.json"

#: The model file the site ships for the reader's browser, in ``descent/data/``.
MODEL_FILE = "model_file.json"

#: Part 3's prompt-lookup speculative run, pass by pass, in ``descent/data/`` (``python -m descent.trace.speculative_record``).
SPECULATIVE_FILE = "speculative.json"

#: Every query position's attention on the running prompt, in ``descent/data/`` (``python -m descent.trace.attention_record``).
ATTENTION_FILE = "attention.json"

#: The build machine's recorded timings, in ``descent/data/`` (``python -m descent.trace.machine_record``).
MACHINE_FILE = "build_machine.json"

#: Layout version of :data:`MACHINE_FILE`.
MACHINE_FORMAT = 1

PROMPT_LABELS = {
    "capital": "Capital of France",
    "arithmetic": "Arithmetic",
    "chat": "A chat question",
    "story": "Story opener",
    "uncertain": "Favourite colour",
}


@functools.lru_cache(maxsize=1)
def trace_data() -> dict:
    """The parsed ``descent/data/traces.json`` (read once). Keys: format, model, top, prompts."""
    raw = resources.files("descent").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    return json.loads(raw)


def prompt_ids() -> list[str]:
    """Ids of the prepared prompts, in page order."""
    return [p["id"] for p in trace_data()["prompts"]]


def prompt_options() -> list[tuple[str, str]]:
    """``[(id, label)]`` for a select/segmented control of the prepared prompts."""
    return [(p["id"], PROMPT_LABELS.get(p["id"], p["id"])) for p in trace_data()["prompts"]]


def prompt_trace(prompt_id: str) -> dict:
    """One prompt's record from :func:`trace_data`.

    Raises:
        ValueError: unknown id (the message lists the known ones).
    """
    for p in trace_data()["prompts"]:
        if p["id"] == prompt_id:
            return p
    raise ValueError(f"prompt must be one of {', '.join(prompt_ids())}, got {prompt_id!r}")


def find_prompt(prompt: str, chat: bool) -> dict | None:
    """The record of the prepared prompt whose text is ``prompt`` (as the reader types it, before any
    chat template) sent as a chat message or not (``chat``); ``None`` when the build did not trace it."""
    for p in trace_data()["prompts"]:
        if p["prompt"] == prompt and p["chat"] == chat:
            return p
    return None


@functools.cache
def speculative_run() -> dict:
    """The parsed ``speculative.json``: Part 3's prompt-lookup run on SmolLM2, round by round
    (layout in :mod:`descent.trace.speculative_record`): ``{"prompt", "first", "rounds": [{"draft",
    "accepted", "kept"}], "tokens", "passes", "drafted", "accepted", ...}``, tokens as ``{"id", "text"}``."""
    return json.loads(resources.files("descent").joinpath("data", SPECULATIVE_FILE).read_text(encoding="utf-8"))


@functools.cache
def attention_rows() -> dict:
    """The parsed ``attention.json``: every query position's attention weights on the running prompt,
    in every layer and head (layout in :mod:`descent.trace.attention_record`): ``{"prompt_id",
    "prompt", "tokens", "layers", "heads", "weights"}``, ``weights[layer][head][t]`` the weights of
    token ``t`` (from 0) over positions 0..t."""
    return json.loads(resources.files("descent").joinpath("data", ATTENTION_FILE).read_text(encoding="utf-8"))


@functools.cache
def model_file() -> dict:
    """The parsed ``model_file.json``: ``{"file", "bytes", "sha256", "max_part_bytes", "parts": [{"name",
    "bytes", "sha256"}], "engine": {"package", "version", "license"}}`` (see :mod:`descent.site.wllama`)."""
    return json.loads(resources.files("descent").joinpath("data", MODEL_FILE).read_text(encoding="utf-8"))


@functools.cache
def embedding_data() -> dict:
    """The parsed ``embeddings.json`` (see :mod:`descent.trace.embeddings` for its fields)."""
    return json.loads(resources.files("descent").joinpath("data", EMBEDDINGS_FILE).read_text(encoding="utf-8"))


def pca_explained(components: int) -> float:
    """Share of the recorded embeddings' variance the first ``components`` principal components
    explain together (``embeddings.json``'s ``pca.explained``, one share per component).

    Raises:
        ValueError: more components than were recorded, or fewer than one.
    """
    ex = embedding_data()["pca"]["explained"]
    if not 1 <= components <= len(ex):
        raise ValueError(f"components must be 1 to {len(ex)}, got {components!r}")
    return functools.reduce(operator.add, ex[:components])  # a left fold: the same in every Python


@functools.cache
def embedding_rows() -> dict:
    """The parsed ``embedding_rows.json``: the embedding table's type, shape and bytes per row in the
    shipped GGUF, and per token of the replayed run ``{"text", "id", "role", "d", "codes", "norm"}``
    (layout and units in :mod:`descent.trace.embedding_rows`)."""
    return json.loads(resources.files("descent").joinpath("data", EMBEDDING_ROWS_FILE).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Recording:
    """One timing recorded on the build machine (an entry of :data:`MACHINE_FILE`).

    ``value`` is the median over ``repeats`` runs, in ``unit`` (seconds); a run does ``work``
    ``work_unit`` (tokens, FLOP or bytes), so :attr:`rate` is the work per second. ``what`` says what
    was timed; ``machine`` (cpu, cores, system, python, numpy, blas, blas_threads), ``date`` (UTC,
    ISO) and ``load_average`` (1-minute, before and after) say where and when; ``runs`` are the
    seconds of every run.
    """

    name: str
    value: float
    unit: str
    work: float
    work_unit: str
    what: str
    machine: dict
    date: str
    load_average: dict
    repeats: int
    statistic: str
    runs: tuple[float, ...]

    @property
    def rate(self) -> float:
        """``work / value``: tokens/s, FLOP/s or bytes/s."""
        return self.work / self.value

    @property
    def rate_unit(self) -> str:
        """The unit of :attr:`rate`: ``work_unit + "/s"``."""
        return f"{self.work_unit}/s"


def machine_path() -> Path:
    """Where :data:`MACHINE_FILE` lies in this package's source (the file the record command writes)."""
    return Path(__file__).resolve().parent / "data" / MACHINE_FILE


@functools.cache
def machine_record() -> dict:
    """The parsed :data:`MACHINE_FILE`: ``{"format", "model", "machine", "date", "load_average",
    "repeats", "statistic", "measurements": {name: {"value", "unit", "work", "work_unit", "what",
    "runs"}}}`` (written by :mod:`descent.trace.machine_record`).

    Raises:
        ValueError: the file's format is not :data:`MACHINE_FORMAT`.
    """
    data = json.loads(resources.files("descent").joinpath("data", MACHINE_FILE).read_text(encoding="utf-8"))
    if data.get("format") != MACHINE_FORMAT:
        raise ValueError(f"{MACHINE_FILE}: format {data.get('format')!r}, expected {MACHINE_FORMAT}: "
                         "record again with python -m descent.trace.machine_record")
    return data


@functools.cache
def measurements() -> dict[str, Recording]:
    """Every recorded timing of the build machine, ``{name: Recording}`` in the file's order."""
    d = machine_record()
    return {
        name: Recording(name=name, value=m["value"], unit=m["unit"], work=m["work"], work_unit=m["work_unit"],
                        what=m["what"], machine=d["machine"], date=d["date"], load_average=d["load_average"],
                        repeats=d["repeats"], statistic=d["statistic"], runs=tuple(m["runs"]))
        for name, m in d["measurements"].items()
    }


def measurement(name: str) -> Recording:
    """One recorded timing of the build machine (``prefill``, ``decode``, ``decode_batch_2``, ...).

    Raises:
        ValueError: no such recording (the message lists the recorded names).
    """
    known = measurements()
    if name not in known:
        raise ValueError(f"no recorded measurement {name!r}; recorded: {', '.join(known)}")
    return known[name]


#: What :func:`ratio` may compare: a recording's rate (work per second), its time or its work.
RATIO_OF = ("rate", "value", "work")


def ratio(name: str, base: str, of: str = "rate") -> float:
    """One recording against another: ``measurement(name).<of> / measurement(base).<of>``, with
    ``of`` the :attr:`Recording.rate` (``"rate"``: how many times as fast), the time (``"value"``:
    how many times as long) or the work (``"work"``: how many times the tokens, as batch 16 against
    batch 2).

    Raises:
        ValueError: no such recording, or ``of`` not one of :data:`RATIO_OF`.
    """
    if of not in RATIO_OF:
        raise ValueError(f"of must be one of {', '.join(RATIO_OF)}, got {of!r}")
    return getattr(measurement(name), of) / getattr(measurement(base), of)


#: One of the prepared prompts the build traced: a page's ``prompt=``, a widget's prompt select.
PROMPT = P.declare(P.Param(
    "prompt", "Prompt", "choice", "capital", key="trace_prompt", choices=prompt_options,
    help="One of the prompts the real model was run on when this site was built.",
))
