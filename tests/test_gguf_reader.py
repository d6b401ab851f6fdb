"""descent.trace.gguf_reader.open_reader: the file's header read by the project's own parser (0.1 s)
instead of gguf.GGUFReader (3.5 s: an object per token string), giving what GGUFReader gives; a file
that parser does not take whole goes to GGUFReader, so a bad file keeps its message
(tests/test_trace_cli.py checks each message)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from descent.trace import gguf_reader, weights


@pytest.mark.slow  # gguf.GGUFReader reads the whole header: about 3 s here
def test_header_reader_gives_what_gguf_gives():
    gguf = pytest.importorskip("gguf")
    path = gguf_reader.gguf_path()
    mine, theirs = gguf_reader.HeaderReader.read(path), gguf.GGUFReader(str(path))
    assert mine is not None
    assert [t.name for t in mine.tensors] == [t.name for t in theirs.tensors]
    for a, b in zip(mine.tensors, theirs.tensors, strict=True):
        assert (a.tensor_type, a.n_elements, a.n_bytes, a.shape.tolist()) == (
            b.tensor_type, b.n_elements, b.n_bytes, b.shape.tolist()), a.name
        assert a.data.dtype == b.data.dtype and a.data.shape == b.data.shape, a.name
        assert np.array_equal(a.data, b.data), a.name
    # Every scalar and string value (the arrays, such as the 49,152 token strings, are left out).
    arrays = {k for k, f in theirs.fields.items() if f.types and f.types[0] == gguf.GGUFValueType.ARRAY}
    header = {"GGUF.version", "GGUF.tensor_count", "GGUF.kv_count"}
    assert set(mine.fields) == set(theirs.fields) - arrays - header
    for k, f in mine.fields.items():
        want = theirs.fields[k].contents()
        assert f.contents() == want and type(f.contents()) is type(want), k


def test_the_file_is_opened_once_per_process():
    path = gguf_reader.gguf_path()
    first = gguf_reader.open_reader(path)
    assert isinstance(first, gguf_reader.HeaderReader)
    assert gguf_reader.open_reader(path) is first and weights.reader() is first
    # SmolLM2's file: 272 tensors (210 Q4_1, 1 Q8_0, 61 F32), 30 layers.
    assert len(first.tensors) == 272 and first.fields["llama.block_count"].contents() == 30


@pytest.mark.slow  # a 98 MB copy read by gguf.GGUFReader: about 4 s here
def test_a_file_the_header_parser_refuses_is_read_by_gguf(tmp_path):
    # GGUF version 2 has version 3's little-endian layout: GGUFReader reads it, the project's
    # parser (version 3 only) does not, so the file goes to GGUFReader and still loads.
    gguf = pytest.importorskip("gguf")
    v2 = tmp_path / "v2.gguf"
    shutil.copyfile(gguf_reader.gguf_path(), v2)
    with open(v2, "r+b") as f:
        f.seek(4)
        f.write((2).to_bytes(4, "little"))
    assert gguf_reader.HeaderReader.read(v2) is None
    r = gguf_reader.open_reader(v2)
    assert isinstance(r, gguf.GGUFReader)
    facts = weights.file_facts(str(v2))
    assert facts == weights.file_facts()  # same tensors, same bytes


def test_file_facts_of_a_bad_file_name_the_file(tmp_path, monkeypatch):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"hello, I am not a model\n")
    monkeypatch.setenv("DESCENT_GGUF", str(bad))
    with pytest.raises(gguf_reader.GGUFError, match=f"{bad}: not a GGUF file .* set DESCENT_GGUF"):
        weights.file_facts()


def test_an_interrupted_save_leaves_no_half_copy(tmp_path, monkeypatch):
    # The build's second process is terminated (SystemExit) while it writes the float32 copy.
    monkeypatch.setenv("DESCENT_CACHE", str(tmp_path))
    c = gguf_reader.ModelConfig(1, 4, 1, 1, 4, 8, 10, 10000.0, 1e-5, 16)
    model = gguf_reader.Model(c, {"a": np.zeros(3, np.float32), "b": np.ones(3, np.float32)}, {}, "0" * 64)
    real_save, saved = np.save, []

    def save_then_stop(path, array):
        real_save(path, array)
        saved.append(path)
        raise SystemExit(143)

    monkeypatch.setattr(np, "save", save_then_stop)
    with pytest.raises(SystemExit):
        gguf_reader.save_float32(model)
    assert saved and list((tmp_path / "gguf").iterdir()) == []
    monkeypatch.setattr(np, "save", real_save)
    gguf_reader.save_float32(model)
    (folder,) = (tmp_path / "gguf").iterdir()
    assert folder.name == "0" * 64 + f"-v{gguf_reader.CACHE_LAYOUT}" and (folder / "index.json").is_file()
