"""Plain ``DataStream.broadcast()`` (Flink's ``BroadcastPartitioner``: every element to every parallel instance of the
next operator), written once for both APIs: ``benchmarks/pyflink_broadcast_partitioning.py`` runs these jobs in real
PyFlink 2.3.0 and records their outputs in ``pyflink_broadcast_partitioning.json``;
``test_pyflink_broadcast_partitioning.py`` (local engine) and ``tests/spark/test_spark_two_input.py`` (Spark) run them
with pyspark_flinkish and compare.

* ``COLLECTED`` cases: a job whose stream of strings is collected (``execute_and_collect``). Flink does not order the
  outputs of parallel instances, so every case's outputs are compared sorted (a multiset); each job is made so that
  this multiset is deterministic even if every element came once per instance (the rolling counts of ``key_by
  reduce``: each element adds 1; ``window_all`` fires only once every copy is in). In PyFlink neither does: its
  key-by (and ``partition_custom``) operator's input is forwarded, not broadcast
  (``PythonConfigUtil.alignTransformation``).
* ``PRINTED`` cases: ``print()`` at the environment's parallelism (and a sink's own ``set_parallelism``; after a
  union, and after ``partition_custom``, which PyFlink runs only with ``execute()``): the values printed, sorted
  (Flink prefixes each line with its subtask, ``<name>:<subtask>> ``; the package does not, so only the values are
  compared).
* ``SETTINGS``: operator settings on the stream ``broadcast()`` returns (it has no operator of its own in Flink).

This module imports neither library: jobs take ``api``, a namespace with ``Types``, ``ProcessFunction``,
``GlobalWindows``, ``CountTrigger`` and ``source(env, values, type_info)`` (a bounded stream of ``values``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

ORACLE = Path(__file__).with_name("pyflink_broadcast_partitioning.json")

# name -> (environment parallelism, the next operator's own parallelism or None)
COLLECTED: Dict[str, Tuple[int, Optional[int]]] = {
    "map p1": (1, None),
    "map p2": (2, None),
    "map p3": (3, None),
    "map p1, operator p3": (1, 3),
    "map p3, operator p2": (3, 2),
    "flat_map p2": (2, None),
    "filter p3": (3, None),
    "process index p3": (3, None),
    "process index p1, operator p2": (1, 2),
    "key_by reduce p2": (2, None),
    "key_by reduce p2, reduce p3": (2, 3),
    "window_all p2": (2, None),
    "map then map p2": (2, None),
    "union map p2": (2, None),
    "union map p2, operator p3": (2, 3),
    "execute_and_collect p3": (3, None),
}
# name -> (environment parallelism, the sink's own parallelism or None)
PRINTED: Dict[str, Tuple[int, Optional[int]]] = {
    "print p2": (2, None),
    "print p1, sink p3": (1, 3),
    "print untyped p1, sink p3": (1, 3),
    "union print p2": (2, None),
    "partition_custom print p2": (2, None),
}
SETTINGS = ["set_parallelism", "name", "uid", "key_by().set_parallelism"]
NUMBERS = [1, 2, 3]
OTHERS = [10, 20]
PAIRS = [("a", 1), ("b", 1), ("a", 1)]


def collected_job(api: Any, env: Any, name: str) -> Any:
    """The case's stream of strings on ``env`` (its parallelism set here)."""
    T = api.Types  # noqa: N806
    parallelism, operator_parallelism = COLLECTED[name]
    env.set_parallelism(parallelism)
    numbers = api.source(env, NUMBERS, T.INT())

    def own(stream: Any) -> Any:
        return stream if operator_parallelism is None else stream.set_parallelism(operator_parallelism)

    if name.startswith("union map"):  # the broadcast input's elements once per instance, the other's once
        others = api.source(env, OTHERS, T.INT())
        return own(numbers.broadcast().union(others).map(lambda v: f"{v}", T.STRING()))
    if name.startswith("map then map"):
        return numbers.broadcast().map(lambda v: v * 10, T.INT()).map(lambda v: f"{v}", T.STRING())
    if name.startswith("map"):
        return own(numbers.broadcast().map(lambda v: f"{v}", T.STRING()))
    if name.startswith("flat_map"):
        return own(numbers.broadcast().flat_map(lambda v: [f"{v}", f"{v}!"], T.STRING()))
    if name.startswith("filter"):
        return own(numbers.broadcast().filter(lambda v: v % 2 == 1)).map(lambda v: f"{v}", T.STRING())
    if name.startswith("process index"):

        class Index(api.ProcessFunction):  # type: ignore[name-defined,misc]
            def open(self, runtime_context: Any) -> None:
                self.context = runtime_context
                self.opened = runtime_context.get_index_of_this_subtask()

            def process_element(self, value: Any, ctx: Any) -> Any:
                c = self.context
                yield f"{value} {self.opened} {c.get_index_of_this_subtask()} {c.get_number_of_parallel_subtasks()}"

        return own(numbers.broadcast().process(Index(), T.STRING()))
    if name.startswith("key_by reduce"):
        pairs = api.source(env, PAIRS, T.TUPLE([T.STRING(), T.INT()]))
        counts = pairs.broadcast().key_by(lambda v: v[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
        return own(counts).map(lambda v: f"{v[0]} {v[1]}", T.STRING())
    if name.startswith("window_all"):
        # fires only if every element came once per instance (a firing before all copies were in would depend on
        # the instances' interleaving)
        copies = len(NUMBERS) * parallelism
        windowed = numbers.broadcast().window_all(api.GlobalWindows.create()).trigger(api.CountTrigger.of(copies))
        return windowed.reduce(lambda a, b: a + b).map(lambda v: f"{v}", T.STRING())
    if name.startswith("execute_and_collect"):
        return numbers.map(lambda v: f"{v}", T.STRING()).broadcast()
    msg = f"unknown case {name!r}"
    raise KeyError(msg)


def printed_job(api: Any, env: Any, name: str) -> None:
    """Add the case's ``print(name)`` to ``env`` (its parallelism set here); the caller executes it."""
    parallelism, sink_parallelism = PRINTED[name]
    env.set_parallelism(parallelism)
    type_info = None if "untyped" in name else api.Types.INT()  # untyped: PyFlink prints through a map to strings
    numbers = api.source(env, NUMBERS, type_info).broadcast()
    if name.startswith("union"):
        numbers = numbers.union(api.source(env, OTHERS, api.Types.INT()))
    if name.startswith("partition_custom"):  # PyFlink forwards into its partitioner operator, as into key_by's
        numbers = numbers.partition_custom(lambda k, n: k % n, lambda v: v)
    sink = numbers.print(name)
    if sink_parallelism is not None:
        sink.set_parallelism(sink_parallelism)


def printed_values(lines: Any, name: str) -> Any:
    """The values ``print(name)`` wrote, sorted (a line is ``name> value``, or ``name:<subtask>> value`` in Flink at
    a parallelism above 1)."""
    values = []
    for line in lines:
        prefix, sep, value = line.partition("> ")
        if sep and prefix.split(":")[0] == name:
            values.append(value)
    return sorted(values)


def setting(api: Any, env: Any, call: str) -> Callable[[], Any]:
    """The operator setting ``call`` on ``broadcast()``'s stream (or on a ``key_by`` of it)."""
    stream = api.source(env, NUMBERS, api.Types.INT()).broadcast()
    return {
        "set_parallelism": lambda: stream.set_parallelism(2),
        "name": lambda: stream.name("b"),
        "uid": lambda: stream.uid("b"),
        "key_by().set_parallelism": lambda: stream.key_by(lambda v: v).set_parallelism(2),
    }[call]


def load() -> Dict[str, Any]:
    return json.loads(ORACLE.read_text())  # type: ignore[no-any-return]
