"""The site's dispatchers look quantities up (issue 22): each quantity that took over a site
computation equals the arithmetic the site did before, and prints the text the page printed."""

from __future__ import annotations

import pytest

from descent import catalog, floats, gguf_types, numerics, published, serving, transformer
from descent import quantities as Q
from descent.site.shortcodes import resolve
from descent.units import GB
from descent.weights import bytes_by_group


def v(body: str) -> str:
    return resolve(f"<!-- descent:{body} -->")


def test_serving_examples_equal_the_old_arithmetic():
    tr = serving.make_trace(200, 4.0, 1000, 250, 0)
    kw = {"requests": 200, "rate": 4.0, "prompt_mean": 1000, "output_mean": 250, "seed": 0}
    assert Q.get("trace_duration_s")(**kw) == tr[-1].arrival - tr[0].arrival
    assert Q.get("trace_mean_prompt_tokens")(**kw) == round(sum(r.prompt for r in tr) / len(tr))
    assert Q.get("trace_mean_reply_tokens")(**kw) == round(sum(r.output for r in tr) / len(tr))
    assert Q.get("alloc_pool_tokens")(block_size=48) == serving.ALLOC_EXAMPLE["pool"] // 48 * 48
    rows = serving.multi_turn(serving.server("llama-3.1-70b", "h200", "fp8", "bf16"), 5, 500, 150, 300)
    assert Q.get("multi_turn_prefill_ratio")(turns=5, prefix_tokens=500) == \
        rows[-1]["prefill_tokens_no_cache"] / rows[-1]["prefill_tokens_cached"]


def test_batching_exception_prints_the_same():
    from descent.site.values.serving import EXCEPTION

    tps = {p: serving.metrics(serving.run(policy=p, **EXCEPTION)).throughput_tokens_per_s
           for p in ("static", "continuous")}
    assert Q.get("continuous_loss")(**EXCEPTION) == 1 - tps["continuous"] / tps["static"]
    assert v("value batching_exception field=loss") == Q.get("continuous_loss").format(1 - tps["continuous"] / tps["static"])


@pytest.mark.parametrize("model", list(catalog.models()))
def test_kv_quantities_equal_the_old_arithmetic(model):
    m = catalog.model(model)
    per = numerics.kv_precision("bf16").bytes_per_weight
    t = min(131072, m.max_context)
    bits = {k: numerics.kv_precision(k).bits_per_weight for k in ("bf16", "fp8")}
    assert Q.get("kv_sequence_bytes")(model=model, kv="fp8", context=131072) == \
        transformer.kv_cache_bytes(m, t, bits["fp8"])
    assert Q.get("kv_sequence_bytes_freed")(model=model, kv="fp8", context=131072) == \
        transformer.kv_cache_bytes(m, t, bits["bf16"]) - transformer.kv_cache_bytes(m, t, bits["fp8"])
    if m.mla is None:
        caching = sum(1 for i in range(m.num_layers) if transformer.layer_kind(m, i) != "linear")
        mha = transformer.KV_TENSORS * caching * m.num_heads * m.head_dim * per
        assert Q.get("kv_bytes_per_token_mha")(model=model, kv="bf16") == mha
        assert Q.get("gqa_kv_reduction")(model=model) == pytest.approx(mha / (transformer.kv_elements_per_token(m) * per))
    p = transformer.param_counts(m)
    assert Q.get("params_in_layers")(model=model) == p.attention + p.dense_ffn + p.experts + p.shared_experts + p.router
    assert Q.get("params_embeddings")(model=model) == p.embedding + p.output_head
    q4km = sum(bytes_by_group(model, "q4_k_m").values())
    rule = 0.6 * (m.params_total_published / 1e9) * GB
    assert Q.get("q4_rule_bytes")(model=model) == rule
    assert Q.get("q4_rule_gap")(model=model) == rule / q4km - 1
    assert Q.get("weights_bits_per_param")(model=model, weights="q4_k_m") == q4km * 8 / p.total


def test_part2_values_print_the_same():
    assert v("value rule_bits") == "4.8"
    assert published.gptq_weights_bytes("LLaMa-13B", 4) == 13 * 1e9 * 4 / 8
    row = published.GPTQ_LLAMA["LLaMa-65B"]
    assert published.gptq_change("LLaMa-65B", "4bit-RTN") == row[1] / row[0] - 1
    n = transformer.param_counts(catalog.model("llama-3.1-70b")).total
    assert gguf_types.bytes_for(n, "Q4_K") == n * 4.5 / 8
    assert floats.relative_error("bf16", 0.1) == abs(0.10009765625 - 0.1) / 0.1


def test_gpu_ratios_equal_the_old_arithmetic():
    a = catalog.accelerator("h200")
    assert Q.get("hbm_vs_l2_size")(accelerator="h200") == a.memory_bytes / a.l2_bytes
    assert Q.get("hbm_vs_link_bandwidth")(accelerator="h200") == a.memory_bandwidth / (a.scale_up_bandwidth / 2)
    assert Q.get("tensor_cores_total")(accelerator="h200") == a.compute_units * a.tensor_cores_per_unit
    assert v("value gpu_fact accelerator=h200 field=hbm_vs_l2_size").endswith(" times")


#: What the pages printed at the base commit, before these dispatchers became look-ups.
BEFORE = {
    "value trace_fact field=duration": "47.9 s",
    "value trace_fact field=mean_prompt": "1,012",
    "value multi_turn_fact field=ratio": "28",
    "value batching_exception field=loss": "28.2%",
    "value batching_exception field=expert_share_decode": "13.1%",
    "value alloc_fact field=pool": "4,096",
    "value q4_rule_fact model=smollm2-135m field=gap": "-22%",
    "value q4_rule_fact model=smollm2-135m field=rule unit=MB": "81 MB",
    "value gpu_fact accelerator=h200 field=hbm_vs_link_bandwidth": "11 times",
    "value gptq_bytes model=LLaMa-13B bits=4": "6.5 GB",
    "value embedding_fact field=pca12": "23.7%",
}


@pytest.mark.parametrize("body", list(BEFORE))
def test_the_pages_keep_their_text(body):
    """Spot checks; the whole pages were compared shortcode by shortcode against the base commit."""
    assert v(body) == BEFORE[body]
