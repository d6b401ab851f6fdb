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

    from descent import params as P
    from descent.widgets import Input, widget
    from descent.widgets import views as v

    @widget(
        "kv_demo",
        title="KV cache size",
        inputs=[Input(P.LAYERS, "range"), Input(P.CONTEXT.but(default=4096), "range", log=True)],
    )
    def kv_demo(layers, context):
        return [v.stat("Layers", layers)]

Every input is a parameter declared once in :mod:`descent.params` (type, unit, range, default,
label, help, validation), or narrowed from one with ``Param.but``; the Input only picks the
control. An input only one widget has is declared next to it with ``P.declare(P.Param(...))``.

Inputs that constrain each other (the query heads must divide d_model) are declared once as a
:class:`Constraint` on the widget. The runtime then (1) steps every slider taking part through the
values the other inputs allow, recomputed after each change (``allowed`` in :func:`run`'s result),
and (2) puts a broken rule's message under the control the reader touched (``touched``), in words
about that control, with the nearest allowed values.

Every widget declares ``tries``: what to try and what to notice, shown as a short list under it.

**The model in the reader's browser.** A widget declared with ``live=True`` shows the real model's
numbers and can take them from the engine the reader may load in the browser
(:mod:`descent.engine`). Its compute function receives one more keyword, ``live``: ``None`` while
the model is not loaded (the widget shows the build's traces; ``data-engine="trace"`` on its root),
else a :class:`descent.engine.Answers` it asks through ``engine.next_tokens`` and the like. An
answer not there yet raises :class:`descent.engine.EngineNeeded`; :func:`run` then returns
``{"ok": True, "need": request}`` instead of HTML, the page has the engine compute it, and calls
:func:`run` again with the answer added (``answers``). The HTML of a live widget comes with
``"engine": "trace"`` or ``"browser"``, which widgets.js puts on the root's ``data-engine``.

A widget module placed in this package (any ``descent/widgets/<name>.py`` other than ``views``
and names starting with ``_``) is imported, and so registered, when one of its widgets is first
looked up (:func:`get` finds the module by reading the sources; :func:`names` imports them all).
"""

from __future__ import annotations

import html
import importlib
import json
import math
import pkgutil
import re
import sys
import traceback
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from descent import catalog, engine
from descent.params import Param, ParamError
from descent.units import format_int
from descent.widgets import views as _views

__all__ = [
    "Constraint",
    "FieldError",
    "Input",
    "KINDS",
    "Look",
    "REGISTRY",
    "STATIC_STATUS",
    "STATIC_STATUS_ARGS",
    "READY_STATUS",
    "READY_STATUS_ARGS",
    "allowed_values",
    "check_constraints",
    "Widget",
    "coerce",
    "explain_json",
    "get",
    "internal_message",
    "model_options",
    "names",
    "NOT_WARMED",
    "render_form",
    "render_static",
    "render_tries",
    "run",
    "run_json",
    "warm",
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

#: The status line widgets.js shows once it has bound a widget, before the reader changes anything
#: (data-ready on the status line): with JavaScript on, the results are not a fallback but the
#: ones the inputs show, and they change when an input does ("Live: ..." once computed in the browser).
READY_STATUS = (
    "Ready: these results are for the defaults. "
    "Change an input and they are recomputed in your browser."
)

#: The same, for a widget whose shortcode set some inputs.
READY_STATUS_ARGS = (
    "Ready: these results are for the values shown. "
    "Change an input and they are recomputed in your browser."
)

#: Most positions a constrained slider enumerates; a longer range keeps its plain slider (a broken
#: rule is still reported under the touched control).
MAX_SLIDER_POSITIONS = 4096

#: Allowed values named in a constraint message: the nearest below and the nearest above.
NEAREST_SHOWN = 2

#: Step of a log-scale slider, in decades (0.01 decade = a factor of 10**0.01, about 2.3 %): fine
#: enough for dragging, and arrow keys still move in small steps (Page Up/Down in larger ones).
LOG_SLIDER_STEP_DECADES = 0.01

#: A widget input failed validation: :class:`descent.params.ParamError` (``field`` names the input).
FieldError = ParamError

#: Which parameter types each control kind can show.
_CONTROL_TYPES = {
    "select": ("choice",),
    "segmented": ("choice",),
    "range": ("int", "float"),
    "number": ("int", "float"),
    "toggle": ("bool",),
    "text": ("text",),
}


def model_options(ids: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """``[(id, name)]`` select options for catalog models: ``ids`` in that order, else every model
    in catalog order. Raises ValueError for an unknown id (``descent.catalog.model``)."""
    if ids is None:
        return [(m.id, m.name) for m in catalog.models().values()]
    return [(i, catalog.model(i).name) for i in ids]


@dataclass(frozen=True)
class Input:
    """One input of a widget: a declared parameter (:mod:`descent.params`) and the control that
    shows it.

    Args:
        param: the parameter, declared once in :mod:`descent.params` (or next to the widget, with
            :func:`descent.params.declare`), or narrowed from one with :meth:`Param.but` (another
            default, a subset of choices, a shorter range). Its name is the keyword the compute
            function receives; its label, unit, help, range, choices and validation are the
            control's.
        kind: the control, one of :data:`KINDS`, matching the parameter's type (select or
            segmented for a choice, range or number for a number, toggle for a bool, text).
        log: for ``range``: the slider moves on a log10 scale (``min`` must be > 0); the number
            box always shows the real value.
        cut: for ``text``: a longer text is cut to the parameter's ``max_length`` and the output
            starts with a note saying so (a pasted page of text), instead of an error. The control
            then has no ``maxlength``, so the browser does not cut the paste silently first.
        when: ``(input, value)`` or ``(input, (value, ...))``: the control shows only while that
            other input of the same widget (a select, a segmented choice, a linear slider or a
            number box) holds ``value``, or one of the values (the sandbox's config.json box while
            the model is "custom"; the replay's token select at stage 2 only: a control that
            changes nothing at a stage is not offered there). A hidden input is not sent: it keeps
            its default.
        placeholder: for ``text``: the hint the empty box shows (the ``placeholder`` attribute).
            The Compare box (:mod:`descent.widgets._compare`) needs one: its CSS hides the field
            while the box is empty (``:placeholder-shown``), so it shows only once something is pinned.

    Raises:
        ValueError: the control does not fit the parameter (a toggle for a number, a log range
            from 0) or the parameter has no default. This happens at import time, so a broken
            declaration fails the build rather than the reader.
    """

    param: Param
    kind: str
    log: bool = False
    cut: bool = False
    when: tuple[str, str | tuple[str, ...]] | None = None
    placeholder: str = ""

    def __post_init__(self) -> None:
        p = self.param
        if self.when is not None and not (
            isinstance(self.when, tuple) and len(self.when) == 2 and isinstance(self.when[0], str)
            and (isinstance(self.when[1], str) or (
                isinstance(self.when[1], tuple) and self.when[1] and all(isinstance(x, str) for x in self.when[1])))
        ):
            raise ValueError(f"input {p.name!r}: when must be (input name, value or tuple of values), got {self.when!r}")
        if not isinstance(p, Param):
            raise ValueError(f"an Input takes a descent.params.Param, got {type(p).__name__}")
        if p.name == INSTANCE_ARG:
            raise ValueError(f"input name must be a Python identifier other than {INSTANCE_ARG!r}")
        if self.kind not in KINDS:
            raise ValueError(f"input {p.name!r}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if p.type not in _CONTROL_TYPES[self.kind]:
            raise ValueError(f"input {p.name!r}: a {self.kind} cannot show a {p.type} parameter")
        if self.log and (self.kind != "range" or p.min <= 0):
            raise ValueError(f"input {p.name!r}: a log-scale slider needs kind 'range' and min > 0")
        if self.cut and self.kind != "text":
            raise ValueError(f"input {p.name!r}: cut=True is for text inputs")
        if self.placeholder and self.kind != "text":
            raise ValueError(f"input {p.name!r}: a placeholder is for text inputs")
        if p.required:
            raise ValueError(f"input {p.name!r}: a widget input needs a default (Param.but(default=...))")
        # The default must pass the same validation a reader's value does (catalog choices are
        # read now, so a bad catalog default fails the build).
        try:
            p.parse(p.default)
        except ParamError as exc:
            raise ValueError(f"input {p.name!r}: invalid default: {exc.message}") from None

    name = property(lambda self: self.param.name)

    @property
    def when_values(self) -> tuple[str, ...]:
        """The values of the ``when`` input under which this control shows (empty without ``when``)."""
        if self.when is None:
            return ()
        return (self.when[1],) if isinstance(self.when[1], str) else self.when[1]

    label = property(lambda self: self.param.label)
    unit = property(lambda self: self.param.unit)
    help = property(lambda self: self.param.help)
    min = property(lambda self: self.param.min)
    max = property(lambda self: self.param.max)
    step = property(lambda self: self.param.step)
    max_length = property(lambda self: self.param.max_length)

    @property
    def default(self) -> Any:
        return self.param.parse(self.param.default)

    @property
    def options(self) -> list[tuple[Any, str]]:
        return self.param.options()

    @property
    def integer(self) -> bool:
        """True for a whole-number parameter."""
        return self.param.type == "int"

    def extremes(self) -> list[Any]:
        """The ends of this input: a range's min and max, a choice's first and last option, a
        toggle's both states, a text box empty and at its longest (the budget test and the bench's
        recompute report try each)."""
        if self.kind in ("range", "number"):
            return [self.min, self.max]
        if self.kind in ("select", "segmented"):
            opts = [v for v, _ in self.options]
            return [opts[0], opts[-1]]
        if self.kind == "toggle":
            return [False, True]
        return ["", "x" * self.max_length]

    def coerce(self, raw: Any) -> Any:
        """Validate and convert one raw value (:meth:`descent.params.Param.parse`); with ``cut``, a
        text longer than ``max_length`` is first cut to it (:meth:`cut_note` says so).

        Raises:
            FieldError: naming this input, with the allowed values or range.
        """
        if self.cut and isinstance(raw, str) and len(raw) > self.max_length:
            raw = raw[: self.max_length]
        return self.param.parse(raw)

    def cut_note(self, raw: Any) -> str:
        """For a ``cut`` text input: the sentence saying a text was cut, or "" when it was not."""
        if not (self.cut and isinstance(raw, str) and len(raw) > self.max_length):
            return ""
        return (
            f"{self.label}: only the first {format_int(self.max_length)} of its {format_int(len(raw))} characters "
            f"are used here; the rest is left out."
        )

    def positions(self) -> list[Any] | None:
        """Every value a linear ``range`` slider can take (min, min + step, ... max), or None for
        another control, a log slider or more than :data:`MAX_SLIDER_POSITIONS` positions."""
        if self.kind != "range" or self.log:
            return None
        n = math.floor((self.max - self.min) / self.step + 1e-9) + 1
        if n > MAX_SLIDER_POSITIONS:
            return None
        if self.integer:
            return list(range(self.min, self.min + n * self.step, self.step))
        return [self.param.parse(repr(round(self.min + i * self.step, 12))) for i in range(n)]


@dataclass(frozen=True)
class Constraint:
    """A rule between inputs of one widget, declared once (``widget(..., constraints=[...])``).

    Args:
        inputs: the names of the inputs the rule involves (at least two).
        ok: ``ok(**values)`` -> bool, called with those inputs' typed values as keywords.
        messages: for each input in ``inputs``, ``message(**values)`` -> the sentence shown under
            that control when the rule fails and the reader touched it, in words about that
            control ("d_model must be a multiple of the query heads (12), got 1,000").

    The runtime adds the nearest allowed values of the blamed input when it is a slider or a
    number box, and steps every slider in ``inputs`` through the allowed values only.

    Raises:
        ValueError: fewer than two inputs, or a message missing for one of them.
    """

    inputs: tuple[str, ...]
    ok: Callable[..., bool]
    messages: Mapping[str, Callable[..., str]]

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        if len(self.inputs) < 2 or len(set(self.inputs)) != len(self.inputs):
            raise ValueError(f"a Constraint needs two or more distinct inputs, got {self.inputs}")
        missing = [n for n in self.inputs if n not in self.messages]
        if missing or set(self.messages) - set(self.inputs):
            raise ValueError(f"Constraint {self.inputs}: give one message per input, missing {missing}")

    def holds(self, values: Mapping[str, Any]) -> bool:
        return bool(self.ok(**{n: values[n] for n in self.inputs}))

    def message(self, name: str, values: Mapping[str, Any]) -> str:
        return self.messages[name](**{n: values[n] for n in self.inputs})


@dataclass(frozen=True)
class Look:
    """A "Try this" hint that is not a change of inputs: it points the reader at something the
    widget already shows, or at something else on the page. ``tries``' third element, in place of
    the inputs a hint sets; a test checks that what it points at is there.

    Args:
        html: a piece of the widget's pre-rendered default HTML the hint points at (a label, a
            button's text): the hint "Watch the spread" points at ``"Spread"``.
        page: a widget every page that shows this one shows above it (``"model_in_browser"`` for
            "Load the model above").

    Raises:
        ValueError: neither given.
    """

    html: str = ""
    page: str = ""

    def __post_init__(self) -> None:
        if not (self.html or self.page):
            raise ValueError("a Look names the html it points at, or the page's widget, or both")


@dataclass(frozen=True)
class Widget:
    """A registered widget: name, title, inputs, the compute function and a description.

    ``compute(**values)`` receives every input, validated and typed, and returns a list of
    views (plain dicts built with :mod:`descent.widgets.views`). A rule between inputs is a
    :class:`Constraint` (checked before ``compute``); ``compute`` may still raise
    :class:`FieldError` for anything else. ``tries`` is ``[(what to try, what to notice), ...]``;
    ``try_inputs`` holds, for each try, the inputs it sets from the defaults (``{"tile": 128}``),
    or None for a try that is not a change of inputs ("Press the load button"); ``try_looks`` holds,
    for each such try, the :class:`Look` that says what it points at (None for an input change).
    With ``live`` it also receives ``live`` (see the module docstring).
    """

    name: str
    title: str
    inputs: tuple[Input, ...]
    compute: Callable[..., list[dict]]
    description: str = ""
    constraints: tuple[Constraint, ...] = ()
    tries: tuple[tuple[str, str], ...] = ()
    live: bool = False
    try_inputs: tuple[dict[str, Any] | None, ...] = ()
    try_looks: tuple[Look | None, ...] = ()
    _by_name: dict[str, Input] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "constraints", tuple(self.constraints))
        object.__setattr__(self, "tries", tuple((str(a), str(b)) for a, b in self.tries))
        names_ = [i.name for i in self.inputs]
        if len(set(names_)) != len(names_):
            raise ValueError(f"widget {self.name!r}: input names must be unique, got {names_}")
        self._by_name.update({i.name: i for i in self.inputs})
        for c in self.constraints:
            unknown = [n for n in c.inputs if n not in self._by_name]
            if unknown:
                raise ValueError(f"widget {self.name!r}: a constraint names unknown inputs {unknown}")
        for a, b in self.tries:
            if not (a.strip() and b.strip()):
                raise ValueError(f"widget {self.name!r}: each try is (what to try, what to notice), both non-empty")
        sets = tuple(self.try_inputs) + (None,) * (len(self.tries) - len(self.try_inputs))
        if len(sets) != len(self.tries):
            raise ValueError(f"widget {self.name!r}: more try inputs than tries")
        object.__setattr__(self, "try_inputs", tuple(None if d is None else dict(d) for d in sets))
        looks = tuple(self.try_looks) + (None,) * (len(self.tries) - len(self.try_looks))
        if len(looks) != len(self.tries):
            raise ValueError(f"widget {self.name!r}: more try looks than tries")
        object.__setattr__(self, "try_looks", looks)
        for (a, _), d, look in zip(self.tries, self.try_inputs, self.try_looks, strict=True):
            if d is not None and look is not None:
                raise ValueError(f"widget {self.name!r}: try {a!r} is either an input change or a Look, not both")
            if d is not None and not d:
                raise ValueError(f"widget {self.name!r}: try {a!r} sets no input")
        for (a, _), d in zip(self.tries, self.try_inputs, strict=True):
            for key, val in (d or {}).items():
                if key not in self._by_name:
                    raise ValueError(f"widget {self.name!r}: try {a!r} sets unknown input {key!r}")
                try:
                    self._by_name[key].coerce(val)
                except ParamError as exc:
                    raise ValueError(f"widget {self.name!r}: try {a!r}: {exc.message}") from None
        for i in self.inputs:
            if i.when is None:
                continue
            other = i.when[0]
            ctl = self._by_name.get(other)
            if ctl is None or ctl is i or ctl.kind not in ("select", "segmented", "range", "number") or ctl.log:
                raise ValueError(f"widget {self.name!r}: input {i.name!r} shows when {other!r} has a value, "
                                 "but the widget has no such select, segmented, linear slider or number input")
            for value in i.when_values:
                try:
                    ok = str(ctl.coerce(value)) == value
                except ParamError:
                    ok = False
                if not ok:
                    raise ValueError(f"widget {self.name!r}: input {i.name!r} shows when {other!r} is {value!r}, "
                                     f"which is not one of its options")

    def defaults(self) -> dict[str, Any]:
        """The default value of every input, by name."""
        return {i.name: i.default for i in self.inputs}

    def input(self, name: str) -> Input:
        return self._by_name[name]


REGISTRY: dict[str, Widget] = {}


def widget(
    name: str,
    *,
    title: str,
    inputs: Iterable[Input],
    description: str = "",
    constraints: Iterable[Constraint] = (),
    tries: Iterable[tuple[str, str] | tuple[str, str, Mapping[str, Any] | Look]] = (),
    live: bool = False,
) -> Callable[[Callable[..., list[dict]]], Callable[..., list[dict]]]:
    """Decorator: declare ``fn`` as the compute function of widget ``name`` and register it.

    ``constraints``: rules between inputs (:class:`Constraint`). ``tries``: what to try and what to
    notice, ``[("Set the heads to 16.", "The attention weights stay the same: ...", {"heads": 16}),
    ...]``, shown as a short list under the widget (every widget has some: a test checks); the
    third element is the inputs the try sets, from the defaults (a test applies each one, expects
    a result and checks the effect the try names), or a :class:`Look` for a try that is not an
    input change (a test checks that what it points at is there); the page shows a "Try it"
    button for each try with inputs. ``live``: ``fn``
    takes ``live=`` too and can compute with the model in the reader's browser (module docstring).

    Raises:
        ValueError: a widget of that name is already registered, or the name is not a
            lowercase identifier (it appears in ``<!-- descent:widget NAME -->``).
    """

    def deco(fn: Callable[..., list[dict]]) -> Callable[..., list[dict]]:
        if not (name.isidentifier() and name == name.lower()):
            raise ValueError(f"widget name must be a lowercase identifier, got {name!r}")
        if name in REGISTRY and REGISTRY[name].compute is not fn:
            raise ValueError(f"widget {name!r} is already registered")
        given = [tuple(t) for t in tries]
        if any(len(t) not in (2, 3) for t in given):
            raise ValueError(f"widget {name!r}: each try is (what to try, what to notice[, inputs])")
        third = [t[2] if len(t) == 3 else None for t in given]
        REGISTRY[name] = Widget(name, title, tuple(inputs), fn, description, tuple(constraints),
                                tuple(t[:2] for t in given), live,
                                tuple(None if isinstance(x, Look) else x for x in third),
                                tuple(x if isinstance(x, Look) else None for x in third))
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


#: Widgets :func:`warm` does not run, and why. The Pyodide snapshot that :func:`warm` prepares must
#: fit the interpreter's initial memory (30 MiB, 0.6 MiB of it free after the imports): Pyodide
#: copies a snapshot into that memory without growing it (``descent.site.runtime.make_snapshot``
#: refuses one that grew). These widgets read no data file; what they would leave behind (the
#: tokenizer's tables) or need while they run (a simulation, a player's frames) is larger than what
#: is left. A reader's worker runs them once while idle (``worker.js``).
NOT_WARMED = {
    "tokenizer": "SmolLM2's 49,152 tokens and 48,900 merges as Python objects: 9 MiB of heap, 3.4 MB more "
                 "to download gzipped (8.1 to 11.5 MB), to save a load of about 40 ms in CPython",
    "batching": "two simulations of 200 requests kept by serving.run's cache: 0.3 MiB of heap",
    "batching_lanes": "its simulations, after batching's: 0.03 MiB of heap",
    "flash_tiles": "41 frames of 40 tiles while it runs: 0.4 MiB of heap",
    "kv_fill": "13 frames of 30 layers by up to 16 tokens while it runs: 1.7 MiB of heap",
}


def warm() -> list[str]:
    """Do now, once, what a widget's first run would otherwise do: import every widget module and
    run each widget at its defaults, except :data:`NOT_WARMED`, so the data files they read are
    parsed and their caches filled (the recorded weights, speculative run, embedding rows and model
    file, the catalog's measurements and released precisions, the step model's closed forms). The
    Pyodide snapshot is made after this call (:func:`descent.site.runtime.make_snapshot`), so a
    reader's worker starts with all of it in memory: a first change reads no file.
    Returns the names of the widgets run.
    """
    from descent import params, weights
    from descent.widgets import _explain  # noqa: F401  (a reader's first derivation)

    # The catalog's one file no widget reads at its defaults: "as released" weights (a select's option).
    weights.released_map(params.MODEL.default)
    done = []
    for name in names():
        if name not in NOT_WARMED:
            run(name, {})
            done.append(name)
    return done


_DECLARED = re.compile(r'@widget\(\s*"([a-z0-9_]+)"')


def _module_declaring(name: str) -> str | None:
    """The widget module whose source declares ``name`` (``@widget("name", ...)``), found by reading
    the sources, not importing them: the browser's worker imports only the module it needs first
    (importing all of them was over a second of its cold start)."""
    here = Path(__file__).parent
    for mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        if mod == "views" or mod.startswith("_"):
            continue
        try:
            text = (here / f"{mod}.py").read_text(encoding="utf-8")
        except OSError:
            return None
        if name in _DECLARED.findall(text):
            return mod
    return None


def get(name: str) -> Widget:
    """The widget called ``name`` (its module is imported when first asked for).

    Raises:
        FieldError: (field ``None``) no such widget; the message lists the known names.
    """
    if isinstance(name, str) and name not in REGISTRY and not _loaded:
        mod = _module_declaring(name)
        if mod is not None:
            importlib.import_module(f"{__name__}.{mod}")
    if name not in REGISTRY if isinstance(name, str) else True:
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


def allowed_values(w: Widget, values: Mapping[str, Any]) -> dict[str, list[Any]]:
    """For each linear slider that takes part in a :class:`Constraint`: the positions the other
    inputs' current ``values`` allow, in order (the slider steps through these only).

    Sliders with more than :data:`MAX_SLIDER_POSITIONS` positions, log sliders and other controls
    are left out (they keep their plain range).
    """
    out: dict[str, list[Any]] = {}
    for inp in w.inputs:
        rules = [c for c in w.constraints if inp.name in c.inputs]
        if not rules:
            continue
        positions = inp.positions()
        if positions is None:
            continue
        trial = dict(values)
        ok = []
        for x in positions:
            trial[inp.name] = x
            if all(c.holds(trial) for c in rules):
                ok.append(x)
        out[inp.name] = ok
    return out


def _nearest(w: Widget, values: Mapping[str, Any], name: str) -> str:
    """" Nearest allowed: 8 or 12." for a slider or number box, else ""."""
    inp = w._by_name[name]
    rules = [c for c in w.constraints if name in c.inputs]
    positions = inp.positions() if inp.kind == "range" else None
    if positions is None and inp.kind == "number" and inp.integer and (inp.max - inp.min) / inp.step < MAX_SLIDER_POSITIONS:
        positions = list(range(inp.min, inp.max + 1, inp.step))
    if positions is None:
        return ""
    trial, ok = dict(values), []
    for x in positions:
        trial[name] = x
        if all(c.holds(trial) for c in rules):
            ok.append(x)
    if not ok:
        return " No value of it works with the other inputs as they are: change one of them first."
    here = values[name]
    below = [x for x in ok if x < here][-1:]
    above = [x for x in ok if x > here][:1]
    shown = [_views.fmt(x) for x in below + above][:NEAREST_SHOWN]
    return f" Nearest allowed: {' or '.join(shown)}." if shown else ""


def check_constraints(w: Widget, values: Mapping[str, Any], touched: str | None = None) -> None:
    """Raise for the first broken :class:`Constraint` of ``w``, under the input the reader
    ``touched`` when the rule involves it (else under the rule's last input: list the input a
    reader is likelier to set wrong last, as in ``("model", "k")``).

    Raises:
        FieldError: naming the blamed input, with that input's message and its nearest allowed values.
    """
    for c in w.constraints:
        if c.holds(values):
            continue
        blame = touched if touched in c.inputs else c.inputs[-1]
        msg = c.message(blame, values)
        inp = w.input(blame)
        if inp.label not in msg and inp.name not in msg:
            # The rule's words are about another input ("... so ep must be 1"): say which field the
            # message stands under, the one the reader changed.
            msg = f"{inp.label}: {msg}"
        raise FieldError(blame, msg + _nearest(w, values, blame))


def _cut_notes(w: Widget, raw: Mapping[str, Any]) -> list[dict]:
    """A warning note for each ``cut`` text input whose raw text was longer than it takes."""
    return [_views.note(n, "warn") for n in (w._by_name[k].cut_note(v) for k, v in raw.items()) if n]


def _compute(w: Widget, values: dict[str, Any], live: engine.Answers | None = None) -> list[dict]:
    return w.compute(**values, live=live) if w.live else w.compute(**values)


def _compute_html(w: Widget, values: dict[str, Any], notes: list[dict] | None = None,
                  live: engine.Answers | None = None) -> str:
    result = _compute(w, values, live)
    return _views.render_all([*(notes or []), *result])


def run(name: str, inputs: Mapping[str, Any] | None = None, touched: str | None = None,
        answers: Any = None) -> dict[str, Any]:
    """Validate ``inputs``, run widget ``name`` and render its output region.

    ``touched`` names the input the reader just changed: a broken :class:`Constraint` involving it
    is reported under it (the reader moved d_model, so the message is about d_model).

    ``answers``: for a ``live`` widget while the model is loaded in the reader's browser, what its
    engine has answered so far (``[{"request", "answer"}]``, :class:`descent.engine.Answers`);
    ``None`` (the model is not loaded) shows the build's traces. Other widgets ignore it. A live
    widget's HTML comes with ``"engine": "trace" | "browser"``; when it needs the engine to compute
    ``request`` first, the result is ``{"ok": True, "need": request}`` (a malformed answer is an
    ``ok: False`` like bad input).

    Returns ``{"ok": True, "html": str}`` or ``{"ok": False, "field": str | None, "message": str}``,
    plus ``"allowed"`` for a widget with constrained sliders: each such slider's values allowed
    now (:func:`allowed_values`; absent when the inputs did not parse). Never raises for bad
    input: an unknown widget, an unknown input, a bad value, a broken constraint, or a
    :class:`FieldError`/``ValueError`` raised by the compute function all come back as
    ``ok: False`` (``field`` is ``None`` when no single input is to blame). Any other exception
    is a bug: it comes back as ``ok: False`` with a plain sentence naming the widget
    (:func:`internal_message`, never an exception class) and ``"internal": True``.
    """
    extra: dict[str, Any] = {}
    try:
        w = get(name)
        raw = inputs if inputs is not None else {}
        values = coerce(w, raw)
        allowed = allowed_values(w, values)
        if allowed:
            extra["allowed"] = allowed
        check_constraints(w, values, touched if isinstance(touched, str) else None)
        live = engine.Answers(answers) if (w.live and answers is not None) else None
        try:
            html_ = _compute_html(w, values, _cut_notes(w, raw), live)
        except engine.EngineNeeded as need:
            return {"ok": True, "need": need.request}
        if w.live:
            extra["engine"] = "trace" if live is None else "browser"
        return {"ok": True, "html": html_, **extra}
    except FieldError as exc:
        return {"ok": False, "field": exc.field, "message": exc.message, **extra}
    except ValueError as exc:
        return {"ok": False, "field": None, "message": str(exc), **extra}
    except Exception:  # noqa: BLE001 - a bug: the reader gets a sentence, the console the traceback
        traceback.print_exc(file=sys.stderr)
        return {"ok": False, "field": None, "message": internal_message(name, touched), "internal": True, **extra}


def internal_message(name: Any, touched: Any = None) -> str:
    """The sentence a reader sees when a widget's calculation failed for a reason of ours, not of
    their input (an unexpected exception in the compute function): it names the widget (and the
    input just changed), never an exception's class. :func:`run` marks such a result
    ``"internal": True`` so that tests can tell a bug from a refused input."""
    w = REGISTRY.get(name) if isinstance(name, str) else None
    title = w.title if w is not None else "This calculator"
    moved = ""
    if w is not None and isinstance(touched, str) and touched in w._by_name:
        moved = f" after {w.input(touched).label} changed"
    return (f"{title}: an internal problem in this page stopped the calculation{moved}; this is a fault "
            f"of the site, not of your input. Try another value, or reload the page.")


def explain_json(name: str, inputs_json: str, quantity: str, table_json: str) -> str:
    """The derivation of the number labelled ``quantity`` in widget ``name`` at these inputs, as
    JSON (:func:`descent.widgets._explain.explain`; ``table_json``: the build's formula table):
    the worker's entry point when the reader opens a widget's number. Inputs that do not parse get
    ``{"ok": false, "message"}``, like :func:`run`."""
    from descent.widgets import _explain

    try:
        w = get(name)
        values = coerce(w, json.loads(inputs_json))
        return json.dumps(_explain.explain(name, values, quantity, json.loads(table_json)))
    except FieldError as exc:
        return json.dumps({"ok": False, "message": exc.message})
    except ValueError as exc:
        return json.dumps({"ok": False, "message": str(exc)})
    except Exception:  # noqa: BLE001 - a bug: the reader gets a sentence, the console the traceback
        traceback.print_exc(file=sys.stderr)
        return json.dumps({"ok": False, "message": internal_message(name)})


def run_json(name: str, inputs_json: str, touched: str | None = None, answers_json: str | None = None) -> str:
    """:func:`run` with JSON in and out: the worker's entry point (no proxies cross the boundary).
    ``touched``: the input the reader changed, or None/"" when none. ``answers_json``: the
    in-browser engine's answers as JSON text, or None while the model is not loaded."""
    try:
        inputs = json.loads(inputs_json)
        answers = None if answers_json is None else json.loads(answers_json)
    except (TypeError, ValueError) as exc:
        return json.dumps({"ok": False, "field": None, "message": f"inputs are not valid JSON: {exc}"})
    return json.dumps(run(name, inputs, touched or None, answers))


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


#: A text box for a longer text (a pasted config.json) gets this many rows; a short one, two.
LONG_TEXT_CHARS, LONG_TEXT_ROWS = 1000, 12


def _render_input(inp: Input, value: Any, prefix: str, values: Mapping[str, Any] | None = None,
                  limit: Mapping[str, float] | None = None, allowed: list[Any] | None = None) -> str:
    fid = f"{prefix}-{inp.name}"
    lo, hi = (limit or {}).get("min", inp.min), (limit or {}).get("max", inp.max)
    help_id, err_id = f"{fid}-help", f"{fid}-error"
    described = f"{help_id} {err_id}" if inp.help else err_id
    unit = f' <span class="descent-field__unit">({_attr(inp.unit)})</span>' if inp.unit else ""
    help_html = f'<p class="descent-field__help" id="{help_id}">{_attr(inp.help)}</p>' if inp.help else ""
    err_html = f'<p class="descent-field__error" id="{err_id}" aria-live="polite"></p>'
    k = inp.kind
    when = ""
    if inp.when is not None:
        other, shown = inp.when[0], inp.when_values
        hidden = values is not None and _form_value(values.get(other)) not in shown
        when = (f' data-when-field="{_attr(other)}" data-when-values=\'{_attr(json.dumps(list(shown)))}\''
                + (" hidden" if hidden else ""))
    head = f'<div class="descent-field descent-field--{k}" data-field="{_attr(inp.name)}" data-kind="{k}"{when}>'
    if k in ("range", "number"):
        num = (
            f'<input type="number" class="descent-field__number" id="{fid}" name="{_attr(inp.name)}" '
            f'min="{_form_value(lo)}" max="{_form_value(hi)}" step="{_form_value(inp.step)}" '
            f'value="{_attr(_form_value(value))}" inputmode="{"numeric" if inp.integer else "decimal"}" '
            f'aria-describedby="{described}">'
        )
        label = f'<label for="{fid}">{_attr(inp.label)}{unit}</label>'
        if k == "number":
            control = num
        else:
            if inp.log:
                llo, lhi, pos = math.log10(lo), math.log10(hi), math.log10(value)
                rng = (
                    f'<input type="range" class="descent-field__range" id="{fid}-range" data-log="1" '
                    f'min="{llo!r}" max="{lhi!r}" step="{LOG_SLIDER_STEP_DECADES!r}" value="{pos!r}" '
                    f'aria-label="{_attr(inp.label)} (log-scale slider)" aria-valuetext="{_attr(_form_value(value))}'
                    f'{" " + _attr(inp.unit) if inp.unit else ""}">'
                )
            elif allowed is not None:
                # Steps through the allowed values only: position i is allowed[i] (widgets.js maps it).
                pos = min(range(len(allowed)), key=lambda i: abs(allowed[i] - value)) if allowed else 0
                rng = (
                    f'<input type="range" class="descent-field__range" id="{fid}-range" '
                    f'min="0" max="{max(len(allowed) - 1, 0)}" step="1" value="{pos}" '
                    f"data-values='{_attr(json.dumps(allowed))}' "
                    f'aria-label="{_attr(inp.label)} (slider, allowed values only)" '
                    f'aria-valuetext="{_attr(_form_value(value))}{" " + _attr(inp.unit) if inp.unit else ""}">'
                )
            else:
                rng = (
                    f'<input type="range" class="descent-field__range" id="{fid}-range" '
                    f'min="{_form_value(lo)}" max="{_form_value(hi)}" step="{_form_value(inp.step)}" '
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
    # text: no maxlength, ever (issue 24): the browser would cut a long paste without a word. A
    # longer text reaches Python, which says what the limit is (or, with cut=, what it left out).
    return (
        f'{head}<label for="{fid}">{_attr(inp.label)}</label>'
        f'<textarea id="{fid}" name="{_attr(inp.name)}" '
        f'rows="{LONG_TEXT_ROWS if inp.max_length > LONG_TEXT_CHARS else 2}" '
        + (f'placeholder="{_attr(inp.placeholder)}" ' if inp.placeholder else "")
        + f'spellcheck="false" aria-describedby="{described}">{_attr(value)}</textarea>'
        f"{help_html}{err_html}</div>"
    )


def render_form(w: Widget, values: Mapping[str, Any], prefix: str,
                limits: Mapping[str, Mapping[str, float]] | None = None) -> str:
    """The ``<form>`` of labelled controls for ``w``, filled with ``values`` (already coerced);
    ``limits`` (from the result's ``limits`` views) narrow number controls' ends; a slider in a
    :class:`Constraint` steps through its allowed values (:func:`allowed_values`)."""
    limits = limits or {}
    allowed = allowed_values(w, values)
    fields = "".join(
        _render_input(i, values[i.name], prefix, values, limits.get(i.name), allowed.get(i.name)) for i in w.inputs
    )
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
        check_constraints(w, values)
        result = _compute(w, values)
        out = _views.render_all([*_cut_notes(w, args), *result])
    except FieldError as exc:
        raise ValueError(f"descent:widget {name}: {exc.message}") from None
    prefix = _prefix(name, args, instance)
    desc = f'<p class="descent-widget__desc">{_attr(w.description)}</p>' if w.description else ""
    engine_attr = ' data-engine="trace"' if w.live else ""
    return (
        f'<div class="descent-widget" data-widget="{_attr(name)}" data-state="static"{engine_attr} id="{prefix}">'
        f'<div class="descent-widget__title" role="heading" aria-level="3">{_attr(w.title)}</div>'
        f"{desc}{render_form(w, values, prefix, _views.limits_of(result))}"
        f'<p class="descent-widget__status" role="status" data-ready="{_attr(READY_STATUS_ARGS if args else READY_STATUS)}">'
        f"{_attr(STATIC_STATUS_ARGS if args else STATIC_STATUS)}</p>"
        f'<div class="descent-widget__output" aria-live="polite" aria-label="{_attr(w.title)}: results">'
        f"{out}</div>{render_tries(w, prefix)}</div>"
    )


def render_tries(w: Widget, prefix: str) -> str:
    """The widget's "Try this" list: each item the thing to do, then what to notice ("" if none).
    A try that is an input change gets a "Try it" button (``data-try``: the inputs it sets, as the
    form shows them); widgets.js puts the form back to the values it was drawn with, sets those
    inputs and recomputes. The button is ``hidden`` until widgets.js makes the widget live (without
    JavaScript, or from ``file://``, nothing could apply it)."""
    if not w.tries:
        return ""
    items = []
    for (a, b), d in zip(w.tries, w.try_inputs, strict=True):
        button = ""
        if d:
            sets = json.dumps({k: _form_value(w.input(k).coerce(x)) for k, x in d.items()})
            button = (f' <button type="button" class="descent-widget__try-it" data-try="{_attr(sets)}" hidden '
                      f'aria-label="Try it: {_attr(a)}">Try it</button>')
        items.append(f'<li><span class="descent-widget__try">{_attr(a)}</span> {_attr(b)}{button}</li>')
    return (
        f'<div class="descent-widget__tries" role="group" aria-labelledby="{prefix}-tries">'
        f'<p class="descent-widget__tries-title" id="{prefix}-tries">Try this</p><ul>{"".join(items)}</ul></div>'
    )
