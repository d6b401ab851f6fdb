"""Every "Try this" hint of every widget is valid and does what it says (issue 24 section 1, issue 23
section 1's hints).

A hint is either an input change (``tries``' third element: the inputs it sets) or a
:class:`descent.widgets.Look` (it points at something the widget shows, or at a widget above it
on the page). This test

1. finds no hint that is neither, in any widget;
2. applies every input change from the widget's defaults and from every page's shortcode
   arguments (the "Try it" button starts from the values the page drew the widget with), and
   expects a result, not an error;
3. checks the effect each hint claims (:data:`EFFECTS`), by the package's own computation at the
   two sets of inputs: a direction ("falls", "grows"), a ratio ("doubles", "an eighth"), a verdict
   ("no longer fits"). A hint whose claim is not a checkable statement about numbers is listed in
   :data:`UNCHECKED` with the reason; every hint is in one of the two;
4. checks that what a Look points at is there.

Where an expected value comes from: always the package (quantities, the step model, the catalog,
the recorded traces) at the hint's inputs and at the base inputs; no number here is typed in from
a result.
"""

from __future__ import annotations

import html as _html
import math
import re
from pathlib import Path

import pytest

from descent import (
    catalog,
    floats,
    numerics,
    quant,
    recorded,
    replay,
    sampling,
    serving,
    tiling,
    tokenizer,
    transformer,
)
from descent import quantities as Q
from descent import weights_sample as ws
from descent.memory import size
from descent.widgets import _compute, check_constraints, coerce, get, names, render_static, run

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------
# Running a widget
# ---------------------------------------------------------------------------------------------


class Run:
    """A widget computed at some inputs: its typed ``values``, its ``views``, its stats by label."""

    def __init__(self, name: str, inputs: dict):
        self.name = name
        w = get(name)
        self.values = coerce(w, inputs)
        check_constraints(w, self.values)
        self.views = _compute(w, self.values)
        self.stats = {x["label"]: x for x in self.views if x["kind"] == "stat"}

    def __getattr__(self, key):  # values by name: t.batch, d.model
        try:
            return self.__dict__["values"][key]
        except KeyError:
            raise AttributeError(key) from None

    def q(self, name: str):
        """Quantity ``name`` at these inputs (the package's computation the stat prints)."""
        q = Q.get(name)
        return q(**{p.name: self.values[p.name] for p in q.params if p.name in self.values})

    def stat(self, label: str) -> str:
        return str(self.stats[label]["value"])

    def num(self, label: str) -> float:
        return number(self.stat(label))

    def note(self, label: str) -> str:
        return self.stats[label]["note"]

    def kind(self, kind: str) -> list[dict]:
        return [x for x in self.views if x["kind"] == kind]


_SCALE = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "": 1.0, "%": 0.01, "×": 1.0,
          "B": 1.0, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30,
          "TiB": 2**40}


def number(text: str) -> float:
    """A printed number read back in its base unit: "1,030" -> 1030, "1.47 min" -> 88.2, "57.2%" -> 0.572,
    "$1.36" -> 1.36, "2.68 GB" -> 2.68e9."""
    m = re.fullmatch(r"\$?(-?[0-9][0-9,]*(?:\.[0-9]+)?)\s*([^\s0-9]*)", text.strip())
    assert m, f"not a number: {text!r}"
    return float(m[1].replace(",", "")) * _SCALE[m[2]]


# ---------------------------------------------------------------------------------------------
# The bases a hint is applied from
# ---------------------------------------------------------------------------------------------


def page_instances() -> dict[str, list[dict]]:
    """For each widget, the shortcode arguments of every page that shows it with some."""
    from descent.site.shortcodes import find_shortcodes

    out: dict[str, list[dict]] = {}
    for page in sorted((ROOT / "docs").glob("*.md")):
        for sc in find_shortcodes(page.read_text(encoding="utf-8"), page.name):
            args = {k: v for k, v in sc.args.items() if k != "id"}
            if sc.kind == "widget" and args:
                out.setdefault(sc.name, []).append(args)
    return out


def pages_showing(name: str) -> list[tuple[str, str]]:
    """``(page, its text)`` for every page with a widget shortcode of ``name``."""
    pat = re.compile(r"<!--\s*descent:widget\s+" + re.escape(name) + r"[\s-]")
    return [(p.name, p.read_text(encoding="utf-8")) for p in sorted((ROOT / "docs").glob("*.md"))
            if pat.search(p.read_text(encoding="utf-8"))]


def hints():
    """Every hint of every widget: ``(widget, index, what, notice, inputs, look)``."""
    for name in names():
        w = get(name)
        for i, ((what, notice), inputs, look) in enumerate(zip(w.tries, w.try_inputs, w.try_looks, strict=True)):
            yield name, i, what, notice, inputs, look


def cases():
    """``(widget, what, base, inputs)`` for every input-change hint from every base."""
    pages = page_instances()
    for name, _, what, _, inputs, _ in hints():
        if inputs is None:
            continue
        for base in [{}, *pages.get(name, [])]:
            yield pytest.param(name, what, base, inputs,
                               id=f"{name}:{what[:30]}" + ("" if not base else ":" + ",".join(f"{k}={v}" for k, v in base.items())))


# ---------------------------------------------------------------------------------------------
# The effects each hint claims. d: the widget at the base inputs; t: with the hint applied.
# ---------------------------------------------------------------------------------------------


def _need(r: Run) -> float:
    """The accelerator landscape's need line: weights and KV cache over the share left by the runtime."""
    from descent import params as P

    s = size(r.model, r.accelerator, r.weights, P.KV.default, P.CONTEXT.default, P.BATCH.default)
    return (s.weights_bytes + s.kv_cache_bytes) / (1 - P.RUNTIME.default / 100)


def _landscape_bigger(d: Run, t: Run):
    chips = catalog.accelerators().values()
    assert _need(t) > _need(d)
    assert sum(a.memory_bytes >= _need(t) for a in chips) < sum(a.memory_bytes >= _need(d) for a in chips)


def _landscape_fastest(d: Run, t: Run):
    chips = list(catalog.accelerators().values())
    fastest = catalog.accelerator(t.accelerator)
    assert fastest.memory_bandwidth == max(a.memory_bandwidth for a in chips)
    assert fastest.memory_bytes < max(a.memory_bytes for a in chips)


def _trace(prompt_id: str) -> dict:
    return recorded.prompt_trace(prompt_id)


