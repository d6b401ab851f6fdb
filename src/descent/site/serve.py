"""Serve a built site on 127.0.0.1 with the headers a host should send (``nox -s serve``, browser tests).

    python -m descent.site.serve [--directory site] [--port 8000] [--bind 127.0.0.1]

The standard library's ``http.server`` with five additions. Text files (:data:`COMPRESSED`) go out
gzip-compressed to a client that accepts it (``Content-Encoding: gzip``), as GitHub Pages, Netlify
and Cloudflare Pages send them, so a page measured here (the browser tests, ``nox -s bench``,
Lighthouse) costs what it costs a reader of the hosted site; WebAssembly, archives and the Pyodide
snapshot go as they are, as those hosts send them. A missing page gets the site's own
``404.html`` (with status 404), as a host serves it, and so does a folder without an
``index.html`` (never a listing of its files). A page's address written as a folder
(``/part-3-serving-software/`` or ``/part-3-serving-software``, the form of sites built with
directory URLs) is redirected (301) to the page (``/part-3-serving-software.html``). A port another program holds is said in one
line that names the way out (``nox -s serve -- --port 8001``). Ctrl-C stops it quietly. And every
response carries the
``Content-Security-Policy`` of :func:`descent.site.csp.header_policy` for its path (the widget
worker's script gets the worker's own policy, which a page's ``<meta>`` cannot give it) and
``X-Content-Type-Options: nosniff``. It is the same policy the built site's ``_headers`` file asks
of hosts that read one (:func:`descent.site.csp.headers_file`). A development server, not a
production one: it binds to the loopback address unless told otherwise.

Build side (standard library only, but not shipped to the browser).
"""

from __future__ import annotations

import argparse
import email.utils
import errno
import functools
import gzip
import http.server
import io
import signal
import socket
import sys
import urllib.parse
from pathlib import Path

from descent.site import csp

#: Where ``nox -s serve`` serves (mkdocs.yml's default ``site_url`` names the same address).
DEFAULT_PORT = 8000
DEFAULT_BIND = "127.0.0.1"


#: The page a host shows for a missing path (MkDocs writes it; its links are root-absolute).
NOT_FOUND_PAGE = "404.html"

#: File suffixes sent gzip-compressed to a client that accepts gzip: the text types static hosts
#: compress (GitHub Pages' and Netlify's lists both cover HTML, CSS, JavaScript, JSON, XML, SVG and
#: plain text). Not ``.wasm``, ``.zip``, ``.whl``, ``.bin``, ``.gguf`` or images: hosts differ on
#: WebAssembly and send the others as stored, so a measurement here must not count on it.
COMPRESSED = frozenset({".html", ".css", ".js", ".mjs", ".json", ".map", ".svg", ".xml", ".txt"})
#: zlib's default level, what nginx and Apache are usually set to.
GZIP_LEVEL = 6


def accepts_gzip(header: str | None) -> bool:
    """True when an ``Accept-Encoding`` header value accepts gzip (RFC 9110 section 12.5.3: a
    ``gzip`` or ``*`` entry whose ``q`` is not 0; an explicit ``gzip`` entry wins over ``*``)."""
    found: dict[str, float] = {}
    for item in (header or "").split(","):
        name, *params = (p.strip() for p in item.split(";"))
        q = 1.0
        for p in params:
            key, _, value = p.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if name:
            found[name.lower()] = q
    q = found.get("gzip", found.get("x-gzip", found.get("*", 0.0)))
    return q > 0


_gzip_cache: dict[tuple[str, int, int], bytes] = {}


def gzipped(path: Path) -> bytes:
    """The file's bytes, gzip-compressed (level :data:`GZIP_LEVEL`, no timestamp, so the same file
    gives the same bytes); kept while the file's size and modification time stay the same."""
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    body = _gzip_cache.get(key)
    if body is None:
        body = gzip.compress(path.read_bytes(), GZIP_LEVEL, mtime=0)
        if len(_gzip_cache) > 512:
            _gzip_cache.clear()
        _gzip_cache[key] = body
    return body


