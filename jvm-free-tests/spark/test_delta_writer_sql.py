"""The Delta writer's SQL and session settings (``spark/delta.py``, ``spark/delta_commits.py``) without a JVM: the
statements it sends (what lets it run on Spark Connect without Delta Connect) and the settings it changes on a
shared (Connect) session, restored after each write."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from pyspark_flinkish.common import Types
from pyspark_flinkish.datastream.connectors.delta import DeltaSink
from pyspark_flinkish.spark.delta import SKIP_EMPTY_COMMITS_CONF, USER_METADATA_CONF, DeltaBatchWriter
from pyspark_flinkish.spark.delta_commits import table_identifier


class RecordingConf:
    def __init__(self, values: Dict[str, str]) -> None:
        self.values = dict(values)
        self.seen: List[Dict[str, str]] = []

    def get(self, key: str, default: Optional[str] = None) -> Optional[str]:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


class RecordingSession:
    def __init__(self, conf: Dict[str, str]) -> None:
        self.conf = RecordingConf(conf)
        self.statements: List[str] = []

    def sql(self, statement: str) -> None:
        self.statements.append(statement)
        self.conf.seen.append(dict(self.conf.values))


def test_table_identifier_quotes_a_path() -> None:
    assert table_identifier("/lake/a`b", None) == "delta.`/lake/a``b`"
    assert table_identifier(None, "main.gold.t") == "main.gold.t"


def test_create_table_sql_has_the_schema_partitions_and_change_data_feed() -> None:
    from pyspark_flinkish.spark.types import to_spark_type

    row = Types.ROW_NAMED(["k", "n`x", "v"], [Types.STRING(), Types.LONG(), Types.DOUBLE()])
    writer = DeltaBatchWriter(DeltaSink.for_path("/lake/t", partition_by=["k"]), row)
    session = RecordingSession({})
    writer._ensure_table(session, to_spark_type(row))
    writer._ensure_table(session, to_spark_type(row))  # once per writer
    assert session.statements == [
        "CREATE TABLE IF NOT EXISTS delta.`/lake/t` (`k` string, `n``x` bigint, `v` double) USING delta "
        "PARTITIONED BY (`k`) TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"
    ]


def test_settings_on_a_shared_session_are_restored_after_the_write() -> None:
    """Spark Connect (no newSession()): a MERGE's userMetadata and recording an empty commit are set on the job's
    session for the write only, and every setting gets its previous value back (or is unset)."""
    writer = DeltaBatchWriter(DeltaSink.for_path("/lake/t"), Types.LONG())
    session = RecordingSession({SKIP_EMPTY_COMMITS_CONF: "true", "other": "1"})
    writer._session, writer._shared = session, True
    with writer._settings(session, {USER_METADATA_CONF: "m", SKIP_EMPTY_COMMITS_CONF: "false"}):
        session.sql("MERGE ...")
    assert session.conf.seen == [{SKIP_EMPTY_COMMITS_CONF: "false", "other": "1", USER_METADATA_CONF: "m"}]
    assert session.conf.values == {SKIP_EMPTY_COMMITS_CONF: "true", "other": "1"}


def test_settings_on_the_writers_own_session_leave_empty_commits_recorded() -> None:
    """A classic session: the writer's own session records empty commits from its start (not per write); the
    MERGE's userMetadata is unset after the write."""
    writer = DeltaBatchWriter(DeltaSink.for_path("/lake/t"), Types.LONG())
    session: Any = RecordingSession({SKIP_EMPTY_COMMITS_CONF: "false"})
    writer._session = session
    with writer._settings(session, {USER_METADATA_CONF: "m", SKIP_EMPTY_COMMITS_CONF: "false"}):
        session.sql("MERGE ...")
    assert session.conf.seen == [{SKIP_EMPTY_COMMITS_CONF: "false", USER_METADATA_CONF: "m"}]
    assert session.conf.values == {SKIP_EMPTY_COMMITS_CONF: "false"}


def test_a_writer_travels_to_the_connect_server_without_its_session_and_lock() -> None:
    """On Connect the driver, with its sinks' writers, is pickled to the server's Python: a writer that already has a
    session (or a lock, which does not pickle) arrives without them and makes its own there."""
    import pickle

    writer = DeltaBatchWriter(DeltaSink.for_path("/lake/t"), Types.LONG())
    writer._session, writer._shared = RecordingSession({}), True
    copy = pickle.loads(pickle.dumps(writer))
    assert copy._session is None and copy._shared is False and copy.sink.path == "/lake/t"
    with copy._lock:  # a lock of its own
        assert not writer._lock.locked()


class ConfWithGetAll(RecordingConf):
    @property
    def getAll(self) -> Dict[str, str]:  # noqa: N802 (pyspark's name)
        return dict(self.values)


class ClassicSession(RecordingSession):
    def __init__(self, conf: Dict[str, str]) -> None:
        super().__init__(conf)
        self.conf = ConfWithGetAll(conf)
        self.children: List[Any] = []

    def newSession(self) -> Any:  # noqa: N802 (pyspark's name)
        child = ClassicSession({"spark.app.name": self.conf.values.get("spark.app.name", "")})
        self.children.append(child)
        return child


def test_the_writers_own_session_keeps_the_jobs_file_system_settings() -> None:
    """``spark.conf.set("fs.s3a.access.key", ...)`` on the job's session reaches Spark's s3a for the job's queries;
    the writer's ``newSession()`` started without it and the table on s3a:// was written with no credentials (found
    against S3Proxy, tests/s3). Its ``fs.*`` settings are carried over, nothing else."""
    job = ClassicSession({"spark.app.name": "j", "fs.s3a.endpoint": "http://127.0.0.1:9000", "fs.s3a.access.key": "k",
                          "spark.sql.shuffle.partitions": "2"})
    writer = DeltaBatchWriter(DeltaSink.for_path("s3a://b/t"), Types.LONG())
    own = writer._own_session(job)
    assert own is job.children[0] and writer._own_session(job) is own
    assert own.conf.values == {"spark.app.name": "j", "fs.s3a.endpoint": "http://127.0.0.1:9000", "fs.s3a.access.key": "k",
                               SKIP_EMPTY_COMMITS_CONF: "false"}
