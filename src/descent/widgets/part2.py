"""Part 2 widgets ("Weights as numbers"), all on real SmolLM2 weights or exact bit arithmetic.

* ``weight_zoom``: model -> layer -> matrix -> one Q4_1 block -> one weight, from the shipped GGUF
  (:mod:`descent.weights_sample`); the block's 32 codes are a clickable grid.
* ``float_bits``: a number or a code in FP32, FP16, BF16, FP8 E4M3/E5M2, FP4 E2M1 or E8M0
  (:mod:`descent.floats`): clickable bits, the value, the nearest representable value and the
  rounding error, and the format's table.
* ``quantize_weights``: one real row of 1,536 weights rounded to 8, 4, 3 or 2-bit integers with one
  scale, symmetric or with a zero point (:func:`descent.quant.int_quantize`): histogram, RMSE, SQNR, size.
* ``block_scaling``: 256 real weights plus an outlier the reader sets, as FP4 with one scale per
  tensor, per MXFP4 block of 32 and per NVFP4 block of 16 (:mod:`descent.quant`): the error of every
  group of 16 as a grid.
* ``gguf_name``: a GGUF quantization name read piece by piece, its block layout and bits per weight
  (:mod:`descent.gguf_types`), and the shipped file's own types.

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

import math

from descent import floats, gguf_types, numerics, quant
from descent import params as P
from descent import weights_sample as ws
from descent.units import format_bytes, format_count, format_int, format_number, format_percent, plural
from descent.widgets import FieldError, Input, widget
from descent.widgets import views as v

__all__ = [
    "BLOCK_SAMPLE",
    "PRESET_NAMES",
    "block_scaling",
    "block_scaling_compute",
    "float_bits",
    "gguf_name",
    "histogram_svg",
    "quantize_weights",
    "weight_zoom",
]

# ---------------------------------------------------------------------------------------------
# weight_zoom
# ---------------------------------------------------------------------------------------------

#: Weights in one Q4_1 block (ggml-common.h QK4_1).
Q4_1_BLOCK = 32
#: Columns of the block's code grid.
GRID_COLUMNS = 8

ZOOM_LAYER = P.declare(P.Param(
    "layer", "Layer", "int", 0, key="zoom_layer", min=0, max=29,
    help="Which of SmolLM2's 30 layers (0 is nearest the input).",
))
ZOOM_WEIGHT = P.declare(P.Param(
    "weight", "Weight in the block", "int", 4, key="zoom_weight", min=0, max=Q4_1_BLOCK - 1,
    help="0 to 31, or click a cell of the block below.",
))


def _shape_text(shape: list[int]) -> str:
    return " x ".join(format_int(n) for n in shape)


@widget(
    "weight_zoom",
    title="Zoom into a weight",
    description="SmolLM2-135M's real file, opened level by level: the model, one layer, one of its "
    "matrices, the first block of 32 weights in that matrix's first row, and one weight.",
    inputs=[Input(ZOOM_LAYER, "range"), Input(ws.MATRIX, "select"), Input(ZOOM_WEIGHT, "range")],
    tries=[
        ('Pick another layer.', 'The scale of the block changes: each block of 32 weights carries its own.',
         {"layer": 10}),
        ('Step through the weights of the block.', "Each is a 4-bit code times the block's scale, plus its minimum.",
         {"weight": 5}),
    ],
)
def weight_zoom(layer: int, matrix: str, weight: int) -> list[dict]:
    """Views: the path model -> layer -> matrix -> block -> weight as a definition list, the
    block's 32 codes as a clickable 4 x 8 grid, and the chosen weight's code and value.

    Args:
        layer: 0..29. matrix: one of :data:`descent.weights_sample.MATRIX_LABELS`. weight: 0..31.

    Raises:
        FieldError: a layer the file does not have (field ``layer``).
    """
    d = ws.data()
    if layer >= d["layers"]:
        raise FieldError("layer", f"Layer must be 0 to {d['layers'] - 1}, got {layer}")
    scale, minimum, codes = ws.block(layer, matrix)
    t = ws.layer_tensor(matrix)
    rows, cols = t["shape"]
    q = codes[weight]
    value = scale * q + minimum
    total = d["total"]
    block_bytes = gguf_types.block_type("Q4_1").block_bytes
    items = [
        ("Model", f"{d['file']}: {format_int(d['layers'])} layers, {format_int(total['tensors'])} tensors, "
                  f"{format_count(total['weights'])} weights, {format_bytes(total['bytes'], 'MB')} of tensor data"),
        ("Layer", f"blk.{layer}: 7 weight matrices and 2 normalisation vectors"),
        ("Matrix", f"blk.{layer}.{matrix}.weight ({ws.MATRIX_LABELS[matrix]}): {_shape_text(t['shape'])} "
                   f"= {format_int(t['weights'])} weights, stored as {t['type']} in {format_bytes(t['bytes'], 'KB')}"),
        ("Block", f"row 0, columns 0 to 31: block 1 of {format_int(rows * cols // Q4_1_BLOCK)}; {block_bytes} bytes: "
                  f"scale d = {floats.value_text(scale)}, minimum m = {floats.value_text(minimum)}, 32 four-bit codes"),
        ("Weight", f"column {weight}: code {q}, value d x {q} + m = {format_number(value, 6, trim=True)}"),
    ]
    out: list[dict] = [v.kv(items, caption="From the whole file down to one number")]
    cells = []
    for r in range(Q4_1_BLOCK // GRID_COLUMNS):
        row = []
        for c in range(GRID_COLUMNS):
            i = r * GRID_COLUMNS + c
            val = scale * codes[i] + minimum
            row.append(v.cell("is-selected" if i == weight else "is-code", str(codes[i]),
                              f"column {i}: code {codes[i]}, weight {format_number(val, 4, trim=True)}",
                              set={"weight": i}))
        cells.append(row)
    out.append(v.cell_grid(
        cells, caption="The block's 32 codes (0 to 15); click one",
        row_labels=[f"{r * GRID_COLUMNS}-{r * GRID_COLUMNS + GRID_COLUMNS - 1}" for r in range(len(cells))],
        legend=[("is-selected", "the weight shown"), ("is-code", "another weight of the block")],
    ))
    out.append(v.stat("Its code", str(q), note="4 bits: one of 16 levels"))
    out.append(v.stat("Its value", format_number(value, 4), note=f"d x q + m, with d = {format_number(scale, 4)} "
                      f"and m = {format_number(minimum, 4)}"))
    out.append(v.stat("Bits per weight", format_number(8 * block_bytes / Q4_1_BLOCK, 2, trim=True),
                      note=f"{block_bytes} bytes for 32 weights: the codes plus d and m"))
    return out


# ---------------------------------------------------------------------------------------------
# float_bits
# ---------------------------------------------------------------------------------------------

_KIND_WORDS = {"zero": "zero", "subnormal": "subnormal (below the smallest normal number)",
               "normal": "normal", "infinity": "infinity", "nan": "not a number"}


def _hex(code: int) -> str:
    """A code in upper-case hexadecimal, without the 0x."""
    return hex(code)[2:].upper()


def _set_value(f: floats.FloatFormat, code: int) -> str:
    """What a click on a bit writes into the value box: the exact decimal, or the hex code for
    infinities and not-a-number (which have no decimal)."""
    x = f.decode(code)
    if math.isfinite(x):
        return floats.value_text(x)
    return "0x" + _hex(code)


def _reading(f: floats.FloatFormat, code: int) -> str:
    """How the bits read: ``(-1)^0 x 1.25 x 2^-3`` (or the special case in words)."""
    s, e, m = f.split(code)
    k = f.kind(code)
    if k == "infinity":
        return f"sign bit {s}, exponent bits all ones: {'minus ' if s else ''}infinity"
    if k == "nan":
        return f"exponent bits all ones: {_KIND_WORDS[k]}"
    if f.special == "e8m0":
        return f"2^({e} - {f.bias}) = 2^{e - f.bias}"
    frac = m / (1 << f.mantissa_bits)
    if e == 0:
        return f"(-1)^{s} x {floats.value_text(frac)} x 2^{1 - f.bias} (subnormal: no leading 1)"
    return f"(-1)^{s} x {floats.value_text(1 + frac)} x 2^({e} - {f.bias})"


def _fmt_prop(x: float | None) -> str:
    """A format's property: whole numbers in full (FP16's largest value is 65,504, not "65,500")."""
    if x is None:
        return "none"
    if x == int(x) and abs(x) < 1e15:
        return format_int(int(x))
    return format_number(x, 4)


def _flip_top_exponent(format: str, value: str) -> str:
    """What a click on the highest exponent bit of ``value`` rounded to ``format`` writes in the
    value box (the float widget's second hint)."""
    f = floats.get(format)
    return _set_value(f, f.round(float(value)).code ^ (1 << (f.bits - 1 - int(f.signed))))


@widget(
    "float_bits",
    title="Bits of a floating-point number",
    description="Pick a format and type a number: it is rounded to the nearest value the format "
    "can hold. Click any bit to flip it.",
    inputs=[Input(floats.FLOAT_FORMAT, "segmented"), Input(floats.FLOAT_VALUE, "text")],
    tries=[
        ('Type 0.1 in BF16, then in FP32.', "Neither holds it exactly; BF16's error is far larger, with fewer mantissa bits.",
         {"format": "fp32"}),
        ('Click the highest exponent bit.', 'The value jumps by a huge factor: the exponent sets the scale, the mantissa the digits.',
         {"value": _flip_top_exponent(floats.FLOAT_FORMAT.default, floats.FLOAT_VALUE.default)}),
        ('Pick FP8 E4M3 and type a number in the thousands.', 'Past the format\'s largest value no code holds the number, and E4M3 has no infinity: it becomes not a number.',
         {"format": "fp8_e4m3", "value": "5000"}),
    ],
)
def float_bits(format: str, value: str) -> list[dict]:
    """Views: the code's bits (clickable), the stored value, the error against what was typed,
    how the bits read, and the format's table.

    Args:
        format: a :data:`descent.floats.FORMATS` name. value: a number or a code (0b..., 0x...),
            as :func:`descent.floats.parse_value` reads it.

    Raises:
        FieldError: unreadable value, a code wider than the format, or a value the format cannot
            hold at all (a negative number or zero in E8M0; not-a-number in FP4) (field ``value``).
    """
    f = floats.get(format)
    try:
        kind, x = floats.parse_value(f, value)
        if kind == "code":
            code = int(x)
            stored = f.decode(code)
            typed = None
            r = None
        else:
            r = f.round(float(x))
            code, stored, typed = r.code, r.value, float(x)
    except ValueError as exc:
        raise FieldError("value", f"{floats.FLOAT_VALUE.label}: {exc}") from None
    out: list[dict] = []
    n_sign = int(f.signed)
    cells = []
    for i, bit in enumerate(f.bit_string(code)):
        pos = f.bits - 1 - i
        part = "sign" if i < n_sign else ("exponent" if i < n_sign + f.exponent_bits else "mantissa")
        cells.append(v.cell(f"is-{part}", bit, f"bit {pos} ({part}): {bit}; click to flip",
                            set={"value": _set_value(f, code ^ (1 << pos))}))
    legend = [("is-sign", "sign")] if f.signed else []
    legend += [("is-exponent", f"exponent ({f.exponent_bits} bits, bias {f.bias})")]
    if f.mantissa_bits:
        legend += [("is-mantissa", f"mantissa ({f.mantissa_bits} bits)")]
    out.append(v.cell_grid([cells], caption=f"{f.label}: {f.bits} bits, code 0x{_hex(code)}",
                           legend=legend))
    k = f.kind(code)
    out.append(v.stat("Stored value", floats.value_text(stored), note=_KIND_WORDS[k]))
    if typed is not None and r is not None:
        if r.overflow:
            neg = typed < 0
            what = {"ieee": f"rounds to {'minus ' if neg else ''}infinity",
                    "fn": "has no infinity and becomes not a number",
                    "none": f"is clipped to the {'most negative' if neg else 'largest'} value",
                    "e8m0": "becomes not a number"}[f.special]
            limit = (f"most negative value -{_fmt_prop(f.max)}" if neg and f.signed
                     else f"largest value {_fmt_prop(f.max)}")
            out.append(v.stat("Rounding error", "overflow",
                              note=f"{floats.value_text(typed)} is beyond {f.label}'s {limit}: it {what}"))
        elif math.isfinite(typed) and math.isfinite(stored):
            err = stored - typed
            rel = abs(err) / abs(typed) if typed != 0 else 0.0
            out.append(v.stat("Rounding error", format_number(err, 3) if err else "0",
                              note=("exact: this number is one of the format's values" if err == 0 else
                                    f"{format_percent(rel, 2)} of {format_number(typed, 6, trim=True)}")))
    out.append(v.note(f"Read as: {_reading(f, code)} = {floats.value_text(stored)}"))
    t = f.table()
    rows = [
        ["largest value", _fmt_prop(t.max)],
        ["smallest normal value", _fmt_prop(t.min_normal)],
        ["smallest subnormal value", _fmt_prop(t.min_subnormal)],
        ["gap after 1 (epsilon)", _fmt_prop(t.epsilon) if t.epsilon is not None else "1 (next value is 2)"],
        ["range, largest / smallest", f"{format_number(t.decades, 3)} decades"],
        ["codes that are numbers", f"{format_int(t.finite_codes)} of {format_int(f.codes)}"],
        ["infinity", ", ".join(t.infinity) or "none"],
        ["not a number", (f"{format_int(t.nan_count)} code{'' if t.nan_count == 1 else 's'}: " if t.nan_count else "none")
         + (", ".join(t.nan) if len(t.nan) <= 4 else f"e.g. {t.nan[0]}")],
    ]
    out.append(v.table(["property", "value"], rows, caption=f"{f.label}, computed from its bit layout"))
    return out


# ---------------------------------------------------------------------------------------------
# quantize_weights
# ---------------------------------------------------------------------------------------------

QUANT_BITS = P.declare(P.Param(
    "bits", "Bits per weight", "choice", 4, key="quant_bits", choices=[(8, "8"), (4, "4"), (3, "3"), (2, "2")],
    help="Integer width each weight is rounded to.",
))
ZERO_POINT = P.declare(P.Param(
    "zero_point", "Zero point (fit the grid to the range, not around zero)", "bool", False,
    help="Off: symmetric around zero. On: the grid spans min to max.",
))

#: Histogram bins of the widget's picture.
HIST_BINS = 60
_W, _H, _PAD = 560, 150, 18


def histogram_svg(original: list[float], rounded: list[float], bins: int = HIST_BINS) -> str:
    """A small two-layer histogram: the original weights (light bars) and the rounded ones (dark
    bars, which pile up on the grid's levels). Fixed coordinates, no script."""
    lo = min(min(original), min(rounded))
    hi = max(max(original), max(rounded))
    if hi <= lo:
        hi = lo + 1.0
    a = quant.histogram(original, bins, lo, hi)
    b = quant.histogram(rounded, bins, lo, hi)
    top = max(max(a), max(b), 1)
    bw = (_W - 2 * _PAD) / bins
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H + 20}" width="{_W}" height="{_H + 20}" '
             'class="descent-hist">']
    for cls, counts, inset in (("descent-hist__orig", a, 0.0), ("descent-hist__quant", b, bw * 0.25)):
        for i, c in enumerate(counts):
            if c:
                h = (_H - _PAD) * c / top
                x = _PAD + i * bw + inset
                parts.append(f'<rect class="{cls}" x="{round(x, 2)}" y="{round(_H - h, 2)}" '
                             f'width="{round(bw - 2 * inset, 2)}" height="{round(h, 2)}"/>')
    parts.append(f'<line class="descent-hist__axis" x1="{_PAD}" y1="{_H}" x2="{_W - _PAD}" y2="{_H}"/>')
    for x, label in ((lo, lo), (hi, hi), (0.0, 0.0)):
        if lo <= x <= hi:
            px = _PAD + (x - lo) / (hi - lo) * (_W - 2 * _PAD)
            parts.append(f'<text class="descent-hist__label" x="{round(px, 2)}" y="{_H + 15}" '
                         f'text-anchor="middle">{format_number(label, 2, trim=True)}</text>')
    parts.append("</svg>")
    return "".join(parts)


