"""Value shortcodes for the model in the reader's browser (Part 0's load panel and its notes).

Imported by :mod:`descent.site.values`, so the entries register with the others.

* ``<!-- descent:value model_download field=... -->``: the model file the site ships
  (:func:`descent.recorded.model_file`): ``size`` (MB, the parts together: what the reader downloads), ``parts``, ``part_size`` (the largest
  part, MB), ``engine`` (package and version).
* ``<!-- descent:value build_speed field=... -->``: the build machine's NumPy forward pass on the
  work the browser times, read from its record (:func:`descent.recorded.measurement`, the same
  ``prefill`` and ``decode`` Parts 3 and 4 print): ``prefill`` and ``decode`` (tokens/s),
  ``prefill_tokens``, ``decode_tokens``, ``cpu``, ``date``.
* ``<!-- descent:value engine_check field=... -->``: what the browser test measured when the
  engine in Chromium was compared with the build's traces (``descent/data/engine_check.json``,
  written by tests/browser/test_model_in_browser.py): ``max_difference`` (the largest absolute
  difference of a top-five probability, in percentage points), ``same_order`` (how many of the
  prompts rank the same five tokens in the same order), ``prompts``, ``browser``, ``engine``.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

from descent import params as P
from descent.recorded import machine_record, measurement, model_file
from descent.site.shortcodes import value
from descent.units import format_bytes, format_int, format_number, format_points

#: The browser test's comparison of the engine with the traces, in ``descent/data/``.
CHECK_FILE = "engine_check.json"

DOWNLOAD_FIELD = P.declare(P.Param("field", "Model download field", "choice", key="model_download_field",
                                   choices=[(f, f) for f in ("size", "parts", "part_size", "engine")],
                                   help="size, parts, part_size or engine"))

SPEED_FIELD = P.declare(P.Param("field", "Build speed field", "choice", key="build_speed_field",
                                choices=[(f, f) for f in ("prefill", "decode", "prefill_tokens", "decode_tokens",
                                                          "cpu", "date")],
                                help="prefill, decode (tokens/s), prefill_tokens, decode_tokens, cpu or date"))

CHECK_FIELD = P.declare(P.Param("field", "Engine check field", "choice", key="engine_check_field",
                                choices=[(f, f) for f in ("max_difference", "same_order", "prompts", "browser",
                                                          "engine")],
                                help="max_difference, same_order, prompts, browser or engine"))

@value("model_download", DOWNLOAD_FIELD)
def model_download(field: str) -> str:
    """A fact of the model file the site ships for the reader's browser."""
    f = model_file()
    if field == "size":
        return format_bytes(sum(p["bytes"] for p in f["parts"]), "MB")
    if field == "parts":
        return format_int(len(f["parts"]))
    if field == "part_size":
        return format_bytes(max(p["bytes"] for p in f["parts"]), "MB")
    return f"`{f['engine']['package']}` {f['engine']['version']}"

@value("build_speed", SPEED_FIELD)
def build_speed_value(field: str) -> str:
    """The build machine's speed on the browser's timed work, from its record (nothing is timed at build)."""
    pre, dec = measurement("prefill"), measurement("decode")
    if field in ("prefill", "decode"):
        return f"{format_number((pre if field == 'prefill' else dec).rate)} tokens/s"
    if field == "prefill_tokens":
        return format_int(int(pre.work))
    if field == "decode_tokens":
        return format_int(machine_record()["settings"]["decode_steps"])
    if field == "cpu":
        return f"{pre.machine['cpu']}, {format_int(pre.machine['cores'])} cores"
    return pre.date

@functools.cache
def engine_check() -> dict:
    """The parsed ``engine_check.json`` (see the module docstring and the browser test that writes it)."""
    return json.loads(resources.files("descent").joinpath("data", CHECK_FILE).read_text(encoding="utf-8"))

@value("engine_check", CHECK_FIELD)
def engine_check_value(field: str) -> str:
    """What the browser test measured: the engine in Chromium against the build's traces."""
    c = engine_check()
    if field == "max_difference":
        return format_points(c["max_difference"], 2)
    if field == "same_order":
        return format_int(sum(1 for p in c["prompts"] if p["same_order"]))
    if field == "prompts":
        return format_int(len(c["prompts"]))
    if field == "browser":
        return c["browser"]
    return f"`{c['engine']}`"
