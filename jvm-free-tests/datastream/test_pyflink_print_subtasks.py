"""``print()`` at a print sink parallelism above 1 on the local engine, compared with real PyFlink 2.3.0
(``pyflink_print_subtasks.json``, written by ``benchmarks/pyflink_print_subtasks.py`` from the jobs of
``print_subtask_cases.py``): each line begins with the number of the sink subtask that printed it, as Flink's
``PrintSinkOutputWriter`` writes it, where Flink decides that subtask (the key's after a keyed operator, every
instance after ``broadcast()``); where Flink's choice is round robin from a random start, the job is refused when it
starts, naming the concept and ``set_parallelism(1)``."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import print_subtask_cases as cases
import pytest

from pyspark_flinkish.common import Types
from pyspark_flinkish.core.errors import UnsupportedFeatureError
from pyspark_flinkish.core.print_lines import print_prefix
from pyspark_flinkish.datastream import StreamExecutionEnvironment

ORACLE = cases.recorded()
API = SimpleNamespace(Types=Types)
REFUSED = {
    "keyed p1 sink p3": "the keyed operator 'KeyedProcess' before it runs at parallelism 1",
    "keyed p3 sink p2": "the keyed operator 'KeyedProcess' before it runs at parallelism 3",
    "broadcast untyped p2 sink p3": "through a map to strings at the environment's parallelism (2)",
    "map p2": "its records come from 'Collection', which is not a one-input keyed operator",  # through the map
    "map p3": "its records come from 'Collection', which is not a one-input keyed operator",
    "map p1 sink p2": "its records come from 'Map', which is not a one-input keyed operator",
}
"""The cases whose subtask Flink chooses round robin from a random start: what the refusal names."""


def environment(parallelism: int) -> Any:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


def test_the_oracle_is_real_pyflink_output() -> None:
    doc = cases.json.loads(cases.ORACLE.read_text(encoding="utf-8"))
    assert doc["pyflink_version"] == "2.3.0"
    assert doc["command"].startswith("benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_print_subtasks.py")
    assert list(ORACLE) == list(cases.CASES)
    assert ORACLE["keyed p2 sink p1"][0] == "(a,1)"  # parallelism 1: no prefix
    # the recorder ran every job three times: exactly the refused cases printed different lines from run to run
    assert set(doc["variants"]) == set(REFUSED)


@pytest.mark.parametrize("name", [n for n in cases.CASES if n not in REFUSED])
def test_printed_lines_match_pyflink(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    cases.job(API, environment, name).execute(name)
    assert sorted(capsys.readouterr().out.splitlines()) == ORACLE[name]


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_print_whose_subtask_flink_does_not_determine_is_refused(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Flink's lines carry a subtask prefix (so printing without one, or with a guessed one, would differ); the
    package refuses the job before it runs, naming why and the alternative."""
    assert all(re.match(r"\d+> ", line) for line in ORACLE[name]), ORACLE[name]
    env = cases.job(API, environment, name)
    with pytest.raises(UnsupportedFeatureError, match=r"^print\(\) at parallelism \d: Flink begins each line") as info:
        env.execute(name)
    assert REFUSED[name] in str(info.value) and "set_parallelism(1) on the print sink" in str(info.value)
    assert capsys.readouterr().out == ""


def test_the_prefix_is_flinks_print_sink_output_writers() -> None:
    assert print_prefix(None, 1, None) == ""
    assert print_prefix("id", 1, None) == "id> "
    assert print_prefix(None, 3, 1) == "2> "
    assert print_prefix("id", 3, 0) == "id:1> "
    with pytest.raises(ValueError, match="needs the subtask"):
        print_prefix(None, 2, None)


