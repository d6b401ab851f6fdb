"""The build's figure process (descent.site.figure_side) and the claims it shares with the build."""

from __future__ import annotations

from pathlib import Path

import pytest

from descent.site import figure_side
from descent.site.figures import Claims, FigureBuilder, uses_model

ROOT = Path(__file__).resolve().parent.parent

_RECIPE = (
    'ALT = "A line from (0, 0) to (1, {k}) on plain axes, for the figure process test."\n'
    'CAPTION = "A straight line used only by the figure process test."\n'
    "def draw(ax, theme):\n    ax.plot([0, 1], [0, {k}])\n"
)


def _project(tmp_path: Path, ids: tuple[str, ...] = ("alpha", "beta", "gamma")) -> tuple[Path, Path, Path]:
    figs, docs, cache = tmp_path / "figures", tmp_path / "docs", tmp_path / "cache"
    figs.mkdir()
    docs.mkdir()
    for k, name in enumerate(ids, start=1):
        (figs / f"{name}.py").write_text(_RECIPE.format(k=k))
    return figs, docs, cache


def test_the_recipes_that_read_the_real_models_results_are_the_builds():
    # From the recipes' imports: these four read descent.trace.quality or descent.trace.measure,
    # whose results the build shares with descent.trace.prefetch; the rest read the catalog, the
    # package and committed records.
    model = {p.stem for p in (ROOT / "figures").glob("*.py") if uses_model(p.read_text())}
    assert model == {"part2-histogram", "part2-perplexity", "part3-constrained-mask", "part3-measured-decode"}


def test_uses_model_reads_every_form_of_import(tmp_path):
    for line, expected in (("import descent.trace.quality", True),
                           ("from descent.trace import quality", True),
                           ("from descent.trace.measure import measurements", True),
                           ("from descent.trace import roofline_measure", False),
                           ("from descent import trace", False)):
        assert uses_model(f"{line}\n" + _RECIPE.format(k=1)) is expected, line


def test_page_figures_lists_what_the_pages_show_in_build_order(tmp_path):
    docs = tmp_path / "docs"
    (docs / "reference").mkdir(parents=True)
    (docs / "part-2.md").write_text("<!-- descent:figure beta -->\ntext\n<!-- descent:figure alpha -->\n")
    (docs / "part-1.md").write_text("<!--descent:figure gamma-->\n`<!-- descent:figure nope -->`\n")
    (docs / "reference" / "x.md").write_text("<!-- descent:figure beta -->\n")
    assert figure_side.page_figures(docs, ["alpha", "beta", "gamma"]) == ["gamma", "beta", "alpha"]


def test_a_claimed_figure_is_drawn_once_and_read_by_the_other_process(tmp_path, monkeypatch):
    figs, _, cache = _project(tmp_path)
    claims = tmp_path / "claims"
    claims.mkdir()
    side = FigureBuilder(figs, cache, Claims(claims, "side", lambda: True))
    main = FigureBuilder(figs, cache, Claims(claims, "main", lambda: True))
    assert main.claims.claim("alpha")
    assert side.svgs("alpha", wait=False) is None  # the build holds it: the side moves on
    drawn = side.svgs("beta", wait=False)
    assert set(drawn) == set(FigureBuilder.KEYS) and side.cached("beta")
    # The build reads the side's files: the same bytes, nothing drawn again.
    import descent.site.figures as F

    main_render = []
    real = F.render
    monkeypatch.setattr(F, "render", lambda *a, **k: main_render.append(a) or real(*a, **k))
    assert main.svgs("beta") == drawn
    assert main_render == []


def test_the_build_draws_what_a_dead_side_process_left(tmp_path):
    figs, _, cache = _project(tmp_path)
    claims = tmp_path / "claims"
    claims.mkdir()
    Claims(claims, "side", lambda: True).claim("alpha")  # claimed, then the process died
    main = FigureBuilder(figs, cache, Claims(claims, "main", lambda: False))
    assert set(main.svgs("alpha")) == set(FigureBuilder.KEYS)
    assert main.cached("alpha")


@pytest.mark.slow
def test_the_figure_process_draws_the_pages_figures_into_the_cache(tmp_path):
    figs, docs, cache = _project(tmp_path)
    (docs / "page.md").write_text("<!-- descent:figure alpha -->\n<!-- descent:figure gamma -->\n")
    builder = FigureBuilder(figs, cache)
    assert figure_side.start(builder, docs)
    try:
        assert builder.claims is not None
        proc = figure_side._side.proc
        proc.wait(120)
        assert proc.returncode == 0
    finally:
        assert figure_side.stop() == ""
    assert builder.cached("alpha") and builder.cached("gamma")
    assert not builder.cached("beta")  # no page shows it
    # A second build finds them all: no process.
    assert not figure_side.start(FigureBuilder(figs, cache), docs)
    # The files are what this process draws itself.
    fresh = FigureBuilder(figs, None).svgs("gamma")
    assert FigureBuilder(figs, cache).svgs("gamma") == fresh


def test_no_process_without_a_cache_folder(tmp_path):
    figs, docs, _ = _project(tmp_path)
    (docs / "page.md").write_text("<!-- descent:figure alpha -->\n")
    assert not figure_side.start(FigureBuilder(figs, None), docs)
    assert figure_side.stop() == ""
