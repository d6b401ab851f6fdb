"""A calculator's number opens its derivation at the reader's inputs (issue 26, Explain; Export).

``descent.widgets.explain_json`` is what the widget worker runs when a reader opens a widget's number:
the same :func:`descent.derivation.derive` the page's closing section uses, over the formula table
the build writes from the sympy expressions (``descent.site.explain.formula_table``). Expected
values are the quantities at the widget's inputs (``descent.quantities``, computed here) and the
catalog's own numbers (the H100's bandwidth, Llama 3.1 8B's config.json shapes). The "Copy as JSON"
data of the sizing, the dials and the price widget is checked against the command line's ``--json``.
"""

from __future__ import annotations

import json
import math

import pytest

from descent import catalog, derivation, widgets
from descent import quantities as Q
from descent.site import explain


@pytest.fixture(scope="module")
def table() -> str:
    return json.dumps(explain.formula_table())


def _explain(widget: str, inputs: dict, quantity: str, table: str) -> dict:
    return json.loads(widgets.explain_json(widget, json.dumps(inputs), quantity, table))


def test_the_table_evaluates_like_the_sympy_formula():
    """Each entry's Python text (sympy's pycode, run in the browser) equals the sympy expression."""
    from descent import formulas

    values = {"L": 80, "K": 8, "d_head": 128, "T": 8192, "B": 4, "b": 2, "F_peak": 989e12, "BW": 4.8e12,
              "S_step": 7.2e10, "N": 8_030_261_248, "bits": 4.5, "g": 3.0, "R": 1234.5, "p": 0.6, "alpha": 0.7,
              "k": 5, "c": 0.1, "m": 3}
    for fname, entry in explain.formula_table().items():
        f = formulas.formula(fname)
        given = {s.symbol.name: values[s.symbol.name] for s in f.symbols}
        if fname == "pipeline_bubble":
            given["p"] = 4
        assert math.isclose(derivation.evaluate(entry, given), f.evaluate(**given), rel_tol=1e-12), fname
        assert all(derivation.SLOT.format(n) in entry["template"] for n in entry["args"]), fname


def test_a_widget_number_is_derived_at_the_widgets_inputs(table):
    inputs = {"model": "llama-3.1-8b", "accelerator": "h100-sxm", "weights": "fp8", "context": "4096"}
    r = _explain("size_it_yourself", inputs, "decode_tokens_per_s", table)
    assert r["ok"], r
    want = Q.get("decode_tokens_per_s")(model="llama-3.1-8b", accelerator="h100-sxm", weights="fp8", kv="bf16",
                                         context=4096, batch=1)
    assert r["formula"] == "decode_tokens_per_s" and math.isclose(r["value"], want, rel_tol=1e-9)
    # The substituted formula reads the H100's datasheet bandwidth (3.35 TB/s: 3,350,000,000,000 B/s).
    bw = catalog.accelerator("h100-sxm").memory_bandwidth
    assert derivation.number_tex(bw) in r["tex"][1]
    assert 'data-slot="1"' in r["html"] and "descent value decode_tokens_per_s" in r["html"]
    assert "--accelerator h100-sxm" in r["html"] and "--context 4096" in r["html"]
    assert 'href="https://' in r["html"]  # the chip's datasheet and the model's config.json
    # The page's entry and the widget's dialog are one derivation: the same LaTeX at the same inputs.
    q_inputs = Q.get("decode_tokens_per_s").bind({"model": "llama-3.1-8b", "accelerator": "h100-sxm",
                                                   "weights": "fp8", "context": 4096}, parse=False)
    assert explain.derivation("decode_tokens_per_s", q_inputs).substituted == r["tex"][1]


def test_kv_per_token_substitutes_the_config_shapes(table):
    r = _explain("size_it_yourself", {"model": "llama-3.1-8b"}, "kv_bytes_per_token", table)
    m = catalog.model("llama-3.1-8b")  # config.json: 32 layers, 8 KV heads of 128
    # One token of one sequence (T = B = 1), in BF16 (b = 2 bytes): 2 x 32 x 8 x 128 x 2 = 131,072 bytes.
    assert r["ok"] and r["tex"][1] == (rf"M_{{\text{{KV}}}} = 2 \cdot {m.num_layers} \cdot {m.num_kv_heads} \cdot "
                                       rf"{m.head_dim} \cdot 1 \cdot 1 \cdot 2 = 131{{,}}072\ \text{{bytes}}")
    assert r["value"] == Q.get("kv_bytes_per_token")(model="llama-3.1-8b") == 131_072


def test_a_number_without_a_formula_still_says_where_it_comes_from(table):
    r = _explain("server_dials", {"tp": "4"}, "tokens_per_s_per_user", table)
    assert r["ok"] and r["tex"] == [] and r["formula"] == ""
    assert r["value"] == Q.get("tokens_per_s_per_user")(model="llama-3.1-70b", accelerator="h100-sxm", weights="fp8",
                                                        tp=4)
    assert "No one-line formula" in r["html"] and "<strong>Assumptions.</strong>" in r["html"]


@pytest.mark.parametrize("inputs, says", [
    ({"model": "custom"}, "derivation covers the catalog"),
    ({"context": "0"}, "Context must be 1 to 20,000,000 tokens"),
])
def test_inputs_a_derivation_cannot_take_get_a_sentence(table, inputs, says):
    r = _explain("size_it_yourself", inputs, "decode_tokens_per_s", table)
    assert not r["ok"] and says in r["message"]


# -- Export: "Copy as JSON" holds the command line's keys --------------------------------------------

def _export(html: str) -> dict:
    import html as h
    import re

    return json.loads(h.unescape(re.search(r'data-export="([^"]*)"', html)[1]))


def _cli_json(capsys, *argv) -> dict:
    from descent import cli

    assert cli.main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_the_sizing_exports_what_descent_size_json_prints(capsys):
    data = _export(widgets.run("size_it_yourself", {"weights": "fp8"})["html"])
    want = _cli_json(capsys, "size", "--weights", "fp8", "--json")
    assert {k: want[k] for k in data} == data and set(want) - set(data) == {"decode_tokens_per_s_expected"}


def test_the_dials_export_what_descent_dials_json_prints(capsys):
    data = _export(widgets.run("server_dials", {"tp": "4", "batch": "8"})["html"])
    want = _cli_json(capsys, "dials", "--weights", "fp8", "--tp", "4", "--batch", "8", "--json")
    assert data == {k: v for k, v in want.items() if not k.endswith("_expected")}


def test_the_price_widget_exports_each_batch_under_descent_cost_keys(capsys):
    data = _export(widgets.run("price_it_out", {})["html"])
    row = data["rows"][2]
    want = _cli_json(capsys, "cost", "--weights", "fp8", "--batch", str(row["batch"]), "--json")
    assert {k: want[k] for k in row} == row
    assert data["max_batch"] == want["max_batch"] == data["rows"][-1]["batch"]


def test_an_export_is_hidden_strict_json():
    """views.export: no text on the page; an infinite peak (a chip typed without TFLOPS) is null."""
    from descent.widgets import views

    out = views.render(views.export({"peak_flops": float("inf"), "rows": [{"x": float("nan")}], "a": "<b>"}))
    assert out.startswith('<div class="descent-export" hidden data-export="')
    assert _export(out) == {"peak_flops": None, "rows": [{"x": None}], "a": "<b>"}
