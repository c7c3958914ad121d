// Real Apache Flink 2.3.0 (Java DataStream API) as the oracle for pyspark_flinkish's joins: window join,
// co-group and interval join. PyFlink has no join API, so this small program runs the scenarios that
// benchmarks/flink_joins.py defines (it compiles and runs this file; see its docstring).
//
// Usage: java -cp <classes>:<pyflink lib>/* FlinkJoins <scenarios.json> <out.json>
//
// Every scenario has one scripted source (parallelism 1) emitting records ["L"|"R", key, name, ts] with their
// timestamps, and an explicit watermark after each step; it is split into the left and right streams (elements
// (key, name, ts)). The source waits until the job's tasks are running (STARTUP_WAIT_MS: records emitted earlier
// queue up per network channel and reach the joining operator one channel after the other), then pauses after
// every record and watermark, and the buffer timeout is 0, so the joining operator sees records and watermarks of
// both sides in the script's order (its inputs are two network channels). Each output stream is stamped with its record's timestamp and the watermark of the operator that
// receives it ([timestamp, watermark, value...]) and collected in its own order.
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.functions.CoGroupFunction;
import org.apache.flink.api.common.functions.FlatJoinFunction;
import org.apache.flink.api.common.functions.JoinFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.api.java.tuple.Tuple4;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.JoinedStreams;
import org.apache.flink.streaming.api.datastream.CoGroupedStreams;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.co.ProcessJoinFunction;
import org.apache.flink.streaming.api.functions.source.legacy.SourceFunction;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.WindowAssigner;
import org.apache.flink.streaming.api.windowing.evictors.CountEvictor;
import org.apache.flink.streaming.api.windowing.triggers.CountTrigger;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

public class FlinkJoins {
    static final ObjectMapper JSON = new ObjectMapper();
    static final long STARTUP_WAIT_MS = 3000;
    static final TypeInformation<Tuple3<String, String, Long>> ELEMENT = Types.TUPLE(Types.STRING, Types.STRING, Types.LONG);
    static final TypeInformation<Tuple4<String, String, String, Long>> SCRIPTED =
            Types.TUPLE(Types.STRING, Types.STRING, Types.STRING, Types.LONG);

