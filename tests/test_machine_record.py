"""The build machine's timings: recorded once (descent/data/build_machine.json, written by
``python -m descent.trace.machine_record``), read by every page through ``descent.recorded``.

Issue 22: Parts 0, 3 and 4 printed prefill 95.0 / 157 / 97.5 tokens/s and decode 9.99 / 10.6 / 7.30
tokens/s for one machine, from three measurements taken by each build. Now one record holds each
timing (the median of its runs, with the machine, date and load), the pages print the same text
for the same quantity, and computing the pages' values times nothing.
"""

from __future__ import annotations

import datetime
import json
import statistics
from importlib import resources
from pathlib import Path

import pytest

from descent import recorded
from descent.site.shortcodes import resolve

ROOT = Path(__file__).resolve().parents[1]


def v(code: str, page: str) -> str:
    return resolve(f"<!-- descent:{code} -->", page)


def test_the_record_says_what_where_when_and_how_often():
    d = recorded.machine_record()
    assert d["format"] == recorded.MACHINE_FORMAT
    assert set(d["machine"]) >= {"cpu", "cores", "system", "python", "numpy", "blas", "blas_threads"}
    assert d["machine"]["cores"] >= 1 and d["machine"]["blas_threads"] == 1
    datetime.date.fromisoformat(d["date"])
    assert set(d["load_average"]) == {"before", "after"}
    assert d["statistic"] == "median" and d["repeats"] >= 3
    assert {"prefill", "decode", "gemm", "stream", "greedy_reply", "speculative_reply"} <= set(d["measurements"])
    for name, m in d["measurements"].items():
        assert m["unit"] == "s" and m["value"] > 0 and m["work"] > 0 and m["what"], name
        # The value is the median of the recorded runs (stored to 6 significant digits).
        assert len(m["runs"]) == d["repeats"], name
        assert m["value"] == pytest.approx(statistics.median(m["runs"]), rel=1e-5), name
    # The record lies in the package source, where the command writes it.
    assert recorded.machine_path() == ROOT / "src" / "descent" / "data" / recorded.MACHINE_FILE
    assert json.loads(resources.files("descent").joinpath("data", recorded.MACHINE_FILE).read_text()) == d


def test_a_recording_is_typed_with_its_unit_and_source():
    pre = recorded.measurement("prefill")
    raw = recorded.machine_record()["measurements"]["prefill"]
    assert isinstance(pre, recorded.Recording)
    assert (pre.name, pre.value, pre.unit, pre.work, pre.work_unit) == ("prefill", raw["value"], "s", raw["work"], "tokens")
    assert pre.rate == raw["work"] / raw["value"] and pre.rate_unit == "tokens/s"
    assert pre.machine == recorded.machine_record()["machine"] and pre.repeats == recorded.machine_record()["repeats"]
    assert recorded.measurement("gemm").rate_unit == "FLOP/s"
    assert list(recorded.measurements()) == list(recorded.machine_record()["measurements"])
    with pytest.raises(ValueError, match="no recorded measurement 'nope'; recorded: .*prefill"):
        recorded.measurement("nope")


def test_a_record_of_another_format_is_refused(monkeypatch):
    real = recorded.machine_record()
    recorded.machine_record.cache_clear()
    monkeypatch.setattr(recorded.json, "loads", lambda text: {**real, "format": 0})
    try:
        with pytest.raises(ValueError, match="format 0, expected 1: record again"):
            recorded.machine_record()
    finally:
        monkeypatch.undo()
        recorded.machine_record.cache_clear()


def _token_level():
    """Part 3's token-level results in measure.compute()'s layout (no model run)."""
    from descent.trace import measure

    step = {"allowed": 2, "masked_share": 0.5, "allowed_mass": 0.02, "free_top": {"text": "Sure", "id": 1,
            "probability": 0.3}, "token": {"text": "{", "id": 2}, "probability": 0.01, "renormalized": 0.5,
            "top": [{"text": "{", "id": 2, "probability": 0.5}]}
    return {"version": measure.MEASURE_VERSION, "model": {},
            "constrained": {"text": "{}", "free_text": "x", "prompt": "p", "steps": [step]},
            "speculative": {"prompt": "p", "text": "t", "tokens": 40, "passes": 8, "drafted": 50, "accepted": 35,
                            "acceptance": 0.7, "tokens_per_pass": 5.0, "equals_greedy": True, "ngram_max": 3,
                            "draft_max": 8}}


