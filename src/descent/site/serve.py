"""Serve a built site on 127.0.0.1 with the headers a host should send (``nox -s serve``, browser tests).

    python -m descent.site.serve [--directory site] [--port 8000] [--bind 127.0.0.1]

The standard library's ``http.server`` with one addition: every response carries the
``Content-Security-Policy`` of :func:`descent.site.csp.header_policy` for its path (the widget
worker's script gets the worker's own policy, which a page's ``<meta>`` cannot give it) and
``X-Content-Type-Options: nosniff``. It is the same policy the built site's ``_headers`` file asks
of hosts that read one (:func:`descent.site.csp.headers_file`). A development server, not a
production one: it binds to the loopback address unless told otherwise.

Build side (standard library only, but not shipped to the browser).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import sys
import urllib.parse

from descent.site import csp

#: Where ``nox -s serve`` serves (mkdocs.yml's default ``site_url`` names the same address).
DEFAULT_PORT = 8000
DEFAULT_BIND = "127.0.0.1"


class Handler(http.server.SimpleHTTPRequestHandler):
    """``SimpleHTTPRequestHandler`` plus the site's security headers on every response."""

    def end_headers(self) -> None:
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        self.send_header("Content-Security-Policy", csp.header_policy(path))
        self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()


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
        print(f"serve: cannot listen on {args.bind}:{args.port}: {e.strerror}", file=sys.stderr)
        return 2
    host, port = server.server_address[:2]
    print(f"Serving {args.directory} at http://{host}:{port}/ with the site's security headers (Ctrl-C to stop)",
          flush=True)
    with server:
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
