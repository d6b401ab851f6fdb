"""The frame player in the browser (views.player, docs/assets/descent/player.js) on Part 3's animations.

* ``kv_fill``: step forward and back with the buttons and the arrow keys, play then pause, toggle
  the cache off and see the package's count of token-processings; the page keeps the reader's
  place when the worker's first answer repeats the page's frames.
* Reduced motion: nothing plays by itself, and the cells' pulse is off (it is on otherwise).
* Without JavaScript the last frame is there and the buttons are disabled; from ``file://`` the
  player still steps (every frame is in the page), while the widget's inputs stay disabled.
* ``speculative_strip``: each step shows the recorded pass's accepted tokens.
* ``batching_lanes``: each step's newest column and queue are the simulator's.
* axe finds nothing serious in any of the players, light and dark, in the middle of a sequence.
* Part 1's ``attention_any``: a click on a token shows its fan (the record's weights), the arrow keys
  on a token step to the next one and keep the keyboard on the tokens.
* Part 4's ``allreduce_ring`` (on the FlashAttention test's page load): steps through the ring,
  each frame's bytes the schedule's.
* Part 2's ``distillation``: a click on a point's chip shows that student's published numbers.
"""

from __future__ import annotations

import re

import pytest
from helpers import go_live, next_frames, page_url
from playwright.sync_api import expect

from descent import recorded, serving
from descent.widgets.part3_motion import kv_fill_frames

PAGE = "part-3-serving-software"
KV = '.descent-widget[data-widget="kv_fill"]'
SPEC = '.descent-widget[data-widget="speculative_strip"]'
LANES = '.descent-widget[data-widget="batching_lanes"]'
STEP_MS = 5_000


def _player(page, root: str):
    return page.locator(f"{root} figure[data-player]")


def _step_line(page, root: str):
    return page.locator(f"{root} .descent-player__step")


def _button(page, root: str, act: str):
    return page.locator(f'{root} [data-player-do="{act}"]')


def test_kv_fill_steps_with_buttons_and_keys_plays_and_pauses(make_page, site_dir, server):
    page = make_page(viewport={"width": 1280, "height": 900})
    go_live(page, page_url(site_dir, server, PAGE), KV)
    n = len(kv_fill_frames(True)["frames"])
    line = _step_line(page, KV)
    expect(line).to_contain_text(f"Step {n} of {n}:")  # the complete picture first
    _button(page, KV, "first").click()
    expect(line).to_contain_text(f"Step 1 of {n}: The prompt arrives")
    expect(_button(page, KV, "prev")).to_have_attribute("aria-disabled", "true")
    _button(page, KV, "next").click()
    expect(line).to_contain_text(f"Step 2 of {n}: Prefill")
    # The keyboard: focus the stage, then the arrows and Home/End.
    stage = page.locator(f"{KV} .descent-player__stage")
    stage.focus()
    page.keyboard.press("ArrowRight")
    expect(line).to_contain_text(f"Step 3 of {n}: Decode")
    page.keyboard.press("ArrowLeft")
    expect(line).to_contain_text(f"Step 2 of {n}:")
    page.keyboard.press("End")
    expect(line).to_contain_text(f"Step {n} of {n}:")
    page.keyboard.press("Home")
    expect(line).to_contain_text(f"Step 1 of {n}:")
    # The frame on the stage is the package's: after the prefill, the prompt's tokens were run.
    _button(page, KV, "next").click()
    prompt = len(kv_fill_frames(True)["prompt"])
    assert stage.locator(".descent-stat").first.inner_text().split()[-1] == str(prompt)
    # Play, then pause: it moves on by itself, and stops when asked.
    player = _player(page, KV)
    _button(page, KV, "play").click()
    expect(player).to_have_attribute("data-playing", "true")
    expect(_button(page, KV, "play")).to_contain_text("Pause")
    expect(player).to_have_attribute("data-at", re.compile(r"^([3-9]|1\d)$"), timeout=STEP_MS)
    _button(page, KV, "play").click()
    expect(player).to_have_attribute("data-playing", "false")
    at = player.get_attribute("data-at")
    page.wait_for_timeout(2_000)
    assert player.get_attribute("data-at") == at
    expect(line).to_have_attribute("aria-live", "polite")  # the stop is announced
    # The cache off: the widget recomputes and the last frame counts the package's processings.
    page.locator(f'{KV} .descent-field[data-field="kv_cache"] input').uncheck()
    expect(page.locator(f"{KV} figure[data-player] > figcaption")).to_contain_text("without a KV cache", timeout=15_000)
    d = kv_fill_frames(False)
    total = sum(len(p.run) for p in serving.passes(len(d["prompt"]), len(d["reply"]), False))
    expect(page.locator(f"{KV} .descent-player__stage .descent-stat").nth(1)).to_contain_text(f"{total:,}")
    assert not page.descent_console_errors, page.descent_console_errors


