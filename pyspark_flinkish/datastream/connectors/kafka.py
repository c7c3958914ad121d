"""PyFlink's ``pyflink.datastream.connectors.kafka``: a Kafka source with Flink's per-partition watermarks, and
``KafkaSink`` (exactly-once Kafka output, :mod:`.kafka_sink`).

Build it as in PyFlink and hand it to ``env.from_source`` of a Spark environment::

    source = (
        KafkaSource.builder()
        .set_bootstrap_servers("broker:9092")
        .set_topics("events")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_value_only_deserializer(
            JsonRowDeserializationSchema.builder()
            .type_info(Types.ROW_NAMED(["user", "ts", "score"], [Types.STRING(), Types.LONG(), Types.LONG()]))
            .build())
        .set_timestamp_field("ts")                    # extension: event time from a field (default: Kafka's timestamp)
        .build()
    )
    events = env.from_source(source, WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5)), "events")

or in one call, ``env.from_kafka("events", "broker:9092", strategy, schema="user STRING, ts BIGINT, score BIGINT",
timestamp_field="ts")``. Records that cannot be decoded go to a dead-letter Delta table by default
(:class:`MalformedRecordPolicy`). On Spark the source is Spark's Kafka source; each Kafka partition (split) has its own
watermark generator and the source's watermark is the minimum over non-idle partitions, as in Flink — a lagging
or empty partition holds it back unless the strategy has ``with_idleness``.

This module is pure Python (a description of the source); ``pyspark_flinkish.spark.kafka`` runs it.
"""

from __future__ import annotations

import json
import re
from enum import Enum
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from ...common.serialization import DeserializationSchema, RawBytesSchema, SimpleStringSchema
from ...core.errors import BadInputError, InvalidArgumentError, InvalidTypeError, UnsupportedFeatureError
from ...core.records import OutputTag
from ...core.typeinfo import TypeInformation
from ..formats.json import JsonRowDeserializationSchema
from .base import DeliveryGuarantee
from .delta import DeltaSink
from .kafka_sink import (
    KafkaRecordSerializationSchema,
    KafkaRecordSerializationSchemaBuilder,
    KafkaSink,
    KafkaSinkBuilder,
    KafkaTopicSelector,
)

__all__ = [
    "DeliveryGuarantee",
    "KafkaOffsetResetStrategy",
    "KafkaOffsetsInitializer",
    "KafkaRecord",
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "KafkaSource",
    "KafkaSourceBuilder",
    "KafkaTopicPartition",
    "KafkaTopicSelector",
    "MalformedRecord",
    "MalformedRecordError",
    "MalformedRecordPolicy",
]

# Kafka consumer properties Spark's Kafka source sets itself (it rejects them), with what to use instead.
_MANAGED_PROPERTIES = {
    "auto.offset.reset": "set_starting_offsets(KafkaOffsetsInitializer...)",
    "key.deserializer": "set_value_only_deserializer(...) (keys are bytes in KafkaRecord.key)",
    "value.deserializer": "set_value_only_deserializer(...)",
    "enable.auto.commit": "nothing: offsets live in Spark's checkpoint",
    "interceptor.classes": "nothing: Spark's Kafka source does not support consumer interceptors",
}
# Spark source options this module sets from the builder's settings.
_MANAGED_OPTIONS = {
    "subscribe": "set_topics(...)",
    "subscribepattern": "set_topic_pattern(...)",
    "assign": "set_partitions(...)",
    "startingoffsets": "set_starting_offsets(...)",
    "startingtimestamp": "set_starting_offsets(KafkaOffsetsInitializer.timestamp(ms))",
    "startingoffsetsbytimestamp": "set_starting_offsets(KafkaOffsetsInitializer.timestamp(ms))",
    "maxoffsetspertrigger": "set_max_offsets_per_trigger(n)",
    "endingoffsets": "nothing: a streaming query is unbounded (run it with trigger={'availableNow': True})",
}
_STARTS = "'earliest', 'latest', a KafkaOffsetsInitializer or a dict {partition: offset}"
EARLIEST_OFFSET = -2  # Spark's (and Kafka's) markers in a startingOffsets JSON
LATEST_OFFSET = -1


class MalformedRecordError(BadInputError):
    """A Kafka record's value could not be decoded and the source's policy is
    :attr:`MalformedRecordPolicy.FAIL`.

    The message names the topic, partition, offset and the reason; it never contains the value itself.
    """


