"""The built site: every page, no external assets, math rendered, figures, reference pages."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from descent import catalog, transformer
from descent.site import hooks, shortcodes

ROOT = Path(__file__).resolve().parent.parent


def _nav_pages() -> list[str]:
    class Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml uses MkDocs' !ENV tag (site_url); its value does not matter here.
    Loader.add_constructor("!ENV", lambda loader, node: None)
    cfg = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)
    out: list[str] = []

    def walk(node):
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, list):
            for n in node:
                walk(n)
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)

    walk(cfg["nav"])
    return out


PAGES = _nav_pages()


def _html(site_dir: Path, md: str) -> str:
    # The offline plugin turns directory URLs off: docs/x/y.md -> site/x/y.html (and a notebook,
    # docs/notebooks/y.ipynb, -> site/notebooks/y.html)
    return (site_dir / Path(md).with_suffix(".html")).read_text(encoding="utf-8")


def test_nav_has_the_six_parts_notebooks_and_reference_pages():
    expected = [
        "index.md", "part-0-the-prompt.md", "part-1-the-transformer.md", "part-2-weights-as-numbers.md",
        "part-3-serving-software.md", "part-4-hardware.md", "part-5-the-whole-descent.md",
        "notebooks/size-a-model.ipynb", "notebooks/run-the-real-model.ipynb",
        "notebooks/roofline-your-machine.ipynb",
        "reference/models.md", "reference/accelerators.md", "reference/ceilings.md", "glossary.md",
        "contributing.md",
    ]
    assert sorted(PAGES) == sorted(expected)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_is_built(site_dir, page):
    html = _html(site_dir, page)
    assert "<h1" in html
    # no shortcode survived the build
    assert "descent:" not in re.sub(r"<code>.*?</code>|<pre.*?</pre>", "", html, flags=re.DOTALL)


def _all_html(site_dir: Path) -> list[Path]:
    return sorted(site_dir.rglob("*.html"))


def test_no_asset_loads_from_another_origin(site_dir):
    for path in _all_html(site_dir):
        html = path.read_text(encoding="utf-8")
        assert hooks.external_assets(html) == [], path
        # Every https:// left in the HTML is a hyperlink target (a cited source) or text inside a
        # code block (the contributing page's example catalog row), nothing fetched.
        stripped = re.sub(r'<a [^>]*href="https://[^"]*"|<link rel="canonical" href="[^"]*"', "", html)
        stripped = re.sub(r"<pre[ >].*?</pre>", "", stripped, flags=re.S)
        assert "https://" not in stripped, (path, stripped[stripped.find("https://") - 80:][:200])


def test_no_canonical_url_on_a_loopback_address(site_dir):
    # The test build's site_url is http://127.0.0.1:<port>/ (instant navigation needs it); a canonical
    # link to the reader's own machine would be wrong in any hosted or offline copy.
    for path in _all_html(site_dir):
        html = path.read_text(encoding="utf-8")
        assert not re.search(r'rel="canonical" href="https?://(127\.|localhost|\[::1\])', html), path


def test_drop_loopback_canonical_keeps_a_real_one():
    local = '<link rel="canonical" href="http://127.0.0.1:8000/part-5.html">\n<title>x</title>'
    assert hooks.drop_loopback_canonical(local) == "<title>x</title>"
    real = '<link rel="canonical" href="https://descent.example/part-5.html"><title>x</title>'
    assert hooks.drop_loopback_canonical(real) == real


def test_external_asset_detector():
    # The check the build runs on every page (hooks.on_post_page) and the test above relies on.
    html = ('<link rel="canonical" href="https://a.example/"><a href="https://b.example">b</a>'
            '<script src="assets/x.js"></script><img src="//cdn.example/x.png">'
            '<link rel="stylesheet" href="https://fonts.example/css"><div style="background:url(https://c.example/y)">')
    assert hooks.external_assets(html) == [
        '<img src="//cdn.example/x.png">', '<link rel="stylesheet" href="https://fonts.example/css">',
        "url(https://c.example/y)",
    ]


def test_no_google_fonts_no_generator(site_dir):
    html = _html(site_dir, "index.md")
    assert "fonts.googleapis" not in html and "fonts.gstatic" not in html
    assert "Made with" not in html  # extra.generator: false


def test_offline_polyfill_is_the_vendored_shim(site_dir):
    html = _html(site_dir, "index.md")
    assert f'src="{hooks.SHIM_PATH}"' in html
    assert "unpkg.com" not in html
    shipped = (site_dir / hooks.SHIM_PATH).read_text(encoding="utf-8")
    original = (ROOT / "node_modules/iframe-worker/shim/index.js").read_text(encoding="utf-8")
    if importlib.util.find_spec("descent.site.csp") is not None:
        # descent.site.csp rewrites the shim's inline boot script so it runs under the page's CSP.
        from descent.site import csp

        original = csp.patch_iframe_worker(original)
    assert shipped == original


def test_katex_css_and_fonts_are_shipped(site_dir):
    css = (site_dir / "assets/katex/katex.min.css").read_text()
    fonts = re.findall(r"url\((fonts/[^)]+)\)", css)
    assert fonts, "katex.min.css references its fonts"
    for f in fonts:
        assert (site_dir / "assets/katex" / f).is_file(), f


@pytest.mark.parametrize("page", PAGES)
def test_math_is_rendered_at_build_time(site_dir, page):
    html = _html(site_dir, page)
    assert 'class="arithmatex"' not in html
    text = re.sub(r"<code>.*?</code>|<pre.*?</pre>|<annotation.*?</annotation>", "", html, flags=re.DOTALL)
    assert "\\(" not in text and "\\[" not in text


def test_formula_pages_carry_katex_html_and_mathml(site_dir):
    html = _html(site_dir, "part-3-serving-software.md")
    assert html.count('class="katex-display"') >= 3  # kv_cache_bytes, _mla, _sliding
    assert 'class="katex-mathml"' in html  # MathML for screen readers
    # The formula's TeX is kept as the MathML annotation: the sympy printer's output.
    assert r"M_{\text{KV}} = 2 L K d_{\text{head}} T B b" in html


def test_figures_present_with_light_and_dark(site_dir):
    html = _html(site_dir, "part-3-serving-software.md")
    assert 'id="figure-kv-cache-per-token"' in html
    for page in PAGES:
        page_html = _html(site_dir, page)
        for src in re.findall(r'<img src="([^"]*figures/[^"]+)"', page_html):
            path, _, fragment = src.partition("#")
            assert fragment in ("only-light", "only-dark")
            target = (site_dir / page).parent / path
            assert target.resolve().is_file(), (page, src)
        light = re.findall(r"figures/([\w-]+)-light\.svg#only-light", page_html)
        dark = re.findall(r"figures/([\w-]+)-dark\.svg#only-dark", page_html)
        assert light == dark, page
    for svg in (site_dir / "figures").glob("*.svg"):
        assert svg.read_bytes().startswith(b"<?xml")


@pytest.mark.parametrize("kind,ids", [("models", lambda: catalog.models()), ("accelerators", lambda: catalog.accelerators())])
def test_reference_pages_list_every_catalog_row(site_dir, kind, ids):
    html = _html(site_dir, f"reference/{kind}.md")
    for row_id, row in ids().items():
        assert f'id="{row_id}"' in html, row_id  # a section per row, anchored by its id
        assert row.sources["default"].split(" ")[0].replace("&", "&amp;") in html  # its source is shown


def test_numbers_on_pages_are_computed(site_dir):
    html = _html(site_dir, "index.md")
    # Llama 3.1 70B: 2 (K and V) * 80 layers * 8 KV heads * 128 head_dim * 2 bytes (BF16)
    # = 327,680 bytes = 320 KiB per token (config.json values; worked out here).
    m = catalog.model("llama-3.1-70b")
    assert 2 * m.num_layers * m.num_kv_heads * m.head_dim * 2 == 327_680
    assert transformer.kv_elements_per_token(m) * 2 == 327_680
    assert "320 KiB" in html
    # The catalog's rows, counted when the page is built (index.md no longer quotes a bandwidth:
    # issue 23 keeps its sentences to the numbers their idea needs).
    # Each number links to its derivation (descent.site.explain): read the text without the tags.
    text = re.sub(r"<[^>]+>", "", html)
    assert re.search(rf"holds\s+{len(catalog.models())} models and {len(catalog.accelerators())}\s+accelerators", text)


def test_contributing_lists_every_shortcode(site_dir):
    # Names may wrap at their underscores on a phone (the table prints them with <wbr>).
    html = _html(site_dir, "contributing.md").replace("<wbr>", "")
    for kind in ("value", "table"):
        for name in shortcodes.registry(kind):
            assert f"<code>{name}</code>" in html, name
    for fig in sorted(p.stem for p in (ROOT / "figures").glob("*.py")):
        assert f"<code>{fig}</code>" in html, fig


@pytest.mark.site  # node and node_modules/katex, as the build uses them
def test_katex_renderer_inline_display_escaping_and_errors():
    from descent.site import katex

    r = katex.Renderer(ROOT / "node_modules")
    try:
        html = katex.render_math_html(
            '<p><span class="arithmatex">\\(a &lt; b\\)</span></p><div class="arithmatex">\\[x^2\\]</div>', r, "p.md")
        assert html.startswith('<p><span class="katex">')
        assert '<annotation encoding="application/x-tex">a &lt; b</annotation>' in html  # unescaped, re-escaped by KaTeX
        assert '<div class="descent-math descent-math-display"><span class="katex-display">' in html
        assert ("x^2", True) in r._cache and ("a < b", False) in r._cache  # cached by expression
        with pytest.raises(katex.KatexError, match=r"p.md: cannot render '\\\\frac\{1\}\{'"):
            katex.render_math_html('<span class="arithmatex">\\(\\frac{1}{\\)</span>', r, "p.md")
    finally:
        r.close()
