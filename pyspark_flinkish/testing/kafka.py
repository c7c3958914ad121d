"""A single-node Apache Kafka broker (KRaft mode) in its own JVM, for tests and demos.

The broker runs from the jars ``python -m pyspark_flinkish.spark.jars`` (``make jars``) fetched into
``<jars>/kafka/`` — never on Spark's classpath — as one process that is both broker and controller, on free
loopback ports, with its log directory and its own log file in a temporary directory::

    with KafkaBroker() as broker:
        broker.create_topic("events", partitions=4)
        broker.produce("events", [b'{"k": "a"}'], partition=0)
        ...   # spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
        broker.restart()   # same ports, same data: clients reconnect

``stop()`` (or leaving the ``with`` block, also on an exception) kills the JVM and removes the directory.
Only :mod:`kafka` (kafka-python) is imported, lazily, to wait for the broker and to administer it.
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from ..core.errors import FlinkishError
from .jvm_process import JvmProcess, free_port

__all__ = ["KafkaBroker", "KafkaBrokerError", "random_cluster_id"]

_LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
"""


class KafkaBrokerError(FlinkishError, RuntimeError):
    """The test broker could not be started, formatted or reached; the message holds its log's tail."""


def random_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding (what ``random-uuid`` prints).

    Like Kafka's ``Uuid.randomUuid()``, an id starting with ``-`` (one in 64) is drawn again: ``kafka-storage
    format -t -…`` would read it as an option and fail, so the broker would not start one time in 64.
    """
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not found.startswith("-"):
            return found


def broker_classpath(directory: Optional[Path] = None) -> List[str]:
    """The broker's jars (``<jars>/kafka/*.jar``); raises with the command to fetch them when they are missing."""
    from ..spark import jars

    found = jars.jars("kafka", directory)
    if not found:
        base = directory or jars.default_dir()
        msg = (
            f"the Kafka broker's jars are not in {base / 'kafka'}: run `make jars` "
            "(or `python -m pyspark_flinkish.spark.jars`; needs `mvn` and a Maven repository once), "
            "or point PYSPARK_FLINKISH_JARS at a folder that holds them"
        )
        raise KafkaBrokerError(msg)
    return found


