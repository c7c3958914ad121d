"""Broadcast state (Flink's ``BroadcastState`` / ``ReadOnlyBroadcastState``): operator state in the form of maps,
one per ``MapStateDescriptor`` given to ``DataStream.broadcast(...)``, the same on every parallel instance.

The broadcast side of a broadcast process function reads and writes it; the other side (and ``on_timer``) reads
it only: a write there raises, as Flink's read-only view does. :class:`BroadcastStateStore` holds the maps of
one operator and hands them out and takes them back as plain data (the Spark executors checkpoint it with the
operator's keyed state).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Dict, Generic, Iterable, Iterator, List, Tuple, TypeVar

from .errors import InvalidArgumentError, InvalidPipelineError
from .state import State
from .state_descriptors import MapStateDescriptor

K = TypeVar("K")
V = TypeVar("V")


class ReadOnlyBroadcastState(State, Generic[K, V]):
    """A read-only view of a broadcast state map (PyFlink's names; ``state[k]``, ``k in state`` and iteration
    over the keys work too)."""

    @abstractmethod
    def get(self, key: K) -> V: ...

    @abstractmethod
    def contains(self, key: K) -> bool: ...

    @abstractmethod
    def items(self) -> Iterable[Tuple[K, V]]: ...

    @abstractmethod
    def keys(self) -> Iterable[K]: ...

    @abstractmethod
    def values(self) -> Iterable[V]: ...

    @abstractmethod
    def is_empty(self) -> bool: ...

    def __getitem__(self, key: K) -> V:
        return self.get(key)

    def __contains__(self, key: object) -> bool:
        return self.contains(key)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())


class BroadcastState(ReadOnlyBroadcastState[K, V]):
    """A broadcast state map, writable (the broadcast side's view)."""

    @abstractmethod
    def put(self, key: K, value: V) -> None: ...

    @abstractmethod
    def put_all(self, dict_value: Dict[K, V]) -> None: ...

    @abstractmethod
    def remove(self, key: K) -> None: ...

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)


class _MapView(BroadcastState[Any, Any]):
    def __init__(self, name: str, entries: Dict[Any, Any], writable: bool) -> None:
        self._name = name
        self._entries = entries
        self._writable = writable

    def _check_writable(self, method: str) -> None:
        if not self._writable:
            msg = (
                f"broadcast state {self._name!r} is read-only here: {method}() is only allowed in "
                "process_broadcast_element (the non-broadcast side and on_timer get a ReadOnlyBroadcastState, "
                "as in Flink)"
            )
            raise InvalidPipelineError(msg)

    def get(self, key: Any) -> Any:
        return self._entries.get(key)

    def contains(self, key: Any) -> bool:
        return key in self._entries

    def items(self) -> Iterable[Tuple[Any, Any]]:
        return list(self._entries.items())

    def keys(self) -> Iterable[Any]:
        return list(self._entries.keys())

    def values(self) -> Iterable[Any]:
        return list(self._entries.values())

    def is_empty(self) -> bool:
        return not self._entries

    def put(self, key: Any, value: Any) -> None:
        self._check_writable("put")
        self._entries[key] = value

    def put_all(self, dict_value: Dict[Any, Any]) -> None:
        self._check_writable("put_all")
        self._entries.update(dict_value)

    def remove(self, key: Any) -> None:
        self._check_writable("remove")
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._check_writable("clear")
        self._entries.clear()


class BroadcastStateStore:
    """The broadcast state maps of one operator, one per declared descriptor name."""

    def __init__(self, descriptors: List[MapStateDescriptor]) -> None:
        self.maps: Dict[str, Dict[Any, Any]] = {d.name: {} for d in descriptors}

    def view(self, descriptor: MapStateDescriptor, writable: bool) -> BroadcastState[Any, Any]:
        """The state of ``descriptor``: read-write (``writable``) or read-only. An undeclared descriptor raises,
        as Flink does."""
        if not isinstance(descriptor, MapStateDescriptor):
            msg = f"get_broadcast_state needs a MapStateDescriptor; got {type(descriptor).__name__} {descriptor!r}"
            raise InvalidArgumentError(msg)
        entries = self.maps.get(descriptor.name)
        if entries is None:
            msg = (
                f"the broadcast state {descriptor.name!r} does not exist: declare its MapStateDescriptor in "
                f"DataStream.broadcast(...) (declared: {sorted(self.maps)})"
            )
            raise InvalidArgumentError(msg)
        return _MapView(descriptor.name, entries, writable)

    def snapshot(self) -> Dict[str, Dict[Any, Any]]:
        """Every map as plain data (copies)."""
        return {name: dict(entries) for name, entries in self.maps.items()}

    def restore(self, maps: Dict[str, Dict[Any, Any]]) -> None:
        """Inverse of :meth:`snapshot`; names no longer declared are dropped, new names start empty."""
        for name in self.maps:
            self.maps[name] = dict(maps.get(name, {}))


__all__ = ["BroadcastState", "BroadcastStateStore", "ReadOnlyBroadcastState"]
