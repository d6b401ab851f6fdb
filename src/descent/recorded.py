"""What the build recorded from the real model, read back: the traces and the embedding table.

``descent/data/traces.json`` holds SmolLM2-135M-Instruct's tokens, next-token candidates and
attention for the site's prepared prompts (written by :mod:`descent.trace.export`), and
``descent/data/embeddings.json`` a slice of its real embedding table with neighbours and analogies
(written by :mod:`descent.trace.embeddings`), ``descent/data/embedding_rows.json`` the stored
embedding rows of the tokens Part 5 replays (written by :mod:`descent.trace.embedding_rows`), and
``descent/data/model_file.json`` the facts of the
model file the site ships for the reader's browser (written by :mod:`descent.site.wllama`: size,
parts, hashes, the engine's version). Pages, widgets and the command line read them here, so the
recorded numbers have one reader.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import functools
import json
import operator
from importlib import resources

from descent import params as P

__all__ = [
    "DATA_FILE",
    "EMBEDDINGS_FILE",
    "EMBEDDING_ROWS_FILE",
    "MODEL_FILE",
    "PROMPT",
    "PROMPT_LABELS",
    "embedding_data",
    "embedding_rows",
    "find_prompt",
    "model_file",
    "pca_explained",
    "prompt_ids",
    "prompt_options",
    "prompt_trace",
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


#: One of the prepared prompts the build traced: a page's ``prompt=``, a widget's prompt select.
PROMPT = P.declare(P.Param(
    "prompt", "Prompt", "choice", "capital", key="trace_prompt", choices=prompt_options,
    help="One of the prompts the real model was run on when this site was built.",
))
