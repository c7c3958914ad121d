"""Time-to-live of keyed state (Flink's ``StateTtlConfig``): processing time only; an entry expires when
``last_access + ttl <= now``, per value for Value/Reducing/Aggregating, per element for List, per entry for Map.
A stored entry under TTL is a :class:`TtlValue`."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from .durations import TimeLike, to_millis
from .errors import InvalidArgumentError
from .javamath import LONG_MAX


class StateTtlConfig:
    """Time-to-live of state entries (Flink's ``StateTtlConfig``), built with :meth:`new_builder`."""

    class UpdateType(enum.Enum):
        Disabled = 0
        OnCreateAndWrite = 1
        OnReadAndWrite = 2

    class StateVisibility(enum.Enum):
        ReturnExpiredIfNotCleanedUp = 0
        NeverReturnExpired = 1

    class TtlTimeCharacteristic(enum.Enum):
        ProcessingTime = 0

    def __init__(
        self,
        ttl_ms: int,
        update_type: UpdateType = UpdateType.OnCreateAndWrite,
        state_visibility: StateVisibility = StateVisibility.NeverReturnExpired,
    ) -> None:
        if ttl_ms <= 0:
            msg = f"StateTtlConfig ttl must be > 0 ms (Flink rejects a non-positive TTL); got {ttl_ms}"
            raise InvalidArgumentError(msg)
        self.ttl_ms = ttl_ms
        self.update_type = update_type
        self.state_visibility = state_visibility

    @staticmethod
    def new_builder(ttl: TimeLike) -> StateTtlConfig.Builder:
        return StateTtlConfig.Builder(to_millis("StateTtlConfig ttl", ttl))

    def is_enabled(self) -> bool:
        return self.update_type is not StateTtlConfig.UpdateType.Disabled

    def get_ttl(self) -> int:
        return self.ttl_ms

    def __repr__(self) -> str:
        return (
            f"StateTtlConfig(ttl_ms={self.ttl_ms}, update_type={self.update_type.name}, "
            f"state_visibility={self.state_visibility.name})"
        )

    class Builder:
        def __init__(self, ttl_ms: int) -> None:
            self._ttl_ms = ttl_ms
            self._update_type = StateTtlConfig.UpdateType.OnCreateAndWrite
            self._visibility = StateTtlConfig.StateVisibility.NeverReturnExpired

        def set_update_type(self, update_type: StateTtlConfig.UpdateType) -> StateTtlConfig.Builder:
            self._update_type = update_type
            return self

        def update_ttl_on_create_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)

        def set_state_visibility(self, visibility: StateTtlConfig.StateVisibility) -> StateTtlConfig.Builder:
            self._visibility = visibility
            return self

        def return_expired_if_not_cleaned_up(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)

        def never_return_expired(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)

        def set_ttl(self, ttl: TimeLike) -> StateTtlConfig.Builder:
            self._ttl_ms = to_millis("StateTtlConfig ttl", ttl)
            return self

        def set_ttl_time_characteristic(self, characteristic: Any) -> StateTtlConfig.Builder:
            if characteristic is not StateTtlConfig.TtlTimeCharacteristic.ProcessingTime:
                msg = "Flink supports only processing-time TTL; got " + repr(characteristic)
                raise InvalidArgumentError(msg)
            return self

        def cleanup_full_snapshot(self) -> StateTtlConfig.Builder:
            return self  # expired entries are always dropped from snapshots here

        def cleanup_incrementally(self, cleanup_size: int, run_cleanup_for_every_record: bool) -> StateTtlConfig.Builder:
            return self

        def cleanup_in_rocksdb_compact_filter(self, query_time_after_num_entries: int) -> StateTtlConfig.Builder:
            return self

        def disable_cleanup_in_background(self) -> StateTtlConfig.Builder:
            return self

        def build(self) -> StateTtlConfig:
            return StateTtlConfig(self._ttl_ms, self._update_type, self._visibility)


@dataclass
class TtlValue:
    """A stored value with the processing time of its last access (Flink's ``TtlValue``)."""

    value: Any
    last_access: int


def expiration_time(tv: TtlValue, ttl_ms: int) -> int:
    """When ``tv`` expires: ``last_access + ttl``, capped at ``Long.MAX_VALUE`` (Flink's ``expirationTimestamp``)."""
    return min(tv.last_access + ttl_ms, LONG_MAX)


def is_expired(tv: TtlValue, ttl_ms: int, now: int) -> bool:
    """Flink's expiry test: ``last_access + ttl <= now`` (the sum capped at ``Long.MAX_VALUE``)."""
    return expiration_time(tv, ttl_ms) <= now


__all__ = ["StateTtlConfig", "TtlValue", "expiration_time", "is_expired"]
