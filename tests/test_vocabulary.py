"""One vocabulary: every shortcode argument, widget input and CLI flag resolves to one declared
parameter (descent.params), every quantity is a shortcode of the same name, numbers are printed by
one formatter (descent.units), and the layers import in one direction (site -> widgets -> core)."""

from __future__ import annotations

import argparse
import ast
import json
import re
from pathlib import Path

import pytest

import descent
from descent import cli, params, quantities
from descent import widgets as w
from descent.site import shortcodes
from descent.widgets import views

SRC = Path(descent.__file__).parent


def _cli_actions():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        for action in p._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            yield name, action


# -- every input resolves to one declaration ----------------------------------------------------


@pytest.mark.parametrize("kind", ["value", "table"])
def test_every_shortcode_argument_is_a_declared_parameter(kind):
    entries = shortcodes.registry(kind)
    assert entries
    for name, entry in entries.items():
        for arg in entry.args:
            params.check_derived(arg.param)  # raises naming what does not resolve or narrow
            assert arg.name == arg.param.name, (name, arg.name)


def test_every_widget_input_is_a_declared_parameter():
    for name in w.names():
        for inp in w.get(name).inputs:
            params.check_derived(inp.param)
            assert inp.default == inp.param.parse(inp.param.default), (name, inp.name)


def test_every_cli_flag_is_a_declared_parameter():
    seen = 0
    for command, action in _cli_actions():
        p = getattr(action, "param", None)
        assert p is not None, f"descent {command}: {action.option_strings or action.dest} is not from descent.params"
        params.check_derived(p)
        seen += 1
        if p.type == "bool":
            assert action.default is False
            continue
        assert action.required == p.required, (command, p.name)
        if not p.required:
            assert action.default == p.default, (command, p.name)
        # The flag parses exactly as the parameter does, with the parameter's message.
        bad = "nonsense-value" if p.type != "text" else None
        if bad is not None:
            with pytest.raises(argparse.ArgumentTypeError, match=re.escape(p.label)):
                action.type(bad)
    assert seen >= 15


def test_a_changed_limit_reaches_all_three(monkeypatch):
    # One declaration: the context limit a widget reports is the one the CLI and a shortcode report.
    widget_msg = w.run("size_it_yourself", {"context": "0"})["message"]
    with pytest.raises(shortcodes.ShortcodeError) as page_err:
        shortcodes.resolve("<!-- descent:value kv_cache_bytes context=0 -->", "p.md")
    assert widget_msg == "Context must be 1 to 20,000,000 tokens, got 0"
    assert "context must be a whole number from 1 to 20,000,000 tokens" in str(page_err.value)
    action = next(a for c, a in _cli_actions() if c == "size" and a.dest == "context")
    with pytest.raises(argparse.ArgumentTypeError, match="^Context must be 1 to 20,000,000 tokens, got 0$"):
        action.type("0")


def test_core_checks_use_the_declaration():
    from descent import step, transformer
    from descent.scenario import Scenario

    assert transformer.MAX_CONTEXT_TOKENS == params.CONTEXT.max == 20_000_000
    assert step.MAX_BATCH == params.BATCH.max == 100_000
    with pytest.raises(params.ParamError, match="Batch must be a whole number"):
        Scenario(batch=True)  # a bool is not a batch of 1


def test_derived_parameters_only_narrow():
    with pytest.raises(ValueError, match="outside its declaration"):
        params.check_derived(params.CONTEXT.but(max=40_000_000))
    with pytest.raises(ValueError, match="not in its declaration"):
        params.check_derived(params.KV.but(choices=[("fp9", "FP9")], default="fp9"))
    with pytest.raises(ValueError, match="does not resolve"):
        params.check_derived(params.Param("context", "Context", "int", 1, min=1, max=9))
    with pytest.raises(ValueError, match="declared twice"):
        params.declare(params.Param("context", "Context", "int", 1, min=1, max=9))


# -- quantities -------------------------------------------------------------------------------


def test_every_quantity_is_a_value_shortcode_with_its_parameters():
    values = shortcodes.registry("value")
    for name, q in quantities.QUANTITIES.items():
        assert name in values, name
        got = [a.param for a in values[name].args]
        assert got == [*q.params, *quantities.FORMAT_PARAMS[q.kind]], name


