"""tools/bench.py's serving and its yardstick (issue 28): the site is served by the site's own server,
on the port its sitemap names or with the sitemap rewritten for the port it got, and each timing is
also given as a ratio to a stock Material page's load measured in the same run."""

from __future__ import annotations

import gzip
import importlib.util
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("descent_bench_tool", ROOT / "tools" / "bench.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SITEMAP = """<?xml version="1.0" encoding="UTF-8"?>
<urlset><url><loc>http://127.0.0.1:{port}/index.html</loc></url><url><loc>http://127.0.0.1:{port}/a.html</loc></url></urlset>
"""


def _site(tmp_path: Path, port: int) -> Path:
    (tmp_path / "index.html").write_text("<p>home</p>")
    (tmp_path / "sitemap.xml").write_text(SITEMAP.format(port=port))
    (tmp_path / "sitemap.xml.gz").write_bytes(gzip.compress(SITEMAP.format(port=port).encode()))
    return tmp_path


def test_the_site_is_served_on_its_sitemaps_port_when_free(bench, tmp_path):
    named = bench.free_port()
    assert bench.port_for(_site(tmp_path, named), None) == (named, None)
    asked = bench.free_port()
    assert bench.port_for(tmp_path, asked) == (asked, (f"http://127.0.0.1:{named}/", f"http://127.0.0.1:{asked}/"))


def test_the_sitemap_is_rewritten_for_the_port_the_site_got(bench, tmp_path):
    named, port = 8000, bench.free_port()
    site = _site(tmp_path, named)
    _, rewrite = bench.port_for(site, port)
    httpd = bench.serve(site, port, rewrite)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/sitemap.xml", timeout=5) as r:
            assert r.read().decode() == SITEMAP.format(port=port)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/sitemap.xml.gz", timeout=5) as r:
            assert gzip.decompress(r.read()).decode() == SITEMAP.format(port=port)
        # Everything else comes from the site's own server: gzip for text, the security headers.
        req = urllib.request.Request(f"http://127.0.0.1:{port}/index.html", headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(req, timeout=5) as r:
            assert r.headers["Content-Encoding"] == "gzip" and "Content-Security-Policy" in r.headers
            assert gzip.decompress(r.read()) == b"<p>home</p>"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_timings_are_given_as_ratios_to_the_stock_page(bench):
    summary = {"first_live_cold_s": 1.5, "recompute_ms": 30.0, "cold_build_s": 120.0, "lighthouse_performance_mobile": 0.9}
    stock = {"stock_load_s": 0.3, "stock_build_s": 2.0}
    r = bench.ratios(summary, stock)
    # 1.5 s / 0.3 s; 30 ms = 0.03 s / 0.3 s; 120 s of build / 2 s of the stock build. Scores are not timings.
    assert r == pytest.approx({"first_live_cold_s": 5.0, "recompute_ms": 0.1, "cold_build_s": 60.0})
    assert bench.ratios(summary, None) == {}


def test_lighthouse_reports_the_median_of_its_rounds(bench, tmp_path, monkeypatch):
    # Three made-up runs of one page: the report keeps each score's median, every run's performance
    # in order, the largest CLS and every audit that failed in any run; a failed run is left out.
    runs = iter([
        {"performance": 0.81, "accessibility": 1, "best-practices": 1, "cls": 0.0,
         "metrics_ms": {"total-blocking-time": 500}, "failing_audits": []},
        {"error": "chromium crashed"},
        {"performance": 0.97, "accessibility": 0.96, "best-practices": 1, "cls": 0.02,
         "metrics_ms": {"total-blocking-time": 150}, "failing_audits": ["target-size"]},
        {"performance": 0.92, "accessibility": 1, "best-practices": 1, "cls": 0.01,
         "metrics_ms": {"total-blocking-time": 260}, "failing_audits": []},
    ])
    monkeypatch.setattr(bench, "_lighthouse_once", lambda base, path, form, out: next(runs))
    monkeypatch.setattr(bench, "LIGHTHOUSE_FORMS", ["mobile"])
    monkeypatch.setattr(bench.shutil, "which", lambda name: "/usr/bin/node")
    monkeypatch.setattr(bench, "LIGHTHOUSE_CLI", Path(__file__))  # any file that exists
    got = bench.lighthouse("http://127.0.0.1:1/", ["a.html"], tmp_path, runs=4)["a.html mobile"]
    assert got["performance"] == 0.92  # median of 0.81, 0.97, 0.92
    assert got["performance_runs"] == [0.81, 0.97, 0.92] and got["runs_ok"] == 3
    assert got["accessibility"] == 1 and got["metrics_ms"] == {"total-blocking-time": 260}
    assert got["cls"] == 0.02 and got["failing_audits"] == ["target-size"]
    with pytest.raises(ValueError, match="runs must be 1 or more, got 0"):
        bench.lighthouse("http://127.0.0.1:1/", ["a.html"], tmp_path, runs=0)


def test_the_cold_first_live_result_is_the_worst_pages(bench):
    # Issue 28 sets the cold goal on Parts 0, 2, 3 and 5: the headline is the slowest of the pages
    # measured cold (the live timing's page and each runtime start), and the wire bytes the largest.
    r = {"browser": {
        "live": {"cold_page": "part-0-the-prompt.html", "first_live_cold_s": 1.2},
        "runtime": [{"page": "part-2-weights-as-numbers.html", "first_live_ms": 1400, "wire_bytes": 12_000_000},
                    {"page": "part-3-serving-software.html", "first_live_ms": 1700, "wire_bytes": 12_500_000}],
        "runtime_phone": {"page": "part-0-the-prompt.html", "first_live_ms": 65_000},
    }}
    s = bench.summarize(r)
    assert s["first_live_cold_s"] == 1.7
    # Part 0 started cold twice (the live timing and its runtime start): the slower one counts.
    twice = {"browser": {**r["browser"], "runtime": [*r["browser"]["runtime"],
                                                      {"page": "part-0-the-prompt.html", "first_live_ms": 1000,
                                                       "wire_bytes": 12_000_000}]}}
    assert bench.summarize(twice)["first_live_cold_by_page_s"]["part-0-the-prompt.html"] == 1.2
    twice["browser"]["live"] = {"cold_page": "part-0-the-prompt.html", "first_live_cold_s": 0.9}
    assert bench.summarize(twice)["first_live_cold_by_page_s"]["part-0-the-prompt.html"] == 1.0
    assert s["first_live_cold_by_page_s"] == {"part-0-the-prompt.html": 1.2, "part-2-weights-as-numbers.html": 1.4,
                                              "part-3-serving-software.html": 1.7}
    assert s["runtime_wire_bytes"] == 12_500_000
    assert s["first_live_phone_slow_4g_s"] == 65.0
    assert bench.verdicts(s)["first_live_cold_s"] == "MISSED"
    assert bench.verdicts(s)["runtime_wire_bytes"] == "met"


def test_widget_pages_include_pages_whose_widgets_are_all_far(bench, tmp_path):
    # Parts 0 and 3 hold only far widgets (class "descent-widget descent-far"): the bench skipped both,
    # so their cold start and recompute went unmeasured. A widget's parts do not count (by hand).
    (tmp_path / "far.html").write_text('<div class="descent-widget descent-far" data-widget="a"></div>')
    (tmp_path / "near.html").write_text('<div class="descent-widget" data-widget="b"></div>')
    (tmp_path / "parts.html").write_text('<form class="descent-widget__form"></form>')
    (tmp_path / "none.html").write_text("<p>text</p>")
    assert bench.widget_pages(tmp_path) == ["far.html", "near.html"]


def test_each_inputs_extremes_are_the_cases_the_browser_times(bench):
    # Issue 28: every widget recomputes within the goal at its inputs' extremes. The cases are the
    # widget's own declared extremes, written as its controls hold them (widgets.js setField).
    import descent.widgets as w

    cases = bench.extreme_cases("batching")
    assert ["requests", str(w.get("batching").input("requests").max)] in cases
    assert ["policy", "static"] in cases and ["policy", "continuous"] in cases
    assert ["rate", "0.01"] in cases and ["rate", "100"] in cases  # 0.01 to 100 requests/s, as the form writes them
    assert len(cases) == 2 * len(w.get("batching").inputs)


def test_the_extremes_figure_is_the_worst_cases_median_over_fresh_loads(bench):
    # Each case is timed once per fresh page load; its figure is the median of those, and the
    # headline the worst case's. A case whose output never changed has no figure.
    r = {"browser": {"recompute": [{"widget": "batching", "median_ms": 20.0, "worst_ms": 70.0}],
                     "recompute_extremes": [
                         {"page": "p.html", "widget": "batching", "input": "requests", "value": "500",
                          "times": [41.0, 90.0, 44.0], "median_ms": 44.0},
                         {"page": "p.html", "widget": "paged_kv", "input": "allocator", "value": "paged",
                          "times": [30.0, 31.0, 29.0], "median_ms": 30.0},
                         {"page": "p.html", "widget": "tokenizer", "input": "text", "value": "",
                          "times": [None, None, None], "median_ms": None}]}}
    s = bench.summarize(r)
    assert s["recompute_extremes_ms"] == 44.0 and s["recompute_extremes_at"] == "batching requests=500"
    assert s["recompute_worst_ms"] == 70.0 and "recompute_worst_ms" not in bench.GOALS
    assert bench.verdicts(s)["recompute_extremes_ms"] == "met"
    # A case that timed out is not "no swap": its figure is infinite, and the goal is missed.
    r["browser"]["recompute_extremes"].append({"page": "p.html", "widget": "paged_kv", "input": "samples", "value": "16",
                                               "times": ["timeout after 30012 ms", 20.0, 21.0],
                                               "median_ms": float("inf")})
    assert bench.verdicts(bench.summarize(r))["recompute_extremes_ms"] == "MISSED"
