"""Every number opens its own derivation (issue 26, descent.site.explain).

Unit tests: a formula is shown with a quantity's inputs substituted, and its value is the
quantity's own (``descent.quantities``, computed here); the substituted LaTeX reads the inputs'
catalog values (config.json shapes of ``descent.catalog``); a link, a tag's attribute and math get
the right wrapper; the ``descent value`` command an entry prints prints the page's own text.

Site tests (the built site): every page's value shortcodes (found in its source by
``descent.site.shortcodes.find_shortcodes``) have exactly the page's entries; every number links to an
entry that exists; every shown formula's value equals the quantity at the entry's arguments; each
page ends with the "How each number on this page is computed" section, entries collapsed; the
command printed in a few entries, run here, prints the number the page prints.
"""

from __future__ import annotations

import html as html_lib
import math
import re
import shlex
from pathlib import Path

import pytest

from descent import catalog, cli, numerics
from descent import quantities as Q
from descent.site import explain, shortcodes

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _inputs(name: str, args: dict[str, str]) -> dict:
    q = Q.get(name)
    fmt = {p.name for p in Q.FORMAT_PARAMS[q.kind]}
    return q.bind({k: v for k, v in args.items() if k not in fmt}, parse=True)


# -- formulas with the inputs substituted ---------------------------------------------------------


@pytest.mark.parametrize("name, args", [
    ("kv_cache_bytes", {"model": "llama-3.1-70b", "context": "128k", "batch": "4"}),
    ("kv_bytes_per_token", {"model": "llama-3.1-8b", "kv": "fp8"}),
    ("ridge_point", {}),
    ("decode_tokens_per_s", {}),
    ("weights_bytes", {"model": "llama-3.1-405b", "weights": "int8"}),  # FP8 keeps some groups in BF16: no one-line formula
    ("expected_tokens", {"acceptance": "0.8", "draft_length": "4"}),
    ("speedup", {"acceptance": "0.7", "draft_length": "5", "draft_cost": "0.1"}),
    ("break_even_utilization", {}),
])
def test_a_shown_formula_gives_the_quantity(name, args):
    inputs = _inputs(name, args)
    d = explain.derivation(name, inputs)
    assert d is not None, f"{name}: no formula shown at {args}"
    want = Q.get(name)(**inputs)  # the number the page prints, from the registry
    assert math.isclose(d.value, want, rel_tol=1e-9), (d.value, want)
    # The substituted form ends with that value, as printed in the LaTeX.
    last = d.substituted.rsplit("=", 1)[1].split(r"\ ")[0].replace("{,}", "").strip()
    if r"\times" in last:
        mant, exp = last.split(r"\times 10^")
        last = f"{mant.strip()}e{exp.strip('{} ')}"
    assert math.isclose(float(last), want, rel_tol=1e-5), (last, want)


def test_the_kv_formula_substitutes_the_config_shapes():
    m = catalog.model("llama-3.1-70b")  # 80 layers, 8 KV heads, head_dim 128 in its config.json
    d = explain.derivation("kv_cache_bytes", _inputs("kv_cache_bytes", {"model": "llama-3.1-70b", "context": "8192"}))
    b = numerics.kv_precision("bf16").bytes_per_weight
    expected = rf"2 \cdot {m.num_layers} \cdot {m.num_kv_heads} \cdot {m.head_dim} \cdot 8{{,}}192 \cdot 1 \cdot {b:g}"
    assert expected in d.substituted, d.substituted


def test_no_formula_where_it_would_not_give_the_number():
    # Weights "as released" mix precisions: weight_bytes' one-precision formula is not that number.
    assert explain.derivation("weights_bytes", _inputs("weights_bytes", {"model": "gpt-oss-120b",
                                                                          "weights": "released"})) is None
    # DeepSeek-V3 caches an MLA latent: the GQA formula does not apply, none is shown.
    assert explain.derivation("kv_cache_bytes", _inputs("kv_cache_bytes", {"model": "deepseek-v3"})) is None


# -- marking and linking ---------------------------------------------------------------------------


def _page(src: str, page: str = "part-4-hardware.md") -> tuple[str, explain.Collector]:
    import markdown

    c = explain.collector(page)
    md = shortcodes.resolve(src, page, {"value": c.handler(shortcodes.value_handler())}) + c.section()
    html = markdown.markdown(md, extensions=["attr_list", "md_in_html", "toc", "pymdownx.details",
                                             "pymdownx.arithmatex", "tables"],
                             extension_configs={"pymdownx.arithmatex": {"generic": True}})
    return explain.link_values(html, c), c


