"""The foreachBatch driver's state between micro-batches: what a checkpoint fixes and what each batch commits.

:class:`DriverCheckpoint` is the part of :class:`~.driver.ForeachBatchDriver` that owns
``<checkpoint>/flinkish``: the settings a checkpoint's first run fixes (``meta.json``: state partitions,
``vectorize``, the operators' state signatures), and per batch the watermark graph, the replay positions and the
keyed operators' state manifests as of the last committed batch (``driver/b=<batch>.json``, ``spark/checkpoint.py``):
:meth:`~DriverCheckpoint._open` brings the driver to the state after batch ``N-1`` (a replayed or restarted batch
starts from there), :meth:`~DriverCheckpoint._commit` records batch ``N``'s and prunes the state files no kept batch
names.
"""

from __future__ import annotations

import collections
import copy
import logging
from typing import TYPE_CHECKING, Any, Deque, Dict, List, Optional, Tuple

from ..core.errors import StateError
from ..local.executor import LocalExecutor
from . import state_store, storage
from .checkpoint import (
    committed_batches,
    driver_document,
    driver_document_path,
    meta_path,
    read_driver_document,
    read_meta,
    write_atomically,
    write_meta,
)
from .checkpoint_migration import migrate_pickled_checkpoint
from .signatures import check_operators, plan_signatures

if TYPE_CHECKING:
    from ..datastream.plan import Transformation
    from .environment import SparkStreamExecutionEnvironment
    from .plan import ExecPlan

_log = logging.getLogger("pyspark_flinkish.spark")


