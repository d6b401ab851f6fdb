// descent widgets: binds the pre-rendered widgets to one shared Pyodide worker.
//
// Each widget arrives pre-rendered by descent.widgets.render_static (a form of real controls and
// the default result). This module never builds a result itself: it sends the form's raw values
// to worker.js, which runs descent.widgets.run_json in Pyodide, and puts the returned HTML in the
// output region. Root attribute data-state: static | loading | live | error.
//
// The worker starts lazily, as soon as a widget is on screen or touched (one animation frame later,
// so the page paints first; it no longer waits for the load event and an idle moment, which cost
// over a second before the first live result), once per visit: with
// Material's instant navigation this module stays loaded and document$ tells us about new pages.
// Under file: nothing starts; the page keeps its precomputed values, its controls are disabled (a
// control that changes nothing would mislead) and one sentence says how to make them live.
//
// Latest input wins: a widget has at most one request in the worker. Inputs changed meanwhile wait
// (only the newest is kept) and go when it answers; its reply, for older inputs, is then dropped.
// While a request is out the root has aria-busy="true" and descent-widget--busy, and an error
// shown for older inputs is cleared as soon as newer ones go.
//
// Constrained sliders (descent.widgets.Constraint) carry data-values: position i is that value.
// Every result brings the allowed values for the current inputs ("allowed"), and every request
// names the control the reader touched, so a broken rule is reported under that control.
//
// Live widgets (root attribute data-engine: trace | browser) can compute with the real model once the
// reader has loaded it (llm.js, window.descentLLM): their inputs then go to Python with the engine's
// answers so far; when Python needs another, it replies {need: request}, llm.js computes it and the
// inputs go again with the answer added (descent.engine). "descent:model" re-runs them.
//
// A classic script (no import/export, no import.meta), so it also runs when the site is opened
// from file://, where Chromium refuses module scripts (CORS); loaded as a module it works too.
// Asset URLs are resolved against this script's own URL, so any base path works.

