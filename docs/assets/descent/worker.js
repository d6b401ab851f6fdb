// descent widget worker (module Web Worker): runs the descent Python package in Pyodide.
//
// Protocol (postMessage):
//   main -> worker  {id, widget, inputs, answers?}  inputs: {name: raw value (string | number | boolean)};
//                   answers: what the in-browser model has computed for this widget (llm.js), absent
//                   while the model is not loaded (descent.widgets.run: "live" widgets)
//   worker -> main  {type: "ready", ms}      once Pyodide and the wheel are loaded
//                   {type: "failed", message} when start-up failed (the page keeps its static values)
//                   {type: "result", id, ok: true, html, engine?} | {type: "result", id, ok: true, need}
//                   | {type: "result", id, ok: false, field, message}
//
// Every URL is resolved relative to this module, so the site works under any base path, and
// nothing is fetched from another origin: Pyodide's core and its memory snapshot are vendored in
// ../pyodide/ and the wheel in ./wheels/ (all written by descent.site.runtime.on_post_build).

const PYODIDE_URL = new URL("../pyodide/", import.meta.url);
const WHEELS_URL = new URL("wheels/", import.meta.url);

let runJson = null;
const queue = [];

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
  // The wheel downloads while Pyodide boots (the boot is CPU-bound: wasm compile + interpreter start).
  const wheel = fetchWheel();
  wheel.catch(() => {}); // reported by the await below, not as an unhandled rejection
  const { loadPyodide } = await import(new URL("pyodide.mjs", PYODIDE_URL).href);
  const config = {
    indexURL: PYODIDE_URL.href,
    packageBaseUrl: PYODIDE_URL.href,
    lockFileURL: new URL("pyodide-lock.json", PYODIDE_URL).href,
  };
  let pyodide;
  try {
    // A booted interpreter's memory, saved at build time (descent.site.runtime.make_snapshot):
    // restoring it skips Python's start-up, about half of the time to the first result.
    const snapshot = fetchSnapshot();
    snapshot.catch(() => {}); // a failed fetch is handled below, not an unhandled rejection
    pyodide = await loadPyodide({ ...config, _loadSnapshot: snapshot });
  } catch (err) {
    console.warn(`descent: starting Pyodide from its snapshot failed (${err}); starting it afresh`);
    pyodide = await loadPyodide(config);
  }
  pyodide.unpackArchive(await wheel, "wheel");
  const mod = pyodide.pyimport("descent.widgets");
  runJson = mod.run_json;
  return performance.now() - t0;
}

function handle(msg) {
  const { id, widget, inputs, answers } = msg;
  try {
    // Pyodide turns a JS null into JsNull, not None: leave the argument out when there are no answers.
    const json = JSON.stringify(inputs ?? {});
    const out = JSON.parse(answers === undefined ? runJson(widget, json) : runJson(widget, json, JSON.stringify(answers)));
    self.postMessage({ type: "result", id, ...out });
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
    self.postMessage({ type: "ready", ms: Math.round(ms) });
    while (queue.length) handle(queue.shift());
  },
  (err) => {
    self.postMessage({ type: "failed", message: String(err && err.message ? err.message : err) });
  },
);
