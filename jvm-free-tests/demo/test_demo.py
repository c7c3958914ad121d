"""The demo job runs end to end on the JVM-free engine and shows what it promises."""

from __future__ import annotations

import subprocess
import sys

from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.demo.game import MINUTE, build, generate


def _run(players: int = 40, minutes: int = 30, seed: int = 7) -> dict:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_manual_clock(0)
    streams = build(env, generate(players, minutes, seed))
    out: dict = {"sessions": [], "late": [], "alerts": [], "progress": []}
    for name in ("sessions", "late", "alerts"):
        streams[name].add_sink(out[name].append)
    env.execute("demo-test", progress=out["progress"].append)
    return out


def test_demo_shows_sessions_updates_late_data_alerts_and_idleness() -> None:
    out = _run()
    sessions = out["sessions"]
    assert any(not s["complete"] for s in sessions), "early results from the custom trigger"
    complete = [(s["player"], s["start"], s["end"]) for s in sessions if s["complete"]]
    assert len(complete) > len(set(complete)), "late data within the allowed lateness updates sessions"
    assert out["late"], "tunnel bursts beyond the allowed lateness go to the side output"
    assert out["alerts"], "the inactivity alert fires from event-time timers"
    # partition 3 is silent from minute 10 to 16: it turns idle and the watermark moves on without it
    idle_batches = [p for p in out["progress"] if p.source_watermarks["game-events"][3] is None]
    assert idle_batches
    first_idle = idle_batches[0]
    assert first_idle.processing_time < 16 * MINUTE
    others = [first_idle.source_watermarks["game-events"][k] for k in (0, 1, 2)]
    window_wm = next(v for k, v in first_idle.operator_watermarks.items() if "Window" in k)
    assert window_wm == min(others)


def test_demo_is_deterministic() -> None:
    a, b = _run(), _run()
    assert a["sessions"] == b["sessions"]
    assert a["late"] == b["late"]
    assert a["alerts"] == b["alerts"]


def test_demo_command_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pyspark_flinkish.demo", "--local", "--players", "10", "--minutes", "12"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "summary after" in proc.stdout
    assert "late events (side output)" in proc.stdout
