"""Value and table shortcodes for Part 3 ("Serving software").

Imported by :mod:`descent.site.values`. The arithmetic is :mod:`descent.serving`'s
(core); the measurements on the real model are :mod:`descent.trace.measure`'s (taken at build,
cached by the GGUF's SHA-256). The single numbers that are quantities (``prefill_s``, ``itl_s``,
``prefill_tokens_per_s``, ``throughput_tokens_per_s``, ``speedup``, ...) need no entry here.

* ``<!-- descent:value measured field=... -->``, ``<!-- descent:table measured_speeds -->``,
  ``<!-- descent:table measured_batches -->``, ``<!-- descent:table constrained_steps -->``: SmolLM2
  on the build machine.
* ``<!-- descent:table simulator_loop -->``, ``<!-- descent:table simulator_decode_run -->``: the
  simulator's step loop and the two helpers it calls for runs of decode-only steps, as in the source.
* ``<!-- descent:table batching_compare -->``, ``<!-- descent:value trace_fact field=... -->``,
  ``<!-- descent:value batching_exception field=... -->``: the batching simulator.
* ``<!-- descent:value prefix_fact field=... -->``, ``<!-- descent:value multi_turn_fact field=... -->``.
* ``<!-- descent:value alloc_fact field=... -->``, ``<!-- descent:value shared_blocks_fact field=... -->``.
* ``<!-- descent:table kv_transfer_table -->``, ``<!-- descent:value kv_transfer_fact field=... -->``.
* ``<!-- descent:table engines -->``: what each engine's own documentation says it does.
"""

from __future__ import annotations

import inspect
import re

from descent import params as P
from descent import quantities as Q
from descent import serving
from descent.quantities.serving import TURN_QUESTION, TURN_REPLY
from descent.site.shortcodes import table, value
from descent.site.values.quantities import show
from descent.site.values.text import fmt_bytes, fmt_num, md_link_source, md_table, md_text
from descent.units import (
    format_int,
    format_number,
    format_percent,
    format_si,
    format_time,
)

_SERVER = (P.MODEL, P.ACCELERATOR, P.WEIGHTS, P.KV)

def field_choice(key: str, label: str, names, help_: str) -> P.Param:
    return P.declare(P.Param("field", label, "choice", key=key, choices=[(n, n) for n in names], help=help_))


_LOOP_START = "    while queue or running:"

_LOOP_END = "    # A sequence's first token ends a step"

@table("simulator_loop")
def simulator_loop() -> str:
    """The step loop of descent.serving.simulate, as it is in the source (a fenced code block)."""
    src = inspect.getsource(serving.simulate)
    body = src[src.index(_LOOP_START):src.index(_LOOP_END)].rstrip()
    lines = [line[4:] if line.startswith("    ") else line for line in body.splitlines()]
    return "\n\n```python\n" + "\n".join(lines) + "\n```\n\n"

@table("simulator_decode_run")
def simulator_decode_run() -> str:
    """The two helpers the loop calls for a run of decode-only steps, as they are in the source (a fenced code block)."""
    code = "\n\n\n".join(inspect.getsource(f).rstrip() for f in (serving._line_run, serving._decode_run))
    return "\n\n```python\n" + code + "\n```\n\n"

_TRACE = (P.REQUESTS, P.ARRIVAL_RATE, P.PROMPT_MEAN, P.OUTPUT_MEAN, Q.SLOTS, P.SEED)

COMPARE_CHUNK = P.CHUNK.but(default=512, label="Chunk compared", help="the chunked-prefill budget of the third row")

@table("batching_compare", *_SERVER, *_TRACE, COMPARE_CHUNK)
def batching_compare(model: str, accelerator: str, weights: str, kv: str, requests: int, rate: float,
                     prompt_mean: int, output_mean: int, batch: int, seed: int, chunk: int) -> str:
    """Static, continuous and continuous with chunked prefill on one trace: throughput and latencies."""
    rows = []
    for label, policy, ch in (("static", "static", 0), ("continuous", "continuous", 0),
                              (f"continuous, chunks of {format_int(chunk)}", "continuous", chunk)):
        sim = serving.run(model, accelerator, weights, kv, policy, requests, rate, prompt_mean, output_mean, batch,
                          ch, seed)
        m = serving.metrics(sim)
        rows.append([label, fmt_num(m.throughput_tokens_per_s), format_time(m.ttft_p50_s), format_time(m.ttft_p99_s),
                     format_time(m.itl_p50_s), format_time(m.itl_p99_s), format_time(m.latency_p50_s),
                     format_time(m.latency_p99_s), format_percent(m.slot_utilization),
                     f"{fmt_num(m.goodput_tokens_per_s)} tokens/s"])
    return md_table(["batching", "tokens/s", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "latency p50",
                     "latency p99", "slot use", "goodput"], rows, "lrrrrrrrrr")

