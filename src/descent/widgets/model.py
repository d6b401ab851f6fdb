"""The panel that loads the real model into the reader's browser: ``model_in_browser``.

Placed on a page above the widgets that show the model's numbers (Part 0, Part 1). Before the
reader acts, it says what loading costs (the download's size, from ``descent/data/model_file.json``:
:func:`descent.recorded.model_file`) and offers the load button; ``llm.js`` does the loading
(download with a progress bar, Cache Storage, the engine in a worker). Once the model is loaded it
shows what the reader's own browser measured (:func:`descent.engine.speed`: prefill and decode
tokens per second, the load time) and offers to remove the model.

The buttons are ``action`` views (``data-action="load-model"`` / ``"remove-model"``): Python
renders them, ``llm.js`` acts on them. Core rule: standard library and core modules only.
"""

from __future__ import annotations

from descent import engine, recorded
from descent.units import format_bytes, format_number, format_time, plural
from descent.widgets import Look, widget
from descent.widgets import views as v

__all__ = ["download_label", "model_in_browser"]


def download_label() -> str:
    """The download's size as the button states it: ``"98.4 MB"`` (SI megabytes: all the parts together)."""
    return format_bytes(sum(p["bytes"] for p in recorded.model_file()["parts"]), "MB")


@widget(
    "model_in_browser",
    title="The real model, in your browser",
    description="Load SmolLM2-135M, the model every widget on this page shows, into your browser: then "
    "type any prompt in them and the model computes it on your machine, with nothing sent anywhere.",
    inputs=[],
    tries=[
        ("Press the load button, then type a sentence of your own in the widgets below.",
         "The rankings now come from your machine, for any text; nothing you type leaves the browser.",
         Look(html="Load the model")),
        ("Come back tomorrow and load it again.", "It starts from your browser's storage: no second download.",
         Look(html="kept in your browser's storage")),
    ],
    live=True,
)
def model_in_browser(live: engine.Answers | None = None) -> list[dict]:
    """Views of the panel: before loading, the download and the load button; after, the measured speeds.

    Args:
        live: ``None`` while the model is not loaded; else the engine's answers (the panel asks for
            :func:`descent.engine.speed`).

    Returns:
        Not loaded: stats (the download's size and parts, the engine), the load button (an
        ``action``), a progress bar for ``llm.js`` to fill and a note. Loaded: stats (load time,
        prefill and decode tokens per second measured in this browser, threads), the remove button
        and a note.

    Raises:
        EngineNeeded: the engine has not measured its speed yet.
    """
    f = recorded.model_file()
    size = download_label()
    eng = f["engine"]
    if live is None:
        return [
            v.stat("Download", size, note=f"the model file, in {plural(len(f['parts']), 'part')}, from this site only; "
                   "kept in your browser's storage for your next visit"),
            v.stat("Engine", "llama.cpp", note=f"compiled to WebAssembly ({eng['package']} {eng['version']}), "
                   "running in a background worker on your processor"),
            v.action(f"Load the model ({size})", "load-model",
                     note="Nothing is downloaded until you press the button."),
            v.progress("Loading the model"),
            v.note("Until the model is loaded, the widgets below show what it computed when this site was built."),
        ]
    s = engine.speed(live)
    fetched = "from this browser's storage" if s["from_cache"] else f"download {format_time(s['download_ms'] / 1000)}"
    threads = plural(s["threads"], "thread")
    return [
        v.stat("Ready in", format_time((s["download_ms"] + s["load_ms"]) / 1000),
               note=f"{fetched}; starting the engine {format_time(s['load_ms'] / 1000)}"),
        v.stat("Prefill in your browser", format_number(s["prefill_tokens_per_s"]), "tokens/s",
               note=f"{plural(s['prompt_tokens'], 'token')} read in one pass, on {threads}"),
        v.stat("Decode in your browser", format_number(s["decode_tokens_per_s"]), "tokens/s",
               note=f"{plural(s['decode_tokens'], 'token')} written one at a time, on {threads}"),
        v.action("Remove the model from this browser", "remove-model", disabled=False,
                 note=f"Frees the {size} it keeps in your browser's storage; the widgets go back to the recorded results."),
        v.note("Every widget on this page now computes with the model in your browser: type any prompt."),
    ]