@widget(
    "quantize_weights",
    title="Round real weights to fewer bits",
    description="One real row of SmolLM2 (1,536 weights of layer 15's feed-forward down matrix) "
    "rounded to integers with one scale for the whole row.",
    inputs=[Input(QUANT_BITS, "segmented"), Input(ZERO_POINT, "toggle")],
    tries=[
        ('Go from 8 bits to 4, then to 2.', 'The rounding error grows fast: each bit fewer halves the number of levels.',
         {"bits": 2}),
        ('Turn on the zero point.', 'A row that is not centred on zero uses its levels better.', {"zero_point": True}),
    ],
)
def quantize_weights(bits: int, zero_point: bool) -> list[dict]:
    """Views: a histogram of the row before and after rounding, and the error and size.

    Args:
        bits: 8, 4, 3 or 2. zero_point: grid over [min, max] (True) or symmetric (False).
    """
    w = ws.sample_values()
    q = quant.int_quantize(w, bits, symmetric=not zero_point)
    e = quant.error_stats(w, q.values)
    used = len(set(q.codes))
    scheme = "with a zero point" if zero_point else "symmetric"
    out: list[dict] = [v.svg(histogram_svg(w, q.values),
                             f"Histogram of {format_int(len(w))} real weights (light) and the same weights rounded "
                             f"to {bits}-bit integers, {scheme} (dark): the rounded ones sit on {used} levels.")]
    out.append(v.stat("RMSE", format_number(e.rmse, 3),
                      note=f"root-mean-square error; the weights' own RMS is "
                           f"{format_number(math.sqrt(math.fsum(x * x for x in w) / len(w)), 3)}"))
    out.append(v.stat("SQNR", "no error" if e.sqnr_db is None else format_number(e.sqnr_db, 3), "dB",
                      note="signal power over error power; about 6 dB per bit on an even spread"))
    out.append(v.stat("Levels used", f"{used} of {q.levels}",
                      note=f"step s = {format_number(q.scale, 3)}; largest error {format_number(e.max_abs, 3)} "
                           f"(at most s/2 = {format_number(q.scale / 2, 3)})"))
    size = len(w) * bits / 8 + (8 if zero_point else 4)
    out.append(v.stat("Size of the row", format_bytes(size, "B", 4, trim=True, words=True),
                      note=f"codes plus one FP32 scale{' and zero point' if zero_point else ''}; in BF16 "
                           f"{format_bytes(len(w) * 2, 'B', 4, trim=True, words=True)}"))
    return out