class KafkaBroker(JvmProcess):
    """A single-node Kafka 4.x broker (combined broker and controller, KRaft) in its own JVM.

    Args:
        jars_dir: folder with the fetched jars (default: ``$PYSPARK_FLINKISH_JARS`` or ``<checkout>/.jars``).
        heap: the JVM's maximum heap (``-Xmx``).
        startup_timeout: seconds to wait for the broker to serve requests.
        java: the ``java`` executable (default: ``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``).
        properties: extra ``server.properties`` entries (they override the defaults).
        data_dir: a folder that keeps the broker's storage across ``stop()`` and later brokers (topics and
            records survive; ports are new at every ``start()``). Default: a temporary directory that ``stop()``
            removes.

    Records are never deleted by the broker (``log.retention.ms=-1``), whatever their timestamps: Kafka's time
    retention compares a record's own timestamp with the clock, so records produced with timestamps more than
    Kafka's default 7 days in the past would vanish at its next retention check. Pass ``properties=`` (or a
    topic ``config``) with ``retention.ms`` to test retention itself.

    Lifecycle: ``start()`` formats the storage (once) and starts the JVM, then waits until an admin client
    can list topics; ``restart()`` stops and starts it again on the same ports and log directory;
    ``stop()`` kills the JVM and deletes the temporary directory (never a ``data_dir``). The object is a
    context manager.
    """

    LOG_NAME = "broker.log"
    WHAT = "broker"

    def __init__(
        self,
        jars_dir: Optional[Path] = None,
        heap: str = "512m",
        startup_timeout: float = 90.0,
        java: Optional[str] = None,
        properties: Optional[Dict[str, str]] = None,
        data_dir: Optional[Path] = None,
    ) -> None:
        super().__init__(data_dir, java)
        self.jars_dir = jars_dir
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.extra_properties = dict(properties or {})
        self.port: Optional[int] = None
        self.controller_port: Optional[int] = None
        self._formatted = False

    # ------------------------------------------------------------------ properties
    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of the broker's client listener (for ``kafka.bootstrap.servers``)."""
        if self.port is None:
            msg = "the broker has not been started: call start() or use `with KafkaBroker() as broker:`"
            raise KafkaBrokerError(msg)
        return f"127.0.0.1:{self.port}"

    def server_properties(self) -> Dict[str, str]:
        if self.directory is None or self.port is None or self.controller_port is None:
            msg = "server_properties() before start(): the broker has no directory and ports yet"
            raise KafkaBrokerError(msg)
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.directory / "data"),
            "num.partitions": "1",
            "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "log.flush.interval.messages": "1",  # nothing acknowledged is lost when restart() kills the JVM
            # no time retention: Kafka ages a segment out by its records' own timestamps (CreateTime), and tests
            # produce records stamped in the past (1970, a fixed date); with Kafka's default (7 days, checked 30 s
            # after start and every 5 min) a check landing between a query planning its offsets and reading them
            # deleted them, and Spark failed with "Some data may have been lost" on a fresh topic
            "log.retention.ms": "-1",
            "log.retention.bytes": "-1",
        }
        props.update(self.extra_properties)
        return props

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> KafkaBroker:
        """Format the storage (first start only), start the JVM and wait until the broker serves."""
        if self.is_running:
            return self
        classpath = os.pathsep.join(broker_classpath(self.jars_dir))
        if self.directory is None:
            if self.data_dir is not None:
                self.data_dir.mkdir(parents=True, exist_ok=True)
                self.directory = self.data_dir
                self._formatted = (self.data_dir / "data" / "meta.properties").exists()
            else:
                self.directory = Path(tempfile.mkdtemp(prefix="flinkish-kafka-"))
            self.port, self.controller_port = free_port(), free_port()
            while self.controller_port == self.port:
                self.controller_port = free_port()
        try:
            props = self.directory / "server.properties"
            props.write_text("".join(f"{k}={v}\n" for k, v in self.server_properties().items()))
            (self.directory / "log4j2.properties").write_text(_LOG4J2)
            if not self._formatted:
                self._format(classpath, props)
            self._launch(classpath, props)
            self._wait_until_serving()
        except BaseException:
            self.stop()
            raise
        return self

    def _jvm(self, classpath: str) -> List[str]:
        assert self.directory is not None
        return [
            self.java,
            f"-Xmx{self.heap}",
            "-Xms64m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",  # starts faster, uses less CPU: a test broker carries little load
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.directory / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.directory}",
            "-cp",
            classpath,
        ]

    def _format(self, classpath: str, props: Path) -> None:
        assert self.directory is not None
        cmd = self._jvm(classpath) + ["kafka.tools.StorageTool", "format", "-t", random_cluster_id(), "-c", str(props)]
        with open(self.directory / "format.log", "wb") as out:
            result = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=120, check=False)
        if result.returncode != 0:
            log = (self.directory / "format.log").read_text(errors="replace")
            msg = f"formatting the Kafka broker's storage failed (exit code {result.returncode}):\n{log[-4000:]}"
            raise KafkaBrokerError(msg)
        self._formatted = True

    def _launch(self, classpath: str, props: Path) -> None:
        self._spawn(self._jvm(classpath) + ["kafka.Kafka", str(props)], stdin=subprocess.DEVNULL)

    def _wait_until_serving(self) -> None:
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError

        deadline = time.monotonic() + self.startup_timeout
        last: Optional[BaseException] = None
        while time.monotonic() < deadline:
            if not self.is_running:
                code = self._process.returncode if self._process is not None else None
                msg = f"the Kafka broker exited during start-up (exit code {code}); its log ends with:\n{self.log_tail()}"
                raise KafkaBrokerError(msg)
            try:
                with socket.create_connection(("127.0.0.1", self.port or 0), timeout=1):
                    pass  # the listener is up: now ask the broker itself (it may still be electing)
            except OSError as exc:
                last = exc
                time.sleep(0.3)
                continue
            try:
                admin = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers, request_timeout_ms=5000)
                try:
                    admin.list_topics()
                    return
                finally:
                    admin.close()
            except (KafkaError, OSError) as exc:
                last = exc
                time.sleep(0.5)
        msg = (
            f"the Kafka broker did not serve on {self.bootstrap_servers} within {self.startup_timeout:.0f} s "
            f"(last error: {last!r}); its log ends with:\n{self.log_tail()}"
        )
        raise KafkaBrokerError(msg)

    def restart(self, graceful: bool = True) -> KafkaBroker:
        """Stop the broker's JVM (``SIGTERM``, or ``SIGKILL`` with ``graceful=False``) and start it again on the
        same ports with the same log directory; returns when it serves again."""
        if self.directory is None:
            msg = "restart() before start(): nothing to restart"
            raise KafkaBrokerError(msg)
        self._end(graceful)
        return self.start()

    def stop(self) -> None:
        """Kill the JVM and remove the temporary directory (idempotent); a broker with a ``data_dir`` is stopped
        gracefully (``SIGTERM``) and its ``data_dir`` kept, so that the next broker on it starts quickly."""
        self._end(graceful=self.data_dir is not None)
        self._remove_directory()
        self.port = self.controller_port = None
        self._formatted = False

    def __repr__(self) -> str:
        state = f"running on {self.bootstrap_servers}" if self.is_running else "stopped"
        return f"KafkaBroker({state})"

    # ------------------------------------------------------------------ administration and data
    def _admin(self) -> Any:
        from kafka import KafkaAdminClient

        return KafkaAdminClient(bootstrap_servers=self.bootstrap_servers, request_timeout_ms=20000)

    def create_topic(self, name: str, partitions: int = 1, config: Optional[Dict[str, str]] = None) -> str:
        """Create ``name`` with ``partitions`` partitions (replication factor 1); returns the name."""
        from kafka.admin import NewTopic

        admin = self._admin()
        try:
            admin.create_topics([NewTopic(name, partitions, 1, topic_configs=dict(config or {}))])
        finally:
            admin.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # wait until every partition has a leader
            if len(self.partitions(name)) == partitions:
                return name
            time.sleep(0.2)
        msg = f"topic {name!r} did not get {partitions} partitions with leaders within 30 s:\n{self.log_tail()}"
        raise KafkaBrokerError(msg)

    def delete_topic(self, name: str) -> None:
        admin = self._admin()
        try:
            admin.delete_topics([name])
        finally:
            admin.close()

    def delete_records(self, topic: str, before: Dict[int, int]) -> None:
        """Delete the records of ``topic`` below ``before[partition]`` (Kafka's ``DeleteRecords``): the partition's
        log then starts at that offset, as after retention aged the records out."""
        from kafka import TopicPartition

        admin = self._admin()
        try:
            admin.delete_records({TopicPartition(topic, p): offset for p, offset in before.items()})
        finally:
            admin.close()

    def offset_ranges(self, topic: str) -> Dict[int, Tuple[int, int]]:
        """Per partition of ``topic``: (the first offset still stored, the next offset to be written)."""
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap_servers)
        try:
            parts = [TopicPartition(topic, p) for p in self.partitions(topic)]
            first, end = consumer.beginning_offsets(parts), consumer.end_offsets(parts)
            return {tp.partition: (int(first[tp]), int(end[tp])) for tp in parts}
        finally:
            consumer.close()

    def topics(self) -> List[str]:
        admin = self._admin()
        try:
            return sorted(admin.list_topics())
        finally:
            admin.close()

    def partitions(self, topic: str) -> List[int]:
        """The partitions of ``topic`` that have a leader (sorted)."""
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap_servers)
        try:
            found = consumer.partitions_for_topic(topic) or set()
        finally:
            consumer.close()
        return sorted(found)

    def produce(
        self,
        topic: str,
        values: Iterable[Union[bytes, str, None]],
        partition: Optional[int] = None,
        keys: Optional[Sequence[Union[bytes, str, None]]] = None,
        timestamps_ms: Optional[Sequence[Optional[int]]] = None,
    ) -> List[Tuple[int, int]]:
        """Send ``values`` (str is UTF-8 encoded; None is a tombstone) to ``topic``, optionally to one partition,
        with keys and record timestamps; waits for every acknowledgement and returns ``(partition, offset)`` per value."""
        from kafka import KafkaProducer

        def enc(v: Union[bytes, str, None]) -> Optional[bytes]:
            return v.encode("utf-8") if isinstance(v, str) else v

        values = list(values)
        producer = KafkaProducer(bootstrap_servers=self.bootstrap_servers, acks="all", linger_ms=5)
        try:
            futures = [
                producer.send(
                    topic,
                    value=enc(v),
                    key=enc(keys[i]) if keys is not None else None,
                    partition=partition,
                    timestamp_ms=timestamps_ms[i] if timestamps_ms is not None else None,
                )
                for i, v in enumerate(values)
            ]
            producer.flush()
            out = []
            for f in futures:
                meta = f.get(timeout=30)
                out.append((int(meta.partition), int(meta.offset)))
            return out
        finally:
            producer.close()

    def produce_json(self, topic: str, events: Sequence[Tuple[int, Any]]) -> List[Tuple[int, int, Any]]:
        """Send ``(partition, event)`` pairs as JSON, each partition's events in order; returns
        ``(partition, offset, event)`` as the broker stored them."""
        import json

        out: List[Tuple[int, int, Any]] = []
        for p in sorted({p for p, _ in events}):
            mine = [e for q, e in events if q == p]
            acks = self.produce(topic, [json.dumps(e) for e in mine], partition=p)
            out.extend((p, off, e) for (_, off), e in zip(acks, mine))
        return out

    def consume(
        self, topic: str, timeout: float = 10.0, expected: Optional[int] = None, isolation_level: str = "read_uncommitted"
    ) -> List[Any]:
        """Every record of ``topic`` from the earliest offset (kafka-python ``ConsumerRecord``s, ordered by partition
        and offset); stops after ``expected`` records or when nothing arrives for a second (or ``timeout``).
        ``isolation_level="read_committed"`` reads only committed transactions' records (what a consumer of an
        exactly-once ``KafkaSink`` must use); the default also returns records of open and aborted transactions."""
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap_servers, enable_auto_commit=False, isolation_level=isolation_level
        )
        try:
            parts = [TopicPartition(topic, p) for p in self.partitions(topic)]
            consumer.assign(parts)
            consumer.seek_to_beginning(*parts)
            records: List[Any] = []
            deadline = time.monotonic() + timeout
            quiet_since = time.monotonic()
            while time.monotonic() < deadline:
                batch = consumer.poll(timeout_ms=200)
                got = [r for rs in batch.values() for r in rs]
                records.extend(got)
                if got:
                    quiet_since = time.monotonic()
                if expected is not None and len(records) >= expected:
                    break
                if expected is None and records and time.monotonic() - quiet_since > 1.0:
                    break
            return sorted(records, key=lambda r: (r.partition, r.offset))
        finally:
            consumer.close()
