"""The push-based runner of a compiled graph: a record or a watermark goes depth-first from the node that emits it to
every node that consumes it, dispatched by the node's kind, a user error located at the innermost node (``in_node``).

The one dispatch of both executors: the JVM-free engine (``local/executor.py``) runs a whole job with it, every
operator opened once per job and every sink a function call; the foreachBatch executor's ``ChainRunner``
(``spark/chain.py``) subclasses it, overriding only what a sink and a keyed operator do with a record (a row for the
next Spark stage instead of a call), how an operator's emissions are ordered (``ord``) and how operators are opened
(per task, lazily). A watermark passes the node's input valve before the node sees it (``input_watermark``).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..core.errors import UserFunctionError
from ..core.operators import StreamOperator, call_user, in_node, short
from ..core.records import OutputTag, StreamRecord
from ..datastream.compiled_graph import CompiledNode

PASS_THROUGH = ("union", "side_output")
"""The kinds of node that hand every record and watermark on as they are (a side-output selector reads its input's
side output of its tag; the edges say which)."""


class GraphRunner:
    """Runs records and watermarks through ``graph`` (a compiled graph, ``datastream/compiled_graph.py``) by pushing.

    ``operators``: each operator node's opened operator by index; ``sink_functions``: each sink's function by index;
    ``valves``: each node's input valve by index. ``order`` travels with every record and watermark: where the
    record is in the processing order (the foreachBatch executor numbers emissions by it; None in the JVM-free
    engine, which processes in that order)."""

    def __init__(self, graph: Sequence[CompiledNode]) -> None:
        self.graph = graph
        self.operators: Dict[int, StreamOperator] = {}
        self.sink_functions: Dict[int, Callable[[Any], Any]] = {}
        self.valves: Dict[int, Any] = {}
        self._consumers: Dict[int, List[Tuple[int, int]]] = {}  # node -> its main consumers with their inputs

    # -- records
    def push(self, index: int, record: StreamRecord, order: Any = None, channel: int = 0) -> None:
        """``record`` reaches input ``channel`` of node ``index``; a user error is located at the innermost node."""
        try:
            self._dispatch(index, record, order, channel)
        except UserFunctionError as exc:
            node = self.graph[index]
            raise in_node(exc, node.name, node.uid)  # noqa: B904 (its cause is the user's exception)

    def forward(self, index: int, record: StreamRecord, order: Any = None) -> None:
        """Node ``index`` emits ``record`` on its main output: every consumer gets it, in the graph's order."""
        consumers = self._consumers.get(index)
        if consumers is None:  # once per node: the graph does not change while it runs
            node = self.graph[index]
            consumers = self._consumers[index] = [(c, node.channel_of(p)) for p, c in enumerate(node.main)]
        for consumer, channel in consumers:
            try:  # :meth:`push`, inline (once per record and consumer)
                self._dispatch(consumer, record, order, channel)
            except UserFunctionError as exc:
                node = self.graph[consumer]
                raise in_node(exc, node.name, node.uid)  # noqa: B904 (its cause is the user's exception)

    def forward_side(self, index: int, tag: OutputTag, record: StreamRecord, order: Any = None) -> None:
        """Node ``index`` emits ``record`` on its side output ``tag``: every selector of that tag gets it."""
        for consumer in self.graph[index].side.get(tag, ()):
            self.push(consumer, record, order)

    def _dispatch(self, index: int, record: StreamRecord, order: Any, channel: int) -> None:
        """The one dispatch by kind: a sink, a keyed operator, a pass-through node, any other operator."""
        node = self.graph[index]
        kind = node.kind
        if kind == "sink":
            self.sink_record(index, record, order)
        elif node.keyed:
            self.keyed_record(index, record, order, channel)
        elif kind in PASS_THROUGH:
            self.forward(index, record, order)
        elif node.two_input:
            self.record_operator(index, order).process_input(channel, record)  # type: ignore[attr-defined]
        else:
            self.record_operator(index, order).process_element(record)

    def record_operator(self, index: int, order: Any) -> StreamOperator:
        """Node ``index``'s operator, about to process a record at ``order`` (here: its operator)."""
        return self.operators[index]

    def operator(self, index: int) -> StreamOperator:
        """Node ``index``'s opened operator."""
        return self.operators[index]

    def keyed_record(self, index: int, record: StreamRecord, order: Any, channel: int) -> None:
        """A keyed operator's record (here: the operator processes it, as any operator)."""
        op = self.record_operator(index, order)
        if self.graph[index].two_input:
            op.process_input(channel, record)  # type: ignore[attr-defined]
        else:
            op.process_element(record)

    def sink_record(self, index: int, record: StreamRecord, order: Any) -> None:
        """A sink's record (here: the sink's operator processes it, else its function is called on the value; a sink
        with neither, one another executor writes, is never given records here)."""
        op = self.operators.get(index)
        if op is not None:
            op.process_element(record)
            return
        function = self.sink_functions.get(index)
        if function is not None:
            name = self.graph[index].name
            call_user(function, lambda: f"{name}: sink function on {short(record.value)}", record.value)

    # -- watermarks
    def forward_watermark(self, index: int, watermark: int, order: Any = None) -> None:
        """Node ``index`` emits ``watermark``: every consumer of its main and side outputs gets it, in that order."""
        node = self.graph[index]
        for p, consumer in enumerate(node.main):
            self.push_watermark(consumer, node.channel_of(p), watermark, order)
        for consumers in node.side.values():
            for consumer in consumers:
                self.push_watermark(consumer, 0, watermark, order)

    def push_watermark(self, index: int, channel: int, watermark: int, order: Any = None) -> None:
        """``watermark`` reaches input ``channel`` of node ``index``: through its valve (:meth:`input_watermark`), then
        by kind: a sink's operator, a keyed operator, a pass-through node (forwards it), any other operator."""
        new = self.input_watermark(index, channel, watermark)
        if new is None:
            return
        node = self.graph[index]
        try:
            if node.kind == "sink":
                self.sink_watermark(index, new)
            elif node.keyed:
                self.keyed_watermark(index, new, order)
            elif node.kind in PASS_THROUGH:
                self.forward_watermark(index, new, order)
            else:
                self.operator(index).process_watermark(new)
        except UserFunctionError as exc:
            raise in_node(exc, node.name, node.uid)  # noqa: B904 (its cause is the user's exception)

    def input_watermark(self, index: int, channel: int, watermark: int) -> Optional[int]:
        """Node ``index``'s combined input watermark after ``watermark`` on ``channel``, if it advanced (its valve)."""
        return self.valves[index].input_watermark(channel, watermark)  # type: ignore[no-any-return]

    def keyed_watermark(self, index: int, watermark: int, order: Any) -> None:
        """A keyed operator's new input watermark (here: the operator processes it)."""
        self.operators[index].process_watermark(watermark)

    def sink_watermark(self, index: int, watermark: int) -> None:
        """A sink's new input watermark: its operator processes it, a sink function has no use for it."""
        op = self.operators.get(index)
        if op is not None:
            op.process_watermark(watermark)


__all__ = ["GraphRunner", "PASS_THROUGH"]