class MalformedRecordPolicy(Enum):
    """What a Kafka source does with a record it cannot turn into an element (extension; Flink's JSON format
    fails the job, or skips the record with ``ignore-parse-errors``).

    A record is malformed when its value is null (a tombstone), not UTF-8, not JSON, not a JSON object, has a
    field whose JSON type does not fit the schema (a timestamp that does not parse included), or lacks the
    event-time field of ``set_timestamp_field`` (missing or null; unless the watermark strategy has a timestamp
    assigner, which then gets None as ``record_timestamp`` and decides). Only JSON values can be malformed.
    """

    DEAD_LETTER = "dead_letter"
    """The default: the record goes to a dead-letter Delta table (raw key and value bytes, reason, topic,
    partition, offset, Kafka timestamp, Spark batch id, source name), written exactly once per micro-batch;
    the stream goes on. See ``docs/operations.md`` ("Dead letters")."""
    FAIL = "fail"
    """Fail the query with a :class:`MalformedRecordError` naming topic, partition, offset and the reason
    (Flink's default). A restart fails again at the same offset."""
    SIDE_OUTPUT = "side_output"
    """Send the record as a :class:`MalformedRecord` to the side output of ``set_malformed_records_tag``."""

    @staticmethod
    def of(policy: Union[str, MalformedRecordPolicy]) -> MalformedRecordPolicy:
        """The policy named by ``policy`` (a member or its value: ``"dead_letter"``, ``"fail"``, ``"side_output"``)."""
        if isinstance(policy, MalformedRecordPolicy):
            return policy
        for member in MalformedRecordPolicy:
            if policy == member.value:
                return member
        msg = (
            f"the malformed-records policy must be one of {[m.value for m in MalformedRecordPolicy]} "
            f"(or a MalformedRecordPolicy); got {policy!r}"
        )
        raise InvalidArgumentError(msg)


class KafkaTopicPartition(NamedTuple):
    """A Kafka partition of a topic (PyFlink's ``KafkaTopicPartition(topic, partition)``)."""

    topic: str
    partition: int

    def __str__(self) -> str:  # Kafka's TopicPartition.toString(): also the split's name in watermarks
        return f"{self.topic}-{self.partition}"


class KafkaRecord(NamedTuple):
    """An element with Kafka metadata (``set_include_metadata(True)``): ``value`` is the decoded value;
    ``timestamp`` the record's Kafka timestamp in epoch milliseconds; ``key`` the raw key bytes (or None)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: Optional[bytes]
    value: Any


class MalformedRecord(NamedTuple):
    """A record whose value could not be decoded: what the side output (``MalformedRecordPolicy.SIDE_OUTPUT``)
    receives and what a dead-letter row holds. ``value`` and ``key`` are the raw bytes; ``reason`` says what is
    wrong (which field, which JSON type) and never contains the value itself."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: Optional[bytes]
    value: Optional[bytes]
    reason: str

    no_timestamp_assigner = True  # the strategy's assigner expects decoded values: its time is the Kafka timestamp

    def __repr__(self) -> str:  # the raw bytes may hold anything (personal data, secrets): only their size
        def size(b: Optional[bytes]) -> str:
            return "None" if b is None else f"<{len(b)} bytes>"

        return (
            f"MalformedRecord(topic={self.topic!r}, partition={self.partition}, offset={self.offset}, "
            f"timestamp={self.timestamp}, key={size(self.key)}, value={size(self.value)}, reason={self.reason!r})"
        )


class KafkaOffsetResetStrategy(Enum):
    """Where to start a partition that has no given offset (PyFlink's ``KafkaOffsetResetStrategy``)."""

    LATEST = 0
    EARLIEST = 1
    NONE = 2


