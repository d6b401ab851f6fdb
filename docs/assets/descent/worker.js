// descent widget worker (module Web Worker): runs the descent Python package in Pyodide.
//
// Protocol (postMessage):
//   main -> worker  {id, widget, inputs, touched, answers?}   inputs: {name: raw value (string | number | boolean)};
//                                                   touched: the input the reader changed ("" if none);
//                                                   answers: what the model in the browser has computed
//                                                   for this widget (llm.js), absent while it is not
//                                                   loaded (descent.widgets.run: "live" widgets)
//   worker -> main  {type: "ready", ms, timings}   once Pyodide and the wheel are loaded (timings: ms
//                                                   spent on each start-up step, for nox -s bench)
//                   {type: "failed", message} when start-up failed (the page keeps its static values)
//                   {type: "result", id, ok: true, html, allowed, engine?} | {type: "result", id, ok: false, field, message, allowed}
//                   | {type: "result", id, ok: true, need}: a live widget needs the model to compute `need` first
//                   allowed: {slider name: [values it may step through now]} (constrained sliders only)
//   main -> worker  {type: "explain", id, widget, inputs, quantity}: a widget's number opened (explain.js)
//   worker -> main  {type: "explained", id, ok, html, value, formula, label, printed} | {..., ok: false, message}:
//                   its derivation at those inputs (descent.widgets.explain_json), the formulas typeset by
//                   KaTeX here (../katex/katex.min.js and derivations.json load on the first one only)
//
// Every URL is resolved relative to this module, so the site works under any base path, and
// nothing is fetched from another origin: Pyodide's core and its memory snapshot are vendored in
// ../pyodide/ and the wheel in ./wheels/ (all written by descent.site.runtime.on_post_build).
//
// The network guard (guard.js) runs first, before Pyodide or any Python exists: its module is this
// module's only static import, evaluated before this body, which calls it before anything else.
// A page's <meta> policy does not reach a worker, and a host without headers (GitHub Pages) sends
// none (descent.site.csp): so the worker itself refuses to reach beyond the site's own origin
// (guard.js says what it covers). This worker starts no nested worker, so none may start. What a
// script cannot wrap, only the header policy stops: a dynamic import() of another origin (a
// language form, not a function), eval and new Function.

import { guard } from "./guard.js";

guard({ workers: "none" });

const PYODIDE_URL = new URL("../pyodide/", import.meta.url);
const WHEELS_URL = new URL("wheels/", import.meta.url);

let runJson = null;
let explainJson = null;
let py = null;
let widgetNames = null;
const queue = [];
const timings = {};

// The manifest names the wheel (its hash in the query defeats stale caches).
async function fetchWheel() {
  const manifest = await (await fetch(new URL("manifest.json", WHEELS_URL))).json();
  const resp = await fetch(new URL(`${manifest.wheel}?v=${manifest.sha256.slice(0, 16)}`, WHEELS_URL));
  if (!resp.ok) throw new Error(`wheel ${manifest.wheel}: HTTP ${resp.status}`);
  return new Uint8Array(await resp.arrayBuffer());
}

async function fetchSnapshot() {
  const resp = await fetch(new URL("pyodide-snapshot.bin", PYODIDE_URL));
  if (!resp.ok) throw new Error(`pyodide-snapshot.bin: HTTP ${resp.status}`);
  return resp.arrayBuffer();
}

async function start() {
  const t0 = performance.now();
  const lap = (name, since) => (timings[name] = Math.round(performance.now() - since));
  // Everything the start-up downloads is requested at once: the wheel and the memory snapshot
  // download while pyodide.mjs is imported and Pyodide compiles (the boot is CPU-bound).
  const wheel = fetchWheel();
  wheel.catch(() => {}); // reported by the await below, not as an unhandled rejection
  const snapshot = fetchSnapshot();
  snapshot.catch(() => {}); // a failed fetch is handled below, not an unhandled rejection
  const { loadPyodide } = await import(new URL("pyodide.mjs", PYODIDE_URL).href);
  lap("import_pyodide_mjs", t0);
  const config = {
    indexURL: PYODIDE_URL.href,
    packageBaseUrl: PYODIDE_URL.href,
    lockFileURL: new URL("pyodide-lock.json", PYODIDE_URL).href,
  };
  let pyodide;
  let t = performance.now();
  try {
    // A booted interpreter's memory, saved at build time (descent.site.runtime.make_snapshot):
    // restoring it skips Python's start-up, about half of the time to the first result.
    pyodide = await loadPyodide({ ...config, _loadSnapshot: snapshot });
    lap("boot_from_snapshot", t);
  } catch (err) {
    console.warn(`descent: starting Pyodide from its snapshot failed (${err}); starting it afresh`);
    t = performance.now();
    pyodide = await loadPyodide(config);
    lap("boot_without_snapshot", t);
  }
  t = performance.now();
  pyodide.unpackArchive(await wheel, "wheel");
  lap("wheel", t);
  t = performance.now();
  // Only the widget runtime: each widget's module is imported when it is first asked for.
  const mod = pyodide.pyimport("descent.widgets");
  runJson = mod.run_json;
  explainJson = mod.explain_json;
  py = pyodide;
  lap("import_descent", t);
  return performance.now() - t0;
}

