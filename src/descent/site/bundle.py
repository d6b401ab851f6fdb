"""The site's own stylesheet and script, each one file, joined at build time from separate sources.

A page loads Material's stylesheets and script and, of the site's own, one stylesheet
(:data:`CSS_PATH`) and one deferred script (:data:`JS_PATH`): issue 28 measured 7 stylesheets and 9
scripts before, each a request on the page's path (a render-blocking one for each stylesheet). The
sources stay separate files under ``docs/`` (so each can be edited, reviewed and tested alone);
``mkdocs.yml`` lists them, in order, under ``extra.descent_bundle`` (``css`` and ``js``) and names
only the two joined files in ``extra_css`` and ``extra_javascript``.

* **The stylesheet** is the sources in order. A relative ``url(...)`` is rewritten to point from the
  joined file's folder at the same file as before (KaTeX's fonts: ``fonts/KaTeX_Main-Regular.woff2``
  in ``assets/katex/katex.min.css`` becomes ``../katex/fonts/KaTeX_Main-Regular.woff2``). An
  ``@import`` or ``@charset`` fails the build: neither works once the file is not the first.
* **The script** is the sources in order, each inside ``try { ... } catch``: an error thrown while
  one source starts is reported (as a separate file's would be) and the next still runs. The
  sources are classic scripts (Chromium refuses module scripts from ``file://``); each is an
  immediately-invoked function, so none sees another's names. Loaded with ``defer``: it runs once
  the page is parsed, after Material's bundle, in the order the separate scripts ran. Each source
  that finds its own files (``worker.js`` beside ``widgets.js``) resolves them against
  ``document.currentScript``, which is the joined file, in the same folder.

Build side (standard library only). :func:`bundles` is called from ``on_files``
(:mod:`descent.site.hooks`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence

__all__ = ["CSS_PATH", "JS_PATH", "BundleError", "join_css", "join_js", "bundles"]

#: Where the joined stylesheet and script go in the site (mkdocs.yml's extra_css / extra_javascript name them).
CSS_PATH = "assets/descent/bundle.css"
JS_PATH = "assets/descent/bundle.js"
#: The mkdocs.yml ``extra`` key that lists the sources.
CONFIG_KEY = "descent_bundle"


class BundleError(ValueError):
    """A source cannot be joined, or mkdocs.yml's list is wrong; the message says which and why."""


_URL = re.compile(r"""url\(\s*(?P<q>["']?)(?P<url>[^"')]*)(?P=q)\s*\)""", re.IGNORECASE)
_AT_RULE = re.compile(r"@(import|charset)\b", re.IGNORECASE)


def _rebase(url: str, source: str, target: str) -> str:
    """``url`` as written in the site file ``source``, rewritten to work from the site file ``target``."""
    if not url or url.startswith(("#", "/", "data:")) or re.match(r"^[a-z][a-z0-9+.-]*:", url, re.IGNORECASE):
        return url
    path, sep, rest = url.partition("?")
    if not sep:
        path, sep, rest = url.partition("#")
    full = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
    return posixpath.relpath(full, posixpath.dirname(target) or ".") + sep + rest


def join_css(sources: Sequence[tuple[str, str]], target: str = CSS_PATH) -> str:
    """One stylesheet from ``(site path, text)`` pairs, in order, relative URLs rebased to ``target``.

    Raises:
        BundleError: a source has an ``@import`` or ``@charset`` rule.
    """
    out = []
    for path, text in sources:
        m = _AT_RULE.search(text)
        if m:
            raise BundleError(f"{path}: @{m.group(1).lower()} cannot be joined into {target} (it only works "
                              "at the top of a stylesheet): write the rules out, or leave the file out of "
                              "extra.descent_bundle.css in mkdocs.yml")

        def rebase(m: re.Match, path: str = path) -> str:
            return f'url({m.group("q")}{_rebase(m.group("url"), path, target)}{m.group("q")})'

        out.append(f"/* {path} */\n{_URL.sub(rebase, text).strip()}\n")
    return "\n".join(out)


def join_js(sources: Sequence[tuple[str, str]]) -> str:
    """One classic script from ``(site path, text)`` pairs, in order, each isolated by try/catch."""
    out = []
    for path, text in sources:
        out.append(f"/* {path} */\ntry {{\n{text.strip()}\n}} catch (e) {{ setTimeout(() => {{ throw e; }}); }}\n")
    return "\n".join(out)


def _listed(extra: dict, kind: str) -> list[str]:
    spec = (extra or {}).get(CONFIG_KEY)
    if not isinstance(spec, dict) or not isinstance(spec.get(kind), list) or not spec[kind]:
        raise BundleError(f"mkdocs.yml: extra.{CONFIG_KEY}.{kind} must list the site paths of the "
                          f"{'stylesheets' if kind == 'css' else 'scripts'} joined into "
                          f"{CSS_PATH if kind == 'css' else JS_PATH}")
    paths = spec[kind]
    for p in paths:
        if not isinstance(p, str) or not p.endswith(f".{kind}"):
            raise BundleError(f"mkdocs.yml: extra.{CONFIG_KEY}.{kind}: {p!r} is not a .{kind} file's site path")
    if len(set(paths)) != len(paths):
        raise BundleError(f"mkdocs.yml: extra.{CONFIG_KEY}.{kind} lists a file twice")
    return paths


def bundles(extra: dict, read: Callable[[str], str | None]) -> dict[str, str]:
    """``{site path: text}`` of the joined stylesheet and script, from mkdocs.yml's ``extra`` and
    ``read(site path)`` (the file's text, or None when the site has no such file). A project whose
    ``extra`` has no ``descent_bundle`` key (a test's one-page project) gets none: ``{}``.

    Raises:
        BundleError: the list is missing or wrong, a listed file is not in the site, or a
            stylesheet cannot be joined.
    """
    out: dict[str, str] = {}
    if CONFIG_KEY not in (extra or {}):
        return out
    for kind, target in (("css", CSS_PATH), ("js", JS_PATH)):
        sources = []
        for path in _listed(extra, kind):
            text = read(path)
            if text is None:
                raise BundleError(f"mkdocs.yml: extra.{CONFIG_KEY}.{kind} lists {path}, which is not in the site")
            sources.append((path, text))
        out[target] = join_css(sources, target) if kind == "css" else join_js(sources)
    return out
