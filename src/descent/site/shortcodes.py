"""Shortcodes: HTML comments in a page's Markdown that the build replaces with computed content.

Grammar (one comment, on one or more lines)::

    <!-- descent:KIND NAME key=value key="value with spaces" ... -->

KIND is one of :data:`KINDS`:

* ``value``: a formatted number with its unit, from a function registered with :func:`value`;
* ``table``: a Markdown table, from a function registered with :func:`table`;
* ``figure``: a ``<figure>`` with light and dark SVGs drawn from ``figures/<NAME>.py``;
* ``formula``: display math from the sympy expression ``descent.formulas.FORMULAS[NAME]``;
* ``widget``: the pre-rendered HTML of ``descent.widgets.render_static(NAME, **args)``.

Values and tables are registered with decorators, each declaring its arguments (:class:`Arg`)::

    @value("model_field", Arg(P.MODEL), Arg(MODEL_FIELD))
    def model_field(model: str, field: str) -> str: ...

Anything wrong -- an unknown kind or name, an unknown, missing, repeated or invalid argument --
raises :class:`ShortcodeError` whose message names the page and the line (``part-3.md:42:``),
quotes the shortcode, says what is wrong and lists what is allowed. The site hook turns it into a
failed build. So does a *near miss*, which would otherwise vanish from the page silently (a comment
is invisible): a mistyped prefix (``<!-- descnet:value ...``, ``<!-- Descent:table ...``, any
``<!-- X:KIND`` with KIND one of :data:`KINDS`), ``descent`` without its colon, any comment whose
first word is within :data:`NEAR_MISS_EDITS` edits of ``descent:KIND`` (``descent_value``,
``desecnt:vaule``, ``desc:figures``), a ``descent:KIND`` outside a comment (``<!--`` missing), and
an unclosed shortcode ("unclosed shortcode opened at line N", never the text up to the next ``-->``).

Shortcodes inside fenced code blocks and inline code spans are left alone, so a page can show one.
This module imports only the standard library; it is build-side only (``descent.site``).
"""

from __future__ import annotations

import contextvars
import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from descent.params import Param, ParamError

__all__ = [
    "KINDS",
    "Arg",
    "Entry",
    "ShortcodeError",
    "current_page",
    "find_shortcodes",
    "link_to",
    "registry",
    "resolve",
    "table",
    "value",
    "value_handler",
]

KINDS = ("value", "table", "figure", "formula", "widget")

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
#: Any HTML comment that starts with ``descent:`` is a shortcode (a malformed one is an error). Its
#: body never holds ``<!--``: an unclosed shortcode must not swallow the text up to the next one's
#: ``-->`` (it is reported as unclosed, :data:`_OPENED`).
_SHORTCODE = re.compile(r"<!--\s*descent:(?P<body>(?:(?!<!--).)*?)-->", re.DOTALL)
#: Where a shortcode opens: one that is not a whole shortcode (:data:`_SHORTCODE`) was never closed.
_OPENED = re.compile(r"<!--\s*descent:")
#: The start of any HTML comment and its first word (up to a space or the comment's end), which
#: :func:`_looks_like_shortcode` compares with ``descent:KIND``.
_COMMENT_HEAD = re.compile(r"<!-{1,3}\s*(?P<head>[^\s>]*?)(?=\s|-->|$)")
#: How many single-character edits (insert, delete, substitute, swap two neighbours) a comment's
#: first word may be from ``descent:KIND`` and still be a near miss: ``desecnt:vaule`` is 2,
#: ``descent_value`` 1, ``desc:figures`` is ``descent`` cut short and 1 from ``figure``.
NEAR_MISS_EDITS = 2
#: Fenced code blocks (``` or ~~~, possibly indented) and inline code spans are not scanned.
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[^\n]*\n.*?^(?P=indent)(?P=fence)[ \t]*$",
                    re.DOTALL | re.MULTILINE)
_INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
#: Near misses (see the module docstring): each match outside code and outside a real shortcode
#: fails the build.
_KIND_WORDS = "|".join(KINDS)
_NEAR_MISS = re.compile(
    rf"<!-{{1,3}}\s*[\w.-]+:(?:{_KIND_WORDS})\b"  # <!-- X:KIND, any prefix X
    r"|<!-{1,3}\s*descent\b"  # <!-- descent, with or without its colon
    rf"|\bdescent:(?:{_KIND_WORDS})\b",  # descent:KIND outside a closed comment
    re.IGNORECASE,
)