TRACE_FIELD = field_choice("sim_trace_field", "Trace fact", (
    "duration", "mean_prompt", "mean_reply", "longest_prompt", "longest_reply", "shortest_reply", "output_tokens",
    "requests", "rate", "slots"),
    "one fact about the simulated trace of requests")

@value("trace_fact", *_TRACE, TRACE_FIELD)
def trace_fact(requests: int, rate: float, prompt_mean: int, output_mean: int, batch: int, seed: int,
               field: str) -> str:
    """A fact about the seeded trace the batching simulator serves (descent.serving.trace_summary).

    The duration and the means are the quantities trace_duration_s, trace_mean_prompt_tokens, trace_mean_reply_tokens."""
    kw = {"requests": requests, "rate": rate, "prompt_mean": prompt_mean, "output_mean": output_mean, "seed": seed}
    tr = serving.trace_summary(serving.make_trace(**kw))
    return {
        "duration": lambda: show("trace_duration_s", **kw),
        "mean_prompt": lambda: show("trace_mean_prompt_tokens", **kw),
        "mean_reply": lambda: show("trace_mean_reply_tokens", **kw),
        "longest_prompt": lambda: format_int(tr["longest_prompt"]),
        "longest_reply": lambda: format_int(tr["longest_reply"]),
        "shortest_reply": lambda: format_int(tr["shortest_reply"]),
        "output_tokens": lambda: format_int(tr["output_tokens"]),
        "requests": lambda: format_int(requests),
        "rate": lambda: fmt_num(rate) + " requests/s",
        "slots": lambda: format_int(batch),
    }[field]()

#: The trace on which continuous batching loses (found by a search over seeds; the page explains
#: why): gpt-oss-120b in FP8 on one H200, a burst of 8 short requests, 4 slots.
EXCEPTION = {"model": "gpt-oss-120b", "accelerator": "h200", "weights": "fp8", "kv": "bf16", "requests": 8,
             "rate": 500.0, "prompt_mean": 300, "output_mean": 10, "batch": 4, "chunk": 0, "seed": 0}

EXCEPTION_FIELD = field_choice("exception_field", "Exception fact", (
    "static_tokens_per_s", "continuous_tokens_per_s", "loss", "requests", "slots", "prefill_steps_static",
    "prefill_steps_continuous", "expert_share_decode"),
    "one number about the trace where continuous batching loses")

def _prefill_steps(sim: serving.Simulation) -> int:
    return len({o.first_token for o in sim.occupancy})

@value("batching_exception", EXCEPTION_FIELD)
def batching_exception(field: str) -> str:
    """A burst of short requests on a mixture-of-experts model: continuous batching slower than static."""
    e = EXCEPTION
    sims = {p: serving.run(policy=p, **e) for p in ("static", "continuous")}
    server = {k: e[k] for k in ("model", "accelerator", "weights", "kv")}
    return {
        "static_tokens_per_s": lambda: show("throughput_tokens_per_s", policy="static", **e),
        "continuous_tokens_per_s": lambda: show("throughput_tokens_per_s", policy="continuous", **e),
        "loss": lambda: show("continuous_loss", **e),
        "requests": lambda: format_int(e["requests"]),
        "slots": lambda: format_int(e["batch"]),
        "prefill_steps_static": lambda: format_int(_prefill_steps(sims["static"])),
        "prefill_steps_continuous": lambda: format_int(_prefill_steps(sims["continuous"])),
        "expert_share_decode": lambda: show("decode_weight_share", batch=e["batch"], prompt_tokens=e["prompt_mean"],
                                            **server),
    }[field]()

PREFIX_FIELD = field_choice("prefix_field", "Prefix fact", (
    "ttft_miss", "ttft_hit", "ttft_expected", "flops_saved", "flops_saved_expected"),
    "one number about a cached shared prefix")

_PREFIX_PROMPT = P.PROMPT_TOKENS.but(default=2400)