class KafkaOffsetsInitializer:
    """Where a new query starts reading (PyFlink's ``KafkaOffsetsInitializer``). A restarted query always
    resumes from the offsets in its Spark checkpoint; the initializer only applies to a fresh checkpoint."""

    def __init__(
        self,
        kind: str,
        offsets: Optional[Mapping[KafkaTopicPartition, int]] = None,
        timestamp_ms: Optional[int] = None,
        reset: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.EARLIEST,
    ) -> None:
        self.kind = kind
        self.offsets: Dict[KafkaTopicPartition, int] = dict(offsets or {})
        self.timestamp_ms = timestamp_ms
        self.reset = reset

    @staticmethod
    def earliest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer("earliest")

    @staticmethod
    def latest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer("latest")

    @staticmethod
    def timestamp(timestamp: int) -> KafkaOffsetsInitializer:
        """Start each partition at its first record with a Kafka timestamp >= ``timestamp`` (epoch ms)."""
        if isinstance(timestamp, bool) or not isinstance(timestamp, int) or timestamp < 0:
            msg = f"KafkaOffsetsInitializer.timestamp needs epoch milliseconds >= 0; got {timestamp!r}"
            raise InvalidArgumentError(msg)
        return KafkaOffsetsInitializer("timestamp", timestamp_ms=timestamp)

    @staticmethod
    def offsets(
        offsets: Mapping[KafkaTopicPartition, int],
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.EARLIEST,
    ) -> KafkaOffsetsInitializer:
        """Start the given partitions at the given offsets; the others at ``offset_reset_strategy``."""
        checked: Dict[KafkaTopicPartition, int] = {}
        for tp, offset in dict(offsets).items():
            if not isinstance(tp, KafkaTopicPartition):
                if isinstance(tp, tuple) and len(tp) == 2:
                    tp = KafkaTopicPartition(*tp)
                else:
                    msg = f"KafkaOffsetsInitializer.offsets: keys must be KafkaTopicPartition(topic, partition); got {tp!r}"
                    raise InvalidTypeError(msg)
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                msg = f"KafkaOffsetsInitializer.offsets: offset of {tp} must be an int >= 0; got {offset!r}"
                raise InvalidArgumentError(msg)
            checked[tp] = offset
        if offset_reset_strategy == KafkaOffsetResetStrategy.NONE:
            msg = "KafkaOffsetResetStrategy.NONE is not supported: Spark needs a start for every partition (EARLIEST or LATEST)"
            raise UnsupportedFeatureError(msg)
        return KafkaOffsetsInitializer("offsets", offsets=checked, reset=offset_reset_strategy)

    @staticmethod
    def committed_offsets(
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.NONE,
    ) -> KafkaOffsetsInitializer:
        msg = (
            "committed_offsets() is not supported: Spark's Kafka source keeps offsets in its checkpoint and never "
            "reads a consumer group's committed offsets; use earliest(), latest(), timestamp(ms) or offsets({...})"
        )
        raise UnsupportedFeatureError(msg)

    def spark_options(self, partitions: Sequence[KafkaTopicPartition] = ()) -> Dict[str, str]:
        """The Spark source options for this start. ``offsets`` needs every partition: the ones not given start
        at the reset strategy's end."""
        if self.kind in ("earliest", "latest"):
            return {"startingOffsets": self.kind}
        if self.kind == "timestamp":
            return {"startingTimestamp": str(self.timestamp_ms)}
        default = EARLIEST_OFFSET if self.reset == KafkaOffsetResetStrategy.EARLIEST else LATEST_OFFSET
        spec: Dict[str, Dict[str, int]] = {}
        for tp in list(partitions) + [tp for tp in self.offsets if tp not in partitions]:
            spec.setdefault(tp.topic, {})[str(tp.partition)] = self.offsets.get(tp, default)
        return {"startingOffsets": json.dumps(spec, sort_keys=True)}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KafkaOffsetsInitializer) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((self.kind, self.timestamp_ms, tuple(sorted(self.offsets.items()))))

    def __repr__(self) -> str:
        if self.kind == "timestamp":
            return f"KafkaOffsetsInitializer.timestamp({self.timestamp_ms})"
        if self.kind == "offsets":
            return f"KafkaOffsetsInitializer.offsets({len(self.offsets)} partitions, {self.reset.name})"
        return f"KafkaOffsetsInitializer.{self.kind}()"


_SECRET_KEY = re.compile(r"(?i)password|secret|token|credential|jaas|(^|\.)key$|keystore\.key|private")
_SECRET_VALUE = re.compile(r"(?i)password|secret|token|credential")


def _property_key(key: str) -> str:
    """A Kafka consumer property as Spark's option name (``security.protocol`` -> ``kafka.security.protocol``)."""
    if not isinstance(key, str) or not key.strip():
        msg = f"a Kafka property name must be a non-empty str; got {key!r}"
        raise InvalidArgumentError(msg)
    bare = key[len("kafka.") :] if key.startswith("kafka.") else key
    if bare in _MANAGED_PROPERTIES:
        msg = f"Kafka property {bare!r} is set by Spark's Kafka source; use {_MANAGED_PROPERTIES[bare]}"
        raise InvalidArgumentError(msg)
    return "kafka." + bare