def test_cli_json_keys_are_parameters_or_quantities(capsys):
    assert cli.main(["size", "--json"]) == 0
    keys = set(json.loads(capsys.readouterr().out))
    # Not numbers with a unit: yes/no answers, labels, the per-group breakdown and the expected range
    # beside the decode ceiling (low, median, high and how many measurements: descent.predict).
    loose = keys - {p.name for p in params.REGISTRY.values()} - set(quantities.QUANTITIES) - {
        "fits", "beyond_max_context", "bound", "compute_precision", "weights_bytes_by_group",
        "decode_tokens_per_s_expected"}
    assert not loose, f"CLI JSON keys that name no parameter or quantity: {sorted(loose)}"
    assert {"decode_tokens_per_s", "weights_bytes", "kv_cache_bytes", "need_bytes"} <= keys


def test_widget_outputs_name_real_quantities():
    named = set()
    for name in w.names():
        html = w.render_static(name)
        named |= set(re.findall(r'data-quantity="([^"]+)"', html))
    assert named, "no widget labels its numbers with a quantity"
    assert named <= set(quantities.QUANTITIES), named - set(quantities.QUANTITIES)


def test_quantity_values_by_hand():
    # Llama 3.1 70B, FP8: 68,451,041,280 weights x 1 byte, the embedding, head and norms (2,102,665,216)
    # x 2 bytes, as NVIDIA's FP8 checkpoints keep them (test_weights); BF16 KV: 80 x 8 x 128 x 2 x 2 = 327,680 B.
    assert quantities.get("weights_bytes")() == 68_451_041_280 + 2 * 2_102_665_216 == 72_656_371_712
    assert quantities.get("kv_bytes_per_token")(model="llama-3.1-70b", kv="bf16") == 327_680
    with pytest.raises(params.ParamError, match="Context must be a whole number"):
        quantities.get("kv_cache_bytes")(context="8192")  # a program passes an int, not text
    with pytest.raises(params.ParamError, match="takes model, accelerator"):
        quantities.get("kv_cache_bytes")(tokens=1)


# -- one formatter ------------------------------------------------------------------------------

#: A number formatted with a format spec (thousands separators, fixed decimals, percent, exponent).
_NUMBER_SPEC = re.compile(r"\{[^{}]+:(,|[<>^]?[0-9]*,?\.[0-9]+[fge%]|,\.[0-9]+[fge]|\.0%)\}")


def test_numbers_are_formatted_only_by_descent_units():
    offenders = []
    for f in SRC.rglob("*.py"):
        if f.name == "units.py":
            continue
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if "style=" in line:  # CSS widths in percent are layout, not numbers for a reader
                continue
            if _NUMBER_SPEC.search(line) or ".replace(' ', '" in line or '.replace(" ", "' in line:
                offenders.append(f"{f.relative_to(SRC)}:{i}: {line.strip()}")
    assert not offenders, "format numbers with descent.units:\n" + "\n".join(offenders)


def test_one_bool_rule():
    # "a bool is not an int" is written once, in descent.checks.
    offenders = []
    pat = re.compile(r"isinstance\((\w[\w.]*), bool\)\s+or\s+not\s+isinstance\(\1, \(?int"
                     r"|isinstance\((\w[\w.]*), \(?int[^)]*\)?\)\s+and\s+not\s+isinstance\(\2, bool\)")
    for f in SRC.rglob("*.py"):
        if f.name != "checks.py":
            offenders += [f"{f.relative_to(SRC)}:{i}" for i, line in enumerate(f.read_text().splitlines(), 1)
                          if pat.search(line)]
    assert not offenders, offenders


# -- direction: site -> widgets -> core ---------------------------------------------------------


def _imports(f: Path) -> set[str]:
    tree = ast.parse(f.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def test_layers_import_in_one_direction():
    problems = []
    for f in SRC.rglob("*.py"):
        rel = f.relative_to(SRC).as_posix()
        mods = {m for m in _imports(f) if m.startswith("descent.")}
        if rel.startswith("site/"):
            # A page module may use the widget runtime's API (descent.widgets), never a widget module.
            problems += [f"{rel} imports {m}" for m in mods if m.startswith("descent.widgets.")
                         and m.split(".")[2] not in ("render_static", "names", "get", "run")]
        elif rel.startswith("widgets/"):
            problems += [f"{rel} imports {m}" for m in mods if m.startswith(("descent.site", "descent.trace"))]
        elif not rel.startswith(("trace/", "cli/")) and rel not in ("formulas.py", "plotting.py"):
            problems += [f"{rel} imports {m}" for m in mods
                         if m.startswith(("descent.site", "descent.widgets", "descent.trace", "descent.formulas"))]
    assert not problems, problems


def test_no_silent_fallbacks():
    # A module that is missing or renamed must fail loudly, not be skipped: plain imports only. An
    # ImportError handler is allowed only when it raises again (with a message saying what to install).
    offenders = []
    for f in SRC.rglob("*.py"):
        text = f.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                names = {n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)}
                if names & {"ImportError", "ModuleNotFoundError"} and not any(
                    isinstance(n, (ast.Raise, ast.Return)) for n in ast.walk(node)
                ):
                    offenders.append(f"{f.relative_to(SRC)}:{node.lineno}")
        for pat in ("find_spec(\"descent", "not in the package yet", "not landed"):
            if pat in text:
                offenders.append(f"{f.relative_to(SRC)}: {pat}")
    assert not offenders, offenders


