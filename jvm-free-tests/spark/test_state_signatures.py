"""State written by an incompatible version of an operator is refused at start, never reset silently: the operator
signatures both Spark executors store in ``<checkpoint>/flinkish/meta.json`` and compare on every start
(``spark/signatures.py``: ``state_signature``, ``compare_signatures``, ``check_operators``; the
applyInPandasWithState executor through ``spark/stateful.py``'s ``check_checkpoint``). Window shape, trigger, lateness, aggregate class
and accumulator type, declared state (descriptor kind, type, TTL) and a declared key type are compared; a changed
function body is not. The Spark test ``tests/spark/test_spark_columnar.py`` shows the refusal on a real restart."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import pytest

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.core.errors import StateError
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import AggregateFunction, KeyedProcessFunction
from pyspark_flinkish.datastream.state import ListStateDescriptor, StateTtlConfig, ValueStateDescriptor
from pyspark_flinkish.datastream.window import CountTrigger, SlidingEventTimeWindows, TumblingEventTimeWindows
from pyspark_flinkish.spark.checkpoint import read_meta, write_meta
from pyspark_flinkish.spark.plan import ExecPlan
from pyspark_flinkish.spark.signatures import (
    KEY_IDENTITY,
    KEY_IDENTITY_DECLARED_FORM,
    compare_signatures,
    key_identity,
    state_signature,
)
from pyspark_flinkish.spark.stateful import check_checkpoint

STRING = Types.STRING()


class Agg(AggregateFunction):  # type: ignore[type-arg]
    def __init__(self, tuple_accumulator: bool = False) -> None:
        self.tuple_accumulator = tuple_accumulator

    def create_accumulator(self):  # type: ignore[no-untyped-def]
        return (0, 0) if self.tuple_accumulator else 0

    def add(self, value, acc):  # type: ignore[no-untyped-def]
        return (acc[0] + 1, acc[1] + value[1]) if self.tuple_accumulator else acc + value[1]

    def get_result(self, acc):  # type: ignore[no-untyped-def]
        return acc

    def merge(self, a, b):  # type: ignore[no-untyped-def]
        return a


class Count(KeyedProcessFunction):  # type: ignore[type-arg]
    def __init__(self, kind: str = "value", type_info: Any = None, ttl: bool = False, step: int = 1) -> None:
        self.kind, self.type_info, self.ttl, self.step = kind, type_info, ttl, step

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        cls = ValueStateDescriptor if self.kind == "value" else ListStateDescriptor
        descriptor = cls("count", self.type_info if self.type_info is not None else Types.LONG())
        if self.ttl:
            descriptor.enable_time_to_live(StateTtlConfig.new_builder(Duration.of_minutes(5)).build())
        if self.kind == "value":
            self.count = runtime_context.get_state(descriptor)
        else:
            self.count = runtime_context.get_list_state(descriptor)

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        yield value


def _plan(
    size_s: int = 10,
    sliding: bool = False,
    trigger: Any = None,
    lateness_s: int = 5,
    agg: Optional[AggregateFunction] = None,  # type: ignore[type-arg]
    count: Optional[Count] = None,
    key_type: Any = STRING,
    map_fn: Callable[[Any], Any] = lambda e: e,
) -> Dict[str, str]:
    env = StreamExecutionEnvironment.get_execution_environment()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
    events = env.from_source(MicroBatchSource([MicroBatch([("a", 1)])]), strategy, "events").map(map_fn).uid("parse")
    assigner = (
        SlidingEventTimeWindows.of(Duration.of_seconds(size_s), Duration.of_seconds(5))
        if sliding
        else TumblingEventTimeWindows.of(Duration.of_seconds(size_s))
    )
    windowed = events.key_by(lambda e: e[0], key_type=key_type).window(assigner).allowed_lateness(Duration.of_seconds(lateness_s))
    if trigger is not None:
        windowed = windowed.trigger(trigger)
    windowed.aggregate(agg or Agg()).uid("totals").add_sink(print)
    events.key_by(lambda e: e[0]).process(count or Count()).uid("counts").add_sink(print)
    return ExecPlan(list(env._sinks))


def _signatures(**change: Any) -> Dict[str, str]:
    plan = _plan(**change)
    sigs = {n.uid: state_signature(t) for n, t in zip(plan.nodes, plan.transformations)}
    return {uid: s for uid, s in sigs.items() if s is not None}


BASE = _signatures()


@pytest.mark.parametrize(
    ("change", "uid", "what"),
    [
        (dict(size_s=20), "totals", "TumblingEventTimeWindows(20000, 0)"),
        (dict(sliding=True), "totals", "SlidingEventTimeWindows"),
        (dict(trigger=CountTrigger.of(3)), "totals", "CountTrigger.of(3)"),
        (dict(lateness_s=0), "totals", "lateness=0"),
        (dict(agg=Agg(tuple_accumulator=True)), "totals", "accumulator int -> tuple"),
        (dict(count=Count(kind="list")), "counts", "count:value:LONG] -> [count:list:LONG]"),
        (dict(count=Count(type_info=Types.STRING())), "counts", "count:value:LONG] -> [count:value:STRING]"),
        (dict(count=Count(ttl=True)), "counts", "count:value:LONG] -> [count:value:LONG:ttl]"),
        (dict(key_type=Types.LONG()), "totals", "key STRING -> LONG"),
    ],
)
def test_an_incompatible_change_is_refused_naming_operator_and_change(change: Dict[str, Any], uid: str, what: str) -> None:
    problems, _ = compare_signatures(BASE, _signatures(**change))
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"operator {uid!r}: "), problems
    assert what in problems[0], problems


def test_changed_function_bodies_are_compatible() -> None:
    changed = _signatures(map_fn=lambda e: (e[0].upper(), e[1]), count=Count(step=2))
    problems, merged = compare_signatures(BASE, changed)
    assert problems == [] and merged == BASE


def test_a_checkpoint_without_the_newer_parts_and_new_operators() -> None:
    """A checkpoint written before a part existed admits any value of it and learns it; a new operator (no state
    in the checkpoint) is recorded; a part the pipeline cannot tell this time stays as stored."""
    old = {"totals": BASE["totals"].split(" | ")[0]}
    problems, merged = compare_signatures(old, BASE)
    assert problems == [] and merged == BASE
    unknown = {uid: sig.split(" | ")[0] for uid, sig in BASE.items()}
    problems, merged = compare_signatures(BASE, unknown)
    assert problems == [] and merged == BASE


def test_the_signature_opens_a_copy_not_the_users_function() -> None:
    count = Count()
    _signatures(count=count)
    assert not hasattr(count, "count")  # open() ran on a copy: nothing of the driver's state handles is shipped
    assert "state=[count:value:LONG]" in BASE["counts"]


def _stored_before_key_identity(signatures: Dict[str, str]) -> Dict[str, str]:
    """The signatures as a checkpoint written before keys were held as Flink tells them apart stored them."""
    return {uid: re.sub(r" \| key_identity=[^|]*?(?= \||$)", "", sig) for uid, sig in signatures.items()}


def _stored_before_declared_form(signatures: Dict[str, str]) -> Dict[str, str]:
    """The signatures as a checkpoint written with Flink's key identity, before a key's bytes were made from the key
    as Flink holds it (``key_identity=flink`` for every declared key type) stored them."""
    return {uid: sig.replace(f"key_identity={KEY_IDENTITY_DECLARED_FORM}", f"key_identity={KEY_IDENTITY}")
            for uid, sig in signatures.items()}


@pytest.mark.parametrize(
    "key_type",
    [Types.FLOAT(), Types.DOUBLE(), Types.TUPLE([Types.STRING(), Types.DOUBLE()]), Types.ROW_NAMED(["f"], [Types.FLOAT()])],
    ids=["float", "double", "tuple-with-double", "row-with-float"],
)
def test_state_keyed_by_float_or_double_stored_before_flinks_key_identity_is_refused(key_type: Any) -> None:
    """Such keys now have other bytes (``FLOAT`` rounded to 32 bits, an integral ``DOUBLE`` as a float), so the state
    would not be found: the restart is refused, naming why, never reset silently."""
    current = _signatures(key_type=key_type)
    assert f"key_identity={key_identity(key_type)}" in current["totals"]
    problems, _ = compare_signatures(_stored_before_key_identity(current), current)
    assert len(problems) == 1 and problems[0].startswith("operator 'totals': "), problems
    assert f"keys of type {key_type!r}" in problems[0] and "new checkpoint location" in problems[0], problems
    problems, merged = compare_signatures(current, current)  # written with Flink's key identity: no problem
    assert problems == [] and merged == current


def test_state_keyed_by_other_types_stored_before_flinks_key_identity_is_kept() -> None:
    """Keys of other declared types have the same bytes as before: the checkpoint starts and learns the part."""
    current = _signatures(key_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
    problems, merged = compare_signatures(_stored_before_key_identity(current), current)
    assert problems == []
    assert {uid: set(sig.split(" | ")) for uid, sig in merged.items()} == {
        uid: set(sig.split(" | ")) for uid, sig in current.items()
    }


ROW_ID_NAME = Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
DECLARED_FORM_TYPES = [
    ROW_ID_NAME,
    Types.ROW([Types.STRING()]),
    Types.TUPLE([Types.STRING(), Types.ROW([Types.LONG()])]),
    Types.BIG_DEC(),
    Types.BIG_INT(),
    Types.SQL_TIMESTAMP(),
    Types.LIST(Types.INT()),
]


@pytest.mark.parametrize("key_type", DECLARED_FORM_TYPES, ids=repr)
def test_state_keyed_by_a_row_or_a_type_of_unknown_bytes_stored_before_the_declared_form_is_refused(key_type: Any) -> None:
    """A key of such a type now has the bytes of the key as Flink holds it (a ``ROW`` key a ``Row`` with the type's
    names, whatever form the selector returned; a ``BIG_DEC`` key as its type codes it), where a checkpoint written
    before held the bytes of the form returned: one key's state would not be found or would split. The restart is
    refused, naming the change and what to do; a checkpoint written before Flink's key identity is refused too."""
    current = _signatures(key_type=key_type)
    assert f"key_identity={KEY_IDENTITY_DECLARED_FORM}" in current["totals"]
    for stored in (_stored_before_declared_form(current), _stored_before_key_identity(current)):
        problems, _ = compare_signatures(stored, current)
        assert len(problems) == 1 and problems[0].startswith("operator 'totals': "), problems
        assert f"keys of type {key_type!r}" in problems[0] and "new checkpoint location" in problems[0], problems
    problems, _ = compare_signatures(_stored_before_declared_form(current), current)
    assert f"key_identity flink -> {KEY_IDENTITY_DECLARED_FORM}" in problems[0]
    assert "form the key selector returned them in" in problems[0]
    problems, merged = compare_signatures(current, current)
    assert problems == [] and merged == current


