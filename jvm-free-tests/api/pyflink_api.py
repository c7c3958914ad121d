"""PyFlink 2.x public names (module -> names) the parity test checks, and the ones deliberately absent.

Each exclusion says why. Keep this list in sync with PyFlink when it grows.
"""

from __future__ import annotations

PYFLINK_NAMES: dict[str, list[str]] = {
    "common": ["Duration", "Time", "WatermarkStrategy", "TimestampAssigner", "Types", "TypeInformation"],
    "datastream": [
        "StreamExecutionEnvironment", "DataStream", "KeyedStream", "WindowedStream", "DataStreamSink", "OutputTag",
        "TimeDomain", "MapFunction", "FlatMapFunction", "FilterFunction", "KeySelector", "ReduceFunction",
        "AggregateFunction", "ProcessFunction", "KeyedProcessFunction", "ProcessWindowFunction", "WindowFunction",
        "RuntimeContext", "TimerService", "SinkFunction", "Window", "TimeWindow", "WindowAssigner",
        "MergingWindowAssigner", "TriggerResult", "Trigger",
        "ConnectedStreams", "BroadcastStream", "BroadcastConnectedStream", "AllWindowedStream", "CoMapFunction",
        "CoFlatMapFunction", "CoProcessFunction", "KeyedCoProcessFunction", "BroadcastProcessFunction",
        "KeyedBroadcastProcessFunction", "ProcessAllWindowFunction", "AllWindowFunction", "Partitioner",
        "SourceFunction", "CheckpointConfig", "CheckpointingMode", "StateBackend", "HashMapStateBackend",
        "EmbeddedRocksDBStateBackend", "CheckpointStorage", "TimeCharacteristic", "RuntimeExecutionMode",
        "SlotSharingGroup", "CountWindow",
    ],
    "datastream.window": [
        "Window", "TimeWindow", "GlobalWindow", "WindowAssigner", "MergingWindowAssigner",
        "TumblingProcessingTimeWindows", "TumblingEventTimeWindows", "SlidingProcessingTimeWindows",
        "SlidingEventTimeWindows", "ProcessingTimeSessionWindows", "EventTimeSessionWindows",
        "DynamicProcessingTimeSessionWindows", "DynamicEventTimeSessionWindows", "GlobalWindows",
        "TriggerResult", "Trigger", "EventTimeTrigger", "ProcessingTimeTrigger", "ContinuousEventTimeTrigger",
        "ContinuousProcessingTimeTrigger", "NeverTrigger", "PurgingTrigger", "CountTrigger",
        "SessionWindowTimeGapExtractor",
        "CountWindow", "CountTumblingWindowAssigner", "CountSlidingWindowAssigner", "TimeWindowSerializer",
        "CountWindowSerializer", "GlobalWindowSerializer",
    ],
    "datastream.functions": [
        "Function", "RuntimeContext", "MapFunction", "FlatMapFunction", "FilterFunction", "ReduceFunction",
        "AggregateFunction", "KeySelector", "ProcessFunction", "KeyedProcessFunction", "ProcessWindowFunction",
        "WindowFunction", "SinkFunction", "TimerService", "KeyedStateStore",
        "CoMapFunction", "CoFlatMapFunction", "CoProcessFunction", "KeyedCoProcessFunction",
        "BroadcastProcessFunction", "KeyedBroadcastProcessFunction", "AllWindowFunction", "ProcessAllWindowFunction",
        "SourceFunction", "Partitioner",
    ],
    "common.serialization": ["SimpleStringSchema", "DeserializationSchema"],
    "datastream.formats.json": ["JsonRowDeserializationSchema"],
    "datastream.connectors.kafka": [
        "KafkaSource", "KafkaSourceBuilder", "KafkaOffsetsInitializer", "KafkaOffsetResetStrategy", "KafkaTopicPartition",
        "KafkaSink", "KafkaSinkBuilder", "KafkaRecordSerializationSchema", "KafkaTopicSelector",
    ],
    "datastream.state": [
        "State", "StateDescriptor", "ValueState", "ValueStateDescriptor", "ListState", "ListStateDescriptor",
        "MapState", "MapStateDescriptor", "ReducingState", "ReducingStateDescriptor", "AggregatingState",
        "AggregatingStateDescriptor", "StateTtlConfig",
        "BroadcastState", "ReadOnlyBroadcastState", "OperatorStateStore",
    ],
}

_TWO_INPUT = "two-input streams (connect/broadcast) are not in the semantic core yet"
_WINDOW_ALL = "non-keyed windowAll is not supported: Spark needs a key to partition state"
_CLUSTER = "Flink cluster configuration: Spark's checkpointing and state store take this role"
_SERIALIZER = "PyFlink-internal serializer; windows are encoded by the keyed-snapshot codec"
_KAFKA_SINK = "no Kafka sink yet: Spark's Kafka sink is at-least-once; write results with foreach_batch"

