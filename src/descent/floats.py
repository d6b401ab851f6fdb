"""Floating-point formats bit by bit: decode a code, round a number to the nearest code, and the
properties of each format computed from its bit layout.

A binary floating-point code is a sign bit ``s``, ``E`` exponent bits holding an unsigned ``e``
and ``M`` mantissa bits holding ``m``. With the format's ``bias``:

* normal (``0 < e``, below the reserved codes): ``(-1)^s * (1 + m / 2^M) * 2^(e - bias)``;
* subnormal (``e = 0``): ``(-1)^s * (m / 2^M) * 2^(1 - bias)`` (zero when ``m = 0``);
* reserved codes, which differ by family (:data:`SPECIALS`):

  - ``"ieee"`` (FP32, FP16, BF16, FP8 E5M2): the all-ones exponent is infinity (``m = 0``) or
    not-a-number (``m != 0``). IEEE 754-2008 section 3.4; bfloat16 (Kalamkar et al. 2019,
    arXiv:1905.12322) is FP32's upper half; E5M2 follows IEEE (OCP 8-bit Floating Point
    Specification (OFP8) rev. 1.0, 2023, table 1).
  - ``"fn"`` (FP8 E4M3, the OCP "fn" variant): no infinities; only ``S.1111.111`` is
    not-a-number, so the all-ones exponent still holds normal numbers up to 448 (OFP8 table 1).
  - ``"none"`` (FP4 E2M1): every code is a number; no infinity, no not-a-number (OCP Microscaling
    Formats (MX) Specification v1.0, section 5.3.3).
  - ``"e8m0"`` (the MX block scale): unsigned, no mantissa, no zero: ``2^(e - 127)`` for
    ``e = 0..254``; ``e = 255`` is not-a-number (MX v1.0, section 5.4.1).

Rounding (:meth:`FloatFormat.round`) is round-to-nearest, ties to even, from a Python float
(IEEE binary64), done exactly in binary64 arithmetic (every step scales by powers of two). Past the
largest finite value the result *overflows*: to infinity in an IEEE format, to not-a-number in FP8
E4M3 (what ``ml_dtypes``' conversion does; hardware may instead saturate, which OFP8 section 5
allows), and to the largest value in FP4 E2M1, which has nothing else to go to. E8M0 rounds to the
nearer power of two, a tie going up (as ``ml_dtypes.float8_e8m0fnu`` does). The peer test
(``tests/test_floats.py``) checks every code point of the 8- and 4-bit formats, and rounding, against
``ml_dtypes``.

Standard library only (runs in Pyodide).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from descent import params as P
from descent.checks import is_int, is_real
from descent.units import format_int

__all__ = [
    "FLOAT_FORMAT",
    "FLOAT_VALUE",
    "relative_error",
    "FORMATS",
    "FloatFormat",
    "FormatTable",
    "Rounded",
    "SPECIALS",
    "get",
    "parse_value",
    "value_text",
]

#: Families of reserved codes (see the module docstring).
SPECIALS = ("ieee", "fn", "none", "e8m0")


@dataclass(frozen=True)
class Rounded:
    """A number rounded to a format.

    Attributes:
        code: the stored code, an int of ``fmt.bits`` bits.
        value: what that code means (may be ``math.inf`` or ``math.nan``; see ``kind``).
        error: ``value - x`` (0.0 when ``value`` is not finite).
        kind: ``"zero"``, ``"subnormal"``, ``"normal"``, ``"infinity"`` or ``"nan"``.
        overflow: ``x`` was beyond the largest finite value (the format's overflow rule applied).
    """

    code: int
    value: float
    error: float
    kind: str
    overflow: bool


@dataclass(frozen=True)
class FormatTable:
    """The properties of a format, computed from its bit layout (:meth:`FloatFormat.table`).

    ``max``: largest finite value; ``min_normal`` and ``min_subnormal``: smallest positive normal
    and subnormal values (``None`` when there are no subnormals); ``epsilon``: the gap between 1
    and the next value, ``2^-M`` (``None`` for E8M0, whose next value after 1 is 2); ``decades``:
    ``log10(max / smallest positive)``; ``finite_codes``: how many codes are finite numbers;
    ``infinity`` and ``nan``: the codes that encode them, as bit strings (empty when none; for the
    16- and 32-bit IEEE formats ``nan`` lists the two patterns, one per sign, not every code);
    ``nan_count``: how many codes are NaN (FP32: 2 x (2^23 - 1) = 16,777,214);
    ``overflow_above``: ``max`` plus half the spacing of values at ``max``, the point past which
    rounding to nearest overflows (a tie rounds to ``max`` when its last mantissa bit is 0, as in
    FP8 E4M3: 464 rounds to 448, anything above overflows); ``None`` for E8M0, which rounds by powers of two.
    """

    max: float
    min_normal: float
    min_subnormal: float | None
    epsilon: float | None
    decades: float
    finite_codes: int
    infinity: tuple[str, ...]
    nan: tuple[str, ...]
    nan_count: int
    overflow_above: float | None


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format.

    Attributes:
        name: id (``"fp8_e4m3"``). label: display name (``"FP8 E4M3"``).
        exponent_bits (E), mantissa_bits (M), bias: the layout.
        special: one of :data:`SPECIALS`.
        signed: has a sign bit (all but E8M0).
        use: what it is used for, one sentence. source: where the layout is defined.
    """

    name: str
    label: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    special: str
    signed: bool
    use: str
    source: str

    # -- layout -------------------------------------------------------------------------------
    # Each is worked out once per format (round() reads them for every value it rounds).

    @cached_property
    def bits(self) -> int:
        """Bits per value: sign (if any) + E + M."""
        return int(self.signed) + self.exponent_bits + self.mantissa_bits

    @cached_property
    def codes(self) -> int:
        """Number of codes, ``2^bits``."""
        return 1 << self.bits

    @cached_property
    def _emax_field(self) -> int:
        """Largest exponent field that holds finite numbers."""
        top = (1 << self.exponent_bits) - 1
        return top - 1 if self.special in ("ieee", "e8m0") else top

    @cached_property
    def max(self) -> float:
        """Largest finite value."""
        if self.special == "e8m0":
            return math.ldexp(1.0, self._emax_field - self.bias)
        top_m = (1 << self.mantissa_bits) - (2 if self.special == "fn" else 1)
        return math.ldexp(1.0 + top_m / (1 << self.mantissa_bits), self._emax_field - self.bias)

    @cached_property
    def min_normal(self) -> float:
        """Smallest positive normal value, ``2^(1 - bias)`` (``2^-bias`` for E8M0, code 0)."""
        return math.ldexp(1.0, (0 if self.special == "e8m0" else 1) - self.bias)

    @cached_property
    def min_subnormal(self) -> float | None:
        """Smallest positive subnormal, ``2^(1 - bias - M)``; None without subnormals (E8M0)."""
        if self.special == "e8m0" or self.mantissa_bits == 0:
            return None
        return math.ldexp(1.0, 1 - self.bias - self.mantissa_bits)

    def split(self, code: int) -> tuple[int, int, int]:
        """``(sign, exponent field, mantissa field)`` of a code. Raises ValueError for a bad code."""
        self._check_code(code)
        m = code & ((1 << self.mantissa_bits) - 1)
        e = (code >> self.mantissa_bits) & ((1 << self.exponent_bits) - 1)
        s = (code >> (self.mantissa_bits + self.exponent_bits)) & 1 if self.signed else 0
        return s, e, m

    def bit_string(self, code: int, sep: str = "") -> str:
        """The code's bits, most significant first, fields joined by ``sep``: ``"0 01111 0000000000"``."""
        s, e, m = self.split(code)
        parts = [format(s, "b")] if self.signed else []
        parts.append(format(e, "0" + str(self.exponent_bits) + "b"))
        if self.mantissa_bits:
            parts.append(format(m, "0" + str(self.mantissa_bits) + "b"))
        return sep.join(parts)

    def _check_code(self, code: int) -> None:
        if not is_int(code) or not 0 <= code < self.codes:
            raise ValueError(f"a {self.label} code must be a whole number from 0 to {format_int(self.codes - 1)}, "
                             f"got {code!r}")

    # -- decode -------------------------------------------------------------------------------

    def kind(self, code: int) -> str:
        """``"zero"``, ``"subnormal"``, ``"normal"``, ``"infinity"`` or ``"nan"``."""
        s, e, m = self.split(code)
        top = (1 << self.exponent_bits) - 1
        mtop = (1 << self.mantissa_bits) - 1
        if self.special == "e8m0":
            return "nan" if e == top else "normal"
        if self.special == "ieee" and e == top:
            return "infinity" if m == 0 else "nan"
        if self.special == "fn" and e == top and m == mtop:
            return "nan"
        if e == 0:
            return "zero" if m == 0 else "subnormal"
        return "normal"

    def decode(self, code: int) -> float:
        """The value of a code (``math.inf``/``-math.inf``/``math.nan`` for the reserved codes).

        Raises:
            ValueError: ``code`` is not a whole number from 0 to ``2^bits - 1``.
        """
        s, e, m = self.split(code)
        k = self.kind(code)
        sign = -1.0 if s else 1.0
        if k == "nan":
            return math.nan
        if k == "infinity":
            return sign * math.inf
        if self.special == "e8m0":
            return math.ldexp(1.0, e - self.bias)
        frac = m / (1 << self.mantissa_bits)
        if e == 0:
            return sign * math.ldexp(frac, 1 - self.bias)
        return sign * math.ldexp(1.0 + frac, e - self.bias)

    # -- encode -------------------------------------------------------------------------------

    def _nan_code(self) -> int:
        if self.special == "ieee":
            top = (1 << self.exponent_bits) - 1
            return (top << self.mantissa_bits) | (1 << (self.mantissa_bits - 1))  # the quiet NaN
        if self.special == "fn":
            return (1 << (self.exponent_bits + self.mantissa_bits)) - 1
        if self.special == "e8m0":
            return (1 << self.exponent_bits) - 1
        raise ValueError(f"{self.label} has no code for not-a-number: every one of its codes is a number")

    def _encode_exact(self, v: float) -> int:
        """Code of a value that the format holds exactly (v finite, >= 0 for E8M0)."""
        s = 1 if math.copysign(1.0, v) < 0 else 0
        a = abs(v)
        if self.special == "e8m0":
            return math.frexp(a)[1] - 1 + self.bias
        if a == 0:
            e, m = 0, 0
        elif a < self.min_normal:
            e, m = 0, int(math.ldexp(a, self.bias - 1 + self.mantissa_bits))
        else:
            exp = math.frexp(a)[1] - 1  # a = 1.f * 2^exp
            e = exp + self.bias
            m = int(math.ldexp(a, self.mantissa_bits - exp)) - (1 << self.mantissa_bits)
        code = (e << self.mantissa_bits) | m
        if self.signed:
            code |= s << (self.exponent_bits + self.mantissa_bits)
        return code

    def round(self, x: float) -> Rounded:
        """``x`` rounded to the nearest value of this format (module docstring for the rules).

        Args:
            x: a real number (a Python float or int); infinity and not-a-number are accepted
                where the format can hold them.

        Returns:
            A :class:`Rounded`: the code, its value, the error ``value - x``, its kind, and
            whether ``x`` overflowed.

        Raises:
            ValueError: ``x`` is not a number; not-a-number or infinity given to FP4 E2M1 (which
                has neither); a negative number, zero or not-a-number given to E8M0 when it
                cannot hold it (negative and zero: it has no sign and no zero).
        """
        if not is_real(x):
            raise ValueError(f"value must be a number, got {x!r}")
        x = float(x)
        if math.isnan(x):
            code = self._nan_code()
            return Rounded(code, math.nan, 0.0, "nan", False)
        if self.special == "e8m0":
            return self._round_e8m0(x)
        v, over = self._nearest(x)
        return self._result(v, x, over)

    def round_value(self, x: float) -> float:
        """``round(x).value`` without the rest of :class:`Rounded`, for a float ``x`` that is not
        NaN, in any format but E8M0 (quantizers round thousands of values and keep only this)."""
        return self._nearest(x)[0]

    def _nearest(self, x: float) -> tuple[float, bool]:
        """The value nearest ``x`` (a float, not NaN; not E8M0) and whether ``x`` overflowed."""
        neg = math.copysign(1.0, x) < 0
        a = abs(x)
        if math.isinf(a):
            return self._overflow(neg)
        if a == 0:
            return (-0.0 if neg else 0.0), False
        exp = math.frexp(a)[1] - 1
        q_exp = max(exp, 1 - self.bias) - self.mantissa_bits  # the spacing of values near a: 2^q_exp
        n = math.ldexp(a, -q_exp)  # exact: a scaled by a power of two
        m = round(n)  # round() on a float is ties-to-even
        # Compared in units of 2^q_exp (exact: a power-of-two scaling): m * 2^q_exp itself may not
        # fit a binary64 (the largest double rounds up past it), and then it overflowed any format.
        if m > math.ldexp(self.max, -q_exp):
            return self._overflow(neg)
        r = math.ldexp(float(m), q_exp)
        return (-r if neg else r), False

    def _overflow(self, neg: bool) -> tuple[float, bool]:
        if self.special == "ieee":
            return (-math.inf if neg else math.inf), True
        if self.special == "fn":
            return math.nan, True
        return (-self.max if neg else self.max), True  # E2M1: saturate

    def _result(self, v: float, x: float, overflow: bool) -> Rounded:
        if math.isnan(v):
            return Rounded(self._nan_code(), math.nan, 0.0, "nan", overflow)
        if math.isinf(v):
            top = (1 << self.exponent_bits) - 1
            code = (top << self.mantissa_bits) | ((1 << (self.bits - 1)) if v < 0 else 0)
            return Rounded(code, v, 0.0, "infinity", overflow)
        code = self._encode_exact(v)
        err = 0.0 if math.isinf(x) else v - x
        return Rounded(code, v, err, self.kind(code), overflow)

    def _round_e8m0(self, x: float) -> Rounded:
        if x <= 0:
            what = "zero" if x == 0 else "a negative number"
            raise ValueError(f"{self.label} has no sign and no zero, so it cannot hold {what}: enter a positive "
                             f"number (its values are the powers of two from 2^-{self.bias} to "
                             f"2^{self._emax_field - self.bias})")
        if math.isinf(x):
            return Rounded(self._nan_code(), math.nan, 0.0, "nan", True)
        mant, exp = math.frexp(x)  # x = mant * 2^exp, mant in [0.5, 1)
        e = exp - 1 + (1 if mant >= 0.75 else 0)  # nearer power of two; a tie (1.5 * 2^k) goes up
        if e > self._emax_field - self.bias:
            return Rounded(self._nan_code(), math.nan, 0.0, "nan", True)
        e = max(e, -self.bias)  # below 2^-127 the nearest value is 2^-127
        v = math.ldexp(1.0, e)
        return Rounded(e + self.bias, v, v - x, "normal", False)

    # -- the table ----------------------------------------------------------------------------

    def table(self) -> FormatTable:
        """Every property of :class:`FormatTable`, computed from the layout (and checked by
        decoding: ``max`` is the largest finite value any code decodes to)."""
        smallest = self.min_subnormal if self.min_subnormal is not None else self.min_normal
        inf_codes, nan_codes, finite = [], [], 0
        if self.bits <= 8:
            for c in range(self.codes):
                k = self.kind(c)
                if k == "infinity":
                    inf_codes.append(self.bit_string(c, " "))
                elif k == "nan":
                    nan_codes.append(self.bit_string(c, " "))
                else:
                    finite += 1
        else:  # IEEE 16- and 32-bit: describe the patterns instead of listing thousands of codes
            top = "1" * self.exponent_bits
            finite = self.codes - 2 * (1 << self.mantissa_bits)
            inf_codes = [f"{s} {top} {'0' * self.mantissa_bits}" for s in "01"]
            nan_codes = [f"{s} {top} (any mantissa except all zeros)" for s in "01"]
        return FormatTable(
            max=self.max,
            min_normal=self.min_normal,
            min_subnormal=self.min_subnormal,
            epsilon=None if self.mantissa_bits == 0 else math.ldexp(1.0, -self.mantissa_bits),
            decades=math.log10(self.max / smallest),
            finite_codes=finite,
            infinity=tuple(inf_codes),
            nan=tuple(nan_codes),
            nan_count=self.codes - finite - len(inf_codes),
            overflow_above=None if self.special == "e8m0" else
            self.max + math.ldexp(1.0, math.frexp(self.max)[1] - 2 - self.mantissa_bits),
        )


_IEEE = "IEEE 754-2008, section 3.6 (binary32, binary16)"
_OFP8 = "OCP 8-bit Floating Point Specification (OFP8) rev. 1.0 (2023), table 1; Micikevicius et al. 2022, arXiv:2209.05433"
_MX = "OCP Microscaling Formats (MX) Specification v1.0 (2023)"

_ALL = [
    FloatFormat("fp32", "FP32", 8, 23, 127, "ieee", True,
                "Full precision: training's master weights and optimiser state.", _IEEE),
    FloatFormat("fp16", "FP16", 5, 10, 15, "ieee", True,
                "Half precision: more digits than BF16, far less range.", _IEEE),
    FloatFormat("bf16", "BF16", 8, 7, 127, "ieee", True,
                "bfloat16: FP32's range in 16 bits; the usual format of released weights.",
                "Kalamkar et al. 2019, 'A Study of BFLOAT16 for Deep Learning Training', arXiv:1905.12322"),
    FloatFormat("fp8_e4m3", "FP8 E4M3", 4, 3, 7, "fn", True,
                "8-bit float with more digits: weights and activations.", _OFP8),
    FloatFormat("fp8_e5m2", "FP8 E5M2", 5, 2, 15, "ieee", True,
                "8-bit float with more range: gradients in training.", _OFP8),
    FloatFormat("fp4_e2m1", "FP4 E2M1", 2, 1, 1, "none", True,
                "4-bit float: the elements of MXFP4 and NVFP4 blocks.", _MX + ", section 5.3.3"),
    FloatFormat("e8m0", "E8M0", 8, 0, 127, "e8m0", False,
                "8-bit power of two: the shared scale of an MX block.", _MX + ", section 5.4.1"),
]

#: Every format, by name: fp32 fp16 bf16 fp8_e4m3 fp8_e5m2 fp4_e2m1 e8m0.
FORMATS: dict[str, FloatFormat] = {f.name: f for f in _ALL}

# Checked at import: the published maxima (OFP8 table 1: E4M3 448, E5M2 57,344; MX 5.3.3: E2M1 6).
assert FORMATS["fp8_e4m3"].max == 448 and FORMATS["fp8_e5m2"].max == 57344 and FORMATS["fp4_e2m1"].max == 6
assert FORMATS["fp16"].max == 65504


def get(name: str | FloatFormat) -> FloatFormat:
    """The format called ``name`` (a FloatFormat passes through).

    Raises:
        ValueError: unknown name; the message lists the known ones.
    """
    if isinstance(name, FloatFormat):
        return name
    try:
        return FORMATS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown float format {name!r}; known: {', '.join(FORMATS)}") from None


#: Longest value text accepted (a 32-bit pattern written in binary with spaces fits).
VALUE_MAX_CHARS = 64


def parse_value(fmt: str | FloatFormat, text: str) -> tuple[str, float | int]:
    """What a reader typed for a format: a number, or a code written in binary or hexadecimal.

    ``"0.1"``, ``"-3e-5"``, ``"1,000"``, ``"inf"``, ``"-infinity"``, ``"nan"`` are numbers
    (returned as ``("number", float)``); ``"0b0011 1110 0010 0000 ..."`` (spaces and underscores
    ignored) and ``"0x3E20"`` are codes (``("code", int)``), which must fit the format's width.

    Raises:
        ValueError: empty, unreadable, or a code wider than the format; the message says what is allowed.
    """
    f = get(fmt)
    if not isinstance(text, str):
        raise ValueError(f"value must be text, got {type(text).__name__}")
    t = text.strip().replace("_", "").replace(",", "")
    low = t.lower()
    if not t:
        raise ValueError("value is empty: type a number such as 0.1, or a code such as 0b0100 or 0x3E")
    if low.startswith(("0b", "0x", "-0b", "-0x", "+0b", "+0x")):
        if low[0] in "+-":
            raise ValueError(f"a code has no sign of its own: write {low[1:]} (the sign is its first bit)")
        digits = "".join(low[2:].split())
        base = 2 if low.startswith("0b") else 16
        try:
            code = int(digits, base)
        except ValueError:
            kind = "0 and 1" if base == 2 else "0-9 and A-F"
            raise ValueError(f"{text.strip()!r} is not a code: after {low[:2]} write only {kind}") from None
        if base == 2 and len(digits) != f.bits:
            raise ValueError(f"a {f.label} code has {f.bits} bits; {text.strip()!r} has {len(digits)}")
        if code >= f.codes:
            raise ValueError(f"{text.strip()!r} does not fit in {f.label}'s {f.bits} bits "
                             f"(its codes are 0x0 to 0x{format(f.codes - 1, 'X')})")
        return "code", code
    try:
        x = float("".join(low.split()))
    except ValueError:
        raise ValueError(f"{text.strip()!r} is not a number: type a number such as 0.1 or -2.5e-3, "
                         f"or a code such as 0b... or 0x...") from None
    return "number", x


def value_text(x: float) -> str:
    """A decoded value written exactly enough to tell it from its neighbours: the shortest decimal
    that reads back as the same binary64 number (every value of these formats is one), with
    infinities and not-a-number spelled out ("infinity", "minus infinity", "not a number")."""
    if math.isnan(x):
        return "not a number"
    if math.isinf(x):
        return "infinity" if x > 0 else "minus infinity"
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    return repr(x)


def relative_error(format: str, x: float) -> float:
    """|stored - x| / |x| when ``x`` is rounded to the nearest value of ``format`` (:meth:`Format.round`).

    Raises:
        ValueError: an unknown format, ``x`` zero or not a number, or a value that rounds to no
            finite value of the format.
    """
    f = get(format)
    if not is_real(x) or x == 0:
        raise ValueError(f"the relative error needs a number other than 0, got {x!r}")
    r = f.round(float(x))
    if not math.isfinite(r.value):
        raise ValueError(f"{x} does not round to a finite {f.label} value")
    return abs(r.error) / abs(float(x))


FLOAT_FORMAT = P.declare(P.Param(
    "format", "Format", "choice", "bf16", key="float_format",
    choices=[(f.name, f.label) for f in _ALL],
    help="A floating-point format; its bits are sign, exponent and mantissa.",
))
FLOAT_VALUE = P.declare(P.Param(
    "value", "Number or code", "text", "0.1", key="float_value", max_length=VALUE_MAX_CHARS,
    help="A number (0.1, -3e-5, inf), or a code in binary (0b...) or hexadecimal (0x...).",
))