(() => {
"use strict";

const SCRIPT_URL =
  (document.currentScript && document.currentScript.src) ||
  (document.querySelector('script[src*="assets/descent/widgets.js"]') || {}).src ||
  location.href;
const WORKER_URL = new URL("worker.js", SCRIPT_URL);

const MSG = {
  file: "Static copy: these results were computed when the site was built. Open the page from a web address (the published site or a local web server) rather than from a file to change the inputs.",
  loading: "Loading: starting Python in your browser (Pyodide, once per visit); the results shown are precomputed.",
  live: "Live: computed in your browser by the descent Python package.",
  liveModel: "Live: computed in your browser by the model (llama.cpp) and the descent Python package.",
  computing: "Computing: the model in your browser is working on this; the results shown are the previous ones.",
  working: "Computing: the results shown are for the previous inputs.",
  error: "Error: fix the marked input; the results shown are for the last valid inputs.",
  failed: (why) => `Static: the in-browser Python runtime could not start (${why}); the results shown are precomputed for the defaults.`,
};

const widgets = new Map(); // root element -> state
let worker = null;
let workerState = "idle"; // idle | loading | ready | failed
let failReason = "";
let nextId = 1;
const pending = new Map(); // request id -> state
const explaining = new Map(); // explain request id -> resolve (a widget's number opened: explain.js)
let explainWaiting = []; // explain requests made before the worker exists

const isFile = () => location.protocol === "file:";

function setState(st, state, message) {
  st.root.dataset.state = state;
  if (message !== undefined && st.status.textContent !== message) st.status.textContent = message;
}

// When the runtime starts (decisions 0021 and 0028). On a desktop, as soon as a widget is on screen
// (one frame after it is painted): a reader can use it at once, and the download (about 12 MB) is
// quick. On a phone (a coarse pointer), not before the page's largest paint is drawn and its load
// event has fired, and then at the reader's first touch, wheel or key, or after PHONE_QUIET_MS
// without one: the download and the boot compete with the page's own start-up for a phone's few
// cores (Lighthouse's phone run counted them as blocked time), and a reader who touches a widget
// starts the runtime at once anyway. Not "scroll": the page scrolls itself (to an address's
// fragment once its far blocks are drawn), and a finger's scroll starts with a touch.
const PHONE = typeof matchMedia === "function" && matchMedia("(pointer: coarse)").matches;
const PHONE_QUIET_MS = 5000;
const READER_EVENTS = ["touchstart", "pointerdown", "keydown", "wheel"];
let settled = !PHONE;
const afterSettled = [];

function settle() {
  if (settled) return;
  settled = true;
  for (const fn of afterSettled.splice(0)) fn();
}

if (!settled) {
  // The load event, then the first largest-contentful-paint entry (one is reported once that paint
  // is drawn; a browser without the entry type goes on at once), then one idle moment.
  const loaded = new Promise((resolve) => {
    if (document.readyState === "complete") resolve();
    else addEventListener("load", resolve, { once: true });
  });
  const painted = new Promise((resolve) => {
    try {
      if (!PerformanceObserver.supportedEntryTypes.includes("largest-contentful-paint")) return resolve();
      const po = new PerformanceObserver(() => {
        po.disconnect();
        resolve();
      });
      po.observe({ type: "largest-contentful-paint", buffered: true });
    } catch {
      resolve();
    }
  });
  // A gesture before the page has settled is remembered: the runtime then starts once it has.
  let pageSettled = false;
  let readerActed = false;
  const onReader = () => {
    readerActed = true;
    for (const type of READER_EVENTS) removeEventListener(type, onReader, { capture: true });
    if (pageSettled) settle();
  };
  for (const type of READER_EVENTS) addEventListener(type, onReader, { capture: true, passive: true });
  Promise.all([loaded, painted]).then(() => {
    pageSettled = true;
    if (readerActed) settle();
    else setTimeout(settle, PHONE_QUIET_MS);
  });
}

function ensureWorker(painted) {
  if (workerState !== "idle") return;
  workerState = "loading";
  // Pyodide's download and compile run in the worker, off the main thread; starting them one frame
  // after a widget comes on screen lets the page paint first without waiting for its load event.
  // An IntersectionObserver reports after a frame has been drawn (painted): no need to wait again.
  if (painted) startWorker();
  else requestAnimationFrame(() => setTimeout(startWorker, 0));
}

function startWorker() {
  if (workerState !== "loading" || worker) return;
  const early = window.descentEarlyWorker;
  window.descentEarlyWorker = null;
  try {
    worker = early ? early.worker : new Worker(WORKER_URL, { type: "module" });
  } catch (err) {
    fail(String(err && err.message ? err.message : err));
    return;
  }
  const failed = (ev) => {
    ev.preventDefault();
    fail(ev.message || "the worker script failed to load");
  };
  worker.addEventListener("message", onWorkerMessage);
  worker.addEventListener("error", failed);
  if (early) {
    // The worker the page's <head> started on a desktop (overrides/main.html): what it said before
    // this script ran is handled now, in order, and nothing more is kept aside.
    worker.removeEventListener("message", early.keep);
    worker.removeEventListener("error", early.keep);
    for (const ev of early.early) {
      if (!worker) break; // it failed
      if (ev.type === "error") failed(ev);
      else onWorkerMessage(ev);
    }
  }
  if (!worker) return;
  announcePage();
  for (const msg of explainWaiting) worker.postMessage(msg);
  explainWaiting = [];
}

// The worker warms every widget while the reader is idle (worker.js): it is told this page's
// widgets, in page order, so that they are warmed before the rest.
function announcePage() {
  if (!worker) return;
  const names = [...document.querySelectorAll(".descent-widget[data-widget]")].map((el) => el.dataset.widget);
  worker.postMessage({ type: "page", widgets: [...new Set(names)] });
}

// The runtime the page's <head> started on a desktop is adopted once the first page's widgets are
// bound: each goes live when it comes on screen, as before, but the runtime is loading already.
function adoptEarlyWorker() {
  if (!window.descentEarlyWorker) return;
  if (workerState !== "idle" || isFile()) {
    window.descentEarlyWorker.worker.terminate();
    window.descentEarlyWorker = null;
    return;
  }
  workerState = "loading";
  startWorker();
}

function fail(why) {
  workerState = "failed";
  failReason = why;
  if (worker) worker.terminate();
  worker = null;
  pending.clear();
  for (const resolve of explaining.values()) resolve({ ok: false, message: MSG.failed(why) });
  explaining.clear();
  explainWaiting = [];
  for (const st of live()) {
    st.inflight = 0;
    setBusy(st, false);
    if (st.active) freeze(st, MSG.failed(why));
  }
}

// A widget that cannot recompute: its controls are disabled, so none can show a value the results
// below do not match.
function freeze(st, message) {
  for (const c of st.form.querySelectorAll("input, select, textarea, button")) c.disabled = true;
  for (const b of st.out.querySelectorAll("button[data-set]")) b.disabled = true;
  if (st.tries) for (const b of st.tries.querySelectorAll("button[data-try]")) b.disabled = true;
  setState(st, "static", message);
}

function live() {
  // Widgets still in the document (instant navigation removes old pages' widgets).
  const out = [];
  for (const [root, st] of widgets) {
    if (root.isConnected) out.push(st);
    else widgets.delete(root);
  }
  return out;
}

function onWorkerMessage(event) {
  const msg = event.data || {};
  if (msg.type === "ready") {
    workerState = "ready";
    // For nox -s bench (tools/bench.py): how long each start-up step took in the worker.
    window.descentRuntime = { readyMs: msg.ms, timings: msg.timings || {}, startedAt: msg.origin - performance.timeOrigin, results: [] };
    for (const st of live()) if (st.active) send(st);
  } else if (msg.type === "failed") {
    fail(msg.message || "unknown error");
  } else if (msg.type === "explained") {
    const resolve = explaining.get(msg.id);
    explaining.delete(msg.id);
    if (resolve) resolve(msg);
  } else if (msg.type === "result") {
    const st = pending.get(msg.id);
    pending.delete(msg.id);
    // For nox -s bench: the first results' widget, Python time and end (ms since the worker started).
    const seen = window.descentRuntime && window.descentRuntime.results;
    if (seen && msg.ms !== undefined && seen.length < 200) seen.push({ widget: st && st.root.dataset.widget, ms: msg.ms, at: msg.at });
    if (!st) return;
    if (st.inflight === msg.id) st.inflight = 0;
    if (st.waiting && st.root.isConnected) {
      // Newer inputs are waiting: this reply is for older ones; the newest go now.
      st.waiting = false;
      send(st);
      return;
    }
    if (msg.id !== st.latest || !st.root.isConnected) return; // stale reply
    if (msg.allowed) applyAllowed(st, msg.allowed);
    if (msg.ok && msg.need) askModel(st, msg.need);
    else if (msg.ok) {
      st.shown = st.inputs; // the inputs of the results on screen: a number opened is derived at these
      showResult(st, msg.html, msg.engine);
    }
    else showError(st, msg.field, msg.message);
  }
}

function setBusy(st, busy) {
  if (busy) st.root.setAttribute("aria-busy", "true");
  else st.root.removeAttribute("aria-busy");
  st.root.classList.toggle("descent-widget--busy", busy);
}

// What a reader can focus in a widget's output: chips, cells, a player's buttons, links.
const FOCUSABLE = 'a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])';

// The output's control the reader has focused, if any: its place among the output's controls and
// its text, so that the same control in the new result gets the focus back (a result replaces
// every node of the output, and a removed node takes the focus with it).
function focusedInOutput(st) {
  const el = document.activeElement;
  if (!el || el === st.out || !st.out.contains(el)) return null;
  return { place: [...st.out.querySelectorAll(FOCUSABLE)].indexOf(el), text: el.textContent };
}

function refocus(st, was) {
  if (!was || st.out.contains(document.activeElement)) return;
  const all = [...st.out.querySelectorAll(FOCUSABLE)];
  const same = all[was.place] && all[was.place].textContent === was.text ? all[was.place]
    : all.find((el) => el.textContent === was.text) || all[was.place];
  if (same) same.focus({ preventScroll: true });
}

function showResult(st, html, engine) {
  const was = focusedInOutput(st);
  setBusy(st, false);
  stopButton(st, false);
  // A frame player (views.player, player.js) that the new result brings unchanged (the same data-key)
  // stays as it is: the reader keeps the step they were on, and a playing one keeps playing.
  const t = document.createElement("template");
  t.innerHTML = html;
  for (const fig of t.content.querySelectorAll("figure[data-player][data-key]")) {
    const old = st.out.querySelector(`figure[data-player][data-key="${CSS.escape(fig.dataset.key)}"]`);
    if (old) fig.replaceWith(old);
  }
  st.out.replaceChildren(t.content);
  refocus(st, was);
  if (engine && "engine" in st.root.dataset) st.root.dataset.engine = engine;
  st.root.dispatchEvent(new CustomEvent("descent:result", { bubbles: true }));
  applyLimits(st);
  clearErrors(st);
  setState(st, "live", engine === "browser" ? MSG.liveModel : MSG.live);
}

// A result may narrow number inputs (a "limits" view: <div hidden data-limits='{"step": {"max": 22}}'>):
// the control's ends follow the result, e.g. the step slider of a 23-step reply ends at 22. A value
// past the new end moves to it; the result already says it showed that end (the Python note).
function applyLimits(st) {
  const el = st.out.querySelector("[data-limits]");
  if (!el) return;
  let limits;
  try {
    limits = JSON.parse(el.dataset.limits);
  } catch {
    return;
  }
  for (const [name, lim] of Object.entries(limits)) {
    const f = st.form.querySelector(`.descent-field[data-field="${CSS.escape(name)}"]`);
    const num = f && f.querySelector(".descent-field__number");
    if (!num) continue;
    const range = f.querySelector(".descent-field__range");
    for (const key of ["min", "max"]) {
      if (!(key in lim)) continue;
      num[key] = String(lim[key]);
      if (range) range[key] = String(range.dataset.log ? Math.log10(lim[key]) : lim[key]);
    }
    const v = Number(num.value);
    const clamped = Math.min("max" in lim ? lim.max : v, Math.max("min" in lim ? lim.min : v, v));
    if (Number.isFinite(v) && clamped !== v) {
      num.value = String(clamped);
      if (range) numberToSlider(num, range);
    }
  }
}

function clearErrors(st) {
  for (const f of st.form.querySelectorAll(".descent-field")) {
    const slot = f.querySelector(".descent-field__error");
    if (slot && slot.textContent) slot.textContent = "";
    for (const c of f.querySelectorAll("[aria-invalid]")) c.removeAttribute("aria-invalid");
    f.classList.remove("descent-field--invalid");
  }
}

function showError(st, field, message) {
  setBusy(st, false);
  stopButton(st, false);
  clearErrors(st);
  const f = field ? st.form.querySelector(`.descent-field[data-field="${CSS.escape(field)}"]`) : null;
  if (f) {
    f.classList.add("descent-field--invalid");
    f.querySelector(".descent-field__error").textContent = message;
    for (const c of f.querySelectorAll("input, select, textarea")) {
      if (c.type !== "range" && c.type !== "radio") c.setAttribute("aria-invalid", "true");
    }
    setState(st, "error", MSG.error);
  } else {
    setState(st, "error", `Error: ${message}`);
  }
}

// A constrained slider steps through the allowed values only: its positions are 0..n-1 and
// data-values holds the values. Python sends the new lists after every change.
function applyAllowed(st, allowed) {
  for (const [name, values] of Object.entries(allowed)) {
    const f = st.form.querySelector(`.descent-field[data-field="${CSS.escape(name)}"]`);
    const range = f && f.querySelector(".descent-field__range[data-values]");
    if (!range || !Array.isArray(values)) continue;
    const text = JSON.stringify(values);
    if (range.dataset.values === text) continue;
    range.dataset.values = text;
    range.max = String(Math.max(values.length - 1, 0));
    range.disabled = values.length < 2;
    numberToSlider(f.querySelector(".descent-field__number"), range);
  }
}

function sliderValues(range) {
  try {
    return JSON.parse(range.dataset.values);
  } catch {
    return null;
  }
}

// Write a value into a field's control(s), as if the reader had typed or picked it.
function setField(st, name, value) {
  const f = st.form.querySelector(`.descent-field[data-field="${CSS.escape(name)}"]`);
  if (!f) return;
  switch (f.dataset.kind) {
    case "range":
    case "number": {
      const num = f.querySelector(".descent-field__number");
      num.value = value;
      const range = f.querySelector(".descent-field__range");
      if (range) numberToSlider(num, range);
      break;
    }
    case "select":
      f.querySelector("select").value = value;
      break;
    case "segmented":
      for (const r of f.querySelectorAll("input[type=radio]")) r.checked = r.value === value;
      break;
    case "toggle":
      f.querySelector("input[type=checkbox]").checked = value === "true";
      break;
    case "text":
      f.querySelector("textarea, input").value = value;
      break;
  }
}

// Clickable outputs (views built with set={...}): <button data-set='{"field": "value"}'>.
function onOutputClick(st, ev) {
  const b = ev.target.closest("[data-set]");
  if (!b || !st.out.contains(b) || isFile() || workerState === "failed") return;
  let values;
  try {
    values = JSON.parse(b.dataset.set);
  } catch {
    return;
  }
  for (const [name, value] of Object.entries(values)) setField(st, name, String(value));
  st.touched = Object.keys(values)[0] || "";
  applyWhen(st);
  schedule(st);
}

// "Try it" (descent.widgets.render_tries): <button data-try='{"field": "value"}'> under the widget.
// The form goes back to the values it was drawn with (each control's HTML default: what the hint
// was written and tested from), then the try's inputs are set and the widget recomputes.
function onTry(st, ev) {
  const b = ev.target.closest("button[data-try]");
  if (!b || !st.tries.contains(b) || b.disabled || isFile() || workerState === "failed") return;
  let values;
  try {
    values = JSON.parse(b.dataset.try);
  } catch {
    return;
  }
  st.form.reset();
  for (const pair of st.form.querySelectorAll(".descent-field__pair")) {
    numberToSlider(pair.querySelector(".descent-field__number"), pair.querySelector(".descent-field__range"));
  }
  for (const [name, value] of Object.entries(values)) setField(st, name, String(value));
  st.touched = Object.keys(values)[0] || "";
  applyWhen(st);
  schedule(st);
}

// Fields declared with when=(input, values) show only while that input holds one of the values
// (data-when-values, a JSON list of strings): a control that changes nothing is not offered.
function controlValue(st, name) {
  const f = st.form.querySelector(`.descent-field[data-field="${CSS.escape(name)}"]`);
  if (!f) return null;
  const kind = f.dataset.kind;
  const c = kind === "segmented" ? f.querySelector("input[type=radio]:checked")
    : kind === "range" || kind === "number" ? f.querySelector(".descent-field__number")
    : f.querySelector("select");
  return c ? c.value.trim() : null;
}

function applyWhen(st) {
  for (const f of st.form.querySelectorAll(".descent-field[data-when-field]")) {
    let values = [];
    try {
      values = JSON.parse(f.dataset.whenValues || "[]");
    } catch {
      values = [];
    }
    const show = values.includes(controlValue(st, f.dataset.whenField));
    if (f.hidden === show) f.hidden = !show;
  }
}

function readInputs(st) {
  const inputs = {};
  for (const f of st.form.querySelectorAll(".descent-field")) {
    if (f.hidden) continue; // not in use: the input keeps its default
    const name = f.dataset.field;
    switch (f.dataset.kind) {
      case "range":
      case "number": {
        // A number box reports text it cannot parse (e.g. "1e999") as "": send NaN instead, so the
        // reader gets the allowed range rather than "is empty".
        const num = f.querySelector(".descent-field__number");
        inputs[name] = num.validity && num.validity.badInput ? "NaN" : num.value;
        break;
      }
      case "select":
        inputs[name] = f.querySelector("select").value;
        break;
      case "segmented": {
        const c = f.querySelector("input[type=radio]:checked");
        if (c) inputs[name] = c.value;
        break;
      }
      case "toggle":
        inputs[name] = f.querySelector("input[type=checkbox]").checked;
        break;
      case "text":
        inputs[name] = f.querySelector("textarea, input").value;
        break;
    }
  }
  return inputs;
}

function send(st) {
  if (workerState !== "ready" || !worker) return;
  if (st.stopped) {
    // The reader stopped the model's run for these inputs: only different inputs run again (a
    // "change" event as the prompt box loses focus to the Stop button brings the same ones).
    if (JSON.stringify(readInputs(st)) === JSON.stringify(st.inputs)) return;
    st.stopped = false;
  }
  if (st.inflight) {
    st.waiting = true; // sent when the request out answers (latest input wins)
    setBusy(st, true);
    staleError(st);
    return;
  }
  const inputs = readInputs(st);
  if (JSON.stringify(inputs) !== JSON.stringify(st.inputs)) staleError(st);
  st.inputs = inputs;
  st.answers = [];
  st.rounds = 0;
  post(st);
}

// An error shown for inputs the reader has since changed no longer applies: clear it while the
// new inputs are computed (a reply brings the new error, if any).
function staleError(st) {
  if (st.root.dataset.state !== "error") return;
  clearErrors(st);
  setState(st, "loading", MSG.working);
}

// Post the widget's inputs (and, for a live widget while the model is loaded, the engine's answers).
function post(st) {
  const id = nextId++;
  st.latest = id;
  st.inflight = id;
  pending.set(id, st);
  setBusy(st, true);
  const msg = { id, widget: st.name, inputs: st.inputs, touched: st.touched || "" };
  if (modelReady(st)) msg.answers = st.answers;
  worker.postMessage(msg);
}

const modelReady = (st) => "engine" in st.root.dataset && !!window.descentLLM && window.descentLLM.ready();

// Python needs the model to compute `request` first (descent.engine): ask llm.js, then post the
// same inputs again with the answer. Changed inputs meanwhile make the answer stale: it is dropped.
// The engine takes a while per request, so a request waits for typing to pause (ENGINE_WAIT_MS).
const MAX_ROUNDS = 32;
const ENGINE_WAIT_MS = 300;
function askModel(st, request) {
  const id = st.latest;
  if (!modelReady(st)) {
    showError(st, null, "the model in your browser is not loaded; load it again above");
    return;
  }
  if (++st.rounds > MAX_ROUNDS) {
    showError(st, null, `the model in your browser was asked ${MAX_ROUNDS} times without giving what this widget needs`);
    return;
  }
  clearErrors(st); // an error for earlier inputs no longer applies while these are computed
  setState(st, "loading", MSG.computing);
  setTimeout(() => {
    if (st.latest === id && st.root.isConnected) compute(st, id, request);
  }, ENGINE_WAIT_MS);
}

// While a widget waits for the engine, a Stop button beside its status line (llm.js stop()).
function stopButton(st, shown) {
  if (!st.stopButton) {
    if (!shown) return;
    const b = document.createElement("button");
    b.type = "button";
    b.className = "md-button descent-widget__stop";
    b.textContent = "Stop";
    b.setAttribute("aria-label", "Stop the model's run");
    b.addEventListener("click", () => {
      if (window.descentLLM && window.descentLLM.stop) window.descentLLM.stop();
    });
    st.status.insertAdjacentElement("afterend", b);
    st.stopButton = b;
  }
  st.stopButton.hidden = !shown;
}

function compute(st, id, request) {
  stopButton(st, true);
  window.descentLLM.ask(request).then(
    (answer) => {
      if (st.latest === id) stopButton(st, false);
      if (st.latest !== id || !st.root.isConnected) return;
      st.answers.push({ request, answer });
      post(st);
    },
    (err) => {
      if (st.latest !== id) return;
      stopButton(st, false);
      if (err && err.stopped) {
        st.stopped = true; // not run again, even when the model is back: only new inputs run (send)
        showError(st, null, "stopped at your request; change the inputs to compute again");
      } else {
        showError(st, null, `the model in your browser could not compute this (${err.message})`);
      }
    },
  );
}

// The model was loaded or removed: live widgets compute again, from the engine or the traces (not
// a widget whose run the reader stopped: it waits for new inputs).
document.addEventListener("descent:model", () => {
  for (const st of live()) if (st.active && "engine" in st.root.dataset) send(st);
});

// A change is sent in a task of its own right after the event that made it (every listener of that
// event has run: a slider's twin box and the fields offered `when` are up to date), not at the next
// frame: a frame is up to 16 ms, and a request already out holds later changes anyway (send: the
// latest inputs go when it answers). A MessageChannel's message is such a task, without the 4 ms a
// nested setTimeout may wait.
const soon = (() => {
  const queue = [];
  const channel = new MessageChannel();
  channel.port1.onmessage = () => queue.shift()();
  return (fn) => {
    queue.push(fn);
    channel.port2.postMessage(0);
  };
})();

function schedule(st) {
  if (isFile() || workerState === "failed") return;
  activate(st);
  if (st.queued) return;
  st.queued = true;
  soon(() => {
    st.queued = false;
    send(st);
  });
}

// `seen`: called by the widget's IntersectionObserver (on screen, painted); otherwise the reader
// touched it (focus, pointer, an input).
function activate(st, seen) {
  if (st.active || isFile()) return;
  if (st.observer) st.observer.disconnect();
  if (workerState === "failed") {
    st.active = true;
    freeze(st, MSG.failed(failReason));
    return;
  }
  if (seen && !settled && workerState === "idle") {
    // A phone before its largest paint: the runtime starts once the page has settled.
    if (!st.waitingToSettle) {
      st.waitingToSettle = true;
      afterSettled.push(() => activate(st, true));
    }
    return;
  }
  st.active = true;
  ensureWorker(seen);
  if (workerState === "ready") send(st);
  else if (workerState === "loading") setState(st, "loading", MSG.loading);
}

// Range slider <-> number box. A log slider holds log10(value).
function decimalsOf(step) {
  // "0.05" -> 2, "1" -> 0, "1e-05" -> 5, "2.5e-3" -> 4
  const [mant, exp] = String(step).toLowerCase().split("e");
  const frac = mant.includes(".") ? mant.length - mant.indexOf(".") - 1 : 0;
  return Math.min(20, Math.max(0, frac - Number(exp || 0)));
}

function sliderToNumber(range, num) {
  const values = range.dataset.values ? sliderValues(range) : null;
  if (values && values.length) {
    const v = values[Math.min(values.length - 1, Math.max(0, Math.round(Number(range.value))))];
    num.value = String(v);
    const unit = range.getAttribute("aria-valuetext")?.split(" ").slice(1).join(" ");
    range.setAttribute("aria-valuetext", unit ? `${v} ${unit}` : String(v));
    return;
  }
  let v = Number(range.value);
  const min = Number(num.min), max = Number(num.max), step = Number(num.step);
  if (range.dataset.log) v = Number(Math.pow(10, v).toPrecision(3));
  if (Number.isFinite(step) && step > 0) v = Math.round((v - min) / step) * step + min;
  v = Math.min(max, Math.max(min, v));
  const text = v.toFixed(decimalsOf(num.step));
  num.value = text;
  if (range.dataset.log) {
    const unit = range.getAttribute("aria-valuetext")?.split(" ").slice(1).join(" ");
    range.setAttribute("aria-valuetext", unit ? `${text} ${unit}` : text);
  }
}

function numberToSlider(num, range) {
  const v = Number(num.value.replace(/[,_]/g, ""));
  if (num.value.trim() === "" || !Number.isFinite(v) || v < Number(num.min) || v > Number(num.max)) return;
  const values = range.dataset.values ? sliderValues(range) : null;
  if (values) {
    // The nearest allowed position; a typed value that is not allowed gets its message from Python.
    let best = 0;
    values.forEach((x, i) => {
      if (Math.abs(x - v) < Math.abs(values[best] - v)) best = i;
    });
    range.value = String(best);
    const unit = range.getAttribute("aria-valuetext")?.split(" ").slice(1).join(" ");
    range.setAttribute("aria-valuetext", unit ? `${num.value} ${unit}` : num.value);
  } else if (range.dataset.log) {
    if (v <= 0) return;
    range.value = String(Math.log10(v));
    const unit = range.getAttribute("aria-valuetext")?.split(" ").slice(1).join(" ");
    range.setAttribute("aria-valuetext", unit ? `${num.value} ${unit}` : num.value);
  } else {
    range.value = String(v);
  }
}

// late: a far widget whose controls lazy.js drew after the start (descent:drawn): it goes live when
// seen, like any widget on the first page, not at once because the runtime is loading for another.
function bind(root, late = false) {
  if (widgets.has(root)) return;
  const form = root.querySelector(".descent-widget__form");
  const out = root.querySelector(".descent-widget__output");
  const status = root.querySelector(".descent-widget__status");
  if (!form || !out || !status) return;
  const tries = root.querySelector(".descent-widget__tries");
  const st = { root, form, out, status, tries, name: root.dataset.widget, active: false, latest: 0, inflight: 0, waiting: false, raf: 0, observer: null, touched: "" };
  widgets.set(root, st);
  st.drawn = readInputs(st); // the inputs the pre-rendered results are for
  form.addEventListener("submit", (ev) => ev.preventDefault());

  applyWhen(st); // a browser may restore form values on reload: show the fields they call for
  if (isFile()) {
    freeze(st, MSG.file);
    return;
  }
  // With JavaScript on, the pre-rendered results are ready, not a fallback: say so until the
  // runtime takes over (descent.widgets.READY_STATUS, carried by the status line's data-ready).
  if (status.dataset.ready && root.dataset.state === "static") setState(st, "static", status.dataset.ready);
  // The control the reader changed last: a broken rule between inputs is reported under it.
  const touch = (ev) => {
    const f = ev.target.closest && ev.target.closest(".descent-field");
    if (f) st.touched = f.dataset.field;
  };
  form.addEventListener("input", touch, true);
  form.addEventListener("change", touch, true);

  for (const pair of form.querySelectorAll(".descent-field__pair")) {
    const range = pair.querySelector(".descent-field__range");
    const num = pair.querySelector(".descent-field__number");
    range.addEventListener("input", () => {
      sliderToNumber(range, num);
      schedule(st);
    });
    num.addEventListener("input", () => {
      numberToSlider(num, range);
      schedule(st);
    });
  }
  form.addEventListener("input", (ev) => {
    applyWhen(st);
    if (!ev.target.closest(".descent-field__pair")) schedule(st);
  });
  form.addEventListener("change", (ev) => {
    applyWhen(st);
    // The "change" a text box fires as it loses focus (say, to a button in the output) repeats the
    // inputs its "input" events already sent: sending them again would mark the widget busy and
    // disable the output's buttons just as the reader's click reaches one.
    if (st.inputs && !st.inflight && JSON.stringify(readInputs(st)) === JSON.stringify(st.inputs)) return;
    if (!ev.target.closest(".descent-field__pair")) schedule(st);
  });
  out.addEventListener("click", (ev) => onOutputClick(st, ev));
  if (tries) {
    for (const b of tries.querySelectorAll("button[data-try]")) b.hidden = false;
    tries.addEventListener("click", (ev) => onTry(st, ev));
  }
  form.addEventListener("focusin", () => activate(st));
  form.addEventListener("pointerdown", () => activate(st));

  if (!late && (workerState === "ready" || workerState === "loading")) {
    // The runtime is (being) loaded already: a widget on a later page goes live at once.
    activate(st);
  } else if ("IntersectionObserver" in window) {
    st.observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) activate(st, true);
    });
    st.observer.observe(root);
  } else {
    activate(st);
  }
  if (workerState === "failed") freeze(st, MSG.failed(failReason));
}

