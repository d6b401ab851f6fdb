"""Content-Security-Policy for every built page: scripts, workers and connections stay on the site's origin.

:func:`inject` is called from ``on_post_page`` (:mod:`descent.site.hooks`) as the page's last
change. It computes the SHA-256 of each inline ``<script>`` the page executes (Material for MkDocs
ships a few: the ``__md_get`` storage helpers, the palette restore, the tabbed-anchor fix) and puts
a ``<meta http-equiv="Content-Security-Policy">`` first in ``<head>``, before anything a policy
must govern (a policy delivered by ``<meta>`` only applies to the elements after it).

The policy (CSP Level 3, https://www.w3.org/TR/CSP3/):

* ``default-src 'self'``: anything not named below comes from the site's own origin only.
* ``script-src 'self' 'wasm-unsafe-eval' 'sha256-...'``: the site's own script files, the page's
  own inline scripts by hash, and WebAssembly compilation, which Pyodide needs
  (``WebAssembly.instantiate`` is blocked without ``'wasm-unsafe-eval'``; CSP3 section 6.1.14).
  No ``'unsafe-eval'``: the vendored Pyodide and Material run without ``eval``/``new Function``
  (tests/browser/test_csp.py records every violation while the widgets go live).
* ``worker-src 'self'``: the widget worker (``assets/descent/worker.js``) and Material's search
  worker are same-origin files; no ``blob:`` worker is made.
* ``connect-src 'self'``: Pyodide's core, its lock file, the descent wheel, the search index.
* ``img-src 'self' data:``, ``font-src 'self' data:``: figures, KaTeX fonts, Material's inline icons.
* ``style-src 'self' 'unsafe-inline'``: widget bars size themselves with ``style="width:..%"``
  and Material sets inline styles from script.
* ``object-src 'none'``, ``base-uri 'self'``.

``frame-ancestors``, ``report-uri`` and ``sandbox`` are ignored in a ``<meta>`` policy (CSP3
section 3.3), so they are not used; a host that can send headers may add them there.
"""

from __future__ import annotations

import base64
import hashlib
import re

__all__ = [
    "DIRECTIVES",
    "IFRAME_WORKER_BOOT",
    "inline_script_hashes",
    "policy",
    "inject",
    "patch_iframe_worker",
    "patch_iframe_worker_file",
    "META_NAME",
]

#: The policy's fixed directives, in order; ``script-src`` gets the page's hashes appended.
DIRECTIVES: tuple[tuple[str, str], ...] = (
    ("default-src", "'self'"),
    ("script-src", "'self' 'wasm-unsafe-eval'"),
    ("worker-src", "'self'"),
    ("connect-src", "'self'"),
    ("img-src", "'self' data:"),
    ("style-src", "'self' 'unsafe-inline'"),
    ("font-src", "'self' data:"),
    ("object-src", "'none'"),
    ("base-uri", "'self'"),
)

#: Under ``file:`` Material's offline plugin runs its search worker in an iframe through the
#: vendored iframe-worker shim (npm ``iframe-worker`` 1.0.4, ``shim/index.js``). The shim writes an
#: inline boot script into that iframe which embeds the worker's absolute URL -- a path on the
#: reader's disk, unknown at build time, so no hash could allow it. :func:`patch_iframe_worker`
#: replaces it with this fixed script (same behaviour; the URL is read from the iframe element's
#: ``data-src``), whose hash every page's policy allows. The iframe inherits the page's policy.
IFRAME_WORKER_BOOT = (
    'postMessage=function(s,n){parent.postMessage(s,n||"*")};'
    "importScripts=function(...s){return s.reduce((n,e)=>n.then(()=>new Promise(r=>{"
    'let t=document.createElement("script");t.src=e,t.onload=r,document.body.appendChild(t)})),Promise.resolve())};'
    'addEventListener("error",({error})=>{parent.dispatchEvent(new ErrorEvent("error",'
    "{filename:frameElement.dataset.src,error}))})"
)
#: The pieces of iframe-worker 1.0.4's shim that :func:`patch_iframe_worker` rewrites.
_SHIM_BOOT = (
    '<script>postMessage=${c};importScripts=${d};addEventListener("error",({error})=>'
    '{parent.dispatchEvent(new ErrorEvent("error",{filename:"${e}",error}))})<\\/script>'
)
_SHIM_IFRAME = "r.hidden=!0,"

#: The ``http-equiv`` value of the meta element.
META_NAME = "Content-Security-Policy"