def _edits(a: str, b: str) -> int:
    """Damerau-Levenshtein distance (optimal string alignment): the fewest single-character inserts,
    deletions, substitutions and swaps of two neighbours that turn ``a`` into ``b``."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def _looks_like_shortcode(head: str) -> bool:
    """Whether a comment's first word is a shortcode's ``descent:KIND`` mistyped: within
    :data:`NEAR_MISS_EDITS` edits of ``descent:KIND`` as a whole (``descent_value``, ``desecnt:vaule``),
    or a prefix that is ``descent`` mistyped or cut short (``desc``, at least 4 letters) joined by
    ``:``, ``_``, ``-`` or ``.`` to a word within :data:`NEAR_MISS_EDITS` edits of a KIND (``figures``).
    A plain comment (``<!-- TODO: ... -->``, ``<!-- note: figure 2 -->``) is none of these."""
    head = head.lower()
    if len(head) > 40:
        return False
    if any(_edits(head, f"descent:{k}") <= NEAR_MISS_EDITS for k in KINDS):
        return True
    m = re.fullmatch(r"([a-z]+)[:_.-]([a-z]+)", head)
    if not m:
        return False
    prefix, word = m.groups()
    prefix_close = _edits(prefix, "descent") <= NEAR_MISS_EDITS or (len(prefix) >= 4 and "descent".startswith(prefix))
    return prefix_close and any(_edits(word, k) <= NEAR_MISS_EDITS for k in KINDS)


class ShortcodeError(ValueError):
    """A shortcode cannot be resolved. The message names page, shortcode, problem and what is allowed."""


@dataclass(frozen=True)
class Arg:
    """One argument a value or table shortcode accepts: a declared parameter
    (:mod:`descent.params`), so a page, a widget and the command line validate it alike.

    ``Arg(P.CONTEXT)`` takes ``context=8192`` (or ``128k``); a parameter without a default
    (:data:`descent.params.REQUIRED`) is a required argument.
    """

    param: Param

    def __post_init__(self) -> None:
        if not isinstance(self.param, Param):
            raise ValueError(f"a shortcode Arg takes a descent.params.Param, got {type(self.param).__name__}")

    name = property(lambda self: self.param.name)
    help = property(lambda self: self.param.help)
    default = property(lambda self: self.param.default)

    @property
    def required(self) -> bool:
        return self.param.required

    def allowed_choices(self) -> list[str] | None:
        return self.param.values() if self.param.type == "choice" else None

    def allowed(self) -> str:
        """Human-readable description of the allowed values."""
        return self.param.allowed()

    def parse(self, raw: str) -> Any:
        """Convert ``raw`` to the argument's value. Raises ValueError saying what is allowed."""
        try:
            return self.param.parse(raw)
        except ParamError:
            raise ValueError(f"{self.name}={raw!r} is not allowed; {self.name} must be {self.allowed()}") from None

    def describe(self) -> str:
        """``name`` (required) or ``name=default``, for the contributing page."""
        return self.name if self.required else f"{self.name}={self.default}"


@dataclass(frozen=True)
class Entry:
    """A registered value or table shortcode: its kind, name, function, arguments and help."""

    kind: str
    name: str
    func: Callable[..., str]
    args: tuple[Arg, ...] = ()
    doc: str = ""

    def bind(self, raw: dict[str, str]) -> dict[str, Any]:
        """Check and convert raw ``key=value`` strings. Raises ValueError naming the problem."""
        known = {a.name: a for a in self.args}
        unknown = [k for k in raw if k not in known]
        if unknown:
            allowed = ", ".join(known) if known else "no arguments"
            raise ValueError(f"unknown argument {unknown[0]!r}; {self.kind} {self.name!r} takes {allowed}")
        out: dict[str, Any] = {}
        for a in self.args:
            if a.name in raw:
                out[a.name] = a.parse(raw[a.name])
            elif a.required:
                raise ValueError(f"missing argument {a.name!r}; it must be {a.allowed()}")
            else:
                out[a.name] = a.default
        return out


@dataclass
class _Registry:
    entries: dict[str, dict[str, Entry]] = field(default_factory=lambda: {"value": {}, "table": {}})


_REGISTRY = _Registry()


def registry(kind: str) -> dict[str, Entry]:
    """The registered entries of ``kind`` (``"value"`` or ``"table"``), by name."""
    _load_entries()
    if kind not in _REGISTRY.entries:
        raise ValueError(f"kind must be one of {', '.join(_REGISTRY.entries)}, got {kind!r}")
    return _REGISTRY.entries[kind]