EXCLUDED: dict[str, dict[str, str]] = {
    "datastream": {
        "ConnectedStreams": _TWO_INPUT, "BroadcastStream": _TWO_INPUT, "BroadcastConnectedStream": _TWO_INPUT,
        "CoMapFunction": _TWO_INPUT, "CoFlatMapFunction": _TWO_INPUT, "CoProcessFunction": _TWO_INPUT,
        "KeyedCoProcessFunction": _TWO_INPUT, "BroadcastProcessFunction": _TWO_INPUT,
        "KeyedBroadcastProcessFunction": _TWO_INPUT,
        "AllWindowedStream": _WINDOW_ALL, "ProcessAllWindowFunction": _WINDOW_ALL, "AllWindowFunction": _WINDOW_ALL,
        "Partitioner": "custom partitioning: Spark shuffles by key hash",
        "SourceFunction": "legacy source API; sources are MicroBatchSource here (Kafka and Delta on Spark)",
        "CheckpointConfig": _CLUSTER, "CheckpointingMode": _CLUSTER, "StateBackend": _CLUSTER,
        "HashMapStateBackend": _CLUSTER, "EmbeddedRocksDBStateBackend": _CLUSTER, "CheckpointStorage": _CLUSTER,
        "TimeCharacteristic": "removed in Flink 2.x; event time is the default",
        "RuntimeExecutionMode": "BATCH mode is not offered; bounded inputs run in streaming mode to end of input",
        "SlotSharingGroup": _CLUSTER,
    },
    "datastream.window": {
        "TimeWindowSerializer": _SERIALIZER, "CountWindowSerializer": _SERIALIZER, "GlobalWindowSerializer": _SERIALIZER,
    },
    "datastream.functions": {
        "CoMapFunction": _TWO_INPUT, "CoFlatMapFunction": _TWO_INPUT, "CoProcessFunction": _TWO_INPUT,
        "KeyedCoProcessFunction": _TWO_INPUT, "BroadcastProcessFunction": _TWO_INPUT,
        "KeyedBroadcastProcessFunction": _TWO_INPUT, "AllWindowFunction": _WINDOW_ALL,
        "ProcessAllWindowFunction": _WINDOW_ALL,
        "SourceFunction": "legacy source API; sources are MicroBatchSource here (Kafka and Delta on Spark)",
        "Partitioner": "custom partitioning: Spark shuffles by key hash",
    },
    "datastream.connectors.kafka": {
        "KafkaSink": _KAFKA_SINK, "KafkaSinkBuilder": _KAFKA_SINK, "KafkaRecordSerializationSchema": _KAFKA_SINK,
        "KafkaTopicSelector": _KAFKA_SINK,
    },
    "datastream.state": {
        "BroadcastState": _TWO_INPUT, "ReadOnlyBroadcastState": _TWO_INPUT,
        "OperatorStateStore": "operator (non-keyed) state: Spark has no per-task state to map it to",
    },
}

# Methods a PyFlink user calls on these classes (same names, same argument order).
PYFLINK_METHODS: dict[str, list[str]] = {
    "datastream.StreamExecutionEnvironment": ["get_execution_environment", "from_collection", "from_source", "execute",
                                              "set_parallelism", "get_parallelism"],
    "datastream.DataStream": ["map", "flat_map", "filter", "key_by", "union", "process", "assign_timestamps_and_watermarks",
                              "get_side_output", "execute_and_collect", "add_sink", "sink_to", "print", "name", "uid",
                              "set_parallelism", "get_name", "get_type", "get_execution_environment"],
    "datastream.KeyedStream": ["window", "count_window", "process", "reduce", "map", "flat_map", "filter"],
    "datastream.WindowedStream": ["trigger", "evictor", "allowed_lateness", "side_output_late_data", "reduce", "aggregate",
                                  "process", "apply"],
    "common.WatermarkStrategy": ["for_bounded_out_of_orderness", "for_monotonous_timestamps", "no_watermarks",
                                 "with_timestamp_assigner", "with_idleness", "with_watermark_alignment"],
    "datastream.TimerService": ["current_processing_time", "current_watermark", "register_processing_time_timer",
                                "register_event_time_timer", "delete_processing_time_timer", "delete_event_time_timer"],
    "datastream.ProcessWindowFunction.Context": ["window", "current_processing_time", "current_watermark",
                                                 "window_state", "global_state"],
    "datastream.KeyedProcessFunction.Context": ["timestamp", "timer_service", "get_current_key"],
    "datastream.KeyedProcessFunction.OnTimerContext": ["time_domain"],
    "datastream.window.Trigger": ["on_element", "on_processing_time", "on_event_time", "can_merge", "on_merge", "clear"],
    "datastream.window.WindowAssigner": ["assign_windows", "get_default_trigger", "is_event_time"],
    "datastream.window.TumblingEventTimeWindows": ["of"],
    "datastream.window.SlidingEventTimeWindows": ["of"],
    "datastream.window.EventTimeSessionWindows": ["with_gap", "with_dynamic_gap"],
    "datastream.window.GlobalWindows": ["create"],
    "datastream.window.CountTrigger": ["of"],
    "datastream.window.CountTumblingWindowAssigner": ["of"],
    "datastream.window.CountSlidingWindowAssigner": ["of"],
    "datastream.window.PurgingTrigger": ["of"],
    "datastream.window.EventTimeTrigger": ["create"],
    "datastream.window.ContinuousEventTimeTrigger": ["of"],
    "datastream.state.StateTtlConfig": ["new_builder"],
    "datastream.state.ListState": ["get", "add", "update", "add_all", "clear"],
    "datastream.state.MapState": ["get", "put", "put_all", "remove", "contains", "items", "keys", "values", "is_empty", "clear"],
    "datastream.state.ValueState": ["value", "update", "clear"],
    "datastream.RuntimeContext": ["get_state", "get_list_state", "get_map_state", "get_reducing_state",
                                  "get_aggregating_state", "get_task_name", "get_number_of_parallel_subtasks",
                                  "get_index_of_this_subtask"],
}
