"""MkDocs event handlers for the descent site (``hooks/descent_hooks.py`` forwards here).

What each event does:

* ``on_config``: finds the project root, ``node_modules`` and ``figures/``; sets up the KaTeX
  renderer (one node process, kept across ``mkdocs serve`` rebuilds) and the figure builder. It
  runs before the plugins' (priority 100): outside a git work tree (a copy of the files, a
  tarball) it turns the git-revision-date-localized plugin off, and ``on_page_markdown`` dates
  every page from ``SOURCE_DATE_EPOCH`` instead (:func:`page_dates_from_git`, :func:`fallback_date`).
  Last, when the figure cache lacks a figure a page shows, it starts the figure process
  (:func:`descent.site.figure_side.start`), and when the cache lacks SmolLM2's results, the build's
  second process (:func:`descent.trace.prefetch.start`: the model, Part 2's perplexities and Part
  3's results computed beside the pages), so a clean build uses both cores.
* ``on_files``: adds the vendored browser assets to the site as generated files: KaTeX's CSS and
  fonts (``assets/katex/``) and the iframe-worker shim (``assets/vendor/iframe-worker/shim.js``)
  that ``extra.polyfills`` points at for Material's offline plugin; and Material's table rules,
  copied for the tables the build wraps itself (``assets/descent/content-tables.css``,
  :mod:`descent.site.tables`); last, the site's one stylesheet and one script, joined from the
  sources mkdocs.yml lists (:mod:`descent.site.bundle`).
* ``on_pre_page``: for a notebook page (``docs/notebooks/*.ipynb``), runs the notebook into the
  build cache when its content or inputs changed and has mkdocs-jupyter render that executed copy,
  while the page itself keeps the unexecuted source (:mod:`descent.site.notebooks`: two handlers,
  one just before mkdocs-jupyter's and one just after).
* ``on_page_markdown``: resolves shortcodes (:mod:`descent.site.shortcodes`); any error fails the
  build. Each value's number is recorded and the page gets its closing section of derivations
  (:mod:`descent.site.explain`); ``on_page_content`` links each number to its entry. Notebook pages have no Markdown to resolve (their numbers come from their code cells).
* ``on_page_content``: renders every math span (arithmatex generic output) with KaTeX; links each
  glossary term's first use in running prose to its entry (:func:`descent.site.glossary.link_terms`); cleans a
  notebook page's HTML (:func:`descent.site.notebooks.clean_html`); last, makes code blocks focusable
  until Material measures them, marks the blocks far down the page that the browser may leave
  undrawn until they near the screen (:mod:`descent.site.blocks`), puts each table in Material's
  scroll wrapper (:mod:`descent.site.tables`) and keeps the bodies of closed boxes out of the DOM
  until they are opened, and long tables past the first screen until they near it
  (:mod:`descent.site.lazy`).
* ``on_post_page``: strips mkdocs-jupyter's mermaid CDN script, then fails the build if any
  script, stylesheet, image or frame would load from another origin; last, adds the page's
  Content-Security-Policy meta (:mod:`descent.site.csp`; ``on_post_template`` does it for 404.html).
* ``on_post_build``: ends the figure process and the second process (:func:`descent.trace.prefetch.stop`:
  it has finished by then, or is finishing its last job, the model's float32 copy); writes the figures drawn for
  this build; patches the vendored iframe-worker shim so offline search runs under the policy
  (:func:`descent.site.csp.patch_iframe_worker`); writes ``_headers`` (the worker's header policy,
  :func:`descent.site.csp.headers_file`); then calls ``descent.site.runtime.on_post_build(config)``
  (the Pyodide runtime) when that module exists, and ``descent.site.wllama.on_post_build(config)``
  (the engine and the model file for the reader's browser).
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mkdocs.exceptions import PluginError
from mkdocs.plugins import CombinedEvent, event_priority
from mkdocs.structure.files import File, Files
from mkdocs.utils import get_relative_url

from descent import catalog
from descent.catalog import CatalogError
from descent.trace import prefetch

try:  # the widgets and the page values read the catalog as they load: a bad row is one line
    from descent import formulas, widgets
    from descent.site import (
        blocks,
        bundle,
        csp,
        explain,
        figure_side,
        glossary,
        katex,
        lazy,
        notebooks,
        runtime,
        shortcodes,
        tables,
        values,
        wllama,
    )
    from descent.site.figures import FigureBuilder, FigureError, figure_html, package_fingerprint
except CatalogError as e:
    raise PluginError(f"the catalog: {e}") from None

__all__ = ["on_config", "on_files", "on_pre_page", "on_page_markdown", "on_page_content",
           "on_post_page", "on_post_template", "on_post_build", "on_startup", "start_early_work"]

#: Where the iframe-worker shim goes in the site (``extra.polyfills`` in mkdocs.yml must match).
SHIM_PATH = "assets/vendor/iframe-worker/shim.js"

_renderers: dict[Path, katex.Renderer] = {}
log = logging.getLogger("mkdocs.plugins.descent")


class _State:
    root: Path
    node_modules: Path
    figures: FigureBuilder
    renderer: katex.Renderer
    #: The "last updated" date (Material's page.meta key) for every page when git cannot say, or "".
    fallback_date: str = ""
    #: Where executed notebooks are kept between builds.
    notebook_cache: Path
    #: :func:`descent.site.notebooks.inputs_fingerprint`, computed once per build when a notebook needs it.
    notebook_inputs: str = ""
    #: ``{src_uri: (source path, executed path)}`` of the notebook pages of this build.
    notebook_paths: dict[str, tuple[str, str]]
    #: ``{src_uri: explain.Collector}``: the numbers a page's Markdown printed, until its HTML links them.
    numbers: dict[str, Any]
    #: Work no page depends on, started in a thread by :func:`on_config` (:func:`start_early_work`).
    early: Future | None = None
    #: Served by MkDocs' dev server (``mkdocs serve``, ``nox -s preview``), whose live-reload script
    #: the pages' policy must let run (:data:`descent.site.csp.LIVE_RELOAD_SCRIPT_SRC`).
    live_reload: bool = False


_state = _State()


def _root(config: Any) -> Path:
    return Path(config.config_file_path).resolve().parent


#: The plugin that dates each page from its last commit (mkdocs.yml ``plugins``).
GIT_DATES_PLUGIN = "git-revision-date-localized"
#: The page.meta key Material's template reads for "Last update" (partials/source-file.html).
DATE_META = "git_revision_date_localized"


def page_dates_from_git(root: Path) -> bool:
    """True when ``root`` is inside a git work tree with at least one commit (the plugin can date
    pages from their last commit); False for a copy without ``.git``, or without git installed."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=root, capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0