@value("prefix_fact", *_SERVER, P.PREFIX_TOKENS, _PREFIX_PROMPT, P.HIT_RATE, PREFIX_FIELD)
def prefix_fact(model: str, accelerator: str, weights: str, kv: str, prefix_tokens: int, prompt_tokens: int,
                hit_rate: float, field: str) -> str:
    """What a prefix-cache hit saves on one request (descent.serving.prefix_cache)."""
    r = serving.prefix_cache(serving.server(model, accelerator, weights, kv), prefix_tokens, prompt_tokens, hit_rate)
    return {
        "ttft_miss": lambda: format_time(r.ttft_miss_s),
        "ttft_hit": lambda: format_time(r.ttft_hit_s),
        "ttft_expected": lambda: format_time(r.ttft_expected_s),
        "flops_saved": lambda: format_percent(r.flops_saved),
        "flops_saved_expected": lambda: format_percent(r.flops_saved_expected),
    }[field]()

TURN_FIELD = field_choice("turn_field", "Multi-turn fact", (
    "tokens_no_cache", "tokens_cached", "ratio", "last_prompt", "last_ttft_no_cache", "last_ttft_cached",
    "question", "reply"),
    "one number about a multi-turn chat with and without a prefix cache")

@value("multi_turn_fact", *_SERVER, P.TURNS, P.PREFIX_TOKENS, TURN_QUESTION, TURN_REPLY, TURN_FIELD)
def multi_turn_fact(model: str, accelerator: str, weights: str, kv: str, turns: int, prefix_tokens: int,
                    prompt_tokens: int, output_tokens: int, field: str) -> str:
    """A chat that resends its history each turn: prefill with and without the cache (descent.serving.multi_turn)."""
    rows = serving.multi_turn(serving.server(model, accelerator, weights, kv), turns, prefix_tokens, prompt_tokens,
                              output_tokens)
    last = rows[-1]
    return {
        "tokens_no_cache": lambda: format_int(last["prefill_tokens_no_cache"]),
        "tokens_cached": lambda: format_int(last["prefill_tokens_cached"]),
        "ratio": lambda: show("multi_turn_prefill_ratio", sig=2, model=model, accelerator=accelerator, weights=weights,
                              kv=kv, turns=turns, prefix_tokens=prefix_tokens, prompt_tokens=prompt_tokens,
                              output_tokens=output_tokens),
        "last_prompt": lambda: format_int(last["prompt_tokens"]),
        "last_ttft_no_cache": lambda: format_time(last["ttft_no_cache_s"]),
        "last_ttft_cached": lambda: format_time(last["ttft_cached_s"]),
        "question": lambda: format_int(prompt_tokens),
        "reply": lambda: format_int(output_tokens),
    }[field]()

ALLOC_FIELD = field_choice("alloc_field", "Allocator fact", (
    "token_share", "internal_share", "reserved_share", "external_share", "mean_running", "preempted", "pool",
    "requests", "prompt_mean", "output_mean", "block_size", "reserve_tokens"),
    "one number about the allocator example (descent.serving.ALLOC_EXAMPLE)")

@value("alloc_fact", P.ALLOCATOR, P.BLOCK_SIZE, P.RESERVE_TOKENS, P.SEED, ALLOC_FIELD)
def alloc_fact(allocator: str, block_size: int, reserve_tokens: int, seed: int, field: str) -> str:
    """Where the KV pool goes under one allocator on the allocator example's backlog (descent.serving.allocate)."""
    e = serving.ALLOC_EXAMPLE
    pool = serving.alloc_pool_tokens(block_size)
    got = serving.allocate(serving.backlog(seed, reserve_tokens), pool, allocator, block_size, reserve_tokens)
    return {
        "token_share": lambda: format_percent(got.token_share),
        "internal_share": lambda: format_percent(got.internal_share),
        "reserved_share": lambda: format_percent(got.reserved_share),
        "external_share": lambda: format_percent(got.external_share),
        "mean_running": lambda: fmt_num(got.mean_running),
        "preempted": lambda: format_int(got.preempted),
        "pool": lambda: show("alloc_pool_tokens", block_size=block_size),
        "requests": lambda: format_int(e["requests"]),
        "prompt_mean": lambda: format_int(e["prompt_mean"]),
        "output_mean": lambda: format_int(e["output_mean"]),
        "block_size": lambda: format_int(block_size),
        "reserve_tokens": lambda: format_int(reserve_tokens),
    }[field]()