def test_the_worker_answer_keeps_the_readers_place(make_page, site_dir, server):
    # Step before Python has started; the worker's first answer brings the same frames, and the
    # player must not jump back to the last one.
    page = make_page(viewport={"width": 1280, "height": 900})
    page.goto(page_url(site_dir, server, PAGE))
    root = page.locator(KV)
    root.scroll_into_view_if_needed()
    _button(page, KV, "first").click()
    page.wait_for_selector(f'{KV}[data-state="live"]', timeout=90_000)
    expect(_step_line(page, KV)).to_contain_text("Step 1 of")


def test_reduced_motion_plays_nothing_by_itself_and_drops_the_pulse(make_page, site_dir, server):
    pulses = {}
    for motion in ("no-preference", "reduce"):
        page = make_page(viewport={"width": 1280, "height": 900}, reduced_motion=motion)
        page.goto(page_url(site_dir, server, PAGE))
        page.locator(KV).scroll_into_view_if_needed()
        player = _player(page, KV)
        expect(player).to_have_attribute("data-player-ready", "true")
        start = player.get_attribute("data-at")
        page.wait_for_timeout(2_500)
        assert player.get_attribute("data-at") == start  # no autoplay, for anyone
        assert player.get_attribute("data-playing") == "false"
        _button(page, KV, "first").click()
        _button(page, KV, "next").click()
        cell = page.locator(f"{KV} .descent-player__stage .descent-cell.is-now").first
        pulses[motion] = cell.evaluate("c => getComputedStyle(c).animationName")
    assert pulses == {"no-preference": "descent-pulse", "reduce": "none"}


def test_without_javascript_the_last_frame_is_there(make_page, site_dir, server):
    page = make_page(viewport={"width": 1280, "height": 900}, java_script_enabled=False)
    page.goto(page_url(site_dir, server, PAGE))
    n = len(kv_fill_frames(True)["frames"])
    # Where a reader would read it: a widget far down the page is drawn as it nears the screen
    # (content-visibility; decision 0025), and an undrawn element has no rendered text.
    page.locator(KV).scroll_into_view_if_needed()
    expect(_step_line(page, KV)).to_contain_text(f"Step {n} of {n}:", use_inner_text=True)
    stage = page.locator(f"{KV} .descent-player__stage")
    assert stage.locator(".descent-grid").count() == 1
    assert _button(page, KV, "next").is_disabled() and _button(page, KV, "play").is_disabled()


def test_from_a_file_the_player_still_steps(make_page, site_dir):
    page = make_page(viewport={"width": 1280, "height": 900})
    page.goto((site_dir / f"{PAGE}.html").as_uri())
    root = page.locator(KV)
    root.scroll_into_view_if_needed()
    next_frames(page)
    assert root.get_attribute("data-state") == "static"
    assert page.locator(f'{KV} .descent-field[data-field="kv_cache"] input').is_disabled()
    n = len(kv_fill_frames(True)["frames"])
    expect(_step_line(page, KV)).to_contain_text(f"Step {n} of {n}:")
    _button(page, KV, "first").click()
    expect(_step_line(page, KV)).to_contain_text(f"Step 1 of {n}:")


