"""The chips on the written pages: the reference table's peak column and memory, the decode
comparison across chips (SRAM machines left out), the figures that draw two dozen chips."""

from __future__ import annotations

from pathlib import Path

from descent import catalog
from descent.memory import across_field
from descent.site.figures import load_recipe, render
from descent.site.values import across_chips
from descent.site.values import catalog as values

ROOT = Path(__file__).resolve().parent.parent


def _row(table: str, name: str) -> list[str]:
    line = next(x for x in table.splitlines() if f"[{name}]" in x or x.startswith(f"| {name} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_reference_peak_column_says_what_each_figure_is():
    t = values.accelerators_table()
    header = [c.strip() for c in t.strip().splitlines()[0].strip("|").split("|")]
    assert header[4] == "16-bit dense"
    # Groq quotes FP16 (188 TFLOPS); Cerebras an FP16 "peak AI" figure without saying dense or sparse
    assert _row(t, "Groq LPU (GroqChip)")[4] == "188 TFLOP/s (FP16)"
    assert _row(t, "Cerebras WSE-3")[4] == "125 PFLOP/s (FP16; dense or sparse not stated)"
    assert _row(t, "NVIDIA T4")[4] == "65 TFLOP/s (FP16)"  # Turing has no BF16
    assert _row(t, "Apple M4 Max (MacBook Pro, 128 GB)")[4] == "17.2 TFLOP/s (estimate)"
    assert _row(t, "NVIDIA GeForce RTX 5060 Ti 16 GB")[5] == "94.8 TFLOP/s (derived)"
    # RTX 5090 FP8: 419.2 with FP32 accumulation, not the 838.4 FP16-accumulate figure
    assert _row(t, "NVIDIA GeForce RTX 5090")[5] == "419.2 TFLOP/s"
    assert _row(t, "NVIDIA H100 SXM")[4] == "989.4 TFLOP/s"  # a plain dense BF16 peak: no bracket
    # years are plain numbers, not "2,022"
    assert _row(t, "NVIDIA H100 SXM")[7] == "2022"


def test_reference_memory_in_the_vendors_unit():
    t = values.accelerators_table()
    assert _row(t, "NVIDIA GeForce RTX 4090")[2] == "24 GiB GDDR6X (25.77 GB)"
    assert _row(t, "Cerebras WSE-3")[2] == "44 GB SRAM"  # decimal, as Cerebras means it
    assert _row(t, "Groq LPU (GroqChip)")[2] == "230.7 MB SRAM"


def test_decode_table_leaves_out_machines_that_only_serve_sharded():
    t = across_chips.decode_speed_across_field("llama-3.1-70b", "fp8", "bf16", 8192, 1)
    rows = [x for x in t.splitlines() if x.startswith("| ") and not x.startswith("| accelerator")]
    shown = {x.split("|")[1].strip() for x in rows[1:]}
    sram = {a.name for a in catalog.accelerators().values() if a.kind in catalog.SHARDED_KINDS}
    assert sram == {"Groq LPU (GroqChip)", "Cerebras WSE-3"}
    assert not shown & sram and "if it fit" not in " ".join(x for x in rows if "Groq" in x or "Cerebras" in x)
    assert len(rows) - 1 == len(catalog.accelerators()) - len(sram)
    # ...and says how many chips the model needs: 72.66 GB of FP8 weights (embedding and head at BF16:
    # test_dials.test_decode_step_by_hand) + 2.68 GB of KV cache = 75.34 GB over 0.9 x 230.7 MB per Groq
    # chip = 362.9 -> 363 chips; over 0.9 x 44 GB per wafer -> 2
    needed = {s.accelerator: s.accelerators_needed for s in across_field("llama-3.1-70b", "fp8")}
    assert needed["groq-lpu"] == 363 and needed["cerebras-wse-3"] == 2
    # Binary units with decimal ones in parentheses, 3 figures: 230,686,720 B = 220 MiB = 231 MB;
    # 44e9 B = 40.98 GiB = 44 GB.
    assert "Groq LPU would need at least 363 chips of 220 MiB (231 MB) each." in t
    assert "Cerebras WSE-3 would need at least 2 chips of 41 GiB (44 GB) each." in t


def test_part4_decode_ceilings_table_leaves_them_out_too():
    t = across_chips.decode_ceilings_table("llama-3.1-70b", "fp8", "bf16", 8192, 1)
    rows = [x for x in t.splitlines() if x.startswith("| ")]
    assert not any("Groq" in x or "Cerebras" in x for x in rows)
    assert "Not in the comparison: the machines that keep the weights in on-chip memory" in t
    assert "Cerebras WSE-3 would need at least" in t and "Groq LPU would need at least" in t


def test_decode_figure_draws_no_sram_bar_and_every_other_chip():
    recipe = load_recipe(ROOT / "figures" / "decode-speed-across-field.py")
    svg = render(recipe, "light").decode()
    for a in catalog.accelerators().values():
        label = a.name.replace("&", "&amp;")
        if a.kind in catalog.SHARDED_KINDS:
            assert label not in svg, a.id
        else:
            assert label in svg, a.id


def test_capacity_figure_labels_do_not_overlap():
    """Every memory-fed chip has a label, and no two label boxes overlap (the greedy placement)."""
    import importlib.util

    from descent import plotting

    path = ROOT / "figures" / "accelerator-bandwidth-capacity.py"
    spec = importlib.util.spec_from_file_location("capacity_fig", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    theme = plotting.THEMES["light"]
    with plotting.style(theme):
        fig = mod.make(theme)
        renderer = FigureCanvasAgg(fig).get_renderer()
        ax = fig.axes[0]
        texts = [t for t in ax.texts]
        boxes = [t.get_window_extent(renderer) for t in texts]
    names = " ".join(t.get_text() for t in texts)
    for a in catalog.accelerators().values():
        if a.kind not in catalog.SHARDED_KINDS:
            assert mod._short(a) in names, a.id
    for i, b in enumerate(boxes):
        for c in boxes[i + 1:]:
            assert not b.overlaps(c), (texts[boxes.index(b)].get_text(), texts[boxes.index(c)].get_text())


def test_decode_widget_draws_no_one_chip_bar_for_sram_machines():
    from descent import widgets

    html = widgets.run("decode_across_field", {"model": "llama-3.1-70b", "weights": "fp8"})["html"]
    bars, _, notes = html.partition("Not in the comparison")
    assert "Groq" not in bars and "Cerebras" not in bars  # no one-chip bar for the SRAM machines
    assert "Groq LPU would need at least" in notes  # named below, with the chips the model needs
