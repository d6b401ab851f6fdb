"""Units and their formatting: bytes, rates, FLOP, with significant figures.

Conventions (IEC 80000-13 and SI): a decimal prefix is a power of 1000 and a binary prefix a power of
1024, so **GB = 1e9 bytes** and **GiB = 2**30 bytes**. Vendors write "80 GB" of HBM when they mean
80 GiB; the catalog records which (``Accelerator.memory_marketed_unit_is_gib``). Bandwidth is decimal:
TB/s = 1e12 bytes/s. Every formatted number carries its unit, so GB and GiB are never confused.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import math
import re

from descent.checks import is_int, is_real

__all__ = [
    "BYTE_UNITS",
    "GB",
    "GB_PER_S",
    "GiB",
    "KB",
    "KiB",
    "MB",
    "MiB",
    "PB",
    "PiB",
    "TB",
    "TB_PER_S",
    "TFLOPS",
    "PFLOPS",
    "TiB",
    "format_bytes",
    "format_count",
    "format_fixed",
    "format_int",
    "format_ordinal",
    "format_limit",
    "format_number",
    "format_percent",
    "format_points",
    "format_rate",
    "format_si",
    "format_time",
    "parse_bytes",
    "parse_count",
    "plural",
    "round_sig",
    "visible_controls",
    "visible_whitespace",
]

# Decimal (SI) byte units, bytes.
KB = 10**3
MB = 10**6
GB = 10**9
TB = 10**12
PB = 10**15
# Binary (IEC) byte units, bytes.
KiB = 2**10
MiB = 2**20
GiB = 2**30
TiB = 2**40
PiB = 2**50
# Rates, bytes/s and FLOP/s.
GB_PER_S = 10**9
TB_PER_S = 10**12
TFLOPS = 10**12
PFLOPS = 10**15

#: Every byte unit ``format_bytes`` and ``parse_bytes`` accept, with its size in bytes.
BYTE_UNITS: dict[str, int] = {
    "B": 1,
    "KB": KB,
    "MB": MB,
    "GB": GB,
    "TB": TB,
    "PB": PB,
    "KiB": KiB,
    "MiB": MiB,
    "GiB": GiB,
    "TiB": TiB,
    "PiB": PiB,
}

_DECIMAL_BYTES = ["B", "KB", "MB", "GB", "TB", "PB"]
_BINARY_BYTES = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]

# SI prefixes for format_si: exponent of 1000 -> symbol.
_SI_PREFIXES = {-4: "p", -3: "n", -2: "µ", -1: "m", 0: "", 1: "k", 2: "M", 3: "G", 4: "T", 5: "P", 6: "E"}

#: Default significant figures for displayed values.
DEFAULT_SIG = 3


def _check_number(x: float, what: str) -> float:
    if not is_real(x):
        raise ValueError(f"{what} must be a number, got {type(x).__name__} {x!r}")
    if math.isnan(x) or math.isinf(x):
        raise ValueError(f"{what} must be a finite number, got {x!r}")
    return x


def _check_sig(sig: int) -> int:
    if not is_int(sig) or not 1 <= sig <= 15:
        raise ValueError(f"sig (significant figures) must be an integer 1 to 15, got {sig!r}")
    return sig


def round_sig(x: float, sig: int = DEFAULT_SIG) -> float:
    """``x`` rounded to ``sig`` significant figures (``round_sig(151.397, 3) == 151.0``).

    Raises:
        ValueError: ``x`` is not a finite number, or ``sig`` is not 1 to 15.
    """
    _check_number(x, "value")
    _check_sig(sig)
    if x == 0:
        return 0.0
    exponent = math.floor(math.log10(abs(x)))
    return round(x, sig - 1 - exponent)


def _fmt_sig(x: float, sig: int) -> str:
    """Fixed-point text of ``x`` with ``sig`` significant figures and thousands separators."""
    if x == 0:
        return "0"
    exponent = math.floor(math.log10(abs(x)))
    decimals = sig - 1 - exponent
    rounded = round(x, decimals)
    # Rounding can carry into a new digit (999.6 -> 1000): recount the decimals.
    if rounded != 0 and math.floor(math.log10(abs(rounded))) != exponent:
        decimals -= 1
        rounded = round(x, decimals)
    return f"{rounded:,.{max(decimals, 0)}f}"


#: ``format_number`` writes fixed-point text for magnitudes in [1e-4, 1e15) and an exponent outside.
_FIXED_MIN_EXP = -4
_FIXED_MAX_EXP = 15


def _trim(text: str) -> str:
    """Drop trailing zeros after a decimal point, and the point itself: ``"80.0"`` -> ``"80"``."""
    if "e" in text:
        mantissa, exp = text.split("e")
        return _trim(mantissa) + "e" + exp
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_number(x: float, sig: int = DEFAULT_SIG, *, trim: bool = False) -> str:
    """``x`` to ``sig`` significant figures, thousands separated: ``format_number(12345.6) == "12,300"``.

    The one number formatter of the package: the site's running text, the widgets' views and the
    byte/rate formatters below all print numbers through it. Magnitudes in [1e-4, 1e15) are fixed
    point (``format_number(0.5) == "0.500"``); outside, scientific (``"1.00e-05"``). Trailing zeros
    are kept so the text shows ``sig`` figures, unless ``trim`` (``format_number(80.0, trim=True)
    == "80"``, for running text where a catalog value reads better without them).

    Raises:
        ValueError: ``x`` not a finite number, or ``sig`` not 1 to 15.
    """
    _check_number(x, "value")
    _check_sig(sig)
    if x == 0:
        return "0"
    exponent = math.floor(math.log10(abs(round_sig(x, sig))))
    if _FIXED_MIN_EXP <= exponent < _FIXED_MAX_EXP:
        text = _fmt_sig(x, sig)
    else:
        text = f"{x:.{sig - 1}e}"
    return _trim(text) if trim else text


def format_bytes(n: float, unit: str = "auto", sig: int = DEFAULT_SIG, *, trim: bool = False,
                 words: bool = False) -> str:
    """Format a byte count with its unit, e.g. ``format_bytes(85_899_345_920, "GiB") == "80.0 GiB"``.

    Args:
        n: bytes (int or float, may be negative for a shortfall).
        unit: one of ``BYTE_UNITS`` ("B", "KB" ... "PB", "KiB" ... "PiB"), or ``"auto"`` (decimal
            prefix that puts the number in [1, 1000)), or ``"auto-binary"`` (binary prefix, [1, 1024)).
        sig: significant figures, 1 to 15.
        trim: drop trailing zeros (``"80 GiB"``), as :func:`format_number` does.
        words: spell a plain byte count out, for running text (``"512 bytes"``, not ``"512 B"``).

    Raises:
        ValueError: ``n`` not finite, ``unit`` unknown, or ``sig`` out of range.
    """
    _check_number(n, "bytes")
    _check_sig(sig)
    if unit in ("auto", "auto-binary"):
        names, base = (_DECIMAL_BYTES, 1000) if unit == "auto" else (_BINARY_BYTES, 1024)
        i = 0
        while i < len(names) - 1 and abs(round_sig(n, sig)) >= base ** (i + 1):
            i += 1
        unit = names[i]
    if unit not in BYTE_UNITS:
        raise ValueError(f"unit must be one of auto, auto-binary, {', '.join(BYTE_UNITS)}; got {unit!r}")
    text = _fmt_sig(n / BYTE_UNITS[unit], sig)
    return f"{_trim(text) if trim else text} {'bytes' if words and unit == 'B' else unit}"


def format_si(x: float, unit: str, sig: int = DEFAULT_SIG, *, trim: bool = False) -> str:
    """Format ``x`` with an SI prefix on ``unit``: ``format_si(4.8e12, "B/s") == "4.80 TB/s"``.

    Trailing zeros are kept so the text shows ``sig`` significant figures, unless ``trim``
    (``"4.8 TB/s"``). The prefix is chosen so the number lies in [1, 1000) (pico to exa); zero
    prints as ``"0 unit"``.

    Raises:
        ValueError: ``x`` not finite, ``unit`` not a string, or ``sig`` out of range.
    """
    _check_number(x, "value")
    _check_sig(sig)
    if not isinstance(unit, str):
        raise ValueError(f"unit must be a string, got {unit!r}")
    if x == 0:
        return f"0 {unit}".rstrip()
    r = round_sig(x, sig)
    power = math.floor(math.log10(abs(r)) / 3)
    power = max(min(power, max(_SI_PREFIXES)), min(_SI_PREFIXES))
    scaled = r / 1000**power
    exponent = math.floor(math.log10(abs(scaled)))
    decimals = max(sig - 1 - exponent, 0)
    text = f"{scaled:,.{decimals}f}"
    return f"{_trim(text) if trim else text} {_SI_PREFIXES[power]}{unit}".rstrip()


_COUNT_NAMES = [(10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "k")]

#: Word scales of :func:`format_count` (short scale: a billion is 1e9).
COUNT_WORDS: dict[str, int] = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}

#: What :func:`format_count` accepts as ``unit``.
COUNT_UNITS = ("auto", "short", "exact", *COUNT_WORDS)


def format_count(n: float, unit: str = "auto", sig: int = DEFAULT_SIG) -> str:
    """Format a count (parameters, tokens, FLOPs as a count).

    ``unit``:

    * ``"auto"`` (running text and widgets): a word scale from million up, trailing zeros dropped:
      ``format_count(70_553_706_496) == "70.6 billion"``; below a million, :func:`format_number`
      (``"135"``, ``"12,300"``);
    * ``"short"`` (narrow table columns, the CLI): k/M/B/T suffixes, ``"70.6B"``;
    * ``"exact"``: every digit, ``"70,553,706,496"``;
    * ``"thousand"``, ``"million"``, ``"billion"``, ``"trillion"``: that scale, ``"70.6 billion"``.

    B = billion (1e9) as model names use it, not bytes.

    Raises:
        ValueError: ``n`` not finite, ``unit`` unknown, or ``sig`` out of range.
    """
    _check_number(n, "count")
    _check_sig(sig)
    if unit == "exact":
        return f"{round(n):,}"
    if unit == "short":
        r = round_sig(n, sig)
        for size, suffix in _COUNT_NAMES:
            if abs(r) >= size:
                return f"{_fmt_sig(n / size, sig)}{suffix}"
        return _fmt_sig(n, sig) if n != int(n) or abs(n) >= 10**sig else f"{int(n)}"
    if unit == "auto":
        unit = "one"
        for name, scale in COUNT_WORDS.items():
            if scale >= 10**6 and abs(round_sig(n, sig)) >= scale:
                unit = name
    if unit == "one":
        return format_number(n, sig, trim=True)
    if unit not in COUNT_WORDS:
        raise ValueError(f"unit must be one of {', '.join(COUNT_UNITS)}; got {unit!r}")
    return f"{format_number(n / COUNT_WORDS[unit], sig, trim=True)} {unit}"


def format_int(n: int) -> str:
    """A whole number with thousands separators, every digit: ``format_int(8192) == "8,192"``.

    Raises:
        ValueError: ``n`` is not an int (a bool is not an int).
    """
    if not is_int(n):
        raise ValueError(f"format_int needs an int, got {n!r}")
    return f"{n:,}"


def format_ordinal(n: int) -> str:
    """An English ordinal: ``format_ordinal(2) == "2nd"``, ``format_ordinal(11) == "11th"``.

    Raises:
        ValueError: ``n`` is not an int (a bool is not an int).
    """
    if not is_int(n):
        raise ValueError(f"format_ordinal needs an int, got {n!r}")
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def format_fixed(x: float, decimals: int) -> str:
    """``x`` with exactly ``decimals`` places, thousands separated: ``format_fixed(0.8123, 3) == "0.812"``
    (for values whose scale is fixed, such as a cosine similarity in [-1, 1]).

    Raises:
        ValueError: ``x`` not finite, or ``decimals`` not 0 to 10.
    """
    _check_number(x, "value")
    if not is_int(decimals) or not 0 <= decimals <= 10:
        raise ValueError(f"decimals must be 0 to 10, got {decimals!r}")
    if not math.isfinite(x):
        raise ValueError(f"value must be a finite number, got {x!r}")
    return f"{x:,.{decimals}f}"


def format_limit(x: float) -> str:
    """A limit or typed value for a message: every digit of a whole number, thousands separated
    (``"10,000,000"``), else 6 significant figures (``"0.05"``, ``"1e-07"``); no trailing ``.0``."""
    if isinstance(x, bool):
        return str(x)
    if is_int(x) or (isinstance(x, float) and math.isfinite(x) and x == int(x) and abs(x) < 1e15):
        return f"{int(x):,}"
    return f"{x:,.6g}"


def format_percent(fraction: float, sig: int = DEFAULT_SIG, *, decimals: int | None = None, trim: bool = True) -> str:
    """A fraction as a percentage: ``format_percent(0.0439) == "4.39%"``.

    ``sig`` significant figures with trailing zeros dropped (kept when not ``trim``: ``"5.00%"``),
    or exactly ``decimals`` places
    (``format_percent(0.0439, decimals=1) == "4.4%"``).

    Raises:
        ValueError: ``fraction`` not finite, ``sig`` out of range, or ``decimals`` not 0 to 10.
    """
    _check_number(fraction, "fraction")
    pct = fraction * 100
    if decimals is not None:
        if not is_int(decimals) or not 0 <= decimals <= 10:
            raise ValueError(f"decimals must be 0 to 10, got {decimals!r}")
        return f"{pct:,.{decimals}f}%"
    return f"{format_number(pct, sig, trim=trim)}%"


def format_points(difference: float, sig: int = DEFAULT_SIG) -> str:
    """A difference of two shares in percentage points:
    ``format_points(0.0012, 2) == "0.12 percentage points"`` (0.5% against 0.38% is 0.12 points).

    Raises:
        ValueError: ``difference`` not finite, or ``sig`` out of range.
    """
    _check_number(difference, "difference")
    return f"{format_number(100 * difference, sig)} percentage points"


#: Time units of :func:`format_time`, largest first, seconds.
_TIME_UNITS = [(86400.0, "days"), (3600.0, "h"), (60.0, "min"), (1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")]


def format_time(seconds: float, sig: int = DEFAULT_SIG) -> str:
    """A duration with a unit chosen for it: ``format_time(0.0123) == "12.3 ms"``, ``"1.50 s"``,
    ``"2.00 min"``. Zero is ``"0 s"``.

    Raises:
        ValueError: ``seconds`` negative or not finite, or ``sig`` out of range.
    """
    _check_number(seconds, "seconds")
    _check_sig(sig)
    if seconds < 0:
        raise ValueError(f"seconds must be >= 0, got {seconds!r}")
    if seconds == 0:
        return "0 s"
    r = round_sig(seconds, sig)
    for size, name in _TIME_UNITS:
        if r >= size or size == _TIME_UNITS[-1][0]:
            return f"{_fmt_sig(seconds / size, sig)} {name}"
    raise AssertionError("unreachable")


#: How :func:`visible_whitespace` shows each whitespace character; any other whitespace
#: character becomes its code point in angle brackets (``<U+00A0>``).
VISIBLE_WHITESPACE = {" ": "\u2423", "\n": "\u21b5", "\t": "\u21e5", "\r": "\u240d"}


#: Bidirectional-text controls (Unicode's Bidi_Control property): invisible, and they reorder what a
#: terminal or a page shows around them (the "Trojan Source" attack, CVE-2021-42574).
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _is_control(c: str) -> bool:
    """A C0 or C1 control character, DEL, or a bidirectional control: invisible, and a terminal may
    act on it (ESC starts an escape sequence, BEL rings)."""
    o = ord(c)
    return o < 0x20 or 0x7F <= o < 0xA0 or c in BIDI_CONTROLS


def visible_controls(text: str, keep: str = "\n\t") -> str:
    """Text with every control character (C0, DEL, C1, bidirectional controls) shown as its code point
    in angle brackets (ESC as ``<U+001B>``, BEL as ``<U+0007>``), except those in ``keep`` (newline
    and tab): what a terminal prints of text it did not write.

    Raises:
        ValueError: ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    return "".join(f"<U+{ord(c):04X}>" if c not in keep and _is_control(c) else c for c in text)


