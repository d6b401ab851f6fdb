"""The two type checks every validator needs, written once.

Python's ``bool`` is a subclass of ``int`` (``isinstance(True, int)`` is true), so "is this a
whole number?" must exclude it explicitly, everywhere: a widget, a CLI flag or a core function
that takes ``True`` as a batch of 1 would silently accept nonsense. These two helpers are the only
place that rule is written; :mod:`descent.params` and the core's argument checks use them.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["is_finite", "is_int", "is_real"]


def is_int(x: Any) -> bool:
    """True for an ``int`` that is not a ``bool``."""
    return isinstance(x, int) and not isinstance(x, bool)


def is_real(x: Any) -> bool:
    """True for an ``int`` or ``float`` that is not a ``bool`` (NaN and infinities included)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def is_finite(x: Any) -> bool:
    """True for an ``int`` or a finite ``float``, not a ``bool``."""
    return is_int(x) or (isinstance(x, float) and math.isfinite(x))
