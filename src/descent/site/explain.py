"""Every number a page prints opens its own derivation (issue 26).

Each ``descent:value`` shortcode of a page is resolved through :func:`Collector.handler`, which
records it (name, arguments, printed text) and marks the printed text with private-use characters.
After the page's Markdown becomes HTML, :func:`link_values` turns each marked number into
``<a class="descent-q" href="#how-..." data-quantity="NAME" data-args="k=v ...">`` (a ``<span>``
where a link cannot go: inside another link, a tag's attribute or math), and
:meth:`Collector.section` (appended to the Markdown before it is converted) is the page's last
section, "How each number on this page is computed": one collapsed ``<details id="how-...">`` per
distinct number holding

* what it is (the quantity's or entry's one sentence),
* the formula, typeset from the sympy expression of :mod:`descent.formulas` that the formula tests
  check, with this number's inputs substituted, where the quantity has one and it gives this very
  number (:data:`BINDERS`: the symbols' values are looked up, never computed here; a formula is shown
  only when it evaluates to the quantity, so a shown formula cannot disagree with the number),
* each input with its value, unit and source (the catalog row's config.json or datasheet, the
  build machine's record with machine and date, or "set on this page" / "the default"),
* the assumptions it rests on (:data:`ASSUMPTIONS`, by subject),
* the ``descent value`` command and the Python call that give the same number.

Without JavaScript, and from file://, the link jumps to the entry; ``explain.js`` opens the same
content in a dialog instead. Build side only (imports :mod:`descent.formulas`, sympy).
"""

from __future__ import annotations

import functools
import html as html_lib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from descent import catalog
from descent import params as P
from descent import quantities as Q
from descent.derivation import (
    ASSUMPTION_OTHER,
    ASSUMPTIONS,
    BINDERS,
    CODE_URL,
    FORMULA_OF,
    SLOT,
    Derivation,
    command_line,
    derive,
)
from descent.units import format_int, format_number

__all__ = ["ASSUMPTIONS", "BINDERS", "SECTION_TITLE", "TABLE_FILE", "Collector", "Number", "collector", "derivation",
           "formula_table", "link_values", "strip_marks"]

SECTION_TITLE = "How each number on this page is computed"
SECTION_ID = "how-each-number"

#: Private-use characters that mark a printed number in the Markdown until :func:`link_values`:
#: OPEN, the entry's index as one character from INDEX_BASE, MID, the printed text, CLOSE.
OPEN, MID, CLOSE = "\ue000", "\ue001", "\ue002"
INDEX_BASE = 0xE100
_MARK = re.compile(f"{OPEN}(.){MID}(.*?){CLOSE}", re.DOTALL)
_ANY_MARK = re.compile(f"[{OPEN}{MID}{CLOSE}]|{OPEN}.")

# ---------------------------------------------------------------------------------------------
# Formulas with this number's inputs substituted
# ---------------------------------------------------------------------------------------------

@functools.cache
def formula_table() -> dict[str, dict[str, Any]]:
    """``{formula name: entry}`` for every formula a derivation shows (:data:`descent.derivation.FORMULA_OF`),
    from the sympy expressions of :mod:`descent.formulas`: what :func:`descent.derivation.derive`
    substitutes, at build and in the reader's browser (written to :data:`TABLE_FILE`).

    Each entry: ``latex`` (the formula as the page prints it), ``lhs``, ``template`` (the right side
    printed with :data:`descent.derivation.SLOT` for each symbol, in the written order), ``py`` and
    ``args`` (the expression as Python over ``x0, x1, ...``, sympy's ``pycode``), ``unit`` and
    ``source`` (Markdown).
    """
    import sympy as sp

    from descent import formulas

    out = {}
    for fname in sorted(set(FORMULA_OF.values())):
        f = formulas.formula(fname)
        names = [s.symbol for s in f.symbols]
        slots = {sym: SLOT.format(sym.name) for sym in names}
        dummies = {sym: sp.Symbol(f"x{i}") for i, sym in enumerate(names)}
        out[fname] = {
            "latex": f.latex(),
            "lhs": f.lhs.tex,
            "template": sp.latex(f.expr, order="none", symbol_names=slots, mul_symbol="dot"),
            "py": sp.pycode(f.expr.xreplace(dummies)),
            "args": [sym.name for sym in names],
            "unit": f.lhs.unit if f.lhs.unit in formulas.UNIT_PROSE else "",
            "source": f.source_markdown(),
        }
    return out


