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
from descent.memory import Sizing, across_field
from descent.site.shortcodes import table
from descent.site.values import fmt_bytes, md_table
from descent.units import format_int, format_number, format_si

__all__ = ["decode_speed_across_field", "sharded_sentence", "split_field"]


def split_field(rows: list[Sizing]) -> tuple[list[Sizing], list[Sizing]]:
    """(rows a one-chip comparison shows, rows it leaves out): the second are the machines that are
    not ``Accelerator.single_chip_comparable`` (weights in on-chip SRAM, a model spread over many
    chips), for which a one-chip ceiling "if it fit" is no serving speed. Order is kept."""
    shown = [s for s in rows if catalog.accelerator(s.accelerator).single_chip_comparable]
    left = [s for s in rows if not catalog.accelerator(s.accelerator).single_chip_comparable]
    return shown, left


def sharded_sentence(left: list[Sizing]) -> str:
    """One sentence naming the left-out machines, each with its memory per chip and the fewest such
    chips whose memory holds the model (``Sizing.accelerators_needed``), or "" when none."""
    if not left:
        return ""
    parts = []
    for s in left:
        a = catalog.accelerator(s.accelerator)
        unit = "GB" if a.memory_bytes >= 10**9 else "MB"
        parts.append(f"{a.name.split(' (')[0]} ({fmt_bytes(a.memory_bytes, unit, 4)} per chip: at least "
                     f"{format_int(s.accelerators_needed)} {'chip' if s.accelerators_needed == 1 else 'chips'})")
    return ("Not in the comparison: " + " and ".join(parts) + ". These machines keep the weights in "
            "on-chip memory and serve a model spread over many chips, so a one-chip speed would mean nothing.")


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
                a.name,
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
