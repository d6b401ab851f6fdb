// descent: the network guard of the site's Web Workers (worker.js, llm-worker.js and the engine's
// workers that llm-worker.js starts). An ES module that only exports the function: each worker
// imports it first and calls it before anything else runs.
//
// A page's <meta> policy does not reach a worker, and a host without headers (GitHub Pages) sends
// none (descent.site.csp): so the worker itself refuses to reach beyond the site's own origin.
// fetch, XMLHttpRequest, WebSocket, WebSocketStream, EventSource, WebTransport, importScripts,
// Cache.add/addAll, FontFace and nested workers check their URL; setTimeout and setInterval refuse
// a string (an eval).
//
// * Each URL is read ONCE: the argument is turned into a URL (new URL(String(arg), base)), that URL
//   is checked, and only the checked URL's text is passed on. An object whose toString answers
//   "/x" the first time and another origin the second never reaches the browser's own reading.
//   A Request is checked by its URL read through Request.prototype's own getter (a subclass cannot
//   lie about it) and passed on itself: its URL cannot change.
// * The wrappers cannot be replaced or removed (non-writable, non-configurable), nor gone around by
//   a constructor's prototype.constructor; the originals stay inside this function.
// * Nested workers: {workers: "none"} refuses every one. {workers: "own-blobs"} (the model's
//   worker: wllama runs llama.cpp in a worker made from a Blob, and its threads in more) allows
//   only a blob: URL this worker made itself with URL.createObjectURL, or this worker's own script
//   again; it starts it from a copy with this function's source in front, so the nested worker
//   guards itself the same way before its own code runs.
//
// * {evals: "refuse"} (the model's worker and its nested workers) refuses code made from text:
//   eval, Function and the async and generator Function constructors (also reached as any
//   function's .constructor) throw an EvalError, whether or not a header policy is present (with
//   one, the policy refuses them too; without, as on GitHub Pages, only this does). The widget
//   worker keeps them (Pyodide's start-up may make functions from text; its header policy refuses
//   eval where a host sends one).
//
// What a script cannot wrap, only the header policy stops: a dynamic import() of another origin
// (a language form, not a function).
//
// The function must stay self-contained (no name from outside it): its source is copied into the
// nested workers' scripts.

