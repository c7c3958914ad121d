"""Two-input jobs (connect + co-functions, broadcast state) written once against PyFlink's API and run unchanged on
real PyFlink 2.3.0 (``benchmarks/pyflink_two_input.py``, which writes ``pyflink_two_input.json``) and on
pyspark_flinkish (``test_pyflink_two_input.py``: local engine; ``tests/spark/test_spark_two_input.py``: the
foreachBatch executor). Only the imports differ: :func:`build` takes them as an :class:`Api`.

The order in which a two-input operator sees its inputs' records is not defined by Flink, so every job is designed
so that its *multiset* of outputs is: element outputs depend on their own element only, and whatever combines both
inputs runs in an event-time timer, which fires only once the operator's watermark -- the minimum of its inputs'
-- has passed it, and looks only at state with timestamps up to the timer's. Tests compare sorted outputs.

Every output is a JSON string: ``["main", ...]`` or ``["side", ...]`` (a side output, unioned with the main
output so that one job collects both).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List

# (id, event time ms, amount), ascending time
ORDERS = [["o1", 1000, 30], ["o2", 2000, 50], ["o3", 3000, 20], ["o4", 9000, 70], ["o5", 15000, 10]]
# (id, event time ms), ascending time
PAYMENTS = [["o2", 1500], ["o1", 4000], ["o4", 12000], ["o3", 14000], ["o6", 16000]]
# fast input with watermarks, slow input without: (key, event time ms)
FAST = [["k", 1000], ["j", 2000], ["k", 5000], ["k", 9000]]
SLOW = [["k", 3000], ["j", 4000], ["k", 20000]]
# rules: (event time ms, rule name, threshold), ascending time -- a rule may change over time
RULES = [[0, "big", 100], [0, "tiny", 5], [5000, "big", 50], [12000, "tiny", 1]]
# events: (user, event time ms, rule name, amount), ascending time
EVENTS = [
    ["u1", 1000, "big", 70], ["u2", 2000, "tiny", 3], ["u1", 6000, "big", 70], ["u2", 7000, "big", 200],
    ["u3", 8000, "huge", 1], ["u2", 13000, "tiny", 3], ["u1", 13000, "big", 40],
]
INPUTS: Dict[str, List[Any]] = {
    "orders": ORDERS, "payments": PAYMENTS, "fast": FAST, "slow": SLOW, "rules": RULES, "events": EVENTS,
}
PAYMENT_TIMEOUT = 5000

CASES = ["co_map", "co_flat_map", "co_process", "keyed_co_process_timers", "watermark_is_min_of_inputs",
         "broadcast_process", "keyed_broadcast_process", "broadcast_per_instance", "keyed_broadcast_per_instance"]
# the environment's parallelism per case (1 for the others): in Flink every parallel instance of a broadcast operator
# runs process_broadcast_element and emits what it returns; keyed_broadcast_per_instance also sets its operator's
# parallelism (3)
PARALLELISM = {"broadcast_per_instance": 2, "keyed_broadcast_per_instance": 2}


@dataclass
class Api:
    """What a job imports: ``pyflink`` or ``pyspark_flinkish`` modules (``common``, ``functions``, ``state``,
    ``OutputTag``) and ``source(env, name, rows, time_index, watermarks)``, which makes a stream of the rows
    (tuples) with event time ``row[time_index]``, with monotonous watermarks or none (``watermarks=False``)."""

    types: Any
    functions: Any
    state: Any
    output_tag: Any
    source: Callable[..., Any]


def pyspark_flinkish_api(batches: int) -> Api:
    """pyspark_flinkish's modules (imported here, so that PyFlink's interpreter never needs them) and sources that
    split their rows into ``batches`` micro-batches (``MicroBatchSource``, which both engines run)."""
    from pyspark_flinkish.common import Types, WatermarkStrategy
    from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag
    from pyspark_flinkish.datastream import functions as our_functions
    from pyspark_flinkish.datastream import state as our_state

    def source(env: Any, name: str, rows: List[Any], time_index: int, watermarks: bool) -> Any:
        base = WatermarkStrategy.for_monotonous_timestamps() if watermarks else WatermarkStrategy.no_watermarks()
        strategy = base.with_timestamp_assigner(lambda e, _: int(e[time_index]))
        step = -(-len(rows) // batches)
        micro_batches = [MicroBatch(rows[i : i + step]) for i in range(0, len(rows), step)]
        return env.from_source(MicroBatchSource(micro_batches), strategy, name)

    return Api(types=Types, functions=our_functions, state=our_state, output_tag=OutputTag, source=source)


def build(env: Any, api: Any, case: str) -> Any:
    """The job ``case`` on ``env``: a stream of JSON strings (main and side outputs)."""
    f, s, types = api.functions, api.state, api.types
    string = types.STRING()
    side_tag = api.output_tag("side", string)

    def src(name: str, time_index: int = 1, watermarks: bool = True) -> Any:
        return api.source(env, name, [tuple(r) for r in INPUTS[name]], time_index, watermarks)

    def main(*values: Any) -> str:
        return json.dumps(["main", *values])

    def side(*values: Any) -> Any:
        return side_tag, json.dumps(["side", *values])

    def with_side(stream: Any) -> Any:
        return stream.union(stream.get_side_output(side_tag))

    if case == "co_map":

        class Tag(f.CoMapFunction):
            def map1(self, value: Any) -> Any:
                return main("order", value[0], value[2] * 2)

            def map2(self, value: Any) -> Any:
                return main("payment", value[0])

        return src("orders").connect(src("payments")).map(Tag(), output_type=string)

    if case == "co_flat_map":

        class Split(f.CoFlatMapFunction):
            def flat_map1(self, value: Any) -> Any:
                for i in range(value[2] // 20):
                    yield main("order-part", value[0], i)

            def flat_map2(self, value: Any) -> Any:
                if value[0] != "o6":
                    yield main("payment", value[0])

        return src("orders").connect(src("payments")).flat_map(Split(), output_type=string)

    if case == "co_process":

        class Stamp(f.CoProcessFunction):
            def process_element1(self, value: Any, ctx: Any) -> Any:
                yield main("order", value[0], ctx.timestamp())
                if value[2] >= 50:
                    yield side("big-order", value[0], value[2])

            def process_element2(self, value: Any, ctx: Any) -> Any:
                yield main("payment", value[0], ctx.timestamp())

        return with_side(src("orders").connect(src("payments")).process(Stamp(), output_type=string))

    if case == "keyed_co_process_timers":

        class PaymentCheck(f.KeyedCoProcessFunction):
            """An order is paid if a payment of its id has event time <= the order's time + the timeout; decided by
            an event-time timer, so the outcome does not depend on the inputs' interleaving."""

            def open(self, runtime_context: Any) -> None:
                self.order = runtime_context.get_state(s.ValueStateDescriptor("order", types.PICKLED_BYTE_ARRAY()))
                self.paid = runtime_context.get_list_state(s.ListStateDescriptor("paid", types.LONG()))

            def process_element1(self, value: Any, ctx: Any) -> Any:
                self.order.update([value[1], value[2]])
                ctx.timer_service().register_event_time_timer(value[1] + PAYMENT_TIMEOUT)
                return []

            def process_element2(self, value: Any, ctx: Any) -> Any:
                self.paid.add(value[1])
                yield main("payment", ctx.get_current_key(), ctx.timestamp())

            def on_timer(self, timestamp: int, ctx: Any) -> Any:
                order_ts, amount = self.order.value()
                paid = sorted(p for p in self.paid.get() if p <= timestamp)
                if paid:
                    yield main("paid", ctx.get_current_key(), order_ts, amount, paid[0], ctx.timestamp())
                else:
                    yield side("unpaid", ctx.get_current_key(), order_ts, amount, timestamp)
                self.order.clear()

        connected = src("orders").connect(src("payments")).key_by(lambda o: o[0], lambda p: p[0], key_type=string)
        return with_side(connected.process(PaymentCheck(), output_type=string))

    if case == "watermark_is_min_of_inputs":

        class Counts(f.KeyedCoProcessFunction):
            """Timers at the fast input's event times; they fire only when the slow input (no watermarks until its
            end) lets the operator's watermark pass, so every count is the key's total."""

            def open(self, runtime_context: Any) -> None:
                self.n1 = runtime_context.get_state(s.ValueStateDescriptor("n1", types.INT()))
                self.n2 = runtime_context.get_state(s.ValueStateDescriptor("n2", types.INT()))

            def process_element1(self, value: Any, ctx: Any) -> Any:
                self.n1.update((self.n1.value() or 0) + 1)
                ctx.timer_service().register_event_time_timer(value[1])
                return []

            def process_element2(self, value: Any, ctx: Any) -> Any:
                self.n2.update((self.n2.value() or 0) + 1)
                return []

            def on_timer(self, timestamp: int, ctx: Any) -> Any:
                yield main("timer", ctx.get_current_key(), timestamp, self.n1.value() or 0, self.n2.value() or 0)

        connected = src("fast").connect(src("slow", watermarks=False)).key_by(lambda e: e[0], lambda e: e[0], key_type=string)
        return connected.process(Counts(), output_type=string)

    def rules() -> Any:
        """The broadcast state's descriptor, made afresh where it is used: PyFlink's functions are pickled, and a
        descriptor that went through ``broadcast(...)`` holds Java objects."""
        return s.MapStateDescriptor("rules", types.STRING(), types.PICKLED_BYTE_ARRAY())

    if case == "broadcast_process":

        class Rules(f.BroadcastProcessFunction):
            def process_element(self, value: Any, ctx: Any) -> Any:
                yield main("event", value[0], ctx.timestamp(), value[3])

            def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
                state = ctx.get_broadcast_state(rules())
                versions = state.get(value[1]) or []
                state.put(value[1], versions + [[value[0], value[2]]])
                yield main("rule", value[1], value[0], value[2], len(versions) + 1)

        return src("events").connect(src("rules", time_index=0).broadcast(rules())).process(Rules(), output_type=string)

    if case == "keyed_broadcast_process":

        class Thresholds(f.KeyedBroadcastProcessFunction):
            """Each event is checked at its own event time against the rule version in force then (the latest with a
            time <= the event's): the timer fires once the rules' watermark has passed the event's time."""

            def open(self, runtime_context: Any) -> None:
                self.pending = runtime_context.get_list_state(s.ListStateDescriptor("pending", types.PICKLED_BYTE_ARRAY()))

            def process_element(self, value: Any, ctx: Any) -> Any:
                try:
                    ctx.get_broadcast_state(rules()).put("forbidden", [])
                    refused = False
                except Exception:  # PyFlink's read-only view has no put; ours raises
                    refused = True
                self.pending.add([value[1], value[2], value[3]])
                ctx.timer_service().register_event_time_timer(value[1])
                yield main("event", ctx.get_current_key(), ctx.timestamp(), refused)

            def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
                state = ctx.get_broadcast_state(rules())
                versions = state.get(value[1]) or []
                state.put(value[1], versions + [[value[0], value[2]]])
                return []

            def on_timer(self, timestamp: int, ctx: Any) -> Any:
                state = ctx.get_broadcast_state(rules())
                keep = []
                for ts, rule, amount in self.pending.get():
                    if ts != timestamp:
                        keep.append([ts, rule, amount])
                        continue
                    versions = [v for v in (state.get(rule) or []) if v[0] <= timestamp]
                    if not versions:
                        yield side("no-rule", ctx.get_current_key(), timestamp, rule)
                        continue
                    threshold = versions[-1][1]
                    verdict = "alert" if amount > threshold else "ok"
                    yield main(verdict, ctx.get_current_key(), timestamp, rule, amount, threshold)
                self.pending.update(keep)

        keyed = src("events").key_by(lambda e: e[0], key_type=string)
        stream = keyed.connect(src("rules", time_index=0).broadcast(rules())).process(Thresholds(), output_type=string)
        return with_side(stream)

    if case in ("broadcast_per_instance", "keyed_broadcast_per_instance"):
        keyed_case = case == "keyed_broadcast_per_instance"
        base = f.KeyedBroadcastProcessFunction if keyed_case else f.BroadcastProcessFunction

        class PerInstance(base):  # type: ignore[misc,valid-type]
            """What process_broadcast_element yields (main and side outputs) comes once per parallel instance; what
            process_element yields once (each element goes to one instance)."""

            def process_element(self, value: Any, ctx: Any) -> Any:
                yield main("event", value[0], ctx.timestamp(), value[2])

            def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
                state = ctx.get_broadcast_state(rules())
                versions = state.get(value[1]) or []
                state.put(value[1], versions + [[value[0], value[2]]])
                yield main("rule", value[1], value[0], len(versions) + 1)
                yield side("rule-seen", value[1], ctx.timestamp())

        events = src("events")
        if keyed_case:
            events = events.key_by(lambda e: e[0], key_type=string)
        stream = events.connect(src("rules", time_index=0).broadcast(rules())).process(PerInstance(), output_type=string)
        if keyed_case:
            stream = stream.set_parallelism(3)
        return with_side(stream)

    msg = f"unknown case {case!r}"
    raise ValueError(msg)


def decode(outputs: List[str]) -> List[Any]:
    """The outputs as sorted JSON values (a multiset: Flink does not order a two-input operator's inputs)."""
    return sorted((json.loads(o) for o in outputs), key=json.dumps)
