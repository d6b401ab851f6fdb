"""Figure: SmolLM2-135M's embeddings of the Part 1 word list, projected onto two principal components."""

from matplotlib.patches import Rectangle

from descent import plotting
from descent.recorded import embedding_data

ALT = (
    "Scatter plot of about sixty words placed by the first two principal components of their "
    "576-number embedding vectors in SmolLM2-135M. Words of one kind sit together: the numbers "
    "one to ten form a tight cluster, as do the colours, the animals, the family and royalty "
    "words, and the countries next to their capitals. The caption gives the share of variance "
    "the two axes keep."
)
_D = embedding_data()
_EX = _D["pca"]["explained"]
#: Percent per unit fraction.
PERCENT = 100
CAPTION = (
    f"The embedding vectors of {_D['pca']['words']} single-token words from SmolLM2-135M's table "
    f"({_D['d_model']} numbers each), projected onto their first two principal components. The "
    f"horizontal axis keeps {_EX[0] * PERCENT:.1f}% of the words' variance and the vertical one "
    f"{_EX[1] * PERCENT:.1f}%: the other {(1 - _EX[0] - _EX[1]) * PERCENT:.0f}% is flattened away, so "
    "distances in the picture are only a rough guide."
)

#: Marker per group (colour cycles through the theme's six; the marker tells groups apart too).
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


#: The zoomed panel: the crowded middle of the left panel, in principal-component units (chosen by eye
#: to hold every word except the numbers, colours and size/quality adjectives).
ZOOM_X = (-1.5, 0.25)
ZOOM_Y = (-0.45, 0.6)
#: Height of each panel per inch of width: the two panels are stacked, so each gets the whole width
#: (taller on a phone, where the labels are relatively larger).
PANEL_ASPECT = 0.62
PANEL_ASPECT_NARROW = 0.85
#: Below this width (inches) the figure is the phone version.
NARROW_IN = 5


def _panel(ax, theme, zoom: bool):
    groups = list(dict.fromkeys(w["group"] for w in _D["words"]))
    for gi, g in enumerate(groups):
        ws = [w for w in _D["words"] if w["group"] == g]
        ax.scatter(
            [w["x"] for w in ws],
            [w["y"] for w in ws],
            s=18,
            color=theme.color(gi),
            marker=MARKERS[gi % len(MARKERS)],
            label=g,
            zorder=3,
        )
        for w in ws:
            inside = ZOOM_X[0] <= w["x"] <= ZOOM_X[1] and ZOOM_Y[0] <= w["y"] <= ZOOM_Y[1]
            if zoom == inside or (not zoom and not inside):
                ax.annotate(
                    w["word"],
                    (w["x"], w["y"]),
                    xytext=(3, 2),
                    textcoords="offset points",
                    fontsize=7,
                    color=theme.fg,
                    clip_on=True,
                )
    ax.set_xlabel(f"component 1 ({_EX[0] * PERCENT:.1f}% of variance)")


def make(theme, width=plotting.FIGSIZE[0]):
    """Two panels, one above the other (side by side they left each word label a few pixels tall
    on a phone): all words, then the crowded middle enlarged. ``width``: inches."""
    narrow = width < NARROW_IN
    fig, _ = plotting.new_figure(theme, figsize=(width, 2 * (PANEL_ASPECT_NARROW if narrow else PANEL_ASPECT) * width + 0.8))
    fig.clf()
    left, right = fig.subplots(2, 1)
    _panel(left, theme, zoom=False)
    left.set_xmargin(0.15)  # room for the labels of the rightmost words
    left.add_patch(
        Rectangle(
            (ZOOM_X[0], ZOOM_Y[0]),
            ZOOM_X[1] - ZOOM_X[0],
            ZOOM_Y[1] - ZOOM_Y[0],
            fill=False,
            edgecolor=theme.muted,
            linestyle="--",
            linewidth=0.8,
        )
    )
    left.set_ylabel(f"component 2 ({_EX[1] * PERCENT:.1f}% of variance)")
    left.set_title("all words (dashed box: enlarged below)", fontsize=8, color=theme.fg)
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=6.5, loc="outside lower center", ncols=3 if narrow else 4)
    _panel(right, theme, zoom=True)
    right.set_xlim(*ZOOM_X)
    right.set_ylim(*ZOOM_Y)
    right.set_ylabel(f"component 2 ({_EX[1] * PERCENT:.1f}% of variance)")
    right.set_title("the crowded middle, enlarged", fontsize=8, color=theme.fg)
    return fig
