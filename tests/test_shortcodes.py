"""Shortcodes: parsing, resolving, and the errors a contributor sees."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from sitebuild import build_site

from descent import catalog
from descent import params as P
from descent.site import hooks, shortcodes
from descent.site.shortcodes import Arg, ShortcodeError, find_shortcodes, resolve
from descent.site.values import text as values

ROOT = Path(__file__).resolve().parent.parent


def test_value_resolves_to_a_number_with_unit():
    # H100 SXM memory bandwidth 3.35e12 bytes/s (catalog, NVIDIA datasheet) -> "3.35 TB/s"
    out = resolve("bw <!-- descent:value memory_bandwidth accelerator=h100-sxm --> end", "x.md")
    assert out == "bw 3.35 TB/s end"


def test_value_with_unit_argument():
    # 80 GiB = 85,899,345,920 bytes; in GB to 3 significant figures: 85.9 GB (worked out by hand)
    out = resolve("<!-- descent:value capacity_bytes accelerator=h100-sxm unit=GB -->", "x.md")
    assert out == "85.9 GB"
    out = resolve("<!-- descent:value capacity_bytes accelerator=h100-sxm unit=GiB -->", "x.md")
    assert out == "80 GiB"


def test_kv_bytes_per_token_value():
    # Llama 3.1 70B: 2 * 80 layers * 8 KV heads * 128 * 2 bytes = 327,680 bytes = 320 KiB
    assert resolve("<!-- descent:value kv_bytes_per_token model=llama-3.1-70b unit=KiB -->") == "320 KiB"
    # quoted values and multi-line comments parse too
    assert resolve('<!-- descent:value kv_bytes_per_token\n   model="llama-3.1-70b" unit=B sig=6 -->') == "327,680 bytes"


def test_unknown_name_names_page_shortcode_and_allowed():
    with pytest.raises(ShortcodeError) as e:
        resolve("Intro.\n\nText <!-- descent:value kv_bytes_per_tokens model=llama-3.1-70b -->", "part-3.md")
    msg = str(e.value)
    assert msg.startswith("part-3.md:3: shortcode '<!-- descent:value kv_bytes_per_tokens")  # page and line
    assert "unknown value 'kv_bytes_per_tokens'" in msg
    assert "allowed:" in msg and "kv_bytes_per_token," in msg


def test_unknown_argument_lists_the_allowed_ones():
    with pytest.raises(ShortcodeError) as e:
        resolve("<!-- descent:value kv_bytes_per_token model=llama-3.1-70b units=KiB -->", "p.md")
    msg = str(e.value)
    assert "unknown argument 'units'" in msg
    assert "model, kv, unit, sig" in msg


def test_bad_value_says_what_is_allowed():
    with pytest.raises(ShortcodeError) as e:
        resolve("<!-- descent:value kv_bytes_per_token model=llama-9 -->", "p.md")
    msg = str(e.value)
    assert "model='llama-9' is not allowed" in msg
    assert "llama-3.1-70b" in msg  # the list of catalog ids
    with pytest.raises(ShortcodeError, match=r"sig='0' is not allowed; sig must be a whole number from 1 to 10"):
        resolve("<!-- descent:value kv_bytes_per_token model=llama-3.1-70b sig=0 -->", "p.md")
    with pytest.raises(ShortcodeError, match=r"sig='three' is not allowed; sig must be a whole number"):
        resolve("<!-- descent:value kv_bytes_per_token model=llama-3.1-70b sig=three -->", "p.md")


def test_missing_required_argument():
    with pytest.raises(ShortcodeError, match=r"missing argument 'field'; it must be one of: id, name"):
        resolve("<!-- descent:value model_field -->", "p.md")


def test_an_argument_left_out_takes_its_declared_default():
    # descent.params.MODEL's default is the running example, Llama 3.1 70B: 80 layers x 8 KV heads x
    # 128 x 2 (K and V) x 2 bytes (BF16, descent.params.KV's default) = 327,680 bytes = 320 KiB.
    assert resolve("<!-- descent:value kv_bytes_per_token unit=KiB -->", "p.md") == "320 KiB"


def test_malformed_shortcodes():
    with pytest.raises(ShortcodeError, match="unknown kind 'number'; allowed: value, table, figure, formula, widget"):
        resolve("<!-- descent:number x -->", "p.md")
    with pytest.raises(ShortcodeError, match="no name"):
        resolve("<!-- descent:value -->", "p.md")
    with pytest.raises(ShortcodeError, match="argument 'model' is given twice"):
        resolve("<!-- descent:value params_total model=a model=b -->", "p.md")
    with pytest.raises(ShortcodeError, match="argument 'oops' is not key=value"):
        resolve("<!-- descent:value params_total oops -->", "p.md")
    with pytest.raises(ShortcodeError, match="cannot split its arguments"):
        resolve('<!-- descent:value params_total model="unclosed -->', "p.md")


def test_shortcodes_in_code_are_left_alone():
    md = (
        "Write `<!-- descent:value nope -->` inline, or:\n\n"
        "```markdown\n<!-- descent:value nope x=1 -->\n```\n\n"
        "~~~\n<!-- descent:table nope -->\n~~~\n"
    )
    assert resolve(md, "p.md") == md
    assert find_shortcodes(md) == []


def test_plain_html_comments_are_not_shortcodes():
    for md in ("<!-- a normal comment --> text", "<!-- TODO: table of chips later -->", "<!-- note: figure 2 -->",
               "The descent: value by value."):
        assert resolve(md) == md


# Issue 15: a shortcode with a mistyped prefix passed silently and its number was missing from the
# page (a comment is invisible). Every near miss now fails, naming the page's line.
@pytest.mark.parametrize(
    ("md", "line", "quoted"),
    [
        ("a\n\nb <!-- descnet:value params_total -->", 3, "<!-- descnet:value"),
        ("x\n<!-- Descent:table models -->", 2, "<!-- Descent:table"),
        ("<!-- desc:figure roofline -->", 1, "<!-- desc:figure"),
        ("<!-- foo-bar:formula x -->", 1, "<!-- foo-bar:formula"),
        ("<!-- descent value params_total -->", 1, "<!-- descent"),  # the colon is missing
        ("<!-- descent : value params_total -->", 1, "<!-- descent"),
        ("\n\n\n<!-- descent:value kv_bytes_per_token\nmore text", 4, "<!-- descent:value"),  # never closed
        ("ok <!-- descent:value count what=models -->\ndescent:widget kv_demo -->", 2, "descent:widget"),  # no <!--
        ("<!- descent:value params_total -->", 1, "<!- descent"),
    ],
)
def test_near_misses_fail_naming_the_line(md, line, quoted):
    with pytest.raises(ShortcodeError) as e:
        resolve(md, "part-2.md")
    msg = str(e.value)
    assert msg.startswith(f"part-2.md:{line}: "), msg
    assert repr(quoted) in msg or quoted in msg, msg
    assert "write <!-- descent:KIND NAME key=value -->" in msg


# Issue 24: these built with exit 0 and the page read "The KV cache: .": an underscore for the colon,
# two letters swapped in each word, a cut prefix with a plural kind. Any comment whose first word is
# within a few edits of descent:KIND fails, naming file and line.
@pytest.mark.parametrize(
    ("md", "line", "quoted"),
    [
        ("The KV cache: <!-- descent_value kv_bytes_per_token -->.", 1, "<!-- descent_value"),
        ("a\n<!-- desecnt:vaule kv_bytes_per_token -->", 2, "<!-- desecnt:vaule"),
        ("a\n\n<!-- desc:figures roofline -->", 3, "<!-- desc:figures"),
        ("<!--descent-tabel models-->", 1, "<!--descent-tabel"),
        ("<!-- descentwidget kv_demo -->", 1, "<!-- descentwidget"),
        ("<!-- DESCENT.Formula x -->", 1, "<!-- DESCENT.Formula"),
        ("<!-- decsent:valeu x -->", 1, "<!-- decsent:valeu"),
    ],
)
def test_comments_within_a_few_edits_of_a_shortcode_fail(md, line, quoted):
    with pytest.raises(ShortcodeError) as e:
        resolve(md, "part-2.md")
    msg = str(e.value)
    assert msg.startswith(f"part-2.md:{line}: {quoted!r} looks like a shortcode but is not one"), msg


@pytest.mark.parametrize("md", ["<!-- description: the chips -->", "<!-- TODO: figures later -->", "<!-- md:option x -->",
                                "<!-- desc: values -->", "<!-- deprecated -->",
                                "<!-- tables: 3 -->"])
def test_comments_far_from_a_shortcode_pass(md):
    assert resolve(md, "p.md") == md


def test_an_unclosed_shortcode_names_its_line_and_swallows_nothing():
    # Issue 24: the shortcode ran to the NEXT shortcode's -->, and the error quoted 2.2 KB of the
    # page and said "argument '|' is not key=value".
    table = "".join(f"| row {i} | {i} |\n" for i in range(100))
    md = f"# T\n\nThe KV cache: <!-- descent:value kv_bytes_per_token\n\n{table}\nThe rest <!-- descent:value params_total -->.\n"
    with pytest.raises(ShortcodeError) as e:
        resolve(md, "part-3.md")
    msg = str(e.value)
    assert msg.startswith("part-3.md:3: unclosed shortcode opened at line 3: '<!-- descent:value kv_bytes_per_token' "
                          "has no --> before the next comment or the page's end"), msg
    assert "row" not in msg and "not key=value" not in msg and len(msg) < 400, msg
    with pytest.raises(ShortcodeError, match="^p.md:5: unclosed shortcode opened at line 5: "):
        resolve("a\n\n\n\nb <!-- descent:table models", "p.md")


def test_near_misses_inside_code_are_left_alone():
    md = "Write `<!-- descnet:value x -->` to see the error, or:\n\n```\n<!-- Descent:table x -->\n```\n"
    assert resolve(md, "p.md") == md


def test_line_numbers_count_from_the_file_not_the_front_matter():
    md = "\n# T\n\n<!-- descent:value nope -->\n"
    with pytest.raises(ShortcodeError, match=r"^p.md:8: shortcode"):
        resolve(md, "p.md", first_line=5)  # four lines of front matter cut by MkDocs


def test_table_shortcode_gives_a_markdown_table():
    out = resolve("<!-- descent:table accelerators -->", "reference/accelerators.md")
    lines = [line for line in out.strip().splitlines()]
    assert lines[0].startswith("| accelerator |")
    assert len(lines) == 2 + len(catalog.accelerators())  # header, rule, one row per chip
    assert "(#h100-sxm)" in out  # links to its own section on the reference page
    out = resolve("<!-- descent:table accelerators -->", "part-4-hardware.md")
    assert "(reference/accelerators.md#h100-sxm)" in out  # from another page: to the reference page


def test_handlers_for_other_kinds_and_their_errors():
    seen = {}

    def fig(name, args):
        seen[name] = args
        if name != "ok":
            raise ValueError(f"unknown figure {name!r}; allowed: ok")
        return "<figure/>"

    assert resolve("<!-- descent:figure ok -->", "p.md", {"figure": fig}) == "<figure/>"
    with pytest.raises(ShortcodeError, match=r"p.md:1: shortcode .*: unknown figure 'bad'; allowed: ok"):
        resolve("<!-- descent:figure bad -->", "p.md", {"figure": fig})
    with pytest.raises(ShortcodeError, match="widget shortcodes are not available here"):
        resolve("<!-- descent:widget kv_demo -->", "p.md")


def test_formula_shortcode_markdown():
    out = hooks.formula_markdown("kv_cache_bytes", {})
    assert "$$\nM_{\\text{KV}} = 2 L K d_{\\text{head}} T B b\n$$" in out
    assert "Source:" in out
    assert "Source:" not in hooks.formula_markdown("kv_cache_bytes", {"legend": "no"})
    with pytest.raises(ValueError, match="unknown formula 'nope'; allowed: kv_cache_bytes"):
        hooks.formula_markdown("nope", {})
    with pytest.raises(ValueError, match="legend='maybe' is not allowed"):
        hooks.formula_markdown("kv_cache_bytes", {"legend": "maybe"})


def test_registering_a_duplicate_or_bad_name_fails():
    with pytest.raises(ValueError, match="shortcode name must be"):
        shortcodes.value("has space")
    entries = shortcodes.registry("value")
    with pytest.raises(ValueError, match="registered twice"):
        shortcodes.value("count")(lambda: "x")
    assert "count" in entries


def test_arg_parsing():
    a = Arg(P.CONTEXT)
    assert a.parse("8192") == 8192 and a.parse("128k") == 128_000
    assert a.allowed() == "a whole number from 1 to 20,000,000 tokens"
    with pytest.raises(ValueError, match="context='0' is not allowed; context must be a whole number from 1"):
        a.parse("0")
    with pytest.raises(ValueError, match="not allowed"):
        Arg(P.TEMPERATURE).parse("nan")
    with pytest.raises(ValueError, match="takes a descent.params.Param"):
        Arg("context")


def test_formatting_helpers():
    # 3 significant figures, thousands separated: worked out by hand
    assert values.fmt_num(291_000.4) == "291,000"
    assert values.fmt_num(46.43) == "46.4"
    assert values.fmt_num(0.2313) == "0.231"
    assert values.fmt_bytes(327_680, "KiB") == "320 KiB"
    assert values.fmt_bytes(141_000_000_000) == "141 GB"
    assert values.fmt_bytes(512) == "512 bytes"
    with pytest.raises(ValueError, match="unit must be one of auto, auto-binary, B, KB"):
        values.fmt_bytes(1, "kb")
    with pytest.raises(ValueError, match="must be a finite number"):
        values.fmt_num(float("nan"))


def _mini_project(tmp_path: Path, page_text: str) -> Path:
    """A one-page MkDocs project using the real hooks, node_modules and figures."""
    (tmp_path / "docs").mkdir(parents=True)
    (tmp_path / "docs" / "index.md").write_text(page_text)
    for name in ("node_modules", "figures"):
        os.symlink(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "hooks", tmp_path / "hooks")
    cfg = tmp_path / "mkdocs.yml"
    cfg.write_text(
        "site_name: t\ntheme:\n  name: material\n  font: false\n"
        f"extra:\n  polyfills: [{hooks.SHIM_PATH}]\n"
        "plugins: [search]\nhooks: [hooks/descent_hooks.py]\n"
        "markdown_extensions:\n  - pymdownx.arithmatex:\n      generic: true\n"
    )
    return cfg


@pytest.mark.site
def test_a_bad_shortcode_fails_mkdocs_build(tmp_path):
    cfg = _mini_project(tmp_path, "# T\n\n<!-- descent:value kv_bytes_per_token model=gpt-5 -->\n")
    proc = build_site(tmp_path / "out", cfg)
    assert proc.returncode != 0
    log = proc.stdout + proc.stderr
    assert "index.md:3: shortcode" in log and "model='gpt-5' is not allowed" in log


def test_a_mistyped_prefix_fails_mkdocs_build_naming_the_line(tmp_path):
    # A YAML front matter block (3 lines) is cut by MkDocs before the hook sees the page: the line
    # is still the file's own (line 6).
    cfg = _mini_project(tmp_path, "---\ntitle: T\n---\n# T\n\nIt holds <!-- descnet:value kv_bytes_per_token --> per token.\n")
    proc = build_site(tmp_path / "out", cfg)
    assert proc.returncode != 0
    log = proc.stdout + proc.stderr
    assert "index.md:6: '<!-- descnet:value' looks like a shortcode but is not one" in log, log[-2000:]


def test_a_mistyped_kind_and_an_unclosed_shortcode_fail_mkdocs_build(tmp_path):
    # Issue 24: `<!-- desecnt:vaule ... -->` built with exit 0 (the number silently missing).
    cfg = _mini_project(tmp_path, "# T\n\nIt holds <!-- desecnt:vaule kv_bytes_per_token --> per token.\n")
    proc = build_site(tmp_path / "out", cfg)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "index.md:3: '<!-- desecnt:vaule' looks like a shortcode" in log, log[-2000:]
    (tmp_path / "docs" / "index.md").write_text("# T\n\nA <!-- descent:value kv_bytes_per_token\n\n| a | b |\n"
                                                "\nB <!-- descent:value params_total -->\n")
    proc = build_site(tmp_path / "out", cfg)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "index.md:3: unclosed shortcode opened at line 3" in log, log[-2000:]
    assert "not key=value" not in log


def test_a_link_to_a_missing_heading_fails_mkdocs_build(tmp_path):
    # Issue 24: `part-4-hardware.md#no-such-heading` was logged at INFO, which --strict lets pass. The
    # tiny project takes the real mkdocs.yml's validation block, so this tests the site's setting.
    real = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    block = re.search(r"^validation:\n(?:[ #].*\n)+", real, re.MULTILINE)
    assert block, "mkdocs.yml has no validation: block"
    cfg = _mini_project(tmp_path, "# T\n\nSee [the roofline](part-4-hardware.md#no-such-heading) and "
                                  "[ok](part-4-hardware.md#the-roofline).\n")
    (tmp_path / "docs" / "part-4-hardware.md").write_text("# Hardware\n\n## The roofline\n\nText.\n")
    cfg.write_text(cfg.read_text() + block.group(0))
    proc = build_site(tmp_path / "out", cfg)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, log[-2000:]
    assert "WARNING" in log and "no-such-heading" in log and "index.md" in log, log[-2000:]
    assert "#the-roofline" not in log, log[-2000:]  # a heading that exists is fine


def test_a_bad_catalog_row_fails_the_build_in_one_line(tmp_path, monkeypatch):
    # Issue 15: a catalog error ended a 40-line traceback (the widgets read the catalog as they are
    # imported, while MkDocs loads the hooks). Now: one line naming file, row, field and what is allowed.
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "descent", src / "descent", ignore=shutil.ignore_patterns("__pycache__"))
    toml = src / "descent" / "catalog" / "models.toml"
    text = toml.read_text(encoding="utf-8")
    assert text.count("\nnum_layers = 80\n") == 1  # llama-3.1-70b
    toml.write_text(text.replace("\nnum_layers = 80\n", "\nnum_layers = 1000000000000\n"), encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(src))
    cfg = _mini_project(tmp_path / "project", "# T\n")
    proc = build_site(tmp_path / "out", cfg)
    assert proc.returncode != 0
    log = (proc.stdout + proc.stderr).strip()
    assert "Traceback" not in log, log[-3000:]
    message = (
        "the catalog: descent/catalog/models.toml: [llama-3.1-70b]: field 'num_layers' = "
        "1,000,000,000,000 is outside its plausible range 1 to 1,000 layers (descent.catalog.PLAUSIBLE_MODEL); "
        "fix the row, or widen the range there with the source of a real value beyond it"
    )
    # MkDocs prints a hook's PluginError as one "ERROR - ..." line (from on_config) or "Error: ..." (while
    # it loads the hooks), then at most its own "Aborted with a BuildError!": the message is one line.
    lines = log.splitlines()
    ours = [ln for ln in lines if "the catalog:" in ln]
    assert len(ours) == 1 and ours[0].split(None, 1)[-1].lstrip("- ").endswith(message), log[-3000:]
    assert ours[0].startswith(("ERROR", "Error: ")), log[-3000:]
    assert len(lines) <= 3, log[-3000:]


@pytest.mark.site
def test_bad_latex_fails_mkdocs_build(tmp_path):
    cfg = _mini_project(tmp_path, "# T\n\nBroken: $\\frac{1}{$\n")
    proc = build_site(tmp_path / "out", cfg)
    assert proc.returncode != 0
    assert "index.md: cannot render" in proc.stdout + proc.stderr


def test_indented_multiline_replacement_keeps_the_indentation():
    # A table inside an admonition: every line of the replacement gets the shortcode's indentation
    # (4 spaces here), so Markdown keeps it inside the block; an inline value is left alone.
    from descent.site.shortcodes import resolve

    md = '??? note "x"\n    text\n\n    <!-- descent:table kv_growth -->\n\n    after\n'
    out = resolve(md)
    table_lines = [ln for ln in out.splitlines() if "|" in ln]
    assert table_lines and all(ln.startswith("    | ") for ln in table_lines)
    assert resolve("a <!-- descent:value count what=models --> b").startswith("a 1")
