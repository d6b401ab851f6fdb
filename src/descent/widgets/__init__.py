"""The widget runtime: declarations, validation, and the one entry point the browser calls.

A widget is a Python function (``compute``) plus a declaration of its inputs. The same code runs
twice: at build time, where :func:`render_static` pre-renders the whole widget with its default
result (the page works without JavaScript and from ``file://``), and in the reader's browser,
where a Pyodide Web Worker calls :func:`run_json` on every input change and gets back the HTML of
the output region. Both paths validate inputs with :func:`coerce` and render views with
:mod:`descent.widgets.views`, so there is exactly one implementation of each.

Core rule: this package imports only the standard library and other core ``descent`` modules
(it is imported inside Pyodide, where there is no numpy).

Declaring a widget::

    from descent.widgets import Input, widget
    from descent.widgets import views as v

    @widget(
        "kv_demo",
        title="KV cache size",
        inputs=[Input("layers", "Layers", "range", 32, min=1, max=200, step=1)],
    )
    def kv_demo(layers):
        return [v.stat("Layers", layers)]

A widget module placed in this package (any ``descent/widgets/<name>.py`` other than ``views``
and names starting with ``_``) is imported, and so registered, the first time a widget is
looked up.
"""

from __future__ import annotations

import html
import importlib
import json
import math
import pkgutil
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from descent import catalog
from descent.widgets import views as _views

__all__ = [
    "FieldError",
    "Input",
    "KINDS",
    "REGISTRY",
    "STATIC_STATUS",
    "STATIC_STATUS_ARGS",
    "Widget",
    "accelerator_options",
    "coerce",
    "get",
    "model_options",
    "names",
    "precision_options",
    "render_form",
    "render_static",
    "run",
    "run_json",
    "widget",
]

#: Input kinds the browser runtime knows (widgets.js binds each one).
KINDS = ("select", "segmented", "range", "number", "toggle", "text")

#: Reserved ``render_static`` argument that names one instance when a page shows the same
#: widget twice (it becomes part of every element id). Not allowed as an input name.
INSTANCE_ARG = "id"

#: The status line of a pre-rendered widget (``data-state="static"``).
STATIC_STATUS = (
    "Static: these are the precomputed results for the defaults. "
    "With JavaScript on, the inputs recompute them in your browser."
)

#: The same, for a widget whose shortcode set some inputs (the results are not the defaults').
STATIC_STATUS_ARGS = (
    "Static: these are the precomputed results for the values shown. "
    "With JavaScript on, the inputs recompute them in your browser."
)

#: Step of a log-scale slider, in decades (0.01 decade = a factor of 10**0.01, about 2.3 %): fine
#: enough for dragging, and arrow keys still move in small steps (Page Up/Down in larger ones).
LOG_SLIDER_STEP_DECADES = 0.01

#: Longest text input any widget may declare, in characters (keeps a worker call bounded).
TEXT_MAX_LENGTH_LIMIT = 10_000

_TRUE = frozenset({"true", "1", "on", "yes"})
_FALSE = frozenset({"false", "0", "off", "no", ""})