def fallback_date(plugin: Any, environ: Any = os.environ) -> str:
    """The date every page shows when git cannot date it: ``SOURCE_DATE_EPOCH`` (the build's fixed
    date, so the output stays byte-reproducible), in the plugin's own format and markup; "" (no
    date shown) when it is unset, rather than the clock's time.

    Raises:
        PluginError: ``SOURCE_DATE_EPOCH`` is not a whole number of seconds.
    """
    raw = environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not raw:
        return ""
    if not raw.isdigit():
        raise PluginError(f"SOURCE_DATE_EPOCH must be a whole number of seconds since 1970, got {raw!r}")
    from mkdocs_git_revision_date_localized_plugin.util import Util

    cfg = plugin.config
    util = Util(config=cfg, mkdocs_dir=str(_state.root))
    formats = util.get_date_formats_for_timestamp(int(raw), locale=cfg.get("locale") or "en", add_spans=True)
    return formats[cfg.get("type") or "date"]


@event_priority(100)  # before the plugins: the git-dates plugin must be off before its own on_config
def on_config(config: Any) -> Any:
    try:  # every row, before any page computes with one
        catalog.models()
        catalog.accelerators()
    except CatalogError as e:
        raise PluginError(f"the catalog: {e}") from None
    root = _root(config)
    _state.root = root
    _state.node_modules = root / "node_modules"
    # The package may have changed since the last build of this process (mkdocs serve): the figure
    # keys and the notebooks' inputs hash it again, as the figure process does.
    package_fingerprint.cache_clear()
    _state.figures = FigureBuilder(root / "figures", root / ".cache" / "descent" / "figures")
    _state.notebook_cache = root / ".cache" / "descent" / "notebooks"
    _state.notebook_inputs = ""
    _state.notebook_paths = {}
    _state.numbers = {}
    check_jupyter_config(config)
    if _state.node_modules not in _renderers:
        _renderers[_state.node_modules] = katex.Renderer(_state.node_modules)
    _state.renderer = _renderers[_state.node_modules]
    values.reference.FIGURES_DIR[:] = [root / "figures"]
    glossary.SOURCE[:] = [Path(config.docs_dir)]
    polyfills = config.extra.get("polyfills") or []
    if SHIM_PATH not in polyfills:
        raise PluginError(f"mkdocs.yml: extra.polyfills must list {SHIM_PATH!r} (the vendored iframe-worker shim)")
    _state.fallback_date = ""
    dates = config.plugins.get(GIT_DATES_PLUGIN)
    if dates is not None and dates.config.get("enabled") and not page_dates_from_git(root):
        dates.config["enabled"] = False
        if not dates.config.get("locale"):
            dates.config["locale"] = config.theme.get("language") or "en"
        _state.fallback_date = fallback_date(dates)
    # Last: only a build that got this far uses them. The figures first (the pages need them sooner).
    figure_side.start(_state.figures, Path(config.docs_dir))
    prefetch.start()
    _state.early = start_early_work(config)
    return config


