"""``nox -s bench``: how fast the site builds, loads and answers; writes bench/report.{json,md}.

Reported, not pass/fail: every measurement is written next to its goal, and a measurement that
cannot be taken (no node, no chromium, Lighthouse missing) is recorded with the reason instead
of stopping the others.

What is measured, and how:

* **Cold build**: ``mkdocs build --strict`` in a fresh copy of the working tree (the tracked and
  untracked-but-not-ignored files; ``node_modules`` linked), so ``.cache/`` is empty: figures are
  drawn, KaTeX runs, the wheel is zipped. Goal 60 s.
* **Rebuild after a one-line Markdown edit**, two ways a contributor sees it: ``mkdocs build``
  again (what ``nox -s serve`` does), and the live preview's rebuild (``nox -s preview``:
  ``mkdocs serve --dirty``, :mod:`descent.site.preview`), timed from the file write until the
  served page contains the new line (median of :data:`SERVE_EDITS` edits). Goal 3 s (the preview's).
* **Page weight before any interaction**, per page: every response Chromium receives until the
  network is idle after ``load`` (1280x800 viewport), each body gzip-compressed (level 6, a
  typical server's setting) and summed; Pyodide's core, the descent wheel and ``worker.js`` (the
  live runtime, which starts only when a widget is on screen) are excluded and reported apart.
  Goal 400 KB (SI, 400,000 bytes).
* **First live widget result**: from navigation start to the first widget's ``data-state="live"``
  (fresh browser context, widget scrolled into view right after DOMContentLoaded), and on a
  second widget page reached by a click through Material's instant navigation, from the click.
  Goals (issue 13) 1.5 s cold, 0.6 s next page. The cold start's timeline (when ``worker.js``,
  Pyodide's files, the snapshot and the wheel were requested and arrived) is reported beside it.
* **What the Pyodide memory snapshot buys**: the cold first live result again with the snapshot
  request refused (``worker.js`` then boots Pyodide from scratch), against the snapshot's size
  raw and gzipped: the boot time saved, and the bandwidth below which downloading the snapshot
  costs more than it saves.
* **Recompute latency**: in the page, from dispatching an ``input`` event on a number box to the
  output region's DOM being replaced (a MutationObserver), :data:`RECOMPUTE_CHANGES` changes per
  widget with a numeric input; median and worst. Goal 50 ms (issue 13).
* **Lighthouse** 12.2.3 (``tools/lighthouse``, its own lock file), Debian's chromium, every
  page, mobile (Lighthouse's default: simulated slow 4G and 4x CPU slowdown) and ``--preset
  desktop``: performance, accessibility, best-practices. Goals perf 0.95 desktop and mobile
  on every page (the worst page is the headline; issue 28), accessibility 1.0. Lighthouse on 2 shared
  cores is slow and noisy: run it once, at the end (``--lighthouse-only-mobile`` halves it).
* **A stock Material page, same run** (issue 28): a one-page MkDocs site with Material's theme
  and nothing of descent's, built in a temporary folder, served beside the site, loaded
  interleaved with the site's pages and run through Lighthouse; each timing is also reported as a
  ratio to its load (builds to its build), so figures compare across machines and loads.
* **Cold trace**: ``descent.trace.bench.cold_trace_seconds()`` in a fresh process. Goal 10 s.
* **The model in the browser** (issue 14), reported without a goal: on Part 0, from pressing the
  panel's load button to the engine being ready (download of the 98 MB model from the local
  server, then llama.cpp's load), again after a reload (the parts read from Cache Storage), and
  the prefill and decode tokens/s the engine measures in the page (``descent.engine.speed``).

The site is served on 127.0.0.1 by :mod:`descent.site.serve`, the server of ``nox -s serve`` and of
the browser tests: text gzip-compressed as a static host sends it, with the site's headers. The
build names that port in ``site_url`` so instant navigation works (Material only intercepts links
listed in the sitemap).

Run: ``python tools/bench.py [--out bench] [--no-lighthouse]`` from the repository root;
``--site DIR`` measures an existing build instead of building one, for the browser measurements
only: on the port its sitemap names when that port is free, else on ``--port N`` or any free port
with the sitemap rewritten for it as it is served.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import io
import json
import math
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tools beside this one
from typing import Any

import runtime_timeline  # noqa: E402
import widget_recompute  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("DESCENT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
LIGHTHOUSE_CLI = ROOT / "tools" / "lighthouse" / "node_modules" / "lighthouse" / "cli" / "index.js"

#: gzip level for page weight: 6 is zlib's default and what nginx/Apache are usually set to.
GZIP_LEVEL = 6
#: Input changes per widget for the recompute latency.
RECOMPUTE_CHANGES = 50
#: Fresh page loads (fresh workers, empty caches) over which each input's extremes are timed once
#: each; a case's figure is the median of these, so one stall of a shared machine is not the result.
EXTREME_LOADS = 3
#: Seconds the extremes pass waits on each page once its runtime is up, so that the worker has warmed
#: every widget (it does so when the reader has been idle for a second) before the first case is timed.
EXTREME_SETTLE_S = 4.0
#: One-line edits timed under the live preview, ``nox -s preview`` (the median is reported).
SERVE_EDITS = 3
#: Paths (relative to the site) of the live runtime, excluded from page weight.
RUNTIME_PREFIXES = ("assets/pyodide/", "assets/descent/wheels/", "assets/descent/worker.js",
                    "assets/descent/llm-worker.js", "assets/vendor/wllama/", "assets/models/")

#: Goals: (key, comparison, limit, unit). Builds and page weight from issue 4; the live runtime's
#: and Lighthouse mobile's from issue 13 (cold 1.5 s, next page 0.6 s, recompute 50 ms, >= 0.90 on
#: every page).
GOALS = {
    "cold_build_s": ("<=", 60.0, "s"),
    "rebuild_s": ("<=", 3.0, "s"),
    "first_live_cold_s": ("<=", 1.5, "s"),
    "first_live_next_page_s": ("<=", 0.6, "s"),
    "runtime_wire_bytes": ("<=", 15_000_000, "bytes"),
    "recompute_ms": ("<=", 50.0, "ms"),
    "recompute_extremes_ms": ("<=", 50.0, "ms"),
    "page_weight_bytes": ("<=", 400_000, "bytes"),
    "lighthouse_performance_desktop": (">=", 0.95, ""),
    "lighthouse_performance_mobile": (">=", 0.95, ""),
    "lighthouse_accessibility": (">=", 1.0, ""),
    "cold_trace_s": ("<=", 10.0, "s"),
}

# -- serving ------------------------------------------------------------------------------------


def _handler(sitemap: tuple[str, str] | None = None):
    """The site's own server (:mod:`descent.site.serve`: what ``nox -s serve`` and the browser tests
    use: gzip for text as a static host sends it, the security headers), without its request log.

    ``sitemap=(built, served)``: the sitemap names the origin ``built`` (the build's ``site_url``)
    but the site is served at ``served``: ``sitemap.xml`` and ``sitemap.xml.gz`` are sent with the
    served origin, so Material's instant navigation (it only follows links the sitemap lists) works."""
    from descent.site import serve as site_serve

    class Quiet(site_serve.Handler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def send_head(self):
            name = self.path.split("?", 1)[0].rsplit("/", 1)[-1]
            if sitemap is None or name not in ("sitemap.xml", "sitemap.xml.gz"):
                return super().send_head()
            path = Path(self.translate_path(self.path))
            if not path.is_file():
                return super().send_head()
            data = path.read_bytes()
            if name.endswith(".gz"):
                data = gzip.decompress(data)
            data = data.replace(sitemap[0].encode(), sitemap[1].encode())
            if name.endswith(".gz"):
                data = gzip.compress(data, GZIP_LEVEL, mtime=0)
            self.send_response(200)
            self.send_header("Content-Type", "application/gzip" if name.endswith(".gz") else "application/xml")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            return io.BytesIO(data)

    return Quiet


def sitemap_origin(site: Path) -> str | None:
    """The origin (``http://127.0.0.1:8000/``) the built site's sitemap names, or None."""
    sm = site / "sitemap.xml"
    if not sm.is_file():
        return None
    m = re.search(r"<loc>\s*(https?://[^/<\s]+/)", sm.read_text(errors="replace"))
    return m.group(1) if m else None


def port_for(site: Path, asked: int | None) -> tuple[int, tuple[str, str] | None]:
    """The port to serve ``site`` on and the sitemap rewrite it needs (None when none): the port
    asked for, else the one the sitemap names when it is a free port on 127.0.0.1, else any free one."""
    origin = sitemap_origin(site)
    m = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/", origin or "")
    if asked is None and m:
        from descent.site import serve as site_serve

        if not site_serve.port_busy(int(m.group(1))):
            return int(m.group(1)), None
    port = asked or free_port()
    served = f"http://127.0.0.1:{port}/"
    return port, (None if origin in (None, served) else (origin, served))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a browser dropping a request is normal
            super().handle_error(request, client_address)


def serve(directory: Path, port: int, sitemap: tuple[str, str] | None = None) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(_handler(sitemap), directory=str(directory))
    httpd = _QuietServer(("127.0.0.1", port), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


# -- building -----------------------------------------------------------------------------------


def tree_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [p for p in out.split("\0") if p and (ROOT / p).is_file()]


def checkout(dest: Path) -> Path:
    """A copy of the working tree at ``dest`` with ``node_modules`` linked (no .cache/)."""
    for rel in tree_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    (dest / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
    return dest


def _env(site_url: str) -> dict[str, str]:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", DESCENT_SITE_URL=site_url)
    env.setdefault("SOURCE_DATE_EPOCH", "1700000000")
    return env


#: CPU seconds (user + system) of each finished child process, by measurement: on a shared
#: machine wall time is an upper bound, CPU time shows the work itself.
CHILD_CPU_S: dict[str, float] = {}


def _child_cpu() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed_build(tree: Path, out: Path, site_url: str, label: str = "build") -> float:
    cpu0 = _child_cpu()
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=tree,
        capture_output=True,
        text=True,
        env=_env(site_url),
    )
    elapsed = time.perf_counter() - start
    CHILD_CPU_S[label] = _child_cpu() - cpu0
    if proc.returncode != 0:
        raise RuntimeError(f"mkdocs build failed: {proc.stderr[-1500:]}")
    return elapsed


def _edit_page(tree: Path) -> tuple[Path, str]:
    """The Markdown page the edits go to and its built path (the first part page)."""
    src = sorted((tree / "docs").glob("part-*.md"))[0]
    return src, src.with_suffix(".html").name


def serve_rebuild_seconds(tree: Path) -> list[float]:
    """Seconds from a one-line edit to the live preview (``nox -s preview``) serving it, for
    :data:`SERVE_EDITS` edits."""
    from descent.site import preview

    port = free_port()
    url_root = f"http://127.0.0.1:{port}/"
    proc = subprocess.Popen(
        preview.command(port),
        cwd=tree,
        env=_env(url_root),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    src, built = _edit_page(tree)
    original = src.read_text()
    times = []
    try:
        _wait_for(url_root + built, lambda body: True, timeout=300)
        for i in range(SERVE_EDITS):
            marker = f"bench-edit-{i}-{time.time_ns()}"
            time.sleep(1.5)  # mkdocs serve's watcher debounces; keep edits apart
            start = time.perf_counter()
            src.write_text(original + f"\n\nA one-line edit ({marker}).\n")
            _wait_for(url_root + built, lambda body, m=marker: m in body, timeout=120)
            times.append(time.perf_counter() - start)
    finally:
        src.write_text(original)
        # Ctrl-C, as a contributor stops it: MkDocs then removes its temporary site (a terminate()
        # left a few hundred MB in /tmp each run); terminate and kill if it does not stop.
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    return times


def _wait_for(url: str, ok, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if ok(r.read().decode("utf-8", "replace")):
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{url} did not become ready in {timeout:g} s")


# -- in the browser -----------------------------------------------------------------------------

#: Records when each widget turns live (performance.now(), ms since navigation start).
INIT_SCRIPT = """
window.__bench = {live: [], marker: Math.random()};
new MutationObserver((recs) => {
  for (const r of recs) {
    if (r.attributeName === "data-state" && r.target.dataset.state === "live") {
      window.__bench.live.push(performance.now());
    }
  }
}).observe(document, {subtree: true, attributes: true, attributeFilter: ["data-state"]});
"""

RECOMPUTE_JS = """
async ([index, changes]) => {
  const root = document.querySelectorAll(".descent-widget[data-widget]")[index];
  const out = root.querySelector(".descent-widget__output");
  const num = root.querySelector(
    ".descent-field--range .descent-field__number, .descent-field--number .descent-field__number");
  const sel = root.querySelector(".descent-field--select select");
  const text = root.querySelector(".descent-field--text textarea");
  root.scrollIntoView();
  let change, restore, input, eventName = "input";
  if (num) {
    // Walk between the default and nearby valid values, so every change alters the result.
    const min = Number(num.min), max = Number(num.max), step = Number(num.step) || 1;
    const start = num.value;
    input = num;
    change = (i) => {
      let v = Number(start) + step * ((i % 2) ? 1 : -1) * (1 + (i % 5));
      if (v < min || v > max) v = Number(start) + step * ((i % 2) ? -1 : 1) * (1 + (i % 5));
      v = Math.min(max, Math.max(min, v));
      num.value = String(Number(v.toFixed(6)));
    };
    restore = () => { num.value = start; };
  } else if (sel && sel.options.length > 1) {
    const start = sel.selectedIndex;
    input = sel; eventName = "change";
    change = (i) => { sel.selectedIndex = (start + 1 + (i % (sel.options.length - 1))) % sel.options.length; };
    restore = () => { sel.selectedIndex = start; };
  } else if (text) {
    const start = text.value;
    input = text;
    change = (i) => { text.value = start + " " + "abcdefghij".slice(0, 1 + (i % 10)); };
    restore = () => { text.value = start; };
  } else {
    return {widget: root.dataset.widget, skipped: "no number, select or text input"};
  }
  const times = [];
  for (let i = 0; i < changes; i++) {
    const done = new Promise((resolve) => {
      const mo = new MutationObserver(() => { mo.disconnect(); resolve(performance.now()); });
      mo.observe(out, {childList: true, subtree: true, characterData: true});
      setTimeout(() => { mo.disconnect(); resolve(null); }, 5000);
    });
    change(i);
    const t0 = performance.now();
    input.dispatchEvent(new Event(eventName, {bubbles: true}));
    const t1 = await done;
    if (t1 !== null) times.push(t1 - t0);
    // Three changes in a row left the output as it was (a constrained slider that refuses the
    // nudges, a control that sets nothing): 5 s each for 50 changes is four minutes of nothing.
    if (!times.length && i >= 2) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  restore();
  input.dispatchEvent(new Event(eventName, {bubbles: true}));
  return {widget: root.dataset.widget, input: input.name, times};
}
"""


EXTREMES_JS = """
async ([index, cases]) => {
  const root = document.querySelectorAll(".descent-widget[data-widget]")[index];
  const out = root.querySelector(".descent-widget__output");
  root.scrollIntoView();
  // Write a value into a field as widgets.js's setField does; return the control and the event a
  // reader's edit of it fires.
  const write = (f, value) => {
    switch (f.dataset.kind) {
      case "range": case "number": {
        const n = f.querySelector(".descent-field__number"); n.value = value; return [n, "input"];
      }
      case "select": { const c = f.querySelector("select"); c.value = value; return [c, "change"]; }
      case "segmented": {
        let c = null;
        for (const r of f.querySelectorAll("input[type=radio]")) { r.checked = r.value === value; if (r.checked) c = r; }
        return [c, "change"];
      }
      case "toggle": { const c = f.querySelector("input[type=checkbox]"); c.checked = value === "true"; return [c, "change"]; }
      default: { const c = f.querySelector("textarea, input"); c.value = value; return [c, "input"]; }
    }
  };
  const read = (f) => {
    switch (f.dataset.kind) {
      case "range": case "number": return f.querySelector(".descent-field__number").value;
      case "select": return f.querySelector("select").value;
      case "segmented": return (f.querySelector("input[type=radio]:checked") || {}).value;
      case "toggle": return f.querySelector("input[type=checkbox]").checked ? "true" : "false";
      default: return f.querySelector("textarea, input").value;
    }
  };
  // When the output swapped; "no swap" when the widget is not busy a moment after the edit yet its
  // output never changed (an error reply, shown under a field); "timeout" after 30 s.
  const swapped = () => new Promise((resolve) => {
    const t0 = performance.now();
    const end = (v) => { mo.disconnect(); clearInterval(poll); resolve(v); };
    const mo = new MutationObserver(() => end(performance.now()));
    mo.observe(out, {childList: true, subtree: true, characterData: true});
    const poll = setInterval(() => {
      const waited = performance.now() - t0;
      if (waited > 30000) end("timeout");
      else if (waited > 300 && root.getAttribute("aria-busy") !== "true") end("no swap");
    }, 50);
  });
  const idle = async () => {
    while (root.getAttribute("aria-busy") === "true") await new Promise((r) => setTimeout(r, 50));
  };
  const times = [];
  for (const [name, value] of cases) {
    const f = root.querySelector(`.descent-field[data-field="${CSS.escape(name)}"]`);
    if (!f || f.hidden) continue;
    const before = read(f);
    if (before === value || Number(before) === Number(value) && value !== "") continue;  // its default
    const done = swapped();
    const [control, event] = write(f, value);
    if (!control) { times.push([name, value, "no control for this value", null]); continue; }
    const rt = window.descentRuntime;
    if (rt) rt.results = [];  // widgets.js notes each reply's Python time here
    const t0 = performance.now();
    control.dispatchEvent(new Event(event, {bubbles: true}));
    const t1 = await done;
    const mine = rt ? rt.results.filter((x) => x.widget === root.dataset.widget) : [];
    // A timeout counts as the 30 s it waited (and is named): it must not pass for "no swap".
    const got = typeof t1 === "number" ? t1 - t0 : t1 === "timeout" ? performance.now() - t0 : t1;
    times.push([name, value, got, mine.length ? mine[mine.length - 1].ms : null, t1 === "timeout"]);
    await idle();
    // Back to the default (computed already: the worker warmed it), so each case is one input alone.
    const back = swapped();
    const [again, event2] = write(f, before);
    again.dispatchEvent(new Event(event2, {bubbles: true}));
    await back;
    await idle();
    await new Promise((r) => setTimeout(r, 20));
  }
  return {widget: root.dataset.widget, times};
}
"""


def site_pages(site: Path) -> list[str]:
    return sorted(
        p.relative_to(site).as_posix()
        for p in site.rglob("*.html")
        if not p.relative_to(site).as_posix().startswith("assets/")
    )


#: A widget's root: class "descent-widget" among others ("descent-widget descent-far": a widget drawn
#: after the load), not its parts ("descent-widget__form").
WIDGET_ROOT = re.compile(r'class="(?:[^"]* )?descent-widget(?: [^"]*)?"')


def widget_pages(site: Path) -> list[str]:
    """The pages that hold a widget (far ones included: Parts 0 and 3 have only those)."""
    return [p for p in site_pages(site) if WIDGET_ROOT.search((site / p).read_text(errors="replace"))]


def _is_runtime(url: str, base: str) -> bool:
    rel = url.removeprefix(base)
    return rel.startswith(RUNTIME_PREFIXES)


def page_weights(browser, base: str, pages: list[str]) -> dict[str, dict]:
    out = {}
    for path in pages:
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        page = ctx.new_page()
        responses = []
        page.on("response", lambda r, out=responses: out.append(r))
        page.goto(base + path, wait_until="load")
        try:
            page.wait_for_load_state("networkidle", timeout=15000)
        except Exception:  # noqa: BLE001  (a long-lived worker fetch; the weight is still valid)
            pass
        by_type: dict[str, int] = {}
        total = runtime = raw_total = 0
        files = []
        for r in responses:
            if not r.url.startswith(base):
                continue
            try:
                body = r.body()
            except Exception:  # noqa: BLE001  (redirects and aborted requests have no body)
                continue
            gz = len(gzip.compress(body, GZIP_LEVEL, mtime=0))
            if _is_runtime(r.url, base):
                runtime += gz
                continue
            kind = r.request.resource_type
            by_type[kind] = by_type.get(kind, 0) + gz
            total += gz
            raw_total += len(body)
            files.append((gz, r.url.removeprefix(base)))
        out[path] = {
            "gzip_bytes": total,
            "raw_bytes": raw_total,
            "by_type_gzip_bytes": dict(sorted(by_type.items())),
            "largest": [f"{u} ({b:,} B gz)" for b, u in sorted(files, reverse=True)[:5]],
            "runtime_gzip_bytes_excluded": runtime,
        }
        ctx.close()
    return out


#: The runtime's requests whose timing the cold start reports (a substring of the URL each).
TIMELINE_FILES = ("worker.js", "pyodide.mjs", "pyodide.asm.mjs", "gzip/pyodide.asm.wasm", "boot/pyodide.asm.wasm",
                  "python_stdlib.empty.zip", "pyodide-snapshot.bin.gz", "manifest.json", ".tar.gz")


def _cold_live(browser, base: str, path: str, block_snapshot: bool = False) -> tuple[float, dict[str, Any]]:
    """(seconds from navigation to the first live widget, the runtime's request timeline in ms)."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    ctx.add_init_script(INIT_SCRIPT)
    if block_snapshot:
        ctx.route("**/pyodide-snapshot.bin*", lambda route: route.fulfill(status=404, body="bench: no snapshot"))
    page = ctx.new_page()
    t0 = time.perf_counter()
    timeline: dict[str, Any] = {}

    def mark(kind: str, url: str) -> None:
        for name in TIMELINE_FILES:
            if name in url:
                timeline.setdefault(name, {}).setdefault(kind, round((time.perf_counter() - t0) * 1000))

    page.on("request", lambda r: mark("requested_ms", r.url))
    page.on("requestfinished", lambda r: mark("finished_ms", r.url))
    page.goto(base + path, wait_until="domcontentloaded")
    timeline["domcontentloaded_ms"] = round((time.perf_counter() - t0) * 1000)
    page.evaluate("document.querySelector('.descent-widget[data-widget]').scrollIntoView()")
    page.wait_for_function("() => window.__bench.live.length > 0", timeout=120_000)
    live_s = page.evaluate("window.__bench.live[0]") / 1000
    runtime = page.evaluate("() => window.descentRuntime || null")
    if runtime:
        timeline["worker_steps_ms"] = runtime.get("timings")
        timeline["worker_ready_ms"] = runtime.get("readyMs")
    ctx.close()
    return live_s, timeline


def snapshot_tradeoff(browser, base: str, site: Path, path: str, with_snapshot_s: float) -> dict[str, Any]:
    """What the memory snapshot buys: the cold first live result without it, against its size."""
    snap = next(site.rglob("pyodide-snapshot.bin"), None)
    if snap is None:
        return {"error": "no pyodide-snapshot.bin in the site"}
    raw = snap.stat().st_size
    gz = len(gzip.compress(snap.read_bytes(), GZIP_LEVEL, mtime=0))
    without_s, _ = _cold_live(browser, base, path, block_snapshot=True)
    saved = without_s - with_snapshot_s
    out = {
        "snapshot_bytes": raw,
        "snapshot_gzip_bytes": gz,
        "first_live_cold_with_snapshot_s": with_snapshot_s,
        "first_live_cold_without_snapshot_s": without_s,
        "boot_seconds_saved": saved,
    }
    if saved > 0:
        # Below this bandwidth the snapshot's (gzipped) download takes longer than the boot it saves.
        out["break_even_bandwidth_mbit_s"] = gz * 8 / saved / 1e6
    return out


def live_timings(browser, base: str, pages: list[str], site: Path | None = None) -> dict[str, Any]:
    """First live result cold on ``pages[0]`` (with its request timeline), then on ``pages[1]`` after
    instant navigation; and, with ``site``, the same cold start without the memory snapshot."""
    res: dict[str, Any] = {"cold_page": pages[0]}
    cold_s, timeline = _cold_live(browser, base, pages[0])
    res["cold_timeline_ms"] = timeline
    if site is not None:
        res["snapshot"] = snapshot_tradeoff(browser, base, site, pages[0], cold_s)
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    ctx.add_init_script(INIT_SCRIPT)
    page = ctx.new_page()
    page.goto(base + pages[0], wait_until="domcontentloaded")
    page.evaluate("document.querySelector('.descent-widget[data-widget]').scrollIntoView()")
    page.wait_for_function("() => window.__bench.live.length > 0", timeout=120_000)
    res["first_live_cold_s"] = cold_s
    res["first_live_warm_cache_s"] = page.evaluate("window.__bench.live[0]") / 1000
    if len(pages) > 1:
        target = pages[1]
        marker = page.evaluate("window.__bench.marker")
        clicked = page.evaluate(
            """(target) => {
                const a = [...document.querySelectorAll('a[href]')].find(
                    (a) => new URL(a.href, location.href).pathname.endsWith('/' + target));
                if (!a) return false;
                window.__bench.live = [];
                window.__bench.clickAt = performance.now();
                a.click();
                return true;
            }""",
            target,
        )
        res["next_page"] = target
        if clicked:
            page.wait_for_function("() => window.__bench.live.length > 0", timeout=60_000)
            res["first_live_next_page_s"] = (
                page.evaluate("(window.__bench.live[0] - window.__bench.clickAt)") / 1000
            )
            res["instant_navigation"] = page.evaluate("window.__bench.marker") == marker
        else:
            res["first_live_next_page_error"] = f"no link to {target} on {pages[0]}"
    ctx.close()
    return res


def _live_widgets(page, base: str, pages: list[str], never_live):
    """Each widget of each page in turn, scrolled into view and live: ``(path, index, name)``. One
    that does not go live in 120 s is handed to ``never_live(path, index, exc)`` and skipped."""
    for path in pages:
        page.goto(base + path, wait_until="domcontentloaded")
        names = page.evaluate("[...document.querySelectorAll('.descent-widget[data-widget]')].map(e => e.dataset.widget)")
        for i, name in enumerate(names):
            page.evaluate(f"document.querySelectorAll('.descent-widget[data-widget]')[{i}].scrollIntoView()")
            try:
                page.wait_for_function(
                    f"() => document.querySelectorAll('.descent-widget[data-widget]')[{i}].dataset.state === 'live'",
                    timeout=120_000,
                )
            except Exception as exc:  # noqa: BLE001
                never_live(path, i, exc)
                continue
            yield path, i, name


def recompute_latency(browser, base: str, pages: list[str]) -> list[dict]:
    out = []
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    ctx.add_init_script(INIT_SCRIPT)
    page = ctx.new_page()

    def never_live(path, i, exc):
        out.append({"page": path, "index": i, "error": f"never went live: {exc}"[:200]})

    for path, i, _name in _live_widgets(page, base, pages, never_live):
        r = page.evaluate(RECOMPUTE_JS, [i, RECOMPUTE_CHANGES])
        r["page"] = path
        if r.get("times"):
            t = r.pop("times")
            r.update(changes=len(t), median_ms=statistics.median(t), worst_ms=max(t))
        out.append(r)
    ctx.close()
    return out


def extreme_cases(name: str) -> list[list[str]]:
    """``[[input, value], ...]``: each input of widget ``name`` alone at each of its extremes
    (:meth:`descent.widgets.Input.extremes`), as issue 28 asks every widget to recompute within the
    goal; inputs shown only beside another's value (``when``) are left out, as in the budget test."""
    import descent.widgets as w

    # As the page's form writes a value (widgets.js's setField takes that string).
    return [[i.name, w._form_value(x)] for i in w.get(name).inputs if i.when is None for x in i.extremes()]


def recompute_extremes(browser, base: str, pages: list[str], loads: int = EXTREME_LOADS) -> list[dict]:
    """Each widget's recompute with each input alone at each of its extremes, in the browser: the
    reader's edit to the output swapped, the first time those inputs are computed. Each case is timed
    once per fresh page load (a new worker, empty caches), ``loads`` times; its figure is the median
    of the loads whose output swapped. An extreme equal to the default is not a case.
    Rows: ``{page, widget, input, value, times, median_ms, python_ms}``. ``times`` holds each load's
    ms, or "no swap" (the reply was an error, shown under a field: ``median_ms`` None when every load
    says so), or "timeout after N ms" / "error: ..." (``median_ms`` is then infinite: MISSED);
    ``python_ms`` is the median of the worker's own Python time."""
    cases: dict[tuple, list] = {}
    for _ in range(loads):
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        ctx.add_init_script(INIT_SCRIPT)
        page = ctx.new_page()
        last = None
        # (recompute_latency reports a widget that never went live)
        for path, i, name in _live_widgets(page, base, pages, lambda *_: None):
            # Widgets scrolled into view with this one ask for their defaults: the cases wait until
            # those replies are in, so that none waits behind them in the worker (and, on a new
            # page, until the worker has warmed the widgets).
            time.sleep(EXTREME_SETTLE_S if path != last else 0.3)
            last = path
            try:
                page.wait_for_function("() => !document.querySelector('.descent-widget[aria-busy=\"true\"]')",
                                       timeout=120_000)
                r = page.evaluate(EXTREMES_JS, [i, extreme_cases(name)])
            except Exception as exc:  # noqa: BLE001 (one widget's failure is a row, not the end of the pass)
                cases.setdefault((path, i, name, "-", "-"), []).append((f"error: {exc}"[:200], None))
                continue
            for field, value, ms, python_ms, *timed_out in r["times"]:
                cases.setdefault((path, i, name, field, value), []).append(
                    (f"timeout after {ms:.0f} ms" if timed_out and timed_out[0] else ms, python_ms))
        ctx.close()
    out = []
    for (path, _i, name, field, value), got in cases.items():
        times = [t for t, _ in got]
        # A timeout or a failure is worse than any time: the case's figure is then infinite (MISSED).
        bad = [t for t in times if isinstance(t, str) and t != "no swap"]
        seen = [t for t in times if isinstance(t, (int, float))]
        python = [p for _, p in got if p is not None]
        out.append({"page": path, "widget": name, "input": field, "value": value, "times": times,
                    "median_ms": math.inf if bad else statistics.median(seen) if seen else None,
                    "python_ms": statistics.median(python) if python else None})
    return out


#: Longest wait for the model to load or to answer, in milliseconds (a busy 2-core machine).
MODEL_TIMEOUT_MS = 600_000


def _load_model_once(page) -> dict[str, Any]:
    panel = page.locator('.descent-widget[data-widget="model_in_browser"]')
    panel.scroll_into_view_if_needed()
    page.wait_for_selector('.descent-widget[data-widget="model_in_browser"][data-state="live"]', timeout=120_000)
    start = time.perf_counter()
    panel.locator('[data-action="load-model"]').click()
    page.wait_for_function("() => window.descentLLM.state().phase !== 'loading'", timeout=MODEL_TIMEOUT_MS)
    seconds = time.perf_counter() - start
    state = page.evaluate("() => window.descentLLM.state()")
    if state["phase"] != "ready":
        raise RuntimeError(f"the model did not load: {state['message']}")
    return {"seconds": seconds, **state["info"]}


def model_in_browser(browser, base: str, site: Path) -> dict[str, Any]:
    """Load time (download + engine start, then from Cache Storage) and the engine's own speed."""
    from descent import engine, tokenizer

    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    page = ctx.new_page()
    path = "part-0-the-prompt.html" if (site / "part-0-the-prompt.html").is_file() else "part-0-the-prompt/"
    try:
        page.goto(base + path, wait_until="domcontentloaded")
        first = _load_model_once(page)
        request = {"kind": "speed", "text": engine.SPEED_TEXT, "steps": engine.SPEED_DECODE_STEPS,
                   "tokens": len(tokenizer.smollm2().encode(engine.SPEED_TEXT))}
        speed = page.evaluate("(r) => window.descentLLM.ask(r)", request)
        page.reload(wait_until="domcontentloaded")
        again = _load_model_once(page)
    finally:
        ctx.close()
    return {
        "model_load_s": first["seconds"],
        "model_download_s": first["download_ms"] / 1000,
        "model_engine_start_s": first["load_ms"] / 1000,
        "model_load_from_storage_s": again["seconds"],
        "browser_prefill_tokens_per_s": speed["prefill_tokens_per_s"],
        "browser_decode_tokens_per_s": speed["decode_tokens_per_s"],
        "threads": speed["threads"],
        "engine": speed["engine"],
        "prefill_tokens": speed["prompt_tokens"],
        "decode_tokens": speed["decode_tokens"],
    }


def browser_measurements(base: str, site: Path) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    pages = site_pages(site)
    wpages = widget_pages(site)
    # Part pages first (a reader starts there), then the others that carry widgets.
    wpages.sort(key=lambda p: (not p.startswith("part-"), p))
    res: dict[str, Any] = {"pages": pages, "widget_pages": wpages}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            res["page_weight"] = page_weights(browser, base, pages)
            if wpages:
                res["live"] = live_timings(browser, base, wpages, site)
                res["recompute"] = recompute_latency(browser, base, wpages)
                res["recompute_extremes"] = _attempt(res, "recompute_extremes", recompute_extremes, browser, base, wpages)
                # The runtime's bytes on the wire and the worker's steps, cold, on the parts with a
                # first-screen widget (tools/runtime_timeline.py).
                cold_pages = [p for p in wpages if p.startswith(COLD_PAGES)]
                res["runtime"] = [runtime_timeline.runtime_cold_start(browser, base, p) for p in cold_pages]
                # Once, on the first of them, as a reader on Lighthouse's slow phone would wait.
                if cold_pages:
                    res["runtime_phone"] = _attempt(res, "runtime_phone", runtime_timeline.runtime_cold_start,
                                                    browser, base, cold_pages[0], 600_000, True)
            res["model"] = _attempt(res, "model_in_browser", model_in_browser, browser, base, site)
        finally:
            browser.close()
    return res


#: The pages whose cold first live result is measured (issue 28): each has a widget in its first screen.
COLD_PAGES = ("part-0", "part-2", "part-3", "part-5")


#: Lighthouse metrics kept in the report (milliseconds), to see why a performance score is low.
LIGHTHOUSE_METRICS = (
    "first-contentful-paint",
    "largest-contentful-paint",
    "total-blocking-time",
    "speed-index",
)


# -- Lighthouse ---------------------------------------------------------------------------------

#: The forms Lighthouse runs (``--lighthouse-only-mobile`` keeps the first).
LIGHTHOUSE_FORMS = ["mobile", "desktop"]


#: Rounds of Lighthouse per page and form (``--lighthouse-runs``): a score swings by up to 0.16 between
#: two runs of one page on a shared two-core machine (Lighthouse simulates a phone from the timings it
#: observes, so a busy machine reads as a slow page); the report gives the median and the range, as
#: Lighthouse's own documentation advises (the median of several runs, not one).
LIGHTHOUSE_RUNS = 3


def _lighthouse_once(base: str, path: str, form: str, out: Path) -> dict[str, Any]:
    """One Lighthouse run of ``base + path`` in ``form``: its scores, metrics (ms), CLS and failing audits."""
    flags = " ".join(["--headless=new", *CHROMIUM_ARGS])
    cmd = [
        shutil.which("node") or "node",
        str(LIGHTHOUSE_CLI),
        base + path,
        "--quiet",
        "--output=json",
        f"--output-path={out}",
        "--only-categories=performance,accessibility,best-practices",
        f"--chrome-flags={flags}",
        "--max-wait-for-load=60000",
    ]
    if form == "desktop":
        cmd.append("--preset=desktop")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, CHROME_PATH=CHROMIUM), timeout=300)
    if proc.returncode != 0 or not out.is_file():
        return {"error": (proc.stderr or proc.stdout)[-400:]}
    report = json.loads(out.read_text())
    out.unlink()  # the full reports are large; the scores are what the report keeps
    cats = report["categories"]
    res: dict[str, Any] = {c: cats[c]["score"] for c in ("performance", "accessibility", "best-practices")}
    res["metrics_ms"] = {
        m: round(report["audits"][m]["numericValue"])
        for m in LIGHTHOUSE_METRICS
        if report["audits"].get(m, {}).get("numericValue") is not None
    }
    cls = report["audits"].get("cumulative-layout-shift", {}).get("numericValue")
    if cls is not None:
        res["cls"] = round(cls, 4)
    res["failing_audits"] = sorted(
        a["id"]
        for c in ("accessibility", "best-practices")
        for ref in cats[c]["auditRefs"]
        if (a := report["audits"][ref["id"]]).get("score") is not None and a["score"] < 1 and ref["weight"] > 0
    )
    return res


def lighthouse(base: str, pages: list[str], outdir: Path, runs: int = LIGHTHOUSE_RUNS) -> dict[str, Any]:
    """Lighthouse on each page in each of :data:`LIGHTHOUSE_FORMS`, ``runs`` rounds (every page once
    per round, so a busy spell of the machine falls on all pages alike rather than on one).

    Returns ``{"PAGE FORM": {...}}``: the median of each score and metric over the runs that
    completed (``runs_ok`` of them), ``performance_runs`` (each run's score, in order), the largest CLS
    and every audit that failed in any run; ``{"error": ...}`` for a page with no completed run.
    """
    if runs < 1:
        raise ValueError(f"Lighthouse runs must be 1 or more, got {runs}")
    if shutil.which("node") is None or not LIGHTHOUSE_CLI.is_file():
        return {"error": "Lighthouse not installed: npm ci --prefix tools/lighthouse"}
    outdir.mkdir(parents=True, exist_ok=True)
    seen: dict[str, list[dict[str, Any]]] = {}
    for _ in range(runs):
        for path in pages:
            for form in LIGHTHOUSE_FORMS:
                out = outdir / f"{path.replace('/', '_')}.{form}.json"
                seen.setdefault(f"{path} {form}", []).append(_lighthouse_once(base, path, form, out))
    results: dict[str, Any] = {}
    for key, all_runs in seen.items():
        ok = [x for x in all_runs if "error" not in x]
        if not ok:
            results[key] = all_runs[-1]
            continue
        med: dict[str, Any] = {c: statistics.median(x[c] for x in ok) for c in ("performance", "accessibility", "best-practices")}
        med["performance_runs"] = [x["performance"] for x in ok]
        med["runs_ok"] = len(ok)
        med["metrics_ms"] = {
            m: round(statistics.median(x["metrics_ms"][m] for x in ok if m in x["metrics_ms"]))
            for m in LIGHTHOUSE_METRICS
            if any(m in x["metrics_ms"] for x in ok)
        }
        if any("cls" in x for x in ok):
            med["cls"] = max(x["cls"] for x in ok if "cls" in x)
        failing = sorted({a for x in ok for a in x["failing_audits"]})
        if failing:
            med["failing_audits"] = failing
        results[key] = med
    return results


# -- the stock page -----------------------------------------------------------------------------

#: The yardstick's one page: Material's look with nothing of the site's (filler text, a list, a
#: code block, a table), so its load time says how fast this machine is right now.
STOCK_PAGE = """# A stock page

Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore
et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut
aliquip ex ea commodo consequat.

## A section

Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla
pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt mollit
anim id est laborum.

- Sed ut perspiciatis unde omnis iste natus error sit voluptatem.
- Nemo enim ipsam voluptatem quia voluptas sit aspernatur aut odit.
- Neque porro quisquam est, qui dolorem ipsum quia dolor sit amet.

```python
def hello(name):
    return f"Hello, {name}"
```

| column | another |
| --- | --- |
| lorem | ipsum |
| dolor | sit |

## Another section

At vero eos et accusamus et iusto odio dignissimos ducimus qui blanditiis praesentium voluptatum
deleniti atque corrupti quos dolores et quas molestias excepturi sint occaecati cupiditate non
provident.
"""


def build_stock(dest: Path, site_url: str) -> tuple[Path, float]:
    """Build the stock page (:data:`STOCK_PAGE`): a minimal MkDocs project with Material's theme
    (the same version as the site's) and its defaults but ``font: false`` (the site loads nothing
    from another origin, and this machine may have no network). Returns (its site folder, seconds)."""
    proj = dest / "stock"
    (proj / "docs").mkdir(parents=True, exist_ok=True)
    (proj / "mkdocs.yml").write_text(
        f"site_name: stock\nsite_url: {site_url}\ntheme:\n  name: material\n  font: false\n", encoding="utf-8")
    (proj / "docs" / "index.md").write_text(STOCK_PAGE, encoding="utf-8")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(proj / "site")],
                          cwd=proj, capture_output=True, text=True, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"the stock page did not build: {proc.stderr[-800:]}")
    return proj / "site", seconds


#: Loads of the stock page whose median is the yardstick.
STOCK_LOADS = 5


def page_load_seconds(browser, url: str, runs: int = STOCK_LOADS) -> list[float]:
    """Seconds from navigation start to the end of the load event, each run in a fresh context."""
    out = []
    for _ in range(runs):
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        page = ctx.new_page()
        page.goto(url, wait_until="load")
        out.append(page.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000)
        ctx.close()
    return out


def stock_measurements(stock_base: str, site_base: str, pages: list[str]) -> dict[str, Any]:
    """The stock page's load time (median of :data:`STOCK_LOADS`, fresh contexts), interleaved with
    the same measurement of each of the site's ``pages``, so both see the same machine."""
    from playwright.sync_api import sync_playwright

    stock, site = [], {p: [] for p in pages}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(STOCK_LOADS):
                stock += page_load_seconds(browser, stock_base + "index.html", 1)
                for p in pages:
                    site[p] += page_load_seconds(browser, site_base + p, 1)
        finally:
            browser.close()
    load = statistics.median(stock)
    return {
        "stock_load_s": load,
        "stock_loads_s": stock,
        "page_load_s": {p: statistics.median(v) for p, v in site.items()},
        "page_load_ratio": {p: statistics.median(v) / load for p, v in site.items()},
    }


#: Timings reported as a ratio to the stock page's load (``ratio_to_stock`` in the summary).
RATIO_KEYS = ("first_live_cold_s", "first_live_next_page_s", "first_live_phone_slow_4g_s", "recompute_ms",
              "recompute_extremes_ms", "recompute_worst_ms")


def ratios(summary: dict[str, Any], stock: dict[str, Any] | None) -> dict[str, float]:
    """Each timing of ``summary`` divided by the stock page's load (builds by the stock build)."""
    if not stock or not stock.get("stock_load_s"):
        return {}
    load = stock["stock_load_s"]
    out = {}
    for key in RATIO_KEYS:
        if key in summary:
            out[key] = summary[key] / (1000 if key.endswith("_ms") else 1) / load
    if stock.get("stock_build_s"):
        for key in ("cold_build_s", "rebuild_s"):
            if key in summary:
                out[key] = summary[key] / stock["stock_build_s"]
    return out


# -- trace --------------------------------------------------------------------------------------


def cold_trace() -> float:
    code = "from descent.trace.bench import cold_trace_seconds; print(cold_trace_seconds())"
    cpu0 = _child_cpu()
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    CHILD_CPU_S["cold_trace (whole process, imports included)"] = _child_cpu() - cpu0
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-800:])
    return float(proc.stdout.strip().splitlines()[-1])


