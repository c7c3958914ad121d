"""Issue 14's "done when" job, written once against PyFlink's API: ``Row`` (``ROW_NAMED``), ``connect`` with a
``KeyedCoProcessFunction`` (an event-time timer), keyed broadcast state (``KeyedBroadcastProcessFunction``), ``window_all``
and ``KeyedStream.sum``, in ONE job. Real PyFlink 2.3.0 runs it (``benchmarks/pyflink_done_when.py`` writes
``pyflink_done_when.json``); ``test_pyflink_done_when.py`` (local engine) and ``tests/spark/test_spark_two_input.py``
(foreachBatch executor) run the same code with pyspark_flinkish's modules: only the imports differ (:func:`build`
takes them as a namespace).

The job: orders and payments (rows made ``ROW_NAMED`` by a ``map``) are connected and keyed by order id; an order is
``paid`` if a payment of it has event time <= the order's + ``PAYMENT_TIMEOUT``, decided by an event-time timer. Each
decision is checked, at its own event time, against the broadcast rule version in force then (a timer again: it fires
once the rules' watermark has passed). The checked orders are summed per 10 s event-time window over all keys
(``window_all``) and rolled up per status (``key_by(status).sum``).

Determinism: Flink does not order a two-input operator's inputs, so everything that combines two inputs runs in an
event-time timer (which fires only when the minimum of the inputs' watermarks has passed it) and looks only at state
up to the timer's time; no two timers share a timestamp, so the rolling sums see their input in one order. The
outputs are still compared as a multiset (sorted): the interleaving of the three outputs in the union is not defined.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

# (id, event time ms, amount), ascending time
ORDERS = [["o1", 1000, 30], ["o2", 2000, 50], ["o3", 3000, 20], ["o4", 9000, 70], ["o5", 15000, 10], ["o6", 21000, 90]]
# (id, event time ms), ascending time
PAYMENTS = [["o2", 1500], ["o1", 4000], ["o4", 12000], ["o3", 14000], ["o6", 22000]]
# rules: (event time ms, name, threshold), ascending time; the "big" threshold changes at 8 s
RULES = [[0, "big", 40], [8000, "big", 60]]
INPUTS: Dict[str, List[Any]] = {"orders": ORDERS, "payments": PAYMENTS, "rules": RULES}
PAYMENT_TIMEOUT = 5000
WINDOW_SECONDS = 10


def build(env: Any, api: Any) -> Any:
    """The job on ``env``: a stream of JSON strings. ``api`` holds ``Types``, ``Row``, ``Time``, the modules
    ``functions``, ``state`` and ``window``, and ``source(env, name, rows, time_index)`` (tuples with event time
    ``row[time_index]`` and monotonous watermarks)."""
    f, s, types, row = api.functions, api.state, api.Types, api.Row
    string, long, integer = types.STRING(), types.LONG(), types.INT()
    order_type = types.ROW_NAMED(["id", "ts", "amount"], [string, long, integer])
    payment_type = types.ROW_NAMED(["id", "ts"], [string, long])
    decision_type = types.ROW_NAMED(["id", "status", "amount"], [string, string, integer])
    checked_type = types.ROW_NAMED(["id", "status", "amount", "threshold", "big"], [string, string, integer, integer, types.BOOLEAN()])

    # functions reach type information through ``types`` only: PyFlink pickles them, and a TypeInformation that has
    # been used (``string`` and the like, once in a ROW_NAMED) holds Java objects
    def rules() -> Any:
        """Made afresh where used, for the same reason (a descriptor given to ``broadcast`` holds Java objects)."""
        return s.MapStateDescriptor("rules", types.STRING(), types.PICKLED_BYTE_ARRAY())

    class PaymentCheck(f.KeyedCoProcessFunction):
        def open(self, runtime_context: Any) -> None:
            self.order = runtime_context.get_state(s.ValueStateDescriptor("order", types.PICKLED_BYTE_ARRAY()))
            self.paid = runtime_context.get_list_state(s.ListStateDescriptor("paid", types.LONG()))

        def process_element1(self, value: Any, ctx: Any) -> Any:
            self.order.update([value.ts, value.amount])
            ctx.timer_service().register_event_time_timer(value.ts + PAYMENT_TIMEOUT)
            return []

        def process_element2(self, value: Any, ctx: Any) -> Any:
            self.paid.add(value.ts)
            return []

        def on_timer(self, timestamp: int, ctx: Any) -> Any:
            _, amount = self.order.value()
            paid = any(p <= timestamp for p in self.paid.get())
            yield row(id=ctx.get_current_key(), status="paid" if paid else "unpaid", amount=amount)
            self.order.clear()

    class Thresholds(f.KeyedBroadcastProcessFunction):
        def open(self, runtime_context: Any) -> None:
            self.pending = runtime_context.get_list_state(s.ListStateDescriptor("pending", types.PICKLED_BYTE_ARRAY()))

        def process_element(self, value: Any, ctx: Any) -> Any:
            self.pending.add([ctx.timestamp(), value.status, value.amount])
            ctx.timer_service().register_event_time_timer(ctx.timestamp())
            return []

        def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
            state = ctx.get_broadcast_state(rules())
            state.put(value[1], (state.get(value[1]) or []) + [[value[0], value[2]]])
            return []

        def on_timer(self, timestamp: int, ctx: Any) -> Any:
            versions = [v for v in (ctx.get_broadcast_state(rules()).get("big") or []) if v[0] <= timestamp]
            threshold = versions[-1][1]
            keep = []
            for ts, status, amount in self.pending.get():
                if ts != timestamp:
                    keep.append([ts, status, amount])
                    continue
                yield row(id=ctx.get_current_key(), status=status, amount=amount, threshold=threshold, big=amount > threshold)
            self.pending.update(keep)

    class WindowTotals(f.ProcessAllWindowFunction):
        def process(self, context: Any, elements: Any) -> Any:
            w = context.window()
            rows = list(elements)
            yield json.dumps(["window", w.start, w.end, len(rows), sum(r.amount for r in rows), sum(1 for r in rows if r.big)])

    orders = api.source(env, "orders", [tuple(r) for r in ORDERS], 1).map(
        lambda t: row(id=t[0], ts=t[1], amount=t[2]), output_type=order_type
    )
    payments = api.source(env, "payments", [tuple(r) for r in PAYMENTS], 1).map(
        lambda t: row(id=t[0], ts=t[1]), output_type=payment_type
    )
    decisions = (
        orders.connect(payments)
        .key_by(lambda o: o.id, lambda p: p.id, key_type=string)
        .process(PaymentCheck(), output_type=decision_type)
    )
    rule_stream = api.source(env, "rules", [tuple(r) for r in RULES], 0).broadcast(rules())
    checked = (
        decisions.key_by(lambda d: d.id, key_type=string)
        .connect(rule_stream)
        .process(Thresholds(), output_type=checked_type)
    )
    checked_json = checked.map(
        lambda c: json.dumps(["checked", c.id, c.status, c.amount, c.threshold, c.big]), output_type=string
    )
    windows = checked.window_all(api.window.TumblingEventTimeWindows.of(api.Time.seconds(WINDOW_SECONDS))).process(
        WindowTotals(), output_type=string
    )
    sums = (
        checked.map(lambda c: (c.status, c.amount), output_type=types.TUPLE([string, integer]))
        .key_by(lambda t: t[0], key_type=string)
        .sum(1)
        .map(lambda t: json.dumps(["sum", t[0], t[1]]), output_type=string)
    )
    return checked_json.union(windows, sums)


def decode(outputs: List[str]) -> List[Any]:
    """The outputs as sorted JSON values (a multiset: the union's interleaving is not defined)."""
    return sorted((json.loads(o) for o in outputs), key=json.dumps)


def pyspark_flinkish_api(batches: int) -> Any:
    """pyspark_flinkish's modules (imported here, so that PyFlink's interpreter never needs them) and sources that
    split their rows into ``batches`` micro-batches (``MicroBatchSource``, which both engines run)."""
    from types import SimpleNamespace

    from pyspark_flinkish.common import Row, Time, Types, WatermarkStrategy
    from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource
    from pyspark_flinkish.datastream import functions as our_functions
    from pyspark_flinkish.datastream import state as our_state
    from pyspark_flinkish.datastream import window as our_window

    def source(env: Any, name: str, rows: List[Any], time_index: int) -> Any:
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: int(e[time_index]))
        step = -(-len(rows) // batches)
        micro_batches = [MicroBatch(rows[i : i + step]) for i in range(0, len(rows), step)]
        return env.from_source(MicroBatchSource(micro_batches), strategy, name)

    return SimpleNamespace(
        Types=Types, Row=Row, Time=Time, functions=our_functions, state=our_state, window=our_window, source=source
    )
