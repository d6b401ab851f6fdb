"""The page's own path (issue 28): one stylesheet and one deferred script of the site's own, joined at
build time (descent.site.bundle), and the bodies of closed boxes kept out of the DOM until opened
(descent.site.lazy). The built-site checks at the end read every page of the build."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from descent.site import bundle, lazy
from descent.widgets import views

ROOT = Path(__file__).resolve().parent.parent


# --- joining the sources ----------------------------------------------------------------------------


def test_css_urls_are_rebased_to_the_joined_files_folder():
    # KaTeX's stylesheet (assets/katex/katex.min.css) names its fonts relative to itself.
    katex = "@font-face{src:url(fonts/KaTeX_Main-Regular.woff2) format(\"woff2\")}.x{background:url('img/a.png?v=1')}"
    ours = ".y{background:url(data:image/svg+xml;utf8,<svg/>)}.z{mask:url(#m)}.w{src:url(/abs.woff)}" \
           ".v{src:url(https://example.org/a.woff)}"
    out = bundle.join_css([("assets/katex/katex.min.css", katex), ("assets/descent/descent.css", ours)],
                          "assets/descent/bundle.css")
    assert "url(../katex/fonts/KaTeX_Main-Regular.woff2)" in out
    assert "url('../katex/img/a.png?v=1')" in out
    # data:, fragment, root-absolute and absolute URLs are left as written.
    for kept in ("url(data:image/svg+xml;utf8,<svg/>)", "url(#m)", "url(/abs.woff)", "url(https://example.org/a.woff)"):
        assert kept in out
    # In order, each under a comment naming its source.
    assert out.index("/* assets/katex/katex.min.css */") < out.index("/* assets/descent/descent.css */")


def test_a_stylesheet_with_import_is_refused_by_name():
    with pytest.raises(bundle.BundleError, match=r"assets/x\.css: @import cannot be joined"):
        bundle.join_css([("assets/x.css", '@import "y.css"; .a{}')])


def test_one_scripts_error_does_not_stop_the_next():
    out = bundle.join_js([("a.js", "(() => { throw new Error('a'); })();"), ("b.js", "window.b = 1;")])
    assert out.count("try {") == 2 and out.index("/* a.js */") < out.index("/* b.js */")


def test_the_bundle_list_is_checked_with_a_sentence():
    files = {"assets/a.css": ".a{}", "assets/a.js": "1;"}
    ok = {"descent_bundle": {"css": ["assets/a.css"], "js": ["assets/a.js"]}}
    assert set(bundle.bundles(ok, files.get)) == {bundle.CSS_PATH, bundle.JS_PATH}
    assert bundle.bundles({}, files.get) == {}  # a project without the key (a test's one-page site)
    with pytest.raises(bundle.BundleError, match="extra.descent_bundle.css must list"):
        bundle.bundles({"descent_bundle": {"js": ["assets/a.js"]}}, files.get)
    with pytest.raises(bundle.BundleError, match="lists assets/b.js, which is not in the site"):
        bundle.bundles({"descent_bundle": {"css": ["assets/a.css"], "js": ["assets/b.js"]}}, files.get)
    with pytest.raises(bundle.BundleError, match="is not a .js file"):
        bundle.bundles({"descent_bundle": {"css": ["assets/a.css"], "js": ["assets/a.css"]}}, files.get)


def test_mkdocs_yml_names_only_the_joined_files():
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!ENV", lambda loader, node: None)
    Loader.add_multi_constructor("tag:yaml.org,2002:python/name:", lambda loader, suffix, node: None)
    cfg = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)
    assert cfg["extra_css"] == [bundle.CSS_PATH]
    assert cfg["extra_javascript"] == [{"path": bundle.JS_PATH, "defer": True}]
    listed = cfg["extra"]["descent_bundle"]
    # Every source is a file of the repository (docs/ or the theme overrides), or one the hook makes.
    made = {"assets/katex/katex.min.css", "assets/descent/content-tables.css"}
    for path in listed["css"] + listed["js"]:
        assert path in made or (ROOT / "docs" / path).is_file() or (ROOT / "docs/overrides" / path).is_file(), path


# --- closed boxes ------------------------------------------------------------------------------------

BODY = "<p>" + "A long aside with <strong>markup</strong> &amp; an entity. " * 20 + "</p>"


def test_a_closed_boxs_body_goes_in_a_noscript_and_comes_back_unchanged():
    page = f'<p>x</p><details class="note" id="how-a"><summary>How</summary>{BODY}</details><p>y</p>'
    out = lazy.lazy_details(page)
    assert out == page.replace(BODY, f'<noscript class="descent-lazy">{BODY}</noscript>')
    # Taking the wrapper away gives the page back, byte for byte (the body is never rewritten).
    assert re.sub(r'<noscript class="descent-lazy">|</noscript>', "", out) == page


@pytest.mark.parametrize("page", [
    f"<details open><summary>s</summary>{BODY}</details>",                       # open: shown at once
    "<details><summary>s</summary><p>short</p></details>",                       # not worth it
    f"<details><summary>s</summary>{BODY}<pre><code>x</code></pre></details>",  # Material mounts code blocks
    f'<details><summary>s</summary>{BODY}<div class="descent-widget"></div></details>',
    f"<details><summary>s</summary>{BODY}<noscript>x</noscript></details>",     # cannot nest
    f"<div><details><summary>s</summary>{BODY}</div></details>",                # does not nest cleanly
])
def test_boxes_that_must_stay_drawn_are_left_alone(page):
    assert lazy.lazy_details(page) == page


def test_only_the_outermost_closed_box_is_wrapped():
    inner = f"<details><summary>inner</summary>{BODY}</details>"
    page = f"<details><summary>outer</summary>{BODY}{inner}</details>"
    out = lazy.lazy_details(page)
    assert out.count('<noscript class="descent-lazy">') == 1
    assert out == f'<details><summary>outer</summary><noscript class="descent-lazy">{BODY}{inner}</noscript></details>'


def _table(cells: int) -> str:
    return "<table><tbody>" + "".join(f"<tr><td>{i}</td></tr>" for i in range(cells)) + "</tbody></table>"


def test_long_tables_past_the_first_screen_are_drawn_when_near():
    big, small = _table(lazy.MIN_CELLS), _table(lazy.MIN_CELLS - 1)
    page = (f"<p>first</p><div>{big}</div>"                                   # first screen: stays
            f'<div class="descent-widget">{big}</div>'                             # the first widget: stays
            f'<div class="descent-widget">{big}</div>'                             # the second: lazy
            f'<p class="descent-far">far</p>'
            f'<div class="descent-far descent-far--table">{big}</div>'         # far and long: lazy
            f'<div class="descent-far descent-far--table">{small}</div>'       # short: stays
            f'<div class="descent-widget"><div class="descent-grid">{big}</div></div>'  # a widget past it: lazy
            f'<details class="descent-far"><summary>s</summary><noscript class="descent-lazy">{big}</noscript></details>')
    out = lazy.lazy_far_tables(page)
    near = f'<noscript class="descent-lazy descent-lazy--near">{big}</noscript>'
    assert out.count(near) == 3
    assert out.startswith(f'<p>first</p><div>{big}</div><div class="descent-widget">{big}</div><div class="descent-widget">{near}')
    assert f'<div class="descent-grid">{near}</div>' in out and f'--table">{small}</div>' in out
    def strip(h: str) -> str:
        return re.sub(r'<noscript class="descent-lazy[^"]*">|</noscript>', "", h)

    assert strip(out) == strip(page)  # nothing else changed


def test_a_far_widgets_controls_are_drawn_when_near():
    form = '<form class="descent-widget__form" data-x="1"><label>n <input type="number" value="3"></label></form>'
    odd = '<form class="descent-widget__form"><noscript>n</noscript></form>'  # cannot nest: stays
    page = (f'<p>first</p><div class="descent-widget">{form}<div class="descent-widget__output"></div></div>'  # not far: stays
            f'<div class="descent-widget descent-far">{form}<div class="descent-widget__output"></div></div>'  # far: lazy
            f'<div class="descent-far">{form}</div>'                                           # not a widget: stays
            f'<div class="descent-widget descent-far">{odd}</div>')
    out = lazy.lazy_far_forms(page)
    lazy_form = f'<noscript class="descent-lazy descent-lazy--near descent-lazy--form">{form}</noscript>'
    assert out.count(lazy_form) == 1
    assert f'<div class="descent-widget descent-far">{lazy_form}<div class="descent-widget__output">' in out
    assert out.count(form) == 3 and odd in out
    assert re.sub(r'<noscript class="descent-lazy[^"]*">|</noscript>(?!</form>)', "", out) == page  # nothing else changed
    assert lazy.lazy_far_forms("<div><p>unclosed</div>") == "<div><p>unclosed</div>"  # tangled HTML: unchanged


# --- the built site -------------------------------------------------------------------------------


class _Assets(HTMLParser):
    def __init__(self):
        super().__init__()
        self.in_head = False
        self.sheets: list[str] = []
        self.scripts: list[tuple[str, bool, bool]] = []  # (src, in <head>, deferred)
        self.lazy = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "head":
            self.in_head = True
        elif tag == "link" and a.get("rel") == "stylesheet":
            self.sheets.append(a["href"])
        elif tag == "script" and a.get("src"):
            self.scripts.append((a["src"], self.in_head, "defer" in a or "async" in a))
        elif tag == "noscript" and a.get("class") == lazy.CLASS:
            self.lazy += 1

    def handle_endtag(self, tag):
        if tag == "head":
            self.in_head = False


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if "assets" not in p.relative_to(site).parts)


def test_every_page_loads_one_stylesheet_and_one_deferred_script_of_the_sites_own(site_dir):
    for page in _pages(site_dir):
        p = _Assets()
        p.feed(page.read_text(encoding="utf-8"))
        name = page.relative_to(site_dir).as_posix()
        ours = [h for h in p.sheets if "/stylesheets/" not in h]
        assert [h.rsplit("/", 1)[-1] for h in ours] == ["bundle.css"], name
        # No script in <head> that blocks the first paint (inline ones are Material's and ours, tiny).
        assert not [s for s, head, deferred in p.scripts if head and not deferred], name
        mine = [(s, d) for s, _h, d in p.scripts if "/javascripts/" not in s and "iframe-worker" not in s]
        assert [(s.rsplit("/", 1)[-1], d) for s, d in mine] == [("bundle.js", True)], name
    # The joined files hold their sources, in mkdocs.yml's order.
    css = (site_dir / bundle.CSS_PATH).read_text()
    assert css.index("/* assets/katex/katex.min.css */") < css.index("/* assets/overrides/a11y.css */")
    assert "url(../katex/fonts/" in css and "url(fonts/" not in css
    fonts = re.findall(r"url\((\.\./katex/fonts/[^)]+)\)", css)
    assert fonts and all((site_dir / "assets/descent" / f).resolve().is_file() for f in fonts)
    js = (site_dir / bundle.JS_PATH).read_text()
    assert js.index("/* assets/descent/lazy.js */") < js.index("/* assets/descent/explain.js */")


def test_closed_boxes_are_lazy_and_players_carry_their_frames_as_data(site_dir):
    part3 = (site_dir / "part-3-serving-software.html").read_text(encoding="utf-8")
    p = _Assets()
    p.feed(part3)
    # Part 3's derivations section alone has 162 closed boxes (descent.site.explain); most are long.
    assert p.lazy > 100
    assert "<template data-frame" not in part3 and 'type="application/json" class="descent-player' not in part3
    players = re.findall(r'<figure class="descent-player"[^>]*data-frames="(\d+)"', part3)
    data = re.findall(r'<template class="descent-player__frames">(.*?)</template>', part3, re.S)
    assert players and len(players) == len(data)
    # Each player's data decodes to as many frames as it says, and the frame in the page (the last,
    # by default) is the one the data holds at data-start.
    for (count, _), chunk in zip(re.findall(r'data-frames="(\d+)"()', part3), data, strict=True):
        d = json.loads(chunk)
        assert len(d["f"]) == len(d["l"]) == int(count)
    for m in re.finditer(r'<figure class="descent-player"[^>]*data-start="(\d+)"', part3):
        fig = part3[m.start():]
        frames = views.player_frames(fig)
        stage = re.search(r'<div class="descent-player__stage"[^>]*>(.*?)</div><template class="descent-player__frames"',
                          fig, re.S).group(1)
        # (a long grid in the stage may wait for the screen: descent.site.lazy wraps it, nothing else)
        assert re.sub(r'<noscript class="descent-lazy[^"]*">|</noscript>', "", stage) == frames[int(m.group(1))][1]


# The Compare box (descent.widgets._compare) and the stylesheet that hides it while empty: a site-side
# test (it reads docs/), so it stays out of the core tests run inside Pyodide.
@pytest.mark.parametrize("name", ["size_it_yourself", "server_dials", "price_it_out"])
def test_the_empty_compare_box_is_marked_for_the_stylesheet_to_hide(name):
    # A reader saw an empty "pinned" box before pressing Pin. The box carries a placeholder, so
    # descent.css can hide its field while it is empty (:placeholder-shown) and, without JavaScript,
    # always (no share bar): not the hidden attribute, which would keep the pinned text from being sent.
    from descent import widgets
    from descent.widgets import _compare

    html = widgets.render_static(name)
    field = re.search(r'<div class="descent-field descent-field--text" data-field="pinned"[^>]*>.*?</textarea>', html)[0]
    assert f'placeholder="{_compare.PLACEHOLDER}"' in field and "hidden" not in field
    css = (ROOT / "docs" / "assets" / "descent" / "descent.css").read_text(encoding="utf-8")
    rule = re.search(r'([^{}]*)\{ display: none; \}', css[css.index('.descent-field[data-field="pinned"]'):])[1]
    assert '.descent-field[data-field="pinned"]:has(> textarea:placeholder-shown):not(:focus-within)' in rule
    assert '.descent-widget:not(:has(.descent-share)) .descent-field[data-field="pinned"]' in rule