#: An inline script element (no ``src``) with its attributes and body.
_INLINE_SCRIPT = re.compile(r"<script\b(?P<attrs>[^>]*)>(?P<body>.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
_SRC_ATTR = re.compile(r"\bsrc\s*=", re.IGNORECASE)
_TYPE_ATTR = re.compile(r"""\btype\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)
#: Script types the browser executes (HTML Living Standard, "the script element": a JavaScript MIME
#: type essence, "module", or no type / empty type). Others (application/json, ...) are data blocks.
_EXECUTED_TYPES = {
    "",
    "module",
    "text/javascript",
    "application/javascript",
    "application/ecmascript",
    "text/ecmascript",
    "text/jscript",
    "text/livescript",
}
_HEAD_OPEN = re.compile(r"<head\b[^>]*>", re.IGNORECASE)
_CHARSET_META = re.compile(r"<meta\s+charset=[^>]*>", re.IGNORECASE)
_EXISTING = re.compile(r'\s*<meta\s+http-equiv="Content-Security-Policy"[^>]*>', re.IGNORECASE)


def _executed(attrs: str) -> bool:
    if _SRC_ATTR.search(attrs):
        return False
    m = _TYPE_ATTR.search(attrs)
    kind = next((g for g in m.groups() if g is not None), "") if m else ""
    return kind.strip().lower() in _EXECUTED_TYPES


def inline_script_hashes(html: str) -> list[str]:
    """``'sha256-<base64>'`` source expressions for every inline script ``html`` executes.

    The hash is over the script element's text exactly as written (UTF-8), as CSP3 section
    8.4 ("Does a source list allow all inline behavior") and 6.7.2.4 specify. Scripts with a
    ``src`` and non-script data blocks (``type="application/json"``) are skipped. Order of first
    appearance, duplicates removed.
    """
    out: list[str] = []
    for m in _INLINE_SCRIPT.finditer(html):
        if not _executed(m.group("attrs")):
            continue
        expr = _sha256(m.group("body"))
        if expr not in out:
            out.append(expr)
    return out


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def policy(html: str) -> str:
    """The Content-Security-Policy string for one page (see the module docstring).

    ``script-src`` lists the page's inline-script hashes, then the hash of :data:`IFRAME_WORKER_BOOT`.
    """
    hashes = inline_script_hashes(html) + [_sha256(IFRAME_WORKER_BOOT)]
    parts = []
    for name, value in DIRECTIVES:
        if name == "script-src" and hashes:
            value = f"{value} {' '.join(hashes)}"
        parts.append(f"{name} {value}")
    return "; ".join(parts)


def inject(html: str) -> str:
    """``html`` with its CSP meta element first in ``<head>`` (after ``<meta charset>`` if that leads).

    An existing CSP meta is replaced, so running twice gives the same page.

    Raises:
        ValueError: the page has no ``<head>`` element to put the policy in.
    """
    html = _EXISTING.sub("", html)
    head = _HEAD_OPEN.search(html)
    if head is None:
        raise ValueError("page has no <head> element: cannot add its Content-Security-Policy meta")
    meta = f'<meta http-equiv="{META_NAME}" content="{policy(html)}">'
    at = head.end()
    charset = _CHARSET_META.search(html, at)
    # Keep <meta charset> first when it is the first thing in <head> (it must be in the first 1024 bytes).
    if charset is not None and not html[at : charset.start()].strip():
        at = charset.end()
    return f"{html[:at]}\n      {meta}{html[at:]}"


def patch_iframe_worker(shim: str) -> str:
    """iframe-worker's shim with its inline boot script replaced by :data:`IFRAME_WORKER_BOOT`.

    Idempotent. Raises:
        ValueError: the shim is not iframe-worker 1.0.4's (the pieces to rewrite are missing):
            re-check the rewrite against the new version and update this module.
    """
    if IFRAME_WORKER_BOOT in shim:
        return shim
    if shim.count(_SHIM_BOOT) != 1 or shim.count(_SHIM_IFRAME) != 1:
        raise ValueError(
            "iframe-worker shim: its inline boot script is not the one descent.site.csp rewrites "
            "(expected iframe-worker 1.0.4); update descent.site.csp for the new version"
        )
    shim = shim.replace(_SHIM_BOOT, f"<script>{IFRAME_WORKER_BOOT}<\\/script>")
    return shim.replace(_SHIM_IFRAME, _SHIM_IFRAME + "r.dataset.src=e,")


def patch_iframe_worker_file(path) -> None:
    """Rewrite the built site's copy of the shim in place (see :func:`patch_iframe_worker`)."""
    from pathlib import Path

    p = Path(path)
    p.write_text(patch_iframe_worker(p.read_text(encoding="utf-8")), encoding="utf-8")