def visible_whitespace(text: str) -> str:
    """Token text with every whitespace character made visible: space ``␣``, newline ``↵``,
    tab ``⇥``, carriage return ``␍``, any other (no-break space, ...) as ``<U+00A0>``; and every
    other control character (ESC, BEL, DEL, C1, bidirectional controls) as its code point too
    (``<U+001B>``), so a token never acts on the terminal or the page that shows it.

    Raises:
        ValueError: ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    return "".join(VISIBLE_WHITESPACE.get(c, f"<U+{ord(c):04X}>") if c.isspace() or _is_control(c) else c
                   for c in text)


def format_rate(bytes_per_s: float, sig: int = DEFAULT_SIG) -> str:
    """Format a bandwidth in decimal bytes/s: ``format_rate(3.35e12) == "3.35 TB/s"``."""
    return format_si(bytes_per_s, "B/s", sig)


_BYTES_RE = re.compile(r"^\s*([0-9][0-9_,]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_bytes(text: str) -> int:
    """Parse "80 GiB", "141GB", "1.5 TB" or "1024" into bytes (rounded to a whole byte).

    Units are case-sensitive as written in ``BYTE_UNITS`` (GB is decimal, GiB binary).

    Raises:
        ValueError: not a non-negative number followed by an optional known unit.
    """
    if not isinstance(text, str):
        raise ValueError(f"size must be text like '80 GiB', got {text!r}")
    m = _BYTES_RE.match(text)
    if not m:
        raise ValueError(f"size must be a number and a unit ({', '.join(BYTE_UNITS)}), got {text!r}")
    number, unit = m.group(1).replace("_", "").replace(",", ""), m.group(2) or "B"
    if unit not in BYTE_UNITS:
        raise ValueError(f"size unit must be one of {', '.join(BYTE_UNITS)}, got {unit!r} in {text!r}")
    return round(float(number) * BYTE_UNITS[unit])


_COUNT_SUFFIX = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9}
_COUNT_RE = re.compile(r"^\s*([0-9][0-9_,]*(?:\.[0-9]+)?)\s*([kKMBG]?)\s*$")


def parse_count(text: str) -> int:
    """Parse a whole count such as "8192", "128k", "1,000,000" or "1M" (k = 1e3, M = 1e6, B = 1e9).

    Raises:
        ValueError: not a count, or not a whole number after the suffix is applied.
    """
    if is_int(text):
        return text
    if not isinstance(text, str):
        raise ValueError(f"count must be text like '8192' or '128k', got {text!r}")
    m = _COUNT_RE.match(text)
    if not m:
        raise ValueError(f"count must be a whole number, optionally with k, M or B, got {text!r}")
    value = float(m.group(1).replace("_", "").replace(",", "")) * _COUNT_SUFFIX[m.group(2)]
    if not math.isfinite(value):  # thousands of digits overflow a float
        raise ValueError(f"count must be a whole number below 1e308, got {len(text):,} characters")
    if value != int(value):
        raise ValueError(f"count must be a whole number, got {text!r} = {value}")
    return int(value)


def plural(n: int, word: str, plural_form: str | None = None) -> str:
    """``n`` with its thousands separators and ``word``, plural unless ``n`` is 1: ``plural(1, "token")``
    is "1 token", ``plural(8192, "token")`` is "8,192 tokens". ``plural_form`` overrides the added "s"."""
    return f"{n:,} {word if n == 1 else (plural_form or word + 's')}"
