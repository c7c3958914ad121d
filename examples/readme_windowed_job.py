from pyspark_flinkish.common import Duration, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import ProcessWindowFunction
from pyspark_flinkish.datastream.window import (
    ContinuousEventTimeTrigger, CountEvictor, TumblingEventTimeWindows)


class TopScores(ProcessWindowFunction):
    """Per player and 10 s window: how many scores were kept and their total."""

    def process(self, key, context, elements):
        scores = [score for _, _, score in elements]
        yield key, context.window().start, context.window().end, len(scores), sum(scores)


env = StreamExecutionEnvironment.get_execution_environment()
late_scores = OutputTag("late-scores")

# (player, event time ms, score), arriving in four micro-batches
events = env.from_source(
    MicroBatchSource([
        MicroBatch([("ann", 1_000, 5), ("bob", 2_000, 3), ("ann", 4_000, 2), ("ann", 6_000, 4)]),
        MicroBatch([("ann", 13_000, 7), ("bob", 3_500, 1), ("bob", 12_500, 2)]),
        MicroBatch([("ann", 17_000, 1), ("bob", 900, 8)]),
        MicroBatch([("ann", 500, 9)]),
    ]),
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
    .with_timestamp_assigner(lambda event, _: event[1]),
    "scores",
)

results = (
    events.key_by(lambda event: event[0])
    .window(TumblingEventTimeWindows.of(Duration.of_seconds(10)))
    .trigger(ContinuousEventTimeTrigger.of(Duration.of_seconds(5)))   # early results every 5 s
    .evictor(CountEvictor.of(2))                                      # keep the last 2 scores
    .allowed_lateness(Duration.of_seconds(3))                         # late scores update results
    .side_output_late_data(late_scores)                               # later ones go here
    .process(TopScores())
)
results.get_side_output(late_scores).add_sink(lambda event: print("late:", event))
for row in results.execute_and_collect():
    print(row)