@pytest.mark.parametrize(
    ("partitioning", "refused"),
    [
        (lambda s: s.rebalance(), "rebalance() before 'Print'"),
        (lambda s: s.shuffle().map(lambda v: v), "shuffle() before 'Map'"),
        (lambda s: s.rescale().filter(lambda v: True), "rescale() before 'Filter'"),
        (lambda s: s.partition_custom(lambda k, n: 0, lambda v: v[0]), "its records come from 'PartitionCustom'"),
        (lambda s: s.forward(), None),
    ],
    ids=["rebalance", "shuffle-map", "rescale-filter", "partition_custom", "forward"],
)
def test_a_partitioning_call_after_the_keyed_operator_decides_the_subtask(
    partitioning: Any, refused: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """After ``shuffle``/``rebalance``/``rescale`` (random or round robin) or ``partition_custom`` (the partitioner's
    channel) the key's subtask is not the printing one: refused, naming the call; ``forward()`` keeps it."""
    env = environment(3)
    keyed = env.from_collection(cases.DATA, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    partitioning(keyed.key_by(lambda v: v[0], key_type=Types.STRING()).reduce(cases._sum)).print()
    if refused is None:
        env.execute()
        assert sorted(capsys.readouterr().out.splitlines()) == ORACLE["keyed p3"]
        return
    with pytest.raises(UnsupportedFeatureError, match="set_parallelism") as info:
        env.execute()
    assert refused in str(info.value), str(info.value)


def test_batch_runtime_mode_numbers_each_keys_final_value_by_its_subtask(capsys: pytest.CaptureFixture[str]) -> None:
    """In BATCH mode a rolling reduce emits each key's final value only, from the key's subtask as in STREAMING: the
    lines are the last of each key among the STREAMING ones Flink printed."""
    from pyspark_flinkish.datastream import RuntimeExecutionMode

    env = cases.job(API, environment, "keyed p3")
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.execute()
    got = sorted(capsys.readouterr().out.splitlines())
    assert got == ["1> (c,12)", "1> (g,10)", "2> (a,5)", "2> (b,8)", "2> (d,5)", "3> (e,7)", "3> (f,8)"]
    assert set(got) <= set(ORACLE["keyed p3"])


class OpaqueKey:
    """A key whose Java ``hashCode`` (of its pickle in PyFlink) the package cannot know."""

    def __init__(self, v: int) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpaqueKey) and other.v == self.v

    def __hash__(self) -> int:
        return hash(self.v)


def test_a_key_whose_subtask_the_package_cannot_compute_fails_naming_the_print(capsys: pytest.CaptureFixture[str]) -> None:
    env = environment(2)
    env.from_collection([1, 2]).key_by(lambda v: OpaqueKey(v)).reduce(lambda a, b: a + b).print()
    with pytest.raises(UnsupportedFeatureError, match=r"a print\(\) after it numbers its lines by the key's subtask"):
        env.execute()
    assert capsys.readouterr().out == ""


def test_print_takes_no_position_in_the_uids_of_the_nodes_after_it() -> None:
    """The lines node ``print()`` puts before its sink is not counted in the positions that name the nodes' state
    (``node_uids``): a job's stateful nodes without ``.uid(...)`` keep the uids they had when ``print()`` was a plain
    sink, so a checkpoint written then restores."""
    from pyspark_flinkish.datastream.plan import StatelessSpec, node_uids, topological

    def job(with_print: bool) -> Any:
        env = environment(1)
        ds = env.from_collection([1, 2, 3], type_info=Types.INT())
        if with_print:
            ds.print()
        else:
            ds.add_sink(print)
        ds.key_by(lambda v: v % 2).reduce(lambda a, b: a + b).add_sink(lambda v: None)
        order = topological(env._take_sinks())
        return [u for t, u in zip(order, node_uids(order)) if not (isinstance(t.spec, StatelessSpec) and t.spec.op == "print")], [
            u for t, u in zip(order, node_uids(order)) if isinstance(t.spec, StatelessSpec) and t.spec.op == "print"
        ]

    kept, lines = job(True)
    plain, none = job(False)
    assert kept == plain and not none
    assert len(lines) == 1 and lines[0] not in kept
