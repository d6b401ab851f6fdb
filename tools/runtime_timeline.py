"""The widget runtime's cold start in Chromium: bytes on the wire, each start-up step, first live result.

For issue 28 (and ``nox -s bench``: :func:`runtime_cold_start` takes a Playwright browser and the
served site's base URL). One fresh browser context per run (an empty HTTP cache), the page opened,
its first widget scrolled into view; recorded:

* ``first_live_ms``: navigation start to the first widget's ``data-state="live"``;
* ``domcontentloaded_ms``, ``worker_started_ms``: the page's DOMContentLoaded end and the worker's
  start, ms from navigation start; ``worker_ready_ms``: start to ready;
* ``results``: the results so far when the first widget went live (the page keeps the first 200):
  each one's widget, its Python time ``ms`` and its end ``at``, ms since the worker started;
* ``worker_steps_ms``: the worker's own timings (``window.descentRuntime``: each step's end, ms
  since the worker started, or its length);
* ``wire_bytes``: the encoded body bytes of every runtime response (Pyodide's files, the
  snapshot, the package, ``worker.js``), as the network delivered them; ``by_file`` the same by name.

Run alone to compare two builds, interleaved (the machine is shared and noisy: ratios are the
steadier figures)::

    python tools/runtime_timeline.py --site before=/tmp/a --site after=/tmp/b --port 8102 --runs 5 \
        [--gzip] [--page part-0-the-prompt.html ...]

Each run serves the sites in turn from one port (a symlink switched between them: the sites name
that port in ``site_url``), the order alternating from run to run. ``--gzip`` serves through the
bench's gzip handler (a host that compresses text types); without it, ``descent.site.serve``
(the site's own headers, no compression: a static host that sets no Content-Encoding).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: What counts as the runtime (a substring of its URL each).
RUNTIME_PARTS = ("/assets/pyodide/", "/assets/descent/wheels/", "/assets/descent/worker.js", "/assets/descent/guard.js")
LIVE_JS = """
() => new Promise((resolve) => {
  const first = () => document.querySelector('.descent-widget[data-widget]');
  const done = () => first() && first().dataset.state === 'live';
  if (done()) return resolve(performance.now());
  new MutationObserver((recs, mo) => { if (done()) { mo.disconnect(); resolve(performance.now()); } })
    .observe(document, {subtree: true, attributes: true, attributeFilter: ['data-state']});
})
"""


#: Lighthouse's mobile profile (lighthouse-core/config/constants.js, "mobileSlow4G"): 150 ms round
#: trip, 1,638.4 Kbit/s down, 750 Kbit/s up, the CPU slowed 4x; a Moto G Power's screen (412 x 823).
SLOW_4G = {"latency_ms": 150, "down_kbit_s": 1638.4, "up_kbit_s": 750, "cpu_slowdown": 4}
PHONE = {"viewport": {"width": 412, "height": 823}, "device_scale_factor": 1.75, "is_mobile": True, "has_touch": True}


def runtime_cold_start(browser, base: str, path: str, timeout_ms: int = 120_000, phone: bool = False) -> dict[str, Any]:
    """One cold start of the widget runtime on ``base + path`` in a fresh context of ``browser``.

    ``phone``: a phone's screen and touch, its network and CPU throttled as Lighthouse's mobile run
    does (:data:`SLOW_4G`, through the DevTools protocol; the worker's requests are throttled with
    the page's). On a phone the runtime starts after the page's load and the reader's first gesture
    (decisions 0021 and 0028; the run turns the wheel once the page's content is in), so this
    measures what a reader on a slow phone waits for the first live result."""
    ctx = browser.new_context(**PHONE) if phone else browser.new_context(viewport={"width": 1280, "height": 800})
    page = ctx.new_page()
    finished: list = []
    page.on("requestfinished", lambda r: finished.append(r))
    if phone:
        cdp = ctx.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", {
            "offline": False, "latency": SLOW_4G["latency_ms"],
            "downloadThroughput": SLOW_4G["down_kbit_s"] * 1024 / 8, "uploadThroughput": SLOW_4G["up_kbit_s"] * 1024 / 8})
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": SLOW_4G["cpu_slowdown"]})
        timeout_ms = max(timeout_ms, 600_000)
    try:
        page.goto(base + path, wait_until="domcontentloaded")
        if phone:
            # The reader's first gesture (a phone starts the runtime at one, once the page has
            # settled, or after a quiet spell without: decision 0028).
            page.mouse.wheel(0, 1)
        page.evaluate("document.querySelector('.descent-widget[data-widget]').scrollIntoView()")
        page.set_default_timeout(timeout_ms)
        live_ms = page.evaluate(LIVE_JS)
        rt = page.evaluate("() => window.descentRuntime || null") or {}
        dcl_ms = page.evaluate("() => performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
        by_file: dict[str, int] = {}
        for r in finished:
            if any(p in r.url for p in RUNTIME_PARTS):
                try:
                    size = r.sizes()["responseBodySize"]
                except Exception:  # noqa: BLE001  (a request without sizes)
                    continue
                name = r.url.split("/assets/", 1)[1].split("?")[0]
                by_file[name] = by_file.get(name, 0) + size
    finally:
        ctx.close()
    return {"page": path, "phone_slow_4g": phone, "first_live_ms": round(live_ms), "worker_ready_ms": rt.get("readyMs"),
            "domcontentloaded_ms": round(dcl_ms), "worker_started_ms": round(rt["startedAt"]) if "startedAt" in rt else None,
            "results": rt.get("results"), "worker_steps_ms": rt.get("timings"), "wire_bytes": sum(by_file.values()),
            "by_file": dict(sorted(by_file.items(), key=lambda kv: -kv[1]))}


def _serve(link: Path, port: int, gzip_on: bool):
    if gzip_on:
        sys.path.insert(0, str(ROOT / "tools"))
        import bench

        return bench.serve(link, port)
    from descent.site import serve

    httpd = serve.make_server(str(link), port)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def compare(sites: dict[str, Path], port: int, pages: list[str], runs: int, gzip_on: bool) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT / "tools"))
    import bench

    tmp = Path(tempfile.mkdtemp(prefix="runtime-timeline-"))
    link = tmp / "site"
    link.symlink_to(next(iter(sites.values())))
    httpd = _serve(link, port, gzip_on)
    rows: list[dict] = []
    names = list(sites)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=bench.CHROMIUM, args=bench.CHROMIUM_ARGS)
            for i in range(runs):
                order = names if i % 2 == 0 else names[::-1]
                for path in pages:
                    for name in order:
                        link.unlink()
                        link.symlink_to(sites[name])
                        r = runtime_cold_start(browser, f"http://127.0.0.1:{port}/", path)
                        r.update(site=name, run=i, load=os.getloadavg()[0])
                        rows.append(r)
                        print(json.dumps({k: r[k] for k in ("site", "page", "first_live_ms", "domcontentloaded_ms", "worker_started_ms",
                                                            "worker_ready_ms", "results", "worker_steps_ms")}), flush=True)
            browser.close()
    finally:
        httpd.shutdown()
    summary: dict[str, Any] = {}
    for path in pages:
        for name in names:
            mine = [r for r in rows if r["page"] == path and r["site"] == name]
            summary[f"{name} {path}"] = {"first_live_ms_median": statistics.median(r["first_live_ms"] for r in mine),
                                         "first_live_ms": [r["first_live_ms"] for r in mine],
                                         "wire_bytes_median": statistics.median(r["wire_bytes"] for r in mine)}
        if len(names) == 2:
            a, b = names
            ratios = [rb["first_live_ms"] / ra["first_live_ms"] for ra, rb in zip(
                [r for r in rows if r["page"] == path and r["site"] == a],
                [r for r in rows if r["page"] == path and r["site"] == b], strict=True)]
            summary[f"{b}/{a} {path}"] = {"first_live_ratio_median": round(statistics.median(ratios), 3),
                                          "ratios": [round(x, 3) for x in ratios]}
    return {"gzip": gzip_on, "runs": runs, "summary": summary, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", action="append", required=True, help="NAME=DIR (one or two)")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--page", action="append")
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    sites = {s.split("=", 1)[0]: Path(s.split("=", 1)[1]).resolve() for s in args.site}
    res = compare(sites, args.port, args.page or ["part-0-the-prompt.html"], args.runs, args.gzip)
    text = json.dumps(res, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(json.dumps(res["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
