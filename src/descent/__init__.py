"""descent: the inference arithmetic behind "How an LLM answers you".

``descent.params`` is the leaf every layer declares its inputs in; the catalog and the number
formats own the choices of the catalog-backed ones (model, accelerator, link, weights, KV cache,
element) and hand them over when imported, which happens here, first.
"""

from descent import catalog, numerics  # noqa: F401  (they provide params' catalog-backed choices)
from descent.catalog import measurements  # noqa: F401  (provides the measurement choices)
