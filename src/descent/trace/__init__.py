"""The real model: SmolLM2-135M-Instruct (Q4_1 GGUF) read with ``gguf``, run with a NumPy forward pass.

Build side only (NumPy + gguf); the core never imports this package.

- :mod:`descent.trace.gguf_reader` -- locate, read, dequantize and cache the GGUF.
- :mod:`descent.trace.forward` -- the forward pass (RMSNorm, RoPE, GQA with a KV cache, SwiGLU) and generation.
- :mod:`descent.trace.record` -- ``trace(prompt, ...)`` and ``site_traces()``: JSON-ready records for the site.
- :mod:`descent.trace.cli` -- ``descent trace`` and ``descent generate``.
- :mod:`descent.trace.bench` -- ``cold_trace_seconds()``.
- :mod:`descent.trace.blas` -- one BLAS thread for the small matrix products (``use_one_thread()``).
- :mod:`descent.trace.cache` -- the build's on-disk caches of model results (``cache_dir()``, ``cached_json()``),
  and the claims by which two processes share one build's entries.
- :mod:`descent.trace.prefetch` -- the build's second process: the model, Part 2's perplexities and Part 3's
  results computed beside the pages.
- :mod:`descent.trace.machine_record` -- ``python -m descent.trace.machine_record``: times the build machine
  once and writes ``descent/data/build_machine.json``, the record every page reads (a build times nothing).
- :mod:`descent.trace.measure` -- Part 3's token-level results, with the record's timings beside them.
- :mod:`descent.trace.roofline_measure` -- Part 4's measured roofline, a view of the record.
- :mod:`descent.trace.export_tokenizer` -- writes the core tokenizer's data file from the GGUF.
"""

# Lazy re-exports: importing ``descent.trace`` (as ``descent.cli`` does) must not load NumPy.
_EXPORTS = {
    "trace": "descent.trace.record",
    "site_traces": "descent.trace.record",
    "PROMPTS": "descent.trace.record",
    "embedding_matrix": "descent.trace.gguf_reader",
    "load_model": "descent.trace.gguf_reader",
}


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'descent.trace' has no attribute {name!r}")