def _register(kind: str, name: str, args: tuple[Arg | Param, ...], doc: str | None) -> Callable:
    if not _NAME.match(name):
        raise ValueError(f"shortcode name must be letters, digits, '_', '.', '-', got {name!r}")

    def deco(func: Callable[..., str]) -> Callable[..., str]:
        table_ = _REGISTRY.entries[kind]
        if name in table_ and table_[name].func is not func:
            raise ValueError(f"{kind} shortcode {name!r} is registered twice")
        text = doc if doc is not None else (func.__doc__ or "").strip().split("\n")[0]
        table_[name] = Entry(kind, name, func, tuple(a if isinstance(a, Arg) else Arg(a) for a in args), text)
        return func

    return deco


def value(name: str, *args: Arg | Param, doc: str | None = None) -> Callable:
    """Register ``func(**args) -> str`` (inline Markdown: a number with its unit) as a value shortcode.
    Each argument is a declared parameter (a bare :class:`~descent.params.Param` is wrapped)."""
    return _register("value", name, args, doc)


def table(name: str, *args: Arg | Param, doc: str | None = None) -> Callable:
    """Register ``func(**args) -> str`` (a Markdown table) as a table shortcode."""
    return _register("table", name, args, doc)


_loaded = False


def _load_entries() -> None:
    """Import the modules that register entries (once)."""
    global _loaded
    if not _loaded:
        _loaded = True
        from descent.site import values  # noqa: F401  (registers on import)


# ---------------------------------------------------------------------------------------------
# Parsing and resolving
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shortcode:
    """One parsed shortcode: where it is in the text, its kind, name and raw arguments."""

    start: int
    end: int
    text: str
    kind: str
    name: str
    args: dict[str, str]


def _protected_spans(markdown: str) -> list[tuple[int, int]]:
    spans = [m.span() for m in _FENCE.finditer(markdown)]

    def inside(i: int) -> bool:
        return any(a <= i < b for a, b in spans)

    for m in _INLINE_CODE.finditer(markdown):
        if not inside(m.start()):
            spans.append(m.span())
    return spans


def _line(markdown: str, pos: int, first_line: int) -> int:
    """1-based line number in the page's file of character ``pos`` of ``markdown``."""
    return first_line + markdown.count("\n", 0, pos)


def _parse(text: str, body: str, page: str) -> tuple[str, str, dict[str, str]]:
    def fail(problem: str) -> ShortcodeError:
        return ShortcodeError(f"{page}: shortcode {text.strip()!r}: {problem}")

    try:
        tokens = shlex.split(body)
    except ValueError as e:
        raise fail(f"cannot split its arguments ({e}); quote values with spaces as key=\"a b\"") from None
    if not tokens:
        raise fail(f"no kind; write <!-- descent:KIND NAME key=value -->, KIND one of {', '.join(KINDS)}")
    kind, tokens = tokens[0], tokens[1:]
    if kind not in KINDS:
        raise fail(f"unknown kind {kind!r}; allowed: {', '.join(KINDS)}")
    if not tokens or "=" in tokens[0]:
        raise fail(f"no name; write <!-- descent:{kind} NAME key=value -->")
    name, tokens = tokens[0], tokens[1:]
    if not _NAME.match(name):
        raise fail(f"bad name {name!r}; names use letters, digits, '_', '.', '-'")
    args: dict[str, str] = {}
    for tok in tokens:
        key, eq, val = tok.partition("=")
        if not eq or not key:
            raise fail(f"argument {tok!r} is not key=value")
        if key in args:
            raise fail(f"argument {key!r} is given twice")
        args[key] = val
    return kind, name, args


def find_shortcodes(markdown: str, page: str = "<page>", first_line: int = 1) -> list[Shortcode]:
    """Every shortcode outside code, in order.

    ``first_line``: the line of the page's file where ``markdown`` starts (after front matter).

    Raises:
        ShortcodeError: a malformed shortcode or a near miss, naming ``page:line``.
    """
    spans = _protected_spans(markdown)
    found = []
    for m in _SHORTCODE.finditer(markdown):
        if any(a <= m.start() < b for a, b in spans):
            continue
        where = f"{page}:{_line(markdown, m.start(), first_line)}"
        kind, name, args = _parse(m.group(0), m.group("body"), where)
        found.append(Shortcode(m.start(), m.end(), m.group(0), kind, name, args))
    real = spans + [(sc.start, sc.end) for sc in found]

    def outside(pos: int) -> bool:
        return not any(a <= pos < b for a, b in real)

    write = f"write <!-- descent:KIND NAME key=value --> (KIND one of {', '.join(KINDS)}), closed by -->"
    for m in _OPENED.finditer(markdown):
        if outside(m.start()):
            line = _line(markdown, m.start(), first_line)
            opened = markdown[m.start():].split("\n", 1)[0]
            opened = opened if len(opened) <= 60 else opened[:57] + "..."
            raise ShortcodeError(
                f"{page}:{line}: unclosed shortcode opened at line {line}: {opened!r} has no --> before the next "
                f"comment or the page's end, so nothing would be computed there; {write}"
            )
    misses = [(m.start(), m.group(0)) for m in _NEAR_MISS.finditer(markdown) if outside(m.start())]
    misses += [(m.start(), m.group(0)) for m in _COMMENT_HEAD.finditer(markdown)
               if outside(m.start()) and _looks_like_shortcode(m.group("head"))]
    if misses:
        pos, text = min(misses, key=lambda m: (m[0], -len(m[1])))  # the first, quoted in full
        raise ShortcodeError(
            f"{page}:{_line(markdown, pos, first_line)}: {text!r} looks like a shortcode but is not one (a mistyped "
            f"prefix or kind, a missing colon or an unclosed comment), so nothing would be computed there; {write}"
        )
    return found


