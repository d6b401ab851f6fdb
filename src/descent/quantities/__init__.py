"""Quantities: every number the site shows, as a core function of declared parameters.

The registry (:class:`Quantity`, the :func:`quantity` decorator, :func:`get`, the kinds of unit) is
:mod:`descent.quantities.registry`; the quantities are registered by subject:

* :mod:`~descent.quantities.model`: parameters, weight bytes, KV bytes per token;
* :mod:`~descent.quantities.weights`: bits per parameter, the Q4 rule of thumb;
* :mod:`~descent.quantities.chip`: an accelerator's memory, bandwidth, peak, ridge point, links;
* :mod:`~descent.quantities.memory`: the sizing (KV cache, runtime allowance, what fits);
* :mod:`~descent.quantities.step`: one step: decode ceilings, the roofline, prefill and decode timing;
* :mod:`~descent.quantities.attention`: tiles and attention traffic;
* :mod:`~descent.quantities.parallel`: a model split over many chips;
* :mod:`~descent.quantities.serving`: the batching simulator, speculative decoding, steady throughput;
* :mod:`~descent.quantities.economics`: the price and energy of a token;
* :mod:`~descent.quantities.dials`: Part 5's server dials;
* :mod:`~descent.quantities.measured`: public measurements beside their ceilings.

Importing this package imports every subject module, so :data:`QUANTITIES` is complete.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from descent.quantities import (  # noqa: F401  (each registers its quantities on import)
    attention,
    chip,
    dials,
    economics,
    measured,
    memory,
    model,
    parallel,
    serving,
    step,
    weights,
)
from descent.quantities.registry import FORMAT_PARAMS, KINDS, QUANTITIES, Quantity, blame, get, quantity
from descent.quantities.serving import SLOTS

__all__ = ["FORMAT_PARAMS", "KINDS", "QUANTITIES", "SLOTS", "Quantity", "blame", "get", "quantity"]
