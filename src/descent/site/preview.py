"""Live preview while editing: ``mkdocs serve`` rebuilding only the pages that changed.

``python -m descent.site.preview [--port N]`` (``nox -s preview``) serves the docs at
``http://127.0.0.1:N/`` (8000 unless told) and shows a saved page again in 1 to 2 s: MkDocs' own
``--dirty`` rebuild, which builds the changed Markdown files alone. A whole build takes 7 to 12 s
on two cores (``nox -s bench``, 2026-12-04), and that is what a plain ``mkdocs serve`` does on every
save.

The price of the speed, for a preview only:

* the navigation and links of the pages not rebuilt can be stale (restart to refresh them);
* warnings (a link to a heading that does not exist) are printed instead of stopping the preview
  (``--no-strict``: a dirty build itself warns that navigation may be stale, which strict mode
  would turn into a failure of every rebuild). Errors, such as a bad shortcode or catalog row,
  still stop the rebuild and are printed, and the server answers no page until a save fixes them.

``nox -s build`` and ``nox -s tests`` build the whole site strictly: they are the check.
"""

from __future__ import annotations

import argparse
import os
import sys

from descent.site.serve import DEFAULT_BIND, DEFAULT_PORT, port_busy

#: The ``mkdocs`` arguments of the preview, after ``serve`` (the bench times this same command).
MKDOCS_ARGS = ("serve", "--dirty", "--no-strict")


def command(port: int, bind: str = DEFAULT_BIND) -> list[str]:
    """The command line that runs the preview on ``bind:port`` with this Python's MkDocs."""
    return [sys.executable, "-m", "mkdocs", *MKDOCS_ARGS, "--dev-addr", f"{bind}:{port}"]


def environment(port: int, bind: str = DEFAULT_BIND) -> dict[str, str]:
    """This process's environment with the site's address set to the preview's (``DESCENT_SITE_URL``,
    read by mkdocs.yml), so that the sitemap, and Material's instant navigation with it, name that origin."""
    return {**os.environ, "DESCENT_SITE_URL": f"http://{bind}:{port}/"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m descent.site.preview", description=__doc__.split("\n")[0])
    parser.add_argument("--port", "-p", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    args = parser.parse_args(argv)
    if not 1 <= args.port <= 65535:
        print(f"preview: --port must be a whole number from 1 to 65535, got {args.port}", file=sys.stderr)
        return 2
    if port_busy(args.port):  # said before the first build, which would be for nothing
        print(f"preview: port {args.port} on {DEFAULT_BIND} is busy: another program (perhaps a serve or "
              f"another preview) is listening there. Stop it, or pick a free port: nox -s preview -- --port "
              f"{args.port + 1}", file=sys.stderr)
        return 2
    # MkDocs takes this process's place, so a signal meant for the preview (Ctrl-C, or the bench's
    # terminate()) reaches the server itself: a child process would outlive a parent sent SIGTERM.
    cmd = command(args.port)
    os.execve(cmd[0], cmd, environment(args.port))
    return 0  # not reached: execve returns only by raising OSError


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
