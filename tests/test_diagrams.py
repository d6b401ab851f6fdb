"""Part 2's distillation widget (widgets.part2_distill) on its published data, and the facts Part 3's
diagrams draw (serving.block_tables, the simulator loop's stages)."""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path

import pytest
from widget_html import stat, text

from descent import published, serving
from descent.units import format_count
from descent.widgets import run

ROOT = Path(__file__).resolve().parents[1]


def _recipe(fid: str):
    """A figure recipe as a module (build side: needs matplotlib, so these tests skip in Pyodide)."""
    pytest.importorskip("matplotlib")
    spec = importlib.util.spec_from_file_location(fid.replace("-", "_"), ROOT / "figures" / f"{fid}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --- distillation ----------------------------------------------------------------------------------


def test_students_are_the_published_numbers():
    # Sizes from the names (the README's model names), samples and scores from PUBLISHED (sources kept).
    names = {s.name: s for s in published.DISTILLED}
    assert names["DeepSeek-R1-Distill-Qwen-1.5B"].billions == 1.5
    assert names["DeepSeek-R1-Distill-Llama-70B"].billions == 70
    for s in published.DISTILLED:
        assert s.score == published.AIME_DISTILLED.get(s.name, published.S1_AIME)
        assert s.score_source.startswith("https://") and s.samples_source.startswith("https://")
    assert names["s1-32B"].samples == published.get("s1_examples").value
    # The metric per row: DeepSeek's README, section 4 ("generate 64 responses per query to estimate
    # pass@1", temperature 0.6, top-p 0.95); the s1 paper, section 4.1 (greedy decoding, accuracy).
    assert names["s1-32B"].metric is published.S1_METRIC and published.S1_METRIC.name == "greedy accuracy"
    assert {s.metric for s in published.DISTILLED if s.teacher == "DeepSeek-R1"} == {published.R1_METRIC}
    assert published.R1_METRIC.name == "pass@1 over 64 samples" and published.get("r1_eval_samples").value == 64
    assert published.get("aime_s1_32b").what.startswith("s1-32B, AIME 2024 greedy accuracy")
    assert {s.samples for s in published.DISTILLED if s.teacher == "DeepSeek-R1"} == {published.get("r1_distill_samples").value}
    with pytest.raises(ValueError, match="size in billions"):
        published._billions("GPT-4o-0513")


@pytest.mark.parametrize("axis", ["size", "samples"])
def test_widget_shows_the_picked_student_and_every_source(axis):
    s = next(x for x in published.DISTILLED if x.name == "s1-32B")
    out = run("distillation", {"student": s.name, "axis": axis})
    assert out["ok"], out
    h = out["html"]
    assert stat(h, "AIME 2024 score") == "56.7%" == f"{s.score}%"  # the published 56.7 (s1, Table 1)
    # ...named as what it is: greedy accuracy (s1, section 4.1), beside the R1 students' pass@1 over 64
    # sampled answers (DeepSeek-R1 README, section 4: "generate 64 responses per query to estimate pass@1").
    assert "greedy accuracy, as published" in h
    assert stat(h, "Fine-tuning samples") == format_count(s.samples)
    # One table row per student and per reference model, each with an address.
    rows = re.findall(r"<tr>(.*?)</tr>", h, re.S)[1:]
    assert len(rows) == len(published.AIME_DISTILLED) + 1
    assert all("score: github.com/deepseek-ai/DeepSeek-R1" in r or "score: arxiv.org/abs/" in r for r in rows)
    assert "https://" not in h  # no bare address in the page (tests/test_site_build.py)
    # Every row names its metric: each student's own, each reference model's as DeepSeek's table gives it.
    for x in published.DISTILLED:
        row = next(r for r in rows if f">{x.name}<" in r)
        assert f">{x.metric.name}<" in row
    assert sum(">pass@1 over 64 samples<" in r for r in rows) == 6 and sum(">greedy accuracy<" in r for r in rows) == 1
    assert "How each score was measured" in h and "temperature 0.6, top-p 0.95" in h
    # Each chip sets the student; the picked one is ringed in both drawings.
    assert len(re.findall(r"data-set=", h)) == len(published.DISTILLED)
    assert h.count('r="10"') == 2
    assert ("log scale" in text(h)) and (("fine-tuning samples" if axis == "samples" else "parameters") in h)
    # The score axis names both metrics, from the students' own (DeepSeek-R1 README: pass@1; s1,
    # section 4.1: greedy), in both drawings.
    assert h.count('AIME 2024 score, % <tspan font-size="') == 2 and h.count(">(pass@1; greedy for s1-32B)</tspan>") == 2


def test_the_first_hint_quotes_both_scores_and_both_metrics():
    # s1-32B's 56.7 (s1, Table 1) against DeepSeek-R1-Distill-Qwen-32B's 72.6 (DeepSeek-R1 README,
    # Distilled Model Evaluation), each named by how it was measured.
    from descent.widgets import part2_distill

    hint = part2_distill._unlike_hint()
    assert published.AIME_DISTILLED["DeepSeek-R1-Distill-Qwen-32B"] == 72.6 and published.S1_AIME == 56.7
    assert "scores 56.7% against its 72.6%, on a slightly different measure: greedy accuracy" in hint
    assert "than R1-Qwen-32B, the distilled model of the same size" in hint and "against pass@1 averaged" in hint
    assert part2_distill.score_axis() == ("AIME 2024 score, %", "(pass@1; greedy for s1-32B)")


# --- Part 3's diagrams -----------------------------------------------------------------------------


@pytest.mark.parametrize("prompt,output,samples,block", [(10, 5, 2, 4), (120, 60, 4, 16), (16, 1, 3, 16), (3, 40, 2, 8)])
def test_block_tables_share_the_full_prompt_blocks(prompt, output, samples, block):
    tables = serving.block_tables(prompt, output, samples, block)
    counts = serving.shared_blocks(prompt, output, samples, block)
    assert len({b for t in tables for b in t}) == counts["shared"]
    full = prompt // block
    assert all(t[:full] == list(range(full)) for t in tables)  # the shared part: the same physical blocks
    own = [set(t[full:]) for t in tables]
    assert all(not (a & b) for i, a in enumerate(own) for b in own[i + 1:])  # the rest: each its own
    # Each table covers its sequence: prompt and reply, block by block.
    assert all(len(t) == -(-(prompt + output) // block) or len(t) == full + -(-(prompt % block + output) // block)
               for t in tables)


def test_batching_loop_figure_names_the_loops_own_stages():
    fig = _recipe("part3-batching-loop")
    src = inspect.getsource(serving.simulate)
    found = re.findall(r"# (\d)\. (\w+)[.:]", src)
    assert [name for _, name in found] == list(fig.STAGES) and [n for n, _ in found] == ["1", "2", "3", "4"]


def test_kv_block_and_disaggregated_figures_print_the_packages_numbers():
    from descent import catalog, numerics, step
    from descent import params as P
    from descent.units import format_bytes, format_time

    kv = _recipe("part3-kv-block")
    m = catalog.model(P.MODEL.default)
    total = step.kv_cache_bytes(m, numerics.kv_precision(P.KV.default), P.CONTEXT.default, 1)
    assert format_bytes(total, "auto", 3, trim=True) in kv.ALT
    dis = _recipe("part3-disaggregated")
    link, nbytes, seconds = next(x for x in serving.kv_transfer(m.id, P.ACCELERATOR.default, P.KV.default,
                                                               P.CONTEXT.default) if x[0].id == dis.LINK)
    assert nbytes == total  # the cache that crosses the network is the block of the other figure
    assert format_time(seconds) in dis.ALT and link.label in dis.CAPTION
