"""Figure: published AIME 2024 scores of DeepSeek-R1's distilled models beside the reference models
of the same table (descent.published; DeepSeek-R1 README, "Distilled Model Evaluation")."""

from descent import published
from descent.units import format_number

ALT = (
    "Horizontal bar chart of AIME 2024 pass@1 scores as published in the DeepSeek-R1 repository: "
    "GPT-4o and Claude 3.5 Sonnet score low; the dense models fine-tuned on DeepSeek-R1's outputs, "
    "from 1.5 to 70 billion parameters, score far higher, the 14B and larger ones above o1-mini."
)
CAPTION = (
    "AIME 2024 pass@1 (percent), copied from the DeepSeek-R1 repository's table of distilled models "
    "(github.com/deepseek-ai/DeepSeek-R1, README). The Distill models are Qwen2.5 and Llama checkpoints "
    "fine-tuned on samples written by DeepSeek-R1. Published numbers, not measured here."
)


def draw(ax, theme):
    rows = list(published.AIME_DISTILLED.items())
    ys = range(len(rows))
    colors = [theme.color(0) if k.startswith("DeepSeek") else theme.muted for k, _ in rows]
    ax.barh(list(ys), [v for _, v in rows], color=colors, zorder=3)
    for y, (_, v) in enumerate(rows):
        ax.annotate(format_number(v, 3), (v, y), xytext=(4, 0), textcoords="offset points", va="center",
                    fontsize=8, color=theme.fg)
    ax.set_yticks(list(ys), [k for k, _ in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("AIME 2024 pass@1, % (published)")
    ax.grid(axis="y", visible=False)