# -- report -------------------------------------------------------------------------------------


def _attempt(results: dict, key: str, fn, *args):
    try:
        t = time.perf_counter()
        value = fn(*args)
        print(f"bench: {key} done in {time.perf_counter() - t:.1f} s", flush=True)
        return value
    except Exception as exc:  # noqa: BLE001  (the bench reports what it could not measure)
        results.setdefault("errors", {})[key] = f"{type(exc).__name__}: {exc}"[:1000]
        print(f"bench: {key} FAILED: {exc}", flush=True)
        return None


def summarize(r: dict[str, Any]) -> dict[str, Any]:
    """The headline numbers, one per goal (worst page / worst widget where there are several)."""
    s: dict[str, Any] = {}
    if "cold_build_s" in r:
        s["cold_build_s"] = r["cold_build_s"]
    # What a contributor sees: the live preview's rebuild; a plain mkdocs build when it was skipped.
    rebuild = r.get("rebuild_serve_median_s", r.get("rebuild_build_s"))
    if rebuild is not None:
        s["rebuild_s"] = rebuild
    b = r.get("browser") or {}
    live = b.get("live") or {}
    for k in ("first_live_cold_s", "first_live_next_page_s"):
        if k in live:
            s[k] = live[k]
    # The cold first live result is the worst page's: the live timing's page and each cold runtime
    # start; a page measured twice (the live timing's page starts cold again) keeps its slower start.
    cold = {live["cold_page"]: live["first_live_cold_s"]} if "first_live_cold_s" in live else {}
    for x in b.get("runtime") or []:
        cold[x["page"]] = max(cold.get(x["page"], 0.0), x["first_live_ms"] / 1000)
    if cold:
        s["first_live_cold_s"] = max(cold.values())
        s["first_live_cold_by_page_s"] = {p: round(v, 3) for p, v in sorted(cold.items())}
    if b.get("runtime"):
        s["runtime_wire_bytes"] = max(x["wire_bytes"] for x in b["runtime"])
    phone = b.get("runtime_phone") or {}
    if "first_live_ms" in phone:
        s["first_live_phone_slow_4g_s"] = phone["first_live_ms"] / 1000
    rec = [x for x in b.get("recompute", []) if "median_ms" in x]
    if rec:
        s["recompute_ms"] = max(x["median_ms"] for x in rec)
        s["recompute_worst_ms"] = max(x["worst_ms"] for x in rec)
    ext = [x for x in b.get("recompute_extremes", []) if x.get("median_ms") is not None]
    if ext:
        worst = max(ext, key=lambda x: x["median_ms"])
        s["recompute_extremes_ms"] = worst["median_ms"]
        s["recompute_extremes_at"] = f"{worst['widget']} {worst['input']}={worst['value']}"
    weights = b.get("page_weight") or {}
    if weights:
        s["page_weight_bytes"] = max(v["gzip_bytes"] for v in weights.values())
    every = {k: v for k, v in (r.get("lighthouse") or {}).items() if isinstance(v, dict) and "performance" in v}
    lh = {k: v for k, v in every.items() if not k.startswith("STOCK ")}
    for form in ("desktop", "mobile"):
        perf = [v["performance"] for k, v in lh.items() if k.endswith(form) and v["performance"] is not None]
        if perf:
            s[f"lighthouse_performance_{form}"] = min(perf)
        stock = [v["performance"] for k, v in every.items() if k.startswith("STOCK ") and k.endswith(form)]
        if stock and stock[0] is not None:
            s[f"stock_lighthouse_performance_{form}"] = stock[0]
    if r.get("stock"):
        s["stock_load_s"] = r["stock"]["stock_load_s"]
    a11y = [v["accessibility"] for v in lh.values() if v.get("accessibility") is not None]
    if a11y:
        s["lighthouse_accessibility"] = min(a11y)
    bp = [v["best-practices"] for v in lh.values() if v.get("best-practices") is not None]
    if bp:
        s["lighthouse_best_practices"] = min(bp)
    if "cold_trace_s" in r:
        s["cold_trace_s"] = r["cold_trace_s"]
    for key, value in (b.get("model") or {}).items():
        if key in MODEL_REPORTED:
            s[key] = value
    return s