// After the first results, every widget is run once with its defaults while the worker is idle,
// so the data a widget loads on first use (the tokenizer, the recorded traces, the embeddings) is
// in memory before the reader reaches it: a widget on the next page answers at once. One widget
// per turn of the event loop, so a reader's request waits for at most one of them.
// Warming starts after the first request is answered (the page's own widgets come first), or
// WARM_AFTER_READY_MS after start-up if none comes.
const WARM_AFTER_FIRST_MS = 300;
const WARM_AFTER_READY_MS = 3000;
let warmStarted = false;
function startWarming(delay) {
  if (warmStarted) return;
  warmStarted = true;
  setTimeout(warmNext, delay);
}

function warmNext() {
  if (widgetNames === null) {
    try {
      widgetNames = JSON.parse(py.runPython("import json, descent.widgets as w; json.dumps(w.names())"));
    } catch {
      widgetNames = [];
    }
  }
  if (!widgetNames.length) return;
  if (queue.length) {
    setTimeout(warmNext, 50);
    return;
  }
  const name = widgetNames.shift();
  try {
    runJson(name, "{}", "");
  } catch {
    // a widget that fails with its defaults reports it when the reader uses it
  }
  setTimeout(warmNext, 0);
}

// A widget's number opened: its derivation, computed for the inputs of the result on screen. The
// formula table (written by the build from the sympy expressions) and KaTeX load on the first one.
let formulaTable = null;
const KATEX_URL = new URL("../katex/katex.min.js", import.meta.url);
async function explain(msg) {
  const { id, widget, inputs, quantity } = msg;
  try {
    if (formulaTable === null) {
      const resp = await fetch(new URL("derivations.json", import.meta.url));
      if (!resp.ok) throw new Error(`derivations.json: HTTP ${resp.status}`);
      formulaTable = await resp.text();
    }
    const out = JSON.parse(explainJson(String(widget), JSON.stringify(inputs ?? {}), String(quantity), formulaTable));
    if (out.ok && out.tex && out.tex.length) {
      // KaTeX's UMD build sets self.katex when imported as a module.
      if (!self.katex) await import(KATEX_URL.href);
      out.tex.forEach((tex, i) => {
        const math = self.katex.renderToString(tex, { displayMode: true, output: "htmlAndMathml", throwOnError: false });
        out.html = out.html.replace(`data-slot="${i}"></div>`, `data-slot="${i}">${math}</div>`);
      });
    }
    self.postMessage({ type: "explained", id, ...out });
  } catch (err) {
    self.postMessage({ type: "explained", id, ok: false, message: `the derivation could not be computed (${String(err && err.message ? err.message : err)})` });
  }
}

function handle(msg) {
  if (msg.type === "explain") {
    explain(msg);
    return;
  }
  const { id, widget, inputs, touched, answers } = msg;
  try {
    // Pyodide turns a JS null into JsNull, not None: leave the argument out when there are no answers.
    const args = [widget, JSON.stringify(inputs ?? {}), String(touched ?? "")];
    if (answers !== undefined) args.push(JSON.stringify(answers));
    const out = JSON.parse(runJson(...args));
    self.postMessage({ type: "result", id, ...out });
    startWarming(WARM_AFTER_FIRST_MS);
  } catch (err) {
    // A bug in a compute function (not bad input: that comes back ok:false from Python).
    self.postMessage({ type: "result", id, ok: false, field: null, message: `Internal error: ${String(err).split("\n").slice(-2).join(" ")}` });
  }
}

self.onmessage = (event) => {
  if (runJson) handle(event.data);
  else queue.push(event.data);
};

start().then(
  (ms) => {
    self.postMessage({ type: "ready", ms: Math.round(ms), timings });
    while (queue.length) handle(queue.shift());
    setTimeout(() => startWarming(0), WARM_AFTER_READY_MS);
  },
  (err) => {
    self.postMessage({ type: "failed", message: String(err && err.message ? err.message : err) });
  },
);