# ---------------------------------------------------------------------------------------------
# block_scaling
# ---------------------------------------------------------------------------------------------

#: Real weights the block-scaling widget starts from (the first 256 of the shipped row: 8 MX blocks).
BLOCK_SAMPLE = 256
#: Columns of the error grid: groups of NVFP4's block size, 16 weights each.
GROUP = numerics.NVFP4_BLOCK

OUTLIER = P.declare(P.Param(
    "outlier", "Outlier size", "float", 8.0, key="block_outlier", min=1.0, max=100.0, step=0.5,
    unit="x the largest weight",
    help="One weight is set to this many times the largest of the others (1: no outlier).",
))
OUTLIER_AT = P.declare(P.Param(
    "position", "Outlier position", "int", 100, key="block_outlier_position", min=0, max=BLOCK_SAMPLE - 1,
    help="Which of the 256 weights becomes the outlier (0 to 255).",
))

#: Error levels of the grid: a group's RMSE as a share of the weights' RMS, upper bounds.
ERROR_LEVELS = (0.05, 0.1, 0.2, 0.4)


def block_scaling_compute(outlier: float, position: int) -> dict:
    """The numbers behind ``block_scaling``: the 256 weights with the outlier in place and, for each
    scheme (``"tensor"``, ``"mxfp4"``, ``"nvfp4"``), the dequantized values, the RMSE over all, and
    the RMSE of every group of 16; ``rms`` is the real weights' RMS (before the outlier)."""
    w = ws.sample_values(BLOCK_SAMPLE)
    amax = max(abs(x) for x in w)
    rms = math.sqrt(math.fsum(x * x for x in w) / len(w))  # of the real weights, before the outlier
    w[position] = math.copysign(outlier * amax, w[position] or 1.0)
    out = {"weights": w, "rms": rms}
    for name, fn in (("tensor", quant.fp4_tensor), ("mxfp4", quant.mxfp4), ("nvfp4", quant.nvfp4)):
        bq = fn(w)
        groups = [quant.error_stats(w[i:i + GROUP], bq.values[i:i + GROUP]).rmse for i in range(0, len(w), GROUP)]
        out[name] = {"values": bq.values, "rmse": quant.error_stats(w, bq.values).rmse, "groups": groups,
                     "clipped": bq.clipped}
    return out


