"""One model on every catalog accelerator: decode ceilings, fastest first (:func:`descent.memory.across_field`);
the machines that hold a model only across many chips are named under the table.
"""

from __future__ import annotations

from descent import catalog, memory
from descent import params as P
from descent.memory import Sizing, across_field, fit_cell, size
from descent.site.shortcodes import table
from descent.site.values.text import fmt_bytes, fmt_num, md_table, md_text
from descent.units import format_number, format_si


def split_field(rows: list[Sizing]) -> tuple[list[Sizing], list[Sizing]]:
    """(rows a one-chip comparison shows, rows it leaves out): :func:`descent.memory.split_field`."""
    return memory.split_field(rows)

def sharded_sentence(left: list[Sizing]) -> str:
    """:func:`descent.memory.sharded_sentence` as Markdown text (catalog names escaped)."""
    return md_text(memory.sharded_sentence(left))

@table("decode_ceilings", P.MODEL, P.WEIGHTS, P.KV, P.CONTEXT, P.BATCH)
def decode_ceilings_table(model: str, weights: str, kv: str, context: int, batch: int) -> str:
    """Decode-speed ceiling for one model on every catalog accelerator that serves on its own,
    fastest first; the SRAM machines are named under the table with the chips the model needs."""
    rows = []
    shown, left = split_field([size(model, a.id, weights, kv, context, batch) for a in catalog.accelerators().values()])
    for s_ in shown:
        a = catalog.accelerator(s_.accelerator)
        row = [md_text(a.name), fmt_bytes(a.memory_bytes, "GB"), format_si(a.memory_bandwidth, "B/s", 3, trim=True),
               fmt_bytes(s_.bytes_per_decode_step, "GB"), fmt_num(s_.decode_tokens_per_s), "yes" if s_.fits else "no"]
        rows.append((s_.decode_tokens_per_s, row))
    rows.sort(key=lambda r: -r[0])
    header = ["accelerator", "memory", "bandwidth", "bytes per step", "tokens/s per sequence (ceiling)",
              "fits on one chip"]
    return md_table(header, [r for _, r in rows], "lrrrrl") + sharded_sentence(left) + ("\n\n" if left else "")

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
            fit = fit_cell(s, lambda n: fmt_bytes(n, "GB"))
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
    return md_table(["accelerator", "memory", "bandwidth", "tokens/s per sequence (ceiling)", "one chip"], rows,
                    "lrrrl") + sharded_sentence(left) + ("\n\n" if left else "")