Handler = Callable[[str, dict[str, str]], str]

_PAGE: contextvars.ContextVar[str] = contextvars.ContextVar("descent_shortcode_page", default="index.md")


def current_page() -> str:
    """The docs-relative path of the page whose shortcodes are being resolved (``"index.md"`` outside)."""
    return _PAGE.get()


def link_to(target: str, anchor: str = "") -> str:
    """A Markdown link target from the current page to docs-relative ``target`` (``#anchor`` optional)."""
    here = current_page()
    rel = "" if target == here else posixpath.relpath(target, posixpath.dirname(here) or ".")
    return rel + (f"#{anchor}" if anchor else "")


def _registered(kind: str) -> Handler:
    def handle(name: str, raw: dict[str, str]) -> str:
        entries = registry(kind)
        if name not in entries:
            raise ValueError(f"unknown {kind} {name!r}; allowed: {', '.join(sorted(entries))}")
        entry = entries[name]
        return entry.func(**entry.bind(raw))

    return handle


def value_handler() -> Handler:
    """The ``value`` handler :func:`resolve` uses by default (the registered value entries), for a
    caller that wraps it (:mod:`descent.site.explain` records each number)."""
    return _registered("value")


def resolve(markdown: str, page: str = "<page>", handlers: dict[str, Handler] | None = None,
            first_line: int = 1) -> str:
    """Replace every shortcode in ``markdown`` with its content.

    Args:
        markdown: the page source.
        page: the page's path, used in error messages (``"part-4-hardware.md"``).
        first_line: the line of the page's file where ``markdown`` starts (1, or the line after
            a YAML front matter block), so messages name the file's own line numbers.
        handlers: ``{kind: handler(name, raw_args) -> str}`` for ``figure``, ``formula`` and
            ``widget`` (the site hook supplies them); ``value`` and ``table`` use the registries.
            A handler raises ValueError (or KeyError) for a bad name or argument.

    Returns:
        The Markdown with every shortcode replaced.

    Raises:
        ShortcodeError: naming the page, the shortcode, what is wrong and what is allowed.
    """
    all_handlers: dict[str, Handler] = {"value": _registered("value"), "table": _registered("table")}
    all_handlers.update(handlers or {})
    out = []
    last = 0
    token = _PAGE.set(page)
    try:
        return _resolve(markdown, page, all_handlers, out, last, first_line)
    finally:
        _PAGE.reset(token)


def _resolve(markdown: str, page: str, all_handlers: dict[str, Handler], out: list[str], last: int,
             first_line: int) -> str:
    for sc in find_shortcodes(markdown, page, first_line):
        where = f"{page}:{_line(markdown, sc.start, first_line)}"
        handler = all_handlers.get(sc.kind)
        if handler is None:
            raise ShortcodeError(f"{where}: shortcode {sc.text.strip()!r}: {sc.kind} shortcodes are not available here")
        try:
            replacement = handler(sc.name, sc.args)
        except ShortcodeError:
            raise
        except (ValueError, KeyError) as e:
            msg = e.args[0] if e.args else str(e)
            raise ShortcodeError(f"{where}: shortcode {sc.text.strip()!r}: {msg}") from e
        out.append(markdown[last:sc.start])
        # A multi-line replacement (a table) for a shortcode indented on its own line, e.g. inside
        # an admonition, keeps that indentation on every line so it stays inside the block.
        line_start = markdown.rfind("\n", 0, sc.start) + 1
        indent = markdown[line_start:sc.start]
        if indent and not indent.strip() and "\n" in replacement:
            replacement = replacement.replace("\n", "\n" + indent)
        out.append(replacement)
        last = sc.end
    out.append(markdown[last:])
    return "".join(out)
