// descent player: steps through a sequence of frames that Python computed once.
//
// The Python view (descent.widgets.views.player) renders <figure data-player>: five buttons
// (First, Back, Play, Next, Last; disabled in the HTML, since without JavaScript they could do
// nothing), a step line (aria-live="polite": "Step 3 of 12: ..."), a stage holding one frame's HTML
// (the complete picture a reader without JavaScript sees), and every frame as compact data in a
// <template class="descent-player__frames"> (views.player_data: the labels,
// the distinct pieces of HTML, each frame as a list of piece numbers). The page parses that as one
// text node; this script decodes it when the reader first steps, then only joins a frame's pieces
// into the stage: it never asks Python again, so it works offline and from file://, and a widget
// that recomputes (a toggle, in widgets.js) brings a whole new sequence.
//
// A frame may hold chips that jump to a frame (views.chip(goto=i), data-player-goto: Part 1's tokens,
// each showing where that token looks); the arrow keys on such a chip step too.
// Keys, with focus on the stage or a button: Left/Right step, Home/End go to the ends, Space on the
// stage plays or pauses. Play starts only when the reader asks (no autoplay, for anyone); it starts
// from the first frame when the last is showing, advances every PLAY_MS and stops at the last.
// While it plays, the step line stops announcing each frame (aria-live off); pausing announces
// where it stopped. prefers-reduced-motion: the CSS drops the cells' entrance animation, and Play
// still steps, one whole frame at a time. A classic script (file:// safe), like stream.js.
(function () {
  "use strict";
  const PLAY_MS = 900;
  const players = new WeakMap(); // figure -> state

  // {labels, pieces, frames} of a player, decoded once, on first use.
  function data(st) {
    if (st.data) return st.data;
    const el = st.fig.querySelector(":scope > template.descent-player__frames");
    let d = null;
    try {
      d = el && JSON.parse(el.content.textContent);
    } catch (e) {
      d = null;
    }
    st.data = d && Array.isArray(d.f) && Array.isArray(d.l) && Array.isArray(d.p) ? d : { l: [], p: [], f: [] };
    return st.data;
  }

  function state(fig) {
    let st = players.get(fig);
    if (st) return st;
    const n = Math.max(0, Number(fig.dataset.frames) || 0);
    const start = Math.min(n - 1, Math.max(0, Number(fig.dataset.start) || 0));
    st = { fig, n, at: start, timer: 0 };
    players.set(fig, st);
    return st;
  }

  function button(fig, act) {
    return fig.querySelector(`:scope > .descent-player__controls [data-player-do="${act}"]`);
  }

  function sync(st) {
    const { fig, n, at } = st;
    const playing = !!st.timer;
    // aria-disabled, not disabled: a button that just took the reader to the end keeps the focus.
    for (const [a, off] of [["first", at === 0], ["prev", at === 0], ["next", at === n - 1], ["last", at === n - 1]]) {
      button(fig, a).setAttribute("aria-disabled", off ? "true" : "false");
    }
    const play = button(fig, "play");
    play.disabled = n < 2;
    play.querySelector(".descent-player__word").textContent = playing ? "Pause" : "Play";
    play.querySelector(".descent-player__arrow").textContent = playing ? "\u275a\u275a" : "\u25b6";
    fig.dataset.playing = playing ? "true" : "false";
    fig.dataset.at = String(at);
  }

  function show(st, i, announce) {
    const d = data(st);
    const ids = d.f[i];
    if (!ids) return;
    st.at = i;
    const stage = st.fig.querySelector(":scope > .descent-player__stage");
    // The frame's HTML is the build's (or the worker's) own rendering, as the templates were.
    const t = document.createElement("template");
    t.innerHTML = ids.map((k) => d.p[k]).join("");
    stage.replaceChildren(t.content);
    const line = st.fig.querySelector(":scope > .descent-player__step");
    line.setAttribute("aria-live", announce ? "polite" : "off");
    line.textContent = `Step ${(i + 1).toLocaleString("en-US")} of ${st.n.toLocaleString("en-US")}: ${d.l[i]}`;
    enableGoto(st.fig);
    sync(st);
  }

  // A frame may hold buttons that jump to a frame (views.chip(goto=i): a token to look from);
  // disabled in the HTML, since without this script they could do nothing.
  function enableGoto(fig) {
    for (const b of fig.querySelectorAll(":scope > .descent-player__stage [data-player-goto]")) b.disabled = false;
  }

  function pause(st) {
    if (!st.timer) return;
    clearInterval(st.timer);
    st.timer = 0;
    show(st, st.at, true); // say where it stopped
  }

  function play(st) {
    if (st.timer || st.n < 2) return;
    if (st.at === st.n - 1) show(st, 0, false);
    st.timer = setInterval(() => {
      if (!st.fig.isConnected) {
        clearInterval(st.timer);
        st.timer = 0;
        return;
      }
      if (st.at + 1 >= st.n) pause(st);
      else {
        show(st, st.at + 1, false);
        if (st.at === st.n - 1) pause(st);
      }
    }, PLAY_MS);
    sync(st);
  }

  function act(fig, what) {
    const st = state(fig);
    if (what === "play") {
      if (st.timer) pause(st);
      else play(st);
      return;
    }
    pause(st);
    const to = typeof what === "number" ? what : { first: 0, prev: st.at - 1, next: st.at + 1, last: st.n - 1 }[what];
    if (to === undefined || to < 0 || to >= st.n || to === st.at) return;
    show(st, to, true);
  }

  function init(fig) {
    if (fig.dataset.playerReady) return;
    fig.dataset.playerReady = "true";
    const st = state(fig);
    for (const b of fig.querySelectorAll(":scope > .descent-player__controls [data-player-do]")) b.disabled = false;
    enableGoto(fig);
    sync(st);
  }

  function scan() {
    for (const fig of document.querySelectorAll("figure[data-player]")) init(fig);
  }

  document.addEventListener("click", (ev) => {
    const g = ev.target.closest && ev.target.closest("[data-player-goto]");
    const gfig = g && g.closest("figure[data-player]");
    if (gfig && !g.disabled && gfig.dataset.playerReady) {
      const i = Number(g.dataset.playerGoto);
      if (Number.isInteger(i) && i >= 0 && i < state(gfig).n) {
        act(gfig, i);
        // The clicked chip was replaced with the new frame: keep the focus on its successor.
        const again = gfig.querySelector(`:scope > .descent-player__stage [data-player-goto="${i}"]`);
        if (again) again.focus();
      }
      return;
    }
    const b = ev.target.closest && ev.target.closest("[data-player-do]");
    const fig = b && b.closest("figure[data-player]");
    if (!fig || b.disabled || b.getAttribute("aria-disabled") === "true") return;
    act(fig, b.dataset.playerDo);
  });

  const KEYS = { ArrowLeft: "prev", ArrowRight: "next", Home: "first", End: "last" };
  document.addEventListener("keydown", (ev) => {
    if (ev.altKey || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
    const t = ev.target;
    const fig = t && t.closest && t.closest("figure[data-player]");
    if (!fig || !fig.dataset.playerReady) return;
    const onStage = t.classList.contains("descent-player__stage");
    const onButton = t.matches("[data-player-do]");
    const onGoto = t.matches("[data-player-goto]");
    if (!onStage && !onButton && !onGoto) return; // a link or a scrolled grid inside the frame keeps its keys
    let what = KEYS[ev.key];
    if (!what && onStage && ev.key === " ") what = "play";
    if (!what) return;
    ev.preventDefault();
    act(fig, what);
    if (onGoto) { // the frame's own chip for where it went keeps the keyboard in the row
      const again = fig.querySelector(`:scope > .descent-player__stage [data-player-goto="${state(fig).at}"]`);
      if (again) again.focus();
    }
  });

  function start() {
    scan();
    // widgets.js swaps a widget's output when it recomputes: bind the new players.
    new MutationObserver(scan).observe(document.body, { childList: true, subtree: true });
  }
  window.descentStart(start); // start.js: in a task of its own, after Material's start-up
})();
