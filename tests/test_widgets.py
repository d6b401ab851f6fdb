"""The widget framework: declarations, validation messages, run() and render_static()."""

from __future__ import annotations

import json
import math
import re

import pytest

import descent.widgets as w
from descent import params as P
from descent.params import Param
from descent.units import format_int
from descent.widgets import FieldError, Input, Widget

# The demo's defaults are Llama 3.1 8B's KV shape (config.json: 32 layers, 8 KV heads,
# head_dim 128) in BF16 (2 bytes): 2 x 32 x 8 x 128 x 2 = 131,072 bytes per token, worked by hand.
DEMO_PER_TOKEN = 2 * 32 * 8 * 128 * 2


def _ctx() -> Input:
    return Input(P.CONTEXT, "range", log=True)


# -- Input.coerce ------------------------------------------------------------------------------


def test_range_accepts_strings_ints_and_thousands_separators():
    inp = _ctx()
    assert inp.coerce("4096") == 4096 and isinstance(inp.coerce("4096"), int)
    assert inp.coerce(" 1,000,000 ") == 1_000_000
    assert inp.coerce(4096.0) == 4096 and isinstance(inp.coerce(4096.0), int)


def test_range_message_names_field_and_range():
    with pytest.raises(FieldError) as exc:
        _ctx().coerce("-3")
    assert exc.value.field == "context"
    assert exc.value.message == "Context must be 1 to 20,000,000 tokens, got -3"
    assert isinstance(exc.value, ValueError)


@pytest.mark.parametrize("bad", ["nan", "NaN", "inf", "-inf", "1e400", math.nan, math.inf])
def test_non_finite_numbers_are_rejected(bad):
    # NaN and infinities are not echoed back: a number box reports unparseable text ("1e400") as NaN.
    with pytest.raises(FieldError, match=r"^Context must be a number from 1 to 20,000,000 tokens$"):
        _ctx().coerce(bad)


@pytest.mark.parametrize("bad", ["abc", "12abc", True, None, [1], {"a": 1}])
def test_wrong_type_is_rejected(bad):
    with pytest.raises(FieldError, match=r"^Context must be a number, got "):
        _ctx().coerce(bad)


def test_empty_number_says_what_to_enter():
    with pytest.raises(FieldError, match="Context is empty: enter a number from 1 to 20,000,000"):
        _ctx().coerce("  ")


def test_integer_input_rejects_fractions_float_input_keeps_them():
    with pytest.raises(FieldError, match="Context must be a whole number, got '2.5'"):
        _ctx().coerce("2.5")
    temp = Input(P.TEMPERATURE.but(max=2.0), "number")
    assert temp.coerce("0.7") == 0.7 and isinstance(temp.coerce("1"), float)
    with pytest.raises(FieldError, match=r"^Temperature must be 0 to 2, got 2.5$"):
        temp.coerce(2.5)


def test_select_returns_declared_value_type_and_rejects_unknown_option():
    inp = Input(Param("d", "Head dimension", "choice", 128, choices=[(64, "64"), (128, "128")]), "select")
    assert inp.coerce("64") == 64 and isinstance(inp.coerce("64"), int)
    assert inp.coerce(128) == 128
    with pytest.raises(FieldError) as exc:
        inp.coerce("100")
    assert exc.value.message == "Head dimension must be one of: 64, 128; got '100'"
    with pytest.raises(FieldError):
        inp.coerce(True)  # a bool is not the option 1


