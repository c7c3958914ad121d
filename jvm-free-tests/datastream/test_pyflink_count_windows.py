"""PyFlink's count windows (``CountTumblingWindowAssigner`` / ``CountSlidingWindowAssigner``) on the local engine,
compared with real PyFlink 2.3.0's outputs (``pyflink_count_windows.json``; see ``count_window_cases.py``), and
``count_window(size, slide)``, which follows Java Flink's rule instead (docs/differences.md)."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest
from count_window_cases import Elements, build, load

from pyspark_flinkish.core.codec import decode_snapshot, encode_snapshot
from pyspark_flinkish.core.errors import InvalidArgumentError
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.window import (
    CountSlidingWindowAssigner,
    CountTrigger,
    CountTumblingWindowAssigner,
    CountWindow,
    PurgingTrigger,
)
from pyspark_flinkish.testing import WindowHarness

ORACLE = load()
CASES = {c["name"]: c for c in ORACLE["cases"]}


def _run(case: Dict[str, Any], batches: int = 1, java_rule: bool = False) -> List[Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    out: List[Any] = []
    build(env, case, ORACLE["input"], batches, java_rule).add_sink(out.append)
    env.execute("count windows")
    return [list(r) for r in out]


def test_oracle_is_real_pyflink_output() -> None:
    assert ORACLE["pyflink_version"] == "2.3.0"
    assert ORACLE["command"].startswith("benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_count_windows.py")
    assert all(c["output"] for c in ORACLE["cases"])


@pytest.mark.parametrize("batches", [1, 4])
@pytest.mark.parametrize("name", sorted(CASES))
def test_pyflink_count_assigners_match_pyflink(name: str, batches: int) -> None:
    """count_window cases run with PyFlink's assigner (what PyFlink's count_window builds)."""
    assert _run(CASES[name], batches) == CASES[name]["output"]


def test_count_window_tumbling_emits_pyflinks_windows_as_global_windows() -> None:
    case = CASES["count_window_tumbling_3"]
    got = _run(case, java_rule=True)
    assert [[k, v] for k, _, v in got] == [[k, v] for k, _, v in case["output"]]
    assert {w for _, w, _ in got} == {None}  # GlobalWindow (Java), not CountWindow (PyFlink)


def test_count_window_sliding_follows_java_not_pyflink() -> None:
    case = CASES["count_window_sliding_3_2"]
    got = _run(case, java_rule=True)
    assert got != case["output"]
    # Java: CountTrigger.of(2) + CountEvictor.of(3) fires every 2 elements over the last 3, partial first window included
    assert [v for k, _, v in got if k == "a"] == [[1, 2], [2, 3, 4], [4, 5, 6], [6, 7, 8]]
    assert [v for k, _, v in case["output"] if k == "a"] == [[1, 2, 3], [3, 4, 5], [5, 6, 7]]


def test_count_window_ids_and_assigner_state_survive_a_snapshot() -> None:
    snapshot = {
        "state": {("slide-count-assigner", CountWindow(0)): 3, ("__window_contents", CountWindow(7)): [1, 2]},
        "event_timers": [],
        "processing_timers": [],
    }
    assert decode_snapshot(encode_snapshot(snapshot, allow_pickle=False), allow_pickle=False) == snapshot


@pytest.mark.parametrize(
    "make",
    [
        lambda: CountTumblingWindowAssigner.of(0),
        lambda: CountSlidingWindowAssigner.of(0, 1),
        lambda: CountSlidingWindowAssigner.of(3, 0),
        lambda: CountSlidingWindowAssigner.of(3, -1),
    ],
)
def test_count_assigners_need_positive_counts(make: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="positive int"):
        make()


def test_count_assigners_repr_and_default_trigger() -> None:
    a = CountSlidingWindowAssigner.of(3, 2)
    assert repr(a) == "CountSlidingWindowAssigner(3, 2)"
    assert repr(a.get_default_trigger()) == repr(CountTumblingWindowAssigner.of(3).get_default_trigger())
    assert a == CountSlidingWindowAssigner.of(3, 2) and a != CountSlidingWindowAssigner.of(3, 1)
    assert not a.is_event_time()


def _contents_windows(harness: WindowHarness) -> List[Any]:
    (snapshot,) = harness.snapshot().values()
    return sorted(ns.id for name, ns in snapshot["state"] if name == "__window_contents")


def test_fired_count_windows_keep_their_contents_as_in_pyflink_unless_the_trigger_purges() -> None:
    """PyFlink's CountTrigger fires without purging and a CountWindow is never cleaned up, so fired windows stay in
    state; PurgingTrigger.of(CountTrigger.of(size)) gives the same firings and keeps only open windows."""
    outputs = []
    for trigger in (None, PurgingTrigger.of(CountTrigger.of(3))):
        h = WindowHarness.process(CountSlidingWindowAssigner.of(3, 2), Elements(), lambda e: e[0], trigger=trigger)
        for v in range(1, 9):
            h.process_element(("a", v, 0))
        outputs.append(h.extract_output_values())
        if trigger is None:
            assert _contents_windows(h) == [0, 1, 2, 3]  # 0-2 fired, 3 holds 7 and 8
        else:
            assert _contents_windows(h) == [3]
    assert outputs[0] == outputs[1] == [["a", 0, [1, 2, 3]], ["a", 1, [3, 4, 5]], ["a", 2, [5, 6, 7]]]
