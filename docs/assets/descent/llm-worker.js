// descent: SmolLM2-135M-Instruct in the reader's browser (module Web Worker, started by llm.js).
//
// The engine is llama.cpp compiled to WebAssembly, from the npm package @wllama/wllama (vendored
// into ../vendor/wllama/ by descent.site.wllama, with its licence). The model is the GGUF the site
// was built from, in parts under ../models/ listed by ../models/manifest.json (sizes, SHA-256, the
// engine's settings). Everything is read from this site: nothing from another origin.
//
// Protocol (postMessage):
//   main -> worker  {id, op: "load"}                      download (or read from Cache Storage), start the engine
//                   {id, op: "ask", request}              compute a request of descent.engine ("text" | "speed")
//                   {id, op: "remove"}                    stop the engine, delete the cached parts
//   worker -> main  {type: "progress", stage, loaded, total}   stage: "download" | "storage" | "engine"
//                   {type: "reply", id, ok: true, result} | {type: "reply", id, ok: false, message}
//
// The parts are kept in Cache Storage (bucket CACHE_NAME) for the reader's next visit and checked
// against the manifest's SHA-256 whenever they are read. One thread unless the page is
// cross-origin isolated (a static host without COOP/COEP headers gives no SharedArrayBuffer).
// wllama runs llama.cpp in a worker of its own, made from a Blob inside this worker; the page's
// Content-Security-Policy (worker-src 'self') only sees this worker. A host that sends headers gives
// this file descent.site.csp.MODEL_WORKER_DIRECTIVES (blob: scripts and workers, WebAssembly, the
// site's own files). With or without headers, the network guard (guard.js, the same as the widget
// worker's) keeps it on the site: guard-model.js is the first import, so it runs before wllama's
// module is evaluated. It lets this worker start only workers from blob: URLs it made itself (the
// engine's, then the engine's threads), each with the guard in front of its code. A dynamic
// import() of another origin cannot be wrapped: only the header policy stops it.

import "./guard-model.js";
import { Wllama } from "../vendor/wllama/index.js";

const MODELS_URL = new URL("../models/", import.meta.url);
const WASM_URL = new URL("../vendor/wllama/wllama.wasm", import.meta.url);
const CACHE_NAME = "descent-model";
// Samplers in Hugging Face's order of filters (top-k does not depend on the temperature, so it may
// come first); min-p and the penalties stay off (llama-server's defaults would add min-p 0.05).
const SAMPLERS = ["top_k", "temperature", "top_p"];

const quiet = { debug() {}, log() {}, info() {}, warn: (...a) => console.warn("wllama:", ...a), error: (...a) => console.error("wllama:", ...a) };

let wl = null;
let loadInfo = null;
let queue = Promise.resolve();

// One engine call at a time, in order.
function serial(fn) {
  const p = queue.then(fn);
  queue = p.catch(() => {});
  return p;
}

let lastPost = 0;
function progress(stage, loaded, total, force) {
  const now = performance.now();
  if (!force && now - lastPost < 100) return;
  lastPost = now;
  self.postMessage({ type: "progress", stage, loaded, total });
}

// The SHA-256 of a part, or null where the browser offers no hashing (crypto.subtle exists only in
// secure contexts: https or localhost); the size is then the only check.
async function sha256(blob) {
  if (!self.crypto || !crypto.subtle) return null;
  const digest = await crypto.subtle.digest("SHA-256", await blob.arrayBuffer());
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function intact(blob, part) {
  if (blob.size !== part.bytes) return false;
  const hash = await sha256(blob);
  return hash === null || hash === part.sha256;
}

async function download(url, part, onBytes) {
  const resp = await fetch(url, { cache: "no-store" });
  if (!resp.ok) throw new Error(`${part.name} could not be downloaded (HTTP ${resp.status})`);
  const reader = resp.body.getReader();
  const chunks = [];
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    n += value.byteLength;
    onBytes(n);
  }
  if (n !== part.bytes) throw new Error(`${part.name}: received ${n} bytes, the site's manifest says ${part.bytes}`);
  const blob = new Blob(chunks, { type: "application/octet-stream" });
  if (!(await intact(blob, part))) throw new Error(`${part.name}: its SHA-256 does not match the site's manifest`);
  return blob;
}

async function openCache() {
  try {
    return self.caches ? await caches.open(CACHE_NAME) : null;
  } catch {
    return null; // no Cache Storage here (an insecure origin, a private window that refuses it)
  }
}

