"""Content-Security-Policy for every built page: scripts, workers and connections stay on the site's origin.

:func:`inject` is called from ``on_post_page`` (:mod:`descent.site.hooks`) as the page's last
change. It computes the SHA-256 of each inline ``<script>`` the page executes (Material for MkDocs
ships a few: the ``__md_get`` storage helpers, the palette restore, the tabbed-anchor fix) and puts
a ``<meta http-equiv="Content-Security-Policy">`` first in ``<head>``, before anything a policy
must govern (a policy delivered by ``<meta>`` only applies to the elements after it).

The policy (CSP Level 3, https://www.w3.org/TR/CSP3/):

* ``default-src 'self'``: anything not named below comes from the site's own origin only.
* ``script-src 'self' 'sha256-...'``: the site's own script files and the page's own inline
  scripts by hash. No ``'unsafe-eval'``: Material runs without ``eval``/``new Function``
  (tests/browser/test_csp.py records every violation while the widgets go live). No
  ``'wasm-unsafe-eval'`` either: the page compiles no WebAssembly; Pyodide runs in the widget
  worker, whose own policy (:data:`WORKER_DIRECTIVES`) allows it.
* ``worker-src 'self'``: the widget worker (``assets/descent/worker.js``) and Material's search
  worker are same-origin files; no ``blob:`` worker is made.
* ``connect-src 'self'``: Pyodide's core, its lock file, the descent wheel, the search index.
* ``img-src 'self' data:``, ``font-src 'self' data:``: figures, KaTeX fonts, Material's inline icons.
* ``style-src 'self' 'unsafe-inline'``: widget bars size themselves with ``style="width:..%"``
  and Material sets inline styles from script.
* ``object-src 'none'``, ``base-uri 'self'``, ``form-action 'none'`` (the widgets' forms are
  never submitted: the browser computes in place; no other page has a form that sends anything).

``frame-ancestors``, ``report-uri`` and ``sandbox`` are ignored in a ``<meta>`` policy (CSP3
section 3.3), so they are not used there.

**The worker's policy.** A ``<meta>`` policy does not reach a Web Worker: a worker created from a
URL gets the policy of its own script's HTTP response (CSP3 section 4.2.1, "initialize a global
object's CSP list"), and with none it runs unrestricted. Hosts that send headers give
``assets/descent/worker.js`` :data:`WORKER_DIRECTIVES` (:func:`header_policy`): its own files,
Pyodide's WebAssembly, no string eval, no connection to another origin, no dynamic ``import()``
from another origin. :mod:`descent.site.serve` (``nox -s serve``, the browser tests' server) sends
it; :func:`headers_file` writes a ``_headers`` file into the built site for hosts that read one
(Netlify, Cloudflare Pages). A host that sends no headers (GitHub Pages, a plain file server) still
gets the worker's own guard (``guard.js``, the first import of both workers: fetch,
XMLHttpRequest, WebSocket, EventSource, importScripts, nested workers and string timers refused
beyond the site's origin), but not what only a policy can stop: ``eval``/``new Function`` and a
dynamic ``import()`` of another origin.
The model's worker (``assets/descent/llm-worker.js``, the real model in the reader's browser:
:mod:`descent.site.wllama`) gets :data:`MODEL_WORKER_DIRECTIVES`: the engine (wllama) runs
llama.cpp in a worker it makes from a Blob, whose script and thread workers are ``blob:`` URLs it
creates itself; everything fetched is the site's. With or without headers it has the same guard
(``guard-model.js``), which lets it start only workers from blob: URLs it made, guarded in turn.

HTML pages get :data:`PAGE_HEADER_DIRECTIVES` as a header: only what a ``<meta>`` cannot carry
(``frame-ancestors``) and restrictions that need no hash; scripts stay governed by the meta.
"""

from __future__ import annotations

import base64
import hashlib
import re

__all__ = [
    "DIRECTIVES",
    "HEADERS_FILE",
    "IFRAME_WORKER_BOOT",
    "MODEL_WORKER_DIRECTIVES",
    "MODEL_WORKER_SCRIPTS",
    "PAGE_HEADER_DIRECTIVES",
    "WORKER_DIRECTIVES",
    "WORKER_SCRIPTS",
    "header_policy",
    "headers_file",
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
    ("script-src", "'self'"),
    ("worker-src", "'self'"),
    ("connect-src", "'self'"),
    ("img-src", "'self' data:"),
    ("style-src", "'self' 'unsafe-inline'"),
    ("font-src", "'self' data:"),
    ("object-src", "'none'"),
    ("base-uri", "'self'"),
    ("form-action", "'none'"),
)

#: The widget worker's policy, sent as an HTTP header on its script (see the module docstring):
#: Pyodide's core, lock file and wheel are same-origin files (``'self'``), it compiles WebAssembly
#: (``'wasm-unsafe-eval'``, CSP3 section 6.1.14) and needs no string eval; it starts no worker.
WORKER_DIRECTIVES: tuple[tuple[str, str], ...] = (
    ("default-src", "'self'"),
    ("script-src", "'self' 'wasm-unsafe-eval'"),
    ("connect-src", "'self'"),
    ("worker-src", "'none'"),
)