class DriverCheckpoint:
    """The driver's state as of the last committed batch, and its files in the checkpoint (the driver's base)."""

    env: SparkStreamExecutionEnvironment
    sinks: List[Transformation]
    checkpoint: str
    plan: ExecPlan
    exec_plan: ExecPlan
    restored: Optional[Dict[str, Any]]
    partitions: int
    state_root: str
    driver_root: str
    watermark_graph: LocalExecutor
    # the operators' state manifests as of the last committed batch (then as of the batch's last step), and those of
    # the batches kept before it (their files are kept too)
    op_state: Dict[str, Dict[str, Any]]
    kept_states: Deque[Dict[str, Dict[str, Any]]]
    _swept: bool
    positions: Dict[str, Any]  # each replay source's last micro-batch (a savepoint records where the source goes on)
    committed_positions: Dict[str, Any]  # as of the last committed batch
    last_batch: Optional[int]

    def _new_graph(self) -> LocalExecutor:
        """The watermark bookkeeping: the JVM-free engine's graph with watermark-only operators."""
        graph = LocalExecutor(self.sinks, self.env.clock, watermarks_only=True)
        for t in graph.order:
            node = graph.nodes[t.id]
            if node.operator is not None:
                node.operator.open(node, self.env.clock)
        return graph

    def _meta(self) -> Dict[str, Any]:
        """The settings that shape the checkpoint's state (state partitions, vectorize): a checkpoint's first run
        fixes them; later runs use the stored ``vectorize`` and log a warning when the environment asks for another
        (another number of state partitions rescales the checkpoint: ``spark/rescale.py``)."""
        meta = meta_path(self.checkpoint)
        wanted = {"state_partitions": self.env.state_partitions, "vectorize": self.env.vectorize}
        legacy = storage.join(self.checkpoint, "flinkish", "meta.pkl")
        meta_exists = storage.exists(meta)
        if not meta_exists and storage.is_local(legacy) and storage.exists(legacy):  # pickles: local checkpoints only
            migrate_pickled_checkpoint(self.checkpoint, legacy, self._new_graph, self.env.clock)
            meta_exists = True
        if meta_exists:
            stored = read_meta(self.checkpoint)
            if "state_partitions" not in stored:  # the applyInPandasWithState executor's (spark/stateful.py)
                msg = (
                    f"checkpoint {self.checkpoint} was written by backend={stored.get('backend')!r}, whose state is in "
                    "Spark's state store: the foreachBatch executor cannot restore it; run the job with that backend, "
                    "or start from a new checkpoint location"
                )
                raise StateError(msg)
            for name, value in wanted.items():
                if stored[name] != value and name != "state_partitions":
                    _log.warning(
                        "checkpoint %s was started with %s=%r; using that instead of %r (its state is laid out so)",
                        self.checkpoint, name, stored[name], value,
                    )
            return stored
        write_meta(self.checkpoint, wanted)
        return wanted

    def _check_operators(self, meta: Dict[str, Any]) -> None:
        """Refuse to start when a keyed operator's state was written by an incompatible operator (another window
        assigner, trigger, evictor, lateness, contents or aggregate class under the same uid): its state would be
        misread. The first run records the signatures."""
        current = plan_signatures((node.uid, self.plan.transformations[node.index]) for node in self.plan.nodes)
        stored = meta.get("operators")
        merged = check_operators(self.checkpoint, stored, current)
        if merged != stored:
            write_meta(self.checkpoint, {**meta, "operators": merged})

    def _state_path(self, batch_id: int) -> str:
        return driver_document_path(self.checkpoint, batch_id)

    def _graph_state(self) -> Dict[str, Any]:
        """The watermark bookkeeping as plain JSON data (see ``LocalExecutor.watermark_state``)."""
        return self.watermark_graph.watermark_state()

    def _restore_graph(self, state: Dict[str, Any]) -> None:
        self.watermark_graph.restore_watermark_state(state)

    def _saved_batches(self, before: Optional[int] = None) -> List[int]:
        """The committed batches whose driver documents are kept (only JSON files: pickles of older versions were
        converted when the checkpoint was opened, ``_meta``), before batch ``before`` if given."""
        return [b for b in committed_batches(self.checkpoint) if before is None or b < before]

    def _document(self, batch: int) -> Dict[str, Any]:
        return read_driver_document(self.checkpoint, batch)

    def _stored_layouts(self) -> Dict[str, str]:
        """``{uid: layout}`` of the operators whose state the newest committed batch holds."""
        saved = self._saved_batches()
        if not saved:
            return {uid: op["layout"] for uid, op in self.restored["state"].items()} if self.restored else {}
        state = state_store.operators_of(self._document(saved[-1]), self.state_root, saved[-1], self.partitions)
        return {uid: op["layout"] for uid, op in state.items()}

    def manifests(self) -> Dict[str, Dict[int, Any]]:
        """``{uid: {state partition: manifest}}`` of the state the next keyed stage starts from."""
        return {uid: {int(sp): m for sp, m in op["partitions"].items()} for uid, op in self.op_state.items()}

    def _record_manifests(self, metric_rows: List[Tuple[int, int, Dict[str, Any]]]) -> None:
        """Take the new manifests the keyed partitions reported (and drop them from their metrics)."""
        for _, dest, metrics in metric_rows:
            manifest = metrics.pop("stateManifest", None)
            if manifest is None:
                continue
            node = self.exec_plan.nodes[dest]
            layout = state_store.LAYOUT_WINDOWS if node.batched else state_store.LAYOUT_SNAPSHOTS
            op = self.op_state.setdefault(node.uid, {"layout": layout, "partitions": {}})
            op["layout"] = layout
            op["partitions"][str(metrics.pop("statePartition"))] = manifest

    def _open(self, batch_id: int) -> int:
        """Bring the driver to the state after batch ``batch_id - 1``; returns that batch's id (or -1). The keyed
        state starts from that batch's committed manifests (what a failed attempt of this batch reported is
        dropped)."""
        if self.last_batch is not None and self.last_batch == batch_id - 1:
            self.op_state = copy.deepcopy(self.kept_states[-1]) if self.kept_states else {}
            self.positions = dict(self.committed_positions)
            return self.last_batch
        self.watermark_graph = self._new_graph()
        self.op_state, self.kept_states = {}, collections.deque(maxlen=3)
        saved = self._saved_batches(before=batch_id)
        first = int(self.restored.get("first_batch", 0)) if self.restored is not None else 0
        if not saved and self.restored is not None and batch_id == first:  # the savepoint's state; watermarks at MIN
            self.positions, self.committed_positions = {}, {}
            self.kept_states.append(copy.deepcopy(self.restored["state"]))
            self.op_state = copy.deepcopy(self.restored["state"])
            self._sweep()
            return -1
        if not saved:
            if batch_id > 0 and state_store.has_state(self.state_root):
                msg = f"driver state before batch {batch_id} is missing in {self.driver_root}: the checkpoint is incomplete"
                raise StateError(msg)
            return -1
        for batch in saved[-3:]:
            document = self._document(batch)
            self.kept_states.append(state_store.operators_of(document, self.state_root, batch, self.partitions))
        self._restore_graph(document)
        self.committed_positions = dict(document.get("positions") or {})
        self.positions = dict(self.committed_positions)
        self.op_state = copy.deepcopy(self.kept_states[-1])
        self._sweep()
        return saved[-1]

    def _sweep(self) -> None:
        """Once per run: delete the files of batches that failed or were replayed before it (named by no manifest)."""
        if not self._swept:
            state_store.prune(self.state_root, state_store.referenced(self.kept_states))
            self._swept = True

    def _commit(self, batch_id: int) -> None:
        document = driver_document(self.watermark_graph, batch_id, self.op_state, self.positions)
        write_atomically(self._state_path(batch_id), document)
        self.last_batch = batch_id
        self.committed_positions = dict(self.positions)
        for old in storage.list_names(self.driver_root):
            if old.startswith("b=") and old.endswith((".json", ".pkl")) and int(old[2:14]) < batch_id - 2:
                storage.delete(storage.join(self.driver_root, old))
        dropped = self.kept_states[0] if len(self.kept_states) == self.kept_states.maxlen else None
        self.kept_states.append(copy.deepcopy(self.op_state))
        if dropped is not None:  # the files only the batch that is no longer kept named
            keep = state_store.referenced(self.kept_states)
            state_store.prune(self.state_root, keep, state_store.referenced([dropped]) - keep)

__all__ = ["DriverCheckpoint"]
