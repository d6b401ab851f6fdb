"""The panel that loads the real model into the reader's browser: ``model_in_browser``.

Placed on a page above the widgets that show the model's numbers (Part 0, Part 1). Before the
reader acts, it says what loading costs (the download's size, from ``descent/data/model_file.json``:
:func:`descent.recorded.model_file`) and offers the load button; ``llm.js`` does the loading
(download with a progress bar, Cache Storage, the engine in a worker). Once the model is loaded it
shows what the reader's own browser measured (:func:`descent.engine.speed`: prefill and decode
tokens per second, the load time) and offers to remove the model. It then places the reader's
decode speed on the figure of the reference page "How close are the ceilings?" (every public
measurement against the step model's ceiling), its ceiling being what the machine's own memory
allows: the bandwidth the page measured there over the bytes one decode step reads
(:func:`descent.predict.reader_point`). Everything is computed and kept in the page.

The buttons are ``action`` views (``data-action="load-model"`` / ``"remove-model"``): Python
renders them, ``llm.js`` acts on them. Core rule: standard library and core modules only.
"""

from __future__ import annotations

import functools

from descent import engine, predict, recorded
from descent.units import (
    format_bytes,
    format_int,
    format_number,
    format_percent,
    format_rate,
    format_time,
    plural,
)
from descent.widgets import Look, widget
from descent.widgets import _svg as svg
from descent.widgets import views as v

__all__ = ["CEILINGS_HREF", "download_label", "model_in_browser", "reader_views"]

#: The reference page with the same figure, relative to a top-level page (Part 0, Part 1).
CEILINGS_HREF = "reference/ceilings.html"


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
        *reader_views(s),
        v.action("Remove the model from this browser", "remove-model", disabled=False,
                 note=f"Frees the {size} it keeps in your browser's storage; the widgets go back to the recorded results."),
        v.note("Every widget on this page now computes with the model in your browser: type any prompt."),
    ]


def _rate(x: float) -> str:
    return f"{format_number(x, 3)} tokens/s"


def reader_views(s: dict) -> list[dict]:
    """The reader's machine on the figure "measured against ceiling" (:func:`descent.predict.reader_point`
    of the engine's ``speed`` answer ``s``): the chart, with every public measurement as a grey dot,
    the reader's decode as a ringed point and their prefill as a level line (the page measures no
    arithmetic peak, so prefill has no ceiling here); then the numbers behind the point."""
    r = predict.reader_point(s, engine.KV_CACHE)
    points = predict.figure_points()
    xs = [p.ceiling_rate for p in points] + [r.decode_ceiling]
    ys = [p.measured_rate for p in points] + [r.decode_tokens_per_s, r.prefill_tokens_per_s]
    lo, hi = min(xs + ys) / 2, max(xs + ys) * 2
    marks = [svg.Mark(p.ceiling_rate, p.measured_rate, color="var(--dw-fg-lighter)", radius=3.5) for p in points]
    marks.append(svg.Mark(r.decode_ceiling, r.decode_tokens_per_s, f"you: decode ({r.browser})", "var(--dw-c1)",
                          radius=6, ring=True, bold=True))
    # The lines are named where they end (an unseen mark carries each name), not in a legend box
    # that the reader's point could fall under; a name that would cover another is left out.
    marks += [svg.Mark(hi / 4, hi / 4, "measured = ceiling", radius=0, label_dx=-8, label_dy=-8),
              svg.Mark(hi / 4, hi / 8, "half", radius=0, label_dx=8, label_dy=12),
              svg.Mark(hi / 1.5, r.prefill_tokens_per_s, "your prefill (no ceiling measured)", radius=0,
                       label_dx=-4, label_dy=-6)]
    lines = [svg.Line([(lo, lo), (hi, hi)], width=1.2),
             svg.Line([(lo, lo / 2), (hi, hi / 2)], width=1, dash="5 4"),
             svg.Line([(lo, r.prefill_tokens_per_s), (hi, r.prefill_tokens_per_s)], color="var(--dw-c2)", width=1.5,
                      dash="2 3")]
    chart = functools.partial(svg.loglog_chart, x_range=(lo, hi), y_range=(lo, hi),
                              x_label="ceiling, tokens/s (log scale)", y_label="measured, tokens/s (log)",
                              x_tick=svg.decade_label, y_tick=svg.decade_label, uid="reader-ceilings")
    # A phone's plot has no room for a name that crosses no line: the same points and lines, unnamed,
    # with a key below the plot that names each.
    diagonal, half, prefill = lines
    key = [marks[len(points)],
           svg.Line(prefill.points, prefill.color, prefill.width, prefill.dash, "your prefill (no ceiling measured)"),
           svg.Line(diagonal.points, diagonal.color, diagonal.width, label="measured = ceiling"),
           svg.Line(half.points, half.color, half.width, half.dash, "half the ceiling"),
           svg.Mark(lo, lo, "a public measurement", marks[0].color, marks[0].radius)]
    narrow = chart(lines=lines, marks=marks[:len(points) + 1], narrow=True, key=key)
    alt = (f"Scatter on log scales of {plural(len(points), 'public measurement')} of inference speed against the step "
           f"model's ceiling, with the diagonal where they are equal. Your browser's decode is the ringed point: "
           f"{_rate(r.decode_tokens_per_s)} measured against a ceiling of {_rate(r.decode_ceiling)}, "
           f"{format_percent(r.share, 2)} of it. A level line marks your prefill, {_rate(r.prefill_tokens_per_s)}.")
    threads = plural(r.threads, "thread")
    return [
        v.svg(chart(lines=lines, marks=marks, declutter=True), alt, narrow=narrow),
        v.kv([
            ("Browser", f"{r.browser}, the engine on {threads}"),
            ("Read per decode step", f"{format_bytes(r.bytes_per_token, 'MB')}: the model file and its KV cache at "
                                     f"{plural(r.context, 'token')}"),
            ("Memory bandwidth measured here", f"{format_rate(r.stream_bytes_per_s)}, one thread reading a large array"),
            ("Decode ceiling", f"{_rate(r.decode_ceiling)}: that bandwidth over the bytes of one step"),
            ("Your decode", f"{_rate(r.decode_tokens_per_s)}, {format_percent(r.share, 2)} of its ceiling"),
            ("Your prefill", f"{_rate(r.prefill_tokens_per_s)}, the level line: a page cannot measure your "
                             "processor's peak arithmetic, so it has no ceiling here"),
        ], caption="Your machine beside the public measurements"),
        v.note(f"Measured and drawn in this page; nothing is sent anywhere. The grey dots are the "
               f"{format_int(len(points))} public measurements explained on", "info",
               link="How close are the ceilings?", href=CEILINGS_HREF),
    ]
