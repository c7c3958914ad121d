"""Flink's per-operator runtime settings that have no counterpart here, accepted as documented no-ops.

``slot_sharing_group``, ``disable_chaining``, ``start_new_chain``, ``set_buffer_timeout``, ``force_non_parallel``,
``set_description`` and ``set_uid_hash`` tell Flink's scheduler and network stack how to place and connect
operator instances (task slots, operator chains, network buffers), or describe the operator for the web UI, or
map it to state in a Flink savepoint. None of them changes what an operator computes. Spark plans its own tasks
(whole-stage code generation, no slots or chains to configure), this package has no web UI of its own, and it
does not read Flink savepoints (its state is named by ``uid()``), so the calls are accepted, their arguments
checked as Flink checks them, and nothing else happens.
"""

from __future__ import annotations

import re
from typing import Any, Self

from ..core.errors import InvalidArgumentError

_UID_HASH = re.compile(r"^[0-9A-Fa-f]{32}$")


class SinkSettings:
    """The settings PyFlink offers on a ``DataStreamSink`` (and on every operator)."""

    def set_uid_hash(self, uid_hash: str) -> Self:
        """Flink: the operator's vertex id in savepoints, used as it is (32 hex characters, checked as Flink
        does). Here: no effect; state is named by ``uid()``, and Flink savepoints are not read."""
        if not isinstance(uid_hash, str) or not _UID_HASH.match(uid_hash):
            msg = f"Node hash must be a 32 character String that describes a hex code. Found: {uid_hash}"
            raise InvalidArgumentError(msg)
        return self

    def set_description(self, description: str) -> Self:
        """Flink: a longer description of the operator for the web UI and the JSON plan. Here: no effect."""
        return self

    def disable_chaining(self) -> Self:
        """Flink: do not chain this operator with its neighbours into one task. Here: no effect (Spark plans
        its own stages)."""
        return self

    def slot_sharing_group(self, slot_sharing_group: Any) -> Self:
        """Flink: the group of task slots the operator's instances may share (a name). Here: no effect (Spark
        has no task slots to assign)."""
        return self


class OperatorSettings(SinkSettings):
    """The settings PyFlink offers on a ``DataStream`` produced by an operator."""

    def force_non_parallel(self) -> Self:
        """Flink: run the operator with parallelism 1. Here every operator runs as one instance; the parallelism is
        recorded for the operators whose output depends on it (a broadcast operator's, see ``set_parallelism``)."""
        t = getattr(self, "_t", None)
        if t is not None:
            t.set_parallelism(1)
        return self

    def set_buffer_timeout(self, timeout_millis: int) -> Self:
        """Flink: how long output may wait in a network buffer (-1: the default, 0: flush every record). Here:
        no effect (records move between Spark stages per micro-batch)."""
        if timeout_millis < -1:
            msg = f"timeout must be >= -1; got {timeout_millis}"
            raise InvalidArgumentError(msg)
        return self

    def start_new_chain(self) -> Self:
        """Flink: begin a new operator chain at this operator. Here: no effect (Spark plans its own stages)."""
        return self


__all__ = ["OperatorSettings", "SinkSettings"]
