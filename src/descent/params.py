"""Parameters: every input the site takes, declared once, with its one validator.

A *parameter* is one input a reader or a contributor can set: the model, the accelerator, the
weight precision, the context in tokens, the batch in sequences, a temperature, a price per
GPU-hour. Each is declared here (or, for an input only one widget has, next to that widget) as a
:class:`Param`: its type, unit, range, default, label, help text and its validation. Everything
else is generated from that one declaration:

* a page shortcode's arguments (:class:`descent.site.shortcodes.Arg` wraps a ``Param``);
* a widget's inputs (:class:`descent.widgets.Input` wraps a ``Param`` and picks a control);
* a command-line flag (:func:`add_argument` builds the ``argparse`` option from a ``Param``).

So a limit or a default changes in one place, and a message names the input the same way
everywhere ("Context must be 1 to 20,000,000 tokens, got 0").

Two ways in:

* :meth:`Param.parse` takes what a person typed (a form string, a JSON value, a shortcode's
  ``key=value`` text, a CLI argument: ``"8,192"``, ``"128k"``, ``"true"``) and returns the typed
  value, or raises :class:`ParamError`;
* :meth:`Param.check` takes a value a program passed (a core function's argument) and returns
  it unchanged if it is already of the right type and in range, or raises :class:`ParamError`.
  It never converts: ``check("8192")`` is an error, not 8192.

A narrower use of a parameter (a widget that offers three of the KV precisions, a calculator
whose default is another model) is :meth:`Param.but`, which makes a *derived* parameter that
remembers its base; :func:`check_derived` verifies a derivation only narrows the base (a subset of
its choices, a range inside its range). Every declared parameter is in :data:`REGISTRY`.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from descent.checks import is_finite, is_int, is_real
from descent.units import format_int, format_limit, parse_count

__all__ = [
    "ParamError",
    "Param",
    "REGISTRY",
    "REQUIRED",
    "TYPES",
    "add_argument",
    "check_derived",
    "declare",
    "get",
]

#: Value types a parameter can have.
TYPES = ("int", "float", "choice", "bool", "text")

#: Longest text any parameter may accept, characters (keeps a browser worker call bounded; a
#: pasted config.json is the longest text input, descent.hfconfig.MAX_CONFIG_CHARS).
TEXT_MAX_LENGTH_LIMIT = 50_000

_TRUE = frozenset({"true", "1", "on", "yes"})
_FALSE = frozenset({"false", "0", "off", "no", ""})


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: The default of a parameter that has none: a shortcode must give it; a widget must derive a
#: default with :meth:`Param.but`; a CLI flag becomes required.
REQUIRED: Any = _Required()


class ParamError(ValueError):
    """A value for a parameter is not allowed.

    ``field`` is the parameter's name (``None`` when the error is not about one input, e.g. an
    unknown widget); ``message`` is a sentence the reader can act on, naming the parameter by its
    label and saying what is allowed ("Context must be 1 to 20,000,000 tokens, got -3").
    """

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


Options = Sequence[tuple[Any, str]]


@dataclass(frozen=True)
class Param:
    """One input, declared once.

    Args:
        name: the keyword a function receives, the shortcode key and (with ``-`` for ``_``) the CLI
            flag: a Python identifier.
        label: what a reader sees ("Context"); messages name the parameter by it.
        type: one of :data:`TYPES`.
        default: the value when none is given (validated at declaration), or :data:`REQUIRED`.
        unit: shown after numbers and in range messages ("tokens"); may be empty.
        help: one short sentence: what it is (under a widget control, in ``--help``, on the
            contributing page).
        min, max: inclusive bounds of an ``int``/``float`` parameter.
        step: the smallest meaningful change of a number (a slider's step); 1 for ``int``.
        choices: for ``choice``: ``[(value, label), ...]``, or a zero-argument callable returning
            them (catalog ids are read when first needed). Values are ``str`` or ``int`` and are
            compared by their string form (forms and shortcodes send strings).
        max_length: for ``text``: longest allowed value, characters.
        key: the name in :data:`REGISTRY` when two parameters share a keyword (``"trace_prompt"``
            vs ``"prompt"``); defaults to ``name``.
        short: CLI short flags (``("-c",)``).
        base: the parameter this one narrows (set by :meth:`but`); ``None`` for a declaration.

    Raises:
        ValueError: the declaration is inconsistent (unknown type, ``min >= max``, an invalid
            default, ...). This happens at import, so a broken declaration fails the build.
    """

    name: str
    label: str
    type: str
    default: Any = REQUIRED
    unit: str = ""
    help: str = ""
    min: float | int | None = None
    max: float | int | None = None
    step: float | int | None = None
    choices: Options | Callable[[], Options] | None = None
    max_length: int | None = None
    key: str = ""
    short: tuple[str, ...] = ()
    base: Param | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"parameter name must be a Python identifier, got {self.name!r}")
        if self.type not in TYPES:
            raise ValueError(f"parameter {self.name!r}: type must be one of {', '.join(TYPES)}, got {self.type!r}")
        if not self.key:
            object.__setattr__(self, "key", self.name)
        if self.type in ("int", "float"):
            if self.type == "int" and self.step is None:
                object.__setattr__(self, "step", 1)
            for attr in ("min", "max"):
                if not is_finite(getattr(self, attr)):
                    raise ValueError(f"parameter {self.name!r}: {attr} must be a finite number, "
                                     f"got {getattr(self, attr)!r}")
            if self.type == "int" and not (is_int(self.min) and is_int(self.max) and is_int(self.step)):
                raise ValueError(f"parameter {self.name!r}: an int parameter needs int min, max and step")
            if not self.min < self.max:
                raise ValueError(f"parameter {self.name!r}: min must be below max, got {self.min} and {self.max}")
            if self.step is not None and not (is_finite(self.step) and self.step > 0):
                raise ValueError(f"parameter {self.name!r}: step must be a number > 0, got {self.step!r}")
        if self.type == "choice" and self.choices is None:
            raise ValueError(f"parameter {self.name!r}: a choice needs choices [(value, label), ...]")
        if self.type == "choice" and not callable(self.choices):
            object.__setattr__(self, "choices", _normalise(self.name, self.choices))
        if self.type == "text" and not (is_int(self.max_length) and 1 <= self.max_length <= TEXT_MAX_LENGTH_LIMIT):
            raise ValueError(f"parameter {self.name!r}: max_length must be 1 to {format_int(TEXT_MAX_LENGTH_LIMIT)}, "
                             f"got {self.max_length!r}")
        if self.default is not REQUIRED and not callable(self.choices):
            # A catalog-backed choice checks its default when its options are first read.
            object.__setattr__(self, "default", self._checked_default())

    def _checked_default(self) -> Any:
        try:
            return self.parse(self.default)
        except ParamError as exc:
            raise ValueError(f"parameter {self.name!r}: invalid default: {exc.message}") from None

    # -- what is allowed ------------------------------------------------------------------------

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def options(self) -> list[tuple[Any, str]]:
        """``[(value, label), ...]`` of a ``choice`` parameter (catalog-backed ones read now)."""
        if self.type != "choice":
            raise ValueError(f"parameter {self.name!r} is a {self.type}, not a choice")
        got = self.choices() if callable(self.choices) else self.choices
        if isinstance(got, tuple):  # the same choices again (a check per scenario field): checked once
            try:
                return _normalised(self.name, got)
            except TypeError:  # an unhashable item: _normalise says what is wrong
                pass
        return _normalise(self.name, got)

    def values(self) -> list[str]:
        """The allowed values of a ``choice``, as strings."""
        return [str(v) for v, _ in self.options()]

    def allowed(self) -> str:
        """What is allowed, in words: "one of: a, b", "1 to 20,000,000 tokens", "on or off"."""
        if self.type == "choice":
            return "one of: " + ", ".join(self.values())
        if self.type in ("int", "float"):
            unit = f" {self.unit}" if self.unit else ""
            kind = "a whole number" if self.type == "int" else "a number"
            return f"{kind} from {format_limit(self.min)} to {format_limit(self.max)}{unit}"
        if self.type == "bool":
            return "on or off (true or false)"
        return f"text of at most {format_int(self.max_length)} characters"

    def _range_message(self, got: str) -> str:
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.label} must be {format_limit(self.min)} to {format_limit(self.max)}{unit}, got {got}"

    # -- validation -----------------------------------------------------------------------------

    def parse(self, raw: Any) -> Any:
        """Validate and convert what a person typed or a form/JSON/shortcode/CLI sent.

        Numbers accept ``"8,192"``, ``"8_192"``, ``"1e3"`` and (for ``int``) ``"128k"``/``"1M"``;
        booleans accept true/false, on/off, yes/no, 1/0; a choice accepts a value or its string.

        Returns the typed value (``int``, ``float``, ``bool``, ``str``, or the choice's declared
        value).

        Raises:
            ParamError: naming this parameter, with what is allowed.
        """
        t = self.type
        if t in ("int", "float"):
            return self._parse_number(raw)
        if t == "choice":
            key = raw if isinstance(raw, str) else (str(raw) if is_int(raw) else None)
            options = self.options()
            for value, _lbl in options:
                if key is not None and str(value) == key:
                    return value
            if key is not None:  # ids are case-insensitive: "H200" is h200
                folded = [v for v, _ in options if str(v).casefold() == key.strip().casefold()]
                if len(folded) == 1:
                    return folded[0]
            hint = ""
            if key is not None:
                import difflib

                close = difflib.get_close_matches(key.strip().lower(), self.values(), n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ParamError(self.name, f"{self.label} must be one of: {', '.join(self.values())}; "
                             f"got {_show(raw)}{hint}")
        if t == "bool":
            if isinstance(raw, bool):
                return raw
            if isinstance(raw, str) and raw.strip().lower() in _TRUE:
                return True
            if isinstance(raw, str) and raw.strip().lower() in _FALSE:
                return False
            raise ParamError(self.name, f"{self.label} must be on or off (true or false), got {_show(raw)}")
        return self._check_text(raw)

    def check(self, value: Any) -> Any:
        """Validate a value a program passed, without converting it: the core's argument check.

        Returns ``value`` (an ``int`` given to a ``float`` parameter comes back as ``float``).

        Raises:
            ParamError: wrong type (``"8192"`` or ``True`` for an int), out of range, not a choice.
        """
        t = self.type
        if t == "int":
            if not is_int(value):
                raise ParamError(self.name, f"{self.label} must be a whole number from {format_limit(self.min)} to "
                                 f"{format_limit(self.max)}{' ' + self.unit if self.unit else ''}, got {_show(value)}")
            if not self.min <= value <= self.max:
                raise ParamError(self.name, self._range_message(_show(value)))
            return value
        if t == "float":
            if not is_real(value) or not math.isfinite(value):
                raise ParamError(self.name, f"{self.label} must be a number from {format_limit(self.min)} to "
                                 f"{format_limit(self.max)}{' ' + self.unit if self.unit else ''}, got {_show(value)}")
            if not self.min <= value <= self.max:
                raise ParamError(self.name, self._range_message(format_limit(value)))
            return float(value)
        if t == "bool":
            if not isinstance(value, bool):
                raise ParamError(self.name, f"{self.label} must be True or False, got {_show(value)}")
            return value
        if t == "choice":
            for v, _lbl in self.options():
                if type(v) is type(value) and v == value:
                    return value
            raise ParamError(self.name, f"{self.label} must be one of: {', '.join(self.values())}; got {_show(value)}")
        return self._check_text(value)

    def _check_text(self, raw: Any) -> str:
        if not isinstance(raw, str):
            raise ParamError(self.name, f"{self.label} must be text, got {_show(raw)}")
        if len(raw) > self.max_length:
            raise ParamError(self.name, f"{self.label} must be at most {format_int(self.max_length)} characters, "
                             f"got {format_int(len(raw))}")
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate, e.g. half of a pasted emoji
            raise ParamError(
                self.name, f"{self.label} must be valid Unicode text; character {exc.start + 1} is half of a pair"
            ) from None
        return raw

    def _parse_number(self, raw: Any) -> int | float:
        if isinstance(raw, bool):
            raise ParamError(self.name, f"{self.label} must be a number, got {_show(raw)}")
        if is_real(raw):
            x = raw
        elif isinstance(raw, str):
            text = raw.strip().replace(",", "").replace("_", "")
            if not text:
                raise ParamError(self.name, f"{self.label} is empty: enter a number from "
                                 f"{format_limit(self.min)} to {format_limit(self.max)}")
            digits = text.lstrip("+-").lstrip("0")
            if self.type == "int" and digits.isdigit() and len(digits) > len(str(max(-self.min, self.max))):
                # More digits than either bound: out of range, and int() refuses strings over
                # 4,300 digits (sys.get_int_max_str_digits), which must not reach the reader.
                raise ParamError(self.name, self._range_message(_show(raw)))
            try:
                x = int(text) if self.type == "int" and text.lstrip("+-").isdigit() else float(text)
            except ValueError:
                try:
                    x = parse_count(text) if self.type == "int" else None
                except ValueError:
                    x = None
                if x is None:
                    raise ParamError(self.name, f"{self.label} must be a number, got {_show(raw)}") from None
        else:
            raise ParamError(self.name, f"{self.label} must be a number, got {_show(raw)}")
        if is_int(x):
            # Python ints are unbounded (JSON may send 10**400): check the range before any float().
            if not self.min <= x <= self.max:
                raise ParamError(self.name, self._range_message(format_limit(x) if abs(x) < 10**15 else _show(x)))
        elif not math.isfinite(x):
            # NaN or infinity (a number box that cannot parse "1e400" reports NaN): repeating the
            # value back would show the reader a "NaN" they never typed.
            unit = f" {self.unit}" if self.unit else ""
            raise ParamError(self.name, f"{self.label} must be a number from {format_limit(self.min)} to "
                             f"{format_limit(self.max)}{unit}")
        if self.type == "int":
            if x != int(x):
                raise ParamError(self.name, f"{self.label} must be a whole number, got {_show(raw)}")
            x = int(x)
        else:
            x = float(x)
        if not self.min <= x <= self.max:
            raise ParamError(self.name, self._range_message(format_limit(x)))
        return x

    # -- derivation -----------------------------------------------------------------------------

    def but(self, **changes: Any) -> Param:
        """A derived parameter: this one with some fields changed (a narrower range, a subset of
        the choices, another default, label or help). It remembers its base, so tools can check
        it resolves to the one declaration (:func:`check_derived`). The name and type stay.

        Raises:
            ValueError: a change of ``name``, ``type`` or ``key``, or an invalid result.
        """
        for fixed in ("name", "type", "key", "base"):
            if fixed in changes:
                raise ValueError(f"parameter {self.name!r}: a derived parameter keeps its {fixed}")
        root = self.root
        return replace(self, base=root, **changes)

    @property
    def root(self) -> Param:
        """The declared parameter this one derives from (itself when it is a declaration)."""
        return self.base if self.base is not None else self


def _normalise(name: str, got: Iterable[Any]) -> tuple[tuple[Any, str], ...]:
    out = []
    for item in got:
        value, label = item if isinstance(item, tuple) else (item, str(item))
        if not (isinstance(value, str) or is_int(value)):
            raise ValueError(f"parameter {name!r}: a choice value must be str or int, got {value!r}")
        out.append((value, str(label)))
    keys = [str(v) for v, _ in out]
    if not keys or len(set(keys)) != len(keys):
        raise ValueError(f"parameter {name!r}: choices must be non-empty and unique, got {keys}")
    return tuple(out)


@functools.lru_cache(maxsize=256)
def _normalised(name: str, got: tuple) -> tuple[tuple[Any, str], ...]:
    """:func:`_normalise`, remembered for a tuple of choices (a catalog's, asked for at every check)."""
    return _normalise(name, got)


def _show(raw: Any) -> str:
    """A short, safe rendering of a bad value for a message."""
    import json

    if isinstance(raw, str):
        text = repr(raw)
    elif isinstance(raw, float) and not math.isfinite(raw):
        text = str(raw)
    else:
        try:
            text = json.dumps(raw, allow_nan=True)
        except (TypeError, ValueError):
            text = type(raw).__name__
    return text if len(text) <= 40 else text[:37] + "..."


# ---------------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------------

#: Every declared parameter, by key.
REGISTRY: dict[str, Param] = {}


def declare(param: Param) -> Param:
    """Register a declaration and return it (``CONTEXT = declare(Param(...))``).

    Raises:
        ValueError: another parameter already has this key, or ``param`` is derived.
    """
    if param.base is not None:
        raise ValueError(f"parameter {param.key!r}: declare the base, not a derived parameter")
    old = REGISTRY.get(param.key)
    if old is not None and old is not param:
        raise ValueError(f"parameter {param.key!r} is declared twice")
    REGISTRY[param.key] = param
    return param


def get(key: str) -> Param:
    """The declared parameter ``key``. Raises ValueError listing the known keys."""
    try:
        return REGISTRY[key]
    except KeyError:
        raise ValueError(f"unknown parameter {key!r}; known: {', '.join(sorted(REGISTRY))}") from None


def check_derived(p: Param) -> None:
    """Check that ``p`` is a declaration in :data:`REGISTRY` or narrows one.

    Narrowing: same name and type; a range inside the base's range; a subset of its choices; a
    text limit no longer than its limit; a default the base also accepts.

    Raises:
        ValueError: naming what does not resolve or does not narrow.
    """
    root = p.root
    if REGISTRY.get(root.key) is not root:
        raise ValueError(f"parameter {p.name!r} does not resolve to a declared parameter "
                         f"(key {root.key!r} is not in descent.params.REGISTRY)")
    if p is root:
        return
    if (p.name, p.type) != (root.name, root.type):
        raise ValueError(f"parameter {p.name!r}: a derived parameter changed its name or type")
    if p.type in ("int", "float") and not (root.min <= p.min and p.max <= root.max):
        raise ValueError(f"parameter {p.name!r}: range {p.min}..{p.max} is outside its declaration's "
                         f"{root.min}..{root.max}")
    if p.type == "choice" and not set(p.values()) <= set(root.values()):
        raise ValueError(f"parameter {p.name!r}: choices {sorted(set(p.values()) - set(root.values()))} "
                         f"are not in its declaration")
    if p.type == "text" and p.max_length > root.max_length:
        raise ValueError(f"parameter {p.name!r}: max_length {p.max_length} exceeds its declaration's")
    if not p.required:
        root.parse(p.default)


# ---------------------------------------------------------------------------------------------
# Command-line flags
# ---------------------------------------------------------------------------------------------


def add_argument(parser: Any, p: Param, *, positional: bool = False, metavar: str | None = None) -> Any:
    """Add ``p`` to an ``argparse`` parser as ``--name`` (or a positional) and return the action.

    The flag's type is :meth:`Param.parse`, so the CLI accepts and rejects exactly what a widget
    does, with the same message; its help is the parameter's help plus what is allowed and the
    default. A ``bool`` parameter becomes a ``store_true`` switch (its default must be False).
    The action carries ``action.param = p`` so tests can walk every flag back to its declaration.
    """
    import argparse

    def typed(raw: str) -> Any:
        try:
            return p.parse(raw)
        except ParamError as exc:
            raise argparse.ArgumentTypeError(exc.message) from None

    typed.__name__ = p.name  # argparse names the type in some messages
    flags = [p.name] if positional else [f"--{p.name.replace('_', '-')}", *p.short]
    if p.type == "bool":
        if positional or p.default is not False:
            raise ValueError(f"parameter {p.name!r}: a CLI switch needs default False")
        action = parser.add_argument(*flags, action="store_true", help=p.help)
    else:
        allowed = p.allowed() if p.type != "choice" or not callable(p.choices) or len(p.values()) < 30 else ""
        help_ = p.help.rstrip(".").replace("%", "%%") + (f" ({allowed})" if allowed else "").replace("%", "%%")
        if not p.required:
            help_ += f"; default {p.default}"
        kwargs: dict[str, Any] = {"type": typed, "help": help_}
        if metavar:
            kwargs["metavar"] = metavar
        if positional:
            if not p.required:
                kwargs.update(nargs="?", default=p.default)
        elif p.required:
            kwargs["required"] = True
        else:
            kwargs["default"] = p.default
        action = parser.add_argument(*flags, **kwargs)
    action.param = p
    return action


# ---------------------------------------------------------------------------------------------
# The shared vocabulary. Defaults follow the site's running example: Llama 3.1 70B on one H200,
# FP8 weights, a BF16 KV cache, 8,192 tokens of context, one sequence.
# ---------------------------------------------------------------------------------------------


#: Choices that belong to a layer above this one (the catalog's ids, numerics' formats): that
#: layer hands them over at its import with :func:`provide`, so this module imports nothing of
#: descent but ``checks`` and ``units`` (it is the leaf; ``descent/__init__`` imports the providers).
_PROVIDERS: dict[str, Callable[[], Options]] = {}


def provide(name: str, choices: Callable[[], Options]) -> None:
    """Hand over the choices of the catalog-backed parameter ``name`` (called by their owner at import)."""
    _PROVIDERS[name] = choices


def provided(name: str) -> Callable[[], Options]:
    """The choices ``name``'s owner provides, read when first needed (see :func:`provide`)."""

    def choices() -> Options:
        try:
            return _PROVIDERS[name]()
        except KeyError:
            raise RuntimeError(f"no layer provided the choices of {name!r}: import descent first") from None

    return choices


MODEL = declare(Param(
    "model", "Model", "choice", "llama-3.1-70b", choices=provided("model"),
    help="Every model of the catalog, shapes from its published config.json.",
))
ACCELERATOR = declare(Param(
    "accelerator", "Accelerator", "choice", "h200", choices=provided("accelerator"), short=("-a",),
    help="One chip; its memory capacity and bandwidth come from the catalog (vendor datasheets).",
))
WEIGHTS = declare(Param(
    "weights", "Weight precision", "choice", "fp8", choices=provided("weights"), short=("-w",),
    help="How each weight is stored: as released, a GGUF mix, or one precision for every weight; "
    "block-scaled formats include their scales.",
))
#: The weight choice of a computation that needs one precision for every weight: "as released"
#: (each group as published) is left out, since its groups differ (descent.hardware, descent.weights).
WEIGHTS_UNIFORM = WEIGHTS.but(choices=lambda: [c for c in WEIGHTS.choices() if c[0] != "released"])
RUNTIME = declare(Param(
    "runtime_percent", "Runtime allowance", "float", 10.0, unit="% of memory", min=0.0, max=50.0, step=1.0,
    help="Memory kept back for the runtime (context, activations, workspace, fragmentation); "
    "10% is 1 minus vLLM's default gpu_memory_utilization of 0.9.",
))
# A chip described by its numbers instead of a catalog id (descent.custom). The defaults are a
# 24 GB consumer card, the RTX 4090 (NVIDIA Ada Lovelace GPU architecture whitepaper, appendix A:
# 24 GB GDDR6X, 1,008 GB/s, 165.2 TFLOPS dense FP16 tensor math with FP32 accumulate). Its "24 GB"
# are 24 GiB (25.8 GB); the default takes the label at its word, the cautious reading.
# Upper limits: guards against typos, above every catalog chip (Cerebras WSE-3: 21,000,000 GB/s
# of on-chip SRAM bandwidth, 125,000 TFLOP/s).
MEMORY_GB = declare(Param(
    "memory_gb", "Memory", "float", 24.0, unit="GB", min=0.01, max=100_000.0, step=1.0,
    help="The chip's memory in GB of 1e9 bytes (a vendor's \"80 GB\" of HBM is often 80 GiB = 85.9 GB).",
))
BANDWIDTH_GBS = declare(Param(
    "bandwidth_gbs", "Memory bandwidth", "float", 1008.0, unit="GB/s", min=1.0, max=100_000_000.0, step=1.0,
    help="How fast the chip reads its memory, GB/s (1e9 bytes per second).",
))
TFLOPS = declare(Param(
    "tflops", "Peak compute", "float", 165.2, unit="TFLOP/s", min=0.001, max=10_000_000.0, step=0.1,
    help="Dense (not 2:4 sparse) peak in TFLOP/s at the precision the weights are multiplied in.",
))
KV = declare(Param(
    "kv", "KV-cache precision", "choice", "bf16", choices=provided("kv"),
    help="How each cached key and value is stored.",
))
CONTEXT = declare(Param(
    "context", "Context", "int", 8192, unit="tokens", min=1, max=20_000_000, short=("-c",),
    help="Tokens each conversation holds in the KV cache: prompt plus answer so far.",
))
BATCH = declare(Param(
    # Upper limit: a guard against typos, well above what serving engines run on one replica
    # (vLLM's max_num_seqs defaults to a few hundred).
    "batch", "Batch", "int", 1, unit="sequences", min=1, max=100_000, short=("-b",),
    help="Conversations decoded together, each with its own KV cache.",
))
TEMPERATURE = declare(Param(
    "temperature", "Temperature", "float", 1.0, min=0.0, max=5.0, step=0.05,
    help="Divides the logits before the softmax: below 1 sharpens the distribution, above 1 flattens it.",
))
TOP_K = declare(Param(
    "top_k", "Top-k", "int", 50, min=1, max=49_152,
    help="Keep only the k most likely tokens before drawing.",
))
TOP_P = declare(Param(
    "top_p", "Top-p", "float", 1.0, min=0.01, max=1.0, step=0.01,
    help="Keep the smallest set of most likely tokens whose probabilities add up to at least p.",
))
SEED = declare(Param(
    "seed", "Seed", "int", 0, min=0, max=2**32 - 1,
    help="Seed of the random draw: the same seed gives the same tokens.",
))
JSON = declare(Param("json", "JSON output", "bool", False, help="print JSON instead of a table"))
CONFIG_PATH = declare(Param(
    "config", "config.json path", "text", "", max_length=4096,
    help="Size the model a Hugging Face config.json describes (a file path) instead of a catalog model.",
))

# Formatting of a number on a page (shortcode arguments).
BYTE_UNIT = declare(Param(
    "unit", "Byte unit", "choice", "auto", key="byte_unit",
    choices=[(u, u) for u in ("auto", "B", "KB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB", "PiB")],
    help="auto picks a decimal prefix (GB = 1e9 bytes); KiB, MiB, GiB are powers of 1024.",
))
COUNT_UNIT = declare(Param(
    "unit", "Count unit", "choice", "auto", key="count_unit",
    choices=[(u, u) for u in ("auto", "exact", "thousand", "million", "billion", "trillion")],
    help="auto picks million, billion or trillion; exact prints every digit.",
))
SIG = declare(Param(
    "sig", "Significant figures", "int", 3, min=1, max=10,
    help="Significant figures of the printed number.",
))

# The shape of a layer stack (Part 1's weight counter, the KV demo, the stack_count shortcode).
LAYERS = declare(Param(
    "layers", "Layers", "int", 32, unit="layers", min=1, max=200,
    help="L: transformer blocks, each with its own attention and feed-forward weights.",
))
D_MODEL = declare(Param(
    "d_model", "Model width d_model", "int", 4096, min=64, max=32768, step=64,
    help="D: the length of the vector each token carries between layers.",
))
HEADS = declare(Param(
    "heads", "Query heads", "int", 32, min=1, max=256,
    help="H: attention heads; each gets d_model / H of the width.",
))
KV_HEADS = declare(Param(
    "kv_heads", "Key/value heads", "int", 8, min=1, max=256,
    help="Equal to the query heads is MHA, 1 is MQA, in between is GQA.",
))
HEAD_DIM = declare(Param(
    "head_dim", "Head dimension", "int", 128, min=1, max=1024,
    help="d_head: width of one query, key or value vector.",
))
FFN = declare(Param(
    "ffn", "FFN width", "int", 14336, min=64, max=131072, step=64,
    help="F: the feed-forward layer's inner width.",
))
GATED = declare(Param(
    "gated", "Gated FFN (SwiGLU: 3 matrices instead of 2)", "bool", True,
    help="A gated FFN (SwiGLU, GeGLU) has three matrices; the classic one has two.",
))

# What a token costs (descent.economics).
PRICE = declare(Param(
    "price", "Price per accelerator-hour", "float", 3.0, unit="USD", min=0.01, max=1000.0, step=0.01,
    help="What one accelerator costs per hour, rented or amortised; $3 is an assumed round figure for "
    "renting one H100- or H200-class GPU on demand, not a quote: put in the price you pay.",
))
PUE = declare(Param(
    "pue", "Data-centre overhead (PUE)", "float", 1.56, min=1.0, max=3.0, step=0.01,
    help="Power usage effectiveness: total facility power over IT power. 1.56 is the industry average "
    "in the Uptime Institute's 2024 survey; Google reports about 1.1 for its own data centres "
    "(google.com/about/datacenters/efficiency).",
))

# Part 4 (hardware): the step of a roofline, tiles and element formats, attention's sequence, and
# how a model is split over chips. Choices that name core constants read them when first needed.


PHASE = declare(Param(
    "phase", "Phase", "choice", "decode", choices=[("decode", "decode"), ("prefill", "prefill")],
    help="decode: each sequence gets one new token; prefill: each reads its whole prompt (context tokens) at once.",
))
TILE = declare(Param(
    "tile", "Tile edge", "choice", 64, choices=[(t, f"{t} x {t}") for t in (16, 32, 64, 128, 256)],
    help="Rows and columns of the output tile one group of cores computes at a time.",
))
ELEMENT = declare(Param(
    "element", "Element format", "choice", "fp16", choices=provided("element"),
    help="Width of each number the tensor cores multiply.",
))
SEQ_LEN = declare(Param(
    "seq_len", "Sequence length", "int", 2048, unit="tokens", min=1, max=10_000_000,
    help="N: tokens whose queries attend to each other (a prompt in prefill).",
))
TP = declare(Param(
    "tp", "Tensor parallel", "int", 1, unit="devices", min=1, max=4096,
    help="Devices that share every weight matrix, each holding a slice of it.",
))
PP = declare(Param(
    "pp", "Pipeline parallel", "int", 1, unit="stages", min=1, max=4096,
    help="Devices that each hold a consecutive range of the layers.",
))
EP = declare(Param(
    "ep", "Expert parallel", "int", 1, unit="devices", min=1, max=4096,
    help="Devices the routed experts of a mixture of experts are spread over (1 for a dense model).",
))
MICROBATCHES = declare(Param(
    "microbatches", "Micro-batches", "int", 1, min=1, max=100_000,
    help="Groups of sequences in flight through the pipeline at once (at most the batch).",
))
LINK = declare(Param(
    "link", "Link", "choice", "nvlink4", choices=provided("link"),
    help="The wire between devices: NVLink inside a server or rack, InfiniBand or PCIe between them.",
))


# ---------------------------------------------------------------------------------------------
# Public measurements beside the step model's ceilings (catalog measurements.toml, descent.predict).
# ---------------------------------------------------------------------------------------------

MEASUREMENT = declare(Param(
    "measurement", "Measurement", "choice", "llamacpp-rtx-4090-llama3-8b-q4km-tg512",
    choices=provided("measurement"),
    help="One published measurement of inference speed (catalog measurements.toml).",
))
MEASURED_GROUP = declare(Param(
    "group", "Measurements", "choice", "all", key="measured_group", choices=provided("measured_group"),
    help="Which measurements a summary takes: all, one engine, one chip class or one bound.",
))


# ---------------------------------------------------------------------------------------------
# Part 3 (serving software): requests and their lengths, the batching simulator, prefix caching,
# paged KV blocks, speculative decoding, the price of a GPU. The core is descent.serving.
# ---------------------------------------------------------------------------------------------

PROMPT_TOKENS = declare(Param(
    "prompt_tokens", "Prompt", "int", 1024, unit="tokens", min=1, max=1_000_000,
    help="Tokens of one request's prompt: system prompt, the conversation so far and the question.",
))
OUTPUT_TOKENS = declare(Param(
    "output_tokens", "Reply", "int", 256, unit="tokens", min=1, max=100_000,
    help="Tokens the model writes for one request.",
))
POLICY = declare(Param(
    "policy", "Batching", "choice", "continuous", choices=[("static", "static"), ("continuous", "continuous")],
    help="static: a batch runs until its longest reply ends; continuous: a free slot is refilled at the next step.",
))
REQUESTS = declare(Param(
    "requests", "Requests", "int", 200, unit="requests", min=1, max=5_000,
    help="Requests in the simulated trace.",
))
ARRIVAL_RATE = declare(Param(
    "rate", "Arrival rate", "float", 4.0, unit="requests/s", min=0.01, max=10_000.0, step=0.01,
    help="Mean requests per second; the gaps between arrivals are random (a Poisson process).",
))
PROMPT_MEAN = declare(Param(
    "prompt_mean", "Mean prompt", "int", 1000, unit="tokens", min=1, max=100_000,
    help="Mean prompt length of the trace; each prompt is drawn around it.",
))
OUTPUT_MEAN = declare(Param(
    "output_mean", "Mean reply", "int", 250, unit="tokens", min=1, max=10_000,
    help="Mean reply length of the trace; each reply is drawn around it.",
))
CHUNK = declare(Param(
    "chunk", "Chunked prefill budget", "int", 0, unit="tokens", min=0, max=65_536,
    help="Most tokens one step may process; long prompts are cut to fit. 0: every prompt in one step.",
))
TTFT_TARGET = declare(Param(
    "ttft_target", "TTFT target", "float", 1.0, unit="s", min=0.001, max=3600.0, step=0.001,
    help="A request meets its target when its first token comes within this time.",
))
ITL_TARGET = declare(Param(
    "itl_target", "ITL target", "float", 0.05, unit="s", min=0.0001, max=60.0, step=0.0001,
    help="... and when its mean gap between tokens stays within this time.",
))
THINKING_TOKENS = declare(Param(
    "thinking_tokens", "Hidden thinking", "int", 2000, unit="tokens", min=0, max=1_000_000,
    help="Tokens a reasoning model writes before the first token the reader sees.",
))
PREFIX_TOKENS = declare(Param(
    "prefix_tokens", "Shared prefix", "int", 2000, unit="tokens", min=0, max=1_000_000,
    help="Tokens at the start of every prompt that are the same (a system prompt, tool definitions).",
))
HIT_RATE = declare(Param(
    "hit_rate", "Hit rate", "float", 0.8, min=0.0, max=1.0, step=0.01,
    help="Share of requests that find their shared prefix still in the cache.",
))
TURNS = declare(Param(
    "turns", "Turns", "int", 10, unit="turns", min=1, max=200,
    help="Question-and-answer rounds in one chat.",
))
BLOCK_SIZE = declare(Param(
    "block_size", "Block size", "int", 16, unit="tokens", min=1, max=1024,
    help="Tokens per KV-cache block (vLLM's default is 16).",
))
ALLOCATOR = declare(Param(
    "allocator", "KV allocator", "choice", "paged", choices=[("contiguous", "contiguous"), ("paged", "paged")],
    help="contiguous: one reserved run per request, room for its longest reply; paged: blocks on demand.",
))
RESERVE_TOKENS = declare(Param(
    "reserve_tokens", "Reply limit (max_tokens)", "int", 512, unit="tokens", min=1, max=100_000,
    help="The longest reply a request allows; a contiguous allocator reserves room for all of it.",
))
SAMPLES = declare(Param(
    "samples", "Parallel samples", "int", 4, unit="samples", min=1, max=256,
    help="Replies drawn from one prompt (n in an API request).",
))
ACCEPTANCE = declare(Param(
    "acceptance", "Acceptance rate", "float", 0.8, min=0.0, max=1.0, step=0.01,
    help="a: the chance that the target model accepts each drafted token.",
))
DRAFT_LENGTH = declare(Param(
    "draft_length", "Draft length", "int", 4, unit="tokens", min=1, max=64,
    help="k: tokens the draft proposes before the target checks them.",
))
DRAFT_COST = declare(Param(
    "draft_cost", "Draft cost", "float", 0.05, min=0.0, max=10.0, step=0.01,
    help="c: the time of one draft step divided by the time of one target step.",
))
GPU_PRICE = declare(Param(
    "gpu_price", "GPU price", "float", 3.0, unit="$ per hour", min=0.01, max=1000.0, step=0.01,
    help="What one accelerator costs per hour, rented or paid off.",
))
API_PRICE = declare(Param(
    "api_price", "API price", "float", 1.0, unit="$ per million tokens", min=0.001, max=1000.0, step=0.001,
    help="What a hosted API charges per million output tokens (the reply).",
))
API_INPUT_PRICE = declare(Param(
    "api_input_price", "API input price", "float", 0.25, unit="$ per million tokens", min=0.0, max=1000.0,
    step=0.001, help="What a hosted API charges per million input tokens (the prompt). An example input: "
    "put in the price you see.",
))
UTILIZATION = declare(Param(
    "utilization", "Utilization", "float", 0.5, min=0.001, max=1.0, step=0.001,
    help="Share of the hours the accelerator spends serving at full load.",
))