def start_early_work(config: Any) -> Future | None:
    """Start, in a thread beside the pages, the work that depends on no page: the runtime's
    bytecode, snapshot and gzipped copies made in their caches (:func:`descent.site.runtime.warm_caches`).
    It waits mostly on node, so the build's own process goes on with the pages; in a clean build its
    10 s ran after the pages, on one core. :func:`on_post_build` waits for it. The wheel is built
    here, before the thread: flit runs in this process, in another folder and with
    ``SOURCE_DATE_EPOCH`` set, and the pages must not see either. A rebuild (``mkdocs serve``) first
    waits for the last build's thread, so two never run at once; after a failed build the process
    ends once the thread has (about 10 s in a clean build). Starts nothing when the wheel cannot be
    built: :func:`on_post_build` says why. (The notebooks stay where they are: run early, before the
    second process has written the model's float32 copy and its results, their kernels computed
    those again: 20-35 s more CPU, no sooner end.)"""
    if _state.early is not None:
        _state.early.exception()  # wait; its error, if any, was the last build's
    _state.early = None
    try:
        root = runtime.project_root(config)
        plain = runtime.build_wheel(root)
    except (OSError, ValueError, RuntimeError):
        return None
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="descent-early")
    job = pool.submit(runtime.warm_caches, root, plain)
    pool.shutdown(wait=False)
    return job


def _executed_notebook(source: Path) -> Path:
    if not _state.notebook_inputs:
        _state.notebook_inputs = notebooks.inputs_fingerprint()
    return notebooks.executed(source, _state.notebook_cache, _state.notebook_inputs)


#: The mkdocs-jupyter plugin's name in mkdocs.yml, and the options the notebook pipeline relies on:
#: the hook executes (cached) and mkdocs-jupyter only renders; the download is the source file;
#: no RequireJS from a CDN; no jupytext read of every Markdown page.
JUPYTER_PLUGIN = "mkdocs-jupyter"
JUPYTER_OPTIONS = {"execute": False, "include_source": True, "include_requirejs": False, "cache": True}


def check_jupyter_config(config: Any) -> None:
    """Fail the build when mkdocs-jupyter is configured other than the notebook pipeline needs
    (:data:`JUPYTER_OPTIONS`; Markdown and Python files ignored), naming the option to change."""
    plugin = config.plugins.get(JUPYTER_PLUGIN)
    if plugin is None:
        return
    for key, want in JUPYTER_OPTIONS.items():
        if plugin.config.get(key) != want:
            raise PluginError(f"mkdocs.yml: {JUPYTER_PLUGIN} needs {key}: {str(want).lower()} "
                              "(the descent hook executes the notebooks, cached: descent.site.notebooks)")
    ignored = set(plugin.config.get("ignore") or [])
    if not {"*.md", "*.py"} <= ignored:
        raise PluginError(f"mkdocs.yml: {JUPYTER_PLUGIN} needs ignore: ['*.md', '*.py'] (only .ipynb files are "
                          "notebooks here; otherwise it reads every Markdown page with jupytext on every build)")


@event_priority(10)  # before mkdocs-jupyter's on_pre_page (priority 0)
def _notebook_before_jupyter(page: Any, config: Any, files: Files) -> Any:
    """Point a notebook page at its executed copy, which mkdocs-jupyter keys its cache on."""
    if not notebooks.is_notebook(page.file.src_uri):
        return page
    source = page.file.abs_src_path
    try:
        done = _executed_notebook(Path(source))
    except (FileNotFoundError, ValueError) as e:
        raise PluginError(f"{page.file.src_uri}: {e}") from None
    except notebooks.NotebookError as e:
        raise PluginError(f"{page.file.src_uri}: the notebook failed to run:\n{e}") from None
    _state.notebook_paths[page.file.src_uri] = (source, str(done))
    page.file.abs_src_path = str(done)
    return page


