"""catalog/measurements.toml and descent.predict: public measurements beside the step model's ceilings.

Expected values: each prediction is recomputed here from the row's own fields with descent.step
(not through descent.predict's helpers), the build machine's figures from its committed record, the
summaries and the leave-one-out count by brute force over the predictions.
"""

from __future__ import annotations

import re
import statistics

import pytest

from descent import catalog, custom, predict, recorded, step
from descent import params as P
from descent.catalog import CatalogError
from descent.catalog import measurements as M
from descent.scenario import Scenario

ROWS = M.measurements()
TEXT = catalog.read_file("measurements.toml")


def test_the_catalog_spans_what_the_issue_asks():
    """At least 40 rows; llama.cpp on consumer GPUs and on Apple Silicon; vLLM, SGLang and
    TensorRT-LLM on data-centre GPUs; the build machine's own SmolLM2 row."""
    assert len(ROWS) >= 40
    seen = {(M.chip_class(m.chip), m.engine) for m in ROWS.values()}
    assert {("consumer GPU", "llama.cpp"), ("Apple Silicon", "llama.cpp"), ("data-centre GPU", "vLLM"),
            ("data-centre GPU", "SGLang"), ("data-centre GPU", "TensorRT-LLM"), ("CPU", "NumPy (descent)")} <= seen
    own = [m for m in ROWS.values() if m.recorded]
    assert [(m.model, m.chip, m.recorded) for m in own] == [("smollm2-135m", M.BUILD_MACHINE, "decode")]


@pytest.mark.parametrize("row_id", sorted(ROWS))
def test_every_row_is_sourced_and_resolves(row_id):
    """A non-empty https source, a date, a verbatim quote holding the figure, a configuration the step
    model takes (a catalog model and chip, a weights choice, a split that multiplies to the chips)."""
    m = ROWS[row_id]
    p = predict.predict(m)
    assert p.source.strip() and p.date.strip() and p.quote.strip()
    if not m.recorded:
        assert m.source.startswith("https://")
        assert re.fullmatch(r"\d{4}(-\d\d){0,2}", m.date)
        # the figure is in the quote as the source prints it (thousands separators aside)
        assert repr(m.value).removesuffix(".0") in m.quote.replace(",", ""), (m.value, m.quote)
    assert m.weights in dict(P.WEIGHTS.options())
    assert m.tp * m.pp * m.ep == m.chips
    assert p.fits, f"{row_id}: the configuration does not fit the chips' usable memory"
    assert p.bound in ("memory", "compute") and p.ceiling > 0 and p.share > 0


