"""Cut a GGUF file into parts in llama.cpp's ``gguf-split`` layout, byte for byte reproducibly.

A static host limits the size of one file (GitHub refuses files over 100 MB and warns from 50 MB),
so the site ships the 98 MB SmolLM2 GGUF as parts of at most :data:`MAX_PART_BYTES`. llama.cpp
loads such parts as one model (``llama_model_load_from_splits``; wllama names them
``model-00001-of-00002.gguf`` ... and passes the first): each part is a complete GGUF file that

* holds whole tensors, in the original order, with their data aligned as in the original;
* carries three keys: ``split.no`` (uint16, 0-based), ``split.count`` (uint16) and
  ``split.tensors.count`` (int32, the tensors of all parts together);
* the first part also carries every key of the original, before those three.

That is what llama.cpp's own tool writes (``tools/gguf-split/gguf-split.cpp``, ``split_strategy``:
``gguf_set_kv`` of all keys into the first split, then the three ``LLM_KV_SPLIT_*`` values in every
split; tensors in order, each padded to ``general.alignment``). This module writes it without that
tool: it reads the header with its own small parser (GGUF v3, ``ggml-org/ggml`` ``docs/gguf.md``),
copies the metadata bytes verbatim and the tensor data byte for byte, so the same input gives the
same parts, on any machine. :func:`read_header` is also what the tests use to check the parts.

Build side (the site copies the parts); standard library and :mod:`descent.units` only.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from descent.units import format_int

__all__ = [
    "GGUF_MAGIC",
    "MAX_PART_BYTES",
    "Header",
    "TensorInfo",
    "part_name",
    "plan",
    "read_header",
    "split_bytes",
    "write_parts",
]

#: The first four bytes of every GGUF file.
GGUF_MAGIC = b"GGUF"
#: The GGUF version this reader and writer handle (llama.cpp writes 3 since 2023).
GGUF_VERSION = 3
#: Largest part, in bytes (50 MB, SI): GitHub warns above this size and refuses files over 100 MB;
#: most static hosts accept it. Every tensor of SmolLM2-135M is smaller (the largest, the Q8_0
#: token embedding, is 30,081,024 bytes).
MAX_PART_BYTES = 50_000_000
#: ``general.alignment`` when the file does not set it (GGUF specification: 32 bytes).
DEFAULT_ALIGNMENT = 32
#: The split keys llama.cpp reads (``LLM_KV_SPLIT_NO``, ``LLM_KV_SPLIT_COUNT``, ``LLM_KV_SPLIT_TENSORS_COUNT``).
SPLIT_KEYS = ("split.no", "split.count", "split.tensors.count")

# GGUF metadata value types (docs/gguf.md, enum gguf_metadata_value_type) -> struct format, or None.
_UINT8, _INT8, _UINT16, _INT16, _UINT32, _INT32, _FLOAT32, _BOOL, _STRING, _ARRAY, _UINT64, _INT64, _FLOAT64 = range(13)
_SCALAR = {_UINT8: "<B", _INT8: "<b", _UINT16: "<H", _INT16: "<h", _UINT32: "<I", _INT32: "<i", _FLOAT32: "<f",
           _BOOL: "<?", _UINT64: "<Q", _INT64: "<q", _FLOAT64: "<d"}


@dataclass(frozen=True)
class TensorInfo:
    """One tensor's header entry: name, dims (GGUF order, fastest first), ggml type, offset into the
    data section (bytes), and ``size``: the bytes it owns there up to the next tensor (its data plus
    padding; for the last tensor, up to the end of the file)."""

    name: str
    dims: tuple[int, ...]
    ggml_type: int
    offset: int
    size: int


@dataclass(frozen=True)
class Header:
    """A parsed GGUF header: ``keys`` in file order, ``kv_bytes`` (the metadata entries exactly as
    stored), ``values`` (the scalar and string values by key; arrays are left out), the tensors in
    header order, ``alignment`` and ``data_offset`` (where tensor data starts, bytes)."""

    version: int
    keys: tuple[str, ...]
    kv_bytes: bytes
    values: dict
    tensors: tuple[TensorInfo, ...]
    alignment: int
    data_offset: int
    file_size: int


class _Reader:
    def __init__(self, data: bytes, what: str):
        self.data, self.pos, self.what = data, 0, what

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"{self.what}: the header ends early (need {n} bytes at offset {self.pos})")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        return self.take(self.unpack("<Q")).decode("utf-8")

    def value(self, vtype: int):
        if vtype in _SCALAR:
            return self.unpack(_SCALAR[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            item_type, count = self.unpack("<I"), self.unpack("<Q")
            if item_type in _SCALAR:
                self.take(struct.calcsize(_SCALAR[item_type]) * count)
            else:
                for _ in range(count):
                    self.value(item_type)
            return None
        raise ValueError(f"{self.what}: unknown metadata value type {vtype} at offset {self.pos}")


def _align(n: int, alignment: int) -> int:
    return n + (-n) % alignment


#: Bytes read for the header; a GGUF's metadata (SmolLM2's vocabulary and merges) is under 2 MB.
_HEADER_READ_BYTES = 16 * 2**20


def read_header(path: Path | str) -> Header:
    """Parse the header of the GGUF file at ``path`` (version 3).

    Raises:
        ValueError: not a GGUF file, another version, or a header that runs past the file
            (the message names the file).
    """
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as f:
        data = f.read(_HEADER_READ_BYTES)
    r = _Reader(data, str(path))
    if r.take(4) != GGUF_MAGIC:
        raise ValueError(f"{path}: not a GGUF file (it does not start with {GGUF_MAGIC!r})")
    version = r.unpack("<I")
    if version != GGUF_VERSION:
        raise ValueError(f"{path}: GGUF version {version}; this reader handles version {GGUF_VERSION}")
    n_tensors, n_kv = r.unpack("<Q"), r.unpack("<Q")
    kv_start = r.pos
    keys, values = [], {}
    for _ in range(n_kv):
        key = r.string()
        value = r.value(r.unpack("<I"))
        keys.append(key)
        if value is not None:
            values[key] = value
    kv_bytes = data[kv_start:r.pos]
    alignment = int(values.get("general.alignment", DEFAULT_ALIGNMENT))
    raw = []
    for _ in range(n_tensors):
        name = r.string()
        n_dims = r.unpack("<I")
        dims = tuple(r.unpack("<Q") for _ in range(n_dims))
        raw.append((name, dims, r.unpack("<I"), r.unpack("<Q")))
    data_offset = _align(r.pos, alignment)
    ends = sorted({off for *_, off in raw}) + [size - data_offset]
    nxt = {a: b for a, b in zip(ends, ends[1:], strict=False)}
    tensors = tuple(TensorInfo(n, d, t, off, nxt[off] - off) for n, d, t, off in raw)
    if any(t.size <= 0 for t in tensors) or data_offset > size:
        raise ValueError(f"{path}: tensor offsets run past the end of the file")
    return Header(version, tuple(keys), kv_bytes, values, tensors, alignment, data_offset, size)


def _kv(key: str, vtype: int, value) -> bytes:
    name = key.encode("utf-8")
    return struct.pack("<Q", len(name)) + name + struct.pack("<I", vtype) + struct.pack(_SCALAR[vtype], value)


def _part_header(h: Header, tensors: list[TensorInfo], index: int, count: int) -> tuple[bytes, list[int]]:
    """(header bytes padded to the alignment, each tensor's offset in the part's data section)."""
    split_kvs = (_kv(SPLIT_KEYS[0], _UINT16, index) + _kv(SPLIT_KEYS[1], _UINT16, count)
                 + _kv(SPLIT_KEYS[2], _INT32, len(h.tensors)))
    kvs = (h.kv_bytes if index == 0 else b"") + split_kvs
    n_kv = (len(h.keys) if index == 0 else 0) + len(SPLIT_KEYS)
    # The first part keeps general.alignment (if set); the others must agree with it.
    if index > 0 and h.alignment != DEFAULT_ALIGNMENT:
        kvs = _kv("general.alignment", _UINT32, h.alignment) + kvs
        n_kv += 1
    out = [GGUF_MAGIC, struct.pack("<IQQ", GGUF_VERSION, len(tensors), n_kv), kvs]
    offsets, at = [], 0
    for t in tensors:
        name = t.name.encode("utf-8")
        out.append(struct.pack("<Q", len(name)) + name + struct.pack("<I", len(t.dims))
                   + b"".join(struct.pack("<Q", d) for d in t.dims) + struct.pack("<IQ", t.ggml_type, at))
        offsets.append(at)
        at += _align(t.size, h.alignment)
    head = b"".join(out)
    return head + b"\0" * ((-len(head)) % h.alignment), offsets


def plan(h: Header, max_part_bytes: int = MAX_PART_BYTES) -> list[list[TensorInfo]]:
    """The tensors of each part: header order, a new part whenever the next tensor would take the
    current part's file past ``max_part_bytes``.

    Raises:
        ValueError: ``max_part_bytes`` is not a positive integer, or one tensor (with its part's
            header) cannot fit in a part of that size.
    """
    if not isinstance(max_part_bytes, int) or isinstance(max_part_bytes, bool) or max_part_bytes <= 0:
        raise ValueError(f"max_part_bytes must be a positive whole number of bytes, got {max_part_bytes!r}")
    parts: list[list[TensorInfo]] = [[]]
    for t in h.tensors:
        trial = parts[-1] + [t]
        if parts[-1] and _part_size(h, trial, len(parts) - 1) > max_part_bytes:
            parts.append([t])
        else:
            parts[-1] = trial
        if _part_size(h, parts[-1], len(parts) - 1) > max_part_bytes:
            raise ValueError(f"tensor {t.name} ({format_int(t.size)} bytes) does not fit in a part of "
                             f"{format_int(max_part_bytes)} bytes")
    return parts


def _part_size(h: Header, tensors: list[TensorInfo], index: int) -> int:
    head, _ = _part_header(h, tensors, index, 1)
    return len(head) + sum(_align(t.size, h.alignment) for t in tensors)


def split_bytes(path: Path | str, max_part_bytes: int = MAX_PART_BYTES):
    """Yield ``(index, count, chunks)`` per part, where ``chunks`` yields the part's bytes in order
    (header, then each tensor's data read from ``path``). See :func:`write_parts`."""
    path = Path(path)
    h = read_header(path)
    parts = plan(h, max_part_bytes)
    for i, tensors in enumerate(parts):
        head, _ = _part_header(h, tensors, i, len(parts))

        def chunks(head=head, tensors=tensors):
            yield head
            with open(path, "rb") as f:
                for t in tensors:
                    f.seek(h.data_offset + t.offset)
                    data = f.read(t.size)
                    if len(data) != t.size:
                        raise ValueError(f"{path}: tensor {t.name} runs past the end of the file")
                    yield data + b"\0" * ((-t.size) % h.alignment)

        yield i, len(parts), chunks()


def part_name(stem: str, index: int, count: int) -> str:
    """``<stem>-00001-of-00002.gguf`` for index 0 of 2: llama.cpp's split naming (``llama_split_path``)."""
    return f"{stem}-{index + 1:05d}-of-{count:05d}.gguf"


def write_parts(path: Path | str, dest: Path | str, stem: str, max_part_bytes: int = MAX_PART_BYTES) -> list[Path]:
    """Write the parts of the GGUF at ``path`` into directory ``dest`` as :func:`part_name` files.

    Returns the paths in order. Raises ``ValueError`` as :func:`read_header` and :func:`plan` do.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for i, n, chunks in split_bytes(path, max_part_bytes):
        target = dest / part_name(stem, i, n)
        tmp = target.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            for c in chunks:
                f.write(c)
        tmp.replace(target)
        out.append(target)
    return out