SHARED_FIELD = field_choice("shared_field", "Shared-block fact", ("separate", "shared", "saved"),
                      "blocks for parallel samples of one prompt, without and with sharing")

@value("shared_blocks_fact", P.PROMPT_TOKENS, P.OUTPUT_TOKENS, P.SAMPLES, P.BLOCK_SIZE, SHARED_FIELD)
def shared_blocks_fact(prompt_tokens: int, output_tokens: int, samples: int, block_size: int, field: str) -> str:
    """Blocks for parallel samples of one prompt, with and without copy-on-write sharing (descent.serving.shared_blocks)."""
    r = serving.shared_blocks(prompt_tokens, output_tokens, samples, block_size)
    return format_percent(r["saved"]) if field == "saved" else format_int(r[field])

@table("kv_transfer_table", P.MODEL, P.ACCELERATOR, P.KV, P.CONTEXT)
def kv_transfer_table(model: str, accelerator: str, kv: str, context: int) -> str:
    """One sequence's KV cache moved over each link: bandwidth, time, and the source of the bandwidth."""
    rows = [[md_text(link.label), format_si(link.bytes_per_s, "B/s", 3, trim=True), format_time(t),
             md_link_source(link.source)]
            for link, _, t in serving.kv_transfer(model, accelerator, kv, context)]
    return md_table(["link", "one direction", "time", "source"], rows, "lrrl")

KV_MOVE_FIELD = field_choice("kv_move_field", "KV transfer fact", (
    "bytes", "fastest", "infiniband", "pcie", "ssd", "recompute", "decode_step"),
    "one number about moving one sequence's KV cache")

@value("kv_transfer_fact", *_SERVER, P.CONTEXT, KV_MOVE_FIELD)
def kv_transfer_fact(model: str, accelerator: str, weights: str, kv: str, context: int, field: str) -> str:
    """Time to move one sequence's KV cache over a link, or to recompute it (descent.serving.kv_transfer)."""
    moves = serving.kv_transfer(model, accelerator, kv, context)
    by_id = {link.id: t for link, _, t in moves}
    s = serving.server(model, accelerator, weights, kv)
    return {
        "bytes": lambda: fmt_bytes(moves[0][1], "GB"),
        "fastest": lambda: format_time(moves[0][2]),
        "infiniband": lambda: format_time(by_id["ib-ndr"]),
        "pcie": lambda: format_time(by_id["pcie5"]),
        "ssd": lambda: format_time(by_id["nvme-ssd"]),
        "recompute": lambda: format_time(serving.prefill(s, context).seconds),
        "decode_step": lambda: format_time(serving.decode_step(s, 1, context).seconds),
    }[field]()

#: What each engine's own README (or documentation front page) says it does. "yes" only where the
#: project states it; a dash means the page we read does not list it, not that it is missing.
ENGINE_FEATURES = ("continuous batching", "paged KV cache", "prefix caching", "chunked prefill",
                   "speculative decoding", "structured output", "prefill/decode disaggregation")

ENGINES = [
    {"name": "vLLM", "url": "https://github.com/vllm-project/vllm",
     "yes": {"continuous batching", "paged KV cache", "prefix caching", "chunked prefill", "speculative decoding"},
     "docs": {"structured output": "https://github.com/vllm-project/vllm/blob/main/docs/features/structured_outputs.md",
              "prefill/decode disaggregation": "https://github.com/vllm-project/vllm/blob/main/docs/features/disagg_prefill.md"},
     "hardware": "NVIDIA GPUs, AMD and Intel CPUs and GPUs, PowerPC CPUs, TPU, AWS Neuron"},
    {"name": "SGLang", "url": "https://github.com/sgl-project/sglang",
     "yes": set(ENGINE_FEATURES), "docs": {},
     "hardware": "NVIDIA and AMD GPUs, Intel Xeon CPUs, Google TPUs, Ascend NPUs"},
    {"name": "TensorRT-LLM", "url": "https://github.com/NVIDIA/TensorRT-LLM",
     "yes": {"continuous batching", "paged KV cache", "speculative decoding"},
     # Chunked prefill: "Chunked Context", enabled by the LLM API's enable_chunked_prefill (Long
     # Sequences page). Structured output: guided decoding through XGrammar (LLM API example).
     "docs": {"prefix caching": "https://developer.nvidia.com/blog/introducing-new-kv-cache-reuse-optimizations-in-nvidia-tensorrt-llm/",
              "chunked prefill": "https://nvidia.github.io/TensorRT-LLM/features/long-sequence.html",
              "structured output": "https://github.com/NVIDIA/TensorRT-LLM/blob/main/examples/llm-api/llm_guided_decoding.py",
              "prefill/decode disaggregation":
                  "https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/blogs/tech_blog/blog5_Disaggregated_Serving_in_TensorRT-LLM.md"},
     "hardware": "NVIDIA GPUs"},
    {"name": "llama.cpp (server)", "url": "https://github.com/ggml-org/llama.cpp/tree/master/tools/server",
     "yes": {"continuous batching", "speculative decoding", "structured output"},
     # Prefix caching: the request field cache_prompt ("Re-use KV cache from a previous request",
     # default true) and the --cache-reuse option, in the server's README.
     "docs": {"prefix caching": "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md"},
     "hardware": "CPUs, Apple Metal, CUDA, HIP, Vulkan, SYCL and more"},
    {"name": "MLX LM", "url": "https://github.com/ml-explore/mlx-lm",
     "yes": {"prefix caching"}, "docs": {},
     "hardware": "Apple silicon"},
]

