"""Built-in aggregate functions over named fields: Flink ``AggregateFunction``s the Spark executors can also
compute column-wise.

``ColumnAggregate(Count(), Sum("amount"), Max("amount"))`` is an ordinary ``AggregateFunction`` (the JVM-free
engine and every executor call ``add`` per element, as Flink does) whose accumulator is a tuple with one slot
per part and whose result is the tuple of the parts' results. Because each part's ``merge`` gives exactly what
adding the elements one by one gives (counts, integer sums, minima and maxima are exact and order-free), the
foreachBatch executor may pre-aggregate a micro-batch's on-time elements with pandas and ``merge`` the partial
accumulators into its state (see :mod:`pyspark_flinkish.core.batch_window`).

Fields are read as ``value[field]`` for dicts and ``getattr(value, field)`` otherwise (``pyspark.sql.Row``,
named tuples, objects). ``None`` values are skipped by ``Sum``, ``Min`` and ``Max`` (as in SQL); ``Count``
counts elements. A sum of floats is computed element by element, never column-wise, so that it is bit-identical
to Flink's sequential sum.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from .errors import InvalidArgumentError
from .functions import AggregateFunction


def _field(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name)


class AggregatePart:
    """One column of a :class:`ColumnAggregate`: ``op`` is ``count``, ``sum``, ``min`` or ``max``."""

    op: str = ""
    initial: Any = None

    def __init__(self, field: Optional[str] = None) -> None:
        if self.op != "count" and not isinstance(field, str):
            msg = f"{type(self).__name__} needs a field name; got {field!r}"
            raise InvalidArgumentError(msg)
        self.field = field

    def add(self, value: Any, acc: Any) -> Any:
        raise NotImplementedError

    def merge(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({'' if self.field is None else repr(self.field)})"


class Count(AggregatePart):
    """The number of elements."""

    op = "count"
    initial = 0

    def add(self, value: Any, acc: Any) -> Any:
        return acc + 1

    def merge(self, a: Any, b: Any) -> Any:
        return a + b


class Sum(AggregatePart):
    """The sum of a numeric field (``None`` skipped); 0 for no values."""

    op = "sum"
    initial = 0

    def add(self, value: Any, acc: Any) -> Any:
        v = _field(value, self.field)  # type: ignore[arg-type]
        return acc if v is None else acc + v

    def merge(self, a: Any, b: Any) -> Any:
        return a + b


class Min(AggregatePart):
    """The smallest value of a field (``None`` skipped); ``None`` for no values."""

    op = "min"

    def add(self, value: Any, acc: Any) -> Any:
        v = _field(value, self.field)  # type: ignore[arg-type]
        return acc if v is None or (acc is not None and acc <= v) else v

    def merge(self, a: Any, b: Any) -> Any:
        return b if a is None else a if b is None else min(a, b)


class Max(AggregatePart):
    """The largest value of a field (``None`` skipped); ``None`` for no values."""

    op = "max"

    def add(self, value: Any, acc: Any) -> Any:
        v = _field(value, self.field)  # type: ignore[arg-type]
        return acc if v is None or (acc is not None and acc >= v) else v

    def merge(self, a: Any, b: Any) -> Any:
        return b if a is None else a if b is None else max(a, b)


class ColumnAggregate(AggregateFunction):  # type: ignore[type-arg]
    """An ``AggregateFunction`` made of :class:`AggregatePart`s; its result is the tuple of the parts' values."""

    def __init__(self, *parts: AggregatePart) -> None:
        if not parts or not all(isinstance(p, AggregatePart) for p in parts):
            msg = f"ColumnAggregate needs one or more of Count(), Sum(f), Min(f), Max(f); got {parts!r}"
            raise InvalidArgumentError(msg)
        self.parts = tuple(parts)

    def create_accumulator(self) -> Tuple[Any, ...]:
        return tuple(p.initial for p in self.parts)

    def add(self, value: Any, accumulator: Tuple[Any, ...]) -> Tuple[Any, ...]:
        return tuple(p.add(value, a) for p, a in zip(self.parts, accumulator))

    def get_result(self, accumulator: Tuple[Any, ...]) -> Tuple[Any, ...]:
        return tuple(accumulator)

    def merge(self, a: Tuple[Any, ...], b: Tuple[Any, ...]) -> Tuple[Any, ...]:
        return tuple(p.merge(x, y) for p, x, y in zip(self.parts, a, b))

    def fields(self) -> Tuple[str, ...]:
        """The element fields the parts read."""
        return tuple(dict.fromkeys(p.field for p in self.parts if p.field is not None))

    def __repr__(self) -> str:
        return f"ColumnAggregate({', '.join(map(repr, self.parts))})"


__all__ = ["AggregatePart", "ColumnAggregate", "Count", "Max", "Min", "Sum"]
