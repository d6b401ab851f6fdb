"""Part 3's page shortcodes (descent.site.values.serving): values worked by hand or computed by the core,
the measured facts read from a measurement (a fixed one here, so no model runs), the engines matrix."""

from __future__ import annotations

import pytest

from descent import serving
from descent.site.shortcodes import ShortcodeError, resolve
from descent.site.values import serving as serving_values
from descent.site.values import serving_measured
from descent.units import format_percent, format_time


def _rows(steps: dict[int, float]) -> list[dict]:
    """Batch rows in descent.trace.measure's layout, with the ratios to batch 1 and 2 it records."""
    def row(b: int) -> dict:
        return {"batch": b, "seconds_per_step": steps[b], "tokens_per_s": b / steps[b]}

    def against(b: int, base: int) -> dict:
        r, o = row(b), row(base)
        return {k: r[k] / o[k] for k in ("tokens_per_s", "seconds_per_step", "batch")}

    return [{**row(b), "vs_batch_1": against(b, 1), "vs_batch_2": against(b, 2)} for b in steps]


#: A measurement in the layout of descent.trace.measure, with round numbers.
FAKE = {
    "version": 1,
    "model": {"name": "SmolLM2-135M-Instruct", "file": "x.gguf", "sha256": "0" * 64},
    "machine": {"cpu": "Test CPU", "cores": 2, "system": "Linux x86_64", "load_average": 0.5, "python": "3.11",
                "numpy": "2.0", "blas_threads": 1},
    "date": "2026-01-02",
    "repeats": 5,
    "statistic": "median",
    "prefill": {"tokens": 256, "seconds": 0.5, "tokens_per_s": 512.0, "speed_vs_decode": 512.0 / 25.0},
    "decode": {"context": 256, "seconds_per_token": 0.04, "tokens_per_s": 25.0},
    "batch_context": 128,
    "batched": _rows({1: 0.04, 2: 0.1, 4: 0.11, 8: 0.12, 16: 0.16}),
    "constrained": {"regex": "x", "text": '{"a": 1}', "matched": True, "free_text": "Sure! ```json\n{}```",
                    "prompt": "Give JSON.", "steps": [
                        {"allowed": 2, "masked_share": 1 - 2 / 49152, "allowed_mass": 0.02,
                         "free_top": {"text": "Sure", "id": 1, "probability": 0.3}, "token": {"text": "{", "id": 2},
                         "probability": 0.01, "renormalized": 0.5,
                         "top": [{"text": "{", "id": 2, "probability": 0.5}]},
                        {"allowed": 1, "masked_share": 1 - 1 / 49152, "allowed_mass": 0.9,
                         "free_top": {"text": '"', "id": 3, "probability": 0.9}, "token": {"text": '"', "id": 3},
                         "probability": 0.9, "renormalized": 1.0, "top": [{"text": '"', "id": 3, "probability": 1.0}]},
                    ]},
    "speculative": {"prompt": "Copy this.", "text": "Copy.", "tokens": 40, "passes": 8, "drafted": 50, "accepted": 35,
                    "acceptance": 0.7, "tokens_per_pass": 5.0, "equals_greedy": True, "seconds_greedy": 3.0,
                    "seconds_speculative": 2.0, "wall_speedup": 1.5, "ngram_max": 3, "draft_max": 8},
}


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(serving_measured, "_measured", lambda: FAKE)


def v(code: str) -> str:
    return resolve(f"<!-- descent:{code} -->", "part-3-serving-software.md")


def test_measured_facts(fake):
    assert v("value serving_measured field=label") == (
        "measured on Test CPU (2 cores, load average 0.5), NumPy 2.0 on one BLAS thread, 2026-01-02, median of 5 runs")
    assert v("value serving_measured field=speed_ratio") == "20"  # 512 / 25 tokens/s
    assert v("value serving_measured field=batch_gain") == "4"  # 16 / 0.16 = 100 tokens/s against 25
    assert v("value serving_measured field=batch_max") == "16"
    # Batch 2 takes 2.5 times batch 1's step (above the 1.5 threshold): the note explains the jump.
    assert "takes 2.5× as long as at batch 1" in v("value serving_measured field=batch_note")
    assert v("value serving_measured field=first_mass") == "2%"
    assert v("value serving_measured field=first_free_top") == "“Sure”"
    assert v("value serving_measured field=first_renormalized") == "50%"
    assert v("value serving_measured field=constrained_free_text") == "`` Sure! ```json↵{}``` ``"
    assert v("value serving_measured field=spec_equal") == "identical"
    assert v("value serving_measured field=spec_wall_speedup") == "1.5"
    table = v("table constrained_steps")
    assert "| 1 | 2 | 99.996% | 2% |" in table


