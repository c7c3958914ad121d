"""Rescaling a checkpoint in place without a JVM (``spark/rescale.py``): which batch the restarted query resumes
from, which driver documents go, a columnar window's keys as the columns Spark hashes, and what a restart does after a kill at
each step. The Spark side (the state split into the
new partitions, the restarted job's results) runs in ``tests/spark/test_source_savepoints.py``."""

from __future__ import annotations

import logging
from typing import Any, Dict

from pyspark_flinkish.core.codec import dump_document
from pyspark_flinkish.spark import storage
from pyspark_flinkish.spark.checkpoint import (
    DRIVER_FORMAT,
    DRIVER_VERSION,
    committed_batches,
    driver_document_path,
    read_driver_document,
    read_meta,
)
from pyspark_flinkish.spark.keys import encode_key
from pyspark_flinkish.spark.rescale import (
    PENDING_FILE,
    PENDING_FORMAT,
    PENDING_VERSION,
    rescale_checkpoint,
    rescale_dir,
    rescale_interrupted,
    spark_committed,
)
from pyspark_flinkish.spark.savepoint import HashedKeys, key_columns_as_text


def _checkpoint(tmp_path: Any, documents: Dict[int, Dict[str, Any]], spark_commits: int) -> str:
    checkpoint = str(tmp_path / "ck")
    for batch, body in documents.items():
        storage.write_bytes(driver_document_path(checkpoint, batch), dump_document(DRIVER_FORMAT, DRIVER_VERSION, body))
    for batch in range(spark_commits):
        storage.write_bytes(storage.join(checkpoint, "spark", "commits", str(batch)), b'v1\n{"nextBatchWatermarkMs":0}')
    return checkpoint


def test_the_query_resumes_from_the_last_batch_both_the_driver_and_spark_committed(tmp_path: Any) -> None:
    """Batch 5's document exists but Spark did not commit it: Spark runs it again from batch 4's state, so batch 4
    is the base; batch 5's document goes (written again by the replay), and so do those before the base."""
    empty = {"state": {}, "positions": {"src": {"replay_batch": 1}}}
    documents = {3: {"batch": 3, **empty}, 4: {"batch": 4, **empty}, 5: {"batch": 5, **empty}}
    checkpoint = _checkpoint(tmp_path, documents, spark_commits=5)
    assert spark_committed(checkpoint) == 4
    meta = {"state_partitions": 2, "vectorize": True, "operators": {}}
    assert rescale_checkpoint(None, checkpoint, meta, 3) == {**meta, "state_partitions": 3}
    assert read_meta(checkpoint)["state_partitions"] == 3
    assert committed_batches(checkpoint) == [4]
    assert read_driver_document(checkpoint, 4)["positions"] == {"src": {"replay_batch": 1}}


def test_nothing_committed_by_spark_drops_every_document(tmp_path: Any) -> None:
    checkpoint = _checkpoint(tmp_path, {0: {"batch": 0, "state": {}}}, spark_commits=0)
    rescale_checkpoint(None, checkpoint, {"state_partitions": 4, "vectorize": False}, 2)
    assert committed_batches(checkpoint) == [] and read_meta(checkpoint)["state_partitions"] == 2


def test_a_columnar_windows_keys_are_decoded_into_the_columns_spark_hashed() -> None:
    """The split places a columnar window's rows by Spark's ``xxhash64`` of its key columns: each key's bytes give
    the columns' values back as text Spark casts to their types (``columnar.prepared`` hashed the source's)."""
    keys = [encode_key((3, "eu")), encode_key((None, "us")), encode_key((-7, "x\"y"))]
    pair = HashedKeys("sums", ("int", "string"), True)
    assert key_columns_as_text(keys, pair) == [["3", None, "-7"], ["eu", "us", 'x"y']]
    single = HashedKeys("sums", ("boolean",), False)
    assert key_columns_as_text([encode_key(True), encode_key(False)], single) == [["true", "false"]]


def _pending(checkpoint: str, old: int, new: int, base: int) -> None:
    marker = dump_document(PENDING_FORMAT, PENDING_VERSION, {"from": old, "to": new, "batch": base})
    storage.write_bytes(storage.join(rescale_dir(checkpoint), PENDING_FILE), marker)