def _scenario(m, batch):
    """The row's configuration, built here from its fields (the middle context: prompt + output // 2)."""
    chip = m.chip if m.chip != M.BUILD_MACHINE else custom.accelerator(
        P.MEMORY_GB.default, recorded.measurement("stream").rate / 1e9, recorded.measurement("gemm").rate / 1e12)
    extra = {"link": m.link} if m.link else {}
    return Scenario(model=m.model, accelerator=chip, weights=m.weights, context=max(1, m.prompt_tokens + m.output_tokens // 2),
                    batch=batch, prompt_tokens=max(1, m.prompt_tokens), tp=m.tp, pp=m.pp, ep=m.ep, **extra)


@pytest.mark.parametrize("row_id", sorted(ROWS))
def test_each_prediction_is_the_step_models(row_id):
    m = ROWS[row_id]
    p = predict.predict(m)
    sc = _scenario(m, p.batch)
    if m.what == "decode_tokens_per_s":
        c = step.cost(sc, decode_contexts=[sc.context] * p.batch)
        assert p.ceiling == pytest.approx(1 / c.seconds, rel=1e-12)
        assert p.bound == c.bound
    elif m.what == "prefill_tokens_per_s":
        c = step.prefill(sc, m.prompt_tokens)
        assert p.ceiling == pytest.approx(m.prompt_tokens / c.seconds, rel=1e-12)
        assert p.bound == c.bound
    else:
        assert m.what == "output_tokens_per_s"
        d = step.cost(sc, decode_contexts=[sc.context] * p.batch)
        pre = step.cost(sc, prefill_spans=[(0, m.prompt_tokens)] * p.batch)
        want = p.batch * m.output_tokens / (pre.seconds + m.output_tokens * d.seconds)
        assert p.ceiling == pytest.approx(want, rel=1e-12)
        assert p.bound == (pre.bound if pre.seconds > m.output_tokens * d.seconds else d.bound)
    assert p.share == pytest.approx(p.measured / p.ceiling, rel=1e-12)  # every row here is a speed
    if m.batch == 0:  # maximum load: the largest batch that fits at the middle context
        assert step.footprint(sc).fits and not step.footprint(sc.but(batch=p.batch + 1)).fits
    else:
        assert p.batch == m.batch


def test_the_build_machine_row_reads_its_record():
    """Measured: the recorded decode step's rate (1 token / its median seconds); the chip: the
    recorded streaming bandwidth and matrix-product rate; date and source: the record's."""
    p = predict.predict("descent-build-machine-smollm2-decode")
    rec = recorded.measurement("decode")
    assert p.measured == pytest.approx(1 / rec.value, rel=1e-12)
    assert p.date == rec.date == recorded.machine_record()["date"]
    assert "build_machine.json" in p.source and p.quote == rec.what
    chip = predict.build_machine_chip()
    stream = recorded.measurement("stream")
    assert chip.memory_bandwidth == pytest.approx(stream.work / stream.value, rel=1e-12)
    gemm = recorded.measurement("gemm")
    assert chip.bf16_flops == pytest.approx(gemm.work / gemm.value, rel=1e-12)


def test_summaries_are_computed_from_the_rows():
    rows = predict.predictions()
    shares = [p.share for p in rows]
    s = predict.spread(rows)
    assert (s.count, s.median, s.low, s.high) == (len(rows), statistics.median(shares), min(shares), max(shares))
    apple = predict.group("apple-silicon")
    assert apple and all(catalog.accelerator(p.row.chip).kind == "soc" for p in apple)
    assert len(apple) == sum(catalog.accelerators()[m.chip].kind == "soc" for m in ROWS.values() if m.chip in catalog.accelerators())
    assert {p.bound for p in predict.group("memory")} == {"memory"}
    with pytest.raises(ValueError, match="group must be one of all, llama.cpp"):
        predict.group("nope")


def _loo_by_hand(rows):
    by = {}
    for p in rows:
        by.setdefault((p.chip_class, p.engine, p.bound), []).append(p.share)
    tested = inside = 0
    for shares in by.values():
        if len(shares) >= 3:
            for i, x in enumerate(shares):
                rest = shares[:i] + shares[i + 1:]
                tested += 1
                inside += min(rest) <= x <= max(rest)
    return tested, inside


def test_leave_one_out_is_computed_not_typed():
    rows = predict.predictions()
    cov = predict.leave_one_out(rows)
    assert (cov.tested, cov.inside) == _loo_by_hand(rows)
    assert 0 < cov.inside <= cov.tested < len(rows)  # classes of one or two cannot be tested
    from descent.quantities import get

    assert get("measured_loo_coverage")(group="all") == pytest.approx(cov.inside / cov.tested)
    with pytest.raises(ValueError, match="nothing can be left out"):
        _ = predict.leave_one_out(rows[:2]).share


def _with_extra_row(value: float) -> tuple:
    extra = TEXT + f"""
["extra-rtx-4090-tg512"]
what = "decode_tokens_per_s"
value = {value}
quote = "{value}"
model = "llama-3.1-8b"
weights = "q4_k_m"
engine = "llama.cpp"
chip = "rtx-4090"
batch = 1
prompt_tokens = 0
output_tokens = 512
date = "2026-01"
source = "https://example.org/extra"
"""
    rows = M.load_measurements(extra, "test.toml")
    return tuple(predict.predict(m) for m in rows.values())


def test_adding_a_row_changes_the_ranges():
    """The summaries and the class ranges follow the rows: a very slow extra llama.cpp row on a GeForce
    card lowers that class's lowest share and the overall one."""
    base = predict.predictions()
    more = _with_extra_row(1.0)
    assert len(more) == len(base) + 1
    cls = ("consumer GPU", "llama.cpp", "memory")
    assert predict.expected(*cls, rows=more).low < predict.expected(*cls, rows=base).low
    assert predict.expected(*cls, rows=more).count == predict.expected(*cls, rows=base).count + 1
    assert predict.spread(more).low < predict.spread(base).low
    assert predict.leave_one_out(more).tested == predict.leave_one_out(base).tested + 1
    assert predict.expected("CPU", "vLLM", "compute") is None  # no measurement covers it


# ---------------------------------------------------------------------------------------------
# Bad rows are refused, naming the file, the row and the field
# ---------------------------------------------------------------------------------------------

GOOD = """
["r"]
what = "decode_tokens_per_s"
value = 100.0
quote = "| 100.0 |"
model = "llama-3.1-8b"
weights = "q4_k_m"
engine = "llama.cpp"
chip = "rtx-4090"
batch = 1
prompt_tokens = 0
output_tokens = 128
date = "2024-05"
source = "https://example.org/table"
"""


def test_a_good_row_loads():
    assert M.load_measurements(GOOD, "t.toml")["r"].value == 100.0


@pytest.mark.parametrize(("change", "field", "says"), [
    (("date = \"2024-05\"", "date = \"May 2024\""), "date", "YYYY, YYYY-MM or YYYY-MM-DD"),
    (("date = \"2024-05\"\n", ""), "date", "is required"),
    (("source = \"https://example.org/table\"\n", ""), "source", "is required"),
    (("source = \"https://example.org/table\"", "source = \"a blog\""), "source", "https://"),
    (("quote = \"| 100.0 |\"\n", ""), "quote", "verbatim"),
    (("engine = \"llama.cpp\"", "engine = \"ollama\""), "engine", "llama.cpp, vLLM"),
    (("chip = \"rtx-4090\"", "chip = \"rtx-9090\""), "chip", "catalog accelerator id"),
    (("model = \"llama-3.1-8b\"", "model = \"llama-9\""), "model", "catalog model id"),
    (("what = \"decode_tokens_per_s\"", "what = \"speed\""), "what", "decode_tokens_per_s"),
    (("value = 100.0", "value = 1e9"), "value", "plausible range"),
    (("value = 100.0", "value = nan"), "value", "finite number"),
    (("value = 100.0", "value = \"fast\""), "value", "must be float"),
    (("value = 100.0\n", ""), "value", "or field 'recorded'"),
    (("value = 100.0", "value = 100.0\nrecorded = \"decode\""), "value", "not both"),
    (("batch = 1", "batch = 0"), "batch", "only for an output_tokens_per_s row"),
    (("batch = 1", "batch = -1"), "batch", "must not be negative"),
    (("batch = 1", "batch = 1\nchips = 2"), "tp", "must equal 'chips'"),
    (("output_tokens = 128", "output_tokens = 0"), "output_tokens", "at least 1"),
    (("batch = 1", "batch = 1\nspeed = 3"), "speed", "unknown field"),
    (("batch = 1", "batch = 1\nlink = \"wifi\""), "link", "catalog link id"),
])
def test_bad_rows_are_refused_naming_file_row_and_field(change, field, says):
    old, new = change
    assert old in GOOD
    with pytest.raises(CatalogError) as e:
        M.load_measurements(GOOD.replace(old, new), "bad.toml")
    msg = str(e.value)
    assert msg.startswith("bad.toml: [r]: ") and f"'{field}'" in msg and says in msg, msg
    assert "Traceback" not in msg and "Error" not in msg.split(":")[-1]


def test_recorded_rows_belong_to_the_build_machine_and_bad_toml_is_named():
    with pytest.raises(CatalogError, match=r"bad.toml: \[r\]: field 'recorded' is for the build machine only"):
        M.load_measurements(GOOD.replace("value = 100.0", "recorded = \"decode\""), "bad.toml")
    with pytest.raises(CatalogError, match="bad.toml: not valid TOML"):
        M.load_measurements("[r\nwhat = 1", "bad.toml")


def test_an_unknown_measurement_is_a_clear_error():
    from descent.quantities import get

    with pytest.raises(P.ParamError, match="Measurement must be one of: .*got 'nope'"):
        get("measured_share")(measurement="nope")
    with pytest.raises(ValueError, match="unknown measurement 'nope'"):
        predict.predict("nope")


# ---------------------------------------------------------------------------------------------
# The expected range beside the calculators' ceilings (the command line's: test_measurements_site.py)
# ---------------------------------------------------------------------------------------------


def test_the_expected_range_follows_the_rows():
    base = predict.expected_range(100.0, "rtx-4090", "memory")
    more = predict.expected_range(100.0, "rtx-4090", "memory", rows=_with_extra_row(1.0))
    assert more.measurements == base.measurements + 1 and more.low < base.low
    with pytest.raises(ValueError, match="bound must be one of memory, compute"):
        predict.expected_range(1.0, "h200", "network")
