"""Hostile input: every widget and the catalog loader, driven by hypothesis (the CLI: test_hostile_cli.py).

Widgets are discovered from ``descent.widgets.names()``, so a widget added later is covered without
editing this file. This module imports only the core, so it also runs inside Pyodide
(test_core_in_pyodide.py), where the widgets run for readers. The contract (DESIGN.md, "Conventions"):

* a widget returns ``{"ok": True, "html": ...}`` with no NaN or infinity anywhere in the HTML, or
  ``{"ok": False, "field": F, "message": M}`` where F is the input to blame (or None) and M names
  that input by its label and, for a number, the allowed range;
* the catalog loader rejects a malformed row with a ``CatalogError`` naming the file, the row and
  the field.

Examples are kept modest for the 2-core machine: no deadline, 40 to 100 examples per test.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from importlib import resources

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import descent.widgets as w
from descent.catalog import CatalogError, load_accelerators, load_models
from descent.units import format_limit

#: Examples per widget: the full suite's depth, or a quarter of it in `nox -s fast`'s edit-test loop
#: (the noxfile sets DESCENT_FAST=1 there; the full suite, CI's, always runs the full depth).
DEPTH = 0.25 if os.environ.get("DESCENT_FAST") == "1" else 1.0


def _examples(n: int) -> int:
    return max(5, round(n * DEPTH))


SETTINGS = settings(
    deadline=None, max_examples=_examples(80),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: How a non-finite float prints: Python's ``nan``/``inf``/``-inf`` (str, repr, f-strings) and
#: JSON's ``NaN``/``Infinity``, as whole words (not inside "information" or "finance").
NON_FINITE = re.compile(r"(?<![A-Za-z])(nan|[+-]?inf|NaN|[+-]?Infinity)(?![A-Za-z])")

#: Proper nouns that contain such a word: AMD's "Infinity Fabric" and "Infinity Cache" (catalog).
PROPER_NOUNS = re.compile(r"\bInfinity (?=[A-Z])")

#: Values that are wrong for almost any input: negative, zero, non-finite, huge, wrong types,
#: empty and very long text, unknown ids, control characters, numbers in odd spellings.
HOSTILE = [
    -1,
    0,
    -0.0,
    1.5,
    -3,
    10**30,
    -(10**30),
    10**400,
    1e308,
    -1e308,
    5e-324,
    math.nan,
    math.inf,
    -math.inf,
    "",
    " ",
    "-3",
    "0",
    "nan",
    "NaN",
    "inf",
    "-Infinity",
    "1e999",
    "1e-999",
    "0x10",
    "1_0",
    "1,,0",
    "abc",
    "no-such-model",
    "\x00",
    "\u202e",
    "🙂",
    "１２",
    "x" * 20_000,
    "9" * 400,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    "1.7976931348623157e308",
    "-1.7976931348623157e308",
    None,
    True,
    False,
    [],
    [1],
    {},
    {"a": 1},
]


def hostile_values() -> st.SearchStrategy:
    return st.one_of(
        st.sampled_from(HOSTILE),
        st.integers(min_value=-(10**20), max_value=10**20),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=30),
    )


def assert_finite_text(text: str, where: str, echoed: tuple[str, ...] = ()) -> None:
    """No non-finite number in ``text``. Words the reader typed (``echoed``: a prompt "nan",
    a text box holding "inf") may legitimately come back as text and are not counted."""
    text = PROPER_NOUNS.sub("", text)
    allowed = {m.group(0) for e in echoed if isinstance(e, str) for m in NON_FINITE.finditer(e)}
    for m in NON_FINITE.finditer(text):
        assert m.group(0) in allowed, (
            f"{where}: non-finite value {m.group(0)!r} in output: ...{text[max(0, m.start() - 80) : m.end() + 80]}..."
        )


# -- widgets -----------------------------------------------------------------------------------

WIDGETS = w.names()
#: Widgets whose property runs take more than a few seconds (a simulator, or every chip x model per
#: example): their cases of the two per-example tests below carry the slow marker, so `nox -s fast`
#: leaves them out; `nox -s tests` (and the Pyodide run) still take them.
SLOW_WIDGETS = {"batching", "decode_across_field", "prefill_decode", "price_it_out"}


def _widget_cases() -> list:
    return [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_WIDGETS else n for n in WIDGETS]


def test_slow_widgets_are_widgets():
    assert SLOW_WIDGETS <= set(WIDGETS)


def test_widgets_are_discovered():
    # The runtime's own demo is always registered; others come and go as parts are written.
    assert "kv_demo" in WIDGETS and WIDGETS == sorted(w.REGISTRY)


def valid_value(inp: w.Input) -> st.SearchStrategy:
    """Values the declaration allows, in the types a form or JSON sends."""
    k = inp.kind
    if k in ("range", "number"):
        if inp.integer:
            nums = st.integers(min_value=inp.min, max_value=inp.max)
        else:
            nums = st.floats(min_value=inp.min, max_value=inp.max, allow_nan=False)
        edges = st.sampled_from([inp.min, inp.max, inp.default])
        return st.one_of(nums, edges, nums.map(str))
    if k in ("select", "segmented"):
        return st.sampled_from([v for v, _ in inp.options]).flatmap(lambda v: st.sampled_from([v, str(v)]))
    if k == "toggle":
        return st.sampled_from([True, False, "true", "false", "on", "off", "1", "0"])
    return st.text(max_size=min(inp.max_length, 200))


@st.composite
def widget_inputs(draw, widget: w.Widget, hostile: bool) -> dict:
    values = {}
    for inp in widget.inputs:
        choice = draw(st.sampled_from(["omit", "valid", "hostile"] if hostile else ["omit", "valid"]))
        if choice == "valid":
            values[inp.name] = draw(valid_value(inp))
        elif choice == "hostile":
            values[inp.name] = draw(hostile_values())
    if hostile and draw(st.booleans()):
        extra = draw(st.text(min_size=0, max_size=12))
        if extra not in widget._by_name:
            values[extra] = draw(hostile_values())
    return values


#: A message that says what is allowed uses one of these ("must be 1 to 128", "type at least one
#: character", "enter a number from 1 to 200", "one of: fp8, bf16").
ALLOWED_WORDS = ("must", "allowed", "at least", "at most", "one of", "enter ", "type ", "choose ", "pick ")


#: An exception's class name ("OverflowError", "KeyError", "internal error: TypeError"): never
#: in what a reader reads (issue 24).
CLASS_NAME = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception)\b|\binternal error\b")


#: Unicode's bidirectional controls (UAX #9): never raw in a widget's HTML or message (issue 15).
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def check_widget_result(widget: w.Widget, inputs, res: dict) -> None:
    assert isinstance(res, dict) and isinstance(res.get("ok"), bool), res
    json.dumps(res, allow_nan=False)  # the worker sends it as strict JSON
    # A constrained slider's allowed values (issue 13): each a value its own declaration accepts.
    allowed = res.pop("allowed", {})
    assert isinstance(allowed, dict)
    for name, values in allowed.items():
        inp = widget.input(name)
        assert inp.kind == "range" and any(name in c.inputs for c in widget.constraints), (name, res)
        assert all(inp.coerce(x) == x for x in values), (name, values)
    text = res.get("html") if res["ok"] else res.get("message")
    assert not BIDI.search(str(text)), f"widget {widget.name}: a raw bidi control in {text!r:.300}"
    if res["ok"]:
        # A live widget (it can compute with the model in the reader's browser) says which one it used.
        assert set(res) == {"ok", "html"} | ({"engine"} if widget.live else set()), res
        assert isinstance(res["html"], str) and res["html"]
        assert res.get("engine", "trace") in ("trace", "browser"), res
        texts = tuple(v for k, v in inputs.items() if k in widget._by_name and widget.input(k).kind == "text")
        assert_finite_text(res["html"], f"widget {widget.name} with {inputs!r:.300}", texts)
        return
    # An unexpected exception is a bug (run() says so to the reader in words and marks it).
    assert not res.get("internal"), f"widget {widget.name}: a bug with {inputs!r:.300}: {res}"
    assert set(res) == {"ok", "field", "message"}, res
    msg, fld = res["message"], res["field"]
    assert isinstance(msg, str) and msg.strip() and "\n" not in msg, res
    assert "Traceback" not in msg
    said = msg  # without what the reader typed (an input called "AError" is echoed back)
    if isinstance(inputs, dict):
        for k, v in inputs.items():
            for typed in (k, v):
                if isinstance(typed, str) and typed:
                    said = said.replace(repr(typed), "").replace(typed, "")
    assert not CLASS_NAME.search(said), f"widget {widget.name}: a class name in {msg!r}"
    if fld is None:
        return
    if fld in widget._by_name:
        inp = widget.input(fld)
        assert inp.label in msg or inp.name in msg, f"message does not name the input: {res}"
        raw = inputs.get(fld, inp.default) if isinstance(inputs, dict) else inp.default
        try:
            inp.coerce(raw)
        except w.FieldError as exc:
            # The value breaks the input's own declaration: run() reports exactly that message,
            # which states the declared range or options.
            assert msg == exc.message, res
            if inp.kind in ("range", "number") and "must be a" not in msg and "whole number" not in msg:
                fmt = format_limit
                assert fmt(inp.min) in msg and fmt(inp.max) in msg, f"no allowed range: {res}"
            if inp.kind in ("select", "segmented"):
                assert all(str(v) in msg for v, _ in inp.options), f"allowed options not listed: {res}"
        else:
            # A valid value that breaks a constraint between inputs ("must divide the query
            # heads (12)", "must be 0 to 128 for gpt-oss-120b"): the message says what is allowed.
            assert any(word in msg for word in ALLOWED_WORDS), f"message does not say what is allowed: {res}"
    else:
        # An unknown input name: the message names it and lists the inputs the widget takes.
        assert isinstance(inputs, dict) and fld in inputs, res
        assert all(i.name in msg for i in widget.inputs), res


@pytest.mark.parametrize("name", _widget_cases())
@SETTINGS
@given(data=st.data())
def test_widget_hostile_inputs(name, data):
    widget = w.get(name)
    inputs = data.draw(widget_inputs(widget, hostile=True))
    touched = data.draw(st.sampled_from([None, "", "nope", *(i.name for i in widget.inputs)]))
    check_widget_result(widget, inputs, w.run(name, inputs, touched))


@pytest.mark.parametrize("name", _widget_cases())
@settings(deadline=None, max_examples=_examples(50))
@given(data=st.data())
def test_widget_valid_inputs_give_finite_results(name, data):
    widget = w.get(name)
    inputs = data.draw(widget_inputs(widget, hostile=False))
    res = w.run(name, inputs)
    check_widget_result(widget, inputs, res)
    # In-range values may still break a constraint between inputs (field None, a sentence);
    # they never blame one input that was itself valid for a reason other than a cross-check.
    if not res["ok"]:
        assert res["field"] is None or res["field"] in widget._by_name, res


@pytest.mark.parametrize("name", WIDGETS)
@SETTINGS
@given(raw=st.one_of(hostile_values(), st.lists(hostile_values(), max_size=3)))
def test_widget_inputs_that_are_not_an_object(name, raw):
    res = w.run(name, raw)
    if raw is None:  # None means "all defaults"
        assert res["ok"], res
    elif not isinstance(raw, dict):
        assert res == {"ok": False, "field": None, "message": res["message"]} and "object" in res["message"]


@SETTINGS
@given(
    name=st.one_of(
        st.text(max_size=40), st.sampled_from(["", " ", "KV_DEMO", "kv_demo ", "__init__", "views"])
    ),
    raw=st.text(max_size=60),
)
def test_unknown_widget_and_broken_json(name, raw):
    res = json.loads(w.run_json(name, raw))
    assert res["ok"] is False or name in WIDGETS
    if name not in WIDGETS:
        assert res["field"] is None and "known widgets" in res["message"] or "JSON" in res["message"]


@pytest.mark.parametrize("name", WIDGETS)
@settings(deadline=None, max_examples=_examples(40))
@given(data=st.data())
def test_widget_json_round_trip_matches_run(name, data):
    # The worker's path (JSON text in and out) gives the same answer as run(), NaN included
    # (JSON.stringify in the browser never sends NaN, but Python's json accepts it).
    widget = w.get(name)
    inputs = data.draw(widget_inputs(widget, hostile=True))
    out = w.run_json(name, json.dumps(inputs))
    res = json.loads(out, parse_constant=_reject_constant)  # strict JSON: no NaN or Infinity
    check_widget_result(widget, inputs, res)


def _reject_constant(name: str):
    raise AssertionError(f"run_json returned a bare {name}: not valid JSON for the browser")


# -- catalog -----------------------------------------------------------------------------------


def _raw(name: str) -> dict:
    return tomllib.loads(resources.files("descent.catalog").joinpath(name).read_text())


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string is a JSON string for these characters
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def dump_rows(rows: dict[str, dict]) -> str:
    """A minimal TOML writer for catalog rows (one table per row, nested tables inline)."""
    out = []
    for row_id, row in rows.items():
        out.append(f"[{json.dumps(row_id)}]")
        out += [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in row.items()]
        out.append("")
    return "\n".join(out)


CATALOGS = {
    "models.toml": (load_models, _raw("models.toml")),
    "accelerators.toml": (load_accelerators, _raw("accelerators.toml")),
}

#: Replacement values: wrong type, negative, zero, non-finite, huge, empty.
BAD_FIELD_VALUES = [-1, -1.5, 0, math.nan, math.inf, -math.inf, "", "twelve", True, [1], {"x": 1}, 10**30]


def test_dump_rows_round_trips_the_real_catalog():
    # The writer is the test's own: the real rows must come back unchanged through it.
    for file, (load, raw) in CATALOGS.items():
        assert tomllib.loads(dump_rows(raw)) == raw
        assert list(load(dump_rows(raw), file)) == list(raw)


@st.composite
def malformed(draw):
    file = draw(st.sampled_from(sorted(CATALOGS)))
    load, raw = CATALOGS[file]
    rows = json.loads(json.dumps(raw, allow_nan=True))  # deep copy
    row_id = draw(st.sampled_from(sorted(rows)))
    row = rows[row_id]
    kind = draw(st.sampled_from(["bad_value", "missing", "unknown", "nested_bad"]))
    nested = [k for k, v in row.items() if isinstance(v, dict) and k != "sources"]
    if kind == "nested_bad" and nested:
        table = draw(st.sampled_from(nested))
        key = draw(st.sampled_from(sorted(row[table])))
        row[table][key] = draw(st.sampled_from(BAD_FIELD_VALUES))
        field = key
    elif kind == "missing":
        field = draw(st.sampled_from(sorted(k for k in row if k != "sources")))
        del row[field]
    elif kind == "unknown":
        # "zz_" first: a drawn name may otherwise be a real field (vocab_size), set to 1 and accepted.
        field = "zz_" + draw(st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=3, max_size=12))
        row[field] = 1
    else:
        field = draw(st.sampled_from(sorted(k for k in row if k != "sources")))
        row[field] = draw(st.sampled_from(BAD_FIELD_VALUES))
    return file, load, rows, row_id, field, kind


@SETTINGS
@given(case=malformed())
def test_catalog_rejects_malformed_rows(case):
    file, load, rows, row_id, field, kind = case
    text = dump_rows(rows)
    try:
        loaded = load(text, file)
    except CatalogError as exc:
        msg = str(exc)
        assert file in msg and row_id in msg, msg
        assert field in msg or kind == "missing" and "required" in msg and field in msg, msg
        return
    # Accepted: only if the change was harmless (an optional field dropped, a count set to a
    # value that is still a valid count, a flag flipped); every number must stay finite.
    row = loaded[row_id]
    for name in (f.name for f in __import__("dataclasses").fields(row)):
        v = getattr(row, name)
        if isinstance(v, float):
            assert math.isfinite(v), f"{file} [{row_id}] accepted non-finite {name} = {v}"
    assert kind in ("missing", "bad_value", "nested_bad"), f"unknown field {field!r} was accepted"
    if kind == "missing":
        return
    changed = rows[row_id].get(field)
    assert not isinstance(changed, (str, list, dict)) or field in (
        "name",
        "notes",
        "params_published_note",
        "memory_marketed",
        "memory_type",
        "scale_up_name",
        "compute_units_name",
        "hf_repo",
        "vendor",
    ), f"{file} [{row_id}] accepted {field} = {changed!r}"
    assert not (isinstance(changed, int) and not isinstance(changed, bool) and changed < 0), (
        f"{file} [{row_id}] accepted negative {field} = {changed!r}"
    )


@pytest.mark.parametrize("text", ["not = [toml", "x = 1", '[a]\nname = "A"', "[a]\n[a.sources]\ndefault = 1"])
@pytest.mark.parametrize("file", sorted(CATALOGS))
def test_catalog_rejects_broken_documents(file, text):
    load, _ = CATALOGS[file]
    with pytest.raises(CatalogError, match=re.escape(file)):
        load(text, file)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_catalog_rejects_non_finite_floats(value):
    # TOML spells NaN and infinity as bare nan/inf; before this check they loaded silently
    # (fp4_flops = nan passed the "must not be negative" test, since nan < 0 is False).
    rows = json.loads(json.dumps(CATALOGS["accelerators.toml"][1]))
    text = dump_rows(rows).replace('"bf16_flops" = ', f'"bf16_flops" = {value} #', 1)
    first = next(iter(rows))
    with pytest.raises(CatalogError) as exc:
        load_accelerators(text, "accelerators.toml")
    assert str(exc.value).startswith(
        f"accelerators.toml: [{first}]: field 'bf16_flops' must be a finite number"
    )


def test_widget_huge_integer_is_a_range_error():
    # JSON may carry any integer; 10**400 used to raise OverflowError inside math.isfinite.
    res = w.run("kv_demo", {"layers": 10**400})
    assert res["ok"] is False and res["field"] == "layers"
    assert res["message"].startswith("Layers must be 1 to 200 layers, got 1000")


#: Text with every kind of bidi control: an override left open (the issue's case), an isolate,
#: embeddings, marks (UAX #9, section 2).
BIDI_TEXT = "\u202eParis\u2067x\u202b\u202ay\u200f\u200e\u061c\u2068z\u202d"


#: The widgets with a text input (the others are not skipped one by one: they are not cases).
TEXT_WIDGETS = [n for n in WIDGETS if any(inp.kind == "text" for inp in w.get(n).inputs)]


def test_the_text_widgets_are_found():
    assert {"next_token_guess", "tokenizer"} <= set(TEXT_WIDGETS)


@pytest.mark.parametrize("name", TEXT_WIDGETS)
def test_reader_text_cannot_reverse_the_sentence(name):
    # Issue 15: a guess holding U+202E RIGHT-TO-LEFT OVERRIDE reversed the site's own sentence after
    # it. Every text input of every widget gets bidi controls; the HTML shows them as [U+202E].
    widget = w.get(name)
    for inp in (i for i in widget.inputs if i.kind == "text"):
        res = w.run(name, {inp.name: BIDI_TEXT[: inp.max_length]})
        check_widget_result(widget, {inp.name: BIDI_TEXT}, res)  # no raw bidi control, ok or not


def test_the_guess_with_an_override_is_shown_as_typed():
    # The case: the guess is echoed in the sentence "... is not among the 50 tokens ...".
    # The control is shown as its code point (descent.units.visible_whitespace), escaped for HTML.
    res = w.run("next_token_guess", {"guess": "\u202eParis"})
    assert res["ok"] and "&lt;U+202E&gt;Paris" in res["html"] and "\u202e" not in res["html"]


@pytest.mark.parametrize("fmt", ["fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "e8m0"])
@pytest.mark.parametrize("value", ["1.7976931348623157e308", "-1.7976931348623157e308"])
def test_the_float_widget_takes_the_largest_double(fmt, value):
    # Issue 24: "Internal error: OverflowError: math range error" in every format but E8M0.
    name = next(n for n in WIDGETS if "value" in w.get(n)._by_name and "format" in w.get(n)._by_name)
    res = w.run(name, {"format": fmt, "value": value})
    check_widget_result(w.get(name), {"format": fmt, "value": value}, dict(res))
    assert res["ok"] or (fmt == "e8m0" and value.startswith("-")), res
