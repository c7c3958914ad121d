"""Values as PyFlink's coders leave them: the one place for what a declared type does to a value.

In PyFlink a value of a declared type crosses from Python to Java through that type's coder
(``pyflink.fn_execution.coder_impl_fast``) and comes back decoded: ``Types.FLOAT()`` is written as a 4-byte
float, ``Types.INT()`` as an ``int32_t``, ``Types.SQL_TIME()`` as milliseconds of the day, and so on.
:func:`coded` gives the value the next Python function then sees, or raises :class:`CoderError` where PyFlink's
coder raises (with the same exception type and message). Checked against PyFlink 2.3.0
(``benchmarks/pyflink_narrow_types.py``, ``jvm-free-tests/datastream/pyflink_narrow_types.json``):

* ``FLOAT``: rounded to 32 bits (``110.1`` -> ``110.0999984741211``); beyond the 32-bit range ``inf``/``-inf``,
  below it ``0.0``; ints, bools and ``Decimal`` are converted; a ``str`` raises ``TypeError``.
* ``DOUBLE``: ``float(value)`` (``3`` -> ``3.0``); a ``str`` raises ``TypeError``.
* ``BYTE``, ``SHORT``, ``INT``, ``LONG`` (and ``BIG_INT``, which PyFlink codes as a ``LONG``): ``int(value)``
  (floats and ``Decimal`` truncated towards zero, bools ``0``/``1``); out of range raises ``OverflowError``
  (``value too large to convert to int32_t``; for 64 bits ``Python int too large to convert to C long``), never
  wraps; a ``str`` raises ``TypeError``.
* ``BOOLEAN``: written as one unsigned byte and read back as ``byte != 0`` (``2`` -> ``True``).
* ``STRING``, ``CHAR``: must be ``str`` (a ``CHAR`` is any string, as PyFlink codes it as one).
* ``BIG_DEC``: ``Decimal(str(value))`` (``0.1`` -> ``Decimal('0.1')``, no negative zero); text Java's ``BigDecimal`` cannot read
  (``True``, ``NaN``) raises :class:`NumberFormatException`, as Java does in PyFlink.
* ``SQL_DATE``: a ``date`` (a ``datetime`` loses its time); ``SQL_TIME``: milliseconds (microseconds truncated,
  time zone dropped); ``SQL_TIMESTAMP``: milliseconds, naive (wall time kept, time zone dropped); before 1970 with
  PyFlink's arithmetic (a fraction below 1 ms moves the value one second later, other fractions raise
  ``ValueError: microsecond must be in 0..999999``, as in PyFlink); PyFlink reads the seconds back into 32 bits,
  so a timestamp after 2038-01-19 03:14:07 UTC (or before 1901-12-13) wraps around, here too.
* ``ROW``, ``TUPLE``, ``LIST`` and arrays, ``MAP``: field by field, element by element.
* ``None`` stays ``None``; ``PICKLED_BYTE_ARRAY``, ``INSTANT`` and unknown types are left as they are.

Where PyFlink codes values (and where it does not) is for the engines to decide
(:mod:`~pyspark_flinkish.core.declared_output`); keyed state and window contents are not coded (PyFlink's
Python workers keep state objects in their state cache).
"""

from __future__ import annotations

import copy
import datetime
import decimal
import math
import pickle
import re
import struct
from typing import Any, Callable, Dict, Optional

from .errors import FlinkishError
from .per_type import PerType
from .rows import Row

_FLOAT = struct.Struct("<f")


class CoderError(FlinkishError, ValueError):
    """A value does not fit its declared type where PyFlink's coder writes it. ``cause`` is the exception
    PyFlink's coder raises (its type and message); the engines name the operator."""

    def __init__(self, message: str, cause: BaseException) -> None:
        super().__init__(message)
        self.cause = cause


