"""Kafka as a source of the foreachBatch executor: Spark's Kafka source, decoded in Spark, one watermark per
Kafka partition (split) as in Flink.

A :class:`~pyspark_flinkish.datastream.connectors.kafka.KafkaSource` becomes a streaming DataFrame read with
``spark.readStream.format("kafka")`` (every ``kafka.*`` property passed untouched), decoded with Spark's
``from_json`` / casts, and read through the executor's DataFrame source with

* ``partition_column``: ``<topic>-<partition>`` — each Kafka partition has its own watermark generator;
* ``partitions``: the topic's partitions, listed from the brokers when the pipeline is built, so that an empty
  partition holds the watermark back (unless the strategy has ``with_idleness``), as in Flink;
* ``order_columns``: (topic,) partition, offset — the processing order within a micro-batch;
* ``timestamp_column``: the JSON field given by ``set_timestamp_field``, else the record's Kafka timestamp.

A JSON value that cannot be decoded — null (a tombstone), not UTF-8, not JSON, not an object, a field whose JSON
type does not fit the schema, or (with ``timestamp_field``) a missing or null event time — becomes a
:class:`MalformedRecord` with a precise reason (:func:`malformed_reason`: which field, which JSON type, never the
value). A stateless step right after the source applies the source's :class:`MalformedRecordPolicy`: a
dead-letter side output that the driver writes to a Delta table (``spark/dead_letters.py``), the user's side
output, or a :class:`MalformedRecordError` naming the topic, partition and offset (never the value).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, Dict, List, Optional

from ..core.errors import InvalidPipelineError, InvalidTypeError, UnsupportedFeatureError
from ..core.records import OutputTag
from ..core.typeinfo import TypeInformation, Types
from ..core.watermarks import WatermarkStrategy
from ..datastream.connectors.kafka import (
    KafkaRecord,
    KafkaSource,
    KafkaTopicPartition,
    MalformedRecord,
    MalformedRecordError,
    MalformedRecordPolicy,
)
from ..datastream.data_stream import DataStream
from ..datastream.formats.json import JsonRowDeserializationSchema
from ..datastream.functions import ProcessFunction
from ..datastream.plan import DeadLetterRouteSpec, Transformation

TOPIC, PARTITION, OFFSET = "__kafka_topic", "__kafka_partition", "__kafka_offset"
TIMESTAMP, KEY, VALUE = "__kafka_timestamp", "__kafka_key", "__kafka_value"
SPLIT, TOPIC_ORDER, EVENT_TIME = "__kafka_split", "__kafka_topic_order", "__kafka_event_time"
MALFORMED, PARSED, CORRUPT = "__kafka_malformed", "__kafka_parsed", "__kafka_corrupt"
PARSE_FAILED = "__kafka_parse_failed"
DEAD_LETTER_TAG = OutputTag("__flinkish_dead_letters")
"""The internal side output of the dead-letter policy; ``spark/dead_letters.py`` adds its Delta sink."""


def kafka_stream(env: Any, source: KafkaSource, strategy: WatermarkStrategy, name: str) -> DataStream:
    """The stream ``env.from_source(source, strategy, name)`` returns on Spark (see the module docstring)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from .source_rows import DataFrameSource, SourceRestart

    if getattr(env, "backend", "foreach_batch") != "foreach_batch":
        msg = (
            f"Kafka source {name!r}: the {env.backend} executor cannot read Kafka (it has one global watermark, not "
            "one per Kafka partition, and no dead-letter table for malformed records); use the foreachBatch "
            "executor (get_execution_environment(spark), the default)"
        )
        raise UnsupportedFeatureError(msg)
    spark = env.spark
    partitions = topic_partitions(spark, source)
    options = source.spark_options(partitions)
    raw = _reader(spark, options).load()
    columns = [
        F.col("topic").alias(TOPIC),
        F.col("partition").alias(PARTITION),
        F.col("offset").alias(OFFSET),
        F.unix_millis(F.col("timestamp")).alias(TIMESTAMP),
        F.col("key").alias(KEY),
        F.col("value").alias(VALUE),
        F.concat_ws("-", F.col("topic"), F.col("partition").cast("string")).alias(SPLIT),
    ]
    order = [PARTITION, OFFSET]
    if source.single_topic is None:  # several topics: their partitions' offsets would tie
        columns.append(F.xxhash64(F.col("topic")).alias(TOPIC_ORDER))
        order.insert(0, TOPIC_ORDER)
    event_time = F.col(TIMESTAMP)
    output_type: Optional[TypeInformation] = None
    deserializer = source.deserializer
    if isinstance(deserializer, JsonRowDeserializationSchema):
        schema = json_schema(deserializer.type_info)
        if CORRUPT in schema.fieldNames():
            msg = f"the JSON schema must not have a field named {CORRUPT!r} (used to detect malformed values)"
            raise InvalidTypeError(msg)
        if source.timestamp_field is not None and source.timestamp_field not in schema.fieldNames():
            msg = f"set_timestamp_field: {source.timestamp_field!r} is not a field of the JSON schema ({schema.simpleString()})"
            raise InvalidTypeError(msg)
        parse_schema = T.StructType(list(schema.fields) + [T.StructField(CORRUPT, T.StringType())])
        parsed = F.from_json(
            F.col("value").cast("string"), parse_schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
        )
        parse_failed = F.col(PARSED).isNull() | F.col(f"{PARSED}.{CORRUPT}").isNotNull()
        # Spark decodes invalid UTF-8 with replacement characters, so such a value may still parse as JSON
        not_utf8 = ~F.call_function("is_valid_utf8", F.col(VALUE).cast("string"))
        bad = F.col(VALUE).isNull() | parse_failed | not_utf8
        fields = [F.col(PARSED).getField(f.name).alias(f"__v{i}") for i, f in enumerate(schema.fields)]
        if source.timestamp_field is not None:
            field = schema[source.timestamp_field]
            value = F.col(PARSED).getField(field.name)
            if isinstance(field.dataType, (T.TimestampType, T.TimestampNTZType)):
                event_time = F.unix_millis(value)
            elif isinstance(field.dataType, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
                event_time = value.cast("long")
            else:
                msg = (
                    f"set_timestamp_field: {field.name!r} must be epoch milliseconds (BIGINT/INT) or a TIMESTAMP; "
                    f"got {field.dataType.simpleString()}"
                )
                raise InvalidTypeError(msg)
            if strategy.timestamp_assigner is None:  # (an assigner gets the field as record_timestamp and decides)
                bad = bad | event_time.isNull()  # a valid value without event time: Flink would have no timestamp
        final = [*fields, bad.alias(MALFORMED), F.coalesce(parse_failed, F.lit(True)).alias(PARSE_FAILED),
                 F.when(~bad, event_time).alias(EVENT_TIME)]

        def shape(kafka_rows: Any) -> Any:
            decoded = kafka_rows.select(*columns, parsed.alias(PARSED))
            return decoded.select(*[F.col(c) for c in decoded.columns if c != PARSED], *final)
        element = _json_element(schema, source.include_metadata, source.timestamp_field)
        if isinstance(deserializer.type_info, TypeInformation) and not source.include_metadata:
            output_type = deserializer.type_info
    else:

        def shape(kafka_rows: Any) -> Any:
            return kafka_rows.select(*columns, event_time.alias(EVENT_TIME))

        charset = getattr(deserializer, "charset", None)
        element = _plain_element(charset, source.include_metadata)
        if charset is not None and not source.include_metadata:
            output_type = Types.STRING()
    df = shape(raw)

    def frame_at(offsets: Dict[str, Dict[str, int]]) -> Any:
        """The same DataFrame, starting at ``offsets`` (a savepoint's: the source's entry of Spark's offsets log)."""
        start = {k: v for k, v in options.items() if k not in ("startingOffsets", "startingTimestamp")}
        start["startingOffsets"] = json.dumps(offsets, sort_keys=True)
        return shape(_reader(spark, start).load())

    restart = SourceRestart("kafka", lambda entry: _owns(source, entry), frame_at)
    src = DataFrameSource(
        df, EVENT_TIME, SPLIT, order, [str(tp) for tp in partitions], element=element, restart=restart
    )
    t = Transformation("source", name, source=src, watermark_strategy=strategy, output_type=output_type)
    stream = DataStream(env, t)
    if isinstance(deserializer, JsonRowDeserializationSchema):
        policy = source.malformed_records_policy
        tag = {MalformedRecordPolicy.SIDE_OUTPUT: source.malformed_records_tag, MalformedRecordPolicy.FAIL: None}.get(
            policy, DEAD_LETTER_TAG
        )
        stream = stream.process(_RouteMalformed(tag), output_type=output_type).name(f"{name}: malformed")
        if policy == MalformedRecordPolicy.DEAD_LETTER:
            # the driver adds the dead-letter sink when the job starts (its default table is under the checkpoint)
            stream._t.spec = DeadLetterRouteSpec("process", source=name, table=source.dead_letter_table)
    return stream


def _reader(spark: Any, options: Dict[str, str]) -> Any:
    reader = spark.readStream.format("kafka")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader


def _owns(source: KafkaSource, entry: Any) -> bool:
    """Whether an entry of Spark's offsets log (``{topic: {partition: offset}}``) is this source's."""
    if not isinstance(entry, dict) or not entry:
        return False
    if not all(isinstance(v, dict) and all(isinstance(o, int) for o in v.values()) for v in entry.values()):
        return False
    if source.topics:
        return set(entry) <= set(source.topics)
    if source.topic_pattern is not None:
        return all(re.fullmatch(source.topic_pattern, topic) for topic in entry)
    return set(entry) <= {tp.topic for tp in source.assigned}


def json_schema(type_info: Any) -> Any:
    """The Spark ``StructType`` of a JSON row: from ``Types.ROW_NAMED`` or a DDL string."""
    from pyspark.sql import types as T

    from .types import to_spark_type

    if isinstance(type_info, TypeInformation):
        return to_spark_type(type_info)
    from pyspark.sql.types import _parse_datatype_string

    try:
        parsed = _parse_datatype_string(type_info)
    except Exception as exc:
        msg = f"the JSON schema {type_info!r} is not a Spark DDL string ({str(exc).splitlines()[0]})"
        raise InvalidTypeError(msg) from exc
    if not isinstance(parsed, T.StructType):
        parsed = T.StructType([T.StructField("value", parsed)])
    return parsed


def topic_partitions(spark: Any, source: KafkaSource) -> List[KafkaTopicPartition]:
    """The partitions that hold the watermark back from the start: given, assigned, or listed from the brokers
    through the Kafka client on Spark's classpath (with the source's ``kafka.*`` properties)."""
    if source.partitions is not None:
        return list(source.partitions)
    if source.assigned:
        return list(source.assigned)
    if not source.topics:
        return []  # a topic pattern: partitions appear with their first records
    try:
        jvm = spark._jvm
        if jvm is None:
            raise AttributeError(name="_jvm")
    except Exception as exc:  # Spark Connect: no JVM in this process
        msg = (
            f"cannot list the partitions of {list(source.topics)} without a JVM gateway (Spark Connect?): pass them "
            "with partitions=[...] (from_kafka) or set_expected_partitions([...])"
        )
        raise InvalidPipelineError(msg) from exc
    props = jvm.java.util.Properties()
    props.setProperty("bootstrap.servers", source.bootstrap_servers)
    for key, value in source.properties.items():
        props.setProperty(key[len("kafka.") :], value)
    names = jvm.java.util.ArrayList()
    for topic in source.topics:
        names.add(topic)
    admin = None
    try:
        admin = jvm.org.apache.kafka.clients.admin.Admin.create(props)
        described = admin.describeTopics(names).allTopicNames().get(60, jvm.java.util.concurrent.TimeUnit.SECONDS)
        out = []
        for topic in source.topics:
            for info in described.get(topic).partitions():
                out.append(KafkaTopicPartition(topic, int(info.partition())))
        return sorted(out)
    except Exception as exc:
        # the Kafka client's message, never with a secret of the options (Kafka hides its Password configs,
        # but a JAAS parse error may quote the config); the Java exception is chained only if it is clean
        cause = source.redact(str(getattr(exc, "java_exception", exc)).splitlines()[0][:300])
        msg = (
            f"could not list the partitions of {list(source.topics)} on {source.bootstrap_servers}: {cause}. Create "
            "the topics first, check the kafka.* security options, or pass partitions=[...] / set_expected_partitions"
        )
        clean = source.redact(str(exc)) == str(exc)
        raise InvalidPipelineError(msg) from (exc if clean else None)
    finally:
        if admin is not None:
            admin.close(jvm.java.time.Duration.ofSeconds(5))


# ---------------------------------------------------------------------------------------- on the executors
def _is_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    try:
        import pandas as pd

        return value is pd.NaT
    except ImportError:  # pragma: no cover
        return False


def _converter(data_type: Any) -> Callable[[Any], Any]:
    """Python value of a Spark type from what pandas holds (ints with nulls come as floats, structs as dicts, ...)."""
    from pyspark.sql import Row
    from pyspark.sql import types as T

    def nullable(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        return lambda v: None if _is_null(v) else fn(v)

    if isinstance(data_type, T.BooleanType):
        return nullable(bool)
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return nullable(int)
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        return nullable(float)
    if isinstance(data_type, T.StringType):
        return nullable(str)
    if isinstance(data_type, T.BinaryType):
        return nullable(bytes)
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        return nullable(lambda v: v.to_pydatetime() if hasattr(v, "to_pydatetime") else v)
    if isinstance(data_type, T.StructType):
        names = data_type.fieldNames()
        convs = [_converter(f.dataType) for f in data_type.fields]

        def struct(v: Any) -> Any:
            items = [v.get(n) for n in names] if isinstance(v, dict) else list(v)
            return Row(**{n: c(x) for n, c, x in zip(names, convs, items)})

        return nullable(struct)
    if isinstance(data_type, T.ArrayType):
        elem = _converter(data_type.elementType)
        return nullable(lambda v: [elem(x) for x in v])
    if isinstance(data_type, T.MapType):
        kc, vc = _converter(data_type.keyType), _converter(data_type.valueType)
        return nullable(lambda v: {kc(k): vc(x) for k, x in (v.items() if isinstance(v, dict) else v)})
    return nullable(lambda v: v.item() if hasattr(v, "item") else v)


_JSON_KINDS = {dict: "a JSON object", list: "a JSON array", str: "a JSON string", bool: "a JSON boolean"}
_MAX_FIELDS = 3  # field problems named in one reason


def malformed_reason(
    value: Optional[bytes],
    schema: Any,
    parsed: Optional[Dict[str, Any]] = None,
    parse_failed: bool = True,
    timestamp_field: Optional[str] = None,
) -> str:
    """Why a Kafka value is a malformed record, precisely and without any of its content.

    ``schema`` is the JSON row's Spark ``StructType``; ``parsed`` the top-level fields as Spark's ``from_json``
    decoded them (partial results: a field that does not fit is null); ``parse_failed`` whether Spark reported
    the value as corrupt (else only the event time of ``timestamp_field`` is missing). Spark decides what is
    malformed; this only explains it, by comparing the value's JSON with what Spark decoded.

    Example:
        >>> from pyspark.sql.types import LongType, StringType, StructField, StructType
        >>> schema = StructType([StructField("user", StringType()), StructField("t", LongType())])
        >>> malformed_reason(b'{"user": "ann", "t": "soon"}', schema, {"user": "ann", "t": None})
        "field 't' is a JSON string, not bigint"
        >>> malformed_reason(b'{"user": "ann"}', schema, {"user": "ann", "t": None}, False, "t")
        "event-time field 't' is missing"
    """
    if value is None:
        return "null value (a tombstone)"
    try:
        text = bytes(value).decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    try:
        decoded = json.loads(text)
    except ValueError as exc:
        if not parse_failed and timestamp_field is not None:  # Spark read it (it tolerates trailing text)
            return f"event-time field {timestamp_field!r} is missing or null"
        msg = getattr(exc, "msg", str(exc))
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        return f"not JSON ({msg}{where})"
    if not isinstance(decoded, dict):
        return f"not a JSON object ({_json_kind(decoded)})"
    problems = _field_problems(decoded, schema, parsed or {}, "") if parse_failed else []
    if problems:
        more = f"; and {len(problems) - _MAX_FIELDS} more fields" if len(problems) > _MAX_FIELDS else ""
        return "; ".join(problems[:_MAX_FIELDS]) + more
    if timestamp_field is not None and _is_null(decoded.get(timestamp_field)):
        return f"event-time field {timestamp_field!r} is {'missing' if timestamp_field not in decoded else 'null'}"
    return f"does not fit the schema {schema.simpleString()}"


def _json_kind(value: Any) -> str:
    if value is None:
        return "a JSON null"
    if isinstance(value, float):
        return "a JSON number with a fraction or exponent"
    if isinstance(value, int) and not isinstance(value, bool):
        return "a JSON integer"
    return _JSON_KINDS.get(type(value), f"a JSON {type(value).__name__}")


def _field_problems(decoded: Dict[str, Any], schema: Any, parsed: Any, prefix: str) -> List[str]:
    """Fields present in the JSON (not null) that Spark decoded as null: they do not fit their type."""
    out: List[str] = []
    for field in schema.fields:
        raw = decoded.get(field.name)
        if _is_null(raw):
            continue
        got = parsed.get(field.name) if isinstance(parsed, dict) else getattr(parsed, field.name, None)
        path = prefix + field.name
        kind = type(field.dataType).__name__
        if not _is_null(got):
            if kind == "StructType" and isinstance(raw, dict):  # partial results inside a struct
                out.extend(_field_problems(raw, field.dataType, got, path + "."))
            continue
        type_name = field.dataType.simpleString()
        if isinstance(raw, str) and kind in ("TimestampType", "TimestampNTZType", "DateType"):
            out.append(f"field {path!r} is a JSON string that does not parse as a {type_name}")
        elif isinstance(raw, int) and not isinstance(raw, bool) and kind in ("LongType", "IntegerType", "ShortType", "ByteType"):
            out.append(f"field {path!r} is a JSON integer out of range for {type_name}")
        else:
            out.append(f"field {path!r} is {_json_kind(raw)}, not {type_name}")
    return out


def _meta(rec: Dict[str, Any]) -> tuple:  # type: ignore[type-arg]
    key = rec[KEY]
    return str(rec[TOPIC]), int(rec[PARTITION]), int(rec[OFFSET]), int(rec[TIMESTAMP]), None if _is_null(key) else bytes(key)


def _json_element(schema: Any, include_metadata: bool, timestamp_field: Optional[str]) -> Callable[[Dict[str, Any]], Any]:
    from pyspark.sql import Row

    names = schema.fieldNames()
    convs = [_converter(f.dataType) for f in schema.fields]

    def element(rec: Dict[str, Any]) -> Any:
        if rec[MALFORMED]:
            raw = None if _is_null(rec[VALUE]) else bytes(rec[VALUE])
            parsed = {n: rec[f"__v{i}"] for i, n in enumerate(names)}
            reason = malformed_reason(raw, schema, parsed, bool(rec[PARSE_FAILED]), timestamp_field)
            return MalformedRecord(*_meta(rec), raw, reason)
        value = Row(**{n: c(rec[f"__v{i}"]) for i, (n, c) in enumerate(zip(names, convs))})
        return KafkaRecord(*_meta(rec), value) if include_metadata else value

    return element


def _plain_element(charset: Optional[str], include_metadata: bool) -> Callable[[Dict[str, Any]], Any]:
    def element(rec: Dict[str, Any]) -> Any:
        raw = rec[VALUE]
        value = None if _is_null(raw) else bytes(raw)
        if value is not None and charset is not None:
            value = value.decode(charset, errors="replace")  # type: ignore[assignment]
        return KafkaRecord(*_meta(rec), value) if include_metadata else value

    return element


class _RouteMalformed(ProcessFunction):  # type: ignore[type-arg]
    """Right after a JSON Kafka source: malformed records to a side output (the user's, or the dead-letter
    one), or a clear failure (``tag`` None: the policy ``fail``)."""

    def __init__(self, tag: Any) -> None:
        self.tag = tag

    def process_element(self, value: Any, ctx: Any) -> Any:
        if isinstance(value, MalformedRecord):
            if self.tag is None:
                msg = (
                    f"malformed Kafka record in topic {value.topic!r}, partition {value.partition}, offset "
                    f"{value.offset}: {value.reason}. The source's malformed-records policy is 'fail'; the policy "
                    "'dead_letter' (the default) writes such records to a Delta table and goes on"
                )
                raise MalformedRecordError(msg)
            yield self.tag, value
            return
        yield value


__all__ = [
    "TOPIC",
    "PARTITION",
    "OFFSET",
    "TIMESTAMP",
    "KEY",
    "VALUE",
    "SPLIT",
    "TOPIC_ORDER",
    "EVENT_TIME",
    "MALFORMED",
    "PARSED",
    "CORRUPT",
    "PARSE_FAILED",
    "DEAD_LETTER_TAG",
    "kafka_stream",
    "json_schema",
    "topic_partitions",
    "malformed_reason",
]
