"""PyFlink's ``Configuration`` (``pyflink.common.Configuration``): Flink's key/value settings, typed as Flink's.

As Flink's ``org.apache.flink.configuration.Configuration``, which PyFlink wraps, a value keeps the type it was set
with (``set_string``: a string, ``set_integer``: a long, ``set_boolean``, ``set_float``: a double,
``set_bytearray``: bytes) and a getter of another type converts it as Flink does: ``get_integer`` of ``"7"`` is
``7``, ``get_string`` of ``set_float(k, 1.5)`` is ``"1.5"``, ``get_boolean`` of ``"TRUE"`` is ``True``; a value
that does not convert raises Flink's "Could not parse value '...' for key '...'". Checked against PyFlink 2.3.0
(``jvm-free-tests/datastream/pyflink_configuration.json``, made by ``benchmarks/pyflink_configuration.py``).

A ``Configuration`` is only a map. What an environment does with its keys
(``StreamExecutionEnvironment.get_execution_environment(configuration)``, ``env.configure(configuration)``) is
:mod:`pyspark_flinkish.datastream.configuration_keys`.
"""

from __future__ import annotations

import base64
import re
from typing import Any, Dict, Optional, Set, Union

from ..core.display import java_double_string
from ..core.errors import InvalidArgumentError, InvalidTypeError
from ..core.javamath import LONG_MAX, LONG_MIN, java_hash_set_order, java_string_hash

ConfigValue = Union[str, int, bool, float, bytes]
"""What a key holds: the value as it was set (Flink keeps a ``String``, ``Long``, ``Boolean``, ``Double`` or
``byte[]``)."""

SENSITIVE_KEY_PARTS = (
    "password", "secret", "fs.azure.account.key", "apikey", "api-key", "auth-params", "service-key", "token",
    "basic-auth", "jaas.config", "http-headers",
)
"""Flink's ``GlobalConfiguration.SENSITIVE_KEYS``: ``str(configuration)`` shows the value of a key containing one
(in any case) as ``******``."""

HIDDEN_CONTENT = "******"

_LONG = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[fFdD]?)")


