"""``python -m pyspark_flinkish.demo --local``: the game-session pipeline on the JVM-free engine (no Kafka, no
Spark), over replayed micro-batches of 30 s, reporting as it goes."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any, Dict, List, Optional

from pyspark_flinkish.core.javamath import LONG_MAX, LONG_MIN
from pyspark_flinkish.datastream import StreamExecutionEnvironment

from .game import MINUTE, build, generate


def _fmt_wm(wm: Optional[int]) -> str:
    if wm is None:
        return "idle"
    if wm == LONG_MIN:
        return "-"
    if wm == LONG_MAX:
        return "end"
    return f"{wm / MINUTE:5.2f}m"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pyspark_flinkish.demo --local", description=__doc__)
    parser.add_argument("--players", type=int, default=40, help="number of players (default 40)")
    parser.add_argument("--minutes", type=int, default=30, help="minutes of game time (default 30)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    parser.add_argument("--quiet", action="store_true", help="no per-batch progress lines")
    args = parser.parse_args(argv)

    batches = generate(args.players, args.minutes, args.seed)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_manual_clock(0)
    streams = build(env, batches)
    sessions: List[Dict[str, Any]] = []
    late: List[Any] = []
    alerts: List[Dict[str, Any]] = []
    streams["sessions"].add_sink(sessions.append)
    streams["late"].add_sink(late.append)
    streams["alerts"].add_sink(alerts.append)

    print(
        f"game demo: {args.players} players, {args.minutes} min, {sum(len(b.elements) for b in batches)} events, "
        f"{len(batches)} micro-batches of 30 s, 4 partitions (partition 3 silent 10-16 min)"
    )
    print("batch  events  watermark per partition (p0 p1 p2 p3)      source wm  fired  late  alerts   (counts are totals)")

    def progress(p: Any) -> None:
        if args.quiet:
            return
        parts = p.source_watermarks["game-events"]
        wms = " ".join(f"{_fmt_wm(parts[k]):>7}" for k in sorted(parts))
        window_wm = next(v for k, v in p.operator_watermarks.items() if "Window" in k)
        print(
            f"{p.batch:5d}  {p.input_records:6d}  {wms}   {_fmt_wm(window_wm):>9}  {p.total('windows_fired'):5d}"
            f"  {p.total('late_records_side_output'):4d}  {len(alerts):6d}"
        )

    result = env.execute("game-sessions", progress=progress)

    complete = Counter((s["player"], s["start"], s["end"]) for s in sessions if s["complete"])
    early = sum(1 for s in sessions if not s["complete"])
    updated = sum(n - 1 for n in complete.values() if n > 1)
    print()
    print(f"summary after {result.batches} micro-batches:")
    print(
        f"  session results emitted : {len(sessions)} ({early} early, {len(complete)} sessions completed, "
        f"{updated} updates from late data)"
    )
    print(f"  late events (side output): {len(late)}")
    print(f"  inactivity alerts       : {len(alerts)}")
    best = max(sessions, key=lambda s: s["score"], default=None)
    if best is not None:
        print(
            f"  best session            : {best['player']} scored {best['score']} in {best['events']} events "
            f"({(best['end'] - best['start']) / MINUTE:.1f} min)"
        )
    return 0


__all__ = [
    "main",
]