export function guard(options) {
  "use strict";
  const workers = (options && options.workers) || "none";
  const scope = self;
  const origin = scope.location.origin;
  const base = scope.location.href;
  const own = base; // this worker's own script (a pthread starts a copy of its engine worker)
  const refusal = (what, url) =>
    `descent worker: ${what} ${url} refused: only this site's own files (${origin}) may be reached`;
  const fix = (target, name, value) =>
    Object.defineProperty(target, name, { value, writable: false, configurable: false, enumerable: false });
  const RealURL = URL;
  const RealError = DOMException;
  const denied = (what, url) => new RealError(refusal(what, url), "SecurityError");

  // The URL an argument names, read once; null when it is not this site's.
  const checked = (arg) => {
    let url;
    try {
      url = new RealURL(String(arg), base);
    } catch {
      return null; // unparseable (or a toString that throws): not the site's
    }
    return url.origin === origin ? url.href : null;
  };
  const shown = (arg) => {
    try {
      return String(arg).slice(0, 200);
    } catch {
      return "(a URL that cannot be shown)";
    }
  };
  // A genuine Request's URL (its internal slot, through the original getter); undefined otherwise.
  const requestUrlGetter =
    typeof Request === "function" ? Object.getOwnPropertyDescriptor(Request.prototype, "url").get : null;
  const requestUrl = (input) => {
    if (!requestUrlGetter) return undefined;
    try {
      return requestUrlGetter.call(input);
    } catch {
      return undefined; // not a Request (a Proxy of one is not one either)
    }
  };
  // What fetch or Cache.add may be given: the Request itself, or the checked URL's text; null if refused.
  const checkedInput = (input) => {
    const url = requestUrl(input);
    if (url !== undefined) return checked(url) === null ? null : input;
    return checked(input);
  };

  const realFetch = scope.fetch;
  if (typeof realFetch === "function") {
    fix(scope, "fetch", function fetch(input, init) {
      const safe = checkedInput(input);
      if (safe === null) return Promise.reject(new TypeError(refusal("fetch of", shown(input))));
      return arguments.length > 1 ? realFetch.call(scope, safe, init) : realFetch.call(scope, safe);
    });
  }

  if (typeof scope.XMLHttpRequest === "function") {
    const realOpen = scope.XMLHttpRequest.prototype.open;
    fix(scope.XMLHttpRequest.prototype, "open", function open(method, url, ...rest) {
      const safe = checked(url);
      if (safe === null) throw denied("XMLHttpRequest to", shown(url));
      return realOpen.call(this, method, safe, ...rest); // open(m, u) and open(m, u, undefined) differ: rest keeps the count
    });
  }

  // Wrap a constructor; `check(args)` returns the arguments to construct with, or throws.
  const guardConstructor = (name, check) => {
    const Real = scope[name];
    if (typeof Real !== "function") return;
    const Guarded = new Proxy(Real, {
      construct(target, args, newTarget) {
        return Reflect.construct(target, check(args), newTarget === Guarded ? target : newTarget);
      },
      apply(target, thisArg, args) {
        return Reflect.apply(target, thisArg, check(args)); // throws like the original (needs new)
      },
    });
    if (Real.prototype) fix(Real.prototype, "constructor", Guarded);
    fix(scope, name, Guarded);
  };
  const firstUrl = (name) => (args) => {
    const safe = checked(args[0]);
    if (safe === null) throw denied(`${name} to`, shown(args[0]));
    return [safe, ...args.slice(1)];
  };
  // Constructors that open a connection from their first argument.
  for (const name of ["WebSocket", "WebSocketStream", "EventSource", "WebTransport"]) guardConstructor(name, firstUrl(name));
  // A font given by URL is downloaded: only font data (an ArrayBuffer) may be given.
  guardConstructor("FontFace", (args) => {
    if (typeof args[1] === "string" || (args[1] && !ArrayBuffer.isView(args[1]) && !(args[1] instanceof ArrayBuffer))) {
      throw denied("FontFace from", shown(args[1]));
    }
    return args;
  });

  // Nested workers would run without this guard.
  const realCreate = RealURL.createObjectURL;
  const realRevoke = RealURL.revokeObjectURL;
  const blobs = new Map(); // blob: URL made here -> its Blob
  if (workers === "own-blobs" && typeof realCreate === "function") {
    fix(RealURL, "createObjectURL", function createObjectURL(obj) {
      const url = realCreate.call(RealURL, obj);
      if (obj instanceof Blob) blobs.set(url, obj);
      return url;
    });
    fix(RealURL, "revokeObjectURL", function revokeObjectURL(url) {
      blobs.delete(String(url));
      return realRevoke.call(RealURL, url);
    });
  }
  const evals = (options && options.evals) || "keep";
  const source = `(${guard.toString()})(${JSON.stringify({ workers, evals })});\n`;
  guardConstructor("Worker", (args) => {
    let url;
    try {
      url = String(args[0]);
    } catch {
      url = null;
    }
    if (workers === "own-blobs" && url !== null) {
      if (url === own && own.startsWith("blob:")) return [own, ...args.slice(1)]; // already guarded
      const blob = blobs.get(url);
      if (blob) {
        const guarded = realCreate.call(RealURL, new Blob([source, blob], { type: "text/javascript" }));
        return [guarded, ...args.slice(1)];
      }
    }
    throw denied("a nested Worker from", url === null ? "(a URL that cannot be shown)" : url.slice(0, 200));
  });
  guardConstructor("SharedWorker", (args) => {
    throw denied("a nested SharedWorker from", shown(args[0]));
  });

  if (typeof scope.importScripts === "function") {
    const realImport = scope.importScripts;
    fix(scope, "importScripts", function importScripts(...urls) {
      const safe = urls.map((u) => {
        const s = checked(u);
        if (s === null) throw denied("importScripts of", shown(u));
        return s;
      });
      return realImport.apply(scope, safe); // a module worker's own importScripts then throws its TypeError
    });
  }

  if (typeof scope.Cache === "function") {
    for (const method of ["add", "addAll"]) {
      const real = scope.Cache.prototype[method];
      fix(scope.Cache.prototype, method, function (requests) {
        const list = method === "add" ? [requests] : Array.from(requests);
        const safe = [];
        for (const r of list) {
          const s = checkedInput(r);
          if (s === null) return Promise.reject(new TypeError(refusal(`Cache.${method} of`, shown(requestUrl(r) ?? r))));
          safe.push(s);
        }
        return real.call(this, method === "add" ? safe[0] : safe);
      });
    }
  }

  if (evals === "refuse") {
    const refuseEval = (what) => function () {
      throw new EvalError(`descent worker: ${what} refused: this worker runs no code made from text`);
    };
    fix(scope, "eval", refuseEval("eval"));
    const kinds = [
      ["Function", function () {}],
      ["AsyncFunction", async function () {}],
      ["GeneratorFunction", function* () {}],
      ["AsyncGeneratorFunction", async function* () {}],
    ];
    for (const [what, sample] of kinds) {
      const refused = refuseEval(`new ${what}`);
      fix(Object.getPrototypeOf(sample), "constructor", refused); // (function () {}).constructor and kin
      if (what === "Function") fix(scope, "Function", refused);
    }
  }

  for (const name of ["setTimeout", "setInterval"]) {
    const real = scope[name];
    fix(scope, name, function (handler, ...rest) {
      if (typeof handler !== "function") throw new TypeError(`descent worker: ${name} with a string (an eval) refused`);
      return real.call(scope, handler, ...rest);
    });
  }
}