#: What the bench reports about the model in the reader's browser (no goal: it depends on the reader's machine).
MODEL_REPORTED = ("model_load_s", "model_download_s", "model_engine_start_s", "model_load_from_storage_s",
                  "browser_prefill_tokens_per_s", "browser_decode_tokens_per_s")


def verdicts(summary: dict[str, Any]) -> dict[str, str]:
    out = {}
    for key, (op, limit, _unit) in GOALS.items():
        if key not in summary:
            out[key] = "not measured"
        else:
            v = summary[key]
            ok = v <= limit if op == "<=" else v >= limit
            out[key] = "met" if ok else "MISSED"
    return out


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def markdown(r: dict[str, Any]) -> str:
    s, v = r["summary"], r["verdicts"]
    lines = [
        "# descent bench",
        "",
        f"Machine: {r['machine']}. Measured {r['when']}; load average (1, 5, 15 min) "
        f"{r.get('load_average_start')} at the start, {r.get('load_average_end')} at the end: "
        "timings on a shared machine are upper bounds. Sizes in bytes (KB = 1,000 bytes).",
        "",
        "| measure | value | goal | verdict |",
        "| --- | --- | --- | --- |",
    ]
    for key, (op, limit, unit) in GOALS.items():
        lines.append(f"| {key} | {_fmt(s.get(key, '-'))} {unit} | {op} {_fmt(limit)} {unit} | {v[key]} |")
    for key in ("recompute_worst_ms", "recompute_extremes_at", "first_live_cold_by_page_s", "first_live_phone_slow_4g_s", "lighthouse_best_practices", "stock_load_s",
                "stock_lighthouse_performance_mobile", "stock_lighthouse_performance_desktop", *MODEL_REPORTED):
        if key in s:
            lines.append(f"| {key} | {_fmt(s[key])} | (reported) | |")
    st = r.get("stock")
    if st:
        lines += [
            "",
            "## Against a stock Material page, same run",
            "",
            f"A one-page MkDocs site with Material's theme and nothing of descent's (tools/bench.py STOCK_PAGE), "
            f"built in {st.get('stock_build_s', 0):.1f} s and loaded {len(st['stock_loads_s'])} times, interleaved "
            f"with the pages below: median load {st['stock_load_s']:.3f} s. A ratio is a timing divided by that "
            "load (builds: by the stock build), so figures from different machines and loads compare.",
            "",
            "| timing | ratio to the stock page |",
            "| --- | --- |",
        ]
        lines += [f"| {k} | {v:.2f} |" for k, v in s.get("ratio_to_stock", {}).items()]
        lines += [f"| load of {p} | {st['page_load_ratio'][p]:.2f} ({st['page_load_s'][p]:.3f} s) |"
                  for p in st.get("page_load_s", {})]
    b = r.get("browser") or {}
    if b.get("page_weight"):
        lines += [
            "",
            "## Page weight before interaction (gzip)",
            "",
            "| page | gzip bytes | raw bytes | runtime excluded |",
        ]
        lines += ["| --- | --- | --- | --- |"]
        for p, w in b["page_weight"].items():
            lines.append(
                f"| {p} | {w['gzip_bytes']:,} | {w['raw_bytes']:,} | {w['runtime_gzip_bytes_excluded']:,} |"
            )
    if b.get("recompute"):
        lines += ["", "## Recompute latency (input event to output swapped)", ""]
        lines += [
            "| page | widget | input | changes | median ms | worst ms |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for x in b["recompute"]:
            if "median_ms" in x:
                lines.append(
                    f"| {x['page']} | {x['widget']} | {x['input']} | {x['changes']} | "
                    f"{x['median_ms']:.1f} | {x['worst_ms']:.1f} |"
                )
            else:
                lines.append(
                    f"| {x['page']} | {x.get('widget', '?')} | - | - | {x.get('skipped') or x.get('error')} | |"
                )
    if b.get("recompute_extremes"):
        lines += ["", f"## Recompute at each input's extremes (median of {EXTREME_LOADS} fresh page loads, ms)", ""]
        lines += ["| page | widget | input | value | median ms | of it Python | each load |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for x in sorted(b["recompute_extremes"], key=lambda x: -(x.get("median_ms") or 0)):
            each = ", ".join(t if isinstance(t, str) else f"{t:.1f}" for t in x["times"])
            med = "no swap" if x.get("median_ms") is None else f"{x['median_ms']:.1f}"
            py = "-" if x.get("python_ms") is None else f"{x['python_ms']:.0f}"
            lines.append(f"| {x['page']} | {x['widget']} | {x['input']} | `{x['value'][:40]}` | {med} | {py} | {each} |")
    if b.get("live"):
        live = dict(b["live"])
        snap = live.pop("snapshot", None)
        lines += ["", "## First live result", "", "```", json.dumps(live, indent=1), "```"]
        if snap and "error" not in snap:
            lines += [
                "",
                "## What the Pyodide memory snapshot buys",
                "",
                f"The snapshot is {snap['snapshot_bytes']:,} bytes ({snap['snapshot_gzip_bytes']:,} gzipped). The cold "
                f"first live result took {snap['first_live_cold_with_snapshot_s']:.2f} s with it and "
                f"{snap['first_live_cold_without_snapshot_s']:.2f} s without it (Pyodide booted from scratch): "
                f"it saves {snap['boot_seconds_saved']:.2f} s of start-up here, where the download is local.",
            ]
            if "break_even_bandwidth_mbit_s" in snap:
                lines.append(
                    f"Over a network it pays for its download above about "
                    f"{snap['break_even_bandwidth_mbit_s']:.0f} Mbit/s; on a slower link, booting without it "
                    "would be quicker for the first visit (later visits read it from the browser's cache)."
                )
            else:
                lines.append("It saved nothing measurable here: booting without it was as fast.")
        elif snap:
            lines += ["", f"Snapshot trade-off not measured: {snap['error']}"]
    lh = r.get("lighthouse") or {}
    if lh:
        lines += [
            "",
            "## Lighthouse",
            "",
            "Medians over the runs (the performance range in brackets); CLS is the largest seen.",
            "",
            "| page | form | performance | accessibility | best practices | FCP / LCP / TBT / SI ms | CLS "
            "| failing audits |",
        ]
        lines += ["| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for k, x in lh.items():
            if not isinstance(x, dict):
                continue
            page, _, form = k.rpartition(" ")
            if "error" in x:
                lines.append(f"| {page} | {form} | error: {x['error'][:80]!r} | | | | | |")
            else:
                m = x.get("metrics_ms", {})
                perf = x["performance"]
                if len(x.get("performance_runs", [])) > 1:
                    perf = f"{perf} ({min(x['performance_runs'])}-{max(x['performance_runs'])})"
                lines.append(
                    f"| {page} | {form} | {perf} | {x['accessibility']} | {x['best-practices']} | "
                    f"{' / '.join(str(m.get(k, '-')) for k in LIGHTHOUSE_METRICS)} | {x.get('cls', '-')} | "
                    f"{', '.join(x.get('failing_audits', []))} |"
                )
    lines += ["", "## Builds", ""]
    for key in (
        "cold_build_s",
        "rebuild_build_s",
        "rebuild_serve_s",
        "rebuild_serve_median_s",
        "cold_trace_s",
    ):
        if key in r:
            lines.append(f"- {key}: {r[key] if not isinstance(r[key], float) else round(r[key], 2)}")
    for label, cpu in (r.get("child_cpu_s") or {}).items():
        lines.append(
            f"- CPU seconds (user + system of the process and the children it waited for), {label}: {cpu:.1f}"
        )
    if r.get("errors"):
        lines += ["", "## Not measured", ""] + [f"- {k}: {e}" for k, e in r["errors"].items()]
    if r.get("recompute_cpython"):
        lines += widget_recompute.markdown(r["recompute_cpython"])
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench"), help="directory for report.json and report.md")
    ap.add_argument("--no-lighthouse", action="store_true", help="skip Lighthouse (the slowest part)")
    ap.add_argument("--no-serve", action="store_true", help="skip the live preview's rebuild timing (nox -s preview)")
    ap.add_argument("--site", help="measure this existing build (browser and Lighthouse only; no builds, no trace)")
    ap.add_argument("--port", type=int, help="with --site: serve on this port (default: the one its sitemap names, if free; the sitemap is rewritten for another)")
    ap.add_argument("--lighthouse-only-mobile", action="store_true", help="run Lighthouse's mobile form only")
    ap.add_argument("--lighthouse-runs", type=int, default=LIGHTHOUSE_RUNS,
                    help=f"Lighthouse rounds per page and form; the report gives the median (default {LIGHTHOUSE_RUNS})")
    ap.add_argument("--no-trace", action="store_true", help="skip the cold trace")
    args = ap.parse_args(argv)
    if args.lighthouse_only_mobile:
        LIGHTHOUSE_FORMS[:] = ["mobile"]
    if args.lighthouse_runs < 1:
        ap.error(f"--lighthouse-runs must be 1 or more, got {args.lighthouse_runs}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    r: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average_start": [round(x, 1) for x in os.getloadavg()],
    }
    if args.site:
        site = Path(args.site)
        port, sitemap = port_for(site, args.port)
        with tempfile.TemporaryDirectory(prefix="descent-bench-") as tmp:
            _served(r, site, port, sitemap, Path(tmp), args)
        return _report(r, out)
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    with tempfile.TemporaryDirectory(prefix="descent-bench-") as tmp:
        tree = checkout(Path(tmp) / "tree")
        site = Path(tmp) / "site"
        r["cold_build_s"] = _attempt(r, "cold_build_s", timed_build, tree, site, base, "cold build")
        src, _ = _edit_page(tree)
        original = src.read_text()
        src.write_text(original + "\n\nA one-line edit for the bench.\n")
        r["rebuild_build_s"] = _attempt(
            r, "rebuild_build_s", timed_build, tree, Path(tmp) / "site2", base, "rebuild (mkdocs build)"
        )
        src.write_text(original)
        if not args.no_serve:
            times = _attempt(r, "rebuild_serve_s", serve_rebuild_seconds, tree)
            if times:
                r["rebuild_serve_s"] = times
                r["rebuild_serve_median_s"] = statistics.median(times)
        if (site / "index.html").is_file():
            _served(r, site, port, None, Path(tmp), args)
    if not args.no_trace:
        r["cold_trace_s"] = _attempt(r, "cold_trace_s", cold_trace)
    # Each widget's recompute in CPython CPU time, at its defaults and its inputs' extremes.
    r["recompute_cpython"] = _attempt(r, "recompute_cpython", widget_recompute.recompute_report)
    return _report(r, out)


def _served(r: dict[str, Any], site: Path, port: int, sitemap: tuple[str, str] | None, tmp: Path, args) -> None:
    """The browser measurements and Lighthouse on ``site`` served at ``port``, with the stock page
    (:func:`build_stock`) built, served and measured in the same run."""
    base = f"http://127.0.0.1:{port}/"
    stock_port = free_port()
    stock_base = f"http://127.0.0.1:{stock_port}/"
    built = _attempt(r, "stock_build", build_stock, tmp, stock_base)
    httpd = serve(site, port, sitemap)
    stock_httpd = serve(built[0], stock_port) if built else None
    try:
        if built:
            stock = _attempt(r, "stock", stock_measurements, stock_base, base, STOCK_COMPARED)
            if stock:
                stock["stock_build_s"] = built[1]
                r["stock"] = stock
        r["browser"] = _attempt(r, "browser", browser_measurements, base, site)
        if not args.no_lighthouse:
            pages = site_pages(site)
            lh = _attempt(r, "lighthouse", lighthouse, base, pages, tmp / "lh", args.lighthouse_runs)
            if lh is not None and built:
                stock_lh = _attempt(r, "lighthouse_stock", lighthouse, stock_base, ["index.html"], tmp / "lh-stock", args.lighthouse_runs)
                for k, v in (stock_lh or {}).items():
                    lh[f"STOCK {k}"] = v
            r["lighthouse"] = lh
    finally:
        httpd.shutdown()
        if stock_httpd:
            stock_httpd.shutdown()


#: The site's pages whose load is measured beside the stock page's.
STOCK_COMPARED = ["index.html", "part-3-serving-software.html", "part-5-the-whole-descent.html"]


def _report(r: dict[str, Any], out: Path) -> int:
    r["load_average_end"] = [round(x, 1) for x in os.getloadavg()]
    r["child_cpu_s"] = dict(CHILD_CPU_S)
    r = {k: v for k, v in r.items() if v is not None}
    r["summary"] = summarize(r)
    r["summary"]["ratio_to_stock"] = ratios(r["summary"], r.get("stock"))
    r["verdicts"] = verdicts(r["summary"])
    r["goals"] = {k: {"op": op, "limit": lim, "unit": u} for k, (op, lim, u) in GOALS.items()}
    (out / "report.json").write_text(json.dumps(r, indent=1, sort_keys=True) + "\n")
    (out / "report.md").write_text(markdown(r))
    print(markdown(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
