"""Figure: the running example's KV cache as a block of layers x tokens x KV heads, beside the
formula that sizes it; every factor from the catalog row and every product from descent
(transformer.kv_elements_per_token, step.kv_cache_bytes)."""

from descent import catalog, numerics, plotting, step, transformer
from descent import params as P
from descent.units import format_bytes, format_int

_M = catalog.model(P.MODEL.default)
_KV = numerics.kv_precision(P.KV.default)
_T = P.CONTEXT.default
#: Bytes per cached value at the running example's KV precision.
_B = _KV.bits_per_weight / 8
_PER_TOKEN = transformer.kv_elements_per_token(_M) * _B
_TOTAL = step.kv_cache_bytes(_M, _KV, _T, 1)
# The drawing's formula is the plain GQA one: it must be the package's count for this model.
assert transformer.kv_elements_per_token(_M) == 2 * _M.num_layers * _M.num_kv_heads * _M.head_dim
assert abs(_TOTAL - _PER_TOKEN * _T) <= 1e-9 * _TOTAL


def _b(x: float) -> str:
    return format_bytes(x, "auto", 3, trim=True)


def _per_token(x: float) -> str:
    # In KiB, as Part 5's calculator and the contributing page's trace print the KV cache per token
    # (a power-of-two count of bytes): one quantity, one text.
    return format_bytes(x, "KiB", 3, trim=True)


ALT = (
    f"A box drawn in perspective: {format_int(_M.num_layers)} layers up, {format_int(_T)} tokens across and "
    f"{format_int(_M.num_kv_heads)} KV heads deep, one small cube per layer, token and head. Beside it the "
    f"formula: a key and a value of {format_int(_M.head_dim)} numbers per cube, {_per_token(_PER_TOKEN)} per token, "
    f"{_b(_TOTAL)} for the whole context."
)
CAPTION = (
    f"The KV cache of one {_M.name} conversation at {format_int(_T)} tokens, with {_KV.name.upper()} values. Each "
    f"cube is one layer's key and value for one token and one KV head. A new token adds one slice across "
    f"all layers and heads; the cache grows by that slice at every step."
)

#: Diagram units across and up (wide, narrow), and the figure's height in inches.
_WIDE, _NARROW = (100, 54, 3.4), (60, 70, 4.6)


def _cuboid(ax, theme, x, y, w, h, d, rows, cols, depth):
    """A box with its front face's lower left at (x, y): front w x h, receding d (up and right)."""
    from matplotlib.patches import Polygon

    dx, dy = d * 0.7, d * 0.5
    c = theme.color(2)
    faces = [
        ([(x, y), (x + w, y), (x + w, y + h), (x, y + h)], 0.22),  # front: layers x tokens
        ([(x, y + h), (x + w, y + h), (x + w + dx, y + h + dy), (x + dx, y + h + dy)], 0.12),  # top: heads
        ([(x + w, y), (x + w + dx, y + dy), (x + w + dx, y + h + dy), (x + w, y + h)], 0.32),  # side
    ]
    import matplotlib

    for pts, alpha in faces:
        ax.add_patch(Polygon(pts, closed=True, facecolor=matplotlib.colors.to_rgba(c, alpha), edgecolor=c, linewidth=1.2))
    grid = dict(color=c, linewidth=0.5, alpha=0.6)
    for i in range(1, rows):
        yy = y + h * i / rows
        ax.plot([x, x + w], [yy, yy], **grid)
        ax.plot([x + w, x + w + dx], [yy, yy + dy], **grid)
    for j in range(1, cols):
        xx = x + w * j / cols
        ax.plot([xx, xx], [y, y + h], **grid)
        ax.plot([xx, xx + dx], [y + h, y + h + dy], **grid)
    for k in range(1, depth):
        f = k / depth
        ax.plot([x + dx * f, x + w + dx * f], [y + h + dy * f, y + h + dy * f], **grid)
        ax.plot([x + w + dx * f, x + w + dx * f], [y + dy * f, y + h + dy * f], **grid)
    return dx, dy


def make(theme, width):
    narrow = width < 5
    uw, uh, hin = _NARROW if narrow else _WIDE
    fig, ax = plotting.diagram(width, hin, uw, uh)
    # Drawn cells: a few rows and columns stand for the many (labels give the true counts).
    x, y, w, h, d = (6, 32, 26, 24, 14) if narrow else (6, 8, 30, 30, 18)
    dx, dy = _cuboid(ax, theme, x, y, w, h, d, rows=8, cols=10, depth=_M.num_kv_heads)
    ax.text(x - 1.5, y + h / 2, f"{format_int(_M.num_layers)} layers", rotation=90, ha="right", va="center",
            fontsize=9, color=theme.fg)
    ax.text(x + w / 2, y - 1.5, f"{format_int(_T)} tokens", ha="center", va="top", fontsize=9, color=theme.fg)
    ax.text(x + w + dx + 1.5, y + h + dy * 0.75, f"{format_int(_M.num_kv_heads)} KV heads", ha="left",
            va="center", fontsize=9, color=theme.fg)
    # The newest token's slice: one column of the front face and its strip on top, in another colour.
    import matplotlib
    from matplotlib.patches import Polygon

    c, x0 = theme.color(1), x + w * 9 / 10
    for pts in ([(x0, y), (x + w, y), (x + w, y + h), (x0, y + h)],
                [(x0, y + h), (x + w, y + h), (x + w + dx, y + h + dy), (x0 + dx, y + h + dy)]):
        ax.add_patch(Polygon(pts, closed=True, facecolor=matplotlib.colors.to_rgba(c, 0.55), edgecolor=c, linewidth=1))
    ax.annotate("one token:\nevery layer,\nevery head" if narrow else "one token: every layer\nand every head", (x + w * 0.95, y + h * 0.3), xytext=(x + w + dx + 1.5, y + h * 0.3),
                ha="left", va="center", fontsize=9, color=theme.fg,
                arrowprops=dict(arrowstyle="-", color=theme.muted, linewidth=1))
    lines = [
        "per token and layer and head:",
        f"a key and a value of {format_int(_M.head_dim)} numbers",
        "",
        f"2 x {format_int(_M.num_layers)} x {format_int(_M.num_kv_heads)} x {format_int(_M.head_dim)} "
        f"x {format_int(int(_B)) if _B == int(_B) else _B} bytes",
        f"= {_per_token(_PER_TOKEN)} per token",
        "",
        f"x {format_int(_T)} tokens = {_b(_TOTAL)}",
    ]
    tx, ty = (4, 24) if narrow else (68, 44)
    ax.text(tx, ty, "\n".join(lines), ha="left", va="top", fontsize=9.5, color=theme.fg, linespacing=1.35)
    return fig
