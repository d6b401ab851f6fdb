"""Figure: the batching simulator's loop (descent.serving.simulate): admit, plan, run, retire, once
per step, with where static and continuous batching differ. The four stage names are the loop's
own comments in descent.serving.simulate (a test reads them there)."""

from descent import plotting

#: The loop's stages, in order, as its source comments name them ("# 1. Admit." ...).
STAGES = ("Admit", "Plan", "Run", "Retire")

_WHAT = {
    "Admit": "a waiting request takes a free slot\nif its whole KV cache fits",
    "Plan": "each running sequence decodes one token;\nnew prompts are read in the same step",
    "Run": "the step model gives the step's time;\nthe clock moves on by that much",
    "Retire": "a finished sequence leaves\nand frees its KV cache",
}
_DIFF = {
    "Admit": "continuous: at every step\nstatic: only into an empty batch",
    "Retire": "continuous: its slot is free at once\nstatic: idle until the batch drains",
}

ALT = (
    "A loop of four boxes, run once per step: Admit, where a waiting request takes a free slot if its KV cache "
    "fits; Plan, where every running sequence decodes one token and new prompts are read in the same step; Run, "
    "where the step model gives the step's time and the clock moves on; Retire, where finished sequences leave "
    "and free their cache. Notes at Admit and Retire: continuous batching admits at every step and reuses a slot at once; "
    "static batching admits only into an empty batch and leaves a finished slot idle until the batch drains."
)
CAPTION = (
    "The batching simulator's loop, one turn per step. Static and continuous batching run the same loop; "
    "they differ only in when Admit may fill a slot."
)


def make(theme, width):
    narrow = width < 5
    colours = [theme.color(i) for i in range(4)]

    def stage(name, x, y, w, h, c):
        plotting.box(ax, theme, x, y, w, h, "", color=c)
        ax.text(x + w / 2, y + h - 2.5, f"{STAGES.index(name) + 1}. {name}", ha="center", va="top", fontsize=10,
                weight="bold", color=theme.fg)
        ax.text(x + w / 2, y + h - 8, _WHAT[name], ha="center", va="top", fontsize=9, color=theme.fg,
                linespacing=1.2)
        if name in _DIFF:
            ax.text(x + w / 2, y + 2.5, _DIFF[name], ha="center", va="bottom", fontsize=9, color=theme.muted,
                    linespacing=1.2)

    if narrow:
        fig, ax = plotting.diagram(width, 6.4, 60, 118)
        ys, hs = [84, 60, 36, 2], [30, 20, 20, 30]
        for name, y, h, c in zip(STAGES, ys, hs, colours, strict=True):
            stage(name, 1, y, 58, h, c)
        for a, (b, hb) in zip(ys, zip(ys[1:], hs[1:], strict=True), strict=False):
            plotting.arrow(ax, theme, 30, a, 30, b + hb)
        ax.text(30, 117.5, "once per step; after 4, back to 1", ha="center", va="top", fontsize=9, color=theme.muted)
        return fig
    fig, ax = plotting.diagram(width, 4.2, 120, 70)
    pos = {"Admit": (2, 37), "Plan": (66, 37), "Run": (66, 3), "Retire": (2, 3)}
    w, h = 52, 30
    for (name, (x, y)), c in zip(pos.items(), colours, strict=True):
        stage(name, x, y, w, h, c)
    plotting.arrow(ax, theme, 54, 52, 66, 52)
    plotting.arrow(ax, theme, 92, 37, 92, 33)
    plotting.arrow(ax, theme, 66, 18, 54, 18)
    plotting.arrow(ax, theme, 28, 33, 28, 37)
    ax.text(60, 35, "once per step", ha="center", va="center", fontsize=9, color=theme.muted)
    return fig
