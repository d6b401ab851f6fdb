"""Catalog text on pages is data, never markup (issue 15, section 5).

Every text field of every catalog row (names, notes, repositories, sources) is replaced with a
hostile string that is at once raw HTML, a Markdown link to ``javascript:``, emphasis, an
attribute list, arithmatex math and a table pipe. Then EVERY table shortcode and the catalog's
value shortcodes are resolved and rendered to HTML with the site's Markdown extensions: no element
may come from the catalog text, no table may gain a cell, and the reader sees the text as typed.
New table shortcodes are covered as they are registered.
"""

from __future__ import annotations

import dataclasses
import html.parser

import markdown
import pytest

from descent import catalog
from descent.site.shortcodes import registry, resolve
from descent.site.values import text as values

HOSTILE = ('<img src=x onerror=alert(1)><script>alert(2)</script> *bold* _it_ [link](javascript:alert(3)) '
           '$x^2$ {: #evil } `code` a | b &amp; \\[')
#: What the reader must see: the same text (a line break would become a space; there is none here).
SEEN = HOSTILE


#: Text fields the catalog loader checks against a fixed list (a hostile value cannot load).
ENUMERATED = ("kind", "ffn_gate", "peak_16bit_format")


def _hostile(row):
    changes = {}
    for f in dataclasses.fields(row):
        value = getattr(row, f.name)
        if f.name == "sources":
            changes["sources"] = {k: HOSTILE + " https://example.org/a_b?c=1" for k in value}
        elif f.name not in ("id", *ENUMERATED) and isinstance(value, str):
            changes[f.name] = HOSTILE
    return dataclasses.replace(row, **changes)


def _clear_derived_caches() -> None:
    # What is cached from the catalog's rows (the predictions beside the measurements, the weights'
    # released table): computed from hostile rows, it would outlive the fixture and reach later tests
    # in the same process (the measurements' ranges then came from hostile chip names).
    from descent import predict, weights

    predict.predictions.cache_clear()
    predict._record.cache_clear()
    weights._released_table.cache_clear()


@pytest.fixture
def hostile_catalog(monkeypatch):
    models = {k: _hostile(m) for k, m in catalog.models().items()}
    accelerators = {k: _hostile(a) for k, a in catalog.accelerators().items()}
    monkeypatch.setattr(catalog, "models", lambda: models)
    monkeypatch.setattr(catalog, "accelerators", lambda: accelerators)
    _clear_derived_caches()
    yield models, accelerators
    monkeypatch.undo()
    _clear_derived_caches()


class _Html(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.rows: list[int] = []  # cells per table row

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "tr":
            self.rows.append(0)
        if tag in ("td", "th") and self.rows:
            self.rows[-1] += 1

    def handle_data(self, data):
        self.text.append(data)


def _render(md: str) -> _Html:
    out = markdown.markdown(
        md, extensions=["tables", "attr_list", "md_in_html", "toc", "pymdownx.arithmatex"],
        extension_configs={"pymdownx.arithmatex": {"generic": True}},
    )
    p = _Html()
    p.feed(out)
    return p


def _check(name: str, md: str, columns: int | None = None) -> _Html:
    p = _render(md)
    tags = {t for t, _ in p.tags}
    assert not tags & {"img", "script", "em", "strong"}, (name, tags)
    for tag, attrs in p.tags:
        assert not (attrs.get("href") or "").lower().startswith("javascript"), (name, tag, attrs)
        assert attrs.get("id") != "evil", (name, tag, attrs)
        assert "arithmatex" not in (attrs.get("class") or ""), (name, tag, attrs)
    if columns is not None:
        assert p.rows and set(p.rows) == {columns}, (name, p.rows)
    return p


#: Tables that read the 98 MB GGUF (about 4 s): slow.
SLOW_TABLES = {"gguf_file"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_TABLES else n
                                  for n in sorted(registry("table"))])
def test_every_table_shows_catalog_text_as_text(hostile_catalog, name):
    entry = registry("table")[name]
    md = entry.func(**entry.bind({}))
    header = next((ln for ln in md.splitlines() if ln.startswith("| ")), None)
    columns = header.count(" | ") + 1 if header else None
    p = _check(name, md, columns if name not in ("model_details", "accelerator_details") else None)
    text = "".join(p.text)
    if name in ("models", "accelerators", "model_details", "accelerator_details", "kv_bytes_per_token",
                "decode_ceilings", "context_windows"):
        assert SEEN in text, (name, text[:500])


@pytest.mark.parametrize(
    "shortcode",
    [
        "<!-- descent:value model_field field=name -->",
        "<!-- descent:value model_field field=params_published_note -->",
        "<!-- descent:value model_field field=hf_repo -->",
        "<!-- descent:value accelerator_field field=notes -->",
        "<!-- descent:value accelerator_field field=memory_type -->",
    ],
)
def test_catalog_value_shortcodes_show_text_as_text(hostile_catalog, shortcode):
    p = _check(shortcode, resolve(f"In a sentence: {shortcode}.", "p.md"))
    assert SEEN in "".join(p.text)


def test_md_text_and_tables_keep_text_literal():
    assert values.md_text("a<b> *c* $d$") == "a&#60;b&#62; &#42;c&#42; &#36;d&#36;"
    assert values.md_text("two\nlines") == "two lines"
    # A table never carries raw HTML, whoever wrote the cell; a code span keeps its text as is.
    table = values.md_table(["x", "y"], [["<b>bold</b>", "`<b>`"]])
    assert "| &lt;b&gt;bold&lt;/b&gt; | `<b>` |" in table
    # md_link_source: URLs become links, the rest is text; a URL stops at markup characters.
    assert values.md_link_source("see https://example.org/a_b (p. 3)") == (
        "see [example.org/a&#95;b](https://example.org/a_b) (p. 3)"
    )
    assert values.md_link_source('https://x.org/"onmouseover=alert(1)') == '[x.org/](https://x.org/)"onmouseover=alert(1)'


@pytest.mark.parametrize("chip", list(catalog.accelerators()))
def test_the_bf16_field_says_so_on_a_chip_without_bf16(chip):
    """The reference page's field table printed T4's ``bf16_flops`` as "65 TFLOP/s", though Turing
    has no BF16 (its catalog notes say so, ``peak_16bit_format = "FP16"``). A chip with no BF16 rate
    shows so and the FP16 peak the field holds in its place; a chip with BF16 shows the peak alone."""
    from descent.site.values import catalog as cat_values
    from descent.units import format_si

    a = catalog.accelerator(chip)
    [row] = [r for r in cat_values.accelerator_details(chip).splitlines() if r.startswith("| `bf16_flops` |")]
    value = row.split(" | ")[1]
    peak = format_si(a.bf16_flops, "FLOP/s", 4, trim=True)
    if a.peak_16bit_format == "BF16":
        assert value == peak
    else:
        assert value == f"no BF16 rate ({a.peak_16bit_format} {peak})"
    if chip == "t4":  # the catalog row: 65e12 FLOP/s FP16 (NVIDIA T4 datasheet)
        assert value == "no BF16 rate (FP16 65 TFLOP/s)"
