"""Build side and site of Part 5's replay: the committed embedding_rows.json against the real GGUF
(a fresh export, gguf's own dequantization, the forward pass's table), and the stages' links
against the pages' headings and the built site."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from json_compare import differences

from descent import recorded, replay, tokenizer
from descent.trace import embedding_rows

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(scope="module")
def committed():
    return json.loads(embedding_rows.DATA_PATH.read_text(encoding="utf-8"))


def _without_norms(data: dict) -> dict:
    return {**data, "rows": [{k: x for k, x in r.items() if k != "norm"} for r in data["rows"]]}


def test_committed_file_equals_a_fresh_export(committed):
    # Regenerate: python -m descent.trace.embedding_rows. Everything read from the file's bytes (ids,
    # scales, codes, sizes, the file's hash) must be equal; the lengths, sums of 576 squares, within
    # json_compare's tolerance (the order of a float sum may differ between NumPy builds).
    fresh = json.loads(embedding_rows.dumps(embedding_rows.build()))
    assert not differences(committed, fresh), "embedding_rows.json is stale: run python -m descent.trace.embedding_rows"
    assert _without_norms(committed) == _without_norms(fresh)


def test_the_file_stays_small(committed):
    # Six rows of eight codes, not 6 x 576 numbers: under 2 KB (it ships in the browser wheel).
    assert embedding_rows.DATA_PATH.stat().st_size < 2048
    assert len(committed["rows"]) == 6 and all(len(r["codes"]) == embedding_rows.FIRST == 8 for r in committed["rows"])


def test_tokens_are_the_prompts_and_the_chosen_one(committed):
    # Independent of traces.json's token list: the reference tokenizer on the prompt text (SmolLM2
    # adds no BOS), then the run's most probable next token, which greedy decoding wrote.
    tr = recorded.prompt_trace(replay.PROMPT)
    ids = tokenizer.smollm2().encode(tr["prompt"])
    assert [r["id"] for r in committed["rows"]] == [*ids, tr["next"][0]["id"]]
    assert [r["role"] for r in committed["rows"]] == ["prompt"] * len(ids) + ["reply"]


def test_stored_numbers_equal_ggufs_dequantization_and_the_forward_pass(committed):
    # d x q from our reading of the Q8_0 bytes equals gguf-py's dequantize of the same row and the
    # float32 table the NumPy forward pass embeds with (descent.trace.embedding_matrix), exactly.
    from gguf.quants import dequantize

    from descent.trace import embedding_matrix
    from descent.trace.weights import _tensor

    t = _tensor(embedding_rows.TENSOR)
    table = embedding_matrix()  # (V, D) float32
    assert table.shape == tuple(committed["shape"]) == (49152, 576)
    for r in committed["rows"]:
        ref = dequantize(np.asarray(t.data)[r["id"]][None], t.tensor_type)[0]  # (D,)
        mine = np.float32(r["d"]) * np.array(r["codes"], dtype=np.float32)
        assert np.array_equal(mine, ref[: len(r["codes"])])
        assert np.array_equal(table[r["id"]], ref)
        # The length: numpy's norm of the whole float32 row, in float64.
        assert r["norm"] == pytest.approx(float(np.linalg.norm(table[r["id"]].astype(np.float64))), rel=1e-4)
    # The row's bytes: the tensor's bytes over its rows (GGUF's own n_bytes).
    assert committed["tensor_bytes"] == int(t.n_bytes) == committed["row_bytes"] * committed["shape"][0]


def test_core_reads_it_without_numpy():
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "from descent import replay\n"
        "r = replay.embedding_row(4)\n"
        "print(r.text, r.id, r.row_bytes)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "France 4649 612"


def test_every_stage_names_a_heading_of_its_page():
    # Each stage's page has a heading with that text, and replay's anchor is Python-Markdown's toc
    # slug of it (the site's toc extension, with no custom slugify).
    from markdown.extensions.toc import slugify

    for n in range(1, len(replay.STAGES) + 1):
        _id, _title, page, heading = replay.stage(n)
        text = (DOCS / page).read_text(encoding="utf-8")
        assert re.search(rf"^#{{2,3}} {re.escape(heading)}$", text, re.M), (page, heading)
        assert replay.section_href(n) == f"{page.removesuffix('.md')}.html#{slugify(heading, '-')}"


def test_the_stage_links_resolve_in_the_built_site(site_dir):
    # The widget's pre-rendered stage (stage 1) and every stage's link, against the built pages' ids.
    html = (site_dir / "part-5-the-whole-descent.html").read_text(encoding="utf-8")
    assert f'<a href="{replay.section_href(1)}">' in html
    for n in range(1, len(replay.STAGES) + 1):
        page, anchor = replay.section_href(n).split("#")
        target = (site_dir / page).read_text(encoding="utf-8")
        assert f'id="{anchor}"' in target, replay.section_href(n)
