"""Part 3's animations ("Serving software"): frame sequences computed once, played by the page.

Each widget returns a :func:`descent.widgets.views.player`: every frame computed here, in Python,
from the package's own records and simulations; ``player.js`` steps through them without asking
Python again, and the page's HTML holds the last frame for readers without JavaScript.

* ``kv_fill``: the real prompt of Parts 0 and 1 ("The capital of France is") and SmolLM2's recorded
  reply, pass by pass: a layers x tokens grid of the KV cache filling in one pass for the prompt,
  then one column per decode pass; with the cache off, every pass runs the whole text again
  (:func:`descent.serving.passes` counts the token-processings).
* ``speculative_strip``: the recorded prompt-lookup run on SmolLM2 (:func:`descent.recorded.speculative_run`)
  as a token strip, pass by pass: drafted tokens, the accepted prefix, the first rejection and the
  target's own token, beside the expected-tokens formula (:func:`descent.serving.speculative`).
* ``batching_lanes``: static against continuous batching on a small trace, iteration by iteration,
  from the simulator's own records (:func:`descent.serving.simulate`): the slots, the waiting queue
  and the finished requests.

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

from descent import catalog, recorded, replay, serving, transformer
from descent import params as P
from descent.units import format_int, format_number, format_percent, plural
from descent.widgets import Input, Look, widget
from descent.widgets import views as v
from descent.widgets.part3 import KV_CACHE

__all__ = ["batching_lanes", "kv_fill", "kv_fill_frames", "lanes_frames", "lanes_simulation", "lanes_states",
           "speculative_strip", "speculative_strip_frames"]

#: Significant figures of the rates shown.
SIG = 3


def _q(text: str) -> str:
    """A token quoted for a sentence, its whitespace drawn (" Paris" -> "␣Paris" in quotes)."""
    return f"\u201c{v.shown_token(text)}\u201d"


#: Cell classes of the KV grid and what each means.
KV_LEGEND_CACHE = (
    ("is-empty", "not computed yet"),
    ("is-written", "computed in this pass and stored"),
    ("is-cached", "read from the cache"),
)
KV_LEGEND_NO_CACHE = (
    ("is-empty", "not computed yet"),
    ("is-written", "computed for the first time in this pass"),
    ("is-redone", "computed again in this pass (thrown away after the last one)"),
)


def kv_fill_frames(kv_cache: bool) -> dict:
    """The frames of :func:`kv_fill` and the facts around them: ``{"model", "prompt", "reply",
    "passes", "frames", "processed"}``, where ``processed`` is the running count of
    token-processings after each pass (:func:`descent.serving.passes`)."""
    m = catalog.model(replay.MODEL)
    tr = recorded.prompt_trace(replay.PROMPT)
    prompt = [t["text"] for t in tr["tokens"]]
    reply = [s["token"]["text"] for s in tr["generation"]["steps"]]
    texts = prompt + reply
    ps = serving.passes(len(prompt), len(reply), kv_cache)
    legend = KV_LEGEND_CACHE if kv_cache else KV_LEGEND_NO_CACHE
    layers = m.num_layers
    rows = [str(i + 1) for i in range(layers)]

    def grid(columns: int, run: range, new: range, read: range, caption: str) -> dict:
        row = []
        for c in range(columns):
            if c in new:
                row.append("is-written is-now")
            elif c in run:
                row.append("is-redone is-now")
            elif c in read:
                row.append("is-cached")
            else:
                row.append("is-empty")
        cells = [[v.cell(cls) for cls in row]] * layers  # every layer alike: one row, written once
        return v.cell_grid(cells, caption=caption, row_labels=rows,
                           col_labels=[v.shown_token(t) for t in texts[:columns]], legend=legend)

    def chips(upto: int, new: int | None) -> dict:
        return v.chips([v.chip(t, cls="is-new" if i == new else "") for i, t in enumerate(texts[:upto])],
                       caption="The text so far")

    frames = [v.frame(
        f"The prompt arrives: {plural(len(prompt), 'token')}, and nothing is cached yet.",
        [v.stat("Tokens run this pass", "0"), v.stat("Token-processings so far", "0"), chips(len(prompt), None),
         grid(len(prompt), range(0), range(0), range(0), f"KV cache of {m.name}: layers down, tokens across")])]
    processed, total = [], 0
    for i, p in enumerate(ps):
        total += len(p.run)
        processed.append(total)
        picked = reply[i]
        if i == 0:
            what = (f"Prefill: the {plural(len(p.run), 'prompt token')} run through all {format_int(layers)} layers "
                    f"in one pass and write their keys and values. The pass picks {_q(picked)}.")
        elif kv_cache:
            what = (f"Decode: only {_q(texts[p.new.start])} runs; it reads {plural(len(p.read), 'cached column')} "
                    f"and adds its own. The pass picks {_q(picked)}.")
        else:
            what = (f"No cache: all {plural(len(p.run), 'token')} run through every layer again to pick "
                    f"{_q(picked)}; {format_int(len(p.run) - len(p.new))} of them were done before.")
        frames.append(v.frame(what, [
            v.stat("Tokens run this pass", format_int(len(p.run))),
            v.stat("Token-processings so far", format_int(total)),
            chips(p.run.stop + 1, p.run.stop),
            grid(p.run.stop, p.run, p.new, p.read,
                 f"KV cache of {m.name} after pass {i + 1}: layers down, tokens across"),
        ]))
    return {"model": m, "prompt": prompt, "reply": reply, "passes": ps, "frames": frames, "processed": processed}


@widget(
    "kv_fill",
    title="The KV cache filling, pass by pass",
    description="The real prompt and the reply SmolLM2 wrote to it. Each cell is one token's keys and values "
    "in one layer. Step through the passes, or play them.",
    inputs=[Input(KV_CACHE, "toggle")],
    tries=[("Press First, then Next a few times.", "The prompt fills its columns in one pass; after that each "
            "pass adds a single column.", Look(html="First")),
           ("Turn the KV cache off and press Play.", "Every pass colours the whole grid again, and the count of "
            "token-processings races ahead.", {"kv_cache": False})],
)
def kv_fill(kv_cache: bool) -> list[dict]:
    """Views: a player of the passes (see :func:`kv_fill_frames`) and a note comparing the
    token-processings with and without the cache."""
    d = kv_fill_frames(kv_cache)
    m = d["model"]
    per_cell = transformer.kv_elements_per_token_per_layer(m, 0)
    on = sum(len(p.run) for p in serving.passes(len(d["prompt"]), len(d["reply"]), True))
    off = sum(len(p.run) for p in serving.passes(len(d["prompt"]), len(d["reply"]), False))
    return [
        v.player(d["frames"], caption=f"{plural(len(d['passes']), 'pass', 'passes')} of {m.name}"
                 + (" with a KV cache" if kv_cache else " without a KV cache")),
        v.note(f"Each cell holds {format_int(per_cell)} numbers: a key and a value for each of "
               f"{m.name}'s {format_int(m.num_kv_heads)} key/value heads."),
        v.note(f"With the cache these passes run {format_int(on)} token-processings; without it, {format_int(off)}. "
               "The first grows with the length of the text, the second with its square.",
               "info" if kv_cache else "warn"),
    ]


# ---------------------------------------------------------------------------------------------
# speculative_strip
# ---------------------------------------------------------------------------------------------

#: Chip classes of the token strip, with their meaning (the figure's legend and each chip's title).
STRIP_MEANING = {
    "is-accepted": "drafted and accepted",
    "is-rejected": "drafted, rejected: the target disagreed",
    "is-dropped": "drafted, thrown away after the rejection",
    "is-correction": "the target's own token",
}


def speculative_strip_frames() -> dict:
    """The frames of :func:`speculative_strip` from the recorded run (:func:`descent.recorded.speculative_run`):
    ``{"run", "frames", "per_pass"}``, ``per_pass`` the tokens each target pass added (the prefill's 1 first)."""
    run = recorded.speculative_run()
    reply: list[str] = [run["first"]["text"]]
    per_pass = [1]
    frames = [v.frame(
        f"Pass 1, the prefill: the target reads the prompt and writes its first token, {_q(reply[0])}.",
        [v.stat("Drafted", "0"), v.stat("Accepted", "0"), v.stat("Tokens this pass", "1"),
         v.stat("Tokens per pass so far", format_number(1, SIG)),
         v.chips([v.chip(reply[0], cls="is-correction", title=STRIP_MEANING["is-correction"])],
                 caption="The reply so far")])]
    for i, r in enumerate(run["rounds"]):
        draft, n, kept = r["draft"], r["accepted"], r["kept"]
        strip = [v.chip(t) for t in reply]
        for j, t in enumerate(draft):
            cls = "is-accepted" if j < n else ("is-rejected" if j == n else "is-dropped")
            strip.append(v.chip(t["text"], cls=cls, title=STRIP_MEANING[cls]))
        stopped = len(kept) <= n  # a stop token among the accepted ones ended the reply there
        if stopped:
            fix = ""
        else:
            fix = kept[-1]["text"]
            strip.insert(len(reply) + n + (1 if n < len(draft) else 0),
                         v.chip(fix, cls="is-correction", title=STRIP_MEANING["is-correction"]))
        reply += [t["text"] for t in kept]
        per_pass.append(len(kept))
        if not draft:
            what = f"nothing earlier in the text matches, so nothing is drafted; the target writes {_q(fix)}."
        elif stopped:
            what = (f"the lookup drafts {plural(len(draft), 'token')} and the target accepts {format_int(n)}. "
                    f"The reply ends at the accepted {_q(kept[-1]['text'])}, so nothing after it is kept.")
        elif n == len(draft):
            what = (f"the lookup drafts {plural(len(draft), 'token')} and the target accepts them all, "
                    f"then adds {_q(fix)}.")
        else:
            what = (f"the lookup drafts {plural(len(draft), 'token')}; the target accepts {format_int(n)} and "
                    f"rejects {_q(draft[n]['text'])}, writing {_q(fix)} instead.")
        frames.append(v.frame(f"Pass {i + 2}: {what}", [
            v.stat("Drafted", format_int(len(draft))),
            v.stat("Accepted", format_int(n)),
            v.stat("Tokens this pass", format_int(len(kept))),
            v.stat("Tokens per pass so far", format_number(len(reply) / (i + 2), SIG)),
            v.chips(strip, caption="The reply so far, then this pass's draft"),
        ]))
    return {"run": run, "frames": frames, "per_pass": per_pass}


@widget(
    "speculative_strip",
    title="Prompt-lookup drafts, pass by pass",
    description="SmolLM2 copying a passage, recorded when this site was built. Each pass, the lookup drafts "
    "tokens from earlier in the text and the model checks them all at once.",
    inputs=[],
    tries=[("Press First, then Next.", "Long runs of drafted tokens survive, because the reply copies its prompt.",
            Look(html="Next")),
           ("Find a red token.", "The first token the model disagrees with ends the pass; the model's own token "
            "takes its place.", Look(html="is-rejected"))],
)
def speculative_strip() -> list[dict]:
    """Views: a player of the recorded run's passes, the run's totals, and the expected-tokens formula
    at the run's own acceptance rate and draft length (:func:`descent.serving.speculative`)."""
    d = speculative_strip_frames()
    run = d["run"]
    acceptance = run["accepted"] / run["drafted"]
    expected = serving.speculative(acceptance, run["draft_max"], 0.0).expected_tokens
    return [
        v.player(d["frames"], caption=f"{plural(run['passes'], 'target pass', 'target passes')} of "
                 f"{run['model']}"),
        v.note(f"In all: {plural(run['tokens'], 'token')} in {plural(run['passes'], 'pass', 'passes')}, "
               f"{format_number(run['tokens'] / run['passes'], SIG)} per pass."),
        v.note(f"This run accepted {format_percent(acceptance)} of its drafted tokens, in drafts of up to "
               f"{format_int(run['draft_max'])}. At that rate the formula expects {format_number(expected, SIG)} "
               "tokens per pass. "
               + ("Copying beats it: a draft that is right once tends to stay right, while the formula treats each "
                  "drafted token as a fresh coin toss." if run["tokens"] / run["passes"] > expected else
                  "The run falls short of it: its drafts were not all full length.")),
    ]


# ---------------------------------------------------------------------------------------------
# batching_lanes
# ---------------------------------------------------------------------------------------------

#: The small trace the lanes replay: few enough steps to watch one by one. Requests arrive faster
#: than three slots can serve them, so a queue forms; seed 1 draws one long reply among short ones
#: (descent.serving.make_trace), which is where the two policies part.
LANES_REQUESTS = 8
LANES_SLOTS = 3
LANES_RATE = 50.0
LANES_PROMPT_MEAN = 200
LANES_OUTPUT_MEAN = 6
LANES_SEED = 1

#: Cell classes of the lanes (the batching widget's, descent.widgets.part3.LANE_LEGEND, per step).
LANES_LEGEND = (
    ("is-prefill", "reads its prompt (first token)"),
    ("is-decode", "writes one token"),
    ("is-waste", "finished, slot held until the batch ends"),
    ("is-free", "empty"),
)


def lanes_simulation(policy: str) -> serving.Simulation:
    """The simulator's run of the lanes' trace (:data:`LANES_REQUESTS` ...) on the running example."""
    return serving.run(model=P.MODEL.default, accelerator=P.ACCELERATOR.default, weights=P.WEIGHTS.default,
                       kv=P.KV.default, policy=policy, requests=LANES_REQUESTS, rate=LANES_RATE,
                       prompt_mean=LANES_PROMPT_MEAN, output_mean=LANES_OUTPUT_MEAN, batch=LANES_SLOTS,
                       chunk=0, seed=LANES_SEED)


def lanes_states(sim: serving.Simulation) -> list[dict]:
    """What each step of ``sim`` did, read from the simulator's own records (its step ends, its
    occupancy and each request's token times): one ``{"slots": [(class, request or None)], "waiting":
    [ids], "done": [ids]}`` per step. A slot holds a request during a step when the request was
    admitted before the step ended and released at or after it; it read its prompt if its first token
    came at the step's end, wrote a token if a later one did, and otherwise (static) sat finished."""
    times = {r.id: set(t) for r, t in zip(sorted(sim.trace, key=lambda r: r.id), sim.token_times, strict=True)}
    first = {r.id: t[0] for r, t in zip(sorted(sim.trace, key=lambda r: r.id), sim.token_times, strict=True)}
    admitted = {o.request: o.admitted for o in sim.occupancy}
    out = []
    for end in sim.step_ends:
        slots: list[tuple[str, int | None]] = [("is-free", None)] * sim.slots
        for o in sim.occupancy:
            if o.admitted < end <= o.released:
                if end == first[o.request]:
                    cls = "is-prefill"
                elif end in times[o.request]:
                    cls = "is-decode"
                else:
                    cls = "is-waste"
                slots[o.slot] = (cls, o.request)
        waiting = [r.id for r in sim.trace if r.arrival < end and admitted[r.id] >= end]
        done = [o.request for o in sim.occupancy if o.released < end]
        out.append({"slots": slots, "waiting": waiting, "done": done})
    return out


def _r(i: int) -> str:
    return f"R{i + 1}"


def lanes_frames(policy: str) -> dict:
    """The frames of :func:`batching_lanes`: ``{"sim", "states", "frames"}``."""
    sim = lanes_simulation(policy)
    states = lanes_states(sim)
    frames = []
    rows = [f"slot {i + 1}" for i in range(sim.slots)]
    for k, st in enumerate(states):
        cells = [[v.cell(cls, text=_r(req) if req is not None else "",
                         title=f"step {j + 1}: " + (f"{_r(req)} {dict(LANES_LEGEND)[cls]}" if req is not None
                                                    else "empty"))
                  for j, (cls, req) in enumerate(s["slots"][i] for s in states[:k + 1])]
                 for i in range(sim.slots)]
        busy = [(cls, req) for cls, req in st["slots"] if req is not None]
        tokens = sum(cls in ("is-prefill", "is-decode") for cls, _ in busy)
        held = sum(cls == "is-waste" for cls, _ in busy)
        free = sim.slots - len(busy)
        what = f"{plural(tokens, 'token')} written"
        if held:
            what += f"; {plural(held, 'finished slot')} held while the batch drains"
        if free and st["waiting"]:
            what += f"; {plural(free, 'slot')} empty while {plural(len(st['waiting']), 'request')} wait"
        frames.append(v.frame(f"Iteration {k + 1}: {what}.", [
            v.chips([v.chip(_r(i)) for i in st["waiting"]] or [v.chip("none")], caption="Waiting", tokens=False),
            v.cell_grid(cells, caption=f"Slots over the iterations, {policy} batching", row_labels=rows,
                        legend=LANES_LEGEND),
            v.chips([v.chip(_r(i)) for i in st["done"]] or [v.chip("none")], caption="Finished", tokens=False),
        ]))
    return {"sim": sim, "states": states, "frames": frames}


@widget(
    "batching_lanes",
    title="Batching, one iteration at a time",
    description=f"{plural(LANES_REQUESTS, 'request')} arriving together, {plural(LANES_SLOTS, 'slot')}, the "
    "running example's step times. Each column is one iteration of the engine: every slot that holds a "
    "request reads its prompt or writes one token.",
    inputs=[Input(P.POLICY, "segmented")],
    tries=[("Switch to static batching and press Play.", "Finished slots sit idle until the longest reply of "
            "the batch ends; continuous batching refills them at the next iteration.", {"policy": "static"}),
           ("Count the iterations.", "The same requests need fewer iterations when no slot sits idle.",
            Look(html="iterations"))],
)
def batching_lanes(policy: str) -> list[dict]:
    """Views: a player of the simulator's iterations and a note with the iteration counts of both policies."""
    d = lanes_frames(policy)
    steps = {p: lanes_simulation(p).steps for p in ("static", "continuous")}
    return [
        v.player(d["frames"], caption=f"{plural(d['sim'].steps, 'iteration')} of {policy} batching"),
        v.note(f"The same requests take {plural(steps['static'], 'iteration')} with static batching and "
               f"{format_int(steps['continuous'])} with continuous batching."),
    ]