@pytest.mark.parametrize(
    "key_type",
    [STRING, Types.LONG(), Types.DOUBLE(), Types.CHAR(), Types.TUPLE([Types.STRING(), Types.FLOAT()]),
     Types.PICKLED_BYTE_ARRAY()],
    ids=repr,
)  # fmt: skip
def test_state_keyed_by_types_whose_bytes_did_not_change_is_kept(key_type: Any) -> None:
    """Basic types and tuples of them: every key has the bytes it had (the key as Flink codes it, or as returned
    where Flink cannot serialize it), so a checkpoint written before starts."""
    current = _signatures(key_type=key_type)
    assert f"key_identity={KEY_IDENTITY}" in current["totals"] and key_identity(key_type) == KEY_IDENTITY
    problems, merged = compare_signatures(current, current)
    assert problems == [] and merged == current


def _spark_commit(checkpoint: Path) -> None:
    """What Spark's commit log of a checkpoint that ran a batch holds (its contents are not read)."""
    (checkpoint / "spark" / "commits").mkdir(parents=True)
    (checkpoint / "spark" / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}\n')


def test_the_apply_in_pandas_with_state_executor_records_and_checks_the_signatures(tmp_path: Path) -> None:
    """Its first start records the signatures; a restart with the same operators starts, one with an incompatible
    operator is refused naming it and the change (the foreachBatch driver's check, through the same code)."""
    check_checkpoint(str(tmp_path), _plan())
    meta = read_meta(str(tmp_path))
    assert meta == {"backend": "apply_in_pandas_with_state", "operators": BASE}
    _spark_commit(tmp_path)
    check_checkpoint(str(tmp_path), _plan(map_fn=lambda e: (e[0].upper(), e[1])))  # a changed body: compatible
    with pytest.raises(StateError, match=r"operator 'totals': .*TumblingEventTimeWindows\(20000, 0\).*new checkpoint location"):
        check_checkpoint(str(tmp_path), _plan(size_s=20))
    assert read_meta(str(tmp_path)) == meta