def test_numbers_link_to_their_entries_and_marks_never_leak():
    html, c = _page(
        "R <!-- descent:value ridge_point --> and again <!-- descent:value ridge_point -->; "
        "[in a link <!-- descent:value params_total -->](x.md); $x = <!-- descent:value params_total model=llama-3.1-8b -->$; "
        "![alt <!-- descent:value ridge_point -->](i.png)\n")
    assert not re.search(f"[{explain.OPEN}{explain.MID}{explain.CLOSE}\ue100-\ue1ff]", html)
    assert len(c.numbers) == 3  # ridge_point once, params_total at two argument sets
    links = re.findall(r'<a class="descent-q" href="#([^"]+)" data-quantity="([^"]+)"', html)
    assert links == [("how-ridge_point", "ridge_point")] * 2
    assert '<span class="descent-q" data-quantity="params_total">' in html  # inside a link: no nested link
    assert r"\(x = 8.03 billion\)" in html  # inside math: the text alone
    assert 'alt="alt 412 FLOP/byte"' in html  # inside an attribute: the text alone
    for n in c.numbers:
        assert f'id="{n.anchor}"' in html
    assert f'<h2 id="how-each-number">{explain.SECTION_TITLE}</h2>' in html


@pytest.mark.parametrize("src", [
    "<!-- descent:value kv_cache_bytes model=llama-3.1-70b unit=KiB -->",
    "<!-- descent:value decode_tokens_per_s model=llama-3.1-8b accelerator=b200 context=32k -->",
    "<!-- descent:value params_total model=qwen3-235b-a22b unit=exact -->",
])
def test_the_printed_command_prints_the_same_number(src, capsys):
    html, c = _page(src + "\n")
    n = c.numbers[0]
    command = html_lib.unescape(re.search(r"<code>(descent value [^<]*)</code>", html).group(1))
    assert cli.main(shlex.split(command)[1:]) == 0
    assert capsys.readouterr().out.strip() == n.text


# -- the built site --------------------------------------------------------------------------------

_DETAILS = re.compile(r"<details class=\"descent-how[^\"]*\"([^>]*)>")
_ATTR = re.compile(r'([a-z-]+)="([^"]*)"')


def _pages() -> list[str]:
    out = []
    for src in sorted(DOCS.rglob("*.md")):
        rel = src.relative_to(DOCS)
        if rel.parts[0] in ("overrides", "assets", "includes", "decisions"):
            continue
        out.append(rel.as_posix())
    return out


def _built(site_dir: Path, rel: str) -> str:
    name = "index.html" if rel.endswith("index.md") else Path(rel).with_suffix(".html").name
    return (site_dir / Path(rel).parent / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("rel", _pages())
def test_every_value_on_the_page_has_its_entry(rel, site_dir):
    source = (DOCS / rel).read_text(encoding="utf-8")
    wanted = {(sc.name, explain._args_text(sc.args)) for sc in shortcodes.find_shortcodes(source, rel)
              if sc.kind == "value"}
    html = _built(site_dir, rel)
    entries = [dict(_ATTR.findall(html_lib.unescape(m.group(1)))) for m in _DETAILS.finditer(html)]
    got = {(e["data-quantity"], e["data-args"]) for e in entries}
    assert got == wanted, f"{rel}: missing {sorted(wanted - got)[:3]}, extra {sorted(got - wanted)[:3]}"
    if not wanted:
        assert 'id="how-each-number"' not in html
        return
    assert f'<h2 id="how-each-number">{explain.SECTION_TITLE}' in html
    assert all(" open" not in m.group(1) for m in _DETAILS.finditer(html)), "entries are collapsed"
    ids = {e["id"] for e in entries}
    targets = re.findall(r'<a class="descent-q" href="#([^"]+)" data-quantity=', html)
    assert targets, f"{rel}: no number links to its entry"
    assert set(targets) <= ids
    for e in entries:  # every shown formula gives the quantity at the entry's own arguments
        if "data-value" in e:
            name = e["data-quantity"]
            want = Q.get(name)(**_inputs(name, dict(kv.split("=", 1) for kv in shlex.split(e["data-args"]))))
            assert math.isclose(float(e["data-value"]), want, rel_tol=1e-9), (rel, name, e)
    assert "\ue000" not in html and "\ue002" not in html


def test_entries_carry_katex_and_a_source_link(site_dir):
    html = _built(site_dir, "part-4-hardware.md")
    m = re.search(r'<details class="descent-how[^"]*"[^>]*data-formula=[^>]*>(.*?)</details>', html, re.DOTALL)
    assert m, "part 4 shows at least one formula (the ridge point)"
    assert 'class="katex' in m.group(1)
    assert re.search(r'<a href="https?://', m.group(1))


@pytest.mark.parametrize("name, args", [("measured", {"field": "cpu"}), ("build_speed", {"field": "decode"})])
def test_a_recording_says_on_which_machine_and_when(name, args):
    """A number the build machine recorded (issue 26: "the recorded measurement with machine and date"):
    its entry names the committed record's machine and date (descent/data/build_machine.json)."""
    from descent import recorded

    c = explain.collector("part-4-hardware.md")
    c.add(name, args, "x")
    md = c.section()
    d = recorded.machine_record()
    assert f"machine: {d['machine']['cpu']}, {d['machine']['cores']} cores" in md
    assert f"date: {d['date']} (UTC)" in md
    assert "build_machine.json](https://github.com/" in md
