"""An operator's declared output type: what it emits is handed on as that type, as Flink's serializers do.

In PyFlink, an operator's records cross to the next operator through the serializer of its declared output type
(``map(f, output_type=Types.ROW_NAMED(...))``, a side output's ``OutputTag`` type): a ``ROW`` arrives as a
:class:`~pyspark_flinkish.core.rows.Row` with the type's field names, a ``TUPLE`` as a tuple, and so on
(:func:`~pyspark_flinkish.core.rows.as_declared`). :class:`DeclaredOutput` applies that rule to every record an
operator emits (side outputs as their tag's type, whatever the operator declares);
:class:`~pyspark_flinkish.core.operators.StreamOperator` puts it in front of the output an executor opens it
with.

The wrapper is an :class:`~pyspark_flinkish.core.records.Output` and nothing else: executors keep their own
reference to the output object they give ``open()`` (its bookkeeping, such as the Spark chain's processing
order, lives there), and never reach it through ``operator.output``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .records import Output, OutputTag, StreamRecord
from .rows import as_declared, needs_conversion


class DeclaredOutput:
    """``output`` handing on every record as ``type_info`` (None: as it is) and every side-output record as its
    tag's type. What needs no conversion goes straight to ``output``'s own methods."""

    def __init__(self, output: Output, type_info: Optional[Any] = None) -> None:
        self.inner = output
        self.type_info = type_info
        if not needs_conversion(type_info):
            self.collect = output.collect  # type: ignore[method-assign]
        self.emit_watermark = output.emit_watermark  # type: ignore[method-assign]
        self.emit_idle = output.emit_idle  # type: ignore[method-assign]

    def collect(self, record: StreamRecord) -> None:
        self.inner.collect(StreamRecord(as_declared(record.value, self.type_info), record.timestamp))

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        if needs_conversion(tag.type_info):
            record = StreamRecord(as_declared(record.value, tag.type_info), record.timestamp)
        self.inner.collect_side(tag, record)

    def emit_watermark(self, watermark: int) -> None:
        self.inner.emit_watermark(watermark)

    def emit_idle(self, idle: bool) -> None:
        self.inner.emit_idle(idle)


def declaring(factory: Callable[[], Any], type_info: Optional[Any]) -> Callable[[], Any]:
    """``factory`` (of a :class:`~pyspark_flinkish.core.operators.StreamOperator`) whose operators declare
    ``type_info`` as their output type, when values of that type can differ from what Flink hands on
    (:func:`~pyspark_flinkish.core.rows.needs_conversion`); else ``factory`` itself."""
    if not needs_conversion(type_info):
        return factory

    def make() -> Any:
        op = factory()
        op.declared_type = type_info
        return op

    return make


__all__ = ["DeclaredOutput", "declaring"]
