package flinkish;

import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkGeneratorSupplier;
import org.apache.flink.api.common.eventtime.WatermarkOutput;

/**
 * Bounded out-of-orderness, emitted after every event instead of periodically: the watermark after an event is
 * {@code max timestamp - bound - 1}, as Flink's BoundedOutOfOrdernessWatermarks computes it. It makes the
 * watermark deterministic for benchmarks/pyflink_all_windows.py (a periodic one depends on timing).
 */
public class PunctuatedOutOfOrderness implements WatermarkGeneratorSupplier<Object> {
    private final long bound;

    public PunctuatedOutOfOrderness(long bound) {
        this.bound = bound;
    }

    @Override
    public WatermarkGenerator<Object> createWatermarkGenerator(WatermarkGeneratorSupplier.Context context) {
        final long b = bound;
        return new WatermarkGenerator<Object>() {
            private long max = Long.MIN_VALUE + b + 1;

            @Override
            public void onEvent(Object event, long timestamp, WatermarkOutput output) {
                max = Math.max(max, timestamp);
                output.emitWatermark(new Watermark(max - b - 1));
            }

            @Override
            public void onPeriodicEmit(WatermarkOutput output) {}
        };
    }
}