async function load() {
  const t0 = performance.now();
  const resp = await fetch(new URL("manifest.json", MODELS_URL), { cache: "no-cache" });
  if (!resp.ok) throw new Error(`the model's manifest could not be downloaded (HTTP ${resp.status})`);
  const manifest = await resp.json();
  const cache = await openCache();
  const total = manifest.parts.reduce((a, p) => a + p.bytes, 0);
  const blobs = [];
  let done = 0;
  let fromCache = true;
  for (const part of manifest.parts) {
    const url = new URL(part.name, MODELS_URL).href;
    let blob = null;
    const hit = cache && (await cache.match(url));
    if (hit) {
      blob = await hit.blob();
      if (!(await intact(blob, part))) {
        await cache.delete(url); // a stale or damaged copy: download it again
        blob = null;
      }
    }
    if (!blob) {
      fromCache = false;
      blob = await download(url, part, (n) => progress("download", done + n, total));
      if (cache) {
        try {
          await cache.put(url, new Response(blob, { headers: { "Content-Type": "application/octet-stream" } }));
          const kept = await cache.match(url);
          if (kept) blob = await kept.blob(); // read back from disk: the download's memory can go
        } catch {
          // storage full or refused: the model still loads, it is just not kept
        }
      }
    }
    done += part.bytes;
    progress(fromCache ? "storage" : "download", done, total, true);
    blobs.push(blob);
  }
  const downloadMs = performance.now() - t0;
  progress("engine", total, total, true);
  const t1 = performance.now();
  const threads = self.crossOriginIsolated
    ? Math.max(1, Math.min(manifest.max_threads, Math.floor((navigator.hardwareConcurrency || 2) / 2)))
    : 1;
  wl = new Wllama({ default: WASM_URL.href }, { suppressNativeLog: true, logger: quiet });
  wl.setCompat(null); // never the CDN build wllama would otherwise fetch for browsers without JSPI
  await wl.loadModel(blobs, { ...manifest.settings, n_threads: threads });
  loadInfo = {
    download_ms: downloadMs,
    load_ms: performance.now() - t1,
    from_cache: fromCache,
    kept: !!cache,
    threads,
    engine: `${manifest.engine.package} ${manifest.engine.version}`,
  };
  return loadInfo;
}

// This machine's memory bandwidth as the page can measure it: the build machine's `stream` record
// (descent.trace.machine_record) taken again in the reader's browser, by one thread of JavaScript:
// the median of STREAM_RUNS reads of a float32 array of STREAM_BYTES (past the processor's caches).
// Eight sums run side by side so the additions keep up with the memory. It stays in this page.
const STREAM_BYTES = 64 * 1024 * 1024;
const STREAM_RUNS = 5;
function streamBytesPerSecond() {
  const a = new Float32Array(STREAM_BYTES / 4).fill(1);
  const times = [];
  let sink = 0;
  for (let r = 0; r < STREAM_RUNS; r++) {
    const t0 = performance.now();
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    for (let i = 0; i < a.length; i += 8) {
      s0 += a[i]; s1 += a[i + 1]; s2 += a[i + 2]; s3 += a[i + 3];
      s4 += a[i + 4]; s5 += a[i + 5]; s6 += a[i + 6]; s7 += a[i + 7];
    }
    times.push(performance.now() - t0);
    sink += s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
  }
  if (sink !== STREAM_RUNS * a.length) throw new Error("the memory read summed wrongly");
  times.sort((x, y) => x - y);
  return STREAM_BYTES / (Math.max(times[STREAM_RUNS >> 1], 0.001) / 1000);
}

async function ask(request) {
  if (!wl) throw new Error("the model is not loaded");
  if (request.kind === "text") {
    const opts = { prompt: request.text, max_tokens: request.steps, n_probs: request.top, cache_prompt: true };
    const s = request.sampling;
    if (s) Object.assign(opts, { temperature: s.temperature, top_k: s.top_k, top_p: s.top_p, min_p: 0, seed: s.seed, samplers: SAMPLERS });
    else opts.temperature = 0;
    const r = await wl.createCompletion(opts);
    const choice = r.choices[0];
    const content = (choice.logprobs && choice.logprobs.content) || [];
    return {
      prompt_tokens: r.usage.prompt_tokens,
      finish: choice.finish_reason,
      steps: content.map((c) => ({
        id: c.id,
        bytes: c.bytes || [],
        logprob: c.logprob,
        top: (c.top_logprobs || []).map((t) => [t.id, t.logprob, t.bytes || []]),
      })),
      timings: r.timings,
    };
  }
  if (request.kind === "speed") {
    const r = await wl.createCompletion({ prompt: request.text, max_tokens: request.steps, temperature: 0, ignore_eos: true, cache_prompt: false });
    const t = r.timings;
    return {
      ...loadInfo,
      prompt_tokens: r.usage.prompt_tokens,
      prefill_tokens_per_s: t.prompt_per_second,
      decode_tokens: t.predicted_n,
      decode_tokens_per_s: t.predicted_per_second,
      stream_bytes_per_s: streamBytesPerSecond(),
      user_agent: String(navigator.userAgent || ""),
    };
  }
  throw new Error(`unknown request kind ${JSON.stringify(request.kind)}`);
}

async function remove() {
  if (wl) await wl.exit();
  wl = null;
  loadInfo = null;
  if (self.caches) await caches.delete(CACHE_NAME);
  return true;
}

const OPS = { load, ask: (args) => ask(args.request), remove };

self.onmessage = (event) => {
  const { id, op, args } = event.data || {};
  const fn = OPS[op];
  const run = fn ? serial(() => fn(args || {})) : Promise.reject(new Error(`unknown operation ${op}`));
  run.then(
    (result) => self.postMessage({ type: "reply", id, ok: true, result }),
    (err) => self.postMessage({ type: "reply", id, ok: false, message: String((err && err.message) || err) }),
  );
};