@event_priority(-10)  # after mkdocs-jupyter's on_pre_page
def _notebook_after_jupyter(page: Any, config: Any, files: Files) -> Any:
    """Give the page its source back (git dates, the edit link, the download) and render the copy."""
    paths = _state.notebook_paths.get(page.file.src_uri)
    if paths is None:
        return page
    source, done = paths
    page.file.abs_src_path = source
    render = page.render

    def render_executed(config: Any, files: Files) -> None:
        page.file.abs_src_path = done
        try:
            render(config, files)
        finally:
            page.file.abs_src_path = source

    page.render = render_executed
    # The download link (notebooks.download_box): the source, copied beside the page by
    # include_source. Relative, so it works from any base path and from file:// (mkdocs-jupyter's
    # is absolute).
    page.nb_url = Path(source).name
    return page


on_pre_page = CombinedEvent(_notebook_before_jupyter, _notebook_after_jupyter)


def vendored_assets(node_modules: Path) -> dict[str, Path]:
    """``{site path: source file}`` for everything copied from node_modules into the site."""
    shim = node_modules / "iframe-worker" / "shim" / "index.js"
    if not shim.exists():
        raise PluginError(f"iframe-worker not found at {shim}; run `npm ci` in the project root")
    try:
        out = katex.asset_files(node_modules)
    except katex.KatexError as e:
        raise PluginError(str(e)) from None
    out[SHIM_PATH] = shim
    return out


def on_files(files: Files, config: Any) -> Files:
    for uri, src in vendored_assets(_state.node_modules).items():
        if files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, abs_src_path=str(src)))
    try:
        table_css = tables.table_css()
    except tables.TableCssError as e:
        raise PluginError(str(e)) from None
    files.append(File.generated(config, tables.CSS_PATH, content=table_css))
    # The formulas a widget's number may show, for the worker (descent.derivation.derive in Pyodide).
    files.append(File.generated(config, explain.TABLE_FILE,
                                content=json.dumps(explain.formula_table(), sort_keys=True, ensure_ascii=False)))

    def read(uri: str) -> str | None:
        f = files.get_file_from_path(uri)
        return None if f is None else f.content_string

    try:
        joined = bundle.bundles(config.extra, read)
    except bundle.BundleError as e:
        raise PluginError(str(e)) from None
    for uri, text in joined.items():
        old = files.get_file_from_path(uri)
        if old is not None:
            files.remove(old)
        files.append(File.generated(config, uri, content=text))
    return files


def _prefix(page: Any) -> str:
    """Relative path from a page's URL to the site root (works with and without directory URLs)."""
    return "../" * page.url.count("/")


_SVG_SIZE = re.compile(rb'<svg[^>]*?width="([\d.]+)pt"[^>]*?height="([\d.]+)pt"')
#: CSS px per pt (CSS 2.1: 1in = 96px = 72pt).
PX_PER_PT = 96 / 72


def _svg_px(svg: bytes) -> tuple[int, int]:
    """An SVG's width and height in CSS px (matplotlib sizes it in pt)."""
    m = _SVG_SIZE.search(svg)
    return (round(float(m.group(1)) * PX_PER_PT), round(float(m.group(2)) * PX_PER_PT)) if m else (720, 400)


def _figure_handler(page: Any):
    def handle(name: str, args: dict[str, str]) -> str:
        if args:
            raise ValueError(f"unknown argument {next(iter(args))!r}; figure shortcodes take no arguments")
        try:
            recipe = _state.figures.recipe(name)
            svgs = _state.figures.svgs(name)
        except FigureError as e:
            raise ValueError(str(e)) from None
        w, h = _svg_px(svgs["light"])
        return figure_html(name, recipe.alt, recipe.caption, _prefix(page), w, h, narrow=_svg_px(svgs["light-narrow"]))

    return handle