@table("engines")
def engines() -> str:
    """Serving engines against the techniques of this part, each "yes" from the project's own README or docs."""
    rows = []
    for e in ENGINES:
        cells = [f"[{e['name']}]({e['url']})"]
        for f in ENGINE_FEATURES:
            if f in e["docs"]:
                cells.append(f"[yes]({e['docs'][f]})")
            else:
                cells.append("yes" if f in e["yes"] else "—")
        cells.append(e["hardware"])
        rows.append(cells)
    return md_table(["engine", *ENGINE_FEATURES, "runs on"], rows, "l" + "c" * len(ENGINE_FEATURES) + "l")

def _check_loop_markers() -> None:
    """Fail the build if the simulator's loop markers moved (the page shows that code)."""
    src = inspect.getsource(serving.simulate)
    if _LOOP_START not in src or _LOOP_END not in src or not re.search(r"# 1\. Admit", src):
        raise ValueError("descent.serving.simulate changed: update simulator_loop's markers")

_check_loop_markers()

#: Measured results the page quotes, each with where it was published.
CITED = {
    "vllm_token_share_low": (0.204, "Kwon et al. 2023, section 1 and figure 2"),
    "vllm_token_share_high": (0.382, "Kwon et al. 2023, section 1 and figure 2"),
    "vllm_paged_waste": (0.04, "vLLM blog, 2023-06-20 (blog.vllm.ai/2023/06/20/vllm.html): waste under 4%"),
}

CITED_FIELD = field_choice("cited_field", "Cited figure", tuple(CITED), "a measured result quoted from a paper")

@value("cited", CITED_FIELD)
def cited(field: str) -> str:
    """A measured result quoted from a paper (the table CITED names the paper and section)."""
    return format_percent(CITED[field][0])

#: Parameters a worked problem may state, by key.
GIVEN = ("prefix_tokens", "prompt_tokens", "hit_rate", "acceptance", "draft_length", "draft_cost", "gpu_price",
         "api_price", "api_input_price", "utilization", "context", "thinking_tokens", "batch", "turns", "output_tokens", "chunk",
         "samples", "ttft_target", "itl_target", "prompt_mean", "output_mean")

GIVEN_NAME = P.declare(P.Param("param", "Given parameter", "choice", key="given_param",
                               choices=[(g, g) for g in GIVEN], help="the declared parameter a problem states"))

GIVEN_VALUE = P.declare(P.Param("value", "Given value", "text", key="given_value", max_length=40,
                                help="its value, checked by that parameter"))

@value("given", GIVEN_NAME, GIVEN_VALUE)
def given(param: str, value: str) -> str:
    """An input of a worked problem, checked by its declared parameter and printed with its unit."""
    p = P.get(param)
    x = p.parse(value)
    if p.type == "int":
        text = format_int(x)
    elif p.unit == "s":
        return format_time(x)
    elif p.unit.startswith("$"):
        return "$" + format_number(x, 3, trim=True) + p.unit[1:]
    elif not p.unit and p.max == 1.0:
        return format_percent(x) if param in ("hit_rate", "utilization", "acceptance") else format_number(x, 3, trim=True)
    else:
        text = format_number(x, 3, trim=True)
    return f"{text} {p.unit}".rstrip()
