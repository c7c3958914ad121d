"""Keyed state in Flink's model: per key and namespace, Value/List/Map/Reducing/Aggregating, with TTL.

A :class:`KeyedStateBackend` holds every key's state in plain Python structures, one dict per key, so that
one key's state (plus its timers) can be taken out and put back as a snapshot — which is how the Spark
executors keep it between micro-batches. State objects are views: they read and write the backend's
*current key* and their *current namespace* (a window, or :data:`VOID_NAMESPACE` for user state of
process functions).

TTL follows Flink: processing time only, an entry expires when ``last_access + ttl <= now``, per value
for Value/Reducing/Aggregating, per element for List, per entry for Map.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Dict,
    Generic,
    Hashable,
    Iterable,
    Iterator,
    List,
    Optional,
    Tuple,
    TypeVar,
)

from .durations import TimeLike, to_millis
from .errors import InvalidArgumentError, InvalidTypeError, StateError
from .javamath import LONG_MAX
from .typeinfo import TypeInformation

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
IN = TypeVar("IN")
OUT = TypeVar("OUT")
ACC = TypeVar("ACC")


class _VoidNamespace:
    """The namespace of state that is not scoped to a window."""

    _instance: Optional[_VoidNamespace] = None

    def __new__(cls) -> _VoidNamespace:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __reduce__(self) -> tuple:  # type: ignore[type-arg]
        return (_VoidNamespace, ())

    def __repr__(self) -> str:
        return "VOID_NAMESPACE"


VOID_NAMESPACE: Hashable = _VoidNamespace()


# --------------------------------------------------------------------------------------------- TTL


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


def _expired(tv: TtlValue, ttl_ms: int, now: int) -> bool:
    expiration = tv.last_access + ttl_ms
    if expiration > LONG_MAX:
        expiration = LONG_MAX
    return expiration <= now


# ------------------------------------------------------------------------------------ descriptors


class StateDescriptor:
    """Names a piece of keyed state and its type; ``enable_time_to_live`` adds TTL."""

    kind: str = "abstract"

    def __init__(self, name: str, type_info: Optional[TypeInformation] = None) -> None:
        if not isinstance(name, str) or not name:
            msg = f"a state descriptor needs a non-empty str name; got {name!r}"
            raise InvalidArgumentError(msg)
        self.name = name
        self.type_info = type_info
        self.ttl_config: Optional[StateTtlConfig] = None

    def get_name(self) -> str:
        return self.name

    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
        if not isinstance(ttl_config, StateTtlConfig):
            msg = f"enable_time_to_live needs a StateTtlConfig; got {type(ttl_config).__name__}"
            raise InvalidTypeError(msg)
        self.ttl_config = ttl_config

    def _ttl(self) -> Optional[StateTtlConfig]:
        cfg = self.ttl_config
        return cfg if cfg is not None and cfg.is_enabled() else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class ValueStateDescriptor(StateDescriptor):
    kind = "value"


class ListStateDescriptor(StateDescriptor):
    kind = "list"


class MapStateDescriptor(StateDescriptor):
    kind = "map"

    def __init__(
        self,
        name: str,
        key_type_info: Optional[TypeInformation] = None,
        value_type_info: Optional[TypeInformation] = None,
    ) -> None:
        super().__init__(name, value_type_info)
        self.key_type_info = key_type_info


class ReducingStateDescriptor(StateDescriptor):
    """State that folds added values with a reduce function (``ReduceFunction`` or a callable)."""

    kind = "reducing"

    def __init__(self, name: str, reduce_function: Any, type_info: Optional[TypeInformation] = None) -> None:
        super().__init__(name, type_info)
        self.reduce_function = _as_reduce(reduce_function, f"ReducingStateDescriptor({name!r})")


class AggregatingStateDescriptor(StateDescriptor):
    """State that aggregates added values with an ``AggregateFunction``."""

    kind = "aggregating"

    def __init__(self, name: str, agg_function: Any, state_type_info: Optional[TypeInformation] = None) -> None:
        super().__init__(name, state_type_info)
        for method in ("create_accumulator", "add", "get_result"):
            if not callable(getattr(agg_function, method, None)):
                msg = (
                    f"AggregatingStateDescriptor({name!r}) needs an AggregateFunction with "
                    f"create_accumulator/add/get_result; got {type(agg_function).__name__} without {method}()"
                )
                raise InvalidTypeError(msg)
        self.agg_function = agg_function


def _as_reduce(fn: Any, where: str) -> Callable[[Any, Any], Any]:
    reduce = getattr(fn, "reduce", None)
    if callable(reduce):
        return reduce  # type: ignore[no-any-return]
    if callable(fn):
        return fn  # type: ignore[no-any-return]
    msg = f"{where} needs a ReduceFunction or a callable (a, b) -> c; got {type(fn).__name__}"
    raise InvalidTypeError(msg)


# ----------------------------------------------------------------------------------------- backend

StateKey = Tuple[str, Hashable]


class KeyedStateBackend:
    """All keyed state of one operator instance: ``key -> {(state name, namespace): stored value}``.

    ``clock`` gives the processing time used for TTL. The backend never calls a wall clock itself.
    """

    def __init__(self, clock: Callable[[], int]) -> None:
        self._tables: Dict[Any, Dict[StateKey, Any]] = {}
        self._clock = clock
        self._current_key: Any = None
        self._has_key = False
        self.descriptors: Dict[str, StateDescriptor] = {}

    # -- key context
    def set_current_key(self, key: Any) -> None:
        self._current_key = key
        self._has_key = True

    def get_current_key(self) -> Any:
        if not self._has_key:
            msg = "keyed state was used outside a keyed context (no current key); use it after key_by"
            raise StateError(msg)
        return self._current_key

    def now(self) -> int:
        return self._clock()

    # -- raw access (current key)
    def _table(self, create: bool) -> Optional[Dict[StateKey, Any]]:
        key = self.get_current_key()
        table = self._tables.get(key)
        if table is None and create:
            table = self._tables[key] = {}
        return table

    def raw_get(self, name: str, namespace: Hashable) -> Any:
        table = self._table(False)
        return None if table is None else table.get((name, namespace))

    def raw_put(self, name: str, namespace: Hashable, value: Any) -> None:
        table = self._table(True)
        assert table is not None
        table[(name, namespace)] = value

    def raw_remove(self, name: str, namespace: Hashable) -> Any:
        key = self.get_current_key()
        table = self._tables.get(key)
        if table is None:
            return None
        value = table.pop((name, namespace), None)
        if not table:
            del self._tables[key]
        return value

    # -- registration
    def register(self, descriptor: StateDescriptor) -> None:
        known = self.descriptors.get(descriptor.name)
        if known is not None and known.kind != descriptor.kind:
            msg = (
                f"state {descriptor.name!r} is already registered as {known.kind} state; "
                f"cannot use it as {descriptor.kind} state (Flink fails the same way)"
            )
            raise StateError(msg)
        self.descriptors[descriptor.name] = descriptor

    def create_state(self, descriptor: StateDescriptor, namespace: Hashable = VOID_NAMESPACE) -> InternalState:
        self.register(descriptor)
        cls = _STATE_CLASSES[descriptor.kind]
        return cls(self, descriptor, namespace)  # type: ignore[no-any-return]

    # -- whole-key access (snapshots)
    def keys(self) -> List[Any]:
        return list(self._tables)

    def has_key(self, key: Any) -> bool:
        return key in self._tables

    def key_table(self, key: Any) -> Dict[StateKey, Any]:
        return self._tables.get(key, {})

    def set_key_table(self, key: Any, table: Dict[StateKey, Any]) -> None:
        if table:
            self._tables[key] = table
        else:
            self._tables.pop(key, None)

    def drop_key(self, key: Any) -> None:
        self._tables.pop(key, None)

    def purge_expired(self, key: Any) -> None:
        """Drop expired TTL entries of ``key`` (done before snapshots, as Flink's background cleanup)."""
        table = self._tables.get(key)
        if not table:
            return
        now = self._clock()
        for skey in list(table):
            desc = self.descriptors.get(skey[0])
            ttl = desc._ttl() if desc is not None else None
            if ttl is None:
                continue
            stored = table[skey]
            if desc.kind == "list":  # type: ignore[union-attr]
                alive = [tv for tv in stored if not _expired(tv, ttl.ttl_ms, now)]
                if alive:
                    table[skey] = alive
                else:
                    del table[skey]
            elif desc.kind == "map":  # type: ignore[union-attr]
                alive_map = {k: tv for k, tv in stored.items() if not _expired(tv, ttl.ttl_ms, now)}
                if alive_map:
                    table[skey] = alive_map
                else:
                    del table[skey]
            elif _expired(stored, ttl.ttl_ms, now):
                del table[skey]
        if not table:
            del self._tables[key]


# ------------------------------------------------------------------------------------ state views


class State:
    """Base of all keyed state: ``clear()`` removes the current key's value in the current namespace."""

    def clear(self) -> None:
        raise NotImplementedError


class InternalState(State):
    """A view of one descriptor's state, for the backend's current key and this view's namespace."""

    def __init__(self, backend: KeyedStateBackend, descriptor: StateDescriptor, namespace: Hashable) -> None:
        self._backend = backend
        self._descriptor = descriptor
        self._name = descriptor.name
        self._namespace = namespace
        self._ttl = descriptor._ttl()

    def set_current_namespace(self, namespace: Hashable) -> None:
        self._namespace = namespace

    def clear(self) -> None:
        self._backend.raw_remove(self._name, self._namespace)

    # -- TTL helpers for single-valued states
    def _read_single(self) -> Any:
        stored = self._backend.raw_get(self._name, self._namespace)
        if stored is None or self._ttl is None:
            return stored
        now = self._backend.now()
        if _expired(stored, self._ttl.ttl_ms, now):
            self.clear()
            if self._ttl.state_visibility is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp:
                return stored.value
            return None
        if self._ttl.update_type is StateTtlConfig.UpdateType.OnReadAndWrite:
            stored.last_access = now
        return stored.value

    def _write_single(self, value: Any) -> None:
        if self._ttl is not None:
            value = TtlValue(value, self._backend.now())
        self._backend.raw_put(self._name, self._namespace, value)

    def merge_namespaces(self, target: Hashable, sources: Iterable[Hashable]) -> None:
        msg = f"{type(self).__name__} {self._name!r} cannot be merged (only list/reducing/aggregating state)"
        raise StateError(msg)


class ValueState(InternalState, Generic[T]):
    """A single value per key and namespace; ``None`` when unset; ``update(None)`` clears."""

    def value(self) -> Optional[T]:
        return self._read_single()  # type: ignore[no-any-return]

    def update(self, value: Optional[T]) -> None:
        if value is None:
            self.clear()
        else:
            self._write_single(value)


class _MergingSingle(InternalState):
    def _combine(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def merge_namespaces(self, target: Hashable, sources: Iterable[Hashable]) -> None:
        """Flink's ``mergeNamespaces``: fold the sources together, then into the target."""
        merged: Any = None
        saved = self._namespace
        try:
            for source in sources:
                self._namespace = source
                value = self._read_single()
                self.clear()
                if value is not None:
                    merged = value if merged is None else self._combine(merged, value)
            if merged is not None:
                self._namespace = target
                current = self._read_single()
                self._write_single(merged if current is None else self._combine(current, merged))
        finally:
            self._namespace = saved


class ReducingState(_MergingSingle, Generic[T]):
    """Keeps the reduction of all added values; the first value is stored as is."""

    def __init__(self, backend: KeyedStateBackend, descriptor: StateDescriptor, namespace: Hashable) -> None:
        super().__init__(backend, descriptor, namespace)
        self._reduce = descriptor.reduce_function  # type: ignore[attr-defined]

    def get(self) -> Optional[T]:
        return self._read_single()  # type: ignore[no-any-return]

    def add(self, value: T) -> None:
        current = self._read_single()
        self._write_single(value if current is None else self._reduce(current, value))

    def _combine(self, a: Any, b: Any) -> Any:
        return self._reduce(a, b)


class AggregatingState(_MergingSingle, Generic[IN, OUT]):
    """Keeps an accumulator, created lazily on the first ``add``; ``get()`` is ``get_result`` or None."""

    def __init__(self, backend: KeyedStateBackend, descriptor: StateDescriptor, namespace: Hashable) -> None:
        super().__init__(backend, descriptor, namespace)
        self._agg = descriptor.agg_function  # type: ignore[attr-defined]

    def get(self) -> Optional[OUT]:
        acc = self._read_single()
        return None if acc is None else self._agg.get_result(acc)  # type: ignore[no-any-return]

    def get_accumulator(self) -> Any:
        return self._read_single()

    def add(self, value: IN) -> None:
        acc = self._read_single()
        if acc is None:
            acc = self._agg.create_accumulator()
        self._write_single(self._agg.add(value, acc))

    def _combine(self, a: Any, b: Any) -> Any:
        merge = getattr(self._agg, "merge", None)
        if merge is None:
            msg = "merging session windows needs AggregateFunction.merge(acc_a, acc_b)"
            raise StateError(msg)
        return merge(a, b)


class ListState(InternalState, Generic[T]):
    """An ordered list per key and namespace; ``get()`` is an empty list, never None, when unset."""

    def _alive(self, create: bool = False) -> List[Any]:
        stored = self._backend.raw_get(self._name, self._namespace)
        if stored is None:
            return []
        if self._ttl is None:
            return stored  # type: ignore[no-any-return]
        now = self._backend.now()
        ttl = self._ttl
        if any(_expired(tv, ttl.ttl_ms, now) for tv in stored):
            alive = [tv for tv in stored if not _expired(tv, ttl.ttl_ms, now)]
            visible = stored if ttl.state_visibility is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp else alive
            if alive:
                self._backend.raw_put(self._name, self._namespace, alive)
            else:
                self.clear()
            stored = visible
        if ttl.update_type is StateTtlConfig.UpdateType.OnReadAndWrite:
            for tv in stored:
                tv.last_access = now
        return [tv.value for tv in stored]

    def get(self) -> List[T]:
        return list(self._alive())

    def get_raw(self) -> Optional[List[T]]:
        """The stored list or None when nothing is stored (how Flink's window operator sees contents)."""
        values = self._alive()
        return values if values else None

    def _wrap(self, value: Any) -> Any:
        return value if self._ttl is None else TtlValue(value, self._backend.now())

    def add(self, value: T) -> None:
        if value is None:
            msg = f"ListState {self._name!r}: add(None) is not allowed (Flink throws too)"
            raise StateError(msg)
        stored = self._backend.raw_get(self._name, self._namespace)
        if stored is None:
            self._backend.raw_put(self._name, self._namespace, [self._wrap(value)])
        else:
            stored.append(self._wrap(value))

    def add_all(self, values: Iterable[T]) -> None:
        for value in values:
            self.add(value)

    def update(self, values: Optional[Iterable[T]]) -> None:
        self.clear()
        if values is not None:
            self.add_all(values)

    def merge_namespaces(self, target: Hashable, sources: Iterable[Hashable]) -> None:
        merged: List[Any] = []
        for source in sources:
            stored = self._backend.raw_get(self._name, source)
            if stored is not None:
                merged.extend(stored)
                self._backend.raw_remove(self._name, source)
        if merged:
            stored = self._backend.raw_get(self._name, target)
            self._backend.raw_put(self._name, target, (stored or []) + merged)


class MapState(InternalState, Generic[K, V]):
    """A map per key and namespace (TTL per entry)."""

    def _map(self, create: bool = False) -> Dict[Any, Any]:
        stored = self._backend.raw_get(self._name, self._namespace)
        if stored is None:
            stored = {}
            if create:
                self._backend.raw_put(self._name, self._namespace, stored)
        return stored  # type: ignore[no-any-return]

    def _read_entry(self, stored: Dict[Any, Any], key: Any) -> Tuple[bool, Any]:
        if key not in stored:
            return False, None
        entry = stored[key]
        if self._ttl is None:
            return True, entry
        now = self._backend.now()
        if _expired(entry, self._ttl.ttl_ms, now):
            del stored[key]
            if not stored:
                self.clear()
            if self._ttl.state_visibility is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp:
                return True, entry.value
            return False, None
        if self._ttl.update_type is StateTtlConfig.UpdateType.OnReadAndWrite:
            entry.last_access = now
        return True, entry.value

    def get(self, key: K) -> Optional[V]:
        return self._read_entry(self._map(), key)[1]  # type: ignore[no-any-return]

    def put(self, key: K, value: V) -> None:
        stored = self._map(create=True)
        stored[key] = value if self._ttl is None else TtlValue(value, self._backend.now())

    def put_all(self, entries: Dict[K, V]) -> None:
        for k, v in entries.items():
            self.put(k, v)

    def remove(self, key: K) -> None:
        stored = self._map()
        stored.pop(key, None)
        if not stored:
            self.clear()

    def contains(self, key: K) -> bool:
        return self._read_entry(self._map(), key)[0]

    def items(self) -> Iterator[Tuple[K, V]]:
        stored = self._map()
        out = []
        for k in list(stored):
            present, value = self._read_entry(stored, k)
            if present:
                out.append((k, value))
        return iter(out)

    def keys(self) -> Iterator[K]:
        return (k for k, _ in self.items())

    def values(self) -> Iterator[V]:
        return (v for _, v in self.items())

    def is_empty(self) -> bool:
        return not any(True for _ in self.items())

    def __iter__(self) -> Iterator[K]:
        return self.keys()

    def __contains__(self, key: object) -> bool:
        return self.contains(key)  # type: ignore[arg-type]

    def __getitem__(self, key: K) -> V:
        present, value = self._read_entry(self._map(), key)
        if not present:
            raise KeyError(key)
        return value  # type: ignore[no-any-return]

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)


_STATE_CLASSES: Dict[str, type] = {
    "value": ValueState,
    "list": ListState,
    "map": MapState,
    "reducing": ReducingState,
    "aggregating": AggregatingState,
}

__all__ = [
    "AggregatingState",
    "AggregatingStateDescriptor",
    "KeyedStateBackend",
    "ListState",
    "ListStateDescriptor",
    "MapState",
    "MapStateDescriptor",
    "ReducingState",
    "ReducingStateDescriptor",
    "State",
    "StateDescriptor",
    "StateTtlConfig",
    "ValueState",
    "ValueStateDescriptor",
    "VOID_NAMESPACE",
]