def float32(x: float) -> float:
    """``x`` rounded to the nearest 32-bit float (C's ``(float)x``: ``inf`` beyond the range)."""
    try:
        return float(_FLOAT.unpack(_FLOAT.pack(x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


def float32_shortest(x: float) -> str:
    """The shortest decimal that reads back as the 32-bit float ``x`` (what ``Float.toString`` shows, without
    Java's exponent notation): ``'110.1'`` for ``float32(110.1)``."""
    if math.isnan(x) or math.isinf(x) or x == 0:
        return repr(x)
    for digits in range(1, 10):
        text = f"{x:.{digits}g}"
        if float32(float(text)) == x:
            return text
    return repr(x)


def _real(value: Any) -> float:
    # Cython's conversion to a C double (PyFloat_AsDouble): __float__, else __index__
    if isinstance(value, float):
        return value
    kind = type(value)
    if hasattr(kind, "__float__"):
        return float(value)
    if hasattr(kind, "__index__"):
        return float(value.__index__())
    msg = f"must be real number, not {kind.__name__}"
    raise TypeError(msg)


def _integer(bits: int, signed: bool = True) -> Callable[[Any], int]:
    c_name = f"int{bits}_t" if signed else "unsigned char"
    too_large = "Python int too large to convert to C long" if bits == 64 else f"value too large to convert to {c_name}"
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)

    def convert(value: Any) -> int:
        # Cython's conversion to a C integer: int(), through __int__ (floats truncate), range-checked
        if isinstance(value, int):
            n = int(value)
        elif hasattr(type(value), "__int__") and not isinstance(value, (str, bytes)):
            n = int(value)
        else:
            msg = "an integer is required"
            raise TypeError(msg)
        if n < low or n > high:
            if not signed and n < 0:
                msg = f"can't convert negative value to {c_name}"
            else:
                msg = too_large
            raise OverflowError(msg)
        return n

    return convert


def _string(value: Any) -> str:
    if not isinstance(value, str):
        msg = f"'{type(value).__name__}' object has no attribute 'encode'"
        raise AttributeError(msg)
    return value


def _boolean(value: Any) -> bool:
    return _integer(8, signed=False)(value) != 0


class NumberFormatException(ValueError):  # noqa: N818 - Java's name: Java's BigDecimal raises it in PyFlink
    """What Java's ``BigDecimal`` raises for text it cannot read (PyFlink fails there, on the Java side)."""


_JAVA_DECIMAL = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _big_dec(value: Any) -> decimal.Decimal:
    # PyFlink writes str(value); Java's BigDecimal reads it (its grammar, stricter than Decimal's)
    text = str(value)
    if not _JAVA_DECIMAL.fullmatch(text):
        bad = next((c for c in text if c not in "0123456789.+-eE"), text[:1])
        msg = f'Character {bad or "(none)"} is neither a decimal digit number, decimal point, nor "e" notation exponential mark.'
        raise NumberFormatException(msg)
    number = decimal.Decimal(text)
    return number.copy_abs() if number.is_zero() else number  # Java's BigDecimal has no negative zero


def _date(value: Any) -> datetime.date:
    return datetime.date.fromordinal(value.toordinal())


def _time(value: Any) -> datetime.time:
    millis = value.hour * 3600000 + value.minute * 60000 + value.second * 1000 + value.microsecond // 1000
    seconds, ms = divmod(millis, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return datetime.time(hours, minutes, seconds, ms * 1000)


_EPOCH = datetime.datetime(1970, 1, 1)


def _timestamp(value: Any) -> datetime.datetime:
    # PyFlink writes milliseconds: the whole seconds of value.replace(tzinfo=utc).timestamp() truncated towards
    # zero, plus the microseconds' milliseconds. It reads them back with C's division (towards zero) into a 32-bit
    # int of seconds: before 1970 a fraction of a second moves the value one second later (below 1 ms) or makes a
    # negative microsecond, which datetime refuses (ValueError), except in the last second before 1970; seconds
    # outside 32 bits (after 2038-01-19 03:14:07, before 1901-12-13 20:45:52) wrap around.
    seconds = int(value.replace(tzinfo=datetime.UTC).timestamp())
    millis = seconds * 1000 + value.microsecond // 1000
    whole = abs(millis) // 1000 * (1 if millis >= 0 else -1)
    micros = (millis - whole * 1000) * 1000
    if not 0 <= micros <= 999_999:
        msg = "microsecond must be in 0..999999"
        raise ValueError(msg)
    whole = (whole + (1 << 31)) % (1 << 32) - (1 << 31)  # int32_t
    return (_EPOCH + datetime.timedelta(seconds=whole)).replace(microsecond=micros)


_BASIC: Dict[str, Callable[[Any], Any]] = {
    "FLOAT": lambda v: float32(_real(v)),
    "DOUBLE": _real,
    "BYTE": _integer(8),
    "SHORT": _integer(16),
    "INT": _integer(32),
    "LONG": _integer(64),
    "BIG_INT": _integer(64),
    "BOOLEAN": _boolean,
    "STRING": _string,
    "CHAR": _string,
    "BIG_DEC": _big_dec,
    "SQL_DATE": _date,
    "SQL_TIME": _time,
    "SQL_TIMESTAMP": _timestamp,
}

_NESTED = ("ROW", "TUPLE", "LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY", "MAP")


def is_coded(type_info: Any) -> bool:
    """Whether :func:`coded` can change or refuse values of ``type_info`` (a basic or SQL type somewhere in it)."""
    name = getattr(type_info, "name", None)
    if name in _BASIC:
        return True
    return name in _NESTED and any(is_coded(c) for c in type_info.children)


def type_name(type_info: Any) -> str:
    """``type_info`` as a user writes it: ``Types.FLOAT()``, ``Types.ROW(...)``."""
    name = getattr(type_info, "name", None)
    if name in _BASIC:
        return f"Types.{name}()"
    return repr(type_info)


def coded(value: Any, type_info: Any) -> Any:
    """``value`` as PyFlink's coder for ``type_info`` leaves it (see the module's docstring); ``value`` is already
    in the type's shape (:func:`~pyspark_flinkish.core.rows.as_declared`). Raises :class:`CoderError`.
    The rule is :func:`coder_for`'s."""
    return coder_for(type_info)(value)


_REFUSED = (TypeError, ValueError, OverflowError, AttributeError, decimal.InvalidOperation)


def coder_for(type_info: Any) -> Callable[[Any], Any]:
    """:func:`coded` for values of ``type_info`` (what an operator's output calls per record): the function is
    built once per type information (cached by identity), so that per value only the value is walked."""
    return _CODERS(type_info)


_CODERS = PerType(lambda type_info: _coder(type_info))  # _coder is defined below


def _same(value: Any) -> Any:
    return value


def _coder(type_info: Any) -> Callable[[Any], Any]:
    """The coder of ``type_info`` as :func:`coded` calls it: a value its type refuses raises :class:`CoderError`
    naming that value (and, when it is nested, the whole value and the outer type)."""
    node = _node(type_info)
    if node is None:
        return _same
    if getattr(type_info, "name", None) in _BASIC:
        return node  # it raises CoderError itself

    def code(value: Any) -> Any:
        try:
            return node(value)
        except CoderError:
            raise
        except _REFUSED as exc:
            msg = f"{value!r} is not a value of {type_name(type_info)}: PyFlink raises {type(exc).__name__}: {exc}"
            raise CoderError(msg, exc) from exc

    return code


def _node(type_info: Optional[Any]) -> Optional[Callable[[Any], Any]]:
    """The coding of a value of ``type_info`` nested anywhere (None: left as it is). A basic value its type
    refuses raises :class:`CoderError`; a value not of the type's shape raises what reading it raises."""
    if type_info is None:
        return None
    if not hasattr(type_info, "name"):
        return _unread(type_info)
    name = type_info.name
    basic = _BASIC.get(name)
    if basic is not None:
        return _basic_node(basic, type_info)
    if name not in _NESTED or not is_coded(type_info):
        return None
    children = type_info.children
    codes = [_node(c) or _same for c in children]
    if name == "ROW":

        def code_row(value: Any) -> Any:
            if value is None:
                return None
            fields = [f(v) for v, f in zip(value, codes)]
            if all(a is b for a, b in zip(fields, value)):
                return value
            row = Row(*fields)  # as_declared made it a Row with the type's names
            row.set_field_names(list(type_info.field_names))
            row.set_row_kind(value.get_row_kind())
            return row

        return code_row
    if name == "TUPLE":
        return lambda value: None if value is None else tuple([f(v) for v, f in zip(value, codes)])
    key = codes[0]
    if name == "MAP":
        item = codes[1] if len(codes) > 1 else (lambda value: children[1])  # raises IndexError as the rule does
        return lambda value: None if value is None else {key(k): item(v) for k, v in value.items()}
    return lambda value: None if value is None else [key(v) for v in value]


def _basic_node(basic: Callable[[Any], Any], type_info: Any) -> Callable[[Any], Any]:
    def code(value: Any) -> Any:
        if value is None:
            return None
        try:
            return basic(value)
        except _REFUSED as exc:
            msg = (
                f"{value!r} ({type(value).__name__}) is not a value of {type_name(type_info)}: "
                f"PyFlink raises {type(exc).__name__}: {exc}"
            )
            raise CoderError(msg, exc) from exc

    return code


def _unread(type_info: Any) -> Callable[[Any], Any]:
    # not a type information: a value (not None) fails where the rule reads its name
    return lambda value: None if value is None else type_info.name


def from_java(value: Any, type_info: Any) -> Any:
    """What PyFlink's client makes of ``value`` (already :func:`coded`) of ``type_info`` when it comes back from
    Java, as ``execute_and_collect()`` and ``print()`` of a ``ROW`` do: a ``FLOAT`` is read from its decimal text
    (``110.0999984741211`` comes back as ``110.1``), field by field and element by element; others as they are."""
    if value is None or type_info is None:
        return value
    name = getattr(type_info, "name", None)
    if name == "FLOAT":
        return float(float32_shortest(value)) if isinstance(value, float) else value
    if name not in _NESTED or not _has_float(type_info):
        return value
    children = type_info.children
    if name == "ROW":
        row = Row(*[from_java(v, c) for v, c in zip(value, children)])
        row.set_field_names(list(type_info.field_names))
        row.set_row_kind(value.get_row_kind())
        return row
    if name == "TUPLE":
        return tuple(from_java(v, c) for v, c in zip(value, children))
    if name == "MAP":
        return {from_java(k, children[0]): from_java(v, children[1]) for k, v in value.items()}
    return [from_java(v, children[0]) for v in value]


def transported(value: Any, type_info: Any) -> Any:
    """``value`` as a Python operator decodes it on the other side of a network exchange (each parallel instance
    after a ``broadcast()`` gets its own such copy): PyFlink's coder wrote it and the instance reads it back, so an
    untyped value (``PICKLED_BYTE_ARRAY``) is a pickle round trip (``cloudpickle.dumps`` then ``loads``: an object's
    own ``__reduce__`` applies, its ``__deepcopy__`` never does) and a value of a declared type is a new value as its
    coder leaves it (:func:`coded`). A value ``pickle`` cannot write by reference (a lambda, a class defined in a
    function), which PyFlink's ``cloudpickle`` writes by value, is copied with ``copy.deepcopy``."""
    try:
        copied = pickle.loads(pickle.dumps(value))  # the package's own bytes, just written
    except (pickle.PicklingError, TypeError, AttributeError):
        copied = copy.deepcopy(value)
    if type_info is None or getattr(type_info, "name", None) == "PICKLED_BYTE_ARRAY":
        return copied
    return coded(copied, type_info)


def _has_float(type_info: Any) -> bool:
    return type_info.name == "FLOAT" or any(_has_float(c) for c in type_info.children)


__all__ = [
    "CoderError",
    "NumberFormatException",
    "coded",
    "coder_for",
    "float32",
    "float32_shortest",
    "from_java",
    "is_coded",
    "transported",
    "type_name",
]
