"""What the build recorded from the real model, read back: the traces and the embedding table.

``descent/data/traces.json`` holds SmolLM2-135M-Instruct's tokens, next-token candidates and
attention for the site's prepared prompts (written by :mod:`descent.trace.export`), and
``descent/data/embeddings.json`` a slice of its real embedding table with neighbours and analogies
(written by :mod:`descent.trace.embeddings`). Pages, widgets and the command line read them here,
so the recorded numbers have one reader.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import functools
import json
from importlib import resources

from descent import params as P

__all__ = [
    "DATA_FILE",
    "EMBEDDINGS_FILE",
    "PROMPT",
    "PROMPT_LABELS",
    "embedding_data",
    "prompt_ids",
    "prompt_options",
    "prompt_trace",
    "trace_data",
]

#: The recorded traces, in ``descent/data/``.
DATA_FILE = "traces.json"

#: The recorded embedding slice, in ``descent/data/``.
EMBEDDINGS_FILE = "embeddings.json"

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


@functools.cache
def embedding_data() -> dict:
    """The parsed ``embeddings.json`` (see :mod:`descent.trace.embeddings` for its fields)."""
    return json.loads(resources.files("descent").joinpath("data", EMBEDDINGS_FILE).read_text(encoding="utf-8"))


#: One of the prepared prompts the build traced: a page's ``prompt=``, a widget's prompt select.
PROMPT = P.declare(P.Param(
    "prompt", "Prompt", "choice", "capital", key="trace_prompt", choices=prompt_options,
    help="One of the prompts the real model was run on when this site was built.",
))
