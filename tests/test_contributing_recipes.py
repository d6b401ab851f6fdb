"""The contributing page's recipes, executed step by step from the page's own code blocks.

docs/contributing.md has four recipes: add a model, a chip, a number, a widget. Each test here takes
the recipe's code blocks from its section of the page (so the page and the test cannot drift) and
does what the page says, against a copy of the catalog (``descent.catalog.read_file`` pointed at
a temporary directory) and with every registration undone afterwards.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from descent import catalog, cli, hfconfig, weights

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "contributing.md"
CONFIGS = ROOT / "tests" / "data" / "configs"
CATALOG_FILES = ("models.toml", "accelerators.toml", "released.toml", "links.toml", "measurements.toml")


def _section(title: str) -> str:
    """The text of the page's ``## title`` section, up to the next one."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def _blocks(title: str, lang: str) -> list[str]:
    """The ``lang`` code blocks of section ``title``, in order, dedented (they sit in list items)."""
    fence = re.compile(rf"^(?P<indent> *)```{lang}\n(?P<body>.*?)^(?P=indent)```", re.M | re.S)
    return [textwrap.dedent(m["body"]) for m in fence.finditer(_section(title))]


def _clear_caches() -> None:
    from descent import predict
    from descent.catalog import measurements

    catalog.models.cache_clear()
    catalog.accelerators.cache_clear()
    catalog.links.cache_clear()
    measurements.measurements.cache_clear()
    predict.predictions.cache_clear()
    predict._record.cache_clear()
    weights._released_table.cache_clear()


@pytest.fixture
def catalog_copy(tmp_path, monkeypatch):
    """A copy of the catalog's files in a temporary directory, read in place of the package's."""
    for name in CATALOG_FILES:
        (tmp_path / name).write_text(catalog.read_file(name), encoding="utf-8")
    monkeypatch.setattr(catalog, "read_file", lambda name: (tmp_path / name).read_text(encoding="utf-8"))
    _clear_caches()
    yield tmp_path
    monkeypatch.undo()
    _clear_caches()


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + "\n" + text, encoding="utf-8")


def _descent(capsys, *argv: str) -> str:
    """Run the command line as the page shows it (``descent ...``); its output, or fail with its error."""
    capsys.readouterr()
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


def _command(title: str, index: int = 0) -> list[str]:
    """The ``index``-th shell command of section ``title``, as argv after ``descent``."""
    cmds = [line.split() for block in _blocks(title, "sh") for line in block.splitlines() if line.strip()]
    assert cmds[index][0] == "descent", cmds[index]
    return cmds[index][1:]


# -- Add a model ---------------------------------------------------------------------------------


def test_add_a_model(catalog_copy, capsys):
    row, released_row = _blocks("Add a model", "toml")
    # Step 1: the row, appended to models.toml, loads.
    _append(catalog_copy / "models.toml", row)
    _clear_caches()
    new = [i for i in catalog.models() if i not in catalog.load_models(
        (ROOT / "src" / "descent" / "catalog" / "models.toml").read_text(encoding="utf-8"))]
    assert len(new) == 1
    model_id = new[0]
    m = catalog.model(model_id)
    assert m.torch_dtype in catalog.TORCH_DTYPES and model_id not in weights._released_table()

    # Step 2: `descent size <id>` with the default flags answers, and says how the weights were sized
    # (the line the page shows, word for word).
    argv = _command("Add a model")
    assert argv == ["size", model_id]
    out = _descent(capsys, *argv)
    (note,) = _blocks("Add a model", "text")
    assert note.strip() in out.splitlines()
    label = hfconfig.DTYPES[m.torch_dtype].upper()
    assert f"({label}, its config.json dtype, all parameters)" in out
    assert weights.released_map(model_id).from_dtype

    # Step 3: a row in released.toml takes over, and the note goes.
    _append(catalog_copy / "released.toml", released_row)
    _clear_caches()
    out = _descent(capsys, *argv)
    assert "note " not in out and f"(as released: {label}, all parameters)" in out
    assert not weights.released_map(model_id).from_dtype

    # Step 4: the release's config.json (kept in tests/data/configs/other/ for this example) gives
    # the row, the architecture and the dtype both.
    sources = json.loads((CONFIGS / "sources.json").read_text(encoding="utf-8"))
    key = next(k for k, s in sources.items() if m.hf_repo in s["url"])
    config = (CONFIGS / f"{key}.json").read_text(encoding="utf-8")
    got = hfconfig.read_config(config)
    meta = {"id", "name", "hf_repo", "params_total_published", "params_active_published",
            "params_published_note", "sources", "released_by_group", "torch_dtype"}
    arch = [f for f in m.__dataclass_fields__ if f not in meta]
    assert {f: getattr(got, f) for f in arch} == {f: getattr(m, f) for f in arch}
    assert json.loads(config)["torch_dtype"] == m.torch_dtype
    assert weights.released_map(got).by_group == weights.released_map(model_id).by_group


