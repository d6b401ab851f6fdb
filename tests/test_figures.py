"""Figure recipes and the figure builder: deterministic SVG, light + dark, cache, errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from descent import plotting
from descent.site.figures import FigureBuilder, FigureError, draw_figure, figure_html, load_recipe, render

ROOT = Path(__file__).resolve().parent.parent
RECIPES = sorted(p for p in (ROOT / "figures").glob("*.py") if not p.name.startswith("_"))
#: Recipes that take more than a few seconds to draw (the Part 2 histogram reads the real weights):
#: their cases carry the slow marker, so `nox -s fast` leaves them out.
SLOW_RECIPES = {"part2-histogram"}
CASES = [pytest.param(p, id=p.stem, marks=pytest.mark.slow) if p.stem in SLOW_RECIPES else pytest.param(p, id=p.stem)
         for p in RECIPES]  # fmt: skip


def test_the_required_figures_exist():
    names = {p.stem for p in RECIPES}
    assert {"kv-cache-per-token", "accelerator-bandwidth-capacity"} <= names
    assert SLOW_RECIPES <= names


@pytest.mark.parametrize("path", CASES)
def test_recipe_renders_deterministic_svg_in_both_themes(path):
    recipe = load_recipe(path)
    assert len(recipe.alt) > 40 and len(recipe.caption) > 40
    light, dark = render(recipe, "light"), render(recipe, "dark")
    assert render(recipe, "light") == light  # byte-for-byte the same on a second run
    assert light != dark
    for svg in (light, dark):
        text = svg.decode()
        assert text.startswith("<?xml")
        assert "<dc:date>" not in text and "Matplotlib v" not in text  # no metadata
        # The only URLs are XML namespaces and the DTD: nothing is fetched.
        urls = set(re.findall(r"https?://[^\"' >]+", text))
        assert urls <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink",
                        "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd", "http://purl.org/dc/elements/1.1/",
                        "http://creativecommons.org/ns#", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"}, urls
    # The themes' text colours are used (dark text on light, light text on dark).
    assert plotting.THEMES["light"].fg.lower() in light.decode().lower()
    assert plotting.THEMES["dark"].fg.lower() in dark.decode().lower()


def test_builder_caches_and_redraws_when_the_recipe_changes(tmp_path):
    figs = tmp_path / "figures"
    figs.mkdir()
    recipe = figs / "demo.py"
    recipe.write_text(
        'ALT = "A line from (0, 0) to (1, 1) on plain axes, for the cache test."\n'
        'CAPTION = "A straight line used only by the figure cache test."\n'
        "def draw(ax, theme):\n    ax.plot([0, 1], [0, 1])\n"
    )
    cache = tmp_path / "cache"
    first = FigureBuilder(figs, cache).svgs("demo")
    assert sorted(p.name.rsplit("-", 1)[0] for p in cache.glob("demo-*.svg")) == [
        "demo-dark", "demo-dark-narrow", "demo-light", "demo-light-narrow"]
    again = FigureBuilder(figs, cache)
    assert again.svgs("demo") == first  # served from the cache
    recipe.write_text(recipe.read_text().replace("[0, 1]]", "[1, 0]]").replace("[0, 1], [0, 1]", "[0, 1], [1, 0]"))
    changed = FigureBuilder(figs, cache).svgs("demo")
    assert changed["light"] != first["light"]
    assert len(list(cache.glob("demo-light-*.svg"))) == 2  # the stale entries are replaced (wide + narrow)
    out = tmp_path / "site"
    written = again.write(out)
    assert sorted(p.name for p in written) == [
        "demo-dark-narrow.svg", "demo-dark.svg", "demo-light-narrow.svg", "demo-light.svg"]


def test_unknown_and_malformed_recipes(tmp_path):
    b = FigureBuilder(ROOT / "figures")
    with pytest.raises(FigureError, match="unknown figure 'nope'; allowed: accelerator-bandwidth-capacity"):
        b.recipe("nope")
    bad = tmp_path / "bad.py"
    bad.write_text('ALT = ""\nCAPTION = "c"\ndef draw(ax, theme): pass\n')
    with pytest.raises(FigureError, match="ALT must be a non-empty string"):
        load_recipe(bad)
    bad.write_text('ALT = "a"\nCAPTION = "c"\n')
    with pytest.raises(FigureError, match=r"define exactly one of draw\(ax, theme\) or make\(theme\)"):
        load_recipe(bad)
    bad.write_text('ALT = "a"\nCAPTION = "c"\ndef draw(ax, theme):\n    raise ZeroDivisionError("x")\n')
    with pytest.raises(FigureError, match=r"figures/bad.py \(light\): ZeroDivisionError: x"):
        render(load_recipe(bad), "light")


def test_figure_html_picks_the_phone_version_on_narrow_screens():
    html = figure_html("kv", "alt text here", "caption", "../", 691, 384, narrow=(384, 326))
    assert html.count("<picture>") == 2
    assert (f'<source media="(max-width: {plotting.NARROW_BELOW_PX - 1}px)" '
            'srcset="../figures/kv-light-narrow.svg" width="384" height="326">') in html
    assert 'src="../figures/kv-dark.svg#only-dark"' in html


def test_figure_html_has_light_dark_alt_and_caption():
    html = figure_html("kv", 'A "quoted" alt', "Cap <b>", "../", 600, 300)
    assert '<img src="../figures/kv-light.svg#only-light" alt="A &quot;quoted&quot; alt"' in html
    assert '<img src="../figures/kv-dark.svg#only-dark"' in html
    assert 'width="600" height="300"' in html
    assert "<figcaption>Cap &lt;b&gt;</figcaption>" in html


def test_figure_images_load_lazily():
    # Issue 13 section 5 (page weight): with loading="lazy" the browser fetches neither the figures far
    # below the screen nor the hidden scheme's copy (display: none) before the reader needs them.
    html = figure_html("kv", "alt", "cap", "", 600, 300, narrow=(384, 326))
    imgs = html.split("<img ")[1:]
    assert len(imgs) == 2 and all('loading="lazy"' in i.split(">")[0] for i in imgs), html


@pytest.mark.parametrize("path", CASES)
@pytest.mark.parametrize("narrow", [False, True], ids=["wide", "narrow"])
def test_every_label_shows_at_least_11_px(path, narrow):
    # Issue 13: at 390 px the labels were about 5 px. The phone figure is drawn for a 358 px column
    # (390 px less Material's margins) and the wide one for the narrowest column it is shown in
    # (640 px); every text must show at MIN_TEXT_PX or more there.
    recipe = load_recipe(path)
    column = plotting.NARROW_COLUMN_PX if narrow else plotting.WIDE_COLUMN_PX
    with plotting.style(plotting.THEMES["light"]):
        fig = draw_figure(recipe, "light", narrow)
        small = [(t, round(px, 1)) for t, px in plotting.text_px(fig, column) if px < plotting.MIN_TEXT_PX - 1e-9]
    assert not small, f"{path.stem}: texts under {plotting.MIN_TEXT_PX} px: {small[:5]}"
    if narrow:
        assert fig.get_figwidth() == plotting.NARROW_FIGSIZE[0]


def test_min_font_by_hand():
    # A 4 in figure shown 358 px wide: 1 pt = 358 / (72 x 4) = 1.243 px, so 11 px needs 8.85 pt.
    assert plotting.min_font_pt(4.0, 358) == pytest.approx(11 * 72 * 4 / 358)
    assert 8.84 < plotting.min_font_pt(4.0, 358) < 8.86


def _texts_across_lines(fig) -> list[tuple[str, str]]:
    """``[(text, line's label)]`` for every text of ``fig``'s axes (annotations and labels drawn in
    the plot) whose drawn box a line of the same axes passes through."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    out = []
    for ax in fig.axes:
        for t in ax.texts:
            if not t.get_visible() or not t.get_text().strip():
                continue
            box = t.get_window_extent(renderer)
            for line in ax.lines:
                path = line.get_transform().transform_path(line.get_path())
                if path.intersects_bbox(box, filled=False):
                    out.append((t.get_text(), line.get_label()))
    return out


@pytest.mark.parametrize("fig_id", ["ceilings-vs-measured", "part3-block-table"])
def test_phone_figures_keep_their_labels_off_the_lines(fig_id):
    # A reader found labels crossing lines at 390 px: the phone's ceilings figure named its guide
    # lines along them (raised to 11 px they ran over lines and points), and the block table's lines
    # from the lower row ran through the physical blocks' numbers.
    recipe = load_recipe(ROOT / "figures" / f"{fig_id}.py")
    with plotting.style(plotting.THEMES["light"]):
        fig = draw_figure(recipe, "light", narrow=True)
        assert _texts_across_lines(fig) == []


def test_the_phone_ceilings_figure_names_its_lines_in_the_key():
    recipe = load_recipe(ROOT / "figures" / "ceilings-vs-measured.py")
    with plotting.style(plotting.THEMES["light"]):
        narrow, wide = draw_figure(recipe, "light", narrow=True), draw_figure(recipe, "light")
    keys = [t.get_text() for leg in narrow.legends for t in leg.get_texts()]
    assert {"measured = ceiling", "half, a quarter", "llama.cpp", "consumer GPU"} <= set(keys)
    assert len(narrow.axes[0].texts) == 0  # nothing written inside the phone's plot
    # Wide, the lines keep their names along them (there is room), and the key stays in the plot.
    assert {t.get_text() for t in wide.axes[0].texts} == {"measured = ceiling", "half the ceiling", "a quarter"}


def test_the_phone_block_table_names_every_row():
    # "sequence A", "sequence B" beside the rows do not fit at 390 px: the phone figure names the
    # sequences in the tables' text above and below, and keeps "memory" in a margin of its own.
    recipe = load_recipe(ROOT / "figures" / "part3-block-table.py")
    with plotting.style(plotting.THEMES["light"]):
        fig = draw_figure(recipe, "light", narrow=True)
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig).draw()
        texts = {t.get_text(): t.get_window_extent() for t in fig.axes[0].texts}
        page = fig.bbox
    assert {"sequence A's block table: 0, 1, 2, 4", "memory", "sequence B's block table: 0, 1, 3, 5"} <= set(texts)
    for name, box in texts.items():  # inside the figure, not cut at its edge
        assert page.x0 <= box.x0 and box.x1 <= page.x1, name
