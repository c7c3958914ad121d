"""DeltaSink's API and the pure parts of the Delta executor code (no JVM): commit metadata, offsets, steps."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pyspark_flinkish.common import Types
from pyspark_flinkish.core.errors import InvalidArgumentError, InvalidTypeError, UnsupportedFeatureError
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors import DeltaSink
from pyspark_flinkish.spark import delta_commits, delta_source


def test_builder_is_immutable_and_comparable() -> None:
    base = DeltaSink.for_path("/lake/t")
    merged = base.with_merge_keys("k", "start").with_partition_columns("day")
    assert base.merge_keys == () and base.partition_by == ()
    assert merged == DeltaSink.for_path("/lake/t", partition_by=["day"], merge_keys=["k", "start"]).build()
    assert hash(merged) == hash(DeltaSink("/lake/t", None, ("day",), ("k", "start")))
    assert repr(merged) == "DeltaSink.for_path('/lake/t').with_partition_columns('day',).with_merge_keys('k', 'start')"
    assert DeltaSink.for_table("db.t").target == "table db.t"


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: DeltaSink(), InvalidArgumentError),
        (lambda: DeltaSink("/p", "t"), InvalidArgumentError),
        (lambda: DeltaSink.for_path(""), InvalidTypeError),
        (lambda: DeltaSink.for_path("/p").with_merge_keys(), InvalidArgumentError),
        (lambda: DeltaSink.for_path("/p", merge_keys=["k", "k"]), InvalidArgumentError),
        (lambda: DeltaSink.for_path("/p", partition_by=[3]), InvalidTypeError),
    ],
)
def test_invalid_configurations_fail_at_construction(make, error) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error):
        make()


def test_local_engine_rejects_delta_with_a_hint() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.LONG()]))
    with pytest.raises(UnsupportedFeatureError, match="get_execution_environment\\(spark\\)"):
        stream.sink_to(DeltaSink.for_path("/p"))
    with pytest.raises(UnsupportedFeatureError, match="JVM-free engine has no Delta reader"):
        env.from_delta("/p")


def test_commit_metadata_round_trip() -> None:
    text = delta_commits.commit_metadata(-(2**63), 7, "app")
    assert delta_commits.parse_watermark(text) == -(2**63)
    assert delta_commits.parse_watermark(delta_commits.commit_metadata(None, 7, "app")) is None
    assert delta_commits.parse_watermark(None) is None
    assert delta_commits.parse_watermark("not json") is None
    assert delta_commits.parse_watermark('{"other": 1}') is None


def test_app_id_uses_the_query_id_of_the_checkpoint(tmp_path) -> None:  # type: ignore[no-untyped-def]
    fallback = delta_commits.app_id(str(tmp_path), "gold")
    assert fallback.startswith("flinkish-") and fallback.endswith("-gold")
    (tmp_path / "spark").mkdir()
    (tmp_path / "spark" / "metadata").write_text('{"id":"1234-abcd"}')
    assert delta_commits.app_id(str(tmp_path), "gold") == "flinkish-1234-abcd-gold"


@pytest.mark.parametrize(
    ("offset", "through"),
    [
        ({"reservoirVersion": 5, "index": -1}, 4),  # base index: nothing of 5 yet
        ({"reservoirVersion": 5, "index": 0}, 4),  # part of 5: its watermark waits
        ({"reservoirVersion": 5, "index": 2**63 - 101}, 5),  # end index: all of 5
        ({"reservoirVersion": 5, "index": -1, "isStartingVersion": True}, 4),
    ],
)
def test_consumed_through(offset, through) -> None:  # type: ignore[no-untyped-def]
    assert delta_source.consumed_through(offset) == through


def test_read_offset_finds_the_table_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    offsets = tmp_path / "spark" / "offsets"
    offsets.mkdir(parents=True)
    (offsets / "3").write_text('v1\n{"batchWatermarkMs":0}\n{"logOffset":2}\n{"sourceVersion":1,"reservoirId":"t-1","reservoirVersion":4,"index":-1}\n')
    assert delta_source.read_offset(str(tmp_path), 3, "t-1") == {"sourceVersion": 1, "reservoirId": "t-1", "reservoirVersion": 4, "index": -1}
    assert delta_source.read_offset(str(tmp_path), 3, "other") is None
    assert delta_source.read_offset(str(tmp_path), 4, "t-1") is None
    # through the checkpoint's storage layer: a URI as Spark gives it (a plain open() never found these, so the
    # watermark of a from_delta job whose checkpoint is not a local path never advanced)
    assert delta_source.read_offset(tmp_path.as_uri(), 3, "t-1") == {
        "sourceVersion": 1, "reservoirId": "t-1", "reservoirVersion": 4, "index": -1
    }


def test_plan_steps() -> None:
    #  versions:   2: rows, W 10 | 3: rows | 4: no rows, W 30 | 5: rows, partly consumed
    #  steps:      rows of 2, then 10 | rows of 3, then 30 | rows of 5 (its watermark waits for the next batch)
    assert delta_source.plan_steps(1, 4, [2, 3, 5], {2: 10, 3: None, 4: 30}) == [([2], 10), ([3, 4], 30), ([5], None)]
    assert delta_source.plan_steps(1, 3, [], {2: 10, 3: 20}) == [([2, 3], 20)]  # no rows: one step, the last watermark
    assert delta_source.plan_steps(3, 3, [4], {}) == [([4], None)]  # a partly consumed version: rows, no watermark
    assert delta_source.plan_steps(3, 3, [], {}) == [([], None)]


def test_connector_does_not_import_pyspark() -> None:
    code = (
        "import sys; sys.modules['pyspark'] = None\n"
        "from pyspark_flinkish.datastream.connectors import DeltaSink\n"
        "import pyspark_flinkish.spark.delta_source as d\n"
        "DeltaSink.for_path('/p').with_merge_keys('k')\n"
        "print(d.plan_steps(0, 1, [1], {1: 5}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr


def test_parse_commit() -> None:
    meta = delta_commits.commit_metadata(7, 3, "flinkish-q-out")
    assert delta_commits.parse_commit(meta) == ("flinkish-q-out", 3)
    assert delta_commits.parse_commit(None) is None
    assert delta_commits.parse_commit("a user's own metadata") is None
    assert delta_commits.parse_commit('{"flinkish": {"batch_id": "3", "app_id": "a"}}') is None  # not a batch id


def test_last_committed_batch_reads_a_local_log_newest_first(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The log as Delta writes it: one JSON action per line, a ``commitInfo`` among them; other writers' commits
    and other apps' commits are passed over; a table without a log has no committed batch."""
    import json

    log = tmp_path / "t" / "_delta_log"
    assert delta_commits.last_committed_batch(None, str(tmp_path / "t"), None, "a") is None
    log.mkdir(parents=True)
    commits = [
        {"operation": "CREATE TABLE"},
        {"operation": "WRITE", "userMetadata": delta_commits.commit_metadata(None, 0, "a")},
        {"operation": "WRITE", "userMetadata": delta_commits.commit_metadata(None, 1, "a")},
        {"operation": "WRITE", "userMetadata": delta_commits.commit_metadata(None, 5, "b")},
        {"operation": "WRITE"},  # another writer's plain append
    ]
    for v, info in enumerate(commits):
        lines = [{"add": {"path": f"part-{v}.parquet"}}, {"commitInfo": info}]
        (log / f"{v:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    (log / "00000000000000000010.checkpoint.parquet").write_bytes(b"")  # not a commit file
    assert delta_commits.last_committed_batch(None, str(tmp_path / "t"), None, "a") == 1
    assert delta_commits.last_committed_batch(None, "file:" + str(tmp_path / "t"), None, "b") == 5
    assert delta_commits.last_committed_batch(None, str(tmp_path / "t"), None, "c") is None