class KafkaSource:
    """A Kafka source (PyFlink's ``KafkaSource``): build it with :meth:`builder` and read it with
    ``env.from_source(source, watermark_strategy, name)`` on a Spark environment.

    Immutable once built. Its ``repr`` lists the Kafka properties' names but never their values (they may hold
    passwords or keys).
    """

    def __init__(
        self,
        *,
        bootstrap_servers: str,
        topics: Sequence[str] = (),
        topic_pattern: Optional[str] = None,
        assigned: Sequence[KafkaTopicPartition] = (),
        starting_offsets: Optional[KafkaOffsetsInitializer] = None,
        deserializer: Optional[DeserializationSchema] = None,
        timestamp_field: Optional[str] = None,
        max_offsets_per_trigger: Optional[int] = None,
        include_metadata: bool = False,
        malformed_records_tag: Optional[OutputTag] = None,
        partitions: Optional[Sequence[KafkaTopicPartition]] = None,
        properties: Optional[Mapping[str, str]] = None,
        spark_options: Optional[Mapping[str, str]] = None,
        malformed_records_policy: Union[str, MalformedRecordPolicy, None] = None,
        dead_letter_table: Union[str, DeltaSink, None] = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topics: Tuple[str, ...] = tuple(topics)
        self.topic_pattern = topic_pattern
        self.assigned: Tuple[KafkaTopicPartition, ...] = tuple(assigned)
        self.starting_offsets = starting_offsets or KafkaOffsetsInitializer.earliest()
        self.deserializer = deserializer if deserializer is not None else RawBytesSchema()
        self.timestamp_field = timestamp_field
        self.max_offsets_per_trigger = max_offsets_per_trigger
        self.include_metadata = include_metadata
        self.malformed_records_tag = malformed_records_tag
        self.partitions: Optional[Tuple[KafkaTopicPartition, ...]] = None if partitions is None else tuple(partitions)
        self.properties: Dict[str, str] = dict(properties or {})
        self.spark_options_extra: Dict[str, str] = dict(spark_options or {})
        if malformed_records_policy is None:  # a tag alone means its side output (as before policies existed)
            policy = MalformedRecordPolicy.SIDE_OUTPUT if malformed_records_tag is not None else MalformedRecordPolicy.DEAD_LETTER
        else:
            policy = MalformedRecordPolicy.of(malformed_records_policy)
        self.malformed_records_policy = policy
        self.dead_letter_table: Optional[DeltaSink] = _dead_letter_sink(dead_letter_table)
        self._validate()

    @staticmethod
    def builder() -> KafkaSourceBuilder:
        return KafkaSourceBuilder()

    @staticmethod
    def from_options(
        topics: Union[str, Sequence[str]],
        bootstrap_servers: Optional[str] = None,
        *,
        value_format: str = "json",
        schema: Union[TypeInformation, str, None] = None,
        timestamp_field: Optional[str] = None,
        starting_offsets: Union[str, KafkaOffsetsInitializer, Mapping[Any, int]] = "earliest",
        max_offsets_per_trigger: Optional[int] = None,
        include_metadata: bool = False,
        malformed_records_tag: Optional[OutputTag] = None,
        partitions: Optional[Sequence[Any]] = None,
        options: Optional[Mapping[str, str]] = None,
        malformed_records: Union[str, MalformedRecordPolicy, None] = None,
        dead_letter_table: Union[str, DeltaSink, None] = None,
    ) -> KafkaSource:
        """The source ``env.from_kafka(...)`` reads (see there); ``options`` with a ``kafka.`` prefix are Kafka
        consumer properties, passed to Spark untouched, the others Spark Kafka source options."""
        topic_list = [topics] if isinstance(topics, str) else list(topics)
        builder = KafkaSource.builder().set_topics(*topic_list)
        if bootstrap_servers is not None:
            builder.set_bootstrap_servers(bootstrap_servers)
        formats: Dict[str, Any] = {"string": SimpleStringSchema, "raw": RawBytesSchema}
        if value_format == "json":
            if schema is None:
                msg = "from_kafka(value_format='json') needs schema=: a Spark DDL string or Types.ROW_NAMED([...], [...])"
                raise InvalidArgumentError(msg)
            builder.set_value_only_deserializer(JsonRowDeserializationSchema(schema))
        elif value_format in formats:
            if schema is not None:
                msg = f"from_kafka: schema= applies to value_format='json' only; got value_format={value_format!r}"
                raise InvalidArgumentError(msg)
            builder.set_value_only_deserializer(formats[value_format]())
        else:
            msg = f"from_kafka: value_format must be 'json', 'string' or 'raw'; got {value_format!r}"
            raise InvalidArgumentError(msg)
        if isinstance(starting_offsets, str):
            if starting_offsets not in ("earliest", "latest"):
                msg = f"from_kafka: starting_offsets must be {_STARTS}; got {starting_offsets!r}"
                raise InvalidArgumentError(msg)
            builder.set_starting_offsets(getattr(KafkaOffsetsInitializer, starting_offsets)())
        elif isinstance(starting_offsets, KafkaOffsetsInitializer):
            builder.set_starting_offsets(starting_offsets)
        elif isinstance(starting_offsets, Mapping):
            given = {
                (k if isinstance(k, (KafkaTopicPartition, tuple)) else KafkaTopicPartition(_only_topic(topic_list), k)): v
                for k, v in starting_offsets.items()
            }
            builder.set_starting_offsets(KafkaOffsetsInitializer.offsets(given))  # type: ignore[arg-type]
        else:
            msg = f"from_kafka: starting_offsets must be {_STARTS}; got {type(starting_offsets).__name__}"
            raise InvalidTypeError(msg)
        if timestamp_field is not None:
            builder.set_timestamp_field(timestamp_field)
        if max_offsets_per_trigger is not None:
            builder.set_max_offsets_per_trigger(max_offsets_per_trigger)
        builder.set_include_metadata(include_metadata)
        if malformed_records_tag is not None:
            builder.set_malformed_records_tag(malformed_records_tag)
        if malformed_records is not None:
            builder.set_malformed_records_policy(malformed_records)
        if dead_letter_table is not None:
            builder.set_dead_letter_table(dead_letter_table)
        if partitions is not None:
            builder.set_expected_partitions(
                [
                    p if isinstance(p, (KafkaTopicPartition, tuple)) else KafkaTopicPartition(_only_topic(topic_list), p)
                    for p in partitions
                ]
            )
        for key, value in (options or {}).items():
            if key.startswith("kafka."):
                builder.set_property(key, value)
            else:
                builder.set_spark_option(key, value)
        return builder.build()

    # ------------------------------------------------------------------ derived settings
    def _validate(self) -> None:
        if not isinstance(self.bootstrap_servers, str) or not self.bootstrap_servers.strip():
            msg = "KafkaSource needs bootstrap servers: set_bootstrap_servers('host:port,...')"
            raise InvalidArgumentError(msg)
        chosen = [bool(self.topics), self.topic_pattern is not None, bool(self.assigned)]
        if sum(chosen) != 1:
            msg = "KafkaSource needs exactly one of set_topics(...), set_topic_pattern(...) or set_partitions(...)"
            raise InvalidArgumentError(msg)
        if not isinstance(self.deserializer, (JsonRowDeserializationSchema, SimpleStringSchema, RawBytesSchema)):
            msg = (
                "set_value_only_deserializer needs JsonRowDeserializationSchema, SimpleStringSchema or RawBytesSchema; "
                f"got {type(self.deserializer).__name__}"
            )
            raise InvalidTypeError(msg)
        if self.timestamp_field is not None and not isinstance(self.deserializer, JsonRowDeserializationSchema):
            msg = "set_timestamp_field needs a JSON value (JsonRowDeserializationSchema): the field is read from the value"
            raise InvalidArgumentError(msg)
        if self.timestamp_field is not None:
            names = self.field_names()
            if names is not None and self.timestamp_field not in names:
                msg = f"set_timestamp_field: {self.timestamp_field!r} is not a field of the JSON schema (fields: {list(names)})"
                raise InvalidArgumentError(msg)
        if self.malformed_records_tag is not None and not isinstance(self.malformed_records_tag, OutputTag):
            msg = f"set_malformed_records_tag needs an OutputTag; got {type(self.malformed_records_tag).__name__}"
            raise InvalidTypeError(msg)
        policy = self.malformed_records_policy
        if policy == MalformedRecordPolicy.SIDE_OUTPUT and self.malformed_records_tag is None:
            msg = "the malformed-records policy 'side_output' needs its tag: set_malformed_records_tag(OutputTag(...))"
            raise InvalidArgumentError(msg)
        if policy != MalformedRecordPolicy.SIDE_OUTPUT and self.malformed_records_tag is not None:
            msg = (
                f"set_malformed_records_tag(...) sends malformed records to a side output, but the policy is "
                f"{policy.value!r}: drop the tag or use the policy 'side_output'"
            )
            raise InvalidArgumentError(msg)
        if policy != MalformedRecordPolicy.DEAD_LETTER and self.dead_letter_table is not None:
            msg = (
                f"a dead-letter table is set, but the malformed-records policy is {policy.value!r}: drop "
                "set_dead_letter_table(...) or use the policy 'dead_letter'"
            )
            raise InvalidArgumentError(msg)

    @property
    def value_format(self) -> str:
        return self.deserializer.format_name

    def field_names(self) -> Optional[Tuple[str, ...]]:
        """The JSON row's field names when the schema is a ``Types.ROW_NAMED`` (a DDL string is parsed by Spark)."""
        schema = self.deserializer
        if isinstance(schema, JsonRowDeserializationSchema) and isinstance(schema.type_info, TypeInformation):
            return schema.type_info.field_names
        return None

    @property
    def single_topic(self) -> Optional[str]:
        if len(self.topics) == 1:
            return self.topics[0]
        topics = {tp.topic for tp in self.assigned}
        return next(iter(topics)) if len(topics) == 1 else None

    def spark_options(self, partitions: Sequence[KafkaTopicPartition] = ()) -> Dict[str, str]:
        """Every option of ``spark.readStream.format("kafka")`` for this source (Kafka properties untouched)."""
        out: Dict[str, str] = {"kafka.bootstrap.servers": self.bootstrap_servers}
        if self.topics:
            out["subscribe"] = ",".join(self.topics)
        elif self.topic_pattern is not None:
            out["subscribePattern"] = self.topic_pattern
        else:
            spec: Dict[str, List[int]] = {}
            for tp in self.assigned:
                spec.setdefault(tp.topic, []).append(tp.partition)
            out["assign"] = json.dumps(spec, sort_keys=True)
        out.update(self.starting_offsets.spark_options(partitions))
        if self.max_offsets_per_trigger is not None:
            out["maxOffsetsPerTrigger"] = str(self.max_offsets_per_trigger)
        out.update(self.properties)
        out.update(self.spark_options_extra)
        return out

    def redact(self, text: str) -> str:
        """``text`` with every secret of this source's options replaced by ``[hidden]``: the values of options
        whose name or value looks secret (password, secret, token, credential, key, JAAS config), and each
        quoted value inside a JAAS config (``password="..."``), for messages that quote a Kafka client's error."""
        secrets = set()
        for key, value in {**self.properties, **self.spark_options_extra}.items():
            if _SECRET_KEY.search(key) or _SECRET_VALUE.search(value):
                secrets.add(value)
                secrets.update(v for v in re.findall(r'=\s*"([^"]*)"', value) if v)
                secrets.update(v for v in re.findall(r"=\s*'([^']*)'", value) if v)
        for secret in sorted((s for s in secrets if s.strip()), key=len, reverse=True):
            text = text.replace(secret, "[hidden]")
        return text

    def __repr__(self) -> str:
        what = (
            f"topics={list(self.topics)}"
            if self.topics
            else f"topic_pattern={self.topic_pattern!r}"
            if self.topic_pattern is not None
            else f"partitions={[str(tp) for tp in self.assigned]}"
        )
        props = f", properties={sorted(self.properties)}" if self.properties else ""  # names only, never values
        return f"KafkaSource({what}, {self.deserializer!r}, {self.starting_offsets!r}{props})"


def _only_topic(topics: Sequence[str]) -> str:
    if len(topics) != 1:
        msg = f"partitions given as numbers need exactly one topic; got topics {list(topics)}: give KafkaTopicPartition(topic, p)"
        raise InvalidArgumentError(msg)
    return topics[0]


class KafkaSourceBuilder:
    """PyFlink's ``KafkaSourceBuilder``; every setter returns the builder. Extensions (not in PyFlink) are marked."""

    def __init__(self) -> None:
        self._bootstrap: Optional[str] = None
        self._topics: List[str] = []
        self._pattern: Optional[str] = None
        self._assigned: List[KafkaTopicPartition] = []
        self._starting: Optional[KafkaOffsetsInitializer] = None
        self._deserializer: Optional[DeserializationSchema] = None
        self._timestamp_field: Optional[str] = None
        self._max_offsets: Optional[int] = None
        self._metadata = False
        self._malformed: Optional[OutputTag] = None
        self._policy: Optional[MalformedRecordPolicy] = None
        self._dead_letters: Union[str, DeltaSink, None] = None
        self._partitions: Optional[List[KafkaTopicPartition]] = None
        self._properties: Dict[str, str] = {}
        self._spark_options: Dict[str, str] = {}

    # -- PyFlink's setters
    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSourceBuilder:
        self._bootstrap = bootstrap_servers
        return self

    def set_topics(self, *topics: str) -> KafkaSourceBuilder:
        for t in topics:
            if not isinstance(t, str) or not t.strip() or "," in t:
                msg = f"set_topics takes topic names (non-empty str without ','); got {t!r}"
                raise InvalidArgumentError(msg)
        self._topics = list(topics)
        return self

    def set_topic_pattern(self, topic_pattern: str) -> KafkaSourceBuilder:
        """Subscribe to every topic matching the (Java) regular expression. Its partitions are not known up
        front, so none holds the watermark back before its first record."""
        if not isinstance(topic_pattern, str) or not topic_pattern:
            msg = f"set_topic_pattern needs a regular expression str; got {topic_pattern!r}"
            raise InvalidArgumentError(msg)
        self._pattern = topic_pattern
        return self

    def set_partitions(self, partitions: Iterable[KafkaTopicPartition]) -> KafkaSourceBuilder:
        """Read exactly these partitions (Spark's ``assign``)."""
        self._assigned = [tp if isinstance(tp, KafkaTopicPartition) else KafkaTopicPartition(*tp) for tp in partitions]
        return self

    def set_starting_offsets(self, starting_offsets_initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        if not isinstance(starting_offsets_initializer, KafkaOffsetsInitializer):
            msg = f"set_starting_offsets needs a KafkaOffsetsInitializer; got {type(starting_offsets_initializer).__name__}"
            raise InvalidTypeError(msg)
        self._starting = starting_offsets_initializer
        return self

    def set_unbounded(self, stopping_offsets_initializer: Any) -> KafkaSourceBuilder:
        msg = "set_unbounded(...) is not supported: stop the query instead (a streaming query is always unbounded)"
        raise UnsupportedFeatureError(msg)

    def set_bounded(self, stopping_offsets_initializer: Any) -> KafkaSourceBuilder:
        msg = (
            "set_bounded(...) is not supported: run the query with trigger={'availableNow': True} to read what "
            "is there and stop"
        )
        raise UnsupportedFeatureError(msg)

    def set_value_only_deserializer(self, deserialization_schema: DeserializationSchema) -> KafkaSourceBuilder:
        self._deserializer = deserialization_schema
        return self

    def set_client_id_prefix(self, prefix: str) -> KafkaSourceBuilder:
        """Accepted for compatibility; Spark names its consumers itself."""
        return self

    def set_group_id(self, group_id: str) -> KafkaSourceBuilder:
        """Spark's ``kafka.group.id`` (for ACLs; Spark never commits offsets to the group)."""
        return self.set_property("group.id", group_id)

    def set_property(self, key: str, value: str) -> KafkaSourceBuilder:
        """A Kafka consumer property (``security.protocol``, ``sasl.jaas.config``, ...), passed untouched as
        Spark's ``kafka.<key>`` option. Values are never logged or shown."""
        self._properties[_property_key(key)] = str(value)
        return self

    def set_properties(self, props: Mapping[str, str]) -> KafkaSourceBuilder:
        for key, value in dict(props).items():
            self.set_property(key, value)
        return self

    # -- extensions
    def set_timestamp_field(self, field: str) -> KafkaSourceBuilder:
        """Extension: event time from this field of the JSON value (epoch ms, or a timestamp), instead of the
        record's Kafka timestamp. A ``with_timestamp_assigner`` in the strategy still wins, as in Flink."""
        self._timestamp_field = field
        return self

    def set_max_offsets_per_trigger(self, max_offsets: int) -> KafkaSourceBuilder:
        """Extension: at most this many records per micro-batch, over all partitions (Spark's backpressure)."""
        if isinstance(max_offsets, bool) or not isinstance(max_offsets, int) or max_offsets < 1:
            msg = f"set_max_offsets_per_trigger needs an int >= 1; got {max_offsets!r}"
            raise InvalidArgumentError(msg)
        self._max_offsets = max_offsets
        return self

    def set_include_metadata(self, include: bool = True) -> KafkaSourceBuilder:
        """Extension: elements are :class:`KafkaRecord` (topic, partition, offset, timestamp, key, value)."""
        self._metadata = bool(include)
        return self

    def set_malformed_records_tag(self, tag: OutputTag) -> KafkaSourceBuilder:
        """Extension: values that cannot be decoded go to this side output as :class:`MalformedRecord`
        (``stream.get_side_output(tag)``) instead of the dead-letter table: the policy
        :attr:`MalformedRecordPolicy.SIDE_OUTPUT`, implied by the tag."""
        self._malformed = tag
        return self

    def set_malformed_records_policy(self, policy: Union[str, MalformedRecordPolicy]) -> KafkaSourceBuilder:
        """Extension: what happens to records that cannot be decoded: ``"dead_letter"`` (the default: a Delta
        table, see :meth:`set_dead_letter_table`), ``"fail"`` (the query fails with a
        :class:`MalformedRecordError`, Flink's default) or ``"side_output"`` (with
        :meth:`set_malformed_records_tag`). See :class:`MalformedRecordPolicy`."""
        self._policy = MalformedRecordPolicy.of(policy)
        return self

    def set_dead_letter_table(self, table: Union[str, DeltaSink]) -> KafkaSourceBuilder:
        """Extension: the Delta table malformed records go to (policy ``"dead_letter"``, the default): a path
        (absolute, or a URI such as ``s3://...``), a catalog table name (``db.table``, no ``/``), or a
        ``DeltaSink.for_path/for_table(...)`` (e.g. with partition columns of the dead-letter schema). Default:
        ``<checkpoint_location>/dead_letters``. Several sources and jobs may share one table: each row names its
        source and query."""
        _dead_letter_sink(table)  # validate now
        self._dead_letters = table
        return self

    def set_expected_partitions(self, partitions: Iterable[KafkaTopicPartition]) -> KafkaSourceBuilder:
        """Extension: the partitions known up front (default: listed from the brokers when the pipeline is
        built). Each holds the source's watermark back until it has data or is idle, as in Flink."""
        self._partitions = [tp if isinstance(tp, KafkaTopicPartition) else KafkaTopicPartition(*tp) for tp in partitions]
        return self

    def set_spark_option(self, key: str, value: str) -> KafkaSourceBuilder:
        """Extension: an option of Spark's Kafka source (``failOnDataLoss``, ``minPartitions``, ...)."""
        if not isinstance(key, str) or not key:
            msg = f"set_spark_option needs an option name; got {key!r}"
            raise InvalidArgumentError(msg)
        if key.startswith("kafka."):
            return self.set_property(key, value)
        if key.lower() in _MANAGED_OPTIONS:
            msg = f"Spark option {key!r} is set from the builder: use {_MANAGED_OPTIONS[key.lower()]}"
            raise InvalidArgumentError(msg)
        self._spark_options[key] = str(value)
        return self

    def build(self) -> KafkaSource:
        bootstrap = self._bootstrap
        if bootstrap is None and "kafka.bootstrap.servers" in self._properties:
            bootstrap = self._properties.pop("kafka.bootstrap.servers")
        return KafkaSource(
            bootstrap_servers=bootstrap or "",
            topics=self._topics,
            topic_pattern=self._pattern,
            assigned=self._assigned,
            starting_offsets=self._starting,
            deserializer=self._deserializer,
            timestamp_field=self._timestamp_field,
            max_offsets_per_trigger=self._max_offsets,
            include_metadata=self._metadata,
            malformed_records_tag=self._malformed,
            partitions=self._partitions,
            properties=self._properties,
            spark_options=self._spark_options,
            malformed_records_policy=self._policy,
            dead_letter_table=self._dead_letters,
        )


DEAD_LETTER_COLUMNS = (
    "batch_id", "source", "topic", "partition", "offset", "kafka_timestamp", "key", "value", "reason",
    "recorded_at", "query_id",
)
"""The dead-letter table's columns (``pyspark_flinkish.spark.dead_letters`` has their types)."""


def _dead_letter_sink(table: Union[str, DeltaSink, None]) -> Optional[DeltaSink]:
    """The dead-letter table as a :class:`DeltaSink`: a ``str`` with ``/`` or ``:`` is a path, else a catalog name."""
    if table is None or isinstance(table, DeltaSink):
        if table is not None:
            if table.merge_keys:
                msg = f"the dead-letter table is appended to; got a DeltaSink with merge keys {list(table.merge_keys)}"
                raise InvalidArgumentError(msg)
            unknown = [c for c in table.partition_by if c not in DEAD_LETTER_COLUMNS]
            if unknown:
                msg = f"dead-letter table: partition columns {unknown} are not dead-letter columns {list(DEAD_LETTER_COLUMNS)}"
                raise InvalidArgumentError(msg)
        return table
    if not isinstance(table, str) or not table.strip():
        msg = f"set_dead_letter_table needs a path, a table name or a DeltaSink; got {table!r}"
        raise InvalidTypeError(msg)
    return DeltaSink.for_path(table) if ("/" in table or ":" in table) else DeltaSink.for_table(table)
