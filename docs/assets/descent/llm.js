// descent: the real model in the reader's browser, main-thread side.
//
// The load panel is the model_in_browser widget (descent/widgets/model.py): Python renders its
// buttons (data-action="load-model" / "remove-model", with a [data-action-message] line) and a
// [data-progress] bar; this script acts on them. The engine runs in llm-worker.js, a module Web
// Worker, so the page stays responsive while the model downloads and loads. widgets.js asks the
// engine through window.descentLLM.ask(request) (requests and answers: descent.engine) and runs its
// live widgets again when the model comes or goes ("descent:model" on document).
//
// A run that takes too long can be stopped (stop(): the Stop button widgets.js shows while a widget
// waits for the engine): the engine's worker is ended and the model started again from storage.
//
// Nothing is downloaded until the reader presses the button. Under file: no worker can start, so
// the button stays disabled and says why. A classic script, like widgets.js (Chromium refuses
// module scripts from file://); asset URLs resolve against this script's own URL.

(() => {
"use strict";

const SCRIPT_URL =
  (document.currentScript && document.currentScript.src) ||
  (document.querySelector('script[src*="assets/descent/llm.js"]') || {}).src ||
  location.href;
const WORKER_URL = new URL("llm-worker.js", SCRIPT_URL);
const MB = 1e6; // SI megabytes, as the button states the size
const MAX_ANSWERS = 64; // answers kept for this visit (a step slider moved back and forth, a seed tried again)

const state = { phase: "idle", message: "", stage: "", loaded: 0, total: 0, info: null }; // idle | loading | ready | failed
let worker = null;
let nextId = 1;
const pending = new Map(); // request id -> {resolve, reject}
const answers = new Map(); // canonical request -> Promise<answer>

function unavailable() {
  if (location.protocol === "file:") {
    // Plain text (the line is set with textContent): no Markdown marks (issue 24: backticks showed).
    return "Open this page from a web server (the published site, or the local one that nox -s serve starts) to run the model: a browser starts no worker for a page opened from a file.";
  }
  if (typeof Worker === "undefined" || typeof WebAssembly !== "object") {
    return "This browser cannot run the model here: it needs Web Workers and WebAssembly.";
  }
  return "";
}

// JSON with sorted keys: the same request always gives the same text.
function canonical(x) {
  if (Array.isArray(x)) return `[${x.map(canonical).join(",")}]`;
  if (x && typeof x === "object") return `{${Object.keys(x).sort().map((k) => `${JSON.stringify(k)}:${canonical(x[k])}`).join(",")}}`;
  return JSON.stringify(x);
}

function call(op, args) {
  return new Promise((resolve, reject) => {
    if (!worker) {
      reject(new Error("the model's worker is not running"));
      return;
    }
    const id = nextId++;
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, op, args });
  });
}

function onMessage(event) {
  const msg = event.data || {};
  if (msg.type === "progress") {
    Object.assign(state, { stage: msg.stage, loaded: msg.loaded, total: msg.total });
    render();
  } else if (msg.type === "reply") {
    const p = pending.get(msg.id);
    pending.delete(msg.id);
    if (!p) return;
    if (msg.ok) p.resolve(msg.result);
    else p.reject(new Error(msg.message || "unknown error"));
  }
}

function stopWorker(why) {
  if (worker) worker.terminate();
  worker = null;
  for (const p of pending.values()) p.reject(new Error(why));
  pending.clear();
  answers.clear();
}

function announce() {
  document.dispatchEvent(new CustomEvent("descent:model", { detail: { ready: state.phase === "ready" } }));
}

async function load() {
  if (state.phase === "loading" || state.phase === "ready" || unavailable()) return;
  Object.assign(state, { phase: "loading", message: state.message.startsWith("Stopped") ? state.message : "", stage: "download", loaded: 0, total: 0, info: null });
  render();
  try {
    worker = new Worker(WORKER_URL, { type: "module" });
    worker.addEventListener("message", onMessage);
    worker.addEventListener("error", (ev) => {
      ev.preventDefault();
      fail(ev.message || "the model's worker could not start");
    });
    state.info = await call("load", {});
  } catch (err) {
    fail(String((err && err.message) || err));
    return;
  }
  if (state.phase !== "loading") return;
  Object.assign(state, { phase: "ready", message: "Loaded: measuring its speed in your browser." });
  render();
  announce();
}

function fail(why) {
  if (state.phase !== "loading" && state.phase !== "ready") return;
  stopWorker(why);
  Object.assign(state, {
    phase: "failed",
    message: `Could not load the model: ${why}. The results below are still the ones recorded when the site was built.`,
  });
  render();
  announce();
}

