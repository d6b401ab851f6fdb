"""Figure: PagedAttention's block tables. Two samples of one prompt map their logical blocks onto
physical blocks: the prompt's full blocks are shared, the rest are each sample's own and
interleave in memory. The tables are descent.serving.block_tables's and the counts
descent.serving.shared_blocks's, for a small example drawn block by block."""

import matplotlib
from matplotlib.patches import Rectangle

from descent import plotting, serving
from descent.units import format_int, plural

#: The drawn example: small enough to show every token slot (an engine's blocks hold 16 tokens).
PROMPT, OUTPUT, SAMPLES, BLOCK = 10, 5, 2, 4

_TABLES = serving.block_tables(PROMPT, OUTPUT, SAMPLES, BLOCK)
_COUNTS = serving.shared_blocks(PROMPT, OUTPUT, SAMPLES, BLOCK)
_SHARED = sorted(set.intersection(*(set(t) for t in _TABLES)))
_NAMES = ("A", "B")

ALT = (
    f"Two sequences, A and B, each a {format_int(PROMPT)}-token prompt and a {format_int(OUTPUT)}-token reply, "
    f"in blocks of {format_int(BLOCK)} token slots. Each has {plural(len(_TABLES[0]), 'logical block')}. Lines "
    f"map them to {plural(_COUNTS['shared'], 'physical block')} in memory: the first "
    f"{plural(len(_SHARED), 'block')}, full of prompt, are shared by both; the rest belong to one sequence each "
    f"and alternate in memory. Block tables: " + "; ".join(
        f"{n}: {', '.join(format_int(b) for b in t)}" for n, t in zip(_NAMES, _TABLES, strict=True)) + "."
)
CAPTION = (
    f"Two samples of one prompt in blocks of {format_int(BLOCK)} tokens. Sharing the prompt's full blocks, "
    f"they take {format_int(_COUNTS['shared'])} physical blocks instead of {format_int(_COUNTS['separate'])}. "
    f"The partly filled last prompt block is copied when a sample first writes into it."
)


def _block(ax, theme, x, y, s, filled, color, label):
    """One block of BLOCK token slots at (x, y), slot width s; ``filled`` slots shaded."""
    for k in range(BLOCK):
        ax.add_patch(Rectangle((x + k * s, y), s, s, facecolor=matplotlib.colors.to_rgba(color, 0.6 if k < filled else 0.08),
                               edgecolor=color, linewidth=1))
    if label:
        ax.text(x + BLOCK * s / 2, y + s + 0.8, label, ha="center", va="bottom", fontsize=9, color=theme.fg)


#: Height of a line of the diagram's text, in diagram units (9 pt at about 14.4 units per inch, with
#: its descent): a line to a physical block from below ends under the block's number, not across it.
TEXT_UNITS = 2.4


def make(theme, width):
    # A phone has no room for "sequence A" beside each row: the rows' names go above and below the
    # rows, in the text that gives each table, and only "memory" keeps a (narrow) margin of its own.
    narrow = width < 5
    shared, own = theme.color(0), (theme.color(1), theme.color(2))
    s = 2.0 if narrow else 2.6  # a token slot, in diagram units
    gap = 1.4 if narrow else 3.0
    bw = BLOCK * s
    n_phys = _COUNTS["shared"]
    left = 14 if not narrow else 11.5
    uw = max(len(_TABLES[0]), n_phys) * (bw + gap) + (16 if not narrow else left)
    uh = 56 if narrow else 46
    fig, ax = plotting.diagram(width, 3.9 if narrow else 3.2, uw, uh)
    rows = {0: uh - 10, "phys": uh / 2 - s / 2, 1: 4}
    phys_x = [left + i * (bw + gap) for i in range(n_phys)]
    owner = {b: j for j, t in enumerate(_TABLES) for b in t if b not in _SHARED}
    # Physical memory: each block coloured by who holds it, filled as its holder fills it.
    fill = {}
    for t in _TABLES:
        tokens = PROMPT + OUTPUT
        for i, b in enumerate(t):
            fill[b] = max(fill.get(b, 0), min(BLOCK, tokens - i * BLOCK))
    for b, x in enumerate(phys_x):
        c = shared if b in _SHARED else own[owner[b]]
        _block(ax, theme, x, rows["phys"], s, fill[b], c, "")
        ax.text(x + bw / 2, rows["phys"] - 0.8, f"{b}" + (" (shared)" if b in _SHARED and not narrow else ""),
                ha="center", va="top", fontsize=9, color=theme.fg)
    ax.text(phys_x[0] - 1.2, rows["phys"] + s / 2, "memory", ha="right", va="center", fontsize=9, color=theme.fg)
    for j, t in enumerate(_TABLES):
        y = rows[j]
        for i, b in enumerate(t):
            x = left + i * (bw + gap)
            c = shared if b in _SHARED else own[j]
            _block(ax, theme, x, y, s, min(BLOCK, PROMPT + OUTPUT - i * BLOCK), c, "")
            # The line from the logical block to its physical block.
            y0, y1 = (y, rows["phys"] + s) if j == 0 else (y + s, rows["phys"] - 0.8 - TEXT_UNITS)
            ax.plot([x + bw / 2, phys_x[b] + bw / 2], [y0 - 0.3 if j == 0 else y0 + 0.3, y1 + 0.3 if j == 0 else y1 - 0.3],
                    color=c, linewidth=1.2)
        text = f"{'sequence ' if narrow else ''}{_NAMES[j]}'s block table: " + ", ".join(format_int(b) for b in t)
        ty = y + s + 1.2 if j == 0 else y - 1.2
        ax.text(left, ty, text, ha="left", va="bottom" if j == 0 else "top", fontsize=9, color=theme.fg)
    if not narrow:
        ax.text(phys_x[0] - 1.2, rows[0] + s / 2, "sequence A", ha="right", va="center", fontsize=9, color=theme.fg)
        ax.text(phys_x[0] - 1.2, rows[1] + s / 2, "sequence B", ha="right", va="center", fontsize=9, color=theme.fg)
    return fig