#: Where the build writes :func:`formula_table` for the widget worker (site-relative).
TABLE_FILE = "assets/descent/derivations.json"


def derivation(name: str, inputs: dict[str, Any]) -> Derivation | None:
    """The formula of quantity ``name`` with ``inputs`` substituted (:func:`descent.derivation.derive`
    over :func:`formula_table`), or None when the quantity has no formula here or its formula does
    not give this number (another case of the step model applies)."""
    return derive(name, inputs, formula_table())


# ---------------------------------------------------------------------------------------------
# Inputs and their sources
# ---------------------------------------------------------------------------------------------

def _md_link(text: str, url: str) -> str:
    return f"[{text}]({url})"


def _source_md(text: str) -> str:
    """A catalog source as Markdown: a URL becomes a link, prose stays as written."""
    text = text.strip()
    if re.fullmatch(r"https?://\S+", text):
        return _md_link(text.split("//", 1)[1].split("/", 1)[0] + " (" + text.rsplit("/", 1)[-1] + ")", text)
    return text.replace("[", "(").replace("]", ")")


def _value_text(p: P.Param, value: Any) -> str:
    if p.type == "choice":
        label = _choice_label(p, value)
        return f"{label} (`{value}`)" if label and label != value else f"`{value}`"
    if p.type == "bool":
        return "yes" if value else "no"
    text = format_int(value) if isinstance(value, int) else format_number(float(value), 6, trim=True)
    return f"{text} {p.unit}".strip()


def _choice_label(p: P.Param, value: Any) -> str:
    try:
        choices = p.choices() if callable(p.choices) else p.choices
    except Exception:  # noqa: BLE001  (a provided choice list that cannot load: show the id)
        return ""
    return dict(choices or ()).get(value, "")


def _input_source(p: P.Param, value: Any, given: bool, links: Callable[[str, str], str]) -> str:
    where = "set on this page" if given else "the default (the site's running example)"
    if p.name == "model" and value in catalog.models():
        m = catalog.model(value)
        return (f"{where}; shapes from {_source_md(m.source_of('num_layers'))}, catalog row "
                f"{_md_link(value, links('reference/models.md', value))}")
    if p.name == "accelerator" and value in catalog.accelerators():
        a = catalog.accelerators()[value]
        return (f"{where}; {_source_md(a.source_of('memory_bandwidth'))}, catalog row "
                f"{_md_link(value, links('reference/accelerators.md', value))}")
    if p.name == "link":
        try:
            row = catalog.link(value)
            return f"{where}; {_source_md(row.source_of('bandwidth'))}"
        except (ValueError, KeyError, AttributeError):
            return where
    return where


# ---------------------------------------------------------------------------------------------
# Collecting a page's numbers
# ---------------------------------------------------------------------------------------------

@dataclass
class Number:
    """One distinct number of a page: shortcode name, raw arguments, printed text, anchor id."""

    name: str
    args: dict[str, str]
    text: str
    anchor: str