def _level(err: float, rms: float) -> int:
    r = err / rms if rms > 0 else 0.0
    for i, top in enumerate(ERROR_LEVELS):
        if r < top:
            return i
    return len(ERROR_LEVELS)


@widget(
    "block_scaling",
    title="One scale, or one per block",
    description="256 real SmolLM2 weights stored as 4-bit floats (FP4 E2M1) three ways: one scale for "
    "all of them, one per block of 32 (MXFP4), one per block of 16 (NVFP4). Make one weight an outlier "
    "and watch where the error goes.",
    inputs=[Input(OUTLIER, "range", log=True), Input(OUTLIER_AT, "range")],
    tries=[
        ('Raise the outlier.', "With one scale for all, every weight loses precision; with a scale per block, only the outlier's block does.",
         {"outlier": 32.0}),
        ('Move the outlier to another position.', 'The damage follows it: only its own block of 32 (MXFP4) or 16 (NVFP4) suffers.',
         {"position": 200}),
    ],
)
def block_scaling(outlier: float, position: int) -> list[dict]:
    """Views: the error of every group of 16 weights under each scheme as a coloured grid, the
    overall RMSE of each, and what the block scales cost in bits per weight.

    Args:
        outlier: 1 to 100 (times the largest of the real weights). position: 0..255.
    """
    r = block_scaling_compute(outlier, position)
    rms = r["rms"]
    labels = {"tensor": "one FP32 scale for all", "mxfp4": "MXFP4: E8M0 scale per 32",
              "nvfp4": "NVFP4: E4M3 scale per 16"}
    words = ["under 5%", "5-10%", "10-20%", "20-40%", "40% or more"]
    grid = []
    for name in ("tensor", "mxfp4", "nvfp4"):
        row = []
        for g, err in enumerate(r[name]["groups"]):
            lv = _level(err, rms)
            mark = "*" if g == position // GROUP else ""
            row.append(v.cell(f"is-err{lv}", mark,
                              f"{labels[name]}, weights {g * GROUP} to {g * GROUP + GROUP - 1}"
                              f"{' (holds the outlier)' if mark else ''}: RMSE {format_number(err, 2)}, "
                              f"{words[lv]} of the weights' RMS"))
        grid.append(row)
    out: list[dict] = [v.cell_grid(
        grid, caption="Error of each group of 16 weights (* holds the outlier)",
        row_labels=["one scale", "MXFP4 (32)", "NVFP4 (16)"],
        legend=[(f"is-err{i}", f"error {w} of the weights' RMS") for i, w in enumerate(words)],
    )]
    t, mx, nv = r["tensor"]["rmse"], r["mxfp4"]["rmse"], r["nvfp4"]["rmse"]
    out.append(v.stat("RMSE, one scale", format_number(t, 3), note="FP4 with one FP32 scale: 4 bits per weight "
                      "plus 32 bits for the whole tensor"))
    out.append(v.stat("RMSE, MXFP4", format_number(mx, 3),
                      note=f"{format_number(numerics.PRECISIONS['mxfp4'].bits_per_weight, 3, trim=True)} bits per "
                           f"weight: 4 + 8/{numerics.MX_BLOCK}"))
    out.append(v.stat("RMSE, NVFP4", format_number(nv, 3),
                      note=f"{format_number(numerics.PRECISIONS['nvfp4'].bits_per_weight, 3, trim=True)} bits per "
                           f"weight: 4 + 8/{numerics.NVFP4_BLOCK}, plus one FP32 scale per tensor"))
    def effect(x: float) -> str:
        if x <= 0 or t / x >= 1:
            return f"cuts the error {format_number(t / x, 2)} times" if x > 0 else "removes the error"
        return f"makes the error {format_number(x / t, 2)} times larger"

    out.append(v.note(f"Against one scale for all, MXFP4 {effect(mx)} and NVFP4 {effect(nv)}: a block scale "
                      f"lets the outlier coarsen only its own block's grid."))
    cm, cn = r["mxfp4"]["clipped"], r["nvfp4"]["clipped"]
    if cm or cn:
        out.append(v.note(
            f"Clipped beyond rounding: {plural(cm, 'weight')} in MXFP4, {plural(cn, 'weight')} in NVFP4. MXFP4's "
            f"scale is a power of two and FP4's largest value, 6, is not, so a block whose largest weight lies "
            f"between 7 and 8 times its scale is cut to 6 times it; with a big outlier that cut can outweigh "
            f"everything else. NVFP4's E4M3 scale lands within a few percent of the block's largest weight.",
            "warn" if cm else "info"))
    return out


