"""The command line's two-column text output: a label, then its value, labels padded to one width."""

from __future__ import annotations

__all__ = ["print_rows"]


def print_rows(rows: list[tuple[str, str]]) -> None:
    """Print ``(label, value)`` rows, the labels left-aligned to the longest one."""
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
