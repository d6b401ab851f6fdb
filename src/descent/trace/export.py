"""Write the site's real SmolLM2-135M traces as package data for the browser.

``python -m descent.trace.export`` runs :func:`descent.trace.site_traces` (NumPy, build side) and
writes ``src/descent/data/traces.json``: compact, deterministic JSON (sorted keys, floats rounded
to :data:`SIG_DIGITS` significant figures) that the core reads with ``importlib.resources`` and no
numpy (see :func:`descent.widgets.part0.trace_data`). ``tests/test_trace_export.py`` checks that
the committed file equals a fresh export, so it cannot go stale.

Layout (``T`` prompt tokens, ``L`` = 30 layers, ``H`` = 9 query heads of SmolLM2-135M)::

    {"format": 1, "model": {...}, "top": 50,
     "prompts": [{
        "id", "note", "prompt", "chat", "text",          # text: what the model reads (chat template applied)
        "tokens": [{"text", "id"}],                       # (T,)
        "next": [{"text", "id", "logit", "probability"}], # top-50 next tokens, most probable first
        "rest_probability",                               # 1 - sum of the top-50 probabilities
        "entropy_bits",                                   # of the whole next-token distribution (bits)
        "generation": {"stop_reason", "text", "steps": [{
            "step", "token": {"text", "id"}, "probability",
            "alternatives": [{"text", "id", "probability"}],  # top-5 at that step
            "context_length",                             # tokens the model has seen at that step
            "fed",                                        # tokens run through the layers at that step
        }]},                                              #   (with a KV cache: the prompt, then 1)
        "attention_last": [[[w]]],                        # (L, H, T): last prompt position over the prompt
     }]}

Logits are in the model's own units (natural-log odds up to a constant); probabilities are at
temperature 1 over the whole vocabulary of 49,152 tokens.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from descent.units import format_int

#: Bump when the layout above changes.
FORMAT = 1
#: Significant figures kept for every float in the file (enough for any bar or chip; keeps it small).
SIG_DIGITS = 5
#: Next-token candidates shipped per prompt.
TOP = 50
#: Where the file lives inside the package.
DATA_PATH = Path(__file__).resolve().parents[1] / "data" / "traces.json"


def _round(x: float) -> float:
    if not math.isfinite(x):
        raise ValueError(f"trace export: every number must be finite, got {x!r}")
    return float(f"{x:.{SIG_DIGITS}g}")


def _tok(t: dict) -> dict:
    return {"text": t["text"], "id": int(t["id"])}


def _prompt_record(tr: dict) -> dict:
    nxt = [
        {**_tok(c), "logit": _round(c["logit"]), "probability": _round(c["probability"])}
        for c in tr["next"][:TOP]
    ]
    rest = max(0.0, 1.0 - math.fsum(c["probability"] for c in tr["next"][:TOP]))
    steps = []
    for s in tr["generation"]["steps"]:
        steps.append(
            {
                "step": int(s["step"]),
                "token": _tok(s["token"]),
                "probability": _round(s["probability"]),
                "alternatives": [
                    {**_tok(a), "probability": _round(a["probability"])} for a in s["alternatives"]
                ],
                "context_length": int(s["cached"]) + len(s["fed"]),
                "fed": len(s["fed"]),
            }
        )
    return {
        "id": tr["id"],
        "note": tr["note"],
        "prompt": tr["prompt"],
        "chat": bool(tr["chat"]),
        "text": tr["text"],
        "tokens": [_tok(t) for t in tr["tokens"]],
        "next": nxt,
        "rest_probability": _round(rest),
        "entropy_bits": _round(tr["entropy_bits"]),
        "generation": {
            "stop_reason": tr["generation"]["stop_reason"],
            "text": tr["generation"]["text"],
            "steps": steps,
        },
        "attention_last": [[[_round(w) for w in head] for head in layer] for layer in tr["attention"]],
    }


def build(traces: list[dict] | None = None) -> dict:
    """The export as a dict, from ``traces`` (default: :func:`descent.trace.site_traces`)."""
    if traces is None:
        from descent.trace.record import site_traces

        traces = site_traces(top=TOP)
    if not traces:
        raise ValueError("trace export: no traces to export")
    return {
        "format": FORMAT,
        "model": traces[0]["model"],
        "top": TOP,
        "prompts": [_prompt_record(t) for t in traces],
    }


def dumps(data: dict) -> str:
    """Deterministic JSON text: sorted keys, no spaces, UTF-8 kept, one trailing newline."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n"


def data_file_main(module: str, doc: str, build, dumps, default: Path, argv: list[str] | None) -> int:
    """The command line every recorded-data exporter shares: ``python -m MODULE [--output PATH]
    [--check]``. Writes ``dumps(build())`` to the file (default ``default``), or with ``--check`` only
    compares; returns the exit status (1 when the file is stale)."""
    ap = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.splitlines()[0])
    ap.add_argument("--output", type=Path, default=default, help="where to write (default: package data)")
    ap.add_argument("--check", action="store_true", help="only compare with the existing file")
    args = ap.parse_args(argv)
    text = dumps(build())
    if args.check:
        same = args.output.is_file() and args.output.read_text(encoding="utf-8") == text
        print(f"{args.output}: {'up to date' if same else f'STALE: run python -m {module}'}")
        return 0 if same else 1
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({format_int(len(text.encode('utf-8')))} bytes)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m descent.trace.export [--output PATH] [--check]``; exit 1 if ``--check`` finds a stale file."""
    return data_file_main("descent.trace.export", __doc__, build, dumps, DATA_PATH, argv)


if __name__ == "__main__":
    sys.exit(main())
