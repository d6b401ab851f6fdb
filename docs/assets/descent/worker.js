// descent widget worker (module Web Worker): runs the descent Python package in Pyodide.
//
// Protocol (postMessage):
//   main -> worker  {id, widget, inputs, touched, answers?}   inputs: {name: raw value (string | number | boolean)};
//                                                   touched: the input the reader changed ("" if none);
//                                                   answers: what the model in the browser has computed
//                                                   for this widget (llm.js), absent while it is not
//                                                   loaded (descent.widgets.run: "live" widgets)
//   worker -> main  {type: "ready", ms, timings, origin}   once Pyodide and the package are loaded (timings:
//                                                   each start-up step's length, "ms", or its end,
//                                                   "at", in ms since the worker started at `origin`
//                                                   (epoch ms); for nox -s bench)
//                   {type: "failed", message} when start-up failed (the page keeps its static values)
//                   {type: "result", id, ok: true, html, allowed, engine?, ms, at} | {type: "result", id, ok: false, field, message, allowed, ms, at}
//                   ms: the Python call's length; at: its end, in ms since the worker started (nox -s bench)
//                   | {type: "result", id, ok: true, need}: a live widget needs the model to compute `need` first
//                   allowed: {slider name: [values it may step through now]} (constrained sliders only)
//   main -> worker  {type: "explain", id, widget, inputs, quantity}: a widget's number opened (explain.js)
//   worker -> main  {type: "explained", id, ok, html, value, formula, label, printed} | {..., ok: false, message}:
//                   its derivation at those inputs (descent.widgets.explain_json), the formulas typeset by
//                   KaTeX here (../katex/katex.min.js and derivations.json load on the first one only)
//
// Every URL is resolved relative to this module, so the site works under any base path, and
// nothing is fetched from another origin: Pyodide's core and its memory snapshot are vendored in
// ../pyodide/ and the package's files in ./wheels/ (all written by descent.site.runtime.on_post_build).
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
// The snapshot and the wasm travel gzipped whatever the host does (descent.site.runtime writes the
// .gz files): a static host that sets no Content-Encoding would otherwise send 31 MB and 9.6 MB raw.
// Without DecompressionStream (Chromium 80, Firefox 113, Safari 16.4) the raw files are fetched.
const GUNZIP = typeof DecompressionStream === "function";
// The gzipped wasm keeps its name in gzip/; boot/ is the indexURL Pyodide is given (answerInstantiate).
const GZIP_DIR_URL = new URL("gzip/", PYODIDE_URL);
const BOOT_DIR_URL = new URL("boot/", PYODIDE_URL);

let runJson = null;
let explainJson = null;
let py = null;
let widgetNames = null;
const queue = [];
const timings = {};
const t0 = performance.now();
// Milliseconds since the worker started, for timings.
const at = () => Math.round(performance.now() - t0);

async function fetchOk(url) {
  const resp = await fetch(url);
  if (!resp.ok) throw new Error(`${new URL(url).pathname.split("/").pop()}: HTTP ${resp.status}`);
  return resp;
}

