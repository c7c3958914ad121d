package flinkish;

import org.apache.flink.api.common.eventtime.SerializableTimestampAssigner;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkGeneratorSupplier;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.java.tuple.Tuple;
import org.apache.flink.types.Row;

/**
 * A punctuated generator for benchmarks/pyflink_punctuated.py: it tracks the largest timestamp seen and emits
 * {@code max - bound - 1} only on some events: those whose field 3 (a boolean) is true ({@code every == 0}: markers),
 * or every {@code every}-th event. Nothing is emitted periodically. Events are {@code (key, ts, value, marker)} rows
 * (a {@link Row} or a {@link Tuple}) or, at a text file source, such a row as a line {@code key,ts,value,marker};
 * the timestamp is field 1.
 */
public class MarkerPunctuated implements WatermarkGeneratorSupplier<Object> {
    private final long bound;
    private final int every;

    public MarkerPunctuated(long bound, int every) {
        this.bound = bound;
        this.every = every;
    }

    static Object field(Object event, int i) {
        if (event instanceof String) {
            String f = ((String) event).split(",")[i];
            return i == 1 ? (Object) Long.valueOf(f) : i == 3 ? (Object) Boolean.valueOf(f) : f;
        }
        if (event instanceof Row) {
            return ((Row) event).getField(i);
        }
        return ((Tuple) event).getField(i);
    }

    /** The strategy PyFlink wraps: this generator with field 1 as the timestamp. */
    public static WatermarkStrategy<Object> strategy(long bound, int every) {
        SerializableTimestampAssigner<Object> ts = (event, previous) -> ((Number) field(event, 1)).longValue();
        return WatermarkStrategy.<Object>forGenerator(new MarkerPunctuated(bound, every)).withTimestampAssigner(ts);
    }

    @Override
    public WatermarkGenerator<Object> createWatermarkGenerator(WatermarkGeneratorSupplier.Context context) {
        final long b = bound;
        final int n = every;
        return new WatermarkGenerator<Object>() {
            private long max = Long.MIN_VALUE + b + 1;
            private long seen = 0;

            @Override
            public void onEvent(Object event, long timestamp, WatermarkOutput output) {
                max = Math.max(max, timestamp);
                seen += 1;
                boolean emit = n == 0 ? Boolean.TRUE.equals(field(event, 3)) : seen % n == 0;
                if (emit) {
                    output.emitWatermark(new Watermark(max - b - 1));
                }
            }

            @Override
            public void onPeriodicEmit(WatermarkOutput output) {}
        };
    }
}
