"""Issue 14's "done when" job (``jvm-free-tests/datastream/pyflink_done_when_job.py``, written against PyFlink's API)
through the foreachBatch executor's real bodies on pandas (``foreach_batch_harness``), compared with real PyFlink
2.3.0's output (``pyflink_done_when.json``) as a multiset; ``tests/spark/test_spark_two_input.py`` runs it on Spark."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, List

import pytest
from foreach_batch_harness import run_foreach_batch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "datastream"))
import pyflink_done_when_job as job

ORACLE = json.loads((Path(__file__).resolve().parents[1] / "datastream" / "pyflink_done_when.json").read_text())


@pytest.mark.parametrize("vectorize", [False, True])
def test_done_when_job_on_the_foreach_batch_bodies_matches_pyflink(tmp_path: Any, vectorize: bool) -> None:
    out: List[str] = []
    run_foreach_batch(lambda env: job.build(env, job.pyspark_flinkish_api(3)).add_sink(out.append), str(tmp_path / "ck"), vectorize)
    assert job.decode(out) == ORACLE["output"]