    static String json(Object... values) {
        try {
            return JSON.writeValueAsString(values);
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    /** The script: for each step, its records (with their timestamps), then its watermark (if any). */
    static class ScriptSource implements SourceFunction<Tuple4<String, String, String, Long>> {
        private final String steps;
        private final long pauseMs;
        private volatile boolean running = true;

        ScriptSource(String steps, long pauseMs) {
            this.steps = steps;
            this.pauseMs = pauseMs;
        }

        @Override
        public void run(SourceContext<Tuple4<String, String, String, Long>> ctx) throws Exception {
            JsonNode script = new ObjectMapper().readTree(steps);
            Thread.sleep(STARTUP_WAIT_MS);
            for (JsonNode step : script) {
                for (JsonNode r : step.get("records")) {
                    long ts = r.get(3).asLong();
                    synchronized (ctx.getCheckpointLock()) {
                        ctx.collectWithTimestamp(Tuple4.of(r.get(0).asText(), r.get(1).asText(), r.get(2).asText(), ts), ts);
                    }
                    Thread.sleep(pauseMs);
                }
                JsonNode wm = step.get("watermark");
                if (wm != null && !wm.isNull()) {
                    synchronized (ctx.getCheckpointLock()) {
                        ctx.emitWatermark(new Watermark(wm.asLong()));
                    }
                    Thread.sleep(pauseMs);
                }
                if (!running) {
                    return;
                }
            }
        }

        @Override
        public void cancel() {
            running = false;
        }
    }

    /** [timestamp, current watermark, value...]: when and at which timestamp a result came out. */
    static class Stamp extends ProcessFunction<String, String> {
        @Override
        public void processElement(String value, Context ctx, Collector<String> out) throws Exception {
            ArrayNode row = JSON.createArrayNode();
            row.add(ctx.timestamp());
            row.add(ctx.timerService().currentWatermark());
            for (JsonNode v : JSON.readTree(value)) {
                row.add(v);
            }
            out.collect(JSON.writeValueAsString(row));
        }
    }

    static WindowAssigner<Object, ?> assigner(JsonNode w) {
        String type = w.get("type").asText();
        Duration size = Duration.ofMillis(w.path("size").asLong());
        Duration offset = Duration.ofMillis(w.path("offset").asLong(0));
        switch (type) {
            case "tumbling":
                return (WindowAssigner) TumblingEventTimeWindows.of(size, offset);
            case "sliding":
                return (WindowAssigner) SlidingEventTimeWindows.of(size, Duration.ofMillis(w.get("slide").asLong()), offset);
            case "session":
                return (WindowAssigner) EventTimeSessionWindows.withGap(Duration.ofMillis(w.get("gap").asLong()));
            default:
                throw new IllegalArgumentException(type);
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static Map<String, List<Object>> run(JsonNode scenario, long pauseMs) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        env.setBufferTimeout(0);
        DataStream<Tuple4<String, String, String, Long>> scripted =
                env.addSource(new ScriptSource(scenario.get("steps").toString(), pauseMs), "script", SCRIPTED);
        DataStream<Tuple3<String, String, Long>> left = scripted.filter(r -> r.f0.equals("L"))
                .map(r -> Tuple3.of(r.f1, r.f2, r.f3)).returns(ELEMENT);
        DataStream<Tuple3<String, String, Long>> right = scripted.filter(r -> r.f0.equals("R"))
                .map(r -> Tuple3.of(r.f1, r.f2, r.f3)).returns(ELEMENT);
        String kind = scenario.get("kind").asText();
        Map<String, DataStream<String>> outputs = new LinkedHashMap<>();
        if (kind.equals("interval")) {
            JsonNode iv = scenario.get("interval");
            OutputTag<Tuple3<String, String, Long>> leftLate = new OutputTag<>("left-late", ELEMENT);
            OutputTag<Tuple3<String, String, Long>> rightLate = new OutputTag<>("right-late", ELEMENT);
            KeyedStream.IntervalJoined<Tuple3<String, String, Long>, Tuple3<String, String, Long>, String> joined =
                    left.keyBy(e -> e.f0, Types.STRING)
                            .intervalJoin(right.keyBy(e -> e.f0, Types.STRING))
                            .between(Duration.ofMillis(iv.get("lower").asLong()), Duration.ofMillis(iv.get("upper").asLong()));
            if (iv.path("lower_exclusive").asBoolean(false)) {
                joined = joined.lowerBoundExclusive();
            }
            if (iv.path("upper_exclusive").asBoolean(false)) {
                joined = joined.upperBoundExclusive();
            }
            boolean sides = scenario.path("late_side_outputs").asBoolean(false);
            if (sides) {
                joined = joined.sideOutputLeftLateData(leftLate).sideOutputRightLateData(rightLate);
            }
            SingleOutputStreamOperator<String> result = joined.process(
                    new ProcessJoinFunction<Tuple3<String, String, Long>, Tuple3<String, String, Long>, String>() {
                        @Override
                        public void processElement(Tuple3<String, String, Long> l, Tuple3<String, String, Long> r,
                                Context ctx, Collector<String> out) {
                            out.collect(json(l.f1, r.f1, ctx.getLeftTimestamp(), ctx.getRightTimestamp(), ctx.getTimestamp()));
                        }
                    }, Types.STRING);
            outputs.put("main", result);
            if (sides) {
                outputs.put("left_late", result.getSideOutput(leftLate).map(e -> json(e.f0, e.f1)).returns(Types.STRING));
                outputs.put("right_late", result.getSideOutput(rightLate).map(e -> json(e.f0, e.f1)).returns(Types.STRING));
            }
        } else {
            WindowAssigner w = assigner(scenario.get("window"));
            JsonNode trigger = scenario.get("count_trigger");
            JsonNode evictor = scenario.get("count_evictor");
            long lateness = scenario.path("allowed_lateness").asLong(0);
            String function = scenario.path("function").asText("join");
            if (kind.equals("join")) {
                JoinedStreams.WithWindow ww = left.join(right).where(e -> e.f0, Types.STRING).equalTo(e -> e.f0).window(w);
                if (trigger != null && !trigger.isNull()) {
                    ww = ww.trigger(CountTrigger.of(trigger.asLong()));
                }
                if (evictor != null && !evictor.isNull()) {
                    ww = ww.evictor(CountEvictor.of(evictor.asLong()));
                }
                if (lateness > 0) {
                    ww = ww.allowedLateness(Duration.ofMillis(lateness));
                }
                DataStream<String> joined;
                if (function.equals("flat")) {
                    joined = ww.apply((FlatJoinFunction<Tuple3<String, String, Long>, Tuple3<String, String, Long>, String>) (a, b, out) -> {
                        if (a.f2 <= b.f2) {
                            out.collect(json(a.f1, b.f1));
                        }
                    }, Types.STRING);
                } else {
                    joined = ww.apply((JoinFunction<Tuple3<String, String, Long>, Tuple3<String, String, Long>, String>) (a, b) -> json(a.f1, b.f1), Types.STRING);
                }
                outputs.put("main", joined);
            } else {
                CoGroupedStreams.WithWindow ww = left.coGroup(right).where(e -> e.f0, Types.STRING).equalTo(e -> e.f0).window(w);
                if (trigger != null && !trigger.isNull()) {
                    ww = ww.trigger(CountTrigger.of(trigger.asLong()));
                }
                if (evictor != null && !evictor.isNull()) {
                    ww = ww.evictor(CountEvictor.of(evictor.asLong()));
                }
                if (lateness > 0) {
                    ww = ww.allowedLateness(Duration.ofMillis(lateness));
                }
                DataStream<String> grouped = ww.apply(
                        (CoGroupFunction<Tuple3<String, String, Long>, Tuple3<String, String, Long>, String>) (first, second, out) -> {
                            List<String> a = new ArrayList<>();
                            List<String> b = new ArrayList<>();
                            for (Tuple3<String, String, Long> e : first) {
                                a.add(e.f1);
                            }
                            for (Tuple3<String, String, Long> e : second) {
                                b.add(e.f1);
                            }
                            out.collect(json(a, b));
                        }, Types.STRING);
                outputs.put("main", grouped);
            }
        }
        Map<String, CloseableIterator<String>> iterators = new LinkedHashMap<>();
        for (Map.Entry<String, DataStream<String>> e : outputs.entrySet()) {
            iterators.put(e.getKey(), e.getValue().process(new Stamp()).returns(Types.STRING).collectAsync());
        }
        env.execute(scenario.get("name").asText());
        Map<String, List<Object>> result = new LinkedHashMap<>();
        for (Map.Entry<String, CloseableIterator<String>> e : iterators.entrySet()) {
            List<Object> rows = new ArrayList<>();
            try (CloseableIterator<String> it = e.getValue()) {
                while (it.hasNext()) {
                    rows.add(JSON.readTree(it.next()));
                }
            }
            result.put(e.getKey(), rows);
        }
        return result;
    }

    public static void main(String[] args) throws Exception {
        JsonNode doc = JSON.readTree(new java.io.File(args[0]));
        long pauseMs = doc.path("pause_ms").asLong(20);
        ArrayNode out = JSON.createArrayNode();
        for (JsonNode scenario : doc.get("scenarios")) {
            Map<String, List<Object>> result = run(scenario, pauseMs);
            ObjectNode entry = JSON.createObjectNode();
            entry.put("name", scenario.get("name").asText());
            entry.set("output", JSON.valueToTree(result));
            out.add(entry);
            System.out.println(scenario.get("name").asText() + ": " + JSON.writeValueAsString(result));
        }
        JSON.writerWithDefaultPrettyPrinter().writeValue(new java.io.File(args[1]), out);
    }
}
