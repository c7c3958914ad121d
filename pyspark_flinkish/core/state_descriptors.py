"""State descriptors (Flink's ``StateDescriptor`` and its subclasses): name a piece of keyed state, its kind
and type, and optionally its TTL (:mod:`.state_ttl`). The keyed state backend (:mod:`.state`) creates the state
a descriptor describes."""

from __future__ import annotations

from typing import Any, Callable, Optional

from .errors import InvalidArgumentError, InvalidTypeError
from .state_ttl import StateTtlConfig
from .typeinfo import TypeInformation


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


__all__ = [
    "AggregatingStateDescriptor",
    "ListStateDescriptor",
    "MapStateDescriptor",
    "ReducingStateDescriptor",
    "StateDescriptor",
    "ValueStateDescriptor",
]