# ---------------------------------------------------------------------------------------------
# gguf_name
# ---------------------------------------------------------------------------------------------

#: Names offered as one-click presets.
PRESET_NAMES = ("Q8_0", "Q4_0", "Q4_1", "Q5_K_M", "Q4_K_M", "Q3_K_S", "Q2_K", "IQ4_XS", "MXFP4")

GGUF_NAME = P.declare(P.Param(
    "name", "Quantization name or file name", "text", "Q4_K_M", key="gguf_name", max_length=120,
    help="For example Q4_K_M, iq4_xs or Llama-3.1-8B-Instruct-Q5_K_S.gguf.",
))


@widget(
    "gguf_name",
    title="Read a GGUF name",
    description="Type the quantization part of a model file's name, or pick one. The block layout "
    "and the bits per weight come from llama.cpp's own block definitions.",
    inputs=[Input(GGUF_NAME, "text")],
    tries=[
        ('Pick Q4_K_M, then Q8_0.', 'The bits per weight nearly double, and so does the file.', {"name": "Q8_0"}),
        ('Type a name with _S, _M or _L.', 'The letter picks a mix: more of the sensitive matrices kept at higher precision.',
         {"name": "Q4_K_S"}),
    ],
)
def gguf_name(name: str) -> list[dict]:
    """Views: presets (clickable), the name piece by piece, the base block's fields, its bits per
    weight from the layout, the published file average where there is one, and the shipped
    SmolLM2 file's own types.

    Raises:
        FieldError: no known name in the text (field ``name``).
    """
    try:
        info = gguf_types.decode_name(name)
    except ValueError as exc:
        raise FieldError("name", f"{GGUF_NAME.label}: {exc}") from None
    b = info.block
    out: list[dict] = [v.chips([v.chip(n, None, "is-selected" if n == info.name else "", f"read {n}", set={"name": n})
                                for n in PRESET_NAMES], caption="Try", tokens=False)]
    typed = " ".join(name.split())
    found = "" if typed.upper() == info.name else f" (found in \u201c{typed}\u201d)"
    out.append(v.kv(info.parts, caption=f"{info.name}, piece by piece{found}"))
    rows = [[f.name, format_int(f.count), format_int(f.bits), format_int(f.total_bits), f.meaning] for f in b.fields]
    out.append(v.table(["field", "count", "bits each", "bits", "holds"], rows,
                       caption=f"One {b.name} block: {format_int(b.block_size)} "
                               f"{'weight' if b.block_size == 1 else 'weights'}, {format_int(b.block_bytes)} "
                               f"{'byte' if b.block_bytes == 1 else 'bytes'}; {b.formula}"))
    out.append(v.stat("Bits per weight", format_number(b.bits_per_weight, 4, trim=True),
                      note=f"{b.name}: 8 x {format_int(b.block_bytes)} bytes / {format_int(b.block_size)}"))
    if info.published_bpw is not None:
        out.append(v.stat("File average (Llama-3.1-8B)", format_number(info.published_bpw, 4, trim=True),
                          note="llama.cpp's table: the whole file, embeddings and mixed tensors included"))
    elif info.mix:
        out.append(v.stat("File average", "not published", note="llama.cpp's Llama-3.1-8B table has no row for it"))
    d = ws.data()
    ft = d["file_types"]
    avg = 8 * d["total"]["bytes"] / d["total"]["weights"]
    parts = ", ".join(f"{t} ({format_int(r['tensors'])} {'tensor' if r['tensors'] == 1 else 'tensors'}, "
                      f"{format_percent(r['weights'] / d['total']['weights'], 2)} of the weights)"
                      for t, r in sorted(ft.items(), key=lambda kv: -kv[1]["weights"]))
    out.append(v.note(f"The file behind this page, {d['file']}, holds {parts}: "
                      f"{format_number(avg, 3)} bits per weight on average."))
    return out
