"""Figure: SmolLM2 under a JSON pattern: the probability the model put on the allowed tokens, per step."""

import hashlib
import json

from descent.trace.measure import measurements

ALT = (
    "Bar chart, one bar per step of SmolLM2's reply under a JSON-shaped pattern: the share of the "
    "model's probability that fell on the tokens the pattern allowed, on a logarithmic axis, each bar "
    "labelled with the token chosen. Low bars are steps where the mask overruled the model. The table "
    "in the text lists the same numbers."
)
CAPTION = (
    "Constrained decoding on SmolLM2-135M, measured when the site was built: at each step, the share of "
    "the probability the model gave to the tokens the pattern allows (the rest is masked and the allowed "
    "tokens are scaled up to sum to 1). Labels are the tokens chosen (· is a space); orange bars are steps "
    "where the model had put less than half its probability on what the pattern allowed."
)


#: How a space shows in the labels (the figures' font has no ␣).
SPACE = "·"


def INPUTS() -> str:  # noqa: N802 (the figure builder's name for it)
    return hashlib.sha256(json.dumps(measurements()["constrained"], sort_keys=True).encode()).hexdigest()


def draw(ax, theme):
    steps = measurements()["constrained"]["steps"]
    mass = [s["allowed_mass"] for s in steps]
    xs = range(1, len(steps) + 1)
    ax.bar(xs, mass, color=[theme.color(0) if m >= 0.5 else theme.color(1) for m in mass], zorder=3)
    for x, s in zip(xs, steps, strict=True):
        ax.annotate(s["token"]["text"].replace(" ", SPACE), (x, s["allowed_mass"]), xytext=(0, 3),
                    textcoords="offset points", ha="center", fontsize=8, color=theme.fg)
    ax.set_yscale("log")
    ax.set_ylim(min(mass) / 3, 8)
    ax.set_xticks(list(xs))
    ax.set_xlabel("step of the reply")
    ax.set_ylabel("probability on allowed tokens")
    ax.grid(axis="x", visible=False)