def formula_markdown(name: str, args: dict[str, str]) -> str:
    """Display math for ``descent.formulas.FORMULAS[name]``, then its symbols as prose and its source.

    A formula with a textbook form (``Formula.compact``) shows that first and folds the sympy form
    (the one checked against the code) under "Written out in full"; the others show the sympy form.
    The "where" line reads as prose: "$L$, the number of layers; ...".
    """

    legend = args.pop("legend", "yes")
    if args:
        raise ValueError(f"unknown argument {next(iter(args))!r}; formula shortcodes take legend=yes|no")
    if legend not in ("yes", "no"):
        raise ValueError(f"legend={legend!r} is not allowed; legend must be one of yes, no")
    f = formulas.formula(name)
    out = f"\n\n$$\n{f.compact or f.latex()}\n$$\n\n"
    if legend == "yes":
        out += f"where {f.where()}. {f.note} *Source: {f.source_markdown()}.*\n{{: .descent-formula-where }}\n\n"
    if f.compact:
        full = f"$$\n{f.latex()}\n$$".replace("\n", "\n    ")
        out += (
            '??? info "Written out in full (the form the tests check against the code)"\n\n'
            f"    {full}\n\n"
        )
    return out


def widget_html(name: str, args: dict[str, str]) -> str:
    """The widget's pre-rendered HTML from ``descent.widgets.render_static``."""
    try:
        html = widgets.render_static(name, **args)
    except TypeError as e:
        raise ValueError(f"bad arguments for widget {name!r}: {e}") from None
    return f"\n\n{html}\n\n"


def _first_line(markdown: str, page: Any) -> int:
    """The line of the page's file where ``markdown`` starts: MkDocs has cut a YAML front matter."""
    try:
        source = page.file.content_string
    except (OSError, UnicodeDecodeError):
        return 1
    body, src = markdown.rstrip("\n"), source.rstrip("\n")
    if body and src.endswith(body):
        return 1 + src[: len(src) - len(body)].count("\n")
    return 1


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if _state.fallback_date and DATE_META not in page.meta:
        page.meta[DATE_META] = _state.fallback_date
    if notebooks.is_notebook(page.file.src_uri):
        return markdown  # the notebook's JSON: mkdocs-jupyter renders the page, not Markdown
    handlers = {"figure": _figure_handler(page), "formula": formula_markdown, "widget": widget_html}
    numbers = explain.collector(page.file.src_uri)  # every value's derivation (descent.site.explain)
    handlers["value"] = numbers.handler(shortcodes.value_handler())
    try:
        markdown = shortcodes.resolve(markdown, page.file.src_uri, handlers, first_line=_first_line(markdown, page))
        _state.numbers[page.file.src_uri] = numbers
        return markdown + numbers.section()
    except (shortcodes.ShortcodeError, ValueError) as e:
        raise PluginError(str(e)) from None


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    if notebooks.is_notebook(page.file.src_uri):
        executed = json.loads(Path(_state.notebook_paths[page.file.src_uri][1]).read_text(encoding="utf-8"))
        try:
            html = notebooks.clean_html(html, page.file.src_uri, notebooks.image_alts(executed))
            box = notebooks.download_box(page.nb_url, config.repo_url)
            html = notebooks.with_download_box(html, box, page.file.src_uri)
        except notebooks.NotebookError as e:
            raise PluginError(str(e)) from None
    if page.file.src_uri in _state.numbers:
        html = explain.link_values(html, _state.numbers.pop(page.file.src_uri))
    try:
        html = katex.render_math_html(html, _state.renderer, page.file.src_uri)
    except katex.KatexError as e:
        raise PluginError(str(e)) from None
    html = _link_terms(html, page, config, files)
    html = lazy.lazy_details(tables.prewrap(blocks.mark_far_blocks(blocks.focusable_code(html))))
    return lazy.lazy_far_forms(lazy.lazy_far_tables(html))


def _link_terms(html: str, page: Any, config: Any, files: Files) -> str:
    """Each glossary term's first use in the page's running prose, linked to its entry
    (:func:`descent.site.glossary.link_terms`); not on the glossary page itself nor on notebooks."""
    target = files.get_file_from_path(glossary.GLOSSARY_PAGE)
    if target is None or page.file.src_uri == glossary.GLOSSARY_PAGE or notebooks.is_notebook(page.file.src_uri):
        return html
    try:
        found = glossary.terms(Path(config.docs_dir) / glossary.TERMS_FILE)
    except (OSError, ValueError) as e:
        raise PluginError(f"the glossary's terms: {e}") from None
    url = get_relative_url(target.url, page.url)
    return glossary.link_terms(html, found, {t.id: f"{url}#{t.id}" for t in found})


