"""The frame player (descent.widgets.views.player) and Part 3's animations (descent.widgets.part3_motion):
every frame shows what the package computes, and the recorded runs they replay."""

from __future__ import annotations

import re

import pytest
from widget_html import stat, text

from descent import catalog, recorded, replay, serving
from descent.units import format_bytes
from descent.widgets import render_static, run
from descent.widgets import views as v
from descent.widgets.part3_motion import kv_fill_frames


def frames_of(markup: str) -> list[tuple[str, str]]:
    """``[(label, html)]`` of every frame of the first player in ``markup`` (its compact data, decoded)."""
    return v.player_frames(markup)


def stage_of(markup: str) -> str:
    m = re.search(r'<div class="descent-player__stage"[^>]*>(.*?)</div><template class="descent-player__frames"', markup, re.S)
    assert m
    return m.group(1)


# --- the player view -------------------------------------------------------------------------------


def test_player_renders_the_start_frame_and_every_frame_as_compact_data():
    frames = [v.frame(f"frame {i}", [v.stat("n", i)]) for i in range(4)]
    out = v.render(v.player(frames, caption="Counting"))
    assert 'data-frames="4"' in out and 'data-start="3"' in out  # default: the last frame
    assert [label for label, _ in frames_of(out)] == ["frame 0", "frame 1", "frame 2", "frame 3"]
    assert text(stage_of(out)) == "n 3"
    assert "Step 4 of 4: frame 3" in text(out)
    # Without JavaScript the buttons can do nothing, so they arrive disabled (player.js enables them).
    assert out.count("data-player-do=") == 5 and out.count(" disabled>") == 5
    first = v.render(v.player(frames, caption="Counting", start=0))
    assert text(stage_of(first)) == "n 0" and "Step 1 of 4: frame 0" in text(first)


@pytest.mark.parametrize("bad, field", [
    (dict(frames=[]), "frames"),
    (dict(frames=[v.frame("", [])]), "label"),
    (dict(frames=[v.frame("a", [])], start=1), "start"),
    (dict(frames=[v.frame("a", [])], start=True), "start"),
    (dict(frames=[v.frame("a", [v.player([v.frame("b", [])], caption="x")])]), "other than a player"),
    (dict(frames=[v.frame("a", [])], caption=""), "caption"),
])
def test_player_refuses_bad_frames_with_a_sentence(bad, field):
    args = {"caption": "c", **bad}
    with pytest.raises(ValueError, match=field):
        v.render(v.player(args.pop("frames"), **args))


def test_player_escapes_labels():
    out = v.render(v.player([v.frame('<b>"x"</b>', [])], caption="<i>"))
    assert "<b>" not in out and "<i>" not in out


# --- kv_fill ---------------------------------------------------------------------------------------


def test_passes_count_linear_with_the_cache_and_quadratic_without():
    # Closed forms: with the cache, prompt + output - 1 token-processings; without, pass p runs
    # prompt + p - 1 tokens, so output x prompt + output (output - 1) / 2 in all.
    for prompt, out in [(1, 1), (5, 12), (100, 37)]:
        on = serving.passes(prompt, out, True)
        off = serving.passes(prompt, out, False)
        assert len(on) == len(off) == out
        assert sum(len(p.run) for p in on) == prompt + out - 1
        assert sum(len(p.run) for p in off) == out * prompt + out * (out - 1) // 2
        assert [p.new for p in on] == [p.new for p in off]  # the same columns are new either way
        assert all(p.read.stop == p.run.start for p in on)  # with the cache, the rest is read


def test_passes_refuse_out_of_range_lengths():
    with pytest.raises(ValueError, match="Prompt"):
        serving.passes(0, 3, True)


def test_cached_passes_feed_what_the_real_model_fed():
    # The recorded run (traces.json) says how many tokens went through the layers at each step,
    # with a KV cache: the prompt, then one. serving.passes must say the same.
    steps = recorded.prompt_trace(replay.PROMPT)["generation"]["steps"]
    prompt = len(recorded.prompt_trace(replay.PROMPT)["tokens"])
    assert [len(p.run) for p in serving.passes(prompt, len(steps), True)] == [s["fed"] for s in steps]


