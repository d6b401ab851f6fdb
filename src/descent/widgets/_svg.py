"""Small SVG charts for the widgets: a log-log x-y chart and a grid of squares.

The markup goes into :func:`descent.widgets.views.svg` (descent's own code, so it is trusted; every
piece of text is still escaped). Colours are the widget's CSS variables (``--dw-fg``, ``--dw-c1``
... defined on ``.descent-widget`` for the light and dark schemes), set through ``style``
attributes, which the site's Content-Security-Policy allows; nothing here needs a script.

Numbers on the axes go through :mod:`descent.units`. Deterministic: the same inputs give the same
bytes (coordinates are printed with :func:`descent.units.format_fixed`).

Core rule: standard library only.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from descent.units import format_fixed, format_int, format_number

__all__ = ["Line", "Mark", "VLine", "gemm_layout", "loglog_chart", "square_grid"]

#: Chart size in SVG user units; the figure scales to the page width (``max-width: 100%``).
WIDTH, HEIGHT = 560, 340
#: Plot margins: left, right, top, bottom (room for tick labels and axis titles).
MARGIN = (62, 24, 14, 46)
#: The phone's chart (``narrow=True``): drawn for a column of about 340 px (a 390 px phone less
#: Material's and the widget's padding), so it is shown at its natural size, labels at 11 px,
#: instead of a wide chart shrunk to 6 px labels or scrolled sideways. CSS shows one of the two.
NARROW_WIDTH, NARROW_HEIGHT = 330, 300
NARROW_MARGIN = (50, 12, 14, 46)
#: Text sizes in user units.
FONT, SMALL = 13, 11
#: A chart's key (``key=``): the gap above it, the height of a row, where its swatches start and
#: how wide they are, in user units.
KEY_GAP, KEY_ROW, KEY_LEFT, KEY_SWATCH = 4, 20, 8, 22


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def _n(x: float) -> str:
    return format_fixed(x, 1)


@dataclass(frozen=True)
class Line:
    """A polyline in data coordinates. ``color``: a CSS colour or variable; ``dash``: SVG dasharray."""

    points: Sequence[tuple[float, float]]
    color: str = "var(--dw-fg)"
    width: float = 2.0
    dash: str = ""
    label: str = ""


@dataclass(frozen=True)
class Mark:
    """A labelled point. ``ring``: draw a ring around it (the selected item)."""

    x: float
    y: float
    label: str = ""
    color: str = "var(--dw-c1)"
    radius: float = 5.0
    ring: bool = False
    label_dx: float = 8.0
    label_dy: float = -6.0
    bold: bool = False


@dataclass(frozen=True)
class VLine:
    """A vertical line at data x with a label at its top (or its bottom)."""

    x: float
    label: str = ""
    color: str = "var(--dw-fg-light)"
    dash: str = "4 3"
    bottom: bool = False


@dataclass
class _Axes:
    x0: float
    x1: float
    y0: float
    y1: float
    left: float = MARGIN[0]
    right: float = WIDTH - MARGIN[1]
    top: float = MARGIN[2]
    bottom: float = HEIGHT - MARGIN[3]
    width: float = WIDTH
    height: float = HEIGHT
    clip: list = field(default_factory=list)

    def px(self, x: float) -> float:
        return self.left + (math.log10(x) - math.log10(self.x0)) / (math.log10(self.x1) - math.log10(self.x0)) * (
            self.right - self.left)

    def py(self, y: float) -> float:
        return self.bottom - (math.log10(y) - math.log10(self.y0)) / (math.log10(self.y1) - math.log10(self.y0)) * (
            self.bottom - self.top)


def _text_width(text: str) -> float:
    """Approximate width of ``text`` at :data:`SMALL` size, user units (0.6 em per character)."""
    return 0.6 * SMALL * len(text)


def decade_label(x: float) -> str:
    """A decade tick as short text: "0.01", "1", "100", "10k", "1M" (thousands as k, millions as M)."""
    if x >= 1e6:
        return format_number(x / 1e6, 1, trim=True) + "M"
    if x >= 1e4:
        return format_number(x / 1e3, 1, trim=True) + "k"
    return format_number(x, 1, trim=True)


def _decades(lo: float, hi: float) -> list[float]:
    return [10.0**k for k in range(math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9) + 1)]


def _check_range(name: str, lo: float, hi: float) -> None:
    if not (0 < lo < hi < math.inf):
        raise ValueError(f"chart: {name} range must be 0 < low < high, got {lo!r}, {hi!r}")


def loglog_chart(
    *,
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    x_label: str,
    y_label: str,
    x_tick: Callable[[float], str],
    y_tick: Callable[[float], str],
    lines: Sequence[Line] = (),
    marks: Sequence[Mark] = (),
    vlines: Sequence[VLine] = (),
    uid: str = "chart",
    declutter: bool = False,
    narrow: bool = False,
    key: Sequence[Line | Mark] | None = None,
) -> str:
    """An SVG chart with log10 axes: decade grid and tick labels, lines, vertical lines, marks.

    Data outside the ranges is clipped to the plot area; ``uid`` names the clip path (one per kind
    of chart: charts of one kind share the plot area's geometry). With ``declutter``, a mark's label
    that would overlap a label already drawn is left out (ringed marks are labelled first). With
    ``narrow``, the phone's chart (:data:`NARROW_WIDTH` user units, the same 11-unit labels; give it
    to :func:`descent.widgets.views.svg` as ``narrow=``): tick labels that would touch are thinned,
    and a label that would cross the right edge is drawn to the left of its point. With ``key``, a
    key below the axis title names each of its lines and marks on a row of its own (a swatch, then
    the label), the chart growing :data:`KEY_ROW` units per row, and no label is written inside the
    plot (a phone's plot has no room for a label that crosses no line). Raises ValueError for an
    empty or non-positive range.
    """
    _check_range("x", *x_range)
    _check_range("y", *y_range)
    if narrow:
        width, height, margin, uid = NARROW_WIDTH, NARROW_HEIGHT, NARROW_MARGIN, f"{uid}-narrow"
    else:
        width, height, margin = WIDTH, HEIGHT, MARGIN
    ax = _Axes(x_range[0], x_range[1], y_range[0], y_range[1], left=margin[0], right=width - margin[1],
               top=margin[2], bottom=height - margin[3], width=width, height=height)
    if key is not None:  # the plot keeps its size; the key's rows go below the axis title
        height += KEY_GAP + KEY_ROW * len(key)
    # width/height: the natural size (labels at 11 px); the page shows the narrow chart on a phone.
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
           f'class="descent-svg__{"narrow" if narrow else "wide"}" style="font-family:inherit;font-size:{FONT}px">',
           f'<defs><clipPath id="{_e(uid)}-plot"><rect x="{_n(ax.left)}" y="{_n(ax.top)}" width="{_n(ax.right - ax.left)}" '
           f'height="{_n(ax.bottom - ax.top)}"/></clipPath></defs>']
    grid = "stroke:var(--dw-fg-lightest);stroke-width:1"
    x_decades = _decades(*x_range)
    # Every k-th tick labelled, the smallest k whose labels leave a gap of a character between them.
    x_every = 1
    if len(x_decades) > 1:
        spacing = ax.px(x_decades[1]) - ax.px(x_decades[0])
        widest = max(_text_width(x_tick(x)) for x in x_decades) + _text_width("0")
        x_every = max(1, math.ceil(widest / spacing))
    for i, x in enumerate(x_decades):
        X = _n(ax.px(x))
        out.append(f'<line x1="{X}" y1="{_n(ax.top)}" x2="{X}" y2="{_n(ax.bottom)}" style="{grid}"/>')
        if i % x_every == 0:
            out.append(f'<text x="{X}" y="{_n(ax.bottom + 16)}" text-anchor="middle" '
                       f'style="fill:var(--dw-fg-light);font-size:{SMALL}px">{_e(x_tick(x))}</text>')
    y_decades = _decades(*y_range)
    y_every = 1
    if len(y_decades) > 1:
        y_every = max(1, math.ceil((SMALL + 2) / (ax.py(y_decades[0]) - ax.py(y_decades[1]))))
    for i, y in enumerate(y_decades):
        Y = _n(ax.py(y))
        out.append(f'<line x1="{_n(ax.left)}" y1="{Y}" x2="{_n(ax.right)}" y2="{Y}" style="{grid}"/>')
        if i % y_every == 0:
            out.append(f'<text x="{_n(ax.left - 6)}" y="{_n(ax.py(y) + 4)}" text-anchor="end" '
                       f'style="fill:var(--dw-fg-light);font-size:{SMALL}px">{_e(y_tick(y))}</text>')
    axis = "stroke:var(--dw-fg-light);stroke-width:1"
    out.append(f'<line x1="{_n(ax.left)}" y1="{_n(ax.bottom)}" x2="{_n(ax.right)}" y2="{_n(ax.bottom)}" style="{axis}"/>')
    out.append(f'<line x1="{_n(ax.left)}" y1="{_n(ax.top)}" x2="{_n(ax.left)}" y2="{_n(ax.bottom)}" style="{axis}"/>')
    out.append(f'<text x="{_n((ax.left + ax.right) / 2)}" y="{ax.height - 8}" text-anchor="middle" '
               f'style="fill:var(--dw-fg)">{_e(x_label)}</text>')
    out.append(f'<text transform="translate(14 {_n((ax.top + ax.bottom) / 2)}) rotate(-90)" text-anchor="middle" '
               f'style="fill:var(--dw-fg)">{_e(y_label)}</text>')
    out.append(f'<g clip-path="url(#{_e(uid)}-plot)">')
    for v in vlines:
        if x_range[0] <= v.x <= x_range[1]:
            X = _n(ax.px(v.x))
            out.append(f'<line x1="{X}" y1="{_n(ax.top)}" x2="{X}" y2="{_n(ax.bottom)}" '
                       f'style="stroke:{v.color};stroke-width:1.2;stroke-dasharray:{v.dash}"/>')
    for line in lines:
        pts = " ".join(f"{_n(ax.px(x))},{_n(ax.py(y))}" for x, y in line.points if x > 0 and y > 0)
        dash = f";stroke-dasharray:{line.dash}" if line.dash else ""
        out.append(f'<polyline points="{pts}" style="fill:none;stroke:{line.color};stroke-width:{line.width}{dash}"/>')
    for mk in marks:
        if not (x_range[0] <= mk.x <= x_range[1] and y_range[0] <= mk.y <= y_range[1]):
            continue
        X, Y = ax.px(mk.x), ax.py(mk.y)
        if mk.ring:
            out.append(f'<circle cx="{_n(X)}" cy="{_n(Y)}" r="{_n(mk.radius + 5)}" '
                       f'style="fill:none;stroke:{mk.color};stroke-width:2"/>')
        out.append(f'<circle cx="{_n(X)}" cy="{_n(Y)}" r="{_n(mk.radius)}" style="fill:{mk.color}"/>')
    out.append("</g>")
    if key is not None:
        out += _key_rows(key, ax.height + KEY_GAP)
        out.append("</svg>")
        return "".join(out)
    placed: list[tuple[float, float, float, float]] = []  # label boxes already drawn

    def free(x0: float, y0: float, x1: float, y1: float) -> bool:
        return all(x1 < a or x0 > c or y1 < b or y0 > d for a, b, c, d in placed)

    for v in vlines:
        if v.label and x_range[0] <= v.x <= x_range[1]:
            X = ax.px(v.x)
            anchor = "end" if X > (ax.left + ax.right) / 2 else "start"
            dx = -4 if anchor == "end" else 4
            w = _text_width(v.label)
            if anchor == "end" and X + dx - w < 0 or anchor == "start" and X + dx + w > ax.width:
                anchor, dx = "middle", 0  # too long for either side: centred on the line, kept in the chart
                X = min(max(X, w / 2 + 2), ax.width - w / 2 - 2)
            x0 = X + dx - {"end": w, "middle": w / 2}.get(anchor, 0)
            y = ax.bottom - 6 if v.bottom else ax.top + 12
            placed.append((x0, y - SMALL, x0 + w, y + 2))
            out.append(f'<text x="{_n(X + dx)}" y="{_n(y)}" text-anchor="{anchor}" '
                       f'style="fill:var(--dw-fg-light);font-size:{SMALL}px">{_e(v.label)}</text>')
    # Labels in priority order (ringed marks first); a label that would overlap one already drawn
    # is left out when ``declutter`` (the mark stays, and the widget names it elsewhere).
    for mk in sorted(marks, key=lambda m: not m.ring):
        if not mk.label or not (x_range[0] <= mk.x <= x_range[1] and y_range[0] <= mk.y <= y_range[1]):
            continue
        X, Y = ax.px(mk.x), ax.py(mk.y)
        dx = mk.label_dx
        w = _text_width(mk.label)
        if dx >= 0 and X + dx + w > ax.width:
            dx = -dx  # it would cross the right edge: to the left of its point
        elif dx < 0 and X + dx - w < 0:
            dx = -dx  # the left edge: to the right
        anchor = "end" if dx < 0 else "start"
        x0 = X + dx - (w if anchor == "end" else 0)
        box = (x0, Y + mk.label_dy - SMALL, x0 + w, Y + mk.label_dy + 2)
        if declutter and not free(*box):
            continue
        placed.append(box)
        weight = ";font-weight:700" if mk.bold else ""
        out.append(f'<text x="{_n(X + dx)}" y="{_n(Y + mk.label_dy)}" text-anchor="{anchor}" '
                   f'style="fill:var(--dw-fg);font-size:{SMALL}px{weight}">{_e(mk.label)}</text>')
    legend = [ln for ln in lines if ln.label]
    legend_x = ax.right - 8 - max((24 + _text_width(ln.label) for ln in legend), default=0)
    for i, ln in enumerate(legend):
        y = ax.bottom - 10 - 16 * (len(legend) - 1 - i)
        x = _n(legend_x)
        dash = f";stroke-dasharray:{ln.dash}" if ln.dash else ""
        out.append(f'<line x1="{x}" y1="{_n(y - 4)}" x2="{_n(legend_x + 18)}" y2="{_n(y - 4)}" '
                   f'style="stroke:{ln.color};stroke-width:{ln.width}{dash}"/>')
        out.append(f'<text x="{_n(legend_x + 24)}" y="{_n(y)}" style="fill:var(--dw-fg);font-size:{SMALL}px">{_e(ln.label)}</text>')
    out.append("</svg>")
    return "".join(out)


def _key_rows(key: Sequence[Line | Mark], top: float) -> list[str]:
    """A chart's key: one row per entry from ``top`` down, a swatch (the line's stroke, or the
    mark's dot and ring) at the left, then its label."""
    out = []
    for i, entry in enumerate(key):
        y = top + KEY_ROW * i + KEY_ROW / 2  # the row's middle
        if isinstance(entry, Line):
            dash = f";stroke-dasharray:{entry.dash}" if entry.dash else ""
            out.append(f'<line x1="{_n(KEY_LEFT)}" y1="{_n(y)}" x2="{_n(KEY_LEFT + KEY_SWATCH)}" y2="{_n(y)}" '
                       f'style="stroke:{entry.color};stroke-width:{entry.width}{dash}"/>')
        else:
            cx = KEY_LEFT + KEY_SWATCH / 2
            radius = min(entry.radius, KEY_ROW / 2 - 6) if entry.ring else min(entry.radius, KEY_ROW / 2 - 1)
            if entry.ring:
                out.append(f'<circle cx="{_n(cx)}" cy="{_n(y)}" r="{_n(radius + 4)}" '
                           f'style="fill:none;stroke:{entry.color};stroke-width:2"/>')
            out.append(f'<circle cx="{_n(cx)}" cy="{_n(y)}" r="{_n(radius)}" style="fill:{entry.color}"/>')
        weight = ";font-weight:700" if getattr(entry, "bold", False) else ""
        out.append(f'<text x="{_n(KEY_LEFT + KEY_SWATCH + 8)}" y="{_n(y + 4)}" '
                   f'style="fill:var(--dw-fg);font-size:{SMALL}px{weight}">{_e(entry.label)}</text>')
    return out


def square_grid(count: int, columns: int, *, dots: int = 0, size: float = 14.0, gap: float = 3.0,
                color: str = "var(--dw-c1)") -> str:
    """``count`` small squares in rows of ``columns`` (SMs), each with ``dots`` dots (tensor cores).

    Two ``<path>`` elements draw them all, one subpath per square (``data-shapes="squares"``) and
    one per dot (``data-shapes="dots"``): an element per shape was 660 elements for an H200 and
    1,520 for an MI300X, which the browser parsed, styled and laid out again at every recompute
    (half of the widget's 60-100 ms in a Chromium trace on a two-core machine).

    Raises ValueError for a count or column count below 1, or more than 10,000 squares.
    """
    if not (1 <= count <= 10_000) or columns < 1:
        raise ValueError(f"square_grid: count must be 1 to 10,000 and columns >= 1, got {count!r}, {columns!r}")
    rows = -(-count // columns)
    w = columns * (size + gap) + gap
    h = rows * (size + gap) + gap
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_n(w)} {_n(h)}">']
    def n(x: float) -> str:  # a path's number, short: "5" for 5.0 (a path holds thousands)
        return _n(x).removesuffix(".0")

    corner = 2.0
    # Each coordinate is printed once per column or row, not once per square (a B200's 148 SMs and
    # 592 tensor cores were 2,100 calls of format_fixed, most of the widget's time in Pyodide).
    xs = [gap + c * (size + gap) for c in range(min(count, columns))]
    ys = [gap + r * (size + gap) for r in range(rows)]
    # A square with rounded corners, from its top edge's left end (x + corner, y), in relative moves.
    col_x, row_y = [n(x + corner) for x in xs], [n(y) for y in ys]
    e, c2 = n(size - 2 * corner), n(corner)
    square = (f"h{e}a{c2} {c2} 0 0 1 {c2} {c2}v{e}a{c2} {c2} 0 0 1-{c2} {c2}"
              f"h-{e}a{c2} {c2} 0 0 1-{c2}-{c2}v-{e}a{c2} {c2} 0 0 1 {c2}-{c2}z")
    # The dots' centres: a share of the square across (0.3, 0.7, 0.3, 0.7, ...) and down (0.3, 0.3, 0.7, ...);
    # each dot two half-circle arcs from its left end.
    radius = size * 0.12
    r_, d_ = n(radius), n(2 * radius)
    dot_x = {f: [n(x + size * f - radius) for x in xs] for f in (0.3, 0.7)}
    dot_y = {f: [n(y + size * f) for y in ys] for f in (0.3, 0.7)}
    across = [0.3 if d % 2 == 0 else 0.7 for d in range(dots)]
    down = [0.3 if d < 2 else 0.7 for d in range(dots)]
    dot = f"a{r_} {r_} 0 1 0 {d_} 0a{r_} {r_} 0 1 0-{d_} 0z"
    squares, circles = [], []
    for i in range(count):
        r, c = divmod(i, columns)
        squares.append(f"M{col_x[c]} {row_y[r]}{square}")
        for fx, fy in zip(across, down, strict=True):
            circles.append(f"M{dot_x[fx][c]} {dot_y[fy][r]}{dot}")
    out.append(f'<path data-shapes="squares" d="{"".join(squares)}" style="fill:{color};opacity:0.35"/>')
    if circles:
        out.append(f'<path data-shapes="dots" d="{"".join(circles)}" style="fill:{color}"/>')
    out.append("</svg>")
    return "".join(out)


#: Drawn size of :func:`gemm_layout` against its user units (it shrinks on narrow screens).
LAYOUT_SCALE = 1.3


def gemm_layout(m: int, n: int, k: int, tile: int, row: int, col: int, step: int) -> str:
    """The product C = A B drawn as three blocks: A (m x k) on the left, B (k x n) on top, C below it.

    The row strip ``row`` of A and the column strip ``col`` of B are highlighted, as is C's tile
    (row, col); tiles before ``step`` (row-major) are marked done. K is drawn at the length of M,
    whatever its value (the label gives it). Raises ValueError for sizes below 1.
    """
    if min(m, n, k, tile) < 1:
        raise ValueError("gemm_layout: sizes must be >= 1")
    side, gap, pad = 120.0, 14.0, 22.0
    sm, sn = side, side * n / m
    sk = side
    x0, y0 = pad, pad
    cx, cy = x0 + sk + gap, y0 + sk + gap
    tm, tn = sm * tile / m, sn * tile / n
    rows, cols = -(-m // tile), -(-n // tile)
    w, h = cx + sn + pad, cy + sm + pad
    box = "fill:none;stroke:var(--dw-fg-light);stroke-width:1"
    hi = "fill:var(--dw-c1);opacity:0.85"
    done = "fill:var(--dw-c2);opacity:0.7"
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_n(w)} {_n(h)}" width="{_n(w * LAYOUT_SCALE)}" '
           f'height="{_n(h * LAYOUT_SCALE)}" style="font-size:{SMALL - 1}px">']
    # A: rows x k, the current row strip highlighted.
    out.append(f'<rect x="{_n(x0)}" y="{_n(cy + row * tm)}" width="{_n(sk)}" height="{_n(tm)}" style="{hi}"/>')
    out.append(f'<rect x="{_n(x0)}" y="{_n(cy)}" width="{_n(sk)}" height="{_n(sm)}" style="{box}"/>')
    out.append(f'<text x="{_n(x0 + sk / 2)}" y="{_n(cy + sm + 14)}" text-anchor="middle" '
               f'style="fill:var(--dw-fg)">A ({_e(format_int(m))} x {_e(format_int(k))})</text>')
    # B: k x cols, the current column strip highlighted.
    out.append(f'<rect x="{_n(cx + col * tn)}" y="{_n(y0)}" width="{_n(tn)}" height="{_n(sk)}" style="{hi}"/>')
    out.append(f'<rect x="{_n(cx)}" y="{_n(y0)}" width="{_n(sn)}" height="{_n(sk)}" style="{box}"/>')
    out.append(f'<text x="{_n(cx + sn / 2)}" y="{_n(y0 - 6)}" text-anchor="middle" '
               f'style="fill:var(--dw-fg)">B ({_e(format_int(k))} x {_e(format_int(n))})</text>')
    # C: the tiles, done and current.
    for i in range(rows * cols):
        r, c = divmod(i, cols)
        if i <= step:
            style = hi if i == step else done
            out.append(f'<rect x="{_n(cx + c * tn)}" y="{_n(cy + r * tm)}" width="{_n(tn)}" height="{_n(tm)}" '
                       f'style="{style}"/>')
    for r in range(1, rows):
        out.append(f'<line x1="{_n(cx)}" y1="{_n(cy + r * tm)}" x2="{_n(cx + sn)}" y2="{_n(cy + r * tm)}" '
                   f'style="stroke:var(--dw-fg-lighter);stroke-width:0.5"/>')
    for c in range(1, cols):
        out.append(f'<line x1="{_n(cx + c * tn)}" y1="{_n(cy)}" x2="{_n(cx + c * tn)}" y2="{_n(cy + sm)}" '
                   f'style="stroke:var(--dw-fg-lighter);stroke-width:0.5"/>')
    out.append(f'<rect x="{_n(cx)}" y="{_n(cy)}" width="{_n(sn)}" height="{_n(sm)}" style="{box}"/>')
    out.append(f'<text x="{_n(cx + sn / 2)}" y="{_n(cy + sm + 14)}" text-anchor="middle" '
               f'style="fill:var(--dw-fg)">C ({_e(format_int(m))} x {_e(format_int(n))})</text>')
    out.append("</svg>")
    return "".join(out)