def test_a_rescaling_killed_before_its_pending_record_leaves_the_checkpoint_as_it_was(tmp_path: Any) -> None:
    """Killed while the split wrote the new files (named by no document): a restart with the old number deletes
    them and the rescaling's directory, before any batch runs, and keeps every file a document names; the driver
    reads the documents it wrote itself."""
    def named(*names: str) -> Dict[str, Any]:
        files = [{"kind": "snapshot", "name": n} for n in names]
        return {"x": {"layout": "snapshots", "partitions": {"0": {"files": files}}}}

    documents = {3: {"batch": 3, "state": named("s=000000000003-a.parquet")},
                 4: {"batch": 4, "state": named("s=000000000003-a.parquet", "d=000000000004-b.parquet")}}
    checkpoint = _checkpoint(tmp_path, documents, spark_commits=5)
    state = storage.join(checkpoint, "flinkish", "state", "op=x")
    kept = ["sp=00000/s=000000000003-a.parquet", "sp=00000/d=000000000004-b.parquet"]
    split = ["sp=00000/s=000000000004-c.parquet", "sp=00002/s=000000000004-c.parquet"]  # the killed split's
    for rel in kept + split:
        storage.write_bytes(storage.join(state, rel), b"x")
    storage.write_bytes(storage.join(rescale_dir(checkpoint), "b=4-0123abcd", "op=x", "sp=00000", "s=1.parquet"), b"x")
    assert rescale_interrupted(checkpoint)
    meta = {"state_partitions": 2, "vectorize": False}
    before = storage.read_bytes(driver_document_path(checkpoint, 4))
    assert rescale_checkpoint(None, checkpoint, meta, 2) == meta
    assert not rescale_interrupted(checkpoint) and not storage.exists(storage.join(checkpoint, "flinkish", "meta.json"))
    assert storage.read_bytes(driver_document_path(checkpoint, 4)) == before
    assert [rel for rel in kept + split if storage.exists(storage.join(state, rel))] == kept


def test_no_state_file_is_deleted_while_a_pickled_driver_document_is_there(tmp_path: Any) -> None:
    """A checkpoint of an older version (pickled documents, converted when the driver opens it) names files this
    module cannot see: the restart leaves every state file to the driver's sweep."""
    checkpoint = _checkpoint(tmp_path, {4: {"batch": 4, "state": {}}}, spark_commits=5)
    storage.write_bytes(storage.join(checkpoint, "flinkish", "driver", "b=000000000003.pkl"), b"pickle")
    named_by_the_pickle = storage.join(checkpoint, "flinkish", "state", "op=x", "sp=00000", "v=000000000003.parquet")
    storage.write_bytes(named_by_the_pickle, b"x")
    _pending(checkpoint, 2, 2, 4)
    rescale_checkpoint(None, checkpoint, {"state_partitions": 2, "vectorize": False}, 2)
    assert storage.exists(named_by_the_pickle)


def test_a_rescaling_killed_after_meta_json_is_finished_by_the_next_restart(tmp_path: Any) -> None:
    documents = {3: {"batch": 3, "state": {}}, 4: {"batch": 4, "state": {}}}
    checkpoint = _checkpoint(tmp_path, documents, spark_commits=5)
    _pending(checkpoint, 2, 3, 4)
    meta = {"state_partitions": 3, "vectorize": False}
    assert rescale_checkpoint(None, checkpoint, meta, 3) == meta
    assert committed_batches(checkpoint) == [4] and not rescale_interrupted(checkpoint)


def test_a_rescaling_killed_before_meta_json_is_done_again_at_any_number(tmp_path: Any, caplog: Any) -> None:
    """Between ``pending.json`` and ``meta.json`` the base's document may name the new layout while ``meta.json``
    still records the old number: a restart asking for the old number rescales again (into the old number)."""
    checkpoint = _checkpoint(tmp_path, {4: {"batch": 4, "state": {}}}, spark_commits=5)
    _pending(checkpoint, 2, 3, 4)
    assert rescale_interrupted(checkpoint)
    meta = {"state_partitions": 2, "vectorize": False}
    with caplog.at_level(logging.INFO, logger="pyspark_flinkish.spark"):
        assert rescale_checkpoint(None, checkpoint, meta, 2) == meta
    assert "rescaling its keyed state from 2 to 2 state partitions" in caplog.text
    assert read_meta(checkpoint)["state_partitions"] == 2 and not rescale_interrupted(checkpoint)
