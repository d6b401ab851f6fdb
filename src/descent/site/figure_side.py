"""The build's figure process: the figures a clean build needs, drawn beside the pages.

A clean build spent about 30 s of its own process drawing figures (16 recipes, four SVGs each:
light and dark, wide and narrow), while the machine's second core waited on the real model's work
(:mod:`descent.trace.prefetch`) or did nothing. The site hook calls :func:`start` as the build
begins. When the figure cache lacks a figure that a page shows, it starts ``python -m
descent.site.figure_side``, which draws those figures from the last page's back, while the build
draws what it reaches first. Both go through :class:`descent.site.figures.FigureBuilder` with one
:class:`descent.site.figures.Claims` folder: each figure is drawn by whichever process claims it
first, and the other waits for its files. A figure whose recipe reads the real model's results
(:func:`descent.site.figures.uses_model`) is left to the build.

If this process fails or is killed, the build draws what is missing itself, and so fails with the
error it gives without this process. :func:`stop` (after the build, and at exit) ends it and
removes the claims.

Build side: the standard library here; the figures import matplotlib.
"""

from __future__ import annotations

import atexit
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from descent.site.figures import Claims, FigureBuilder, FigureError, uses_model
from descent.trace import prefetch

__all__ = ["MAIN", "SIDE", "page_figures", "running", "start", "stop"]

#: The two processes' names in the claims.
MAIN, SIDE = "main", "side"
#: A figure shortcode in a page's Markdown (descent.site.shortcodes checks the whole syntax).
_FIGURE = re.compile(r"<!--\s*descent:figure\s+([a-z0-9][a-z0-9-]*)\s*-->")


class _Side:
    proc: subprocess.Popen | None = None
    folder: Path | None = None
    at_exit: bool = False


_side = _Side()


def page_figures(docs_dir: Path, known: list[str]) -> list[str]:
    """The figures of ``known`` that a page of ``docs_dir`` shows, in the order of the pages' paths
    (the order MkDocs builds them in) and of their place on the page; each once."""
    out: dict[str, None] = {}
    for page in sorted(Path(docs_dir).rglob("*.md")):
        for name in _FIGURE.findall(page.read_text(encoding="utf-8")):
            if name in known:
                out[name] = None
    return list(out)


def running() -> bool:
    """Whether the figure process of this build is still drawing."""
    return _side.proc is not None and _side.proc.poll() is None


def _to_draw(builder: FigureBuilder, fig_id: str) -> bool:
    """Whether the figure process should draw ``fig_id``: its recipe reads no model result and the
    cache lacks it. A recipe that cannot be read or loaded is left to the page that shows it, whose
    shortcode says what is wrong (any error: a recipe is arbitrary code)."""
    try:
        return not uses_model((builder.figures_dir / f"{fig_id}.py").read_text(encoding="utf-8")) \
            and not builder.cached(fig_id)
    except Exception:  # noqa: BLE001 (the page reports it)
        return False


def start(builder: FigureBuilder, docs_dir: Path) -> bool:
    """Start the figure process when the cache lacks a figure the pages show that it may draw, and
    share ``builder``'s work with it (True if started). Starts nothing without a cache folder; a
    recipe that cannot be loaded is left to the page that shows it, which says what is wrong."""
    stop()
    builder.claims = None
    if builder.cache_dir is None:
        return False
    todo = [f for f in page_figures(docs_dir, builder.ids()) if _to_draw(builder, f)]
    if not todo:
        return False
    folder = Path(tempfile.mkdtemp(prefix="descent-figures-"))
    command = [sys.executable, "-m", "descent.site.figure_side", str(folder), str(os.getpid()),
               str(builder.figures_dir), str(builder.cache_dir), *reversed(todo)]
    with open(folder / "side.log", "wb") as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=prefetch.child_env())
    _side.proc, _side.folder = proc, folder
    builder.claims = Claims(folder, MAIN, lambda: proc.poll() is None)
    if not _side.at_exit:
        atexit.register(stop)
        _side.at_exit = True
    return True


def stop() -> str:
    """End the figure process (its files are written whole or not at all) and remove the claims.

    Returns "" when it was not started or ended well, else a line saying how it ended and the last
    line of its output (the build drew its share itself)."""
    proc, folder = _side.proc, _side.folder
    _side.proc = _side.folder = None
    if proc is None:
        return ""
    return prefetch.end_helper(proc, folder, "the build's figure process (descent.site.figure_side)",
                               "the build drew its figures itself")


def main(argv: list[str] | None = None) -> int:
    """``python -m descent.site.figure_side CLAIMS BUILD_PID FIGURES CACHE ID...``: draw each figure
    ``ID`` into the cache ``CACHE`` unless the build ``BUILD_PID`` has claimed it, while the build
    lives. Exit 1 when a recipe failed (the build meets the same error)."""
    folder, parent, figures_dir, cache_dir, *ids = argv if argv is not None else sys.argv[1:]
    # Terminated by stop(): unwind, so that a file being written leaves no temporary file behind.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    builder = FigureBuilder(Path(figures_dir), Path(cache_dir),
                            Claims(Path(folder), SIDE, lambda: os.getppid() == int(parent)))
    failed = 0
    for fig_id in ids:
        if os.getppid() != int(parent) or not Path(folder).is_dir():
            break
        try:
            builder.svgs(fig_id, wait=False)
        except FigureError as e:  # the build meets it again where the page shows the figure
            print(e, file=sys.stderr)
            failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main())