@dataclass
class Collector:
    """The numbers of one page, in order of first appearance (a number printed twice with the same
    arguments is one entry)."""

    page: str
    link_to: Callable[[str, str], str]
    numbers: list[Number] = field(default_factory=list)
    _index: dict[tuple, int] = field(default_factory=dict)
    _names: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, args: dict[str, str], text: str) -> int:
        key = (name, tuple(sorted(args.items())))
        if key not in self._index:
            seen = self._names.get(name, 0) + 1
            self._names[name] = seen
            anchor = f"how-{name}" + (f"-{seen}" if seen > 1 else "")
            self._index[key] = len(self.numbers)
            self.numbers.append(Number(name, dict(args), text, anchor))
        return self._index[key]

    def handler(self, resolve: Callable[[str, dict[str, str]], str]) -> Callable[[str, dict[str, str]], str]:
        """A ``value`` shortcode handler: ``resolve``'s text, recorded and marked for :func:`link_values`."""
        def handle(name: str, raw: dict[str, str]) -> str:
            text = resolve(name, raw)
            i = self.add(name, raw, text)
            if i + INDEX_BASE >= 0xF8FF:
                return text  # past the private-use block: printed, not linked (no page comes near)
            # A dollar amount ("$3") next to a mark could close an inline math span the text never
            # opened: escaped, it prints as "$" (arithmatex's escape).
            return f"{OPEN}{chr(INDEX_BASE + i)}{MID}{_dollars(text)}{CLOSE}"

        return handle

    def section(self) -> str:
        """The page's closing section as Markdown (empty when the page prints no value)."""
        if not self.numbers:
            return ""
        out = [f"\n\n## {SECTION_TITLE} {{ #{SECTION_ID} }}\n",
               "Each number above links here. Open one to see its formula with the inputs filled in, "
               "where each input comes from, what it assumes, and the command that prints it.\n"]
        for n in self.numbers:
            out.append(self._entry(n))
        return "\n".join(out) + "\n"

    def _entry(self, n: Number) -> str:
        from descent.site import shortcodes

        body: list[str] = []
        extra = ""  # data-value: the formula's value, where one is shown
        q = Q.QUANTITIES.get(n.name)
        entry = shortcodes.registry("value").get(n.name)
        if q is not None:
            label = q.label
            fmt = {p.name for p in Q.FORMAT_PARAMS[q.kind]}
            inputs = q.bind({k: v for k, v in n.args.items() if k not in fmt}, parse=True)
            body.append(_dollars(" ".join((q.func.__doc__ or q.doc).strip().split("\n\n")[0].split())))
            d = derivation(q.name, inputs)
            if d is not None:
                extra = f' data-formula="{d.formula}" data-value="{d.value!r}"'
                body.append(f"$$\n{d.latex}\n$$\n\n$$\n{d.substituted}\n$$\n\n*Formula source: {d.source}.*")
            rows = []
            for p in q.params:
                rows.append(f"- {p.label}: {_dollars(_value_text(p, inputs[p.name]))}; "
                            f"{_input_source(p, inputs[p.name], p.name in n.args, self.link_to)}")
            body.append("**Inputs**\n\n" + "\n".join(rows))
            module = q.func.__module__.rsplit(".", 1)[-1]
            body.append(f"**Assumptions.** {ASSUMPTIONS.get(module, ASSUMPTION_OTHER)}")
            call = ", ".join(f"{k}={inputs[k]!r}" for k in inputs if k in n.args)
            fmt_args = {k: v for k, v in n.args.items() if k in fmt}
            body.append(
                "**The same number elsewhere.** On the command line: "
                f"`{command_line(q.name, n.args)}`. In Python: "
                f"`descent.quantities.get({q.name!r})({call})`"
                + (f" printed with `{', '.join(f'{k}={v}' for k, v in fmt_args.items())}`" if fmt_args else "")
                + f". Code: {_md_link(q.func.__module__, CODE_URL + q.func.__module__.replace('.', '/') + '.py')}."
            )
        else:
            label = n.name.replace("_", " ")
            doc = entry.doc if entry is not None else ""
            body.append(_dollars(doc or "A value looked up by the site."))
            given = ", ".join(f"{k} = `{v}`" for k, v in n.args.items())
            sources = []
            for k, v in n.args.items():
                if k in ("model", "accelerator"):
                    sources.append(_input_source(P.MODEL if k == "model" else P.ACCELERATOR, v, True, self.link_to))
            body.append("**Inputs**\n\n" + (f"- {given}" if given else "- none") +
                        ("\n- " + "\n- ".join(sources) if sources else ""))
            if n.name in MACHINE_RECORDED:
                body.append(_machine_recorded())
            body.append(f"**Assumptions.** {ASSUMPTION_OTHER}")
            if entry is not None:
                mod = entry.func.__module__
                call = ", ".join(f"{k}={v!r}" for k, v in n.args.items())
                body.append(f"**The same number elsewhere.** In Python: `{mod}.{entry.func.__name__}({call})`. "
                            f"Code: {_md_link(mod, CODE_URL + mod.replace('.', '/') + '.py')}.")
        summary = f"{html_lib.escape(label)}: {_dollars(strip_marks(n.text))}"
        inner = "\n\n".join(body)
        args = html_lib.escape(_args_text(n.args))
        return (f'<details class="descent-how" id="{n.anchor}" data-quantity="{html_lib.escape(n.name)}" '
                f'data-args="{args}"{extra} markdown="1">\n'
                f'<summary markdown="span">{summary}</summary>\n\n{inner}\n\n</details>\n')


#: Value entries that read the build machine's committed timing record (``descent/data/build_machine.json``,
#: :func:`descent.recorded.machine_record`): their entries say on which machine and when it was taken.
MACHINE_RECORDED = ("measured", "serving_measured", "build_speed")


