"""Keyed state in Flink's model: per key and namespace, Value/List/Map/Reducing/Aggregating, with TTL.

A :class:`KeyedStateBackend` holds every key's state in plain Python structures, one dict per key, so that
one key's state (plus its timers) can be taken out and put back as a snapshot — which is how the Spark
executors keep it between micro-batches. State objects are views: they read and write the backend's
*current key* and their *current namespace* (a window, or :data:`VOID_NAMESPACE` for user state of
process functions).

What state there is comes from its descriptor (:mod:`.state_descriptors`); TTL follows Flink
(:mod:`.state_ttl`): the views check and refresh each entry's :class:`~.state_ttl.TtlValue`, the backend drops
expired entries before snapshots.
"""

from __future__ import annotations

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

from .errors import StateError
from .key_identity import distinct_key, plain_key
from .state_descriptors import StateDescriptor
from .state_ttl import StateTtlConfig, TtlValue, expiration_time, is_expired
from .void_namespace import VOID_NAMESPACE, VoidNamespace

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
IN = TypeVar("IN")
OUT = TypeVar("OUT")
ACC = TypeVar("ACC")


_VoidNamespace = VoidNamespace  # where the pickles of older versions name it


# ----------------------------------------------------------------------------------------- backend

StateKey = Tuple[str, Hashable]


class KeyedStateBackend:
    """All keyed state of one operator instance: ``key -> {(state name, namespace): stored value}``.

    ``clock`` gives the processing time used for TTL. The backend never calls a wall clock itself.
    """

    def __init__(self, clock: Callable[[], int], key_type: Any = None) -> None:
        self._tables: Dict[Any, Dict[StateKey, Any]] = {}
        self._clock = clock
        self._current_key: Any = None
        self._state_key: Any = None
        self._has_key = False
        self.key_type = key_type
        name = getattr(key_type, "name", None)
        self._plain_types: Tuple[type, ...] = (
            (str, int) if key_type is None else (str,) if name == "STRING"
            else (int,) if name in ("BYTE", "SHORT", "INT", "LONG") else ()
        )
        self.descriptors: Dict[str, StateDescriptor] = {}

    # -- key context
    def set_current_key(self, key: Any) -> None:
        """Make ``key`` current: state is that of the key Flink holds it as (``core/key_identity.py``), and the
        current key (``ctx.get_current_key()``) the value Flink hands back, as PyFlink's functions get it decoded
        from Java: a ``FLOAT`` key rounded to 32 bits, a ``DOUBLE`` key of ``1`` as ``1.0``, a ``ROW`` key as a
        ``Row`` with the type's names, whatever the key selector returned."""
        if type(key) in self._plain_types:  # str and int keys: Python's equality is Flink's
            self._current_key = self._state_key = key
        else:
            self._state_key = distinct_key(key, self.key_type)
            self._current_key = plain_key(self._state_key)
        self._has_key = True

    def state_key(self, key: Any) -> Any:
        """``key`` as this backend's tables and the operator's timers hold it (``distinct_key``)."""
        return distinct_key(key, self.key_type)

    def current_state_key(self) -> Any:
        """The current key as the tables and timers hold it; raises outside a keyed context."""
        self.get_current_key()
        return self._state_key

    def unset_current_key(self) -> None:
        """Leave the keyed context (e.g. the broadcast side of a keyed broadcast operator): keyed state then
        raises, as in Flink."""
        self._current_key = self._state_key = None
        self._has_key = False

    def has_current_key(self) -> bool:
        """Whether a key is current (an element or timer of a key is being processed)."""
        return self._has_key

    def get_current_key(self) -> Any:
        if not self._has_key:
            msg = "keyed state was used outside a keyed context (no current key); use it after key_by"
            raise StateError(msg)
        return self._current_key

    def now(self) -> int:
        return self._clock()

    # -- raw access (current key)
    def _table(self, create: bool) -> Optional[Dict[StateKey, Any]]:
        key = self._state_key if self._has_key else self.current_state_key()  # the latter raises
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
        key = self._state_key if self._has_key else self.current_state_key()
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
        return self.state_key(key) in self._tables

    def key_table(self, key: Any) -> Dict[StateKey, Any]:
        return self._tables.get(self.state_key(key), {})

    def set_key_table(self, key: Any, table: Dict[StateKey, Any]) -> None:
        key = self.state_key(key)
        if table:
            self._tables[key] = table
        else:
            self._tables.pop(key, None)

    def drop_key(self, key: Any) -> None:
        self._tables.pop(self.state_key(key), None)

    def next_expiry(self, key: Any) -> Optional[int]:
        """The earliest processing time at which one of ``key``'s TTL entries expires (None: it holds none), i.e.
        when :meth:`purge_expired` would first drop something: an executor that loads only the keys a micro-batch
        needs loads this key once processing time reaches it, so that expired entries are dropped as before."""
        earliest: Optional[int] = None
        for (name, _), stored in self._tables.get(self.state_key(key), {}).items():
            desc = self.descriptors.get(name)
            ttl = desc._ttl() if desc is not None else None
            if ttl is None:
                continue
            if desc.kind == "list":  # type: ignore[union-attr]
                entries: Iterable[Any] = stored
            elif desc.kind == "map":  # type: ignore[union-attr]
                entries = stored.values()
            else:
                entries = (stored,)
            for tv in entries:
                t = expiration_time(tv, ttl.ttl_ms)
                if earliest is None or t < earliest:
                    earliest = t
        return earliest

    def purge_expired(self, key: Any) -> None:
        """Drop expired TTL entries of ``key`` (done before snapshots, as Flink's background cleanup)."""
        key = self.state_key(key)
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
                alive = [tv for tv in stored if not is_expired(tv, ttl.ttl_ms, now)]
                if alive:
                    table[skey] = alive
                else:
                    del table[skey]
            elif desc.kind == "map":  # type: ignore[union-attr]
                alive_map = {k: tv for k, tv in stored.items() if not is_expired(tv, ttl.ttl_ms, now)}
                if alive_map:
                    table[skey] = alive_map
                else:
                    del table[skey]
            elif is_expired(stored, ttl.ttl_ms, now):
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
        if is_expired(stored, self._ttl.ttl_ms, now):
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
        if any(is_expired(tv, ttl.ttl_ms, now) for tv in stored):
            alive = [tv for tv in stored if not is_expired(tv, ttl.ttl_ms, now)]
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
        if is_expired(entry, self._ttl.ttl_ms, now):
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
    "KeyedStateBackend",
    "ListState",
    "MapState",
    "ReducingState",
    "State",
    "ValueState",
    "VOID_NAMESPACE",
]