function bindAll() {
  for (const root of document.querySelectorAll(".descent-widget[data-widget]")) bind(root);
  announcePage();
}

// explain.js asks for the derivation of a widget's number (data-quantity) at the inputs of the
// results on screen (the drawn ones until a result arrives); the worker computes it. Resolves with
// the worker's reply: {ok, html, value, formula, label, printed} or {ok: false, message}.
function explainNumber(root, quantity) {
  const st = widgets.get(root);
  if (!st) return Promise.resolve({ ok: false, message: "this calculator is not ready yet" });
  if (isFile()) return Promise.resolve({ ok: false, message: MSG.file });
  if (workerState === "failed") return Promise.resolve({ ok: false, message: MSG.failed(failReason) });
  if (!st.shown) st.shown = st.drawn;
  activate(st);
  return new Promise((resolve) => {
    const id = nextId++;
    explaining.set(id, resolve);
    const msg = { type: "explain", id, widget: st.name, inputs: st.shown, quantity };
    if (worker) worker.postMessage(msg);
    else explainWaiting.push(msg);
  });
}

window.descentWidgets = Object.freeze({ explain: explainNumber });

// A far widget's controls arrive later (lazy.js draws them near the screen or after the load).
document.addEventListener("descent:drawn", (ev) => bind(ev.target, true));

// Bind what is on the page once the DOM is parsed, then every page Material's instant navigation
// swaps in, each in a task of its own after Material's start-up (start.js, decision 0025).
window.descentStart(() => {
  bindAll();
  adoptEarlyWorker();
});
window.descentEachPage(bindAll);
})();
