"""Part 4 widgets (descent.widgets.part4): each one's output against the core function it shows,
worked by hand where a comment says so; the SVG charts (descent.widgets._svg); and the Part 4
page shortcodes (descent.site.values.hardware)."""

from __future__ import annotations

import html
import re

import pytest
from widget_html import stat, text

from descent import attention_io, catalog, memory_tiers, parallel, roofline, tiling
from descent.site import shortcodes
from descent.units import format_bytes, format_percent, format_rate
from descent.widgets import _svg, render_static, run
from descent.widgets import part4 as p4


def _ok(name: str, inputs: dict | None = None) -> str:
    res = run(name, inputs or {})
    assert res["ok"], res
    return res["html"]


def test_registered_with_the_running_example_defaults():
    from descent.widgets import get

    assert get("roofline_explorer").defaults() == {
        "model": "llama-3.1-70b", "accelerator": "h200", "weights": "fp8", "batch": 1, "context": 8192}
    assert get("tiled_gemm").defaults()["tile"] == 64 and get("tiled_gemm").defaults()["element"] == "fp16"
    # The GPU selects offer exactly the GPUs whose internals are recorded.
    assert [v for v, _ in get("gpu_anatomy").input("accelerator").options] == [a.id for a in memory_tiers.gpus()]


def test_gpu_anatomy_h200():
    out = _ok("gpu_anatomy")
    # H100 whitepaper: 132 SMs x 4 tensor cores = 528; 228 KiB of shared memory per SM.
    assert stat(out, "SMs") == "132" and stat(out, "Tensor cores") == "528"
    assert stat(out, "Shared memory per SM") == "228 KiB"
    # 132 x 128 bytes x 1.83 GHz = 30.9 TB/s.
    assert stat(out, "Shared-memory bandwidth") == "30.9 TB/s"
    # One square per SM, a dot per core: a subpath each, in one path for the squares and one for the dots.
    squares = re.search(r'data-shapes="squares" d="([^"]*)"', out).group(1)
    dots = re.search(r'data-shapes="dots" d="([^"]*)"', out).group(1)
    assert squares.count("M") == 132 and dots.count("M") == 4 * 132
    assert "not published" in text(out)  # register and L2 bandwidth
    # AMD calls them compute units; MI300X's LDS is 64 KiB.
    mi = _ok("gpu_anatomy", {"accelerator": "mi300x"})
    assert stat(mi, "CUs") == "304" and stat(mi, "Shared memory per CU") == "64 KiB"
    assert "Infinity Cache" in text(mi)
    assert run("gpu_anatomy", {"accelerator": "groq-lpu"})["ok"] is False