class Handler(http.server.SimpleHTTPRequestHandler):
    """``SimpleHTTPRequestHandler`` plus the site's security headers on every response, the site's
    own 404 page for a missing path or a folder without an index, and a redirect from a page's
    folder form to the page."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".mjs": "text/javascript", ".wasm": "application/wasm"}

    def send_head(self):
        parts = urllib.parse.urlsplit(self.path)
        target = Path(self.translate_path(self.path))
        if not target.exists():
            stem = parts.path.rstrip("/")
            page = stem + ".html"
            if stem and Path(self.translate_path(page)).is_file():
                self.send_response(301)
                self.send_header("Location", urllib.parse.urlunsplit(("", "", page, parts.query, "")))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
        if target.is_dir() and parts.path.endswith("/"):
            target = target / "index.html"
        elif parts.path.endswith("/"):
            return super().send_head()  # a file named as a folder: http.server's 404
        if target.is_file() and target.suffix.lower() in COMPRESSED:
            return self._send_text(target)
        return super().send_head()

    def _send_text(self, path: Path):
        """A text file: gzip-compressed when the client accepts gzip, as it is otherwise; either way
        ``Vary: Accept-Encoding`` and ``Last-Modified``, and 304 for an unchanged ``If-Modified-Since``."""
        mtime = int(path.stat().st_mtime)
        since = self.headers.get("If-Modified-Since")
        if since and "If-None-Match" not in self.headers:
            try:
                when = email.utils.parsedate_to_datetime(since).timestamp()
            except (TypeError, ValueError, IndexError, OverflowError):
                when = None
            if when is not None and mtime <= when:
                self.send_response(304)
                self.send_header("Vary", "Accept-Encoding")
                self.end_headers()
                return None
        compress = accepts_gzip(self.headers.get("Accept-Encoding"))
        body = gzipped(path) if compress else path.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        if compress:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Last-Modified", self.date_time_string(mtime))
        self.end_headers()
        return io.BytesIO(body)

    def list_directory(self, path):
        """A folder without ``index.html`` is not a page: the 404 page, never a listing of its files."""
        self.send_error(404, "File not found")
        return None

    def end_headers(self) -> None:
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        self.send_header("Content-Security-Policy", csp.header_policy(path))
        self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        page = Path(self.directory) / NOT_FOUND_PAGE
        if code != 404 or not page.is_file():
            super().send_error(code, message, explain)
            return
        body = page.read_bytes()
        self.log_error("code %d, message %s", code, message)
        self.send_response(code, message)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def port_busy(port: int, bind: str = DEFAULT_BIND) -> bool:
    """True when a program already listens on ``bind:port`` (``nox -s serve`` asks before building)."""
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((bind, port)) == 0


def make_server(directory: str, port: int = DEFAULT_PORT, bind: str = DEFAULT_BIND) -> http.server.ThreadingHTTPServer:
    """A threading server for ``directory`` (not started: call ``serve_forever``). ``port`` 0 picks a free one."""
    return http.server.ThreadingHTTPServer((bind, port), functools.partial(Handler, directory=directory))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m descent.site.serve", description=__doc__.split("\n")[0])
    parser.add_argument("--directory", "-d", default="site", help="the built site (default: site)")
    parser.add_argument("--port", "-p", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    parser.add_argument("--bind", "-b", default=DEFAULT_BIND, help=f"address to listen on (default {DEFAULT_BIND})")
    args = parser.parse_args(argv)
    try:
        server = make_server(args.directory, args.port, args.bind)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            print(f"serve: cannot listen on {args.bind}:{args.port}: the port is busy (another program, perhaps "
                  f"another serve, is using it). Stop it, or pick a free port: nox -s serve -- --port "
                  f"{args.port + 1}", file=sys.stderr)
        else:
            print(f"serve: cannot listen on {args.bind}:{args.port}: {e.strerror}", file=sys.stderr)
        return 2
    host, port = server.server_address[:2]
    # Ctrl-C stops it even when it was started from a shell that ignores SIGINT (a background job
    # inherits SIG_IGN, and Python then installs no handler of its own).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        print(f"Serving {args.directory} at http://{host}:{port}/ with the site's security headers "
              "(Ctrl-C to stop)", flush=True)
        with server:
            server.serve_forever()
    except KeyboardInterrupt:  # Ctrl-C: stop without a traceback
        print("Stopped.", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