def test_stat_quantity_is_escaped_safely():
    with pytest.raises(ValueError, match="quantity must be a quantity name"):
        views.render(views.stat("x", 1, quantity='a" onclick="b'))


# ---------------------------------------------------------------------------------------------
# One question, one answer (issue 22): the layout by subject, and no arithmetic in the site layer
# ---------------------------------------------------------------------------------------------

_NUM_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
#: Calls whose result is text: an operator with one of them on a side joins strings, it computes nothing.
_TEXT_CALLS = ("format_", "fmt_", "md_", "_md", "_show", "_text", "_code", "_cell")


def _is_text(n: ast.AST) -> bool:
    if isinstance(n, ast.Constant) and isinstance(n.value, str) or isinstance(n, ast.JoinedStr):
        return True
    if isinstance(n, ast.BinOp):
        return _is_text(n.left) or _is_text(n.right)
    if isinstance(n, ast.IfExp):  # ("..." if x else "..."): text either way
        return _is_text(n.body) or _is_text(n.orelse)
    if isinstance(n, ast.Call):
        f = n.func
        name = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else "")
        return name.startswith(_TEXT_CALLS) or name in ("str", "join", "replace", "visible_whitespace", "strip", "upper")
    return False


def _site_arithmetic() -> set[str]:
    """``module.function`` of every function in site/values that applies + - * / // % ** to numbers."""
    found: set[str] = set()
    for path in sorted((SRC / "site" / "values").glob("*.py")):
        todo = [(ast.parse(path.read_text(encoding="utf-8")), "<module>")]
        while todo:
            node, where = todo.pop()
            for child in ast.iter_child_nodes(node):
                w = child.name if isinstance(child, ast.FunctionDef) and where == "<module>" else where
                if isinstance(child, ast.BinOp) and isinstance(child.op, _NUM_OPS) and not _is_text(child):
                    found.add(f"{path.stem}.{w}")
                todo.append((child, w))
    return found


#: Site functions that still compute (or join text the check cannot tell from arithmetic): none since
#: issue 22's last twelve moved to the core and the build's trace modules. A new entry fails: register
#: a quantity (descent.quantities) or return the value ready from the module that owns it.
SITE_ARITHMETIC_LEFT: set[str] = set()


def test_the_site_computes_nothing_new():
    """No arithmetic in src/descent/site/values beyond the shrinking list above (issue 22)."""
    got = _site_arithmetic()
    assert got <= SITE_ARITHMETIC_LEFT, f"arithmetic in the site layer: {sorted(got - SITE_ARITHMETIC_LEFT)}; " \
        "register a quantity (descent.quantities) and name it in the page"
    assert not SITE_ARITHMETIC_LEFT - got, f"no longer computing, drop from the list: {sorted(SITE_ARITHMETIC_LEFT - got)}"


def test_packages_by_subject_not_by_page():
    """No quantities_part4 or values_part01 beside values_part1: modules are named by subject."""
    part = re.compile(r"_part\d|part\d+_?\.py$")
    for sub in ("quantities", "site"):
        names = [p.relative_to(SRC).as_posix() for p in (SRC / sub).rglob("*.py")]
        assert not [n for n in names if part.search(n)], names
    assert not list(SRC.glob("quantities_part*.py")) and not (SRC / "quantities.py").exists()


def test_registries_import_no_subject_module():
    """The quantity registry imports no subject module, and no subject module imports the package
    ``__init__`` (which imports them all): the registry and its entries form no circle."""
    def imports(path: Path) -> set[str]:
        out = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                out |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                out |= {a.name for a in node.names}
        return out
    assert not {m for m in imports(SRC / "quantities" / "registry.py") if m.startswith("descent.quantities")}
    for pkg in ("quantities", "site/values"):
        dotted = "descent." + pkg.replace("/", ".")
        for path in (SRC / pkg).glob("*.py"):
            if path.name != "__init__.py":
                bad = {m for m in imports(path) if m == dotted}
                assert not bad, f"{path.name} imports {dotted} (its package's __init__)"
