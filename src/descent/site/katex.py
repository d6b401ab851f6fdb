"""LaTeX -> HTML + MathML at build time with KaTeX, so pages need no script to show math.

One long-lived ``node`` child process (the script in ``_SERVER_JS``) renders every expression of a build,
one JSON line in, one JSON line out; results are cached by (expression, display mode) for the
life of the Python process, so ``mkdocs serve`` rebuilds render only new expressions.

KaTeX comes from the project's ``node_modules/katex`` (pinned in package-lock.json); only its
``katex.min.css``, ``fonts/`` and ``katex.min.js`` (for the widget worker's derivations) are copied into
the site (see :func:`asset_files`).
"""

from __future__ import annotations

import atexit
import json
import re
import shutil
import subprocess
from pathlib import Path

__all__ = ["KatexError", "Renderer", "asset_files", "render_math_html"]

#: The node side: one JSON request per stdin line, one JSON reply per stdout line.
#: Run as ``node -e _SERVER_JS <node_modules/katex>`` (kept inline so the package needs no data file).
_SERVER_JS = r"""
// Build-time KaTeX renderer for the descent site hook (descent/site/katex.py).
// Reads one JSON object per line on stdin: {"tex": "...", "display": true|false}
// Writes one JSON object per line on stdout: {"html": "..."} or {"error": "..."}.
"use strict";
const katex = require(process.argv[1]);
const readline = require("readline");
const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on("line", (line) => {
  let reply;
  try {
    const req = JSON.parse(line);
    const html = katex.renderToString(req.tex, {
      displayMode: !!req.display,
      output: "htmlAndMathml",
      throwOnError: true,
      strict: "error",
      trust: false,
    });
    reply = { html };
  } catch (e) {
    reply = { error: String(e && e.message ? e.message : e) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
"""


class KatexError(ValueError):
    """KaTeX could not render an expression; the message quotes it and KaTeX's reason."""


class Renderer:
    """A KaTeX child process. ``render(tex, display)`` -> HTML string (HTML + MathML output).

    Raises:
        KatexError: node or KaTeX is missing, or the expression is not valid LaTeX for KaTeX.
    """

    def __init__(self, node_modules: Path):
        self.katex_dir = Path(node_modules) / "katex"
        self._proc: subprocess.Popen | None = None
        self._cache: dict[tuple[str, bool], str] = {}

    def _start(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self.close()  # a process that exited still holds its pipes
            node = shutil.which("node")
            if node is None:
                raise KatexError("math needs Node.js (node) on PATH to run KaTeX at build time")
            if not (self.katex_dir / "package.json").exists():
                raise KatexError(f"KaTeX not found at {self.katex_dir}; run `npm ci` in the project root")
            self._proc = subprocess.Popen(
                [node, "-e", _SERVER_JS, str(self.katex_dir)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8", bufsize=1,
            )
            atexit.register(self.close)
        return self._proc

    def render(self, tex: str, display: bool) -> str:
        key = (tex, display)
        if key not in self._cache:
            proc = self._start()
            assert proc.stdin and proc.stdout
            proc.stdin.write(json.dumps({"tex": tex, "display": display}) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:
                raise KatexError("the KaTeX process exited unexpectedly")
            reply = json.loads(line)
            if "error" in reply:
                raise KatexError(f"cannot render {tex!r}: {reply['error']}")
            self._cache[key] = reply["html"]
        return self._cache[key]

    def close(self) -> None:
        """End the child process and close both of its pipes (an open pipe is a ResourceWarning)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin:
            proc.stdin.close()  # the server ends when its input does
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


# pymdownx.arithmatex (generic mode) output: inline <span class="arithmatex">\(...\)</span>,
# display <div class="arithmatex">\[...\]</div>. Content is HTML-escaped (&amp; &lt; &gt;).
_ARITHMATEX = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">\s*(?:\\\((?P<inline>.*?)\\\)|\\\[(?P<display>.*?)\\\])\s*</(?P=tag)>',
    re.DOTALL,
)


def _unescape(s: str) -> str:
    return s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")


def render_math_html(html: str, renderer: Renderer, page: str = "<page>") -> str:
    """Replace every arithmatex span/div in ``html`` with KaTeX's rendering.

    Raises:
        KatexError: naming the page and the expression that failed.
    """

    def sub(m: re.Match) -> str:
        display = m.group("display") is not None
        tex = _unescape(m.group("display") if display else m.group("inline")).strip()
        try:
            out = renderer.render(tex, display)
        except KatexError as e:
            raise KatexError(f"{page}: {e}") from None
        if display:
            return f'<div class="descent-math descent-math-display">{out}</div>'
        return out

    return _ARITHMATEX.sub(sub, html)


def asset_files(node_modules: Path) -> dict[str, Path]:
    """``{site path: source file}`` for KaTeX's CSS and fonts (``assets/katex/...``), and its script,
    which only the widget worker loads, when a reader first opens a calculator's number (issue 26)."""
    dist = Path(node_modules) / "katex" / "dist"
    if not (dist / "katex.min.css").exists():
        raise KatexError(f"KaTeX not found at {dist}; run `npm ci` in the project root")
    out = {"assets/katex/katex.min.css": dist / "katex.min.css", "assets/katex/katex.min.js": dist / "katex.min.js"}
    for font in sorted((dist / "fonts").iterdir()):
        out[f"assets/katex/fonts/{font.name}"] = font
    return out