@pytest.mark.parametrize("cache", [True, False])
def test_kv_fill_frames_show_the_package_counts(cache):
    d = kv_fill_frames(cache)
    tr = recorded.prompt_trace(replay.PROMPT)
    assert d["prompt"] == [t["text"] for t in tr["tokens"]]
    assert d["reply"] == [s["token"]["text"] for s in tr["generation"]["steps"]]
    out = run("kv_fill", {"kv_cache": cache})
    assert out["ok"], out
    frames = frames_of(out["html"])
    ps = serving.passes(len(d["prompt"]), len(d["reply"]), cache)
    assert len(frames) == len(ps) + 1  # the empty cache, then one frame per pass
    layers = catalog.model(replay.MODEL).num_layers
    total = 0
    for (_label, body), p in zip(frames[1:], ps, strict=True):
        total += len(p.run)
        assert stat(body, "Tokens run this pass") == f"{len(p.run):,}"
        assert stat(body, "Token-processings so far") == f"{total:,}"
        # One row per layer of the catalog's SmolLM2; one column per position fed so far.
        rows = re.findall(r"<tr><th scope=\"row\">(.*?)</tr>", body, re.S)
        assert len(rows) == layers
        for row in rows:
            assert row.count('class="descent-cell') == p.run.stop
            assert row.count("is-written") == len(p.new)
            assert row.count("is-cached") == len(p.read)
            assert row.count("is-redone") == len(p.run) - len(p.new)
    assert d["processed"][-1] == total
    assert f"{total:,}" in text(out["html"])  # the closing note names the total


def test_kv_fill_note_reads_the_model_shape_from_the_catalog():
    m = catalog.model(replay.MODEL)
    # What the real model reports (traces.json) is what the catalog row says.
    assert recorded.trace_data()["model"]["layers"] == m.num_layers
    assert recorded.trace_data()["model"]["kv_heads"] == m.num_kv_heads
    note = text(run("kv_fill", {})["html"])
    assert f"{2 * m.num_kv_heads * m.head_dim} numbers" in note
    assert f"{m.num_kv_heads} key/value heads" in note


def test_kv_fill_static_page_shows_the_last_frame():
    page = render_static("kv_fill")
    frames = frames_of(page)
    assert text(stage_of(page)) == text(frames[-1][1])
    assert f"Step {len(frames)} of {len(frames)}:" in text(page)


# --- batching_lanes --------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["static", "continuous"])
def test_lanes_are_the_simulators_events(policy):
    from descent.widgets.part3_motion import LANES_SLOTS, lanes_simulation, lanes_states

    sim = lanes_simulation(policy)
    states = lanes_states(sim)
    assert len(states) == sim.steps == len(sim.step_ends)  # one frame per simulated step
    # Every request writes exactly its reply's tokens, one per step it prefills or decodes in.
    written: dict[int, int] = {}
    for st in states:
        assert len(st["slots"]) == LANES_SLOTS
        for cls, req in st["slots"]:
            if cls in ("is-prefill", "is-decode"):
                written[req] = written.get(req, 0) + 1
    assert written == {r.id: r.output for r in sim.trace}
    # A request waits, then holds a slot, then is done: never two at once, never two slots.
    for st in states:
        held = [req for _, req in st["slots"] if req is not None]
        assert len(held) == len(set(held))
        assert not set(held) & set(st["waiting"]) and not set(held) & set(st["done"])
    wasted = sum(cls == "is-waste" for st in states for cls, _ in st["slots"])
    # Only static batching keeps a finished request's slot (the simulator retires at once otherwise).
    assert (wasted > 0) == (policy == "static")
    out = run("batching_lanes", {"policy": policy})
    assert out["ok"], out
    assert len(frames_of(out["html"])) == sim.steps
    assert f"{lanes_simulation('static').steps} iterations with static" in text(out["html"])


def test_continuous_lanes_refill_a_freed_slot_at_the_next_iteration():
    from descent.widgets.part3_motion import lanes_simulation, lanes_states

    states = lanes_states(lanes_simulation("continuous"))
    refills = 0
    for before, after in zip(states, states[1:], strict=False):
        freed = [i for i, ((_, a), (_, b)) in enumerate(zip(before["slots"], after["slots"], strict=True)) if a is not None and b != a]
        if freed and before["waiting"]:
            # The next waiting request is in a slot at the very next iteration.
            assert before["waiting"][0] in [req for _, req in after["slots"]]
            refills += 1
    assert refills > 0  # the trace does free a slot while requests wait