def test_speculative_strip_shows_each_recorded_pass(make_page, site_dir, server):
    page = make_page(viewport={"width": 390, "height": 844})
    page.goto(page_url(site_dir, server, PAGE))
    page.locator(SPEC).scroll_into_view_if_needed()
    expect(_player(page, SPEC)).to_have_attribute("data-player-ready", "true")
    run = recorded.speculative_run()
    _button(page, SPEC, "first").click()
    expect(_step_line(page, SPEC)).to_contain_text(f"Step 1 of {run['passes']}: Pass 1, the prefill")
    stage = page.locator(f"{SPEC} .descent-player__stage")
    for i, r in enumerate(run["rounds"]):
        _button(page, SPEC, "next").click()
        expect(_step_line(page, SPEC)).to_contain_text(f"Step {i + 2} of {run['passes']}: Pass {i + 2}")
        assert stage.locator(".descent-chip.is-accepted").count() == r["accepted"]
    assert not page.descent_console_errors, page.descent_console_errors


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_players_have_no_serious_axe_violations(make_page, site_dir, server, scheme):
    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    page = make_page(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
    go_live(page, page_url(site_dir, server, PAGE), KV)
    for root in (KV, SPEC, LANES):
        page.locator(root).scroll_into_view_if_needed()
        expect(_player(page, root)).to_have_attribute("data-player-ready", "true")
        _button(page, root, "first").click()
        _button(page, root, "next").click()
        _button(page, root, "next").click()
    page.evaluate("() => document.querySelectorAll('.md-content__inner > *, .descent-grid')"
                  ".forEach(el => { el.style.contentVisibility = 'visible'; })")
    next_frames(page)
    bad = []
    for root in (KV, SPEC, LANES):
        res = axe_mod.Axe().run(page, context=root, options={"resultTypes": ["violations"]})
        bad += [f"{root}: {v['id']} ({v['help']}) {[n['target'] for n in v['nodes'][:3]]}"
                for v in res.response["violations"] if v["impact"] in ("serious", "critical")]
    assert not bad, "\n".join(bad)


def test_batching_lanes_step_and_switch_policy(make_page, site_dir, server):
    from descent.widgets.part3_motion import lanes_simulation, lanes_states

    page = make_page(viewport={"width": 1280, "height": 900})
    go_live(page, page_url(site_dir, server, PAGE), LANES)
    sim = lanes_simulation("continuous")
    states = lanes_states(sim)
    line = _step_line(page, LANES)
    expect(line).to_contain_text(f"Step {sim.steps} of {sim.steps}:")
    _button(page, LANES, "first").focus()
    page.keyboard.press("Home")
    expect(line).to_contain_text(f"Step 1 of {sim.steps}: Iteration 1")
    stage = page.locator(f"{LANES} .descent-player__stage")
    for k in range(4):
        if k:
            page.keyboard.press("ArrowRight")
            expect(line).to_contain_text(f"Iteration {k + 1}:")
        # The newest column is the simulator's step k: its slots' requests, and who waits.
        last = stage.locator("tbody tr").evaluate_all(
            "rows => rows.map(r => r.lastElementChild.className)")
        assert last == [f"descent-cell {cls}" for cls, _ in states[k]["slots"]]
        waiting = stage.locator(".descent-chips").first.locator(".descent-chip__text").all_inner_texts()
        assert waiting == ([f"R{i + 1}" for i in states[k]["waiting"]] or ["none"])
    page.locator(f'{LANES} .descent-field[data-field="policy"] input[value="static"]').check(force=True)
    static = lanes_simulation("static")
    expect(line).to_contain_text(f"Step {static.steps} of {static.steps}:", timeout=15_000)
    assert not page.descent_console_errors, page.descent_console_errors


def test_flash_tiles_and_the_ring_step_count_bytes_and_pass_axe(make_page, site_dir, server):
    from descent.units import format_bytes
    from descent.widgets.part4_motion import flash_tiles_frames

    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    TILES = '.descent-widget[data-widget="flash_tiles"]'
    page = make_page(viewport={"width": 390, "height": 844})
    go_live(page, page_url(site_dir, server, "part-4-hardware"), TILES)
    acc = page.locator(f'{TILES} .descent-field[data-field="accelerator"] select').input_value()
    seq = int(page.locator(f'{TILES} .descent-field[data-field="seq_len"] input[type=number]').input_value())
    d = flash_tiles_frames("flash", seq, acc)
    n = len(d["frames"])
    line = _step_line(page, TILES)
    expect(line).to_contain_text(f"Step {n} of {n}:")
    _button(page, TILES, "first").click()
    _button(page, TILES, "next").click()
    expect(line).to_contain_text(f"Step 2 of {n}: Load key block K1")
    stage = page.locator(f"{TILES} .descent-player__stage")
    expect(stage.locator(".descent-stat__number").first).to_have_text(format_bytes(d["bytes"][1], "auto", 3, trim=True))
    assert stage.locator("td.descent-cell.is-now").count() == 1
    res = axe_mod.Axe().run(page, context=TILES, options={"resultTypes": ["violations"]})
    bad = [v["id"] for v in res.response["violations"] if v["impact"] in ("serious", "critical")]
    assert not bad, bad
    page.locator(f'{TILES} .descent-field[data-field="kernel"] input[value="naive"]').check(force=True)
    naive = flash_tiles_frames("naive", seq, acc)
    expect(line).to_contain_text(f"Step {len(naive['frames'])} of {len(naive['frames'])}:", timeout=15_000)
    expect(stage.locator(".descent-stat__number").first).to_have_text(
        format_bytes(naive["bytes"][-1], "auto", 3, trim=True))
    # The all-reduce ring, further down the same page: the schedule's bytes, frame by frame.
    from descent.widgets.part4_motion import allreduce_ring_frames

    RING = '.descent-widget[data-widget="allreduce_ring"]'
    page.locator(RING).scroll_into_view_if_needed()
    expect(page.locator(f"{RING}[data-state=\"live\"]")).to_have_count(1, timeout=60_000)
    value = lambda f: page.locator(f'{RING} .descent-field[data-field="{f}"] :is(input[type=number], select, input:checked)').first.input_value()  # noqa: E731
    ring = allreduce_ring_frames(int(value("tp")), int(value("batch")), value("link"))["steps"]
    rline, rstage = _step_line(page, RING), page.locator(f"{RING} .descent-player__stage")
    expect(rline).to_contain_text(f"Step {len(ring)} of {len(ring)}:")
    _button(page, RING, "first").click()
    for k in range(1, 4):
        page.keyboard.press("ArrowRight")  # the focus stays on the First button: the keys step
        expect(rline).to_contain_text(f"Step {k + 1} of {len(ring)}: Reduce-scatter")
        expect(rstage.locator(".descent-stat__number").nth(1)).to_have_text(
            format_bytes(ring[k].sent_bytes, "auto", 3, trim=True))
        # Each GPU adds the shard it received; at the last reduce-scatter step that sum is complete.
        tp = int(value("tp"))
        expect(rstage.locator("td.descent-cell.is-now")).to_have_count(tp if k < tp - 1 else 0)
        expect(rstage.locator("td.descent-cell.is-done")).to_have_count(0 if k < tp - 1 else tp)
    res = axe_mod.Axe().run(page, context=RING, options={"resultTypes": ["violations"]})
    bad = [v["id"] for v in res.response["violations"] if v["impact"] in ("serious", "critical")]
    assert not bad, bad
    assert not page.descent_console_errors, page.descent_console_errors


def test_attention_any_token_by_click_and_keys(make_page, site_dir, server):
    from descent.widgets.part1_motion import first_previous_token_head

    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright")
    ANY = '.descent-widget[data-widget="attention_any"]'
    page = make_page(viewport={"width": 390, "height": 844})
    page.goto(page_url(site_dir, server, "part-1-the-transformer"))
    page.locator(ANY).scroll_into_view_if_needed()
    # Live first: the widget's first live result replaces its output, player and focused chip with it
    # (a click just before it arrived lost its focus in a clean-clone run).
    page.wait_for_selector(f'{ANY}[data-state="live"]', timeout=60_000)
    expect(_player(page, ANY)).to_have_attribute("data-player-ready", "true")
    a = recorded.attention_rows()
    n = len(a["tokens"])
    layer, head = first_previous_token_head()
    line, stage = _step_line(page, ANY), page.locator(f"{ANY} .descent-player__stage")
    expect(line).to_contain_text(f"Step {n} of {n}:")  # the last token: the one that picks the next
    # A click on the second token shows its fan: the record's weights over the first two tokens.
    stage.locator('[data-player-goto="1"]').click()
    expect(line).to_contain_text(f"Step 2 of {n}:")
    bars = stage.locator(".descent-bar__value").all_inner_texts()
    assert bars == [f"{w * 100:.1f}%" for w in a["weights"][layer - 1][head - 1][1]]
    expect(stage.locator('[data-player-goto="1"]')).to_have_attribute("aria-current", "true")
    expect(stage.locator('[data-player-goto="1"]')).to_be_focused()
    # The arrow keys on a token step to the next and keep the keyboard on the tokens.
    page.keyboard.press("ArrowRight")
    expect(line).to_contain_text(f"Step 3 of {n}:")
    expect(stage.locator('[data-player-goto="2"]')).to_be_focused()
    page.keyboard.press("Home")
    expect(line).to_contain_text(f"Step 1 of {n}:")
    assert stage.locator(".descent-bar").count() == 1  # the first token sees only itself
    res = axe_mod.Axe().run(page, context=ANY, options={"resultTypes": ["violations"]})
    bad = [v["id"] for v in res.response["violations"] if v["impact"] in ("serious", "critical")]
    assert not bad, bad
    assert not page.descent_console_errors, page.descent_console_errors


def test_distillation_point_by_chip(make_page, site_dir, server):
    from descent import published

    DIS = '.descent-widget[data-widget="distillation"]'
    page = make_page(viewport={"width": 1280, "height": 900})
    go_live(page, page_url(site_dir, server, "part-2-weights-as-numbers"), DIS)
    s1 = next(x for x in published.DISTILLED if x.name == "s1-32B")
    page.locator(f'{DIS} .descent-chip__button[data-set*="s1-32B"]').click()
    number = page.locator(f"{DIS} .descent-stat", has_text="AIME 2024 score").locator(".descent-stat__number")
    expect(number).to_have_text(f"{s1.score}%", timeout=15_000)
    expect(page.locator(f'{DIS} .descent-field[data-field="student"] select')).to_have_value("s1-32B")
    assert not page.descent_console_errors, page.descent_console_errors