def _string_of(value: ConfigValue) -> str:
    """A value as Flink's ``getString`` / ``toMap`` give it: ``true``, ``3``, ``1.5``, ``1.0E20``, bytes in YAML."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_double_string(value)
    return "!!binary |-\n  " + base64.b64encode(value).decode("ascii")


class Configuration:
    """Flink's key/value settings (PyFlink's ``Configuration``).

    Args:
        other: a ``Configuration`` to copy (the copy is independent of it), as PyFlink's ``Configuration(other)``.
    """

    def __init__(self, other: Optional[Configuration] = None) -> None:
        if other is not None and not isinstance(other, Configuration):
            msg = f"Configuration(other): other must be a Configuration to copy; got {type(other).__name__} {other!r}"
            raise InvalidTypeError(msg)
        self._data: Dict[str, ConfigValue] = dict(other._data) if other is not None else {}

    @classmethod
    def from_dict(cls, map: Dict[str, str]) -> Configuration:
        """A configuration of the entries of ``map`` (Flink's ``Configuration.fromMap``; the values as given)."""
        conf = cls()
        for key, value in dict(map).items():
            conf._put(key, value, "from_dict", (str, bool, int, float))
        return conf

    @staticmethod
    def parse_list_value(value: str) -> list:  # type: ignore[type-arg]
        """A list-valued setting such as ``pipeline.jars``: a YAML flow list (``[a, b]``; its items as strings,
        quotes removed) or ``;``-separated items (``a;b``); ``[]`` for an empty string."""
        if not value:
            return []
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            inner = text[1:-1].strip()
            items = [item.strip() for item in inner.split(",")] if inner else []
            return [item[1:-1] if len(item) >= 2 and item[0] == item[-1] and item[0] in "'\"" else item for item in items]
        return value.split(";")

    # ------------------------------------------------------------------ setting
    def _put(self, key: str, value: Any, method: str, types: tuple) -> Configuration:  # type: ignore[type-arg]
        if not isinstance(key, str):
            msg = f"Configuration.{method}: the key must be a str; got {type(key).__name__} {key!r}"
            raise InvalidTypeError(msg)
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            names = " or ".join(t.__name__ for t in types)
            msg = f"Configuration.{method}({key!r}, ...): the value must be a {names}; got {type(value).__name__} {value!r}"
            raise InvalidTypeError(msg)
        if isinstance(value, int) and not isinstance(value, bool) and not LONG_MIN <= value <= LONG_MAX:
            msg = f"Configuration.{method}({key!r}, ...): {value} is outside Java's long range (Flink stores a long)"
            raise InvalidArgumentError(msg)
        self._data[key] = value
        return self

    def set_string(self, key: str, value: str) -> Configuration:
        """Set ``key`` to the string ``value``."""
        return self._put(key, value, "set_string", (str,))

    def set_integer(self, key: str, value: int) -> Configuration:
        """Set ``key`` to the integer ``value`` (a Java long, as PyFlink stores it)."""
        return self._put(key, value, "set_integer", (int,))

    def set_boolean(self, key: str, value: bool) -> Configuration:
        """Set ``key`` to the boolean ``value``."""
        return self._put(key, value, "set_boolean", (bool,))

    def set_float(self, key: str, value: float) -> Configuration:
        """Set ``key`` to ``float(value)`` (a Java double, as PyFlink stores it)."""
        if isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        return self._put(key, value, "set_float", (float,))

    def set_bytearray(self, key: str, value: bytearray) -> Configuration:
        """Set ``key`` to the bytes of ``value``."""
        data = bytes(value) if isinstance(value, (bytearray, memoryview)) else value
        return self._put(key, data, "set_bytearray", (bytes,))

    # ------------------------------------------------------------------ getting
    def _unparsable(self, key: str, what: str, hint: str) -> InvalidArgumentError:
        msg = f"Could not parse value '{_string_of(self._data[key])}' for key '{key}'. ({what}: {hint})"
        return InvalidArgumentError(msg)

    def get_string(self, key: str, default_value: Optional[str]) -> Optional[str]:
        """The value of ``key`` as a string (``"true"``, ``"3"``, ``"1.5"`` for other types, as Flink's), else
        ``default_value``."""
        return _string_of(self._data[key]) if key in self._data else default_value

    def get_integer(self, key: str, default_value: int) -> int:
        """The value of ``key`` as an integer (a string of digits is parsed; ``"2.5"`` or a float is refused, as
        Flink refuses it), else ``default_value``."""
        if key not in self._data:
            return default_value
        value = self._data[key]
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        text = _string_of(value)
        if _LONG.fullmatch(text) and LONG_MIN <= int(text) <= LONG_MAX:
            return int(text)
        raise self._unparsable(key, "get_integer", "Flink reads a long: digits with an optional sign")

    def get_boolean(self, key: str, default_value: bool) -> bool:
        """The value of ``key`` as a boolean (``"true"``/``"false"`` in any case), else ``default_value``."""
        if key not in self._data:
            return default_value
        value = self._data[key]
        if isinstance(value, bool):
            return value
        text = _string_of(value).upper()
        if text in ("TRUE", "FALSE"):
            return text == "TRUE"
        raise self._unparsable(key, "get_boolean", "Flink reads true or false, in any case")

    def get_float(self, key: str, default_value: float) -> float:
        """The value of ``key`` as a float (an integer or a numeric string converts), else
        ``float(default_value)``."""
        if key not in self._data:
            return float(default_value)
        value = self._data[key]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        text = _string_of(value).strip()
        if _DOUBLE.fullmatch(text):
            return float(text.rstrip("fFdD").replace("Infinity", "inf"))
        raise self._unparsable(key, "get_float", "Flink reads a double, e.g. 1.5 or 1.0E20")

    def get_bytearray(self, key: str, default_value: bytearray) -> bytearray:
        """The bytes ``set_bytearray`` set for ``key``, else ``default_value``."""
        if key not in self._data:
            return default_value
        value = self._data[key]
        if isinstance(value, bytes):
            return bytearray(value)
        msg = (
            f"Configuration cannot evaluate value '{_string_of(value)}' of key '{key}' as a byte[] value "
            "(get_bytearray reads what set_bytearray set)"
        )
        raise InvalidArgumentError(msg)

    # ------------------------------------------------------------------ the map
    def _java_order(self) -> list:  # type: ignore[type-arg]
        """The keys in the iteration order of Flink's ``HashMap`` (what PyFlink's ``to_dict`` and ``str`` show)."""
        return java_hash_set_order(list(self._data), java_string_hash)

    def key_set(self) -> Set[str]:
        """The keys of every entry."""
        return set(self._data)

    def contains_key(self, key: str) -> bool:
        """Whether ``key`` has a value."""
        return key in self._data

    def remove_config(self, key: str) -> bool:
        """Remove ``key``; whether it had a value."""
        return self._data.pop(key, None) is not None

    def to_dict(self) -> Dict[str, str]:
        """Every entry, its value as a string (as :meth:`get_string` gives it)."""
        return {key: _string_of(self._data[key]) for key in self._java_order()}

    def add_all_to_dict(self, target_dict: Dict[Any, Any]) -> None:
        """Put every entry into ``target_dict``, its value as set (``int``, ``bool``, ``float``, ``str``, ``bytes``;
        PyFlink hands the Java objects over as these)."""
        target_dict.update(self._data)

    def add_all(self, other: Configuration, prefix: Optional[str] = None) -> Configuration:
        """Add every entry of ``other``, each key after ``prefix`` when given (a key set in both takes ``other``'s
        value)."""
        if not isinstance(other, Configuration):
            msg = f"Configuration.add_all needs a Configuration; got {type(other).__name__} {other!r}"
            raise InvalidTypeError(msg)
        for key, value in other._data.items():
            self._data[(prefix or "") + key] = value
        return self

    def __deepcopy__(self, memodict: Any = None) -> Configuration:
        return Configuration(self)

    def __eq__(self, other: object) -> bool:
        """Equal entries, each value of the same type (as Java's ``equals``: ``"1"`` is not ``1``)."""
        if not isinstance(other, Configuration) or self._data.keys() != other._data.keys():
            return False
        return all(type(v) is type(other._data[k]) and v == other._data[k] for k, v in self._data.items())

    def __hash__(self) -> int:
        return hash(frozenset(self._data))

    def __str__(self) -> str:
        """Flink's ``Configuration.toString``: ``{key=value, ...}``, sensitive values (passwords, tokens, ...)
        hidden."""
        entries = []
        for key in self._java_order():
            hidden = any(part in key.lower() for part in SENSITIVE_KEY_PARTS)
            entries.append(f"{key}={HIDDEN_CONTENT if hidden else _string_of(self._data[key])}")
        return "{" + ", ".join(entries) + "}"


__all__ = ["ConfigValue", "Configuration", "HIDDEN_CONTENT", "SENSITIVE_KEY_PARTS"]
