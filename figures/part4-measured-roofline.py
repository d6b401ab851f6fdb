"""Figure: the roofline of the machine that built this site, measured, with SmolLM2-135M's measured
prefill and decode placed on it (descent.trace.roofline_measure.from_record: the committed record)."""

import hashlib
import json

from descent.roofline import attained_flops
from descent.trace.roofline_measure import from_record
from descent.units import format_number, format_percent, format_si

_M = from_record()
_MACHINE = f"{_M['machine']['cpu']}, one core of {_M['machine']['cores']}"

#: The drawn SVG changes with the record, not only with the recipe.
CACHE_KEY = hashlib.sha256(json.dumps(_M, sort_keys=True).encode()).hexdigest()

ALT = (
    f"Log-log roofline of the build machine ({_MACHINE}, measured {_M['measured_at']}): attainable "
    f"arithmetic rate against arithmetic intensity, a sloped memory roof at "
    f"{format_si(_M['stream']['bytes_per_s'], 'B/s', 3, trim=True)} meeting a flat compute roof at "
    f"{format_si(_M['gemm']['flops_per_s'], 'FLOP/s', 3, trim=True)} at the ridge point of "
    f"{format_number(_M['ridge'], 3, trim=True)} FLOP per byte. SmolLM2-135M's prefill sits far to the right "
    f"of the ridge, near the flat roof; its decode sits far to the left, below the sloped roof."
)
CAPTION = (
    f"This machine's roofline, measured when the site was built ({_M['measured_at']}, {_MACHINE}): the flat roof "
    f"is NumPy's median float32 matrix product, the sloped roof its median read of a "
    f"{format_number(_M['stream']['bytes'] / 2**20, 3)} MiB array. The two points are SmolLM2-135M running "
    f"through the site's NumPy forward pass on the same core, FLOPs and bytes counted by the site's own "
    f"arithmetic (FP32 weights and cache)."
)

#: Axis span, as factors below the smallest and above the largest intensity plotted.
X_MARGIN = 6.0


def draw(ax, theme):
    peak, bw = _M["gemm"]["flops_per_s"], _M["stream"]["bytes_per_s"]
    pre, dec = _M["prefill"], _M["decode"]
    lo = min(dec["intensity"], _M["ridge"]) / X_MARGIN
    hi = max(pre["intensity"], _M["ridge"]) * X_MARGIN
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.plot(xs, [attained_flops(peak, bw, x) for x in xs], color=theme.fg, linewidth=1.8, label="roofline (measured)")
    ax.axvline(_M["ridge"], color=theme.muted, linestyle=":", linewidth=1)
    ax.annotate(f"ridge {format_number(_M['ridge'], 3, trim=True)} FLOP/byte", (_M["ridge"], peak),
                xytext=(6, -14), textcoords="offset points", fontsize=8, color=theme.muted)
    for i, (name, p, flops) in enumerate((("prefill", pre, pre["flops_per_s"]), ("decode", dec, dec["flops_per_s"]))):
        roof = attained_flops(peak, bw, p["intensity"])
        ax.plot([p["intensity"], p["intensity"]], [flops, roof], color=theme.color(i + 1), linestyle="--", linewidth=1)
        ax.scatter([p["intensity"]], [flops], s=50, color=theme.color(i + 1), zorder=3,
                   label=f"SmolLM2 {name}: {format_si(flops, 'FLOP/s', 3, trim=True)}, "
                         f"{format_percent(flops / roof, 2)} of the roof")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(min(dec["flops_per_s"], bw * lo) / 3, peak * 4)
    ax.set_xlabel("arithmetic intensity (FLOP per byte read from memory)")
    ax.set_ylabel("FLOP/s")
    ax.legend(loc="lower right", fontsize=8)