async function remove() {
  if (state.phase !== "ready") return;
  try {
    await call("remove", {});
  } catch {
    // the worker is stopped below in any case
  }
  stopWorker("the model was removed");
  Object.assign(state, { phase: "idle", message: "Removed: nothing of the model is left in this browser's storage.", info: null });
  render();
  announce();
}

// A continuation (kind "text") may be served by a longer one already computed with the same
// settings: greedy and seeded decoding write the same first tokens whatever the length asked for.
function fromLonger(request) {
  if (request.kind !== "text") return null;
  const want = canonical({ ...request, steps: 0 });
  for (const [key, promise] of answers) {
    const other = JSON.parse(key);
    if (other.steps <= request.steps || canonical({ ...other, steps: 0 }) !== want) continue;
    return promise.then((a) =>
      a.steps.length <= request.steps ? a : { ...a, steps: a.steps.slice(0, request.steps), finish: "length" },
    );
  }
  return null;
}

// Runs the engine has not answered yet (a stop has something to stop only while one is out).
let running = 0;
// The message a stopped run is rejected with (widgets.js shows its own line for it: err.stopped).
const STOPPED = "stopped at your request";

// Stop the run that is out: the engine cannot be interrupted inside llama.cpp's computation, so its
// worker is ended (every run out rejected, err.stopped) and the model started again from this
// browser's storage (Cache Storage: no download), which takes seconds. Returns whether it stopped.
function stop() {
  if (state.phase !== "ready" || running === 0) return false;
  const why = new Error(STOPPED);
  why.stopped = true;
  if (worker) worker.terminate();
  worker = null;
  for (const p of pending.values()) p.reject(why);
  pending.clear();
  answers.clear();
  running = 0;
  Object.assign(state, { phase: "idle", message: "Stopped. Starting the model again from this browser's storage." });
  load();
  return true;
}

function ask(request, options) {
  if (state.phase !== "ready") return Promise.reject(new Error("the model is not loaded"));
  const useCache = !options || options.cache !== false;
  const key = canonical(request);
  if (useCache && answers.has(key)) return answers.get(key);
  const shorter = useCache && fromLonger(request);
  if (shorter) return shorter;
  const promise = call("ask", { request });
  running += 1;
  const done = () => { running = Math.max(0, running - 1); };
  promise.then(done, done);
  if (useCache) {
    answers.set(key, promise);
    promise.catch(() => answers.delete(key));
    while (answers.size > MAX_ANSWERS) answers.delete(answers.keys().next().value);
  }
  return promise;
}

function progressText() {
  const mb = (n) => (n / MB).toFixed(1);
  if (state.stage === "download") return `Downloading: ${mb(state.loaded)} of ${mb(state.total)} MB`;
  if (state.stage === "storage") return "Reading it from this browser's storage";
  return "Starting the engine";
}

// Bring every panel on the page in line with the state (panels are re-rendered by widgets.js).
function render() {
  const why = unavailable();
  for (const b of document.querySelectorAll('[data-action="load-model"]')) {
    b.disabled = !!why || state.phase === "loading" || state.phase === "ready";
    const line = b.parentElement && b.parentElement.querySelector("[data-action-message]");
    const text = why || state.message;
    if (line && text && line.textContent !== text) line.textContent = text;
  }
  for (const b of document.querySelectorAll('[data-action="remove-model"]')) b.disabled = state.phase !== "ready";
  for (const box of document.querySelectorAll("[data-progress]")) {
    box.hidden = state.phase !== "loading";
    const bar = box.querySelector("progress");
    if (bar) {
      if (state.stage === "engine" || !state.total) bar.removeAttribute("value");
      else bar.value = state.loaded / state.total;
    }
    const text = box.querySelector(".descent-progress__text");
    if (text && state.phase === "loading") text.textContent = progressText();
  }
}

document.addEventListener("click", (ev) => {
  const b = ev.target.closest && ev.target.closest("[data-action]");
  if (!b || b.disabled) return;
  if (b.dataset.action === "load-model") load();
  else if (b.dataset.action === "remove-model") remove();
});
document.addEventListener("descent:result", render); // a panel was re-rendered

window.descentLLM = {
  ready: () => state.phase === "ready",
  state: () => ({ phase: state.phase, message: state.message, stage: state.stage, loaded: state.loaded, total: state.total, info: state.info }),
  ask,
  load,
  remove,
  stop,
  running: () => running,
};

window.descentStart(render); // start.js: in a task of its own, after Material's start-up
window.descentEachPage(render);
})();