def _fan_first(d: Run, t: Run):
    from descent.widgets.part1_model import head_tops

    tops = head_tops(t.prompt, t.layer)
    assert 2 * tops.count(0) > len(tops), tops  # most on the first token
    assert tops[t.head - 1] != 0  # the head the hint shows looks elsewhere
    for layer in range(1, t.layer):  # "the first layer where most heads ...": none below it
        below = head_tops(t.prompt, layer)
        assert 2 * below.count(0) <= len(below), (layer, below)


def _fan_content(d: Run, t: Run):
    from descent.widgets.part1_model import _LAYERS, head_tops

    tokens = _trace(t.prompt)["tokens"]
    top = head_tops(t.prompt, t.layer)[t.head - 1]
    assert t.layer > _LAYERS // 3
    assert tokens[top]["text"].strip() == "France"  # the capital question's country


def _fan_spread(d: Run, t: Run):
    spread = d.num("Spread")
    assert 1 <= spread <= len(_trace(d.prompt)["tokens"])


def _loop_bars(r: Run) -> tuple[float, float]:
    bars = [b for v in r.kind("bar_list") for b in v["rows"] if b["label"] in ("With a KV cache", "Without a cache")]
    return bars[0]["value"], bars[1]["value"]


def _auto_step(d: Run, t: Run):
    assert d.num("This step, with a KV cache") == t.num("This step, with a KV cache") == 1
    assert t.num("This step, without a cache") > d.num("This step, without a cache")


def _auto_last(d: Run, t: Run):
    from descent.widgets.part1_tokens import loop_work

    (cw_d, cn_d), (cw_t, cn_t) = _loop_bars(d), _loop_bars(t)
    assert cn_t - cw_t > cn_d - cw_d
    gaps = [cn - cw for _, _, cw, cn in loop_work(len(_trace("chat")["tokens"]), t.step + 1)]
    assert all(b > a for a, b in zip(gaps[1:], gaps[2:], strict=False))  # it widens every step


def _batching_static(d: Run, t: Run):
    assert t.q("throughput_tokens_per_s") < d.q("throughput_tokens_per_s")
    assert t.q("latency_p50_s") > d.q("latency_p50_s")


def _batching_rate(d: Run, t: Run):
    assert t.q("slot_utilization") > d.q("slot_utilization")
    assert t.q("latency_p50_s") > d.q("latency_p50_s")


def _blocks(r: Run):
    from descent.widgets.part2 import block_scaling_compute

    return block_scaling_compute(r.outlier, r.position)


