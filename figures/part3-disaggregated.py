"""Figure: disaggregated serving. A prefill pool reads the prompt, the KV cache crosses the network,
a decode pool writes the reply. The cache's bytes and the transfer time over one InfiniBand port
are descent.serving.kv_transfer's; the prefill's time is descent.serving.prefill's, for the running
example."""

from descent import catalog, plotting, serving, step
from descent import params as P
from descent.scenario import Scenario
from descent.units import format_bytes, format_int, format_time

#: The network between the pools: one InfiniBand port per GPU (catalog links.toml).
LINK = "ib-ndr"

_M = catalog.model(P.MODEL.default)
_A = catalog.accelerator(P.ACCELERATOR.default)
_T = P.CONTEXT.default
_MOVE = next(x for x in serving.kv_transfer(_M.id, _A.id, P.KV.default, _T) if x[0].id == LINK)
_LINK, _BYTES, _SECONDS = _MOVE
_PREFILL = serving.prefill(step.model_for(Scenario()), _T).seconds


def _b(x: float) -> str:
    return format_bytes(x, "auto", 3, trim=True)


ALT = (
    f"Requests enter a pool of GPUs that only read prompts (prefill). For a {format_int(_T)}-token prompt on "
    f"{_M.name}, one {_A.name} takes {format_time(_PREFILL)}. The request's KV cache, {_b(_BYTES)}, then "
    f"crosses {_LINK.label} to a second pool of GPUs that only write replies (decode), in "
    f"{format_time(_SECONDS)}. Tokens stream back to the user from the decode pool."
)
CAPTION = (
    f"Disaggregated serving, for one {format_int(_T)}-token prompt on {_M.name} and {_A.name} GPUs. The "
    f"prefill pool is sized for arithmetic, the decode pool for memory bandwidth. Between them each "
    f"request's KV cache moves once, over {_LINK.label}. The times are the site's model, not a measurement."
)


def _pool(ax, theme, x, y, w, h, title, note, color):
    plotting.box(ax, theme, x, y, w, h, color=color)
    ax.text(x + w / 2, y + h - 3, title, ha="center", va="top", fontsize=10, weight="bold", color=theme.fg)
    # Four GPUs, drawn as small squares.
    s = min(w / 6, 5.5)
    for i in range(4):
        plotting.box(ax, theme, x + w / 2 - 2 * s - 1.5 + i * (s + 1), y + h / 2 - s / 2 - 1, s, s, color=color)
    ax.text(x + w / 2, y + 3, note, ha="center", va="bottom", fontsize=9, color=theme.fg, linespacing=1.25)


def make(theme, width):
    narrow = width < 5
    c0, c1, c2 = theme.color(0), theme.color(2), theme.color(1)
    kv = f"KV cache, {_b(_BYTES)}\nover {_LINK.label.split(',')[0]}:\n{format_time(_SECONDS)}"
    if narrow:
        fig, ax = plotting.diagram(width, 5.6, 60, 100)
        ax.text(30, 97, "requests", ha="center", va="top", fontsize=9, color=theme.fg)
        plotting.arrow(ax, theme, 30, 92, 30, 86)
        _pool(ax, theme, 5, 56, 50, 30, "prefill pool", f"each GPU reads a prompt\nin {format_time(_PREFILL)}", c0)
        plotting.arrow(ax, theme, 30, 56, 30, 40, color=c2)
        ax.text(33, 48, kv, ha="left", va="center", fontsize=9, color=theme.fg, linespacing=1.25)
        _pool(ax, theme, 5, 12, 50, 28, "decode pool", "writes the reply,\none token per step", c1)
        plotting.arrow(ax, theme, 30, 12, 30, 5)
        ax.text(30, 3.5, "tokens to the user", ha="center", va="top", fontsize=9, color=theme.fg)
    else:
        fig, ax = plotting.diagram(width, 2.9, 120, 48)
        ax.text(2, 24, "requests", ha="left", va="center", fontsize=9, color=theme.fg)
        plotting.arrow(ax, theme, 15, 24, 20, 24)
        _pool(ax, theme, 20, 6, 30, 36, "prefill pool", f"each GPU reads a prompt\nin {format_time(_PREFILL)}", c0)
        plotting.arrow(ax, theme, 51, 24, 76, 24, color=c2)
        ax.text(63.5, 28, kv, ha="center", va="bottom", fontsize=9, color=theme.fg, linespacing=1.25)
        _pool(ax, theme, 76, 6, 30, 36, "decode pool", "writes the reply,\none token per step", c1)
        plotting.arrow(ax, theme, 106, 24, 111, 24)
        ax.text(119, 24, "tokens\nto the\nuser", ha="right", va="center", fontsize=9, color=theme.fg)
    return fig
