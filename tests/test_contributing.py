"""The contributing page's worked example is real: its catalog row loads and gives the right count."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from descent import catalog, memory, transformer

ROOT = Path(__file__).resolve().parents[1]


def _example_row() -> str:
    text = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    return re.search(r"```toml\n(.*?)```", text, re.S).group(1)


def test_the_worked_example_is_one_catalog_row():
    base = resources.files("descent.catalog").joinpath("models.toml").read_text(encoding="utf-8")
    models = catalog.load_models(base + "\n" + _example_row())
    m = models["qwen2.5-7b"]
    # Qwen2.5-7B-Instruct's model.safetensors.index.json: total_size 15,231,233,024 bytes of BF16
    # tensors = 7,615,616,512 parameters (2 bytes each), which the model card rounds to 7.61B.
    assert transformer.param_counts(m).total == 15_231_233_024 // 2
    # ... and the sizing engine takes the new row as it is: BF16 weights are those 15.2 GB.
    s = memory.size(m, "rtx-5090", "bf16", "bf16", 8192, 1)
    assert s.weights_bytes == 15_231_233_024 and s.fits