def test_accelerator_landscape():
    out = _ok("accelerator_landscape")
    s = text(out)
    # Llama 3.1 70B, FP8, 8,192 tokens on one H200: fits; the ceiling is descent.memory.size's.
    from descent.memory import size

    z = size("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1)
    assert stat(out, "Decode ceiling per sequence") == p4.format_number(z.decode_tokens_per_s, 3)
    assert f"Fits on one NVIDIA H200 SXM, with {format_bytes(z.free_bytes, 'GB', 3, trim=True)} to spare after the runtime allowance." in s
    assert "HBM stacks beside the die" in s
    # Every catalog chip is a point; the chosen one is ringed (one extra circle). The chart is drawn
    # twice, wide and for a phone (issue 24: on a phone the wide one hid the ringed chip off screen).
    assert out.count("<circle") == 2 * (len(catalog.accelerators()) + 1)
    assert out.count('class="descent-svg__wide"') == out.count('class="descent-svg__narrow"') == 1
    # An SRAM machine gets its chip count, not a single-chip speed (issue 8, section 3).
    g = _ok("accelerator_landscape", {"accelerator": "groq-lpu"})
    assert "Decode ceiling" not in text(g) and stat(g, "Chips to hold it") == p4.format_int(
        size("llama-3.1-70b", "groq-lpu", "fp8", "bf16", 8192, 1).accelerators_needed)
    assert "compiler schedules every transfer" in text(g)


def test_tiled_gemm_by_hand():
    out = _ok("tiled_gemm")
    # 64 x 64 tile in FP16: 64 / 2 = 32 FLOP per byte, 4 times a 16 x 16 tile's 8.
    assert stat(out, "Arithmetic intensity") == "32" and stat(out, "Reuse") == "4"
    # 2 x 256 x 256 x 1,024 = 134,217,728 FLOPs; 16 tiles x 2 strips x 64 x 1,024 x 2 bytes = 4.19 MB.
    assert stat(out, "FLOPs") == "134 MFLOP" and stat(out, "Bytes loaded") == "4.19 MB"
    # Step 5 of a 4 x 4 grid: 5 done, 1 being computed, 10 to do; each cell jumps to its step.
    assert out.count('<td class="descent-cell is-kv"') == 5 and out.count('<td class="descent-cell is-weights"') == 1
    assert out.count("data-set=") == 16
    # A step past this tile size's last tile shows the last, and says so (issue 24).
    one = _ok("tiled_gemm", {"tile": "256", "step": "3"})
    assert "1 output tile, steps 0 to 0: step 3 is past the last" in text(one)
    assert one.count('<td class="descent-cell is-weights"') == 1
    fp8 = _ok("tiled_gemm", {"element": "fp8", "tile": "128", "step": "0"})
    assert stat(fp8, "Arithmetic intensity") == "128"


def test_layer_matmuls_table():
    out = _ok("layer_matmuls", {"batch": "256"})
    rows = tiling.layer_matmuls("llama-3.1-70b", 256, 1.0)
    q, k = rows[0], rows[1]
    # Q projection at 256 tokens: 2 x 256 x 8,192 x 8,192 FLOPs.
    assert q.flops == 2 * 256 * 8192 * 8192 and p4.format_si(q.flops, "FLOP", 3, trim=True) in text(out)
    # Q over 8,192 x 8,192 x 1 + 256 x 16,384 x 2 bytes = 455 FLOP/byte: above the H200's FP8 ridge
    # (412); K over 8,192 x 1,024 + 256 x 9,216 x 2 bytes = 338: below it.
    assert q.intensity == pytest.approx(2 * 256 * 8192 * 8192 / (8192 * 8192 + 256 * 16384 * 2))
    assert k.intensity < 412 < q.intensity
    assert "compute" in text(out) and "memory" in text(out)
    moe = _ok("layer_matmuls", {"model": "gpt-oss-120b"})
    assert "(x 4)" in text(moe) and "mixture of experts" in text(moe)


def test_flash_attention_matches_the_core():
    out = _ok("flash_attention", {"seq_len": "2048", "head_dim": "64", "element": "fp16", "accelerator": "h100-sxm"})
    t = attention_io.traffic(2048, 64, 2, "h100-sxm")
    assert stat(out, "Naive") == format_bytes(t.naive_bytes, "auto", 3, trim=True) == "34.6 MB"
    assert stat(out, "FlashAttention") == format_bytes(t.flash_bytes, "auto", 3, trim=True)
    assert "5 times" in text(out)  # T_c = ceil(2048 / 456) = 5 key blocks
    wide = _ok("flash_attention", {"seq_len": "65536", "head_dim": "256", "element": "fp16", "accelerator": "h100-sxm"})
    assert "3 d² > M" in text(wide)


def test_roofline_explorer():
    out = _ok("roofline_explorer")
    s = roofline.step("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1)
    # Decode intensity: roofline.step's FLOPs over bytes, 2.19 since FP8 sizing keeps the embedding and head
    # in BF16 (descent.weights.KEPT_IN_BF16; 2.22 when they were counted at one byte).
    assert stat(out, "Ridge point") == "412" and stat(out, "Decode intensity") == "2.19"
    assert stat(out, "Decode uses") == format_percent(s.compute_share)
    assert "no batch makes decode compute-bound" in text(out)
    short = _ok("roofline_explorer", {"context": "128", "batch": "1024"})
    assert "from a batch of 239" in text(short)  # roofline.crossover_batch, checked in test_part4_core
    assert "<polyline" in out and out.count("<circle") == 2 * 2  # two marks, in the wide and the narrow chart


def test_flash_attention_hint_matches_its_numbers():
    """Issue 23: doubling N nearly quadruples FlashAttention's traffic too (Dao et al. 2022, Theorem 2:
    Theta(N^2 d^2 / M)); the naive/Flash ratio barely moves; only the floor doubles."""
    from descent.widgets import get

    a, b = (attention_io.traffic(n, 128, 2, "h200") for n in (2048, 4096))
    assert 3.5 < b.flash_bytes / a.flash_bytes < 4 and 3.5 < b.naive_bytes / a.naive_bytes <= 4
    assert abs(b.ratio - a.ratio) < 0.1 and b.floor_bytes == 2 * a.floor_bytes
    hint = dict(get("flash_attention").tries)["Double the tokens."]
    assert "nearly quadruple" in hint and "ratio barely moves" in hint and "only doubles" not in hint


def test_roofline_offers_no_batch_the_chip_cannot_hold():
    """Issue 23: the table stops at the largest batch whose KV cache fits (economics.max_batch); the
    widget names that batch, warns past it, and its hints do not promise a roof no batch reaches."""
    from descent import economics
    from descent.memory import size

    for context in (128, 8192):
        fit = economics.max_batch("llama-3.1-70b", "h200", "fp8", "bf16", context)
        assert size("llama-3.1-70b", "h200", "fp8", "bf16", context, fit).fits
        assert not size("llama-3.1-70b", "h200", "fp8", "bf16", context, fit + 1).fits
        rows = [int(r.split("|")[1].replace(",", "")) for r in
                _resolve(f"table decode_by_batch context={context}").splitlines() if re.match(r"\| [0-9]", r)]
        assert max(rows) == fit == rows[-1]
    out = _ok("roofline_explorer")
    assert stat(out, "Largest batch that fits") == "23"  # 136 GB usable - 72.7 GB weights over 2.68 GB a sequence
    assert "does not fit" not in text(out)
    big = _ok("roofline_explorer", {"batch": "100"})
    assert "A batch of 100 does not fit" in text(big)
    from descent.widgets import get

    hints = " ".join(t for pair in get("roofline_explorer").tries for t in pair)
    assert "until it meets the flat roof" not in hints


def test_crossover_batch_is_the_first_compute_bound_batch():
    b = roofline.crossover_batch("llama-3.1-70b", "h200", "fp8", "bf16", 128)
    assert roofline.step("llama-3.1-70b", "h200", "fp8", "bf16", 128, b).bound == "compute"
    assert roofline.step("llama-3.1-70b", "h200", "fp8", "bf16", 128, b - 1).bound == "memory"
    assert roofline.crossover_batch("llama-3.1-70b", "h200", "fp8", "bf16", 8192) is None


def test_parallelism_guide_example():
    out = _ok("parallelism", {"weights": "bf16", "accelerator": "h100-sxm", "tp": "8"})
    p = parallel.plan("llama-3.1-70b", "h100-sxm", "bf16", "bf16", 8192, 1, tp=8)
    assert stat(out, "Devices") == "8"
    assert stat(out, "Weights per device") == format_bytes(p.weights_bytes_per_device, "GB", 3, trim=True) == "17.6 GB"
    assert stat(out, "All-reduce per layer") == "57.3 KB"
    pipe = _ok("parallelism", {"weights": "bf16", "accelerator": "h100-sxm", "pp": "8", "batch": "8",
                               "microbatches": "8"})
    # A serving engine's steady state (descent.step): 8 micro-batches cycle through 8 stages, every
    # stage busy in every slot of the round: no bubble.
    assert stat(pipe, "Pipeline bubble") == format_percent(0)
    assert pipe.count('<td class="descent-cell is-weights"') == 64 and pipe.count('<td class="descent-cell is-free"') == 0
    # One micro-batch: each stage works 1 slot of the 8-slot round and idles 7.
    one = _ok("parallelism", {"weights": "bf16", "accelerator": "h100-sxm", "pp": "8", "batch": "8",
                              "microbatches": "1"})
    assert stat(one, "Pipeline bubble") == format_percent(7 / 8)
    assert one.count('<td class="descent-cell is-weights"') == 8 and one.count('<td class="descent-cell is-free"') == 56
    ib = _ok("parallelism", {"tp": "8", "link": "ib-ndr"})
    assert "cross the network" in text(ib)
    assert run("parallelism", {"ep": "2"})["field"] == "ep"


def test_svg_chart_is_well_formed_and_escaped():
    markup = _svg.loglog_chart(x_range=(0.1, 100.0), y_range=(1.0, 1e4), x_label="x <&>", y_label="y",
                               x_tick=_svg.decade_label, y_tick=_svg.decade_label,
                               lines=[_svg.Line([(0.1, 1.0), (100.0, 1e4)], label="roof")],
                               marks=[_svg.Mark(1.0, 10.0, 'a "b"', ring=True)], vlines=[_svg.VLine(10.0, "ridge")])
    assert markup.startswith("<svg") and markup.endswith("</svg>") and "x &lt;&amp;&gt;" in markup
    assert "a &quot;b&quot;" in markup
    import xml.dom.minidom

    xml.dom.minidom.parseString(markup)  # well-formed
    assert [_svg.decade_label(x) for x in (0.01, 1, 1000, 1e4, 1e6)] == ["0.01", "1", "1,000", "10k", "1M"]
    with pytest.raises(ValueError, match="range"):
        _svg.loglog_chart(x_range=(0, 1), y_range=(1, 2), x_label="", y_label="", x_tick=str, y_tick=str)


def test_the_narrow_chart_keeps_everything_inside_it():
    """Issue 24, section 5: the phone's chart (330 user units, shown at its natural size) keeps its
    labels inside its width: a label that would cross the right edge goes to the left of its point,
    and x tick labels that would touch are thinned."""
    import re
    import xml.dom.minidom

    kw = dict(x_range=(0.01, 1e6), y_range=(1.0, 1e4), x_label="x", y_label="y",
              x_tick=_svg.decade_label, y_tick=_svg.decade_label,
              marks=[_svg.Mark(5e5, 10.0, "a long label near the right edge", ring=True)],
              vlines=[_svg.VLine(3e5, "a long line label beside the right edge")])
    narrow = _svg.loglog_chart(**kw, narrow=True)
    wide = _svg.loglog_chart(**kw)
    xml.dom.minidom.parseString(narrow)
    assert 'width="330" height="300"' in narrow and 'class="descent-svg__narrow"' in narrow
    assert 'width="560" height="340"' in wide and 'class="descent-svg__wide"' in wide
    assert 'id="chart-narrow-plot"' in narrow and 'id="chart-plot"' in wide  # one clip path each
    # The mark's label is anchored at its end, left of the point (x < 330), not running off the right.
    m = re.search(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="(\w+)"[^>]*>a long label near', narrow)
    assert m and m.group(2) == "end" and float(m.group(1)) < _svg.NARROW_WIDTH
    # The x axis: 9 decades (0.01 to 1M) over 268 units, 33.5 apart; the widest label, "1,000", is
    # 5 x 6.6 = 33 units, 39.6 with a character's gap: every second one is labelled. The wide chart
    # (474 units, 59.25 apart) labels all nine.
    tick = r'text-anchor="middle" style="fill:var\(--dw-fg-light\);font-size:11px">([^<]+)<'
    assert re.findall(tick, narrow) == ["0.01", "1", "100", "10k", "1M"]
    assert re.findall(tick, wide) == ["0.01", "0.1", "1", "10", "100", "1,000", "10k", "100k", "1M"]


def test_every_part4_widget_prerenders():
    for name in ("gpu_anatomy", "accelerator_landscape", "tiled_gemm", "layer_matmuls", "flash_attention",
                 "roofline_explorer", "parallelism"):
        markup = render_static(name)
        assert 'data-state="static"' in markup and "descent-widget__output" in markup


# -- page shortcodes ----------------------------------------------------------------------------


def _resolve(code: str) -> str:
    return html.unescape(shortcodes.resolve(f"<!-- descent:{code} -->", "part-4-hardware.md")).strip()


def test_page_values():
    assert _resolve("value gpu_fact accelerator=h200 field=tensor_cores") == "528"
    assert _resolve("value gpu_fact accelerator=h200 field=shared_vs_hbm_bandwidth") == "6.4 times"
    assert _resolve("value tile_intensity tile=64 element=fp16") == "32 FLOP/byte"
    assert _resolve("value roofline_bound phase=prefill") == "compute-bound"
    assert _resolve("value decode_crossover context=128") == "239"  # test_roofline_explorer
    assert _resolve("value decode_crossover") == "no batch"
    assert _resolve("value link_bandwidth link=nvlink4") == format_rate(450e9)
    with pytest.raises(shortcodes.ShortcodeError, match="not recorded for NVIDIA B200"):
        _resolve("value gpu_fact accelerator=b200 field=shared_bandwidth")


def test_page_tables():
    gpus = _resolve("table gpu_internals")
    assert gpus.count("\n| NVIDIA") + gpus.count("\n| AMD") == len(memory_tiers.gpus())
    arr = _resolve("table memory_arrangement")
    assert "VMEM" in arr and "SBUF" in arr and "compiler schedules every transfer" in arr
    soft = _resolve("table online_softmax_steps")
    m = re.search(r"comes out as ([0-9.]+) block by block and ([0-9.]+) with the plain softmax", soft)
    assert m and m.group(1) == m.group(2)
    wires = [x for x in catalog.links().values() if x.scope != "storage"]
    assert _resolve("table links").count("\n| ") == len(wires) + 1  # header rule line excluded
    by_batch = _resolve("table decode_by_batch context=128")
    assert "compute" in by_batch and "memory" in by_batch


def test_memory_sizes_name_their_unit():
    """Issue 23: the H200's "141 GB" is 141 GiB = 151 GB; the widgets say so, and the pyramid prints
    on-chip sizes in binary units as the page does (L2 50 MiB, not 52.4 MB)."""
    from descent.widgets import get

    out = _ok("gpu_anatomy")
    assert stat(out, "HBM3e") == "141 GiB (151 GB)" and "50 MiB" in text(out)
    land = _ok("accelerator_landscape")
    assert "= 141 GiB of HBM3e, sold as" in text(land)
    assert get("gpu_anatomy").tries[0][0].startswith("Switch from the H200")  # the default GPU


def test_each_asic_is_described_with_its_own_parts():
    """Issue 23: Gaudi 3 is not described with Trainium's NeuronCores, SBUF and PSUM."""
    gaudi = memory_tiers.arrangement("gaudi-3")
    assert "MME" in gaudi.on_chip and "Gaudi 3" in gaudi.source
    assert not any(w in gaudi.on_chip + gaudi.managed for w in ("NeuronCore", "SBUF", "PSUM"))
    assert "NeuronCore" in memory_tiers.arrangement("trainium3").on_chip


def test_allreduce_time_is_mostly_nccl_latency_at_one_conversation():
    """Issue 23: Part 4 says the two all-reduces per layer take "at least" their time, almost all of it
    NCCL's fixed latency (links.toml), and that they slow the split: tokens/s is below the read-only bound."""
    from descent import quantities as Q

    kw = dict(model="llama-3.1-70b", accelerator="h100-sxm", weights="bf16", tp=8)
    ar, rd = Q.get("allreduce_seconds_per_layer")(**kw), Q.get("read_seconds_per_layer")(**kw)
    link = catalog.links()["nvlink4"]
    latency = 2 * (link.base_latency_s + 2 * 7 * link.step_latency_s)  # two ring all-reduces over 8
    bytes_time = Q.get("allreduce_bytes_per_layer")(**kw) / link.bytes_per_s
    assert ar == pytest.approx(latency + bytes_time) and latency > 0.9 * ar
    layers = catalog.model("llama-3.1-70b").num_layers
    assert Q.get("split_decode_tokens_per_s")(**kw) < 1 / (layers * rd)
    from pathlib import Path

    page = Path(__file__).parents[1].joinpath("docs", "part-4-hardware.md").read_text(encoding="utf-8")
    assert "which the site does not model" not in page and "guide's example" not in page


def test_layer_matmuls_hint_starts_from_the_default():
    """Issue 23: the hint switched to FP8, the default already; it now switches to BF16 and the ratio halves."""
    from descent.widgets import get

    w = get("layer_matmuls")
    assert w.defaults()["weights"] == "fp8" and w.tries[1][0] == "Switch to BF16 weights."
    fp8, bf16 = (tiling.layer_matmuls("llama-3.1-70b", 1, b) for b in (1, 2))
    assert all(b.intensity == pytest.approx(a.intensity / 2, rel=0.01) for a, b in zip(fp8, bf16, strict=True))


# ---------------------------------------------------------------------------------------------
# Controls that offer only valid values (issue 24)
# ---------------------------------------------------------------------------------------------


def test_tiled_gemm_step_follows_the_tile_size():
    # The default (64 x 64 tiles of a 256 x 256 output: 16 tiles) renders a step slider of 0-15, not
    # the parameter's 0-255.
    page = render_static("tiled_gemm")
    assert 'id="dw-tiled_gemm-step-range" min="0" max="15"' in page
    # Its own hint, "Double the tile size", from the default step 5: 4 tiles, steps 0-3. The step
    # follows (the last tile is shown, with a note), and the slider ends at 3.
    res = run("tiled_gemm", {"tile": "128"}, "tile")
    assert res["ok"], res
    assert 'data-limits="{&quot;step&quot;: {&quot;max&quot;: 3}}"' in res["html"]
    assert "step 5 is past the last, so the last (3) is shown" in text(res["html"])
    assert "step 3: being computed" in text(res["html"])
    # Every tile size at every step the parameter allows: a result, never an error.
    for tile in tiling.TILE_SIZES:
        for step in (0, 255):
            assert run("tiled_gemm", {"tile": tile, "step": step})["ok"]


def test_parallelism_offers_only_splits_the_model_takes():
    # tp: the divisors of the 64 query heads that fit the 8 KV heads (Megatron's rule); 33 is refused
    # under tp, naming the valid degrees and the nearest.
    res = run("parallelism", {"tp": "33"}, "tp")
    assert not res["ok"] and res["field"] == "tp"
    assert "1, 2, 4, 8, 16, 32 or 64; got 33" in res["message"] and "Nearest allowed: 32 or 64" in res["message"]
    assert res["allowed"]["tp"] == [1, 2, 4, 8, 16, 32, 64]
    # ep: 1 for a dense model (the slider has one position); up to the experts, dividing the batch, for MoE.
    assert run("parallelism", {})["allowed"]["ep"] == [1]
    page = render_static("parallelism")
    assert 'id="dw-parallelism-ep-range" min="0" max="0"' in page
    res = run("parallelism", {"ep": "2"}, "ep")
    assert not res["ok"] and res["field"] == "ep" and "is dense" in res["message"]
    moe = run("parallelism", {"model": "mixtral-8x7b", "batch": "16"}, "batch")
    assert moe["ok"] and moe["allowed"]["ep"] == [1, 2, 4, 8]
    res = run("parallelism", {"model": "mixtral-8x7b", "batch": "16", "ep": "16"}, "ep")
    assert not res["ok"] and res["field"] == "ep" and "8 experts" in res["message"]
    # Micro-batches: the slider ends at the batch; more than the batch runs one per sequence, said.
    res = run("parallelism", {"batch": "8", "pp": "8", "microbatches": "4070"}, "batch")
    assert res["ok"], res
    assert 'data-limits="{&quot;microbatches&quot;: {&quot;max&quot;: 8}}"' in res["html"]
    assert "so 8 are used" in text(res["html"])
    assert stat(res["html"], "Pipeline bubble") == format_percent(0)


def test_scenario_keeps_megatrons_tensor_parallel_rule():
    from descent import transformer
    from descent.scenario import Scenario

    with pytest.raises(ValueError, match=r"1, 2, 4, 8, 16, 32 or 64; got 33"):
        Scenario(tp=33)
    with pytest.raises(ValueError, match=r"SmolLM2-135M's 9 query heads .* 3 KV heads: 1, 3 or 9; got 2"):
        Scenario(model="smollm2-135m", tp=2)
    assert transformer.tp_degrees(catalog.model("qwen3-next-80b-a3b")) == [1, 2, 4, 8, 16]  # 2 KV heads copied
    # Every catalog model the site splits at tp 2, 4 or 8 still splits there.
    for m in catalog.models().values():
        if m.id != "smollm2-135m":
            for tp in (1, 2, 4, 8):
                Scenario(model=m.id, tp=tp)