@pytest.mark.parametrize("key_type", [Types.FLOAT(), Types.DOUBLE()], ids=["float", "double"])
def test_the_apply_in_pandas_with_state_executor_refuses_float_keys_of_a_checkpoint_without_signatures(
    tmp_path: Path, key_type: Any
) -> None:
    """A checkpoint it ran before it kept signatures held its keys as Python did: keys of a declared FLOAT or DOUBLE
    type are refused (their bytes changed, their state would not be found), others start and are recorded."""
    _spark_commit(tmp_path)
    with pytest.raises(StateError, match=rf"operator 'totals': its state holds keys of type {key_type!r} as Python held them"):
        check_checkpoint(str(tmp_path), _plan(key_type=key_type))
    check_checkpoint(str(tmp_path), _plan())  # STRING keys: the same bytes as before
    assert read_meta(str(tmp_path))["operators"] == BASE


def test_the_apply_in_pandas_with_state_executor_refuses_row_keys_stored_before_the_declared_form(tmp_path: Path) -> None:
    """The same check on the other executor: its checkpoint's ``ROW``-keyed state, written when a key's bytes were
    those of the form the selector returned, is refused at start naming the change."""
    stored = _stored_before_declared_form({uid: s for uid, s in _signatures(key_type=ROW_ID_NAME).items()})
    write_meta(str(tmp_path), {"backend": "apply_in_pandas_with_state", "operators": stored})
    _spark_commit(tmp_path)
    with pytest.raises(StateError, match=r"operator 'totals': its state holds keys of type .* by the bytes of the form"):
        check_checkpoint(str(tmp_path), _plan(key_type=ROW_ID_NAME))
    assert read_meta(str(tmp_path))["operators"] == stored


def test_each_executor_refuses_the_other_executors_checkpoint(tmp_path: Path) -> None:
    write_meta(str(tmp_path), {"state_partitions": 2, "vectorize": False, "operators": BASE})
    with pytest.raises(StateError, match="written by the foreachBatch executor"):
        check_checkpoint(str(tmp_path), _plan())
