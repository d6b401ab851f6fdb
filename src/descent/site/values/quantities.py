"""Every quantity of :mod:`descent.quantities` as a value shortcode of the same name: its arguments
the quantity's parameters plus how to print it (``unit=``, ``sig=``), printed by :meth:`Quantity.format`.
"""

from __future__ import annotations

from typing import Any

from descent import quantities as Q
from descent.site.shortcodes import value


def show(name: str, unit: str = "auto", sig: int = 3, **params: Any) -> str:
    """The quantity ``name`` at ``params``, printed by its unit (:meth:`Quantity.format`): what its
    value shortcode prints, for a site entry that only looks quantities up (a table's cells)."""
    q = Q.get(name)
    return q.format(q(**params), unit, sig)

def register_quantities() -> None:
    """Register every :data:`descent.quantities.QUANTITIES` entry as a value shortcode: its
    parameters, then ``unit=``/``sig=`` as its kind allows; printed by :meth:`Quantity.format`."""
    for q in Q.QUANTITIES.values():
        fmt = Q.FORMAT_PARAMS[q.kind]

        def func(_q: Q.Quantity = q, _fmt: tuple = tuple(p.name for p in fmt), **kw: Any) -> str:
            opts = {k: kw.pop(k) for k in _fmt}
            return _q.format(_q(**kw), **opts)

        value(q.name, *q.params, *fmt, doc=q.doc)(func)

register_quantities()
