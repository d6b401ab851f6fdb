"""The build's helpers: the figure process (descent.site.figure_side) and the claims it shares with
the build, and the thread that makes the runtime's files (descent.site.hooks.start_early_work)."""

from __future__ import annotations

import shutil
import threading
import time
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


def _deadline(seconds: float = 60.0):
    """An ``other_alive`` for a claimant that is never started: alive for ``seconds``, so that a
    regression fails the test instead of waiting for ever."""
    end = time.monotonic() + seconds
    return lambda: time.monotonic() < end


def test_a_figure_the_other_process_drew_is_read_not_drawn(tmp_path, monkeypatch):
    import descent.site.figures as F

    figs, _, cache = _project(tmp_path)
    claims = tmp_path / "claims"
    claims.mkdir()
    side = FigureBuilder(figs, cache, Claims(claims, "side", _deadline()))
    main = FigureBuilder(figs, cache, Claims(claims, "main", _deadline()))
    assert main.claims.claim("alpha")
    assert side.svgs("alpha", wait=False) is None  # the build holds it: the side moves on
    drawn = side.svgs("beta", wait=False)
    assert set(drawn) == set(FigureBuilder.KEYS) and side.cached("beta")
    monkeypatch.setattr(F, "render", lambda *a, **k: pytest.fail(f"drawn again: {a[1:]}"))
    assert main.svgs("beta") == drawn  # the same bytes, read from the cache


def _drawn_elsewhere(tmp_path: Path, figs: Path, fig_id: str) -> dict[str, Path]:
    """``fig_id``'s four files drawn into a cache of their own: {variant: path}."""
    other = FigureBuilder(figs, tmp_path / "elsewhere")
    other.svgs(fig_id)
    return other.cache_paths(fig_id)


def _alpha_claimed_by_the_side(tmp_path: Path, side_alive) -> tuple[dict[str, Path], FigureBuilder]:
    """A project whose figure "alpha" the side process has claimed (alive while ``side_alive()``):
    alpha's four files drawn elsewhere ({variant: path}), and the build's builder."""
    figs, _, cache = _project(tmp_path)
    ready = _drawn_elsewhere(tmp_path, figs, "alpha")
    claims = tmp_path / "claims"
    claims.mkdir()
    assert Claims(claims, "side", _deadline()).claim("alpha")
    cache.mkdir()
    return ready, FigureBuilder(figs, cache, Claims(claims, "main", side_alive))


def test_the_build_waits_for_a_figure_the_other_process_is_drawing(tmp_path, monkeypatch):
    import descent.site.figures as F

    ready, main = _alpha_claimed_by_the_side(tmp_path, _deadline())
    paths = main.cache_paths("alpha")

    def finish():  # the side process writes its four files a moment later
        time.sleep(0.3)
        for variant, p in ready.items():
            shutil.copyfile(p, paths[variant])

    writer = threading.Thread(target=finish)
    writer.start()
    monkeypatch.setattr(F, "render", lambda *a, **k: pytest.fail(f"drawn while the other process drew it: {a[1:]}"))
    try:
        got = main.svgs("alpha")
    finally:
        writer.join()
    assert got == {v: p.read_bytes() for v, p in ready.items()}


def test_the_build_draws_what_a_dead_claimant_left(tmp_path, monkeypatch):
    import descent.site.figures as F

    ready, main = _alpha_claimed_by_the_side(tmp_path, lambda: False)  # it has died
    paths = main.cache_paths("alpha")
    for variant in ("light", "dark"):  # it wrote two of the four files
        shutil.copyfile(ready[variant], paths[variant])
    calls = []
    real = F.render
    monkeypatch.setattr(F, "render", lambda recipe, theme, narrow=False: calls.append((theme, narrow))
                        or real(recipe, theme, narrow))
    got = main.svgs("alpha")
    assert sorted(calls) == [("dark", True), ("light", True)]  # only the narrow pair is drawn
    assert got == {v: p.read_bytes() for v, p in ready.items()} and main.cached("alpha")


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


def test_the_wheel_is_built_before_the_runtime_thread_starts(monkeypatch):
    # build_wheel changes the process's folder and SOURCE_DATE_EPOCH while flit runs: in a thread
    # beside the pages, a page's snippet was looked up in the wheel's folder and the bench's cold
    # build failed ("Snippet at path 'abbreviations.md' could not be found").
    from descent.site import hooks, runtime

    calls = []
    monkeypatch.setattr(runtime, "build_wheel", lambda root: calls.append(("wheel", threading.current_thread()))
                        or root / "plain.whl")
    monkeypatch.setattr(runtime, "warm_caches", lambda root, plain: calls.append(("warm", threading.current_thread(),
                                                                                   plain.name)))
    monkeypatch.setattr(hooks._state, "early", None)
    job = hooks.start_early_work({"config_file_path": str(ROOT / "mkdocs.yml")})
    job.result(timeout=60)
    (w, in_main), (m, in_thread, plain) = calls
    assert (w, m, plain) == ("wheel", "warm", "plain.whl")
    assert in_main is threading.main_thread() and in_thread is not threading.main_thread()