# --- flash_tiles -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["naive", "flash"])
@pytest.mark.parametrize("seq_len", [1, 300, 1024])
def test_flash_tiles_count_up_to_the_traffic_formulas(kernel, seq_len):
    from descent import attention_io, tiling
    from descent.widgets.part4_motion import TILES_ELEMENT, TILES_HEAD_DIM, flash_tiles_frames

    acc = "h100-sxm"
    d = flash_tiles_frames(kernel, seq_len, acc)
    t = attention_io.traffic(seq_len, TILES_HEAD_DIM, tiling.element_bytes(TILES_ELEMENT), acc)
    # The counter ends at the widget's bars (descent.attention_io.traffic), and only ever grows.
    assert d["bytes"][-1] == (t.naive_bytes if kernel == "naive" else t.flash_bytes)
    assert d["bytes"] == sorted(d["bytes"])
    if kernel == "flash":
        # One frame to set up, then one per tile: T_r x T_c, each block of queries against each of keys.
        rows = -(-seq_len // t.block_rows)
        assert len(d["frames"]) == 1 + rows * t.kv_blocks
    out = run("flash_tiles", {"kernel": kernel, "seq_len": seq_len, "accelerator": acc})
    assert out["ok"], out
    last = frames_of(out["html"])[-1][1]
    assert stat(last, "HBM traffic so far") == format_bytes(d["bytes"][-1], "auto", 3, trim=True)
    if kernel == "flash":
        assert '<td class="descent-cell is-hbm"' not in out["html"]  # no score tile ever written


# --- allreduce_ring --------------------------------------------------------------------------------


@pytest.mark.parametrize("devices", [2, 3, 4, 8])
def test_ring_schedule_sums_every_shard_and_ends_at_the_step_models_cost(devices):
    from descent import parallel, step

    wire = catalog.link("nvlink4")
    message = 16_384.0
    steps = parallel.ring_allreduce(message, devices, "nvlink4")
    p = devices
    assert len(steps) == 1 + 2 * (p - 1)  # the start, then 2 (p - 1) steps
    assert [s.phase for s in steps[1:]] == ["reduce-scatter"] * (p - 1) + ["all-gather"] * (p - 1)
    for s in steps[1:]:
        # Every link carries one shard at once: each GPU sends to its right neighbour, each shard once.
        assert sorted((i, to) for i, to, _ in s.sends) == [(i, (i + 1) % p) for i in range(p)]
        assert sorted(c for _, _, c in s.sends) == list(range(p))
    # After the reduce-scatter GPU i holds the whole sum of shard i + 1 (and of no other).
    half = steps[p - 1].summed
    assert [[c for c in range(p) if half[i][c] == p] for i in range(p)] == [[(i + 1) % p] for i in range(p)]
    assert all(k == p for row in steps[-1].summed for k in row)
    # The totals are the step model's: 2 (p - 1) / p of the message, and its time on the link.
    assert steps[-1].sent_bytes == pytest.approx(step.ring_allreduce_bytes(message, p), rel=1e-12)
    assert steps[-1].seconds == pytest.approx(step.allreduce_seconds(wire, message, p), rel=1e-12)
    assert [s.sent_bytes for s in steps] == sorted(s.sent_bytes for s in steps)


def test_ring_refuses_what_it_cannot_draw():
    from descent import parallel

    with pytest.raises(ValueError, match="devices must be 2 to"):
        parallel.ring_allreduce(1024.0, 1, "nvlink4")
    with pytest.raises(ValueError, match="link must join accelerators"):
        parallel.ring_allreduce(1024.0, 4, "nvme-ssd")
    with pytest.raises(ValueError, match="message must be"):
        parallel.ring_allreduce(float("nan"), 4, "nvlink4")


def test_ring_widget_frames_are_the_schedule_of_the_plans_message():
    from descent import parallel
    from descent import params as P

    out = run("allreduce_ring", {"tp": "4", "batch": 16, "link": "nvlink4"})
    assert out["ok"], out
    plan = parallel.plan(P.MODEL.default, P.ACCELERATOR.default, batch=16, tp=4, link_id="nvlink4")
    steps = parallel.ring_allreduce(plan.allreduce_message_bytes, 4, "nvlink4")
    frames = frames_of(out["html"])
    assert len(frames) == len(steps) == 7
    fmt = lambda x: format_bytes(x, "auto", 3, trim=True)  # noqa: E731
    for (label, body), s in zip(frames, steps, strict=True):
        assert stat(body, "Sent by each GPU so far") == fmt(s.sent_bytes)
        assert stat(body, "On each link this step") == fmt(s.shard_bytes if s.sends else 0)
        # The grid's numbers are the schedule's counts, row by row.
        cells = [int(x) for x in re.findall(r'<td class="descent-cell[^"]*"[^>]*><span aria-hidden="true">(\d+)</span>', body)]
        assert cells == [k for row in s.summed for k in row]
        assert (s.phase == "start") == (not s.sends) and (s.phase.split("-")[0].capitalize() in label or s.phase == "start")
    # The choices are the splits the model allows, up to one server's 8 GPUs (transformer.tp_degrees).
    from descent import transformer
    from descent.widgets import get

    allowed = [t for t in transformer.tp_degrees(catalog.model(P.MODEL.default)) if 2 <= t <= 8]
    assert [int(x) for x, _ in get("allreduce_ring").input("tp").options] == allowed
    bad = run("allreduce_ring", {"tp": "3"})
    assert not bad["ok"] and bad["field"] == "tp"


@pytest.mark.parametrize("name", ["attention_any", "allreduce_ring"])
def test_the_pre_rendered_page_shows_the_last_frame_with_inert_controls(name):
    # Without JavaScript (or from file:// before the script runs) the stage holds the complete
    # picture, the last frame, and no button pretends to work.
    page = render_static(name)
    frames = frames_of(page)
    assert stage_of(page) == frames[-1][1]
    assert f"Step {len(frames)} of {len(frames)}:" in text(page)
    buttons = re.findall(r"<button[^>]*>", page)
    assert buttons and all(" disabled" in b for b in buttons if "data-player" in b)
