"""Part 1's animation ("The transformer"): where each token of the running prompt looks.

``attention_any`` plays the recorded attention of SmolLM2-135M on the running prompt ("The capital
of France is", :func:`descent.recorded.attention_rows`), one frame per query token, for the layer
and head the reader picks: a fan of arcs from the token to every token before it (and itself),
drawn as thick as its weight, and the weights as bars (the same views as Part 1's last-token fan,
:func:`descent.widgets.part1_model.fan_views`). The reader clicks a token (or steps with the arrow
keys) to see its fan; the page holds the last token's frame, the one that picks the next token.

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

import html

from descent import recorded
from descent.units import format_fixed, format_int, plural
from descent.widgets import Input, Look, widget
from descent.widgets import views as v
from descent.widgets.part1_model import TRACE_HEAD, TRACE_LAYER, fan_views

__all__ = ["attention_any", "attention_any_frames", "first_previous_token_head", "first_sink_head", "tops"]


def tops(layer: int, head: int) -> list[int]:
    """For each token of the recorded prompt (from 0): the position (from 0) it gives the most
    weight in ``layer`` and ``head`` (both from 1)."""
    rows = recorded.attention_rows()["weights"][layer - 1][head - 1]
    return [max(range(len(r)), key=lambda i, r=r: r[i]) for r in rows]


def _heads():
    a = recorded.attention_rows()
    return ((layer, head) for layer in range(1, a["layers"] + 1) for head in range(1, a["heads"] + 1))


def first_previous_token_head() -> tuple[int, int]:
    """The first (layer, head) in which every token after the first gives the most weight to the
    token just before it (a "previous-token head")."""
    for lh in _heads():
        if all(t == i - 1 for i, t in enumerate(tops(*lh)) if i):
            return lh
    raise ValueError("attention_any: the record has no previous-token head")


def first_sink_head() -> tuple[int, int]:
    """The first (layer, head) in which every token gives the most weight to the first token."""
    for lh in _heads():
        if not any(tops(*lh)):
            return lh
    raise ValueError("attention_any: the record has no head that looks at the first token")


_PREV, _SINK = first_previous_token_head(), first_sink_head()

ANY_LAYER = TRACE_LAYER.but(default=_PREV[0])
ANY_HEAD = TRACE_HEAD.but(default=_PREV[1])

#: The fan's drawing: width, height, the tokens' baseline and font size (SVG user units), wide and narrow.
FAN_WIDE = (560, 190, 168, 13)
FAN_NARROW = (330, 170, 150, 11)
#: Arc width in user units for a weight of 1, and the thinnest arc drawn.
ARC_MAX, ARC_MIN = 16.0, 0.75


def _fan_svg(tokens: list[str], weights: list[float], size: tuple[int, int, int, int]) -> str:
    """Arcs from token ``len(weights) - 1`` of ``tokens`` to each token up to it (itself as a loop),
    stroke width by weight; the tokens after it, which it cannot see, in grey."""
    w, h, base, font = size
    n = len(tokens) if tokens else 1
    step = w / max(n, 1)
    xs = [step * (i + 0.5) for i in range(len(tokens))]
    q = len(weights) - 1
    f = lambda x: format_fixed(x, 1)  # noqa: E731
    arcs = []
    for k, wt in enumerate(weights):
        width = f(max(ARC_MIN, ARC_MAX * wt))
        op = format_fixed(0.35 + 0.65 * wt, 2)
        if k == q:
            r = step * 0.16
            arcs.append(f'<circle cx="{f(xs[k])}" cy="{f(base - font - r - 4)}" r="{f(r)}" fill="none" '
                        f'style="stroke:var(--dw-c3);stroke-width:{width};stroke-opacity:{op}"/>')
        else:
            top = base - font - 6 - min(base - font - 14, abs(xs[q] - xs[k]) * 0.55)
            y0 = base - font - 4
            arcs.append(f'<path d="M{f(xs[q])} {f(y0)} Q{f((xs[q] + xs[k]) / 2)} {f(2 * top - y0)} {f(xs[k])} {f(y0)}" '
                        f'fill="none" style="stroke:var(--dw-c3);stroke-width:{width};stroke-opacity:{op};'
                        'stroke-linecap:round"/>')
    labels = "".join(
        f'<text x="{f(xs[i])}" y="{base}" text-anchor="middle" font-size="{font}" '
        f'style="fill:{"var(--dw-c1)" if i == q else "var(--dw-c5)" if i > q else "var(--dw-fg)"};'
        f'font-weight:{700 if i == q else 400}">'
        f"{html.escape(v.shown_token(t))}</text>"
        for i, t in enumerate(tokens))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
            f'class="descent-svg__{"wide" if w == FAN_WIDE[0] else "narrow"}" aria-hidden="true">{"".join(arcs)}{labels}</svg>')


def attention_any_frames(layer: int, head: int) -> list[dict]:
    """One frame per token of the recorded prompt: its fan over the tokens up to it (module docstring)."""
    a = recorded.attention_rows()
    tokens = [t["text"] for t in a["tokens"]]
    rows = a["weights"][layer - 1][head - 1]  # (T, t + 1)
    frames = []
    for t, weights in enumerate(rows):
        seen = tokens[:t + 1]
        top = max(range(len(weights)), key=lambda i: weights[i])
        chips = v.chips([v.chip(x, cls="is-query" if i == t else "", goto=i, current=i == t)
                         for i, x in enumerate(tokens)], caption="Pick the token that looks")
        shown = f"\u201c{v.shown_token(seen[t])}\u201d"
        if t == 0:
            what = f"{shown}, the first token, can only look at itself."
        else:
            what = (f"{shown} looks back over {plural(t + 1, 'token')}, itself included; "
                    f"most of its weight goes to \u201c{v.shown_token(seen[top])}\u201d.")
        alt = (f"Arcs from {shown} to each token up to it, as thick as its attention weight; the thickest "
               f"goes to \u201c{v.shown_token(seen[top])}\u201d.")
        frames.append(v.frame(what, [
            chips,
            v.svg(_fan_svg(tokens, weights, FAN_WIDE), alt,
                  narrow=_fan_svg(tokens, weights, FAN_NARROW)),
            *fan_views(seen, weights, layer, head),
        ]))
    return frames


@widget(
    "attention_any",
    title="Where each token looks",
    description=("Recorded from SmolLM2-135M on the running prompt: the attention weights of every token "
                 "over the tokens up to it, for one layer and one head. Click a token, or step through them."),
    inputs=[Input(ANY_LAYER, "range"), Input(ANY_HEAD, "range")],
    tries=[
        ("Click each token in turn.",
         f"In this head (layer {_PREV[0]}, head {_PREV[1]}), each token puts most of its weight on the token "
         "just before it: a previous-token head.", Look(html="Pick the token that looks")),
        (f"Go to layer {_SINK[0]}, head {_SINK[1]}.",
         "Here every token puts most of its weight on the first token, which carries little meaning: "
         "the head parks its attention there when nothing else matters.",
         {"layer": _SINK[0], "head": _SINK[1]}),
    ],
)
def attention_any(layer: int, head: int) -> list[dict]:
    """Views: a player of the prompt's tokens, each frame one token's fan (attention_any_frames)."""
    a = recorded.attention_rows()
    n = len(a["tokens"])
    return [
        v.player(attention_any_frames(layer, head),
                 caption=f"Layer {format_int(layer)}, head {format_int(head)}: the fan of each of the "
                 f"prompt's {plural(n, 'token')}"),
    ]