def test_batch_note_without_a_jump(fake, monkeypatch):
    flat = dict(FAKE, batched=_rows({b: 0.04 + 0.001 * b for b in (1, 2, 4, 8, 16)}))
    monkeypatch.setattr(serving_measured, "_measured", lambda: flat)
    assert v("value serving_measured field=batch_note") == "A step at batch 16 takes 1.4× as long as at batch 1 for 16 times the tokens."


def test_step_facts_by_hand():
    # Llama 3.1 70B FP8 on an H200: 63.6 GB left for the KV cache (151.4 GB x 0.9 - 72.66 GB of weights,
    # the embedding, head and norms at BF16 as the FP8 checkpoints keep them: test_weights), at
    # 327,680 bytes per token: 63,601,465,753.6 / 327,680 = 194,096.3, so 194,096 whole tokens.
    # The step's numbers are quantities (descent.quantities.step), no longer a site dispatcher.
    assert v("value kv_capacity_bytes unit=GB") == "63.6 GB"
    assert v("value kv_capacity_tokens") == "194,096"
    assert v("value prefill_bound") == "compute"
    assert v("value decode_bound") == "memory"
    assert v("value compute_precision") == "FP8"
    assert v("value peak_flops unit=TFLOP/s sig=4") == "1,979 TFLOP/s"  # 1,978.9e12, 4 significant figures
    # 1,024 tokens over the prefill's time, against one token per decode step.
    assert v("value prefill_tokens_per_s") == v("value prefill_tokens_per_s prompt_tokens=1024")
    with pytest.raises(ShortcodeError, match="unknown value 'step_fact'"):
        v("value step_fact field=kv_tokens")


def test_given_values_are_checked_by_their_parameter():
    assert v("value given param=gpu_price value=2.5") == "$2.5 per hour"
    assert v("value given param=prefix_tokens value=3000") == "3,000 tokens"
    assert v("value given param=acceptance value=0.7") == "70%"
    assert v("value given param=ttft_target value=1") == format_time(1.0)
    with pytest.raises(ShortcodeError, match="Acceptance rate must be 0 to 1"):
        v("value given param=acceptance value=2")


def test_simulator_loop_is_the_source():
    block = v("table simulator_loop")
    assert block.strip().startswith("```python") and "# 1. Admit." in block and "# 4. Retire." in block
    # The loop calls the two decode-run helpers; the page prints them too, from the same source.
    assert "_line_run(" in block and "_decode_run(" in block
    run = v("table simulator_decode_run")
    assert run.strip().startswith("```python\ndef _line_run(") and "\ndef _decode_run(" in run
    assert "s.decode_steps(" in run


def test_batching_exception_is_a_loss():
    loss = v("value batching_exception field=loss")
    assert float(loss.rstrip("%")) > 20


def test_alloc_and_shared_blocks():
    got = serving.allocate(serving.backlog(0, 512), 4096, "contiguous", 16, 512)
    assert v("value alloc_fact allocator=contiguous field=token_share") == format_percent(got.token_share)
    assert v("value shared_blocks_fact prompt_tokens=120 output_tokens=60 samples=4 field=shared") == "27"


def test_engines_matrix_has_a_source_for_every_row():
    table = v("table engines")
    for name in ("vLLM", "SGLang", "TensorRT-LLM", "llama.cpp", "MLX LM"):
        assert f"[{name}" in table
    assert "https://github.com/vllm-project/vllm" in table
    rows = [line for line in table.splitlines() if line.startswith("| [")]
    assert len(rows) == len(serving_values.ENGINES)
    assert all("yes" in r for r in rows)


def test_cited_numbers():
    assert v("value cited field=vllm_token_share_low") == "20.4%"
    assert v("value cited field=vllm_token_share_high") == "38.2%"


def test_engines_marks_what_the_expert_review_found_documented():
    """Issue 23 (expert review): TensorRT-LLM documents chunked prefill ("Chunked Context",
    enable_chunked_prefill) and structured output (guided decoding via XGrammar), and llama.cpp's
    server documents prefix caching (cache_prompt, default true; --cache-reuse). Each cell is a
    "yes" linked to that page, not a dash."""
    rows = {r.split("]")[0].lstrip("| ["): r for r in v("table engines").splitlines() if r.startswith("| [")}
    cols = ["engine", *serving_values.ENGINE_FEATURES, "runs on"]

    def cell(engine, feature):
        return [c.strip() for c in rows[engine].strip("|").split(" | ")][cols.index(feature)]

    assert cell("TensorRT-LLM", "chunked prefill") == "[yes](https://nvidia.github.io/TensorRT-LLM/features/long-sequence.html)"
    assert cell("TensorRT-LLM", "structured output").startswith("[yes](https://github.com/NVIDIA/TensorRT-LLM/")
    assert cell("llama.cpp (server)", "prefix caching") == (
        "[yes](https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md)")
    # A feature no source was found for stays a dash.
    assert cell("MLX LM", "chunked prefill") == "—"