@pytest.fixture
def nothing_timed(monkeypatch, tmp_path):
    """Every way the package times the build machine raises; Part 3's token-level results are fixed."""
    from descent.site.values import serving_measured as values_part3
    from descent.trace import machine_record, measure, roofline_measure

    def boom(*a, **k):
        raise AssertionError("a page's value timed the machine")

    for mod, name in ((machine_record, "record"), (machine_record, "_runs"), (machine_record, "_timed"),
                      (roofline_measure, "measure")):
        monkeypatch.setattr(mod, name, boom)
    monkeypatch.setenv("DESCENT_CACHE", str(tmp_path))
    monkeypatch.setattr(measure, "compute", _token_level)
    values_part3._measured.cache_clear()
    yield
    values_part3._measured.cache_clear()


def test_parts_0_3_and_4_print_one_prefill_and_one_decode(nothing_timed):
    # The disagreement: each page printed its own measurement. Now the same text, and it is
    # the record's rate at three significant digits.
    from descent.units import format_number

    pre, dec = recorded.measurement("prefill"), recorded.measurement("decode")
    want_pre, want_dec = f"{format_number(pre.rate)} tokens/s", f"{format_number(dec.rate)} tokens/s"
    assert want_pre == f"{format_number(pre.work / pre.value, 3)} tokens/s"
    prefill = {v("value build_speed field=prefill", "part-0-the-prompt.md"),
               v("value serving_measured field=prefill_tokens_per_s", "part-3-serving-software.md"),
               v("value measured field=prefill_tokens_per_s", "part-4-hardware.md")}
    decode = {v("value build_speed field=decode", "part-0-the-prompt.md"),
              v("value serving_measured field=decode_tokens_per_s", "part-3-serving-software.md"),
              v("value measured field=decode_tokens_per_s", "part-4-hardware.md")}
    assert prefill == {want_pre} and decode == {want_dec}
    # The tables print the same numbers, and the same prompt length on every page.
    assert f"| {format_number(pre.rate)} |" in v("table measured_speeds", "part-3-serving-software.md")
    assert f"| SmolLM2 prefill | {want_pre} |" in v("table measured_roofline", "part-4-hardware.md")
    tokens = str(int(pre.work))
    assert tokens == v("value build_speed field=prefill_tokens", "part-0-the-prompt.md") \
        == v("value serving_measured field=prefill_tokens", "part-3-serving-software.md") \
        == v("value measured field=prefill_tokens", "part-4-hardware.md")
    assert v("value build_speed field=date", "part-0-the-prompt.md") == pre.date \
        == v("value measured field=date", "part-4-hardware.md")


def test_every_timing_on_a_page_comes_from_the_record(nothing_timed):
    # Every field of the three timing shortcodes and the three tables resolves with all timing
    # code replaced by a failure: the build measures nothing.
    from descent.site.values import browser_model as values_engine
    from descent.site.values import hardware as values_part4
    from descent.site.values import serving_measured as values_part3
    from descent.site.values.text import fmt_num
    from descent.units import format_time

    for f, _ in values_engine.SPEED_FIELD.choices:
        v(f"value build_speed field={f}", "part-0-the-prompt.md")
    for f, _ in values_part3.MEASURED_FIELD.choices:
        v(f"value serving_measured field={f}", "part-3-serving-software.md")
    for f in values_part4.MEASURED_FIELDS:
        v(f"value measured field={f}", "part-4-hardware.md")
    for t in ("measured_speeds", "measured_batches"):
        v(f"table {t}", "part-3-serving-software.md")
    v("table measured_roofline", "part-4-hardware.md")
    # Batch 1 of the batch table is the decode recording; speculative decoding's wall times too.
    batch16 = recorded.measurement("decode_batch_16")
    assert v("value serving_measured field=batch16_tokens_per_s", "part-3-serving-software.md") == \
        f"{fmt_num(batch16.rate)} tokens/s"
    assert v("value serving_measured field=spec_seconds", "part-3-serving-software.md") == \
        format_time(recorded.measurement("speculative_reply").value)
    # The timing figures read the record too (their recipes load without timing anything).
    from descent.site.figures import load_recipe

    for fig in ("part3-measured-decode", "part4-measured-roofline"):
        load_recipe(ROOT / "figures" / f"{fig}.py")
