"""Where a number comes from (issue 26, Explain): the formula that gives it, with its inputs
substituted, what it assumes, and the command that prints it.

One module for both places a derivation is shown: the page's closing section "How each number on
this page is computed" (:mod:`descent.site.explain`, at build) and a calculator's number opened in
the reader's browser (:mod:`descent.widgets._explain`, in the Pyodide worker, for the reader's
inputs). The formulas themselves are the sympy expressions of :mod:`descent.formulas` (the ones the
formula tests check); sympy does not run in the browser, so the build writes each one once as a
:data:`table <derive>` entry: its LaTeX, the same LaTeX with a slot for each symbol's value, and the
expression as Python (``sympy.pycode``). :func:`derive` fills the slots with values looked up for
the inputs (:data:`BINDERS`, never computed here) and shows the formula only when it evaluates to
the quantity's own value, so a shown formula cannot disagree with the number.

Core rule: standard library and core ``descent`` modules only (runs in Pyodide).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from descent import catalog, numerics
from descent import quantities as Q
from descent.units import format_int, format_number
from descent.weights import KEPT_IN_BF16

__all__ = ["ASSUMPTIONS", "ASSUMPTION_OTHER", "BINDERS", "CODE_URL", "Derivation", "FORMULA_OF", "SLOT",
           "assumption", "command_line", "derive", "evaluate", "number_tex", "python_call", "source_of"]

#: What each subject's quantities rest on (the quantity's module under descent.quantities).
ASSUMPTIONS = {
    "model": "Counts come from the model's published config.json; the embedding table is counted in the "
             "parameters (one convention for every model, stated on Part 1).",
    "chip": "Chip figures are the vendor's datasheet numbers: dense peaks (not 2:4 sparse) with FP32 "
            "accumulation, memory bandwidth at its peak.",
    "memory": "Memory is the weights, the KV cache of every sequence at its full context and a runtime "
              "allowance, against the chip's memory; nothing is offloaded.",
    "step": "One step of a serving engine is priced on the roofline: the longer of reading its bytes at the "
            "datasheet bandwidth and doing its FLOPs at the dense peak, nothing overlapped, so it is a lower "
            "bound on the time. A decode step reads every active weight once and every sequence's KV cache.",
    "attention": "Memory traffic counts the bytes each algorithm must move between the chip's memory and its "
                 "on-chip storage, at the element size given.",
    "parallel": "Each device reads its share of the weights and KV cache; collectives cost their bytes over the "
                "catalog link plus NCCL's latency model; nothing overlaps with compute.",
    "serving": "The simulator runs requests through the step model's one-device closed forms; times are lower "
               "bounds of a real engine's.",
    "economics": "Price per token is the chip's price per hour over the tokens it makes in that hour at full "
                 "load; energy is its power draw times the facility overhead (PUE).",
    "dials": "A tensor-parallel server of identical chips, every chip busy; the step model's times at that split.",
    "weights": "Weight bytes follow the format's bits per weight, block scales included.",
}
#: For value entries that are not quantities (catalog fields, recordings, published figures).
ASSUMPTION_OTHER = "Looked up as written, not computed: the source below is where the number comes from."

#: Where a number's Python code can be read (mkdocs.yml's repo_url and edit branch).
CODE_URL = "https://github.com/descent-site/descent/blob/main/src/"

#: A symbol's place in a formula's LaTeX template: ``SLOT.format(name)``.
SLOT = "@@{}@@"


def assumption(q: Q.Quantity) -> str:
    """What quantity ``q`` rests on, by its subject (:data:`ASSUMPTIONS`)."""
    return ASSUMPTIONS.get(q.func.__module__.rsplit(".", 1)[-1], ASSUMPTION_OTHER)


# ---------------------------------------------------------------------------------------------
# Binders: a formula's symbols, looked up for one number's inputs
# ---------------------------------------------------------------------------------------------

def _kv_plain(model: str, kv: str, context: int, batch: int) -> tuple[str, dict[str, Any]] | None:
    m = catalog.model(model)
    if m.mla is not None or m.linear_attention is not None or m.sliding is not None or m.chunked is not None:
        return None
    return "kv_cache_bytes", {"L": m.num_layers, "K": m.num_kv_heads, "d_head": m.head_dim, "T": context,
                              "B": batch, "b": numerics.kv_precision(kv).bytes_per_weight}


def _bind_kv_cache(inputs: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    return _kv_plain(inputs["model"], inputs["kv"], inputs["context"], inputs["batch"])


def _bind_kv_token(inputs: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    return _kv_plain(inputs["model"], inputs["kv"], 1, 1)


def _bind_ridge(inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "ridge_point", {"F_peak": Q.get("peak_flops")(**inputs),
                           "BW": Q.get("memory_bandwidth")(accelerator=inputs["accelerator"])}


def _bind_decode(inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "decode_tokens_per_s", {"BW": Q.get("memory_bandwidth")(accelerator=inputs["accelerator"]),
                                   "S_step": Q.get("decode_step_bytes")(**inputs)}


def _bind_weights(inputs: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    if inputs["weights"] not in numerics.PRECISIONS or inputs["weights"] in KEPT_IN_BF16:
        return None  # as released, GGUF mixes, a format that keeps some groups in BF16: no one-line formula
    return "weight_bytes", {"N": Q.get("params_total")(model=inputs["model"]),
                            "bits": numerics.precision(inputs["weights"]).bits_per_weight}


def _bind_break_even(inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    steady = {k: inputs[k] for k in ("model", "accelerator", "weights", "kv", "batch", "prompt_tokens", "output_tokens")}
    bill = {k: inputs[k] for k in ("api_price", "api_input_price", "prompt_tokens", "output_tokens")}
    return "break_even_utilization", {"g": inputs["gpu_price"], "R": Q.get("steady_tokens_per_s")(**steady),
                                      "p": Q.get("api_bill_per_million_output")(**bill)}


def _bind_speculative(name: str) -> Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]:
    def bind(inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        values = {"alpha": inputs["acceptance"], "k": inputs["draft_length"]}
        if name == "speculative_speedup":
            values["c"] = inputs["draft_cost"]
        return name, values

    return bind


def _bind_bubble(inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "pipeline_bubble", {"p": inputs["pp"], "m": inputs["microbatches"]}


#: quantity -> ``binder(inputs) -> (formula name, {symbol: value}) | None``: the formula of
#: :mod:`descent.formulas` that gives this quantity, with its symbols' values looked up for these
#: inputs. :func:`derive` shows it only when it evaluates to the quantity's own value.
BINDERS: dict[str, Callable[[dict[str, Any]], tuple[str, dict[str, Any]] | None]] = {
    "kv_cache_bytes": _bind_kv_cache,
    "kv_bytes_per_token": _bind_kv_token,
    "ridge_point": _bind_ridge,
    "decode_tokens_per_s": _bind_decode,
    "weights_bytes": _bind_weights,
    "break_even_utilization": _bind_break_even,
    "expected_tokens": _bind_speculative("speculative_expected_tokens"),
    "speedup": _bind_speculative("speculative_speedup"),
    "bubble_fraction": _bind_bubble,
}

#: The formula each binder gives (the build writes these formulas' table entries).
FORMULA_OF = {
    "kv_cache_bytes": "kv_cache_bytes",
    "kv_bytes_per_token": "kv_cache_bytes",
    "ridge_point": "ridge_point",
    "decode_tokens_per_s": "decode_tokens_per_s",
    "weights_bytes": "weight_bytes",
    "break_even_utilization": "break_even_utilization",
    "expected_tokens": "speculative_expected_tokens",
    "speedup": "speculative_speedup",
    "bubble_fraction": "pipeline_bubble",
}


# ---------------------------------------------------------------------------------------------
# Substitution
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Derivation:
    """A formula with one number's inputs: its name, LaTeX (symbolic and substituted), value and
    source (Markdown: its references as links)."""

    formula: str
    latex: str
    substituted: str
    value: float
    source: str


def number_tex(x: Any) -> str:
    """A number for LaTeX, printed by :mod:`descent.units`: whole numbers with every digit
    (``8{,}192``), others to 6 significant figures, powers of ten as ``\\times 10^{15}``."""
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e15):
        return format_int(int(x)).replace(",", "{,}")
    text = format_number(float(x), 6, trim=True)
    if "e" in text:
        mant, exp = text.split("e")
        return rf"{mant} \times 10^{{{int(exp)}}}"
    return text.replace(",", "{,}")


def evaluate(entry: Mapping[str, Any], values: Mapping[str, Any]) -> float:
    """A table entry's expression (its ``py``: sympy's Python printing, written at build) at ``values``."""
    args = {f"x{i}": values[name] for i, name in enumerate(entry["args"])}
    allowed = {"__builtins__": {}, "math": math, "max": max, "min": min, "abs": abs}  # what pycode prints
    return eval(entry["py"], allowed, args)  # noqa: S307 - the build's own text, not the reader's


def derive(name: str, inputs: dict[str, Any], table: Mapping[str, Mapping[str, Any]]) -> Derivation | None:
    """The formula of quantity ``name`` with ``inputs`` substituted, or None when the quantity has no
    formula here or its formula does not give this number (another case of the step model applies).

    Args:
        inputs: the quantity's keyword arguments (:meth:`descent.quantities.Quantity.bind`).
        table: ``{formula name: entry}`` written at build (:func:`descent.site.explain.formula_table`):
            ``latex``, ``lhs``, ``template`` (the right side with :data:`SLOT` for each symbol),
            ``py`` and ``args`` (:func:`evaluate`), ``unit``, ``source``.
    """
    binder = BINDERS.get(name)
    bound = binder(inputs) if binder else None
    if bound is None:
        return None
    fname, values = bound
    entry = table[fname]
    got = evaluate(entry, values)
    want = Q.get(name)(**inputs)
    if not math.isclose(float(got), float(want), rel_tol=1e-9):
        return None
    rhs = entry["template"]
    for sym, value in values.items():
        rhs = rhs.replace(SLOT.format(sym), number_tex(value))
    result = number_tex(got) + (rf"\ \text{{{entry['unit']}}}" if entry["unit"] else "")
    return Derivation(fname, entry["latex"], f"{entry['lhs']} = {rhs} = {result}", float(got), entry["source"])


# ---------------------------------------------------------------------------------------------
# Sources and the same number elsewhere
# ---------------------------------------------------------------------------------------------

def source_of(param: str, value: Any) -> str:
    """The catalog's source for an input's value (a URL or a sentence), or "" where it has none:
    a model's config.json, a chip's datasheet, a link's reference."""
    try:
        if param == "model" and value in catalog.models():
            return catalog.model(value).source_of("num_layers")
        if param == "accelerator" and value in catalog.accelerators():
            return catalog.accelerators()[value].source_of("memory_bandwidth")
        if param == "link":
            return catalog.link(value).source_of("bandwidth")
    except (ValueError, KeyError, AttributeError):
        return ""
    return ""


_PLAIN_ARG = re.compile(r"[A-Za-z0-9._/:+-]+")


def command_line(name: str, args: Mapping[str, Any]) -> str:
    """The ``descent value`` command that prints quantity ``name`` with these arguments (raw text or values)."""
    parts = ["descent", "value", name]
    for key, raw in args.items():
        text = str(raw)
        quoted = text if _PLAIN_ARG.fullmatch(text) else "'" + text.replace("'", "'\\''") + "'"
        parts += [f"--{key.replace('_', '-')}", quoted]
    return " ".join(parts)


def python_call(name: str, inputs: Mapping[str, Any]) -> str:
    """The Python call that gives quantity ``name`` at ``inputs``."""
    return f"descent.quantities.get({name!r})({', '.join(f'{k}={v!r}' for k, v in inputs.items())})"
