"""Partitioning calls and operator settings against real PyFlink 2.3.0 (``pyflink_partitioning.json``, made by
``benchmarks/pyflink_partitioning.py``): the pipelines there, built here with pyspark_flinkish (the same code, only
the imports differ), give Flink's results on the local engine; a ``KeyedStream`` refuses what PyFlink refuses,
with its messages; invalid settings are refused as Flink refuses them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from pyspark_flinkish.common import Types
from pyspark_flinkish.core.errors import InvalidArgumentError, InvalidPipelineError, UserFunctionError
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeySelector, Partitioner, RuntimeContext

ORACLE = json.loads(Path(__file__).with_name("pyflink_partitioning.json").read_text())
INPUT = [tuple(v) for v in ORACLE["input"]]
ROW = Types.TUPLE([Types.STRING(), Types.INT()])


class Modulo(Partitioner):  # type: ignore[type-arg]
    def partition(self, key: Any, num_partitions: int) -> int:
        return key % num_partitions  # type: ignore[no-any-return]


class Second(KeySelector):  # type: ignore[type-arg]
    def get_key(self, value: Any) -> Any:
        return value[1]


def jobs() -> Dict[str, Callable[[Any], Any]]:
    """``benchmarks/pyflink_partitioning.py``'s ``jobs()``, with this package's imports."""
    row = ROW
    return {
        "shuffle": lambda ds: ds.shuffle().map(lambda v: (v[0], v[1] * 10), output_type=row),
        "rebalance": lambda ds: ds.rebalance().map(lambda v: (v[0], v[1] * 10), output_type=row),
        "rescale": lambda ds: ds.rescale().map(lambda v: (v[0], v[1] * 10), output_type=row),
        "forward": lambda ds: ds.map(lambda v: v, output_type=row).forward().map(lambda v: (v[0], v[1] * 10), output_type=row),
        "partition_custom": lambda ds: ds.partition_custom(lambda k, n: k % n, lambda v: v[1]).map(
            lambda v: (v[0], v[1] * 10), output_type=row
        ),
        "partition_custom_objects": lambda ds: ds.partition_custom(Modulo(), Second()).key_by(lambda v: v[0]).sum(1),
    }


def _env(parallelism: int = 2) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


def test_partitioned_pipelines_print_flinks_results(capsys: pytest.CaptureFixture[str]) -> None:
    """All jobs in one environment, each printing under its name, as the oracle ran them (Flink's print at
    parallelism 2 adds the subtask: ``name:2> value``, which after these partitionings Flink chooses round robin from
    a random start, so the package refuses such a print: here the sinks print at parallelism 1, and the values are
    compared)."""
    env = _env()
    for name, build in jobs().items():
        build(env.from_collection(INPUT, type_info=ROW)).print(name).set_parallelism(1)
    env.execute("partitioning")
    printed: Dict[str, List[str]] = {name: [] for name in jobs()}
    for line in capsys.readouterr().out.splitlines():
        name, sep, value = line.partition("> ")
        if sep and name in printed:
            printed[name].append(value)
    flink = {name: case["values"] for name, case in ORACLE["results"].items()}
    # a key's records reached the rolling sum from two partitions (by value parity): Flink leaves their interleaving
    # open (it printed (b,5), (b,7) for b's 2 and 5), so only each key's final sum is Flink's result
    rolling = "partition_custom_objects"
    assert _final_sums(printed.pop(rolling)) == _final_sums(flink.pop(rolling)) == {"a": 10, "b": 7, "c": 4}
    assert {name: sorted(values) for name, values in printed.items()} == flink


def _final_sums(printed: List[str]) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for text in printed:
        key, value = text.strip("()").split(",")
        out[key] = max(out.get(key, 0), int(value))
    return out


@pytest.mark.parametrize("call", sorted(ORACLE["keyed_stream_refusals"]))
def test_keyed_stream_refuses_partitioning_and_operator_settings_as_pyflink(call: str) -> None:
    keyed = _env().from_collection(INPUT, type_info=ROW).key_by(lambda v: v[0])
    args: Dict[str, List[Any]] = {
        "partition_custom": [lambda k, n: 0, lambda v: v[0]], "set_uid_hash": ["0" * 32], "set_buffer_timeout": [5],
        "slot_sharing_group": ["group"], "set_max_parallelism": [4],
    }  # fmt: skip
    expected = ORACLE["keyed_stream_refusals"][call]
    with pytest.raises(Exception, match=re.escape(expected.split(": ", 1)[1])) as info:
        getattr(keyed, call)(*args.get(call, []))
    assert f"{type(info.value).__name__}: {info.value}" == expected


def test_keyed_stream_has_no_description_to_set() -> None:
    """PyFlink fails too (a Py4J error: Java's KeyedStream has no setDescription)."""
    keyed = _env().from_collection(INPUT, type_info=ROW).key_by(lambda v: v[0])
    with pytest.raises(Exception, match="Set description for KeyedStream is not supported"):
        keyed.set_description("d")


def test_operator_settings_are_accepted_on_operators_sources_and_sinks_and_checked_as_flink_does() -> None:
    env = _env()
    source = env.from_collection(INPUT, type_info=ROW)
    mapped = source.map(lambda v: v, output_type=ROW)
    for stream in (source, mapped):
        same = (
            stream.slot_sharing_group("g").disable_chaining().start_new_chain().set_description("d")
            .set_buffer_timeout(-1).force_non_parallel().set_uid_hash("0123456789abcdef0123456789ABCDEF")
        )  # fmt: skip
        assert same is stream
    sink = mapped.add_sink(lambda v: None)
    assert sink.set_description("d").disable_chaining().slot_sharing_group("g").set_uid_hash("0" * 32) is sink
    # Flink's argument checks (its Java IllegalArgumentException texts, recorded in the oracle)
    uid_hash_error = ORACLE["setting_errors"]["set_uid_hash('h')"]
    assert "Node hash must be a 32 character String that describes a hex code" in uid_hash_error
    with pytest.raises(InvalidArgumentError, match="Node hash must be a 32 character String that describes a hex code"):
        mapped.set_uid_hash("h")
    with pytest.raises(InvalidArgumentError, match="Node hash"):
        sink.set_uid_hash("h")
    assert ORACLE["setting_errors"]["set_buffer_timeout(-2)"] != "(accepted)"
    assert ORACLE["setting_errors"]["set_buffer_timeout(-1)"] == "(accepted)"
    with pytest.raises(InvalidArgumentError, match=">= -1"):
        mapped.set_buffer_timeout(-2)
    # what the settings leave alone: the job's results
    with mapped.execute_and_collect() as values:
        assert sorted(values) == sorted(INPUT)


@pytest.mark.parametrize("call", ["shuffle", "rebalance", "rescale", "forward"])
def test_a_partitioned_stream_has_no_operator_to_set(call: str) -> None:
    """PyFlink fails on these (a Py4J error: Java's partitioned DataStream has no such method)."""
    partitioned = getattr(_env().from_collection(INPUT, type_info=ROW), call)()
    assert partitioned.get_type() is not None
    for setting, args in [("name", ["x"]), ("uid", ["x"]), ("set_parallelism", [2]), ("slot_sharing_group", ["g"])]:
        with pytest.raises(InvalidPipelineError, match="partitioned stream"):
            getattr(partitioned, setting)(*args)


def test_a_partition_outside_the_next_operators_parallelism_fails_the_job_as_in_flink() -> None:
    assert "ArrayIndexOutOfBoundsException: Index 7 out of bounds for length 2" in ORACLE["partition_out_of_range"]
    ds = _env().from_collection([1, 2], type_info=Types.INT()).partition_custom(lambda k, n: n + 5, lambda v: v)
    with pytest.raises(UserFunctionError, match=r"partition_custom: the partitioner returned 7 .* \[0, 2\)"):
        list(ds.execute_and_collect())


def test_partition_custom_calls_open_and_close_and_gives_the_partitioner_the_parallelism() -> None:
    seen: List[Any] = []

    class Recording(Partitioner):  # type: ignore[type-arg]
        def open(self, runtime_context: RuntimeContext) -> None:
            seen.append("open")

        def partition(self, key: Any, num_partitions: int) -> int:
            seen.append((key, num_partitions))
            return 0

        def close(self) -> None:
            seen.append("close")

    with _env(3).from_collection([1, 2], type_info=Types.INT()).partition_custom(Recording(), lambda v: -v).execute_and_collect() as out:
        assert list(out) == [1, 2]
    assert seen == ["open", (-1, 3), (-2, 3), "close"]
    with pytest.raises(TypeError, match="partitioner should be type of Partitioner or a callable"):
        _env().from_collection([1]).partition_custom(3, lambda v: v)
    with pytest.raises(TypeError, match="key_selector should be type of KeySelector or a callable"):
        _env().from_collection([1]).partition_custom(lambda k, n: 0, "v")
