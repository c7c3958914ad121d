"""An operator's declared output type: what it emits is handed on as that type, as Flink's serializers do.

In PyFlink, an operator's records cross to the next operator through the serializer of its declared output type
(``map(f, output_type=Types.ROW_NAMED(...))``, a side output's ``OutputTag`` type): a ``ROW`` arrives as a
:class:`~pyspark_flinkish.core.rows.Row` with the type's field names, a ``TUPLE`` as a tuple, and so on
(:func:`~pyspark_flinkish.core.rows.as_declared`), and each value comes back as the type's coder leaves it: a
``FLOAT`` rounded to 32 bits, an ``INT`` out of range refused, a ``SQL_TIME`` in milliseconds
(:func:`~pyspark_flinkish.core.coders.coded`). :class:`DeclaredOutput` applies these rules to every record an
operator emits (side outputs as their tag's type, whatever the operator declares); a value its type's coder
refuses fails the operator with a :class:`~pyspark_flinkish.core.errors.UserFunctionError` naming the operator,
the value and the type. :class:`~pyspark_flinkish.core.operators.StreamOperator` puts it in front of the output
an executor opens it with.

PyFlink codes a value where it leaves a chain of Python operators (into a network shuffle such as ``key_by``, a
``union``, a Java sink or ``print()``, a second consumer); between two *chained* Python functions it hands the
object on as it is. Here every operator's output is coded (as every ``ROW`` is converted), so a value passed
through several chained functions of a narrow type may be rounded once more than in PyFlink (see
``docs/differences.md``). Keyed state and window contents are never coded, as PyFlink's state cache keeps the
objects themselves.

The wrapper is an :class:`~pyspark_flinkish.core.records.Output` and nothing else: executors keep their own
reference to the output object they give ``open()`` (its bookkeeping, such as the Spark chain's processing
order, lives there), and never reach it through ``operator.output``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .coders import CoderError, coder_for, is_coded, type_name
from .errors import UserFunctionError
from .per_type import PerType
from .records import Output, OutputTag, StreamRecord
from .rows import needs_conversion, shaper_for


def declared(value: Any, type_info: Optional[Any]) -> Any:
    """``value`` as Flink hands it on as ``type_info``: in the type's shape, then as its coder leaves it.
    Raises :class:`~pyspark_flinkish.core.coders.CoderError` (and ``ValueError`` for a wrong shape)."""
    return declaring_function(type_info)(value)


def declaring_function(type_info: Optional[Any]) -> Callable[[Any], Any]:
    """:func:`declared` for values of ``type_info``, its checks made and its shaper and coder built once per type
    information (cached by identity)."""
    return _DECLARING(type_info)


_DECLARING = PerType(lambda type_info: _declaring(type_info))  # _declaring is defined below


def _declaring(type_info: Optional[Any]) -> Callable[[Any], Any]:
    shape = shaper_for(type_info) if needs_conversion(type_info) else None
    code = coder_for(type_info) if is_coded(type_info) else None
    if shape is None:
        return code or (lambda value: value)
    if code is None:
        return shape
    return lambda value: code(shape(value))


def changes_values(type_info: Optional[Any]) -> bool:
    """Whether :func:`declared` can change or refuse a value of ``type_info``."""
    return needs_conversion(type_info) or is_coded(type_info)


class DeclaredOutput:
    """``output`` handing on every record as ``type_info`` (None: as it is) and every side-output record as its
    tag's type; ``name`` is the operator's, for errors. What needs no conversion goes straight to ``output``'s
    own methods."""

    def __init__(self, output: Output, type_info: Optional[Any] = None, name: str = "operator") -> None:
        self.inner = output
        self.type_info = type_info
        self.name = name
        self._convert = declaring_function(type_info)
        if not changes_values(type_info):
            self.collect = output.collect  # type: ignore[method-assign]
        self.emit_watermark = output.emit_watermark  # type: ignore[method-assign]
        self.emit_idle = output.emit_idle  # type: ignore[method-assign]

    def _refused(self, exc: CoderError, type_info: Any, what: str) -> UserFunctionError:
        msg = (
            f"{self.name}: {what} {exc}; PyFlink fails the job there too. Hint: return values that fit "
            f"{type_name(type_info)} (convert them), or declare a type that holds them"
        )
        return UserFunctionError(msg)

    def collect(self, record: StreamRecord) -> None:
        try:
            value = self._convert(record.value)
        except CoderError as exc:
            raise self._refused(exc, self.type_info, "output") from exc.cause
        self.inner.collect(StreamRecord(value, record.timestamp, record.subtask))

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        if changes_values(tag.type_info):
            try:
                value = declaring_function(tag.type_info)(record.value)
            except CoderError as exc:
                raise self._refused(exc, tag.type_info, f"side output {tag.tag_id!r}:") from exc.cause
            record = StreamRecord(value, record.timestamp, record.subtask)
        self.inner.collect_side(tag, record)

    def emit_watermark(self, watermark: int) -> None:
        self.inner.emit_watermark(watermark)

    def emit_idle(self, idle: bool) -> None:
        self.inner.emit_idle(idle)


def declaring(factory: Callable[[], Any], type_info: Optional[Any]) -> Callable[[], Any]:
    """``factory`` (of a :class:`~pyspark_flinkish.core.operators.StreamOperator`) whose operators declare
    ``type_info`` as their output type, when values of that type can differ from what Flink hands on
    (:func:`changes_values`); else ``factory`` itself."""
    if not changes_values(type_info):
        return factory

    def make() -> Any:
        op = factory()
        op.declared_type = type_info
        return op

    return make


__all__ = ["DeclaredOutput", "changes_values", "declared", "declaring", "declaring_function"]