// A response's body as a stream of its original bytes: gunzipped when they arrive gzipped (1f 8b);
// a host that set Content-Encoding has had the browser decode them already, and they pass as they are.
async function gunzipped(resp) {
  const reader = resp.body.getReader();
  let first = await reader.read();
  while (!first.done && first.value.length < 2) {
    const more = await reader.read();
    if (more.done) break;
    const joined = new Uint8Array(first.value.length + more.value.length);
    joined.set(first.value);
    joined.set(more.value, first.value.length);
    first = { done: false, value: joined };
  }
  const body = new ReadableStream({
    start(controller) {
      if (!first.done) controller.enqueue(first.value);
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  const gz = !first.done && first.value[0] === 0x1f && first.value[1] === 0x8b;
  return gz ? body.pipeThrough(new DecompressionStream("gzip")) : body;
}

async function fetchBytes(name, dir, key, query = "") {
  const resp = await fetchOk(new URL((GUNZIP ? `${name}.gz` : name) + query, dir));
  const buf = await (GUNZIP ? new Response(await gunzipped(resp)) : resp).arrayBuffer();
  timings[`${key}_arrived_at`] = at();
  return new Uint8Array(buf);
}

// The manifest names the package's files (a tar, gzipped beside it; its hash in the query defeats
// stale caches) and carries Pyodide's lock file cut to what the runtime needs (no packages).
async function fetchManifest() {
  return (await fetchOk(new URL("manifest.json", WHEELS_URL))).json();
}

async function fetchPack(manifest) {
  const m = await manifest;
  return untar(await fetchBytes(m.pack, WHEELS_URL, "package", `?v=${m.pack_sha256.slice(0, 16)}`));
}

// [[path, bytes]] of a ustar archive's regular files (descent.site.runtime.write_pack writes it).
function untar(buf) {
  const out = [];
  const text = (a, b) => {
    let s = "";
    for (let i = a; i < b && buf[i]; i++) s += String.fromCharCode(buf[i]);
    return s;
  };
  for (let off = 0; off + 512 <= buf.length; ) {
    const name = text(off, off + 100);
    if (!name) break; // the two zero blocks that end the archive
    const size = parseInt(text(off + 124, off + 136).trim() || "0", 8);
    const type = text(off + 156, off + 157);
    const prefix = text(off + 345, off + 500);
    const start = off + 512;
    if (type === "0" || type === "") out.push([prefix ? `${prefix}/${name}` : name, buf.subarray(start, start + size)]);
    off = start + Math.ceil(size / 512) * 512;
  }
  return out;
}

// Write the package's files where the snapshot's Python imported them from (its working directory:
// /home/pyodide, where the build unpacked the wheel). Called once the interpreter has booted and
// before any Python of ours runs: the snapshot holds every module the widgets import, so the boot
// reads none of these files, and a package that arrives after the snapshot does not hold it up.
function writeFiles(FS, files) {
  const home = FS.cwd();
  const made = new Set();
  for (const [name, bytes] of files) {
    const dir = `${home}/${name.slice(0, name.lastIndexOf("/"))}`;
    if (!made.has(dir)) {
      FS.mkdirTree(dir);
      made.add(dir);
    }
    FS.writeFile(`${home}/${name}`, bytes);
  }
}

// Does the host compress the wasm itself (Content-Encoding)? Then the raw file is fetched: the
// browser decodes it, and keeps the compiled code for the next visit, which it cannot do for bytes
// gunzipped here. A HEAD request (its own query, so no test or cache mistakes it for the file) asks.
async function hostCompressesWasm() {
  if (!GUNZIP) return true; // nothing to gunzip with: the raw file, whatever the host does
  try {
    const resp = await fetch(new URL("pyodide.asm.wasm?encoding", PYODIDE_URL), { method: "HEAD" });
    return resp.ok && /\b(gzip|br|zstd|deflate)\b/.test(resp.headers.get("Content-Encoding") || "");
  } catch {
    return false;
  }
}

// The wasm is fetched and compiled from the worker's first moment (compileStreaming compiles as
// the bytes arrive): loadPyodide instantiates it only once the snapshot is in, so compiling it
// then would put the compile after the snapshot's download instead of beside it.
function compileWasm() {
  const module = hostCompressesWasm().then(async (raw) => {
    timings.wasm_gunzipped_here = !raw;
    const resp = await fetchOk(new URL("pyodide.asm.wasm", raw ? PYODIDE_URL : GZIP_DIR_URL));
    const wasm = raw ? resp : new Response(await gunzipped(resp), { headers: { "Content-Type": "application/wasm" } });
    const out = await WebAssembly.compileStreaming(wasm);
    timings.wasm_compiled_at = at();
    return out;
  });
  module.catch(() => {}); // reported through answerInstantiate's failed
  return module;
}

// pyodide.mjs fetches `${indexURL}pyodide.asm.wasm` itself and hands the response to
// WebAssembly.instantiateStreaming: its indexURL is boot/, whose pyodide.asm.wasm is an empty
// module (8 bytes), and while Pyodide boots that call is answered with the module compiled above.
// The call is known for Pyodide's by the imports object its instantiateWasm was handed (expect(),
// from createPyodideModule), not by the stand-in's response: on a host that answers a few requests
// at a time (HTTP/1.1: 6 per origin) that response queued behind the snapshot, and waiting for it
// held the boot back (nox -s bench, Part 0: the 8 bytes came 450 ms after they were asked for).
// Pyodide only logs a failed instantiation and never calls back, so a failure also rejects
// `failed`, which start() races against loadPyodide: the reader is told rather than left waiting.
function answerInstantiate(module) {
  const real = WebAssembly.instantiateStreaming;
  let expected = null;
  let fail;
  const failed = new Promise((resolve, reject) => {
    fail = reject;
  });
  failed.catch(() => {}); // read by start()'s races
  // A wasm that fails to download or compile ends the start at once, not once the snapshot is in
  // (Pyodide instantiates only then), and never through the fresh-start fallback.
  module.catch((err) => fail(err));
  WebAssembly.instantiateStreaming = async function instantiateStreaming(source, imports) {
    if (expected === null || imports !== expected) return real.call(WebAssembly, source, imports);
    expected = null;
    Promise.resolve(source).catch(() => {}); // the stand-in's answer is not needed
    timings.instantiate_called_at = at();
    try {
      const mod = await module;
      const instance = await WebAssembly.instantiate(mod, imports);
      timings.instantiated_at = at();
      return { module: mod, instance };
    } catch (err) {
      fail(err);
      throw err;
    }
  };
  return {
    expect(imports) {
      expected = imports;
    },
    failed,
    restore() {
      WebAssembly.instantiateStreaming = real;
    },
  };
}

// The standard library, fetched only if Python asks for a module that is not already in memory.
// The snapshot holds every module the widgets import, and the directory of python_stdlib.zip as it
// was when the snapshot was made; until a module is missing, Pyodide gets an empty zip instead
// (python_stdlib.empty.zip, 22 bytes). The first import of anything else fetches the real zip
// (synchronously: an import cannot wait), writes it where the directory expects it and goes on.
function stdlibOnDemand(pyodide) {
  pyodide.registerJsModule("_descent_stdlib", {
    load(path) {
      const xhr = new XMLHttpRequest();
      xhr.open("GET", new URL("python_stdlib.zip", PYODIDE_URL).href, false);
      xhr.responseType = "arraybuffer";
      xhr.send();
      if (xhr.status !== 200) throw new Error(`python_stdlib.zip: HTTP ${xhr.status}`);
      pyodide.FS.writeFile(path, new Uint8Array(xhr.response));
      timings.stdlib_fetched_at = at();
    },
  });
  pyodide.runPython(`
import sys
class _StdlibOnDemand:
    """Fetches the standard library's zip the first time an import needs a module of it."""
    loaded = False

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if not cls.loaded and name.partition(".")[0] != "descent":
            cls.loaded = True
            import _descent_stdlib
            _descent_stdlib.load(next(p for p in sys.path if p.endswith(".zip")))
        return None

sys.meta_path.insert(0, _StdlibOnDemand)
del _StdlibOnDemand
`);
}

async function start() {
  // Everything the start-up downloads is requested at once: the package and the memory snapshot
  // download while Pyodide's modules are imported and its wasm compiles as it arrives. The boot
  // needs only the manifest (the lock file); the package's files are written when both the boot
  // and the package are done (decision 0028: on Part 3 the package came 290 ms after the snapshot).
  const manifest = fetchManifest();
  manifest.catch(() => {}); // reported by the await below, not as an unhandled rejection
  const pack = fetchPack(manifest);
  pack.catch(() => {});
  const snapshot = fetchBytes("pyodide-snapshot.bin", PYODIDE_URL, "snapshot");
  snapshot.catch(() => {}); // a failed fetch is handled below, not an unhandled rejection
  // Pyodide's two modules are imported side by side (pyodide.mjs would import the second only once
  // called), while the wasm compiles.
  const wasm = compileWasm();
  const asm = import(new URL("pyodide.asm.mjs", PYODIDE_URL).href);
  asm.catch(() => {});
  const answer = answerInstantiate(wasm);
  const createPyodideModule = async (settings) => {
    timings.create_module_at = at();
    const instantiateWasm = settings.instantiateWasm;
    if (typeof instantiateWasm === "function") {
      settings.instantiateWasm = (imports, done) => {
        answer.expect(imports);
        return instantiateWasm(imports, done);
      };
    }
    return (await asm).default(settings);
  };
  const { loadPyodide } = await import(new URL("pyodide.mjs", PYODIDE_URL).href);
  timings.pyodide_mjs_at = at();
  const config = {
    indexURL: BOOT_DIR_URL.href,
    packageBaseUrl: PYODIDE_URL.href,
    createPyodideModule,
    lockFileContents: manifest.then((m) => m.lock),
  };
  const writePack = async (FS) => {
    const files = await pack;
    const t = performance.now();
    timings.files_written_at = at();
    writeFiles(FS, files);
    timings.package_written_ms = Math.round(performance.now() - t);
  };
  let pyodide;
  let wasmFailed = false;
  answer.failed.catch(() => {
    wasmFailed = true;
  });
  const boot = (settings) => Promise.race([loadPyodide(settings), answer.failed]);
  let t = performance.now();
  try {
    // A booted interpreter's memory, saved at build time (descent.site.runtime.make_snapshot):
    // restoring it skips Python's start-up and every import of the widget runtime.
    pyodide = await boot({
      ...config,
      stdLibURL: new URL("python_stdlib.empty.zip", PYODIDE_URL).href,
      _loadSnapshot: snapshot,
    });
    timings.boot_from_snapshot_ms = Math.round(performance.now() - t);
    timings.booted_at = at();
    await writePack(pyodide.FS);
    stdlibOnDemand(pyodide);
  } catch (err) {
    await pack; // a missing package is the error to report, not the snapshot's
    if (wasmFailed) throw err; // a fresh start needs the same wasm
    console.warn(`descent: starting Pyodide from its snapshot failed (${err}); starting it afresh`);
    t = performance.now();
    pyodide = await boot({ ...config, stdLibURL: new URL("python_stdlib.zip", PYODIDE_URL).href });
    await writePack(pyodide.FS);
    timings.boot_without_snapshot_ms = Math.round(performance.now() - t);
  } finally {
    answer.restore();
  }
  t = performance.now();
  // Only the widget runtime: each widget's module is imported when it is first asked for.
  const mod = pyodide.pyimport("descent.widgets");
  runJson = mod.run_json;
  explainJson = mod.explain_json;
  py = pyodide;
  timings.import_descent_ms = Math.round(performance.now() - t);
  return performance.now() - t0;
}

// After the first results, every widget is run once with its defaults while the reader is idle, so
// what a widget's first run does that the snapshot could not hold (NOT_WARMED in descent.widgets:
// the tokenizer, the batching simulations) and the engine's first compile of the code a widget
// runs are done before the reader reaches it: a widget on the next page answers at once. One
// widget per turn of the event loop, and only once the reader has sent nothing for WARM_QUIET_MS,
// so a reader moving a slider never waits behind a warm-up; a change sent just as one begins waits
// for that one alone (decision 0029 gives the longest). Warming starts after the first request is
// answered (the page's own widgets come first), or WARM_AFTER_READY_MS after start-up if none comes.
// The page names its widgets (a "page" message, again after each instant navigation): those not yet
// warmed go to the front of the line, in page order, so a widget further down the page is warm
// before the reader scrolls to it.
const WARM_QUIET_MS = 1000;
const WARM_AFTER_READY_MS = 3000;
let warmStarted = false;
let lastRequestAt = 0;
let pageWidgets = [];
const warmed = []; // the widgets warmed so far, in order, sent with each result (tests/browser/test_widget_runtime.py)
function startWarming() {
  if (warmStarted) return;
  warmStarted = true;
  setTimeout(warmNext, 0);
}

function warmNext() {
  if (widgetNames === null) {
    try {
      widgetNames = JSON.parse(py.runPython("import json, descent.widgets as w; json.dumps(w.names())"));
    } catch {
      widgetNames = [];
    }
  }
  if (pageWidgets.length) {
    const first = pageWidgets.filter((name) => widgetNames.includes(name));
    widgetNames = [...first, ...widgetNames.filter((name) => !first.includes(name))];
    pageWidgets = [];
  }
  if (!widgetNames.length) return;
  const quietFor = performance.now() - lastRequestAt;
  if (queue.length || quietFor < WARM_QUIET_MS) {
    setTimeout(warmNext, Math.max(50, WARM_QUIET_MS - quietFor));
    return;
  }
  const name = widgetNames.shift();
  try {
    runJson(name, "{}", "");
    warmed.push(name);
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
    const began = performance.now();
    const out = JSON.parse(runJson(...args));
    // ms: the Python call's length; at: its end, ms since the worker started (nox -s bench)
    self.postMessage({ type: "result", id, ...out, ms: Math.round(performance.now() - began), at: at(), warmed });
    startWarming();
  } catch (err) {
    // A bug in a compute function (not bad input: that comes back ok:false from Python).
    self.postMessage({ type: "result", id, ok: false, field: null, message: `Internal error: ${String(err).split("\n").slice(-2).join(" ")}` });
  }
}

self.onmessage = (event) => {
  if (event.data && event.data.type === "page") {
    pageWidgets = Array.isArray(event.data.widgets) ? event.data.widgets.map(String) : [];
    return;
  }
  lastRequestAt = performance.now();
  if (runJson) handle(event.data);
  else queue.push(event.data);
};

start().then(
  (ms) => {
    self.postMessage({ type: "ready", ms: Math.round(ms), timings, origin: performance.timeOrigin + t0 });
    while (queue.length) handle(queue.shift());
    setTimeout(startWarming, WARM_AFTER_READY_MS);
  },
  (err) => {
    self.postMessage({ type: "failed", message: String(err && err.message ? err.message : err) });
  },
);
