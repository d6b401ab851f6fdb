"""catalog/measurements.toml and descent.predict: public measurements beside the step model's ceilings.

Expected values: each prediction is recomputed here from the row's own fields with descent.step
(not through descent.predict's helpers), the build machine's figures from its committed record, the
summaries and the leave-one-out count by brute force over the predictions.
"""

from __future__ import annotations

import json
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
    TensorRT-LLM on data-centre GPUs; times to first token and between tokens; the build machine's
    own SmolLM2 row."""
    assert len(ROWS) >= 40
    seen = {(M.chip_class(m.chip), m.engine) for m in ROWS.values()}
    assert {("consumer GPU", "llama.cpp"), ("Apple Silicon", "llama.cpp"), ("data-centre GPU", "vLLM"),
            ("data-centre GPU", "SGLang"), ("data-centre GPU", "TensorRT-LLM"), ("CPU", "NumPy (descent)")} <= seen
    assert {"ttft_s", "itl_s"} <= {m.what for m in ROWS.values()}
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
        # the figure is in the quote as the source prints it (thousands separators aside; a time in
        # seconds or in milliseconds, as benchmark tables print TTFT and ITL)
        printed = {repr(m.value).removesuffix(".0")}
        if m.is_time:
            printed.add(repr(round(m.value * 1000, 9)).removesuffix(".0"))
        assert any(f in m.quote.replace(",", "") for f in printed), (m.value, m.quote)
    assert m.weights in dict(P.WEIGHTS.options())
    assert m.tp * m.pp * m.ep == m.chips
    assert p.fits, f"{row_id}: the configuration does not fit the chips' usable memory"
    assert p.bound in ("memory", "compute") and p.ceiling > 0 and p.share > 0


def _scenario(m, batch):
    """The row's configuration, built here from its fields (the middle context: prompt + output // 2)."""
    chip = m.chip if m.chip != M.BUILD_MACHINE else custom.accelerator(
        P.MEMORY_GB.default, recorded.measurement("stream").rate / 1e9, recorded.measurement("gemm").rate / 1e12)
    extra = {"link": m.link} if m.link else {}
    # the stated KV precision, else the engine's default: F16 for llama.cpp (-ctk/-ctv), BF16 otherwise
    kv = m.kv or ("fp16" if m.engine == "llama.cpp" else "bf16")
    return Scenario(model=m.model, accelerator=chip, weights=m.weights, kv=kv, context=max(1, m.prompt_tokens + m.output_tokens // 2),
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
    elif m.what == "itl_s":  # the time between tokens is one decode step of the batch
        c = step.cost(sc, decode_contexts=[sc.context] * p.batch)
        assert p.ceiling == pytest.approx(c.seconds, rel=1e-12)
        assert p.bound == c.bound
    elif m.what == "ttft_s":  # the first token waits for the prompt's one pass
        c = step.prefill(sc, m.prompt_tokens)
        assert p.ceiling == pytest.approx(c.seconds, rel=1e-12)
        assert p.bound == c.bound
    else:
        assert m.what == "output_tokens_per_s"
        d = step.cost(sc, decode_contexts=[sc.context] * p.batch)
        pre = step.cost(sc, prefill_spans=[(0, m.prompt_tokens)] * p.batch)
        want = p.batch * m.output_tokens / (pre.seconds + m.output_tokens * d.seconds)
        assert p.ceiling == pytest.approx(want, rel=1e-12)
        assert p.bound == (pre.bound if pre.seconds > m.output_tokens * d.seconds else d.bound)
    # a speed's share is measured over ceiling; a time's is the ceiling's time over the measured one
    want_share = p.ceiling / p.measured if m.is_time else p.measured / p.ceiling
    assert p.share == pytest.approx(want_share, rel=1e-12)
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


def test_the_kv_cache_precision_is_the_sources_or_the_engines_default():
    """Each row's KV cache: the precision its source states (``kv`` with ``kv_source``), else the engine's
    default. The build machine's forward pass keeps keys and values in float32 (descent.trace.forward.
    KVCache's docstring). TensorRT-LLM keeps the checkpoint's setting (KvCacheConfig dtype 'auto'), and
    NVIDIA's ModelOpt checkpoints record an FP8 cache (hf_ptq.py's --kv_cache_qformat default 'fp8',
    hf_quant_config.json's kv_cache_quant_algo 'FP8'; TensorRT-LLM issue 6294's log: 52.51 GiB for
    860,320 tokens, one byte per element): all 17 of its rows state FP8. Where a source is silent:
    llama.cpp's default is F16 (-ctk/-ctv 'default: f16', its server README), vLLM's and SGLang's the
    model's own dtype (BF16 here), any other engine's BF16; the page says "assumed"."""
    from descent.site.values import measured

    own = ROWS["descent-build-machine-smollm2-decode"]
    assert own.kv == own.kv_precision == "fp32" and "KVCache" in own.kv_source
    assert predict.scenario_for(own).kv == "fp32"
    trt = [m for m in ROWS.values() if m.engine == "TensorRT-LLM"]
    assert len(trt) == 17
    for m in trt:
        assert m.kv == m.kv_precision == predict.scenario_for(m).kv == "fp8", m.id
        for cited in ("hf_ptq.py", "kv_cache_quant_algo", "issues/6294", 'dtype="auto"', "860320"):
            assert cited in m.kv_source, (m.id, cited)
        assert "assumes BF16" not in m.notes and "KV-cache precision: FP8" in m.notes, m.id
        assert measured._kv(m) == "KV cache FP8 (as the source states)"
    assert M.ENGINE_KV_DEFAULT == {"llama.cpp": "fp16", "vLLM": "bf16", "SGLang": "bf16"}
    silent = [m for m in ROWS.values() if not m.kv_stated]
    assert {m.engine for m in silent} == {"llama.cpp", "vLLM", "SGLang", "NVIDIA NIM"}
    for m in silent:
        want = "fp16" if m.engine == "llama.cpp" else "bf16"
        assert m.kv_precision == predict.scenario_for(m).kv == want, m.id
        label = "FP16" if m.engine == "llama.cpp" else "BF16"
        assert measured._kv(m) == f"KV cache {label} (assumed: the engine's default; the source does not say)"
        if m.engine in ("NVIDIA NIM", "vLLM"):
            assert "KV-cache precision: the" in m.notes and "does not state it" in m.notes, m.id
    # FP16 and BF16 are both 16 bits: the engine's default changes the label, not the bytes.
    from descent import numerics

    assert numerics.kv_precision("fp16").bits_per_weight == numerics.kv_precision("bf16").bits_per_weight == 16


def test_an_fp8_kv_cache_doubles_the_batch_that_fits():
    """trtllm-h200-llama31-8b-fp8-20000-2000, the highest share when its cache was assumed BF16 (128%),
    with the FP8 cache its checkpoint sets: Llama 3.1 8B holds 32 layers x 8 KV heads x 128 x 2 (K, V)
    = 65,536 elements per token (config.json), 2 bytes each in BF16 and 1 in FP8; at the middle context
    20,000 + 2,000 / 2 = 21,000 tokens a sequence holds 2,752,512,000 or 1,376,256,000 bytes. The batch
    is the usable memory left after the weights over that, rounded down: 46 in BF16, 92 in FP8. The
    shares (the inference review's figures): 1.285 with a BF16 cache, 0.735 with FP8; and for
    trtllm-h100-llama31-8b-fp8-128-2048, 1.155 and 0.583. No row passes 100% now."""
    import dataclasses

    from descent import weights

    m = ROWS["trtllm-h200-llama31-8b-fp8-20000-2000"]
    fp8, bf16 = predict.predict(m), predict.predict(dataclasses.replace(m, kv="bf16", kv_source="a test"))
    room = Scenario(model=m.model, accelerator=m.chip).usable_bytes - weights.total_bytes(m.model, "fp8")
    assert bf16.batch == int(room // (65_536 * 2 * 21_000)) == 46
    assert fp8.batch == int(room // (65_536 * 1 * 21_000)) == 92  # twice 46, give or take the rounding down
    assert bf16.share == pytest.approx(1.285, abs=5e-4) and fp8.share == pytest.approx(0.735, abs=5e-4)
    h100 = ROWS["trtllm-h100-llama31-8b-fp8-128-2048"]
    h100_bf16 = predict.predict(dataclasses.replace(h100, kv="bf16", kv_source="a test"))
    assert h100_bf16.share == pytest.approx(1.155, abs=5e-4)
    assert predict.predict(h100).share == pytest.approx(0.583, abs=5e-4)
    assert max(p.share for p in predict.predictions()) < 1


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


def _loo_by_hand(rows, pooled=False):
    """(tested, inside) by hand: each share of a class of three or more against the others' span.
    A class is chip class x engine x bound; ``pooled``: chip class x bound, a share above 1 as 1
    (the calculators' range, predict.expected_range)."""
    by = {}
    for p in rows:
        if pooled:
            by.setdefault((p.chip_class, p.bound), []).append(min(p.share, 1.0))
        else:
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


def test_pooled_leave_one_out_tests_the_range_the_calculators_print():
    # The calculators' range (predict.expected_range) pools every engine of a chip class at one bound
    # and counts a share above 1 as 1; its leave-one-out must group and clip the same way, by hand here
    # from the rows' shares (a by-engine test would validate a range no calculator shows).
    rows = predict.predictions()
    tested, inside = _loo_by_hand(rows, pooled=True)
    cov = predict.leave_one_out(rows, pooled=True)
    assert (cov.tested, cov.inside) == (tested, inside)
    # The pooled classes are the ones expected_range reads: a 4090 ceiling's memory-bound range
    # comes from exactly the consumer-GPU memory-bound shares tested here.
    consumer = [min(p.share, 1.0) for p in rows if (p.chip_class, p.bound) == ("consumer GPU", "memory")]
    e = predict.expected_range(1.0, "rtx-4090", "memory", rows=rows)
    assert (e.low, e.high, e.measurements) == (min(consumer), max(consumer), len(consumer))
    from descent.quantities import get

    assert get("measured_loo_coverage_pooled")(group="all") == pytest.approx(inside / tested)
    assert get("measured_loo_tested_pooled")(group="all") == tested


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
    (("batch = 1", "batch = 1\nkv = \"fp9\"\nkv_source = \"the README\""), "kv", "bf16"),
    (("batch = 1", "batch = 1\nkv = \"fp8\""), "kv_source", "is required with 'kv'"),
    (("batch = 1", "batch = 1\nkv_source = \"the README\""), "kv_source", "without 'kv'"),
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


# ---------------------------------------------------------------------------------------------
# The committed shares record, and the expected range in the calculators (widgets)
# ---------------------------------------------------------------------------------------------


def test_the_shares_record_is_current():
    """data/expected_shares.json is what the rows give now (else: python -m descent.predict). It keys
    itself to the catalog files, so a row added without rewriting it falls back to computing."""
    from importlib import resources

    committed = json.loads(resources.files("descent").joinpath("data", predict.SHARES_FILE).read_text(encoding="utf-8"))
    assert committed == json.loads(json.dumps(predict.shares_record())), "stale: run python -m descent.predict"
    assert committed["measurements"] == len(ROWS) == len(committed["points"])
    # the shares by class are the rows' (a share above 1 counted as 1), not a typed copy
    for c in committed["classes"]:
        want = sorted(min(p.share, 1.0) for p in predict.predictions()
                      if (p.chip_class, p.bound) == (c["chip_class"], c["bound"]))
        assert c["shares"] == pytest.approx(want, rel=1e-15)


def test_a_changed_catalog_is_not_read_from_the_stale_record(monkeypatch):
    predict._record.cache_clear()
    monkeypatch.setattr(predict, "_catalog_digest", lambda: "another catalog")
    try:
        assert predict._record() is None
        assert predict.class_shares() == predict.class_shares(predict.predictions())
    finally:
        predict._record.cache_clear()


def _shares(chip_class, bound):
    return [min(p.share, 1.0) for p in predict.predictions() if p.chip_class == chip_class and p.bound == bound]


def test_the_calculators_show_the_range_and_its_count_beside_the_ceiling(monkeypatch):
    """Size it yourself (H200 by default: data-centre GPU, memory-bound), the server dials (TTFT over a
    compute-bound prompt, per user memory-bound) and the price at the largest batch: each keeps its ceiling
    and adds "expected (from N public measurements)": the ceiling times (or, for a time or a price, over)
    the lowest and highest share of its class. The widgets read the committed record: the step model is
    not run over the rows again (predictions() made to fail)."""
    from widget_html import stat, text

    from descent import dials, economics, memory
    from descent import widgets as w
    from descent.units import format_number, format_time

    shares_mem, shares_comp = _shares("data-centre GPU", "memory"), _shares("data-centre GPU", "compute")
    monkeypatch.setattr(predict, "predictions", lambda: pytest.fail("a widget ran every row through the step model"))

    r = w.run("size_it_yourself", {})
    s = memory.size(*(w.get("size_it_yourself").defaults()[k] for k in ("model", "accelerator", "weights", "kv",
                                                                       "context", "batch")))
    assert s.bound == "memory"
    label = f"Decode per sequence, expected (from {len(shares_mem)} public measurements)"
    assert stat(r["html"], label) == (f"{format_number(s.decode_tokens_per_s * min(shares_mem), 3)} to "
                                      f"{format_number(s.decode_tokens_per_s * max(shares_mem), 3)}")
    assert f"median {format_number(s.decode_tokens_per_s * statistics.median(shares_mem), 3)} tokens/s" in text(r["html"])
    assert "Decode ceiling per sequence" in r["html"]  # the ceiling stays

    r = w.run("server_dials", {})
    d = w.get("server_dials").defaults()
    got = dials.server_dials(d["model"], d["accelerator"], d["weights"], "bf16", d["context"], d["batch"], d["tp"], d["price"])
    assert got.prefill_bound == "compute"
    assert stat(r["html"], f"Time to first token, expected (from {len(shares_comp)} public measurements)") == \
        f"{format_time(got.ttft_s / max(shares_comp))} to {format_time(got.ttft_s / min(shares_comp))}"
    assert stat(r["html"], f"Per user, expected (from {len(shares_mem)} public measurements)") == (
        f"{format_number(got.tokens_per_s_per_user * min(shares_mem), 3)} to "
        f"{format_number(got.tokens_per_s_per_user * max(shares_mem), 3)}")

    r = w.run("price_it_out", {})
    p = w.get("price_it_out").defaults()
    last = economics.cost_by_batch(p["model"], p["accelerator"], p["weights"], "bf16", p["context"], p["price"])[-1]
    assert stat(r["html"], f"At batch {last.batch}, expected (from {len(shares_mem)} public measurements)") == (
        f"${format_number(last.usd_per_million_tokens / max(shares_mem), 3)} to "
        f"${format_number(last.usd_per_million_tokens / min(shares_mem), 3)}")


def test_the_calculators_say_when_no_measurement_covers_the_class():
    from widget_html import text

    from descent import widgets as w

    r = w.run("size_it_yourself", {"accelerator": "tpu-v7", "model": "qwen3-8b"})
    assert "no public measurement covers other accelerator chips at a memory-bound step yet, so only the ceiling " \
           "is shown" in text(r["html"])
    assert 'href="reference/ceilings.html#what-to-expect-from-a-ceiling"' in r["html"]
    r = w.run("size_it_yourself", {"accelerator": "custom"})
    assert "no public measurement covers a chip described by its numbers yet" in text(r["html"])