def _outlier_up(d: Run, t: Run):
    bd, bt = _blocks(d), _blocks(t)
    own = {d.position // 16, (d.position // 32) * 2, (d.position // 32) * 2 + 1}
    others = [i for i in range(len(bd["tensor"]["groups"])) if i not in own]
    assert bt["tensor"]["rmse"] > bd["tensor"]["rmse"]
    assert sum(bt["tensor"]["groups"][i] for i in others) > sum(bd["tensor"]["groups"][i] for i in others)
    for scheme in ("mxfp4", "nvfp4"):  # a scale per block: the other blocks do not change at all
        assert [bt[scheme]["groups"][i] for i in others] == [bd[scheme]["groups"][i] for i in others]


def _outlier_moves(d: Run, t: Run):
    for r in (d, t):
        b = _blocks(r)
        worst = max(range(len(b["nvfp4"]["groups"])), key=lambda i: b["nvfp4"]["groups"][i])
        assert worst == r.position // 16
        worst = max(range(len(b["mxfp4"]["groups"])), key=lambda i: b["mxfp4"]["groups"][i])
        assert worst // 2 == r.position // 32


def _lower_utilization(d: Run, t: Run):
    assert t.q("cost_per_million_usd") > d.q("cost_per_million_usd")


def _lower_api(d: Run, t: Run):
    assert t.q("break_even_utilization") > d.q("break_even_utilization")


def _input_free(d: Run, t: Run):
    assert t.q("api_bill_per_million_output") == pytest.approx(t.api_price)
    assert d.q("api_bill_per_million_output") > t.q("api_bill_per_million_output")


def _field(r: Run) -> list[dict]:
    return r.kind("bar_list")[0]["rows"]


def _field_bf16(d: Run, t: Run):
    rd, rt = {b["label"]: b for b in _field(d)}, {b["label"]: b for b in _field(t)}
    assert all(rt[k]["value"] < rd[k]["value"] for k in rd)
    assert sum(not b["greyed"] for b in rt.values()) <= sum(not b["greyed"] for b in rd.values())


def _field_small(d: Run, t: Run):
    bars = _field(t)
    assert sum(not b["greyed"] for b in bars) >= len(bars) - 2
    by_name = {a.name: a.memory_bandwidth for a in catalog.accelerators().values()}
    order = [b["label"] for b in sorted(bars, key=lambda b: -b["value"])]
    assert order == sorted(order, key=lambda n: -by_name[n])


def _embedding_group(word: str, group: str) -> set[str]:
    return {w["word"].casefold() for w in recorded.embedding_data()["words"] if w["group"] == group and w["word"] != word}


def _neighbours(word: str) -> list[str]:
    row = next(w for w in recorded.embedding_data()["words"] if w["word"] == word)
    return [n["text"].strip().casefold() for n in row["neighbours"]]


def _colour(d: Run, t: Run):
    assert sum(n in _embedding_group(t.word, "colours") for n in _neighbours(t.word)) >= 3


def _country(d: Run, t: Run):
    assert sum(n in _embedding_group(t.word, "countries") for n in _neighbours(t.word)) >= 3
    assert not any(n in _embedding_group(t.word, "capitals") for n in _neighbours(t.word))


def _analogies(d: Run, t: Run):
    al = recorded.embedding_data()["analogies"]
    assert 2 * sum(a["rank_all"] > 1 for a in al) > len(al)  # an input word often ranks above it
    assert 2 * sum(a["rank_excluding_inputs"] == 1 for a in al) > len(al)  # usually first without them
    a = al[int(t.analogy)]
    assert a["rank_excluding_inputs"] < a["rank_all"]


def _flash_tokens(d: Run, t: Run):
    assert t.q("attention_naive_bytes") / d.q("attention_naive_bytes") > 3
    assert t.q("attention_flash_bytes") / d.q("attention_flash_bytes") > 3
    assert t.q("attention_io_ratio") / d.q("attention_io_ratio") == pytest.approx(1, abs=0.1)


def _flash_head(d: Run, t: Run):
    assert t.q("attention_naive_bytes") > d.q("attention_naive_bytes")
    assert t.q("attention_flash_bytes") > d.q("attention_flash_bytes")
    assert t.q("attention_io_ratio") < d.q("attention_io_ratio")


def _float_fp32(d: Run, t: Run):
    e16, e32 = (abs(floats.relative_error(f, float(t.value))) for f in ("bf16", "fp32"))
    assert e16 > 1000 * e32 > 0


def _float_flip(d: Run, t: Run):
    assert float(t.stat("Stored value")) / float(d.stat("Stored value")) > 2.0**64


def _float_e4m3(d: Run, t: Run):
    f = floats.get(t.format)
    assert float(t.value) > f.max and math.isnan(f.round(float(t.value)).value)
    assert t.stat("Stored value") == floats.value_text(math.nan)


def _chips_text(r: Run, caption_start: str) -> list[str]:
    v = next(x for x in r.kind("chips") if x["caption"].startswith(caption_start))
    return [c["text"] for c in v["chips"]]


def _loop_next(d: Run, t: Run):
    steps = _trace("story")["generation"]["steps"]
    context = _chips_text(t, f"Step {t.step}:")
    for s in range(d.step, t.step):
        assert context[len(context) - (t.step - s)] == steps[s]["token"]["text"]


def _loop_chat(d: Run, t: Run):
    question = tokenizer.smollm2().tokens_of(t.prompt)
    read = _chips_text(t, f"Step {t.step}:")
    prompt_tokens = len(_trace("chat")["tokens"])
    assert prompt_tokens == len(tokenizer.smollm2().tokens_of(tokenizer.apply_chat_template(
        [{"role": "user", "content": t.prompt}])))
    assert prompt_tokens - len(question) > len(question) and len(read) >= prompt_tokens


def _loop_unsure(d: Run, t: Run):
    s = _trace("story")["generation"]["steps"][t.step]
    assert s["probability"] < 0.5 and s["probability"] == max(a["probability"] for a in s["alternatives"])
    assert s["probability"] == min(x["probability"] for x in _trace("story")["generation"]["steps"])


def _gguf_q8(d: Run, t: Run):
    assert 1.5 < t.num("Bits per weight") / d.num("Bits per weight") < 2.1
    assert 1.5 < t.num("File average (Llama-3.1-8B)") / d.num("File average (Llama-3.1-8B)") < 2.1


def _gguf_mix(d: Run, t: Run):
    assert t.num("File average (Llama-3.1-8B)") < d.num("File average (Llama-3.1-8B)")
    assert t.stat("Bits per weight") == d.stat("Bits per weight")  # the same base block: the mix differs


def _b200(d: Run, t: Run):
    from descent import memory_tiers

    a, b = catalog.accelerator(d.accelerator), catalog.accelerator(t.accelerator)
    assert b.memory_bytes > a.memory_bytes and b.memory_bandwidth > a.memory_bandwidth
    assert [x.managed for x in memory_tiers.tiers(a)] == [x.managed for x in memory_tiers.tiers(b)]


def _pyramid(d: Run, t: Run):
    from descent import memory_tiers

    tiers = [x for x in memory_tiers.tiers(catalog.accelerator(d.accelerator)) if x.managed != "link"]
    rates = [x.bandwidth for x in tiers if x.bandwidth is not None]
    assert len(rates) >= 2 and rates == sorted(rates, reverse=True)
    assert tiers[0].per_unit_bytes < 2**20 and tiers[-1].size_bytes >= 2**30  # kilobytes per SM; gigabytes of HBM


def _joules_batch(d: Run, t: Run):
    assert t.q("joules_per_token") < d.q("joules_per_token")


def _joules_pue(d: Run, t: Run):
    assert t.q("joules_per_token") / d.q("joules_per_token") == pytest.approx(t.pue / d.pue)


def _kv_context(d: Run, t: Run):
    assert t.num("KV cache for the context") / d.num("KV cache for the context") == pytest.approx(
        t.context / d.context, rel=0.01)


def _kv_fp8(d: Run, t: Run):
    from descent.widgets.demo import PRECISION_BYTES

    assert t.num("KV cache per token") / d.num("KV cache per token") == pytest.approx(
        PRECISION_BYTES[t.kv] / PRECISION_BYTES[d.kv], rel=0.01)


def _moves(r: Run):
    return serving.kv_transfer(r.model, r.accelerator, r.kv, r.context)


def _transfer_context(d: Run, t: Run):
    md, mt = _moves(d), _moves(t)
    assert mt[0][1] / md[0][1] == pytest.approx(t.context / d.context)
    for (_, _, a), (_, _, b) in zip(md, mt, strict=True):
        assert 0.9 * t.context / d.context < b / a <= t.context / d.context * 1.0001


def _transfer_links(d: Run, t: Run):
    times = {link.label: s for link, _, s in _moves(d)}
    nvlink = min(s for k, s in times.items() if "NVLink" in k)
    others = [s for k, s in times.items() if "PCIe" in k or "InfiniBand" in k or "Ethernet" in k]
    assert others and all(s > 3 * nvlink for s in others)


def _intensities(r: Run) -> list[float]:
    return [x.intensity for x in tiling.layer_matmuls(r.model, r.batch, numerics.precision(r.weights).bytes_per_weight)]


def _matmul_batch(d: Run, t: Run):
    assert all(b > a for a, b in zip(_intensities(d), _intensities(t), strict=True))


def _matmul_bf16(d: Run, t: Run):
    ratio = numerics.precision(d.weights).bytes_per_weight / numerics.precision(t.weights).bytes_per_weight
    for a, b in zip(_intensities(d), _intensities(t), strict=True):
        assert b / a == pytest.approx(ratio, rel=0.02)


def _counts(r: Run):
    from descent.widgets.part1_model import _show_token  # noqa: F401  (the widget's module is loaded)

    return number(r.note("Total parameters")), number(r.note("Active per token"))


def _moe_k(d: Run, t: Run):
    (total_d, act_d), (total_t, act_t) = _counts(d), _counts(t)
    assert total_t == total_d and act_t > act_d


def _chosen(r: Run) -> int:
    grid = r.kind("cell_grid")[0]["cells"]
    return sum(c["cls"] == "is-used" for row in grid for c in row)


def _mixtral(d: Run, t: Run):
    moe = catalog.model(t.model).moe
    assert (moe.num_experts, moe.experts_per_token) == (8, 2) and moe.experts_per_token / moe.num_experts == 0.25
    assert _chosen(t) == 2


def _router_token(d: Run, t: Run):
    from descent.widgets.part1_model import router_logits

    moe = catalog.model(d.model).moe
    k = d.k or moe.experts_per_token
    won = [dict(transformer.route(router_logits(d.model, r.token, moe.num_experts), k, moe.router_scoring,
                                  moe.router_normalize)) for r in (d, t)]
    assert set(won[0]) != set(won[1]) and _counts(d) == _counts(t)


def _guess_case(d: Run, t: Run):
    tok = tokenizer.smollm2()
    assert tok.tokens_of(" paris") != tok.tokens_of(" Paris")
    cands = _trace("capital")["next"]
    texts = [c["text"] for c in cands]
    assert " Paris" in texts and texts.index(" Paris") == 0
    assert t.stat("Your guess") != "#1"  # paris is not the top token Paris is


def _guess_spread(d: Run, t: Run):
    top = [c["probability"] for c in _trace("uncertain")["next"]]
    assert top[0] < _trace("capital")["next"][0]["probability"]
    assert sum(p < top[0] / 2 for p in top[:10]) < 10 and top[0] < 0.5


def _guess_rare(d: Run, t: Run):
    assert len(tokenizer.smollm2().tokens_of(" " + t.guess)) > 1
    assert "not one token" in t.note("Your guess")


def _replay_stages(d: Run, t: Run):
    assert len(replay.STAGES) == 10  # "the ten stages"
    for n in range(1, len(replay.STAGES) + 1):
        assert run("one_token_replayed", {"stage": str(n)})["ok"]


def _replay_token(d: Run, t: Run):
    a, b = replay.embedding_row(d.token), replay.embedding_row(t.token)
    assert a.row_bytes == b.row_bytes and a.values != b.values and a.norm != b.norm


def _replay_prefill(d: Run, t: Run):
    chips = list(catalog.accelerators())
    close = sum(replay.prefill_step(c).seconds / replay.decode_step(c, _trace(replay.PROMPT)["generation"]["steps"][1]
                                                                    ["context_length"]).seconds < 1.5 for c in chips)
    assert 2 * close > len(chips)


def _replay_chip(d: Run, t: Run):
    a, b = replay.prefill_step(d.accelerator), replay.prefill_step(t.accelerator)
    assert a.bytes == b.bytes
    if a.bound == b.bound == "memory":
        bw = catalog.accelerator(t.accelerator).memory_bandwidth / catalog.accelerator(d.accelerator).memory_bandwidth
        assert a.seconds / b.seconds == pytest.approx(bw, rel=0.01)


def _paged_contiguous(d: Run, t: Run):
    assert t.num("Reserved, never used") > 2 * d.num("Reserved, never used")
    assert t.num("Sequences running") < d.num("Sequences running")


def _paged_block(d: Run, t: Run):
    assert t.num("Reserved, never used") > d.num("Reserved, never used")


def _tp8(d: Run, t: Run):
    assert t.q("weights_bytes_per_device") / d.q("weights_bytes_per_device") == pytest.approx(d.tp / t.tp, rel=0.05)
    assert d.q("allreduce_bytes_per_layer") == 0 < t.q("allreduce_bytes_per_layer")


def _pp4(d: Run, t: Run):
    assert t.q("bubble_fraction") == pytest.approx(1 - t.microbatches / t.pp) and t.microbatches == 1
    more = Run("parallelism", {**{k: str(v) for k, v in t.values.items()}, "microbatches": str(t.pp)})
    assert more.q("bubble_fraction") == 0 < t.q("bubble_fraction")


def _ep8(d: Run, t: Run):
    assert t.q("alltoall_bytes_per_layer") > 0 == d.q("alltoall_bytes_per_layer")


def _prompt_longer(d: Run, t: Run):
    assert t.q("prefill_s") > 2 * d.q("prefill_s")
    assert t.num("Time per output token") / d.num("Time per output token") < 1.1


def _no_cache(d: Run, t: Run):
    assert t.num("Time per output token") > d.num("Time per output token")
    passes = [b["value"] for b in t.kind("bar_list")[0]["rows"][1:]]
    assert passes == sorted(passes) and passes[-1] > passes[0]


def _hit_rate(d: Run, t: Run):
    hit = number(t.stat("TTFT on a hit"))
    assert abs(t.num("Expected TTFT") - hit) < abs(d.num("Expected TTFT") - hit)


def _prefix_longer(d: Run, t: Run):
    assert t.num("Prefill arithmetic saved") > d.num("Prefill arithmetic saved")


def _price_bars(d: Run, t: Run):
    from descent import economics

    rows = economics.cost_by_batch(d.model, d.accelerator, d.weights, "bf16", d.context, d.price)
    costs = [r.usd_per_million_tokens for r in rows]
    assert costs == sorted(costs, reverse=True) and costs[-1] < costs[0]


def _price_double(d: Run, t: Run):
    assert t.q("usd_per_million_tokens") / d.q("usd_per_million_tokens") == pytest.approx(t.price / d.price)


def _attend(r: Run) -> list[float]:
    from descent.widgets.part1_model import QKV_PRESETS

    p = QKV_PRESETS[r.preset]
    q = [x * r.scale for x in p["query"]]
    keys = [[x * r.scale for x in k] for k in p["keys"]]
    return transformer.attend(q, keys, p["values"], scale=r.divide)["weights"]


def _qkv_scale(d: Run, t: Run):
    assert max(_attend(t)) > max(_attend(d)) and max(_attend(t)) > 0.9


def _qkv_divide(d: Run, t: Run):
    assert max(_attend(t)) > max(_attend(d))


def _qkv_two(d: Run, t: Run):
    w = sorted(_attend(t), reverse=True)
    assert w[0] == pytest.approx(w[1]) and w[0] + w[1] > 0.5


def _rmse(bits: int, zero_point: bool) -> float:
    w = ws.sample_values()
    return quant.error_stats(w, quant.int_quantize(w, bits, symmetric=not zero_point).values).rmse


def _fewer_bits(d: Run, t: Run):
    assert _rmse(8, d.zero_point) < _rmse(4, d.zero_point) < _rmse(t.bits, t.zero_point)


def _zero_point(d: Run, t: Run):
    assert _rmse(t.bits, True) < _rmse(d.bits, False)


def _roof_batch(d: Run, t: Run):
    assert t.q("intensity") > d.q("intensity")


def _roof_context(d: Run, t: Run):
    assert t.q("max_batch") > 10 * d.q("max_batch")
    share = Q.get("compute_share")
    at = {k: v for k, v in d.values.items() if k in ("model", "accelerator", "weights")}
    assert share(**at, context=d.context, batch=d.q("max_batch")) < 1
    assert share(**at, context=t.context, batch=t.q("max_batch")) == pytest.approx(1)


def _survivors(r: Run) -> dict[int, float]:
    logits = [c["logit"] for c in _trace("story")["next"]]
    return dict(sampling.distribution(logits, r.temperature, r.top_k, r.top_p))


def _draw(r: Run, seed: int) -> int:
    return sampling.sample([c["logit"] for c in _trace("story")["next"]], r.temperature, r.top_k, r.top_p, seed=seed)


def _temp0(d: Run, t: Run):
    assert len(_survivors(t)) == 1
    assert len({_draw(t, s) for s in range(10)}) == 1


def _temp2(d: Run, t: Run):
    assert max(_survivors(t).values()) < max(_survivors(d).values())
    assert len(_survivors(t)) >= len(_survivors(d))


def _top_k1(d: Run, t: Run):
    assert len(_survivors(t)) == 1 < len(_survivors(d))


def _top_p(d: Run, t: Run):
    assert 1 < len(_survivors(t)) < len(_survivors(d))


def _seed(d: Run, t: Run):
    assert _draw(t, t.seed) in _survivors(t)
    assert len({_draw(t, s) for s in range(20)}) > 1  # a different token now and then


def _dials_batch(d: Run, t: Run):
    assert t.q("tokens_per_s_per_user") < d.q("tokens_per_s_per_user")
    assert t.q("tokens_per_s_total") > 2 * d.q("tokens_per_s_total")


def _dials_tp(d: Run, t: Run):
    from descent import dials

    a, b = (dials.server_dials(r.model, r.accelerator, r.weights, "bf16", r.context, r.batch, r.tp, r.price) for r in (d, t))
    assert b.comm_s < a.comm_s and t.q("free_bytes_per_device") < d.q("free_bytes_per_device")


def _sized(r: Run):
    from descent.widgets.part5 import resolve

    model, acc = resolve(r.model, r.accelerator, r.config_json, r.memory_gb, r.bandwidth_gbs, r.tflops)
    return size(model, acc, r.weights, r.kv, r.context, r.batch, runtime_percent=r.runtime_percent)


def _size_bf16(d: Run, t: Run):
    a, b = _sized(d), _sized(t)
    assert b.weights_bytes / a.weights_bytes == pytest.approx(
        numerics.precision(t.weights).bytes_per_weight / numerics.precision(d.weights).bytes_per_weight, rel=0.05)
    assert numerics.precision(t.weights).bytes_per_weight == 2 and b.weights_bytes > a.weights_bytes
    example = Run("size_it_yourself", {})
    assert _sized(example).fits and not _sized(Run("size_it_yourself", {"weights": t.weights})).fits


def _size_kv(d: Run, t: Run):
    b = _sized(t)
    assert b.kv_cache_bytes > b.weights_bytes


def _size_moe(d: Run, t: Run):
    assert catalog.model(t.model).moe is not None
    assert _sized(t).decode_tokens_per_s > _sized(d).decode_tokens_per_s


def _size_batch(d: Run, t: Run):
    a, b = _sized(d), _sized(t)
    assert b.decode_tokens_per_s < a.decode_tokens_per_s
    assert b.decode_tokens_per_s * t.batch > a.decode_tokens_per_s * d.batch


def _spec_acceptance(d: Run, t: Run):
    assert abs(t.q("expected_tokens") - (t.draft_length + 1)) < abs(d.q("expected_tokens") - (d.draft_length + 1))


def _spec_cost(d: Run, t: Run):
    assert d.q("speedup") > 1 > t.q("speedup")


def _stack(r: Run):
    return transformer.stack_params(r.layers, r.d_model, r.heads, r.kv_heads, r.ffn, r.gated, norm=r.norm)


def _stack_layers(d: Run, t: Run):
    a, b = _stack(d), _stack(t)
    assert (b.total, b.attention, b.ffn) == (2 * a.total, 2 * a.attention, 2 * a.ffn)


def _stack_width(d: Run, t: Run):
    assert 3.9 < _stack(t).total / _stack(d).total <= 4


def _stack_mqa(d: Run, t: Run):
    a, b = _stack(d), _stack(t)
    assert b.ffn == a.ffn and b.attention < a.attention
    head = d.d_model // d.heads
    assert a.attention - b.attention == pytest.approx(2 * d.layers * d.d_model * head * (d.kv_heads - t.kv_heads), rel=0.01)


def _stack_gated(d: Run, t: Run):
    assert _stack(t).ffn / _stack(d).ffn == pytest.approx(1.5, rel=0.01)


def _tile_bigger(d: Run, t: Run):
    b = tiling.element_bytes(d.element)
    m, n, k = (tiling.GEMM_EXAMPLE[x] for x in ("m", "n", "k"))
    assert tiling.tiled_traffic_bytes(m, n, k, t.tile, b) < tiling.tiled_traffic_bytes(m, n, k, d.tile, b)
    assert tiling.tile_working_set_bytes(t.tile, b) > tiling.tile_working_set_bytes(d.tile, b)
    assert tiling.tile_walk(m, n, k, t.tile, 0).tiles < tiling.tile_walk(m, n, k, d.tile, 0).tiles


def _tile_step(d: Run, t: Run):
    m, n, k = (tiling.GEMM_EXAMPLE[x] for x in ("m", "n", "k"))
    a, b = tiling.tile_walk(m, n, k, d.tile, d.step), tiling.tile_walk(m, n, k, t.tile, t.step)
    assert (a.row, a.col) != (b.row, b.col) and (a.row == b.row or a.col == b.col)  # one strip read again


def _tokens(r: Run) -> list[tuple[str, int]]:
    return tokenizer.smollm2().tokens_of(r.text)


def _tok_rare(d: Run, t: Run):
    words = t.text.rstrip(".").split(" ")
    rare = max(words, key=len)
    assert len(tokenizer.smollm2().tokens_of(" " + rare)) > 2
    common = [w for w in words if w != rare and len(w) <= 4]
    assert common and all(len(tokenizer.smollm2().tokens_of(" " + w)) == 1 for w in common)


def _tok_digits(d: Run, t: Run):
    assert [x for x, _ in _tokens(t)] == list(t.text)


def _tok_spelling(d: Run, t: Run):
    pieces = _tokens(t)
    assert len(pieces) == 3 and len({i for _, i in pieces}) == 3


def _tok_language(d: Run, t: Run):
    assert len(_tokens(t)) / len(t.text) > len(_tokens(d)) / len(d.text)


def _zoom_layer(d: Run, t: Run):
    assert ws.block(d.layer, d.matrix)[0] != ws.block(t.layer, t.matrix)[0]


def _zoom_weight(d: Run, t: Run):
    scale, minimum, codes = ws.block(t.layer, t.matrix)
    assert t.num("Its value") == pytest.approx(scale * codes[t.weight] + minimum, rel=1e-3)
    assert int(t.stat("Its code")) == codes[t.weight] and 0 <= codes[t.weight] < 16


def _player_frames(r: Run) -> list[dict]:
    return r.kind("player")[0]["frames"]


def _frame_stat(frame: dict, label: str) -> str:
    return next(str(x["value"]) for x in frame["views"] if x["kind"] == "stat" and x["label"] == label)


def _kv_fill_steps(d: Run, t: Run):
    # After the empty frame: the prefill runs the whole prompt, every later pass one token.
    runs = [int(_frame_stat(f, "Tokens run this pass")) for f in _player_frames(d)[1:]]
    prompt = len(recorded.prompt_trace(replay.PROMPT)["tokens"])
    assert runs[0] == prompt and set(runs[1:]) == {1}


def _kv_fill_off(d: Run, t: Run):
    total = [int(_frame_stat(r_.kind("player")[0]["frames"][-1], "Token-processings so far").replace(",", ""))
             for r_ in (d, t)]
    assert total[1] > 2 * total[0]  # races ahead: the square against the length


def _spec_runs(d: Run, t: Run):
    r = recorded.speculative_run()
    assert max(x["accepted"] for x in r["rounds"]) == r["draft_max"]  # some whole drafts survive


def _spec_red(d: Run, t: Run):
    rejected = [x for x in recorded.speculative_run()["rounds"] if x["accepted"] < len(x["draft"])]
    assert rejected and all(x["kept"][-1]["id"] != x["draft"][x["accepted"]]["id"]
                            for x in rejected if len(x["kept"]) > x["accepted"])


def _lanes_static(d: Run, t: Run):
    from descent.widgets.part3_motion import lanes_simulation, lanes_states

    held = {p: sum(c == "is-waste" for st in lanes_states(lanes_simulation(p)) for c, _ in st["slots"])
            for p in (d.policy, t.policy)}
    assert held[t.policy] > 0 == held[d.policy]


def _lanes_count(d: Run, t: Run):
    from descent.widgets.part3_motion import lanes_simulation

    assert lanes_simulation("continuous").steps < lanes_simulation("static").steps


def _tiles_naive(d: Run, t: Run):
    from descent.widgets.part4_motion import flash_tiles_frames

    ends = [flash_tiles_frames(r_.kernel, r_.seq_len, r_.accelerator)["bytes"][-1] for r_ in (d, t)]
    assert ends[1] > ends[0]


def _tiles_half(d: Run, t: Run):
    tiles = [len(_player_frames(r_)) - 1 for r_ in (d, t)]
    assert tiles[0] / tiles[1] == pytest.approx(4, rel=0.3)



def _any_token_heads(d: Run, t: Run):
    # "Click each token": the default head is a previous-token head (every token after the first
    # puts most weight on the one before it), in the recorded weights themselves.
    from descent.widgets.part1_motion import tops

    assert all(top == i - 1 for i, top in enumerate(tops(d.layer, d.head)) if i)


def _any_token_sink(d: Run, t: Run):
    from descent.widgets.part1_motion import tops

    assert tops(t.layer, t.head) == [0] * len(recorded.attention_rows()["tokens"]) != tops(d.layer, d.head)


def _ring_steps(r_: Run):
    from descent.widgets.part4_motion import allreduce_ring_frames

    return allreduce_ring_frames(int(r_.tp), r_.batch, r_.link)["steps"]  # parallel.ring_allreduce's


def _ring_more(d: Run, t: Run):
    a, b = _ring_steps(d), _ring_steps(t)
    assert len(b) > len(a) and b[1].shard_bytes < a[1].shard_bytes
    assert b[-1].sent_bytes < 1.5 * a[-1].sent_bytes  # "barely grow": 2 (p - 1) / p of the message


def _ring_batch(d: Run, t: Run):
    wire = catalog.link(t.link)
    steps = [_ring_steps(r_)[1] for r_ in (d, t)]
    # Per step: the shard's time on the wire as a share of the step's time (the rest: its latency).
    share = [x.shard_bytes / wire.bytes_per_s / (x.shard_bytes / wire.bytes_per_s + wire.step_latency_s) for x in steps]
    assert steps[1].shard_bytes > steps[0].shard_bytes and share[1] > share[0]


def _distill_samples(d: Run, t: Run):
    from descent import published

    s1 = next(x for x in published.DISTILLED if x.name == t.student)
    twin = next(x for x in published.DISTILLED if x.billions == s1.billions and x is not s1)
    assert s1.samples < twin.samples / 100 and twin.score > s1.score > twin.score * 0.7


def _distill_small(d: Run, t: Run):
    from descent import published

    small = next(x for x in published.DISTILLED if x.name == t.student)
    assert small.billions == min(x.billions for x in published.DISTILLED)
    assert small.score > published.AIME_DISTILLED["GPT-4o-0513"]


#: (widget, the hint's opening words) -> the check of its effect.
EFFECTS = {
    ("attention_any", "Click each token"): _any_token_heads,
    ("attention_any", "Go to layer"): _any_token_sink,
    ("allreduce_ring", "Go to 8 GPUs"): _ring_more,
    ("allreduce_ring", "Raise the batch"): _ring_batch,
    ("distillation", "Put the fine-tuning samples"): _distill_samples,
    ("distillation", "Pick the 1.5B student"): _distill_small,
    ("accelerator_landscape", "Pick a bigger model"): _landscape_bigger,
    ("accelerator_landscape", "Pick the chip highest up"): _landscape_fastest,
    ("attention_fan", "Step through the heads"): _fan_first,
    ("attention_fan", "Go to a middle or late layer"): _fan_content,
    ("attention_fan", "Watch the spread"): _fan_spread,
    ("autoregression", "Step forward"): _auto_step,
    ("autoregression", "Go to the last step"): _auto_last,
    ("batching", "Switch from continuous to static"): _batching_static,
    ("batching", "Raise the arrival rate"): _batching_rate,
    ("block_scaling", "Raise the outlier"): _outlier_up,
    ("block_scaling", "Move the outlier"): _outlier_moves,
    ("break_even", "Lower the utilization"): _lower_utilization,
    ("break_even", "Lower the API price"): _lower_api,
    ("break_even", "Set the input price to zero"): _input_free,
    ("decode_across_field", "Switch the weights to BF16"): _field_bf16,
    ("decode_across_field", "Pick a small model"): _field_small,
    ("embedding_neighbours", "Pick a colour"): _colour,
    ("embedding_neighbours", "Pick a country"): _country,
    ("embedding_neighbours", "Try each analogy"): _analogies,
    ("flash_attention", "Double the tokens"): _flash_tokens,
    ("flash_attention", "Raise the head dimension"): _flash_head,
    ("float_bits", "Type 0.1 in BF16"): _float_fp32,
    ("float_bits", "Click the highest exponent bit"): _float_flip,
    ("float_bits", "Pick FP8 E4M3"): _float_e4m3,
    ("generation_loop", "Press next step"): _loop_next,
    ("generation_loop", "Press A chat question"): _loop_chat,
    ("generation_loop", "Go to the step where"): _loop_unsure,
    ("gguf_name", "Pick Q4_K_M, then Q8_0"): _gguf_q8,
    ("gguf_name", "Type a name with _S"): _gguf_mix,
    ("gpu_anatomy", "Switch from the H200"): _b200,
    ("gpu_anatomy", "Compare the top and the bottom"): _pyramid,
    ("joules_per_token", "Raise the batch"): _joules_batch,
    ("joules_per_token", "Lower the PUE"): _joules_pue,
    ("kv_demo", "Double the context"): _kv_context,
    ("kv_demo", "Switch to FP8"): _kv_fp8,
    ("kv_fill", "Press First, then Next"): _kv_fill_steps,
    ("kv_fill", "Turn the KV cache off"): _kv_fill_off,
    ("batching_lanes", "Switch to static batching"): _lanes_static,
    ("batching_lanes", "Count the iterations"): _lanes_count,
    ("flash_tiles", "Switch to the naive kernel"): _tiles_naive,
    ("flash_tiles", "Halve the sequence"): _tiles_half,
    ("speculative_strip", "Press First, then Next"): _spec_runs,
    ("speculative_strip", "Find a red token"): _spec_red,
    ("kv_transfer", "Lengthen the context"): _transfer_context,
    ("kv_transfer", "Compare the links"): _transfer_links,
    ("layer_matmuls", "Raise the batch"): _matmul_batch,
    ("layer_matmuls", "Switch to BF16"): _matmul_bf16,
    ("moe_router", "Raise k"): _moe_k,
    ("moe_router", "Switch to Mixtral"): _mixtral,
    ("moe_router", "Pick another token"): _router_token,
    ("next_token_guess", "Guess Paris, then paris"): _guess_case,
    ("next_token_guess", "Pick the prompt with no single answer"): _guess_spread,
    ("next_token_guess", "Guess a long or rare word"): _guess_rare,
    ("one_token_replayed", "Step through the ten stages"): _replay_stages,
    ("one_token_replayed", "At stage 2"): _replay_token,
    ("one_token_replayed", "At stage 8"): _replay_prefill,
    ("one_token_replayed", "At stage 9"): _replay_chip,
    ("paged_kv", "Switch from paged blocks"): _paged_contiguous,
    ("paged_kv", "Raise the block size"): _paged_block,
    ("parallelism", "Raise tensor parallelism"): _tp8,
    ("parallelism", "Use pipeline parallelism"): _pp4,
    ("parallelism", "Pick Mixtral 8x7B"): _ep8,
    ("prefill_decode", "Lengthen the prompt"): _prompt_longer,
    ("prefill_decode", "Turn the KV cache off"): _no_cache,
    ("prefix_cache", "Raise the hit rate"): _hit_rate,
    ("prefix_cache", "Lengthen the shared prefix"): _prefix_longer,
    ("price_it_out", "Follow the bars"): _price_bars,
    ("price_it_out", "Double the hourly price"): _price_double,
    ("qkv_example", "Raise the multiplier"): _qkv_scale,
    ("qkv_example", "Turn off the division"): _qkv_divide,
    ("qkv_example", "Pick 'two keys"): _qkv_two,
    ("quantize_weights", "Go from 8 bits"): _fewer_bits,
    ("quantize_weights", "Turn on the zero point"): _zero_point,
    ("roofline_explorer", "Raise the batch"): _roof_batch,
    ("roofline_explorer", "Lower the context"): _roof_context,
    ("sampling", "Set the temperature to 0"): _temp0,
    ("sampling", "Raise the temperature"): _temp2,
    ("sampling", "Set top-k to 1"): _top_k1,
    ("sampling", "Set top-p to 0.9"): _top_p,
    ("sampling", "Change the seed"): _seed,
    ("server_dials", "Raise the batch"): _dials_batch,
    ("server_dials", "Use two chips"): _dials_tp,
    ("size_it_yourself", "Change the weights to BF16"): _size_bf16,
    ("size_it_yourself", "Raise the context and the batch"): _size_kv,
    ("size_it_yourself", "Pick a mixture-of-experts"): _size_moe,
    ("size_it_yourself", "Raise the batch"): _size_batch,
    ("speculative", "Raise the acceptance rate"): _spec_acceptance,
    ("speculative", "Raise the draft cost"): _spec_cost,
    ("stack_calculator", "Double the layers"): _stack_layers,
    ("stack_calculator", "Double d_model"): _stack_width,
    ("stack_calculator", "Lower the key/value heads"): _stack_mqa,
    ("stack_calculator", "Turn on the gated FFN"): _stack_gated,
    ("tiled_gemm", "Double the tile size"): _tile_bigger,
    ("tiled_gemm", "Step through the tiles"): _tile_step,
    ("tokenizer", "Type a long, rare word"): _tok_rare,
    ("tokenizer", "Type a number"): _tok_digits,
    ("tokenizer", "Type a word with and without"): _tok_spelling,
    ("tokenizer", "Paste a sentence"): _tok_language,
    ("weight_zoom", "Pick another layer"): _zoom_layer,
    ("weight_zoom", "Step through the weights"): _zoom_weight,
}

#: (widget, the hint's opening words) -> why its effect is not checked here.
UNCHECKED = {
    ("autoregression", "Load the model above"): "needs the model in the reader's browser (tests/browser/test_model_in_browser.py)",
    ("generation_loop", "Load the model above"): "needs the model in the reader's browser (tests/browser/test_model_in_browser.py)",
    ("next_token_guess", "Load the model above"): "needs the model in the reader's browser (tests/browser/test_model_in_browser.py)",
    ("model_in_browser", "Press the load button"): "needs the model in the reader's browser (tests/browser/test_model_in_browser.py)",
    ("model_in_browser", "Come back tomorrow"): "needs a second visit with the browser's storage (tests/browser/test_model_in_browser.py)",
}


def _effect_key(name: str, what: str, table: dict) -> tuple[str, str] | None:
    keys = [k for k in table if k[0] == name and what.startswith(k[1])]
    assert len(keys) <= 1, keys
    return keys[0] if keys else None


# ---------------------------------------------------------------------------------------------
# The tests
# ---------------------------------------------------------------------------------------------


def test_every_hint_is_an_input_change_or_points_at_something(capsys):
    """No hint is left unexplained: each names its inputs or is a Look; each has its effect checked
    or a reason it is not; no entry of EFFECTS or UNCHECKED is left over from a hint since changed."""
    bare, unaccounted, used = [], [], set()
    applied = looks = 0
    for name, _, what, _, inputs, look in hints():
        if inputs is None and look is None:
            bare.append(f"{name}: {what}")
        applied += inputs is not None
        looks += look is not None
        key = _effect_key(name, what, EFFECTS) or _effect_key(name, what, UNCHECKED)
        if key is None:
            unaccounted.append(f"{name}: {what}")
        used.add(key)
    assert not bare, "hints that are neither an input change nor a Look:\n" + "\n".join(bare)
    assert not unaccounted, "hints with no effect check and no reason:\n" + "\n".join(unaccounted)
    assert not (set(EFFECTS) | set(UNCHECKED)) - used, "entries for hints that no longer exist"
    with capsys.disabled():
        print(f"\n{applied} hints are input changes, {looks} point at something; "
              f"{len(EFFECTS)} effects checked, {len(UNCHECKED)} not (each with its reason)")


@pytest.mark.parametrize("name,what,base,inputs", list(cases()))
def test_each_hint_applies_and_does_what_it_says(name, what, base, inputs):
    """The hint applied as the reader would (its inputs as text, over the base) gives a result; the
    effect it claims holds between the base and the result."""
    raw = {**base, **{k: (v if isinstance(v, bool) else str(v)) for k, v in inputs.items()}}
    res = run(name, raw, next(iter(inputs)))
    assert res["ok"] and "html" in res, (name, what, base, res)
    d, t = Run(name, dict(base)), Run(name, raw)
    # Every input the hint sets is a change: never "switch to FP8" where the weights are FP8 already.
    same = [k for k in inputs if d.values[k] == t.values[k]]
    assert not same, f"{name}: {what!r} sets {same} to the value they already have"
    # "Switch from the H200 to ...": the value it starts from is the one shown.
    w = get(name)
    for k in inputs:
        start = re.search(r"\bfrom (?:the )?([A-Z][\w.-]*(?: [\w.-]+)*?) to\b", what)
        if start and w.input(k).kind in ("select", "segmented"):
            shown = dict((str(v), lbl) for v, lbl in w.input(k).options)[str(d.values[k])]
            assert start[1] in shown, f"{name}: {what!r} starts from {start[1]!r}, the widget shows {shown!r}"
    key = _effect_key(name, what, EFFECTS)
    if key is not None:
        EFFECTS[key](d, t)


@pytest.mark.parametrize("name,what,look", [(n, w, lk) for n, _, w, _, _, lk in hints() if lk is not None],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_a_look_points_at_something_there(name, what, look):
    """What a Look points at is in the widget's default output, or is a widget shown above this one
    on every page that shows this one; its effect, where checked, holds at the defaults."""
    if look.html:
        assert look.html in _html.unescape(render_static(name)), (name, what, look.html)
    if look.page:
        pages = pages_showing(name)
        assert pages, name
        for page, text in pages:
            here = re.search(r"<!--\s*descent:widget\s+" + name + r"[\s-]", text).start()
            above = re.search(r"<!--\s*descent:widget\s+" + look.page + r"[\s-]", text)
            assert above and above.start() < here, f"{page}: {what!r} points at {look.page} above {name}"
    key = _effect_key(name, what, EFFECTS)
    if key is not None:
        EFFECTS[key](Run(name, {}), Run(name, {}))


def test_every_hint_with_inputs_has_a_try_it_button():
    """The page shows a "Try it" button for each input-change hint, carrying exactly its inputs as
    the form writes them (widgets.js sets them over the values the widget was drawn with). It is
    hidden until widgets.js makes the widget live: without JavaScript nothing could apply it."""
    import json

    for name in names():
        w = get(name)
        markup = render_static(name)
        buttons = [json.loads(_html.unescape(m)) for m in re.findall(r'<button type="button" class="descent-widget__try-it" '
                                                                     r'data-try="([^"]*)" hidden ', markup)]
        want = [{k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in d.items()}
                for d in w.try_inputs if d is not None]
        assert len(buttons) == len(want), name
        for got, exp in zip(buttons, want, strict=True):
            assert got.keys() == exp.keys(), name
            for k in got:  # the form's spelling of the same value ("6" for 6.0)
                assert w.input(k).coerce(got[k]) == w.input(k).coerce(exp[k]), (name, k)


def test_a_replay_control_is_offered_only_at_the_stages_it_changes():
    """Issue 23: Part 5's replay offered the token and chip selects at stage 1, where they change
    nothing. Each control shows (``when=``) exactly at the stages where another value of it changes
    the output; elsewhere it is hidden (and not sent)."""
    w = get("one_token_replayed")
    other = {"token": "1", "layer": "2", "accelerator": "b200"}
    for n in range(1, len(replay.STAGES) + 1):
        base = run("one_token_replayed", {"stage": str(n)})["html"]
        for name, value in other.items():
            changes = run("one_token_replayed", {"stage": str(n), name: value})["html"] != base
            shown = str(n) in w.input(name).when_values
            assert changes == shown, (n, name, changes, shown)
    stage1 = render_static("one_token_replayed")
    for name in other:
        field = stage1.split(f'data-field="{name}"', 1)[1].split(">", 1)[0]
        assert " hidden" in field, name
    assert "No control changes this stage" in stage1