def test_toggle_and_text():
    t = Input(Param("on", "Prefix caching", "bool", False), "toggle")
    assert [t.coerce(x) for x in ("true", "on", "1", True, "false", "off", "0", "", False)] == [True] * 4 + [False] * 5
    with pytest.raises(FieldError, match="Prefix caching must be on or off"):
        t.coerce("maybe")
    s = Input(Param("prompt", "Prompt", "text", "Hi", max_length=5), "text")
    assert s.coerce("hello") == "hello"
    with pytest.raises(FieldError, match="Prompt must be at most 5 characters, got 6"):
        s.coerce("hello!")
    with pytest.raises(FieldError, match="Prompt must be text"):
        s.coerce(3)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Param("x", "X", "slider", 1), "type must be one of"),
        (lambda: Param("x", "X", "choice", 1), "needs choices"),
        (lambda: Param("x", "X", "int", 1, min=5, max=1), "min must be below max"),
        (lambda: Input(Param("x", "X", "int", 1, min=0, max=9), "range", log=True), "needs kind 'range' and min > 0"),
        (lambda: Param("x", "X", "int", 99, min=1, max=9), "invalid default: X must be 1 to 9"),
        (lambda: Input(Param("id", "X", "bool", True), "toggle"), "other than 'id'"),
        (lambda: Param("x", "X", "text", ""), "max_length must be 1 to 50,000"),
        (lambda: Input(Param("x", "X", "int", 1, min=1, max=9), "number", log=True), "log-scale slider needs"),
        (lambda: Input(P.CONTEXT, "toggle"), "a toggle cannot show a int parameter"),
        (lambda: Input(Param("x", "X", "int", min=1, max=9), "range"), "needs a default"),
        (lambda: Input(Param("x", "X", "int", 1, min=1, max=9), "slider"), "kind must be one of"),
    ],
)
def test_bad_declarations_fail_at_import_time(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# -- registry, run ------------------------------------------------------------------------------


def test_demo_is_registered_and_discovered():
    assert "kv_demo" in w.names()
    assert isinstance(w.get("kv_demo"), Widget)


def test_duplicate_registration_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        w.widget("kv_demo", title="x", inputs=[])(lambda: [])
    with pytest.raises(ValueError, match="lowercase identifier"):
        w.widget("Bad-Name", title="x", inputs=[])(lambda: [])


def test_run_default_result_has_the_hand_computed_numbers():
    out = w.run("kv_demo", {})
    assert out["ok"] is True
    # 131,072 B = 128 KiB per token; x 8,192 tokens = 2**30 B = 1.00 GiB (worked out above).
    assert f"{DEMO_PER_TOKEN:,} bytes" in out["html"]
    assert ">128</span>" in out["html"]
    assert "1,073,741,824 bytes" in out["html"]


def test_run_with_inputs_changes_the_result():
    out = w.run("kv_demo", {"context": "4096", "kv": "fp8"})
    # FP8: 2 x 32 x 8 x 128 x 1 = 65,536 B per token; x 4,096 = 268,435,456 B = 0.25 GiB.
    assert out["ok"] and "268,435,456 bytes" in out["html"] and "65,536 bytes" in out["html"]


@pytest.mark.parametrize(
    "name, inputs, field, message",
    [
        ("kv_demo", {"context": "-3"}, "context", "Context must be 1 to 20,000,000 tokens, got -3"),
        ("kv_demo", {"layers": "nan"}, "layers", "Layers must be a number from 1 to 200 layers"),
        ("kv_demo", {"kv_heads": "inf"}, "kv_heads", "KV heads must be a number from 1 to 128 heads"),
        ("kv_demo", {"kv": "fp4"}, "kv", "KV precision must be one of: fp32, bf16, fp8; got 'fp4'"),
        ("kv_demo", {"bogus": 1}, "bogus",
         "unknown input 'bogus' for widget 'kv_demo'; it takes: layers, kv_heads, head_dim, context, kv"),
        ("no_such", {}, None, "unknown widget 'no_such'; known widgets: "),
    ],
)
def test_run_reports_bad_input_without_raising(name, inputs, field, message):
    out = w.run(name, inputs)
    assert out["ok"] is False and out["field"] == field
    assert out["message"].startswith(message)


@pytest.mark.parametrize("weird", [None, [], "x", 3, {"context": None}, {"context": {"a": 1}}, {1: 2}])
def test_run_never_raises(weird):
    out = w.run("kv_demo", weird) if weird is not None else w.run(None, None)
    assert out["ok"] in (True, False)
    if weird is None or weird == {}:
        return
    assert out["ok"] is False and out["message"]


def test_run_reports_compute_errors_as_ok_false():
    @w.widget("_test_raises", title="T", inputs=[Input(Param("n", "N", "int", 1, min=0, max=5), "number")])
    def _raises(n):
        if n == 0:
            raise FieldError("n", "N must not be 0 here")
        if n == 1:
            raise ValueError("something about n")
        return []

    try:
        assert w.run("_test_raises", {"n": 0}) == {"ok": False, "field": "n", "message": "N must not be 0 here"}
        assert w.run("_test_raises", {"n": 1}) == {"ok": False, "field": None, "message": "something about n"}
        assert w.run("_test_raises", {"n": 2}) == {"ok": True, "html": ""}
    finally:
        del w.REGISTRY["_test_raises"]


def test_run_turns_a_bug_into_a_sentence_naming_the_widget(capsys):
    # Issue 24: an unexpected exception (OverflowError) reached the reader as its class name.
    @w.widget("_test_bug", title="Bug box", inputs=[Input(Param("n", "Some count", "int", 1, min=0, max=5), "number")])
    def _bug(n):
        return [] if n == 1 else [math.ldexp(1.0, 5000)]

    try:
        out = w.run("_test_bug", {"n": 2}, touched="n")
        assert out["ok"] is False and out["field"] is None and out["internal"] is True
        msg = out["message"]
        assert msg.startswith("Bug box:") and "Some count" in msg and "internal problem" in msg
        assert not re.search(r"[A-Z][a-z]+Error|Exception|Traceback|math range", msg), msg
        assert "OverflowError" in capsys.readouterr().err  # the traceback goes to the console
        assert json.loads(w.run_json("_test_bug", '{"n": 3}'))["internal"] is True
        assert w.run("_test_bug", {"n": 1}) == {"ok": True, "html": ""}
    finally:
        del w.REGISTRY["_test_bug"]


def test_run_json_round_trip():
    out = json.loads(w.run_json("kv_demo", '{"context": "-3"}'))
    assert out == {"ok": False, "field": "context", "message": "Context must be 1 to 20,000,000 tokens, got -3"}
    assert json.loads(w.run_json("kv_demo", "{not json"))["ok"] is False


# -- render_static ------------------------------------------------------------------------------


def test_render_static_structure():
    html = w.render_static("kv_demo")
    assert html.startswith('<div class="descent-widget" data-widget="kv_demo" data-state="static" id="dw-kv_demo">')
    assert "<form " in html and w.STATIC_STATUS in html
    # Every control with a name has a <label for=...> (or sits in a labelled fieldset/label).
    for cid in re.findall(r'<(?:input|select|textarea)[^>]*\bid="([^"]+)"[^>]*\bname=', html):
        assert f'<label for="{cid}"' in html or f'<label class="descent-toggle" for="{cid}"' in html, cid
    assert "<legend>KV precision</legend>" in html
    # One aria-live error slot per input.
    assert html.count('class="descent-field__error"') == 5
    assert re.search(r'class="descent-field__error" id="dw-kv_demo-context-error" aria-live="polite"', html)
    # The pre-rendered output is exactly run()'s default result.
    assert w.run("kv_demo", {})["html"] in html
    # Range: a slider and a number box, bound by the same field, with the unit.
    assert 'id="dw-kv_demo-context-range" data-log="1" min="0.0" max="7.301029995663981"' in html
    assert 'name="context" min="1" max="20000000" step="1" value="8192"' in html
    assert '(tokens)' in html


def test_render_static_args_override_defaults():
    html = w.render_static("kv_demo", context="4096", kv="fp8")
    assert 'name="context" min="1" max="20000000" step="1" value="4096"' in html
    assert '<input type="radio" name="kv" value="fp8" checked>' in html
    assert "268,435,456 bytes" in html  # 65,536 B x 4,096 tokens, as above
    # log10(4096) on the slider
    assert f'value="{math.log10(4096)!r}"' in html


@pytest.mark.parametrize(
    "args, message",
    [
        ({"bogus": "1"}, "descent:widget kv_demo: unknown input 'bogus'"),
        ({"context": "0"}, "descent:widget kv_demo: Context must be 1 to 20,000,000 tokens, got 0"),
        ({"id": "a b"}, "id= must be letters"),
    ],
)
def test_render_static_bad_args_fail_the_build(args, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        w.render_static("kv_demo", **args)
    with pytest.raises(ValueError, match="unknown widget"):
        w.render_static("nope")


def test_render_static_ids_are_unique_per_configuration_and_deterministic():
    a, b = w.render_static("kv_demo", context="10"), w.render_static("kv_demo", context="20")
    ida = re.search(r'id="(dw-[^"]+)"', a).group(1)
    idb = re.search(r'id="(dw-[^"]+)"', b).group(1)
    assert ida != idb and ida == re.search(r'id="(dw-[^"]+)"', w.render_static("kv_demo", context="10")).group(1)
    assert 'id="dw-kv_demo-second"' in w.render_static("kv_demo", id="second")


def test_render_static_escapes_declared_text():
    @w.widget("_test_escape", title="<b>T</b>", description="a & b",
              inputs=[Input(Param("s", 'Say "hi"', "choice", "<x>", choices=[("<x>", "<y>")]), "select")])
    def _esc(s):
        return []

    try:
        html = w.render_static("_test_escape")
        assert "<b>" not in html and "&lt;b&gt;T&lt;/b&gt;" in html and "a &amp; b" in html
        assert 'value="&lt;x&gt;" selected>&lt;y&gt;</option>' in html and "Say &quot;hi&quot;" in html
    finally:
        del w.REGISTRY["_test_escape"]


def test_demo_defaults_and_presets_come_from_the_catalog():
    from descent import catalog
    from descent.widgets import demo, views

    base = catalog.model(demo.DEFAULT_MODEL)
    d = w.get("kv_demo").defaults()
    assert (d["layers"], d["kv_heads"], d["head_dim"]) == (base.num_layers, base.num_kv_heads, base.head_dim)
    presets = demo.preset_models()
    assert all(m.mla is None and m.sliding is None for m in presets)
    assert "llama-3.1-70b" in {m.id for m in presets} and "deepseek-v3" not in {m.id for m in presets}
    html = w.run("kv_demo", {})["html"]
    seventy = catalog.model("llama-3.1-70b")
    chunk = html[html.index(f">{seventy.name}<") - 400:]
    assert views._parse_set(chunk[chunk.index("data-set="):]) == {
        "layers": str(seventy.num_layers), "kv_heads": str(seventy.num_kv_heads), "head_dim": str(seventy.head_dim)}
    # What the chip sets is accepted by the widget: Llama 3.1 70B (config.json: 80 layers, 8 KV heads,
    # head_dim 128) in BF16 -> 2 x 80 x 8 x 128 x 2 = 327,680 bytes per token (by hand).
    out = w.run("kv_demo", {"layers": "80", "kv_heads": "8", "head_dim": "128"})
    assert out["ok"] and "327,680 bytes" in out["html"]


def test_static_status_says_defaults_only_when_they_are():
    assert w.STATIC_STATUS in w.render_static("kv_demo")
    assert w.STATIC_STATUS in w.render_static("kv_demo", id="two")  # id= is not an input
    overridden = w.render_static("kv_demo", context="4096")
    assert w.STATIC_STATUS_ARGS in overridden and w.STATIC_STATUS not in overridden
    # widgets.js shows data-ready once bound (JavaScript on): the same split by defaults / values shown.
    assert f'data-ready="{w.READY_STATUS}"' in w.render_static("kv_demo")
    assert f'data-ready="{w.READY_STATUS_ARGS}"' in overridden


def test_text_with_a_lone_surrogate_is_a_field_error():
    # A browser can send half of a surrogate pair (half a pasted emoji); before this check the
    # tokenizer widget answered with a raw codec error and no field (found by the fresh-user trial).
    out = w.run("tokenizer", {"text": "ab\ud800c"})
    assert out["ok"] is False and out["field"] == "text"
    assert "valid Unicode" in out["message"] and "character 3" in out["message"]


# -- Constraints between inputs, what to try, cut text (issue 13) ------------------------------


def _pair_widget(name: str):
    """A throwaway widget: a and b from 1 to 12, b must divide a."""
    a = Param("a", "A", "int", 12, min=1, max=12)
    b = Param("b", "B", "int", 3, min=1, max=12)

    @w.widget(
        name,
        title="T",
        inputs=[Input(a, "range"), Input(b, "number")],
        constraints=[
            w.Constraint(
                ("a", "b"),
                ok=lambda a, b: a % b == 0,
                messages={"a": lambda a, b: f"A must be a multiple of B ({b})", "b": lambda a, b: f"B must divide A ({a})"},
            )
        ],
        tries=[("Move A.", "Only multiples of B are offered.")],
    )
    def _pair(a, b):
        return [w.views.stat("A / B", a // b)]


def test_constraint_blames_the_touched_input_and_offers_the_nearest_values():
    _pair_widget("_test_pair")
    try:
        r = w.run("_test_pair", {"a": 7, "b": 3}, touched="a")
        # Multiples of 3 from 1 to 12 around 7: 6 below, 9 above.
        assert r == {"ok": False, "field": "a", "message": "A must be a multiple of B (3) Nearest allowed: 6 or 9.",
                     "allowed": {"a": [3, 6, 9, 12]}}
        r = w.run("_test_pair", {"a": 7, "b": 3}, touched="b")
        # b is a number box: divisors of 7 in 1..12 around 3 are 1 below and 7 above.
        assert r["field"] == "b" and r["message"] == "B must divide A (7) Nearest allowed: 1 or 7."
        # Nobody touched anything (a page's first request): the rule's last input.
        assert w.run("_test_pair", {"a": 7, "b": 3})["field"] == "b"
        assert w.run("_test_pair", {"a": 9, "b": 3})["ok"]
        # The slider steps through the allowed values: 4 positions, the default 12 at the last.
        html = w.render_static("_test_pair")
        assert 'data-values=\'[3, 6, 9, 12]\'' in html and 'max="3"' in html and 'value="3"' in html
        # JSON in and out carries the touched input too.
        assert json.loads(w.run_json("_test_pair", '{"a": "7"}', "a"))["field"] == "a"
        with pytest.raises(ValueError, match="B must divide A"):
            w.render_static("_test_pair", a="7")
    finally:
        w.REGISTRY.pop("_test_pair", None)


def test_a_constraints_message_names_the_field_it_stands_under():
    # Found by test_hostile's property (a helper's run): the parallelism widget's model/ep rule, blamed
    # on the model the reader changed, spoke only of ep. The message under a field names that field.
    r = w.run("parallelism", {"tp": 1, "pp": 1, "ep": 2}, "model")
    assert r["field"] == "model"
    assert r["message"] == "Model: Llama 3.1 70B is dense: it has no experts to spread, so ep must be 1, got 2."
    # Under ep (nothing touched, the rule's last input) the words already name it: no prefix.
    r = w.run("parallelism", {"tp": 1, "pp": 1, "ep": 2})
    assert r["field"] == "ep" and r["message"].startswith("Llama 3.1 70B is dense")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(inputs=("a",), ok=bool, messages={"a": str}), "two or more distinct inputs"),
        (dict(inputs=("a", "b"), ok=bool, messages={"a": str}), "one message per input"),
    ],
)
def test_bad_constraints_fail_at_declaration(kwargs, message):
    with pytest.raises(ValueError, match=message):
        w.Constraint(**kwargs)


def test_every_widget_says_what_to_try_and_what_to_notice():
    # Issue 13: every widget has a short "Try this" list from its declaration, like the sandbox's.
    for name in w.names():
        widget = w.get(name)
        assert widget.tries, f"widget {name!r} declares no tries=[(what to try, what to notice), ...]"
        html = w.render_static(name)
        assert 'class="descent-widget__tries"' in html and ">Try this<" in html
        for a, b in widget.tries:
            assert html.count(w._attr(a)) >= 1 and w._attr(b) in html


def test_cut_is_only_for_text_and_says_so():
    with pytest.raises(ValueError, match="cut=True is for text"):
        Input(P.CONTEXT, "range", cut=True)
    text = Input(Param("t", "Text", "text", "x", max_length=5), "text", cut=True)
    assert text.coerce("abcdefgh") == "abcde"
    assert text.cut_note("abcdefgh") == "Text: only the first 5 of its 8 characters are used here; the rest is left out."
    assert text.cut_note("abc") == ""
    strict = Input(Param("t", "Text", "text", "x", max_length=5), "text")
    with pytest.raises(FieldError, match="at most 5 characters"):
        strict.coerce("abcdefgh")


def test_every_offered_choice_computes_or_names_a_field():
    """A select never offers a value its widget cannot take: with the other inputs at their
    defaults, each choice gives a result or a message that names a field (an input the reader can
    change), never an internal error with no field. (Found by a reader: "As released" was offered
    by seven widgets that need one precision for every weight, and each said "unknown weight
    precision 'released'".)"""
    bad = []
    for name in w.names():
        for inp in w.get(name).inputs:
            if inp.kind != "select" or not callable(inp.param.choices):
                continue
            for value, _label in inp.param.choices():
                out = json.loads(w.run_json(name, json.dumps({inp.param.name: value}), inp.param.name))
                if not out.get("ok") and not out.get("field"):
                    bad.append(f"{name}: {inp.param.name}={value}: {out.get('message', '')[:100]}")
    assert not bad, "\n".join(bad)


def test_no_text_box_cuts_silently():
    # Issue 24: the config.json box cut at 50,000 characters and Part 0's prompt boxes at 1,000
    # through the textarea's maxlength, without a word. No text box has one; a longer text gets a
    # message that says what the limit is (or, with cut=, a note saying what was left out).
    for name in w.names():
        widget = w.get(name)
        texts = [i for i in widget.inputs if i.kind == "text"]
        if not texts:
            continue
        html = w.render_static(name)
        for chunk in html.split("<textarea")[1:]:
            assert "maxlength" not in chunk.split(">", 1)[0], name
        for inp in texts:
            shown = dict([inp.when]) if inp.when is not None else {}
            out = w.run(name, {**shown, inp.name: "a" * (inp.max_length + 1)})
            if inp.cut:
                assert out["ok"] and "only the first" in out["html"], (name, out)
            else:
                assert out["ok"] is False and out["field"] == inp.name, (name, out)
                assert f"at most {format_int(inp.max_length)} characters" in out["message"], out
