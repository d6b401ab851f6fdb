"""Figure: requests of the simulated trace under continuous batching: TTFT, then the tokens and their gaps."""

from descent import params as P
from descent import quantities as Q
from descent import serving
from descent.units import format_time

#: Which requests the left panel draws (the server is warm after SKIP arrivals), and how many
#: tokens of one reply the right panel zooms in on.
SKIP, FIRST, ZOOM_TOKENS = 40, 8, 24

ALT = (
    f"Left: a timeline of {FIRST} requests from the simulated trace served by continuous batching on one "
    "H200: for each, a grey line from its arrival to its first token (the time to first token, labelled) "
    "and a coloured band until its last token. Right: the first tokens of one of those replies as ticks "
    "on a time axis; the gaps between ticks are the inter-token latency, longer where another request's "
    "prompt was read in the same step."
)
CAPTION = (
    f"Left: {FIRST} requests from the batching simulator's trace (Llama 3.1 70B, FP8 weights, one H200, "
    "continuous batching, the page's default trace): grey, arrival to first token; coloured, the reply "
    "being written. Right: the first tokens of the longest of those replies; each tick is a token, the "
    "spacing the inter-token latency. Computed by descent.serving."
)


def _sim():
    d = {p.name: p.default for p in (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV, P.REQUESTS, P.ARRIVAL_RATE,
                                        P.PROMPT_MEAN, P.OUTPUT_MEAN, Q.SLOTS, P.CHUNK, P.SEED)}
    return serving.run(policy="continuous", **d)


def make(theme):
    from matplotlib.figure import Figure

    from descent import plotting

    sim = _sim()
    reqs = sorted(sim.trace, key=lambda r: r.arrival)[SKIP:SKIP + FIRST]
    t0 = reqs[0].arrival
    fig = Figure(figsize=plotting.FIGSIZE, layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[3, 2])
    for y, r in enumerate(reqs):
        times = sim.token_times[r.id]
        left.plot([r.arrival - t0, times[0] - t0], [y, y], color=theme.muted, lw=3, solid_capstyle="butt")
        left.plot([times[0] - t0, times[-1] - t0], [y, y], color=theme.color(0), lw=7, solid_capstyle="butt")
        left.annotate(f"TTFT {format_time(times[0] - r.arrival)}", (times[-1] - t0, y), xytext=(4, 0),
                      textcoords="offset points", va="center", fontsize=7, color=theme.fg)
    left.set_yticks(range(len(reqs)), [f"{r.prompt} + {r.output} tokens" for r in reqs], fontsize=8)
    left.invert_yaxis()
    left.set_xlabel("seconds since the first of these arrived")
    left.set_xlim(right=max(sim.token_times[r.id][-1] for r in reqs) - t0 + 6)
    left.grid(axis="y", visible=False)

    longest = max(reqs, key=lambda r: r.output)
    times = sim.token_times[longest.id][:ZOOM_TOKENS]
    start = times[0]
    right.vlines([(t - start) * 1000 for t in times], 0, 1, color=theme.color(1), lw=1.5)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    right.set_title(f"typical gap {format_time(sorted(gaps)[len(gaps) // 2])}, longest {format_time(max(gaps))}",
                    fontsize=8, color=theme.fg)
    right.set_ylim(0, 1.15)
    right.set_yticks([])
    right.set_xlabel(f"ms, its first {ZOOM_TOKENS} tokens")
    right.grid(axis="y", visible=False)
    return fig