#: mkdocs-jupyter injects mermaid from a CDN; no notebook here uses mermaid diagrams.
_MERMAID_CDN = re.compile(r'<script[^>]*src="https://[^"]*mermaid[^"]*"[^>]*>\s*</script>\s*')
#: Elements that make the browser fetch their src (or, for <link>, href).
_FETCHING_TAG = re.compile(r"<(script|img|iframe|source|video|audio|embed|track|input|link)\b[^>]*>", re.IGNORECASE)
_ATTR = re.compile(r"""\b(src|href|rel)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)
_CSS_EXTERNAL = re.compile(r"""url\(\s*["']?(?:https?:)?//[^)]+\)|@import\s+["'](?:https?:)?//""", re.IGNORECASE)
#: <link rel=...> values that name a URL without fetching it.
_LINK_NOT_FETCHED = {"canonical"}


def _is_remote(url: str) -> bool:
    return url.strip().lower().startswith(("http://", "https://", "//"))


def external_assets(html: str) -> list[str]:
    """Every tag or CSS url() in ``html`` that would load something from another origin.

    Hyperlinks (``<a href>``) and ``<link rel="canonical">`` are not loads and are not reported.
    """
    found = []
    for m in _FETCHING_TAG.finditer(html):
        attrs = {a.group(1).lower(): next(g for g in a.groups()[1:] if g is not None) for a in _ATTR.finditer(m.group(0))}
        tag = m.group(1).lower()
        if tag == "link":
            if attrs.get("rel", "").lower() in _LINK_NOT_FETCHED:
                continue
            url = attrs.get("href", "")
        else:
            url = attrs.get("src", "")
        if _is_remote(url):
            found.append(m.group(0)[:160])
    found += [m.group(0)[:160] for m in _CSS_EXTERNAL.finditer(html)]
    return found


#: A canonical URL on a loopback address (the default site_url, where `nox -s serve` serves) is never
#: the page's real address: a hosted or offline copy would point search engines and readers' tools at
#: the reader's own machine. Dropped; set DESCENT_SITE_URL when deploying and the canonical stays.
_LOOPBACK_CANONICAL = re.compile(
    r'<link rel="canonical" href="https?://(?:127\.\d+\.\d+\.\d+|localhost|\[::1\])(?::\d+)?/[^"]*">\s*'
)


def drop_loopback_canonical(html: str) -> str:
    """``html`` without a ``<link rel="canonical">`` that names a loopback address."""
    return _LOOPBACK_CANONICAL.sub("", html)


def on_startup(*, command: str, dirty: bool) -> None:
    """MkDocs says once which command runs: ``serve`` adds a live-reload script to every page."""
    _state.live_reload = command == "serve"


def on_post_page(output: str, page: Any, config: Any) -> str:
    output = drop_loopback_canonical(_MERMAID_CDN.sub("", output))
    found = external_assets(output)
    if found:
        raise PluginError(
            f"{page.file.src_uri}: the page would load {len(found)} asset(s) from another origin "
            f"(nothing may leave the site): {found[0]}"
        )
    # Last: the Content-Security-Policy meta hashes the page's final inline scripts.
    return csp.inject(output, _state.live_reload)


def on_post_template(output_content: str, template_name: str, config: Any) -> str:
    """Theme templates rendered as pages (404.html) get the same Content-Security-Policy meta."""
    if not template_name.endswith(".html"):
        return output_content
    return csp.inject(output_content, _state.live_reload)


def on_post_build(config: Any) -> None:
    for note in (figure_side.stop(), prefetch.stop(wait=prefetch.FINISH_S)):
        if note:
            log.info(note)
    _state.figures.write(Path(config.site_dir))
    csp.patch_iframe_worker_file(Path(config.site_dir) / SHIM_PATH)
    early, _state.early = _state.early, None
    if early is not None:
        early.exception()  # wait; runtime.on_post_build meets its error again, with the same message
    # Security headers for hosts that read a _headers file: the worker's policy lives there.
    base = urlsplit(config.site_url or "/").path or "/"
    (Path(config.site_dir) / csp.HEADERS_FILE).write_text(csp.headers_file(base), encoding="utf-8")
    runtime.on_post_build(config)
    try:
        wllama.on_post_build(config)
    except (RuntimeError, FileNotFoundError, ValueError) as e:
        raise PluginError(str(e)) from None


def on_shutdown() -> None:
    figure_side.stop()
    prefetch.stop()
    for r in _renderers.values():
        r.close()
