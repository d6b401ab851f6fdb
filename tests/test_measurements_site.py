"""The page "How close are the ceilings?", its figure and tables, and the command line's expected
ranges: the build side and the terminal of descent.predict (host only: they import descent.site,
descent.plotting and descent.cli). Expected values as in test_measurements.py.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from descent import cli, predict
from descent.catalog import measurements as M
from descent.site import values  # noqa: F401  (registers the tables)
from descent.site.shortcodes import registry

ROWS = M.measurements()
ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------
# The page and its figure
# ---------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def test_the_page_is_in_the_navigation_and_uses_the_tables():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "How close are the ceilings?: reference/ceilings.md" in nav
    page = (ROOT / "docs" / "reference" / "ceilings.md").read_text(encoding="utf-8")
    for code in ("descent:figure ceilings-vs-measured", "descent:table measurements",
                 "descent:table measured_classes", "descent:table measured_summary", "descent:table measured_quotes",
                 "descent:value measured_loo_coverage group=all", "descent:value measured_share_median group=all"):
        assert code in page, code


def test_the_tables_hold_every_row():
    tables = registry("table")
    table = tables["measurements"].func()
    quotes = tables["measured_quotes"].func()
    body = [line for line in table.strip().splitlines()[2:]]
    assert len(body) == len(ROWS)
    for p in predict.predictions():
        assert f"`{p.id}`" in quotes
        assert p.source.split("://")[-1].split("/")[0] in table
    assert len(quotes.strip().splitlines()[2:]) == len(ROWS)


def test_the_figure_is_built_from_the_rows():
    from descent import plotting
    from descent.site.figures import draw_figure, load_recipe

    recipe = load_recipe(ROOT / "figures" / "ceilings-vs-measured.py")
    with plotting.style(plotting.THEMES["light"]):
        fig = draw_figure(recipe, "light", False)
    ax = fig.axes[0]
    points = [tuple(c.get_offsets()[0]) for c in ax.collections]
    assert len(points) == len(ROWS)
    want = sorted((p.ceiling_rate, p.measured_rate) for p in predict.predictions())
    assert sorted(points) == [(pytest.approx(a, rel=1e-9), pytest.approx(b, rel=1e-9)) for a, b in want]


# ---------------------------------------------------------------------------------------------
# The expected range beside the command line's ceilings
# ---------------------------------------------------------------------------------------------


def _run(capsys, *argv):
    code = cli.main(list(argv))
    out = capsys.readouterr().out
    return code, (json.loads(out) if "--json" in argv else out)


def _shares(chip_class, bound):
    return [min(p.share, 1.0) for p in predict.predictions() if p.chip_class == chip_class and p.bound == bound]


def test_size_prints_the_expected_range_from_the_class(capsys):
    """RTX 4090, Llama 3.1 8B in Q4_K_M at batch 1: memory-bound, so the range is the ceiling times the
    lowest, median and highest share of the consumer-GPU memory-bound rows (a share above 1 counts as 1)."""
    code, got = _run(capsys, "size", "llama-3.1-8b", "-a", "rtx-4090", "-w", "q4_k_m", "--json")
    assert code == 0 and got["bound"] == "memory"
    shares = _shares("consumer GPU", "memory")
    ceiling = got["decode_tokens_per_s"]
    assert got["decode_tokens_per_s_expected"] == {
        "low": pytest.approx(ceiling * min(shares)), "median": pytest.approx(ceiling * statistics.median(shares)),
        "high": pytest.approx(ceiling * max(shares)), "measurements": len(shares)}
    code, text = _run(capsys, "size", "llama-3.1-8b", "-a", "rtx-4090", "-w", "q4_k_m")
    assert f"from {len(shares)} public measurements on consumer GPU chips whose ceiling was memory-bound" in text


def test_no_measurement_covers_a_custom_chip_or_a_tpu(capsys):
    _, got = _run(capsys, "size", "llama-3.1-8b", "--memory-gb", "24", "--bandwidth-gbs", "1000", "--json")
    assert got["decode_tokens_per_s_expected"] is None
    _, text = _run(capsys, "size", "llama-3.1-8b", "--memory-gb", "24", "--bandwidth-gbs", "1000")
    assert "no public measurement covers a chip described by its numbers" in text
    _, got = _run(capsys, "size", "qwen3-8b", "-a", "tpu-v7", "--json")
    assert got["decode_tokens_per_s_expected"] is None
    _, text = _run(capsys, "size", "qwen3-8b", "-a", "tpu-v7")
    assert "no public measurement covers other accelerator chips at this bound yet" in text


def test_dials_and_cost_give_expected_ranges_and_ttft_is_a_time(capsys):
    _, d = _run(capsys, "dials", "llama-3.1-70b", "-a", "h100-sxm", "--tp", "2", "--json")
    pre = _shares("data-centre GPU", "compute")  # an 8,192-token prompt on H100s is compute-bound
    assert d["ttft_s_expected"] == {"low": pytest.approx(d["ttft_s"] / max(pre)),
                                    "median": pytest.approx(d["ttft_s"] / statistics.median(pre)),
                                    "high": pytest.approx(d["ttft_s"] / min(pre)), "measurements": len(pre)}
    dec = _shares("data-centre GPU", "memory")
    assert d["tokens_per_s_per_user_expected"]["high"] == pytest.approx(d["tokens_per_s_per_user"] * max(dec))
    assert d["tokens_per_s_per_user_expected"]["high"] <= d["tokens_per_s_per_user"]  # never past the ceiling
    _, c = _run(capsys, "cost", "llama-3.1-70b", "-a", "h200", "--json")
    assert c["tokens_per_s_total_expected"]["median"] == pytest.approx(c["tokens_per_s_total"] * statistics.median(dec))
    # Issue 25: size, dials and cost share the key decode_tokens_per_s_expected (one sequence's decode):
    # the dials' per-user range, and cost's total over its batch times the same shares.
    assert d["decode_tokens_per_s_expected"] == d["tokens_per_s_per_user_expected"]
    assert c["decode_tokens_per_s_expected"] == {
        "low": pytest.approx(c["tokens_per_s_total"] / c["batch"] * min(dec)),
        "median": pytest.approx(c["tokens_per_s_total"] / c["batch"] * statistics.median(dec)),
        "high": pytest.approx(c["tokens_per_s_total"] / c["batch"] * max(dec)), "measurements": len(dec)}
