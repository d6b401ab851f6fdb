"""Live preview while editing: ``mkdocs serve`` rebuilding only the pages that changed.

``python -m descent.site.preview [--port N]`` (``nox -s preview``) serves the docs at
``http://127.0.0.1:N/`` (8000 unless told) and shows a saved page again in 1 to 2 s: MkDocs' own
``--dirty`` rebuild, which builds the changed Markdown files alone. A whole rebuild takes 7 to 18 s
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
import importlib.util
import os
import signal
import subprocess
import sys

from descent.site.serve import DEFAULT_BIND, DEFAULT_PORT, port_busy

#: The ``mkdocs`` arguments of the preview, after ``serve`` (the bench times this same command).
MKDOCS_ARGS = ("serve", "--dirty", "--no-strict")


def command(port: int, bind: str = DEFAULT_BIND) -> list[str]:
    """The command line that runs the preview on ``bind:port`` with this Python's MkDocs."""
    return [sys.executable, "-m", "mkdocs", *MKDOCS_ARGS, "--dev-addr", f"{bind}:{port}"]


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
    if importlib.util.find_spec("mkdocs") is None:
        print("preview: MkDocs is not installed in this Python; run the preview with nox -s preview, which "
              "installs what the build needs", file=sys.stderr)
        return 2
    cmd = command(args.port)
    if os.name != "posix":  # no exec that keeps the process: MkDocs runs as a child, Ctrl-C stops both
        try:
            return subprocess.call(cmd)
        except KeyboardInterrupt:
            return 0
    # MkDocs takes this process's place (mkdocs serve sets the site's address to the preview's
    # itself), so a signal sent to the preview reaches the server: a child would outlive a parent sent
    # SIGTERM. Ctrl-C is restored first: an ignored SIGINT (a shell's background job) stays ignored
    # across exec, and Python would then not stop on it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.execv(cmd[0], cmd)
    return 0  # not reached: execv returns only by raising OSError


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