def _machine_recorded() -> str:
    """Where and when the build machine's record was taken, as the entry's "Recorded" list: the
    committed record's own machine, date and load (nothing is timed at build)."""
    from descent import recorded

    d = recorded.machine_record()
    mc = d["machine"]
    load = d.get("load_average") or {}
    rows = [f"machine: {mc['cpu']}, {format_int(mc['cores'])} cores, {mc['system']}",
            f"software: Python {mc['python']}, NumPy {mc['numpy']}, {mc['blas']} on "
            f"{format_int(mc['blas_threads'])} BLAS thread{'' if mc['blas_threads'] == 1 else 's'}",
            f"date: {d['date']} (UTC)"]
    if load:
        rows.append("load average: " + ", ".join(f"{k} {format_number(load[k], 3, trim=True)}"
                                                 for k in ("before", "after") if k in load))
    path = f"descent/data/{recorded.MACHINE_FILE}"
    rows.append(f"record: {_md_link(path, CODE_URL + path)}, written by `python -m descent.trace.machine_record` "
                "(the median of repeated runs)")
    return "**Recorded** on the build machine, not at build time:\n\n" + "\n".join(f"- {r}" for r in rows)


def collector(page: str) -> Collector:
    """A :class:`Collector` for the page at docs-relative path ``page``; its links are relative to it."""
    import posixpath

    def link(target: str, anchor: str = "") -> str:
        rel = "" if target == page else posixpath.relpath(target, posixpath.dirname(page) or ".")
        return rel + (f"#{anchor}" if anchor else "")

    return Collector(page, link)


def _dollars(text: str) -> str:
    """``text`` with each ``$`` escaped for Markdown (arithmatex prints ``\\$`` as a dollar sign)."""
    return re.sub(r"(?<!\\)\$", r"\\$", text)


def _args_text(args: dict[str, str]) -> str:
    """A shortcode's arguments as its page wrote them, ``key=value`` joined by spaces (quoted where
    a value holds a space, as :func:`shlex.split` reads them back)."""
    import shlex

    return " ".join(f"{k}={shlex.quote(v)}" for k, v in args.items())


def strip_marks(text: str) -> str:
    """``text`` without the private-use marks of :meth:`Collector.handler`."""
    return _ANY_MARK.sub("", text)


# ---------------------------------------------------------------------------------------------
# Linking the marked numbers in the page's HTML
# ---------------------------------------------------------------------------------------------

_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)\b[^>]*>")
_MATH_OPEN = re.compile(r'<(span|div) class="arithmatex">')


def _context(html: str) -> list[tuple[int, str]]:
    """``[(position, state)]``: where each tag starts, and whether text after it is inside a link
    (``"a"``), math (``"math"``) or neither (``""``)."""
    out = [(0, "")]
    depth_a = 0
    math_until = -1
    for m in _TAG.finditer(html):
        closing, tag = m.group(1), m.group(2).lower()
        if tag == "a":
            depth_a = max(0, depth_a + (-1 if closing else 1))
        if not closing and _MATH_OPEN.match(html, m.start()):
            end_tag = f"</{m.group(2)}>"
            math_until = html.find(end_tag, m.end())
        state = "math" if m.end() <= math_until else "a" if depth_a else ""
        out.append((m.end(), state))
    return out


def link_values(html: str, collector: Collector) -> str:
    """Replace each marked number with its link (or span) to its entry; marks inside a tag or math
    are dropped. Runs before KaTeX renders the math."""
    if OPEN not in html:
        return html
    states = _context(html)
    positions = [p for p, _ in states]
    import bisect

    def state_at(pos: int) -> str:
        lt, gt = html.rfind("<", 0, pos), html.rfind(">", 0, pos)
        if lt > gt:
            return "tag"
        return states[bisect.bisect_right(positions, pos) - 1][1]

    def replace(m: re.Match) -> str:
        i = ord(m.group(1)) - INDEX_BASE
        inner = m.group(2)
        n = collector.numbers[i] if 0 <= i < len(collector.numbers) else None
        where = state_at(m.start())
        if n is None or where in ("tag", "math"):
            return strip_marks(inner)
        attrs = f'data-quantity="{html_lib.escape(n.name)}"' + (f' data-args="{html_lib.escape(_args_text(n.args))}"' if n.args else "")
        if where == "a" or "<a " in inner or re.search(r"<(p|div|table|ul|ol)\b", inner):
            return f'<span class="descent-q" {attrs}>{inner}</span>'
        return f'<a class="descent-q" href="#{n.anchor}" {attrs}>{inner}</a>'

    out = _MARK.sub(replace, html)
    return strip_marks(out)
