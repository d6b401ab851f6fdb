"""Part 2's distillation chart ("Weights as numbers"), interactive, on its published data.

``distillation`` plots the published students (:data:`descent.published.DISTILLED`: DeepSeek-R1's six
distilled models and s1-32B) by their AIME 2024 score against their size or their count of
fine-tuning samples, with the reference models of the DeepSeek-R1 table as lines (their sizes are
not all public). The reader picks a point (the select, or a chip) and sees its numbers and where
each was printed. Nothing is computed here but the drawing: every value is quoted.

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

import html
import math

from descent import params as P
from descent import published
from descent.units import format_count, format_fixed, format_number, format_percent
from descent.widgets import Input, widget
from descent.widgets import views as v

__all__ = ["REFERENCES", "distillation", "distillation_svg", "score_axis"]

#: The reference rows of the DeepSeek-R1 table: models that were not distilled, drawn as lines.
REFERENCES = tuple((k, x) for k, x in published.AIME_DISTILLED.items() if not k.startswith("DeepSeek-R1-Distill-"))

STUDENT = P.declare(P.Param(
    "student", "Student", "choice", "DeepSeek-R1-Distill-Qwen-7B", key="distill_student",
    choices=[(s.name, s.name) for s in published.DISTILLED],
    help="A model fine-tuned on a larger model's outputs, with its published score.",
))
AXIS = P.declare(P.Param(
    "axis", "Across", "choice", "size", key="distill_axis",
    choices=[("size", "student size"), ("samples", "fine-tuning samples")],
    help="What the chart puts across: the student's parameters or the samples it was tuned on.",
))

#: The chart: width, height, margins (left, right, top, bottom), font (SVG user units), wide and narrow.
CHART_WIDE = (560, 320, (48, 150, 12, 44), 12)
CHART_NARROW = (330, 300, (40, 12, 12, 44), 11)
#: Axis ranges: billions of parameters, samples (log), and the score in percent (linear).
SIZE_RANGE, SAMPLE_RANGE, SCORE_RANGE = (1.0, 100.0), (100.0, 1e7), (0.0, 100.0)


def _place(source: str) -> str:
    """A source as text: its address without the scheme (the page links only its own prose's
    citations; a widget's text names the place), then the table or section."""
    return source.removeprefix("https://")


def _short(name: str) -> str:
    return name.replace("DeepSeek-R1-Distill-", "R1-")


def distillation_svg(axis: str, selected: str, size: tuple) -> str:
    """The scatter: score up, size or samples across (log), the selected student ringed, the
    reference models as dashed lines labelled at the right (wide) or not at all (narrow)."""
    w, h, (ml, mr, mt, mb), font = size
    lo, hi = SIZE_RANGE if axis == "size" else SAMPLE_RANGE
    left, right, top, bottom = ml, w - mr, mt, h - mb
    f = lambda x: format_fixed(x, 1)  # noqa: E731
    px = lambda x: left + (math.log10(x) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * (right - left)  # noqa: E731
    py = lambda y: bottom - (y - SCORE_RANGE[0]) / (SCORE_RANGE[1] - SCORE_RANGE[0]) * (bottom - top)  # noqa: E731
    e = lambda t: html.escape(str(t), quote=True)  # noqa: E731
    out = []
    grid = "stroke:var(--dw-fg-lightest);stroke-width:1"
    for y in range(0, 101, 20):
        out.append(f'<line x1="{left}" y1="{f(py(y))}" x2="{right}" y2="{f(py(y))}" style="{grid}"/>')
        out.append(f'<text x="{left - 6}" y="{f(py(y) + 4)}" text-anchor="end" font-size="{font - 1}" '
                   f'style="fill:var(--dw-fg-light)">{y}</text>')
    k = math.ceil(math.log10(lo))
    while 10**k <= hi:
        x = px(10**k)
        out.append(f'<line x1="{f(x)}" y1="{top}" x2="{f(x)}" y2="{bottom}" style="{grid}"/>')
        tick = f"{format_count(10**k)}" if axis == "samples" else f"{format_number(10**k, 1, trim=True)}B"
        out.append(f'<text x="{f(x)}" y="{bottom + 15}" text-anchor="middle" font-size="{font - 1}" '
                   f'style="fill:var(--dw-fg-light)">{e(tick)}</text>')
        k += 1
    label = "parameters of the student" if axis == "size" else "fine-tuning samples"
    out.append(f'<text x="{f((left + right) / 2)}" y="{h - 8}" text-anchor="middle" font-size="{font}" '
               f'style="fill:var(--dw-fg)">{label} (log scale)</text>')
    head, metrics = score_axis()
    out.append(f'<text transform="translate(12 {f((top + bottom) / 2)}) rotate(-90)" text-anchor="middle" '
               f'font-size="{font}" style="fill:var(--dw-fg)">{e(head)} '
               f'<tspan font-size="{font - 1}">{e(metrics)}</tspan></text>')
    for name, score in REFERENCES:
        y = py(score)
        out.append(f'<line x1="{left}" y1="{f(y)}" x2="{right}" y2="{f(y)}" '
                   'style="stroke:var(--dw-c5);stroke-width:1.2;stroke-dasharray:5 4"/>')
        if mr > 60:
            out.append(f'<text x="{right + 4}" y="{f(y + 4)}" font-size="{font - 1}" '
                       f'style="fill:var(--dw-fg-light)">{e(name)}</text>')
    # The legend: the colour of each teacher's students, top left.
    teachers = list(dict.fromkeys(s.teacher for s in published.DISTILLED))
    for i, t in enumerate(teachers):
        colour = "var(--dw-c1)" if t == "DeepSeek-R1" else "var(--dw-c3)"
        out.append(f'<circle cx="{left + 10}" cy="{top + 10 + i * (font + 4)}" r="4" style="fill:{colour}"/>')
        out.append(f'<text x="{left + 18}" y="{f(top + 10 + i * (font + 4) + font / 3)}" font-size="{font - 1}" '
                   f'style="fill:var(--dw-fg)">taught by {e(t)}</text>')
    for s in published.DISTILLED:
        x, y = px(s.billions if axis == "size" else s.samples), py(s.score)
        colour = "var(--dw-c3)" if s.teacher != "DeepSeek-R1" else "var(--dw-c1)"
        out.append(f'<circle cx="{f(x)}" cy="{f(y)}" r="5" style="fill:{colour}"/>')
        if s.name == selected:
            out.append(f'<circle cx="{f(x)}" cy="{f(y)}" r="10" fill="none" style="stroke:var(--dw-fg);stroke-width:2"/>')
            anchor = "end" if x > (left + right) / 2 else "start"
            dx = -14 if anchor == "end" else 14
            out.append(f'<text x="{f(x + dx)}" y="{f(y - 10)}" text-anchor="{anchor}" font-size="{font}" '
                       f'style="fill:var(--dw-fg);font-weight:600">{e(_short(s.name))}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
            f'class="descent-svg__{"wide" if mr > 60 else "narrow"}">{"".join(out)}</svg>')


def score_axis() -> tuple[str, str]:
    """The score axis's label in two parts: what it measures, and how, from the students' metrics
    (:attr:`descent.published.Metric.brief`): the metric most students share, then each other one
    with the students it applies to, e.g. ("AIME 2024 score, %", "(pass@1; greedy for s1-32B)")."""
    by: dict[published.Metric, list[str]] = {}
    for x in published.DISTILLED:
        by.setdefault(x.metric, []).append(x.name)
    main = max(by, key=lambda m: len(by[m]))
    rest = [f"{m.brief} for {', '.join(names)}" for m, names in by.items() if m is not main]
    return "AIME 2024 score, %", f"({'; '.join([main.brief, *rest])})"


def _unlike_hint() -> str:
    """The first Try-this answer: s1-32B against the distilled student of its size, both scores
    and both metrics from :data:`descent.published.DISTILLED`."""
    s1 = next(x for x in published.DISTILLED if x.name == "s1-32B")
    peer = next(x for x in published.DISTILLED if x.teacher == "DeepSeek-R1" and x.billions == s1.billions)
    pct = lambda x: format_percent(x / 100, 3)  # noqa: E731
    return (f"{s1.name} sits far to the left: it was tuned on far fewer samples than {_short(peer.name)}, the "
            f"distilled model of the same size, and scores {pct(s1.score)} against its {pct(peer.score)}, on a "
            f"slightly different measure: {s1.metric.name}, one answer per problem, against {peer.metric.brief} "
            "averaged over sampled answers (the table's metric column).")


@widget(
    "distillation",
    title="Small students of large teachers",
    description=("Published AIME 2024 scores of models fine-tuned on a larger model's written answers, by their "
                 "size or by the samples they were tuned on. Pick a point to see its numbers and their sources."),
    inputs=[Input(STUDENT, "select"), Input(AXIS, "segmented")],
    tries=[("Put the fine-tuning samples across.",
            _unlike_hint(),
            {"axis": "samples", "student": "s1-32B"}),
           ("Pick the 1.5B student.", "Even the smallest distilled model scores above GPT-4o on this test.",
            {"student": "DeepSeek-R1-Distill-Qwen-1.5B"})],
)
def distillation(student: str, axis: str) -> list[dict]:
    """Views: the picked student's numbers, the scatter, a chip per student and a table of sources."""
    s = next(x for x in published.DISTILLED if x.name == student)
    pct = lambda x: format_percent(x / 100, 3)  # noqa: E731
    alt = (f"Scatter of AIME 2024 scores against {'student size' if axis == 'size' else 'fine-tuning samples'}; "
           f"{s.name} is ringed at {pct(s.score)}. Dashed lines mark models that were not distilled.")
    return [
        v.stat("Student size", format_number(s.billions, 3, trim=True), "billion parameters"),
        v.stat("Fine-tuning samples", format_count(s.samples), note=f"written by {s.teacher}"),
        v.stat("AIME 2024 score", pct(s.score), note=f"{s.metric.name}, as published"),
        v.svg(distillation_svg(axis, student, CHART_WIDE), alt, narrow=distillation_svg(axis, student, CHART_NARROW)),
        v.chips([v.chip(_short(x.name), cls="is-picked" if x.name == student else "", set={"student": x.name})
                 for x in published.DISTILLED], caption="Pick a point", tokens=False),
        v.table(["Student", "Teacher", "Samples", "AIME 2024", "Metric", "Where the numbers come from"],
                [[x.name, x.teacher, format_count(x.samples), pct(x.score), x.metric.name,
                  f"score: {_place(x.score_source)}; samples: {_place(x.samples_source)}"] for x in published.DISTILLED]
                + [[name, "", "", pct(score), REFERENCE_METRIC, f"score: {_place(REFERENCE_SOURCE)}"]
                   for name, score in REFERENCES],
                caption="Every point and line, with its source and how its score was measured"),
        v.kv([(m.name, f"{m.definition} ({_place(m.source)})") for m in _metrics()],
             caption="How each score was measured"),
    ]


def _metrics() -> list[published.Metric]:
    """The metrics of the students' scores, each once, in the order the students first use them."""
    out: list[published.Metric] = []
    for x in published.DISTILLED:
        if x.metric not in out:
            out.append(x.metric)
    return out


#: Where the reference models' scores come from.
REFERENCE_SOURCE = f"{published.R1_URL} (README, Distilled Model Evaluation)"
#: The reference rows' metric: the table's column is "AIME 2024 pass@1"; the README's sampling setting
#: (:data:`descent.published.R1_METRIC`) is stated for DeepSeek's own models, not for the others it lists.
REFERENCE_METRIC = "pass@1, as DeepSeek's table reports it"
