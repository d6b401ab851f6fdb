"""Table shortcodes for Part 5 ("The whole descent"): decode speed across chips.

Imported at the bottom of :mod:`descent.site.values`, so the entries register with the others.
The single numbers of Part 5 (``weights_bytes``, ``total_bytes``, ``kv_cache_bytes``,
``decode_tokens_per_s``, ``moe_expert_share``, ``chips_that_fit``, ...) are quantities
(:mod:`descent.quantities`), so they need no entry here.

* ``<!-- descent:table decode_speed_across_field model=... weights=... kv=... context=... batch=... -->``:
  one row per catalog accelerator, fastest decode ceiling first, chips that cannot hold the model
  marked "won't fit". The rows are :func:`descent.memory.across_field`'s, the same the page's
  widget and figure use, less the machines that hold a model only across many chips
  (``catalog.SHARDED_KINDS``: Groq, Cerebras), which a sentence under the table names with the
  number of chips the model needs.
"""

from __future__ import annotations

from descent import catalog
from descent import params as P
from descent.memory import across_field
from descent.site.shortcodes import table
from descent.site.values import fmt_bytes, md_table, md_text, sharded_sentence, split_field
from descent.units import format_number, format_si

__all__ = ["decode_speed_across_field"]


@table("decode_speed_across_field", P.MODEL, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH)
def decode_speed_across_field(model: str, weights: str, kv: str, context: int, batch: int) -> str:
    """One model on every accelerator: decode ceiling per sequence, fastest first; won't-fit chips marked."""
    rows = []
    shown, left = split_field(across_field(model, weights, kv, context, batch))
    for s in shown:
        a = catalog.accelerator(s.accelerator)
        speed = format_number(s.decode_tokens_per_s, 3)
        if s.fits:
            fit = "fits"
        else:
            fit = f"won't fit (needs {fmt_bytes(s.total_bytes, 'GB')})"
            speed = f"({speed} if it fit)"
        rows.append(
            [
                md_text(a.name),
                f"{fmt_bytes(a.memory_bytes, 'GB')} ({fmt_bytes(a.memory_bytes, 'GiB')})",
                format_si(a.memory_bandwidth, "B/s", 3, trim=True),
                speed,
                fit,
            ]
        )
    out = md_table(
        ["accelerator", "memory", "bandwidth", "tokens/s per sequence (ceiling)", "one chip"], rows, "lrrrl"
    )
    return out + sharded_sentence(left) + ("\n\n" if left else "")
