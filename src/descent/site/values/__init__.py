"""Value and table shortcodes: the entries pages use to print numbers, by subject.

Every quantity of :mod:`descent.quantities` is a value shortcode of the same name
(:mod:`~descent.site.values.quantities`); so ``<!-- descent:value weights_bytes model=llama-3.1-70b
weights=fp8 unit=GB -->`` is :func:`descent.quantities.model.weights_bytes` printed by
:mod:`descent.units`. The other entries look up a catalog field, a recording or a published
figure, or lay out a table:

* :mod:`~descent.site.values.text`: running-text and Markdown formatting (no entries);
* :mod:`~descent.site.values.catalog`: catalog fields and the reference pages' tables;
* :mod:`~descent.site.values.tokens`: the tokenizer's splits and the recorded traces (Parts 0, 1);
* :mod:`~descent.site.values.transformer`: embeddings, stacks, softmax saturation (Part 1);
* :mod:`~descent.site.values.kv`: the KV cache by model, context and format;
* :mod:`~descent.site.values.weights`: float formats, GGUF types, published results (Part 2);
* :mod:`~descent.site.values.real_weights`: the shipped GGUF read and measured at build (Part 2);
* :mod:`~descent.site.values.serving`: serving software (Part 3);
* :mod:`~descent.site.values.serving_measured`: SmolLM2 measured on the build machine (Part 3);
* :mod:`~descent.site.values.hardware`: chips' internals, links, the roofline (Part 4);
* :mod:`~descent.site.values.across_chips`: one model on every chip (Parts 4, 5);
* :mod:`~descent.site.values.browser_model`: the model the reader's browser runs (Part 0);
* :mod:`~descent.site.values.measured`: public measurements beside the ceilings (Reference);
* :mod:`~descent.site.values.reference`: the shortcode reference of the contributing page.

Each module imports :mod:`descent.site.shortcodes` (the registry) and the core; none imports this
package's ``__init__``, which imports them all (so the entries register).
"""

from __future__ import annotations

from descent.site.values import (  # noqa: F401  (each registers its entries on import)
    across_chips,
    browser_model,
    catalog,
    hardware,
    kv,
    measured,
    quantities,
    real_weights,
    reference,
    serving,
    serving_measured,
    text,
    tokens,
    transformer,
    weights,
)