def test_a_row_with_neither_dtype_nor_released_row_names_both(catalog_copy, capsys):
    row = _blocks("Add a model", "toml")[0]
    row = "\n".join(line for line in row.splitlines() if not line.startswith("torch_dtype"))
    _append(catalog_copy / "models.toml", row)
    _clear_caches()
    model_id = _command("Add a model")[1]
    assert cli.main(["size", model_id]) != 0
    err = capsys.readouterr().err
    assert "no 'as released' row in catalog/released.toml" in err and "torch_dtype" in err


def test_a_row_refuses_an_unknown_dtype(catalog_copy):
    row = _blocks("Add a model", "toml")[0].replace('torch_dtype = "bfloat16"', 'torch_dtype = "bf16"')
    with pytest.raises(catalog.CatalogError, match="field 'torch_dtype' must be one of bfloat16, float16"):
        catalog.load_models(catalog.read_file("models.toml") + "\n" + row)


# -- Add a chip ----------------------------------------------------------------------------------


def test_add_a_chip(catalog_copy, capsys):
    (row,) = _blocks("Add a chip", "toml")
    before = set(catalog.accelerators())
    _append(catalog_copy / "accelerators.toml", row)  # step 1
    _clear_caches()
    (chip_id,) = set(catalog.accelerators()) - before
    a = catalog.accelerator(chip_id)
    argv = _command("Add a chip")  # step 2
    assert argv[argv.index("-a") + 1] == chip_id
    out = _descent(capsys, *argv)
    assert f"{a.name} ({chip_id})" in out
    sizing = json.loads(_descent(capsys, *argv, "--json"))
    assert sizing["accelerator"] == chip_id and sizing["memory_bandwidth"] == a.memory_bandwidth


# -- Add a number --------------------------------------------------------------------------------


def test_add_a_number():
    from descent import quantities as Q

    code, use = _blocks("Add a number", "python")[0], _blocks("Add a number", "markdown")[0]
    before = set(Q.QUANTITIES)
    namespace: dict = {}
    exec(compile(code, "docs/contributing.md (Add a number)", "exec"), namespace)  # step 1
    (name,) = set(Q.QUANTITIES) - before
    try:
        q = Q.get(name)
        value = q()  # the site's running example
        assert 0 < value < 1
        # It is what its docstring says: KV bytes / (weights + KV).
        from descent.memory import size

        p = q.bind({}, parse=False)
        s = size(p["model"], p["accelerator"], p["weights"], p["kv"], p["context"], p["batch"])
        assert value == s.kv_cache_bytes / (s.weights_bytes + s.kv_cache_bytes)
        # A name taken is refused: running the recipe again fails.
        with pytest.raises(ValueError, match="declared twice"):
            exec(compile(code, "docs/contributing.md (Add a number)", "exec"), {})
        # Step 2: the page's shortcode names it, with arguments it takes, and prints.
        (sc,) = re.findall(r"<!-- descent:value (\S+)((?: \w+=\S+)*) -->", use)
        assert sc[0] == name
        args = dict(a.split("=", 1) for a in sc[1].split())
        assert set(args) <= {p.name for p in q.params}
        assert q.format(q(**{k: int(v) if v.isdigit() else v for k, v in args.items()})).endswith("%")
    finally:
        Q.QUANTITIES.pop(name, None)


# -- Add a widget --------------------------------------------------------------------------------


def test_add_a_widget():
    from descent import quantities as Q
    from descent import widgets as W

    code, use = _blocks("Add a widget", "python")[0], _blocks("Add a widget", "markdown")[0]
    W.names()  # every widget module imported, so the new name is the only difference
    before = set(W.REGISTRY)
    exec(compile(code, "docs/contributing.md (Add a widget)", "exec"), {})  # step 1
    (name,) = set(W.REGISTRY) - before
    try:
        w = W.get(name)
        assert w.tries
        # Each hint names the inputs it sets (or points at something): the recipe teaches the rule
        # tests/test_widget_tries.py holds every widget to, and its hint applies.
        assert all(d is not None or look is not None for d, look in zip(w.try_inputs, w.try_looks, strict=True))
        for d in filter(None, w.try_inputs):
            assert W.run(name, {k: str(x) for k, x in d.items()})["ok"]
        inputs = {"model": "llama-3.1-8b", "context": 32768}
        res = W.run(name, inputs)
        assert res["ok"], res
        # The labelled number is the quantity at the widget's inputs.
        (quantity,) = re.findall(r'data-quantity="([a-z0-9_]+)"', res["html"])
        q = Q.get(quantity)
        assert q.format(q(**inputs)) in res["html"]
        # Step 2: the page's shortcode places it; the build pre-renders its default result.
        (placed,) = re.findall(r"<!-- descent:widget (\S+) -->", use)
        assert placed == name
        static = W.render_static(placed)
        assert f'data-widget="{name}"' in static and q.format(q(model=w.defaults()["model"],
                                                                   context=w.defaults()["context"])) in static
    finally:
        W.REGISTRY.pop(name, None)
