"""DESIGN.md is the current design, short enough to read: at most 400 lines, naming every module.

History lives in dated decision records under docs/decisions/ (issue 22), each listed in its index.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "DESIGN.md"
PACKAGE = ROOT / "src" / "descent"
DECISIONS = ROOT / "docs" / "decisions"
MAX_LINES = 400


def test_design_is_at_most_400_lines():
    n = len(DESIGN.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"DESIGN.md has {n} lines; move history to docs/decisions/ (at most {MAX_LINES})"


def test_design_names_every_module_of_the_package():
    text = DESIGN.read_text(encoding="utf-8")
    names = [p.name for p in PACKAGE.glob("*.py")]
    names += [f"{p.name}/" for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    missing = [n for n in sorted(names) if not re.search(rf"(?<![\w.]){re.escape(n)}", text)]
    assert not missing, f"DESIGN.md's layout map does not name {missing}"


def test_every_decision_record_is_dated_and_indexed():
    index = (DECISIONS / "README.md").read_text(encoding="utf-8")
    records = sorted(p for p in DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md"))
    assert records
    for i, p in enumerate(records, 1):
        assert p.name.startswith(f"{i:04d}-"), f"records are numbered in order: {p.name}"
        text = p.read_text(encoding="utf-8")
        assert re.search(r"^- \*\*Date:\*\* 20\d\d-\d\d", text, re.M), p.name
        for part in ("## Context", "## Decision", "## Consequences"):
            assert part in text, f"{p.name} lacks {part}"
        assert f"]({p.name})" in index, f"docs/decisions/README.md does not list {p.name}"