#: The model worker's policy (``assets/descent/llm-worker.js``): its own files and WebAssembly like
#: the widget worker's, plus ``blob:`` scripts and workers, the only way wllama 3.8.1 starts its
#: engine (``createWorker`` in its ``utils.ts`` makes the worker from a Blob of its code).
MODEL_WORKER_DIRECTIVES: tuple[tuple[str, str], ...] = (
    ("default-src", "'self'"),
    ("script-src", "'self' 'wasm-unsafe-eval' blob:"),
    ("connect-src", "'self'"),
    ("worker-src", "blob:"),
)
#: The header policy of every other response (HTML pages): only directives that need no per-page
#: hash, so it adds to the page's ``<meta>`` policy (both are enforced, CSP3 section 8.1) without
#: loosening or contradicting it; ``frame-ancestors`` works only here.
PAGE_HEADER_DIRECTIVES: tuple[tuple[str, str], ...] = (
    ("object-src", "'none'"),
    ("base-uri", "'self'"),
    ("form-action", "'none'"),
    ("frame-ancestors", "'self'"),
)

#: Site paths of the worker scripts that get :data:`WORKER_DIRECTIVES`.
WORKER_SCRIPTS = ("assets/descent/worker.js",)

#: Site paths of the model's worker scripts that get :data:`MODEL_WORKER_DIRECTIVES`.
MODEL_WORKER_SCRIPTS = ("assets/descent/llm-worker.js",)
#: The file :func:`headers_file` writes at the site's root (Netlify and Cloudflare Pages read it).
HEADERS_FILE = "_headers"


def _join(directives: tuple[tuple[str, str], ...]) -> str:
    return "; ".join(f"{name} {value}" for name, value in directives)


def header_policy(site_path: str) -> str:
    """The ``Content-Security-Policy`` header value for the file at ``site_path`` (relative to the
    site's root, e.g. ``"assets/descent/worker.js"``, ``"index.html"``): the worker's policy for a
    worker script, :data:`PAGE_HEADER_DIRECTIVES` for anything else."""
    path = site_path.split("?", 1)[0].split("#", 1)[0].lstrip("/")
    if path in MODEL_WORKER_SCRIPTS:
        return _join(MODEL_WORKER_DIRECTIVES)
    return _join(WORKER_DIRECTIVES if path in WORKER_SCRIPTS else PAGE_HEADER_DIRECTIVES)


def headers_file(base_path: str = "/") -> str:
    """The ``_headers`` file for a site served under ``base_path`` (the path of ``site_url``).

    Format of Netlify and Cloudflare Pages: a path pattern, then indented ``Name: value`` lines.
    Every path gets the page header policy and ``X-Content-Type-Options: nosniff``; the worker
    scripts get the worker policy too. Both rules match a worker script: Cloudflare Pages joins the
    two values with a comma, which is two policies, both enforced (CSP3 section 8.1), and Netlify
    serves the more specific rule's value; either way the worker is held to its own policy (the
    page header's directives do not govern anything a worker does).
    """
    base = "/" + base_path.strip("/") + "/" if base_path.strip("/") else "/"
    lines = [
        "# Security headers for hosts that read a _headers file (Netlify, Cloudflare Pages).",
        "# Written by descent.site.csp.headers_file: edit that, not this file.",
        f"{base}*",
        f"  Content-Security-Policy: {_join(PAGE_HEADER_DIRECTIVES)}",
        "  X-Content-Type-Options: nosniff",
    ]
    for script in WORKER_SCRIPTS:
        lines += [f"{base}{script}", f"  Content-Security-Policy: {_join(WORKER_DIRECTIVES)}"]
    for script in MODEL_WORKER_SCRIPTS:
        lines += [f"{base}{script}", f"  Content-Security-Policy: {_join(MODEL_WORKER_DIRECTIVES)}"]
    return "\n".join(lines) + "\n"

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


#: ``script-src`` for a page served by MkDocs' own dev server (``mkdocs serve``, ``nox -s preview``):
#: it adds an inline live-reload script to every page it sends, different each time, so no hash
#: can name it. Inline scripts are allowed there instead (a hash in the list would make browsers
#: ignore ``'unsafe-inline'``, so there are none). A build never gets this.
LIVE_RELOAD_SCRIPT_SRC = "'self' 'unsafe-inline'"


def policy(html: str, live_reload: bool = False) -> str:
    """The Content-Security-Policy string for one page's ``<meta>`` (see the module docstring).

    ``script-src`` lists the page's inline-script hashes, then the hash of :data:`IFRAME_WORKER_BOOT`;
    with ``live_reload`` (MkDocs' dev server), :data:`LIVE_RELOAD_SCRIPT_SRC` instead.
    """
    hashes = inline_script_hashes(html) + [_sha256(IFRAME_WORKER_BOOT)]
    parts = []
    for name, value in DIRECTIVES:
        if name == "script-src" and live_reload:
            value = LIVE_RELOAD_SCRIPT_SRC
        elif name == "script-src" and hashes:
            value = f"{value} {' '.join(hashes)}"
        parts.append(f"{name} {value}")
    return "; ".join(parts)


def inject(html: str, live_reload: bool = False) -> str:
    """``html`` with its CSP meta element first in ``<head>`` (after ``<meta charset>`` if that leads);
    ``live_reload``: the dev server's policy (:func:`policy`).

    An existing CSP meta is replaced, so running twice gives the same page.

    Raises:
        ValueError: the page has no ``<head>`` element to put the policy in.
    """
    html = _EXISTING.sub("", html)
    head = _HEAD_OPEN.search(html)
    if head is None:
        raise ValueError("page has no <head> element: cannot add its Content-Security-Policy meta")
    meta = f'<meta http-equiv="{META_NAME}" content="{policy(html, live_reload)}">'
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