class FieldError(ValueError):
    """A widget input failed validation.

    ``field`` is the input's name (``None`` when the error is not about one input, e.g. an
    unknown widget); ``message`` is a sentence the reader can act on, naming the input by its
    label and saying what is allowed ("Context must be 1 to 10,000,000 tokens, got -3").
    """

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def model_options(ids: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """``[(id, name)]`` select options for catalog models: ``ids`` in that order, else every model
    in catalog order. Raises ValueError for an unknown id (``descent.catalog.model``)."""
    if ids is None:
        return [(m.id, m.name) for m in catalog.models().values()]
    return [(i, catalog.model(i).name) for i in ids]


def accelerator_options() -> list[tuple[str, str]]:
    """``[(id, name)]`` select options for every catalog accelerator, in catalog order."""
    return [(a.id, a.name) for a in catalog.accelerators().values()]


def precision_options(table: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Select options for a precision table (``numerics.PRECISIONS`` or ``KV_PRECISIONS``):
    ``[(name, "FP8 (8 bits)")]``."""
    return [(n, f"{p.label} ({p.bits_per_weight:g} bits)") for n, p in table.items()]


def _fmt_num(x: float | int) -> str:
    """Format a limit or value for a message: thousands separators, no trailing ``.0``."""
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int) or (isinstance(x, float) and math.isfinite(x) and x == int(x) and abs(x) < 1e15):
        return f"{int(x):,}"
    return f"{x:,.6g}"


@dataclass(frozen=True)
class Input:
    """One input of a widget.

    Args:
        name: the keyword the compute function receives (a Python identifier, not ``"id"``).
        label: what the reader sees ("Context length"); also used in error messages.
        kind: one of :data:`KINDS`.
        default: the value used when the reader has not set one; must itself be valid.
        unit: shown after number/range controls and in range messages ("tokens"); may be empty.
        help: one short sentence under the control; may be empty.
        options: for ``select``/``segmented``: ``[(value, label), ...]``; values are ``str`` or
            ``int`` and are compared by their string form (form controls send strings).
        min, max, step: for ``range``/``number``: inclusive bounds and the control's step. When
            ``min``, ``max`` and ``step`` are all ``int`` the input is integer-valued.
        log: for ``range``: the slider moves on a log10 scale (``min`` must be > 0); the number
            box always shows the real value.
        max_length: for ``text``: the longest allowed value in characters.

    Raises:
        ValueError: when the declaration itself is inconsistent (unknown kind, missing options,
            ``min >= max``, an invalid default, ...). This happens at import time, so a broken
            declaration fails the build rather than the reader.
    """

    name: str
    label: str
    kind: str
    default: Any
    unit: str = ""
    help: str = ""
    options: tuple[tuple[Any, str], ...] = ()
    min: float | int | None = None
    max: float | int | None = None
    step: float | int | None = None
    log: bool = False
    max_length: int | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name == INSTANCE_ARG:
            raise ValueError(f"input name must be a Python identifier other than {INSTANCE_ARG!r}, got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"input {self.name!r}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        object.__setattr__(self, "options", tuple((v, str(lbl)) for v, lbl in self.options))
        if self.kind in ("select", "segmented"):
            if not self.options:
                raise ValueError(f"input {self.name!r}: a {self.kind} needs options [(value, label), ...]")
            keys = [str(v) for v, _ in self.options]
            if len(set(keys)) != len(keys):
                raise ValueError(f"input {self.name!r}: option values must be unique, got {keys}")
        if self.kind in ("range", "number"):
            for attr in ("min", "max", "step"):
                val = getattr(self, attr)
                if isinstance(val, bool) or not isinstance(val, (int, float)) or not math.isfinite(val):
                    raise ValueError(f"input {self.name!r}: {attr} must be a finite number, got {val!r}")
            if not self.min < self.max:
                raise ValueError(f"input {self.name!r}: min must be below max, got {self.min} and {self.max}")
            if self.step <= 0:
                raise ValueError(f"input {self.name!r}: step must be > 0, got {self.step}")
            if self.log and self.min <= 0:
                raise ValueError(f"input {self.name!r}: a log-scale range needs min > 0, got {self.min}")
        if self.log and self.kind != "range":
            raise ValueError(f"input {self.name!r}: log applies only to kind 'range', got {self.kind!r}")
        if self.kind == "text":
            if (
                not isinstance(self.max_length, int)
                or isinstance(self.max_length, bool)
                or not 1 <= self.max_length <= TEXT_MAX_LENGTH_LIMIT
            ):
                raise ValueError(
                    f"input {self.name!r}: max_length must be 1 to {TEXT_MAX_LENGTH_LIMIT:,}, got {self.max_length!r}"
                )
        # The default must pass the same validation a reader's value does.
        try:
            coerced = self.coerce(self.default)
        except FieldError as exc:
            raise ValueError(f"input {self.name!r}: invalid default: {exc.message}") from None
        object.__setattr__(self, "default", coerced)

    @property
    def integer(self) -> bool:
        """True for a ``range``/``number`` whose min, max and step are all ``int``."""
        return all(isinstance(getattr(self, a), int) and not isinstance(getattr(self, a), bool)
                   for a in ("min", "max", "step"))

    def _range_message(self, got: str) -> str:
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.label} must be {_fmt_num(self.min)} to {_fmt_num(self.max)}{unit}, got {got}"

    def coerce(self, raw: Any) -> Any:
        """Validate and convert one raw value (a form string, JSON value or Python value).

        Returns the typed value the compute function receives: ``int``/``float`` for
        range/number, ``bool`` for toggle, ``str`` for text, the option's declared value for
        select/segmented.

        Raises:
            FieldError: naming this input, with the allowed values or range.
        """
        k = self.kind
        if k in ("range", "number"):
            return self._coerce_number(raw)
        if k in ("select", "segmented"):
            key = raw if isinstance(raw, str) else (str(raw) if isinstance(raw, int) and not isinstance(raw, bool) else None)
            for value, _lbl in self.options:
                if key is not None and str(value) == key:
                    return value
            allowed = ", ".join(str(v) for v, _ in self.options)
            raise FieldError(self.name, f"{self.label} must be one of: {allowed}; got {_show(raw)}")
        if k == "toggle":
            if isinstance(raw, bool):
                return raw
            if isinstance(raw, str) and raw.strip().lower() in _TRUE:
                return True
            if isinstance(raw, str) and raw.strip().lower() in _FALSE:
                return False
            raise FieldError(self.name, f"{self.label} must be on or off (true or false), got {_show(raw)}")
        # text
        if not isinstance(raw, str):
            raise FieldError(self.name, f"{self.label} must be text, got {_show(raw)}")
        if len(raw) > self.max_length:
            raise FieldError(
                self.name, f"{self.label} must be at most {self.max_length:,} characters, got {len(raw):,}"
            )
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate, e.g. half of a pasted emoji
            raise FieldError(
                self.name, f"{self.label} must be valid Unicode text; character {exc.start + 1} is half of a pair"
            ) from None
        return raw

    def _coerce_number(self, raw: Any) -> int | float:
        if isinstance(raw, bool):
            raise FieldError(self.name, f"{self.label} must be a number, got {_show(raw)}")
        if isinstance(raw, (int, float)):
            x = raw
        elif isinstance(raw, str):
            text = raw.strip().replace(",", "").replace("_", "")
            if not text:
                raise FieldError(self.name, f"{self.label} is empty: enter a number from "
                                 f"{_fmt_num(self.min)} to {_fmt_num(self.max)}")
            try:
                x = float(text)
            except ValueError:
                raise FieldError(self.name, f"{self.label} must be a number, got {_show(raw)}") from None
        else:
            raise FieldError(self.name, f"{self.label} must be a number, got {_show(raw)}")
        if isinstance(x, int):
            # Python ints are unbounded (JSON may send 10**400): check the range before any float().
            if not self.min <= x <= self.max:
                raise FieldError(self.name, self._range_message(_show(raw)))
        elif not math.isfinite(x):
            # NaN or infinity (a number box that cannot parse "1e400" reports NaN): repeating the
            # value back would show the reader a "NaN" they never typed.
            unit = f" {self.unit}" if self.unit else ""
            raise FieldError(self.name, f"{self.label} must be a number from {_fmt_num(self.min)} to "
                             f"{_fmt_num(self.max)}{unit}")
        if self.integer:
            if x != int(x):
                raise FieldError(self.name, f"{self.label} must be a whole number, got {_show(raw)}")
            x = int(x)
        else:
            x = float(x)
        if not self.min <= x <= self.max:
            raise FieldError(self.name, self._range_message(_fmt_num(x)))
        return x


def _show(raw: Any) -> str:
    """A short, safe rendering of a bad value for an error message."""
    if isinstance(raw, str):
        text = repr(raw)
    elif isinstance(raw, float) and not math.isfinite(raw):
        text = str(raw)
    elif _jsonable(raw):
        text = json.dumps(raw)
    else:
        text = type(raw).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _jsonable(raw: Any) -> bool:
    try:
        json.dumps(raw, allow_nan=True)
    except (TypeError, ValueError):
        return False
    return True


@dataclass(frozen=True)
class Widget:
    """A registered widget: name, title, inputs, the compute function and a description.

    ``compute(**values)`` receives every input, validated and typed, and returns a list of
    views (plain dicts built with :mod:`descent.widgets.views`). It may raise
    :class:`FieldError` for a constraint between inputs (e.g. "KV heads must divide query heads").
    """

    name: str
    title: str
    inputs: tuple[Input, ...]
    compute: Callable[..., list[dict]]
    description: str = ""
    _by_name: dict[str, Input] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        names_ = [i.name for i in self.inputs]
        if len(set(names_)) != len(names_):
            raise ValueError(f"widget {self.name!r}: input names must be unique, got {names_}")
        self._by_name.update({i.name: i for i in self.inputs})

    def defaults(self) -> dict[str, Any]:
        """The default value of every input, by name."""
        return {i.name: i.default for i in self.inputs}

    def input(self, name: str) -> Input:
        return self._by_name[name]


REGISTRY: dict[str, Widget] = {}


def widget(
    name: str, *, title: str, inputs: Iterable[Input], description: str = ""
) -> Callable[[Callable[..., list[dict]]], Callable[..., list[dict]]]:
    """Decorator: declare ``fn`` as the compute function of widget ``name`` and register it.

    Raises:
        ValueError: a widget of that name is already registered, or the name is not a
            lowercase identifier (it appears in ``<!-- descent:widget NAME -->``).
    """

    def deco(fn: Callable[..., list[dict]]) -> Callable[..., list[dict]]:
        if not (name.isidentifier() and name == name.lower()):
            raise ValueError(f"widget name must be a lowercase identifier, got {name!r}")
        if name in REGISTRY and REGISTRY[name].compute is not fn:
            raise ValueError(f"widget {name!r} is already registered")
        REGISTRY[name] = Widget(name, title, tuple(inputs), fn, description)
        return fn

    return deco


_loaded = False


def _load_all() -> None:
    """Import every widget module of this package once (registration happens on import)."""
    global _loaded
    if _loaded:
        return
    for mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        if mod != "views" and not mod.startswith("_"):
            importlib.import_module(f"{__name__}.{mod}")
    _loaded = True


def names() -> list[str]:
    """Every registered widget name, sorted."""
    _load_all()
    return sorted(REGISTRY)


def get(name: str) -> Widget:
    """The widget called ``name``.

    Raises:
        FieldError: (field ``None``) no such widget; the message lists the known names.
    """
    _load_all()
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise FieldError(None, f"unknown widget {name!r}; known widgets: {', '.join(sorted(REGISTRY))}") from None


def coerce(w: Widget, raw: Mapping[str, Any]) -> dict[str, Any]:
    """Validate raw inputs for widget ``w``: defaults fill missing inputs.

    Returns every input's typed value, by name.

    Raises:
        FieldError: for the first unknown input name or invalid value.
    """
    if not isinstance(raw, Mapping):
        raise FieldError(None, f"inputs must be an object of name: value, got {type(raw).__name__}")
    for key in raw:
        if key not in w._by_name:
            allowed = ", ".join(i.name for i in w.inputs) or "(none)"
            raise FieldError(key, f"unknown input {key!r} for widget {w.name!r}; it takes: {allowed}")
    values = w.defaults()
    for key, val in raw.items():
        values[key] = w._by_name[key].coerce(val)
    return values


def _compute_html(w: Widget, values: dict[str, Any]) -> str:
    result = w.compute(**values)
    return _views.render_all(result)


def run(name: str, inputs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Validate ``inputs``, run widget ``name`` and render its output region.

    Returns ``{"ok": True, "html": str}`` or ``{"ok": False, "field": str | None,
    "message": str}``. Never raises for bad input: an unknown widget, an unknown input, a bad
    value, or a :class:`FieldError`/``ValueError`` raised by the compute function all come back
    as ``ok: False`` (``field`` is ``None`` when no single input is to blame).
    """
    try:
        w = get(name)
        values = coerce(w, inputs if inputs is not None else {})
        return {"ok": True, "html": _compute_html(w, values)}
    except FieldError as exc:
        return {"ok": False, "field": exc.field, "message": exc.message}
    except ValueError as exc:
        return {"ok": False, "field": None, "message": str(exc)}


def run_json(name: str, inputs_json: str) -> str:
    """:func:`run` with JSON in and out: the worker's entry point (no proxies cross the boundary)."""
    try:
        inputs = json.loads(inputs_json)
    except (TypeError, ValueError) as exc:
        return json.dumps({"ok": False, "field": None, "message": f"inputs are not valid JSON: {exc}"})
    return json.dumps(run(name, inputs))


# ---------------------------------------------------------------------------------------------
# Pre-rendering (build time; also usable anywhere, it is plain string work)
# ---------------------------------------------------------------------------------------------


def _attr(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _form_value(x: Any) -> str:
    """A value as a form control shows it (``repr``-exact for floats, no exponent for ints)."""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return repr(int(x)) if x == int(x) and abs(x) < 1e15 else repr(x)
    return str(x)


def _render_input(inp: Input, value: Any, prefix: str) -> str:
    fid = f"{prefix}-{inp.name}"
    help_id, err_id = f"{fid}-help", f"{fid}-error"
    described = f"{help_id} {err_id}" if inp.help else err_id
    unit = f' <span class="descent-field__unit">({_attr(inp.unit)})</span>' if inp.unit else ""
    help_html = f'<p class="descent-field__help" id="{help_id}">{_attr(inp.help)}</p>' if inp.help else ""
    err_html = f'<p class="descent-field__error" id="{err_id}" aria-live="polite"></p>'
    k = inp.kind
    head = f'<div class="descent-field descent-field--{k}" data-field="{_attr(inp.name)}" data-kind="{k}">'
    if k in ("range", "number"):
        num = (
            f'<input type="number" class="descent-field__number" id="{fid}" name="{_attr(inp.name)}" '
            f'min="{_form_value(inp.min)}" max="{_form_value(inp.max)}" step="{_form_value(inp.step)}" '
            f'value="{_attr(_form_value(value))}" inputmode="{"numeric" if inp.integer else "decimal"}" '
            f'aria-describedby="{described}">'
        )
        label = f'<label for="{fid}">{_attr(inp.label)}{unit}</label>'
        if k == "number":
            control = num
        else:
            if inp.log:
                lo, hi, pos = math.log10(inp.min), math.log10(inp.max), math.log10(value)
                rng = (
                    f'<input type="range" class="descent-field__range" id="{fid}-range" data-log="1" '
                    f'min="{lo!r}" max="{hi!r}" step="{LOG_SLIDER_STEP_DECADES!r}" value="{pos!r}" '
                    f'aria-label="{_attr(inp.label)} (log-scale slider)" aria-valuetext="{_attr(_form_value(value))}'
                    f'{" " + _attr(inp.unit) if inp.unit else ""}">'
                )
            else:
                rng = (
                    f'<input type="range" class="descent-field__range" id="{fid}-range" '
                    f'min="{_form_value(inp.min)}" max="{_form_value(inp.max)}" step="{_form_value(inp.step)}" '
                    f'value="{_attr(_form_value(value))}" aria-label="{_attr(inp.label)} (slider)">'
                )
            control = f'<div class="descent-field__pair">{rng}{num}</div>'
        return f"{head}{label}{control}{help_html}{err_html}</div>"
    if k == "select":
        opts = "".join(
            f'<option value="{_attr(v)}"{" selected" if str(v) == str(value) else ""}>{_attr(lbl)}</option>'
            for v, lbl in inp.options
        )
        return (
            f'{head}<label for="{fid}">{_attr(inp.label)}{unit}</label>'
            f'<select id="{fid}" name="{_attr(inp.name)}" aria-describedby="{described}">{opts}</select>'
            f"{help_html}{err_html}</div>"
        )
    if k == "segmented":
        radios = "".join(
            f'<label class="descent-seg"><input type="radio" name="{_attr(inp.name)}" value="{_attr(v)}"'
            f'{" checked" if str(v) == str(value) else ""}><span>{_attr(lbl)}</span></label>'
            for v, lbl in inp.options
        )
        return (
            f'{head}<fieldset class="descent-segmented" aria-describedby="{described}">'
            f'<legend>{_attr(inp.label)}{unit}</legend><div class="descent-segmented__options">{radios}</div>'
            f"</fieldset>{help_html}{err_html}</div>"
        )
    if k == "toggle":
        return (
            f'{head}<label class="descent-toggle" for="{fid}"><input type="checkbox" role="switch" id="{fid}" '
            f'name="{_attr(inp.name)}"{" checked" if value else ""} aria-describedby="{described}">'
            f"<span>{_attr(inp.label)}</span></label>{help_html}{err_html}</div>"
        )
    # text
    return (
        f'{head}<label for="{fid}">{_attr(inp.label)}</label>'
        f'<textarea id="{fid}" name="{_attr(inp.name)}" maxlength="{inp.max_length}" rows="2" '
        f'spellcheck="false" aria-describedby="{described}">{_attr(value)}</textarea>'
        f"{help_html}{err_html}</div>"
    )


def render_form(w: Widget, values: Mapping[str, Any], prefix: str) -> str:
    """The ``<form>`` of labelled controls for ``w``, filled with ``values`` (already coerced)."""
    fields = "".join(_render_input(i, values[i.name], prefix) for i in w.inputs)
    return (
        f'<form class="descent-widget__form" novalidate aria-label="{_attr(w.title)}: inputs">{fields}</form>'
    )


def _prefix(name: str, args: Mapping[str, Any], instance: str | None) -> str:
    if instance is not None:
        if not str(instance).replace("-", "_").isidentifier():
            raise ValueError(f"widget {name!r}: {INSTANCE_ARG}= must be letters, digits, - or _, got {instance!r}")
        return f"dw-{name}-{instance}"
    # Deterministic across builds: a hash of the arguments, so two differently configured
    # instances on one page get different ids. Same args twice on one page: pass id=.
    key = json.dumps(sorted((k, str(v)) for k, v in args.items()))
    return f"dw-{name}" + (f"-{zlib.crc32(key.encode()):08x}" if args else "")


def render_static(name: str, **args: Any) -> str:
    """The whole widget as pre-rendered HTML, for ``<!-- descent:widget NAME key=value ... -->``.

    ``args`` override input defaults (strings from the shortcode are validated like a reader's
    input); the reserved ``id=`` names the instance when one page shows the same widget twice.
    The result is a ``<div class="descent-widget" data-widget=NAME data-state="static">`` with a
    title, a ``<form>`` of labelled controls, a per-field error slot (``aria-live``), a status
    line and the output region holding the computed default result.

    Raises:
        ValueError: unknown widget, unknown argument or invalid value (so the site build fails).
    """
    instance = args.pop(INSTANCE_ARG, None)
    try:
        w = get(name)
        values = coerce(w, args)
        out = _compute_html(w, values)
    except FieldError as exc:
        raise ValueError(f"descent:widget {name}: {exc.message}") from None
    prefix = _prefix(name, args, instance)
    desc = f'<p class="descent-widget__desc">{_attr(w.description)}</p>' if w.description else ""
    return (
        f'<div class="descent-widget" data-widget="{_attr(name)}" data-state="static" id="{prefix}">'
        f'<div class="descent-widget__title" role="heading" aria-level="3">{_attr(w.title)}</div>'
        f"{desc}{render_form(w, values, prefix)}"
        f'<p class="descent-widget__status" role="status">{_attr(STATIC_STATUS_ARGS if args else STATIC_STATUS)}</p>'
        f'<div class="descent-widget__output" aria-live="polite" aria-label="{_attr(w.title)}: results">'
        f"{out}</div></div>"
    )


# Register every widget module now, so REGISTRY is complete as soon as the package is imported
# (the widget modules import the names defined above; this call must stay at the end).
_load_all()
