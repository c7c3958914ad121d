"""``pyflink.datastream.state``: keyed state, descriptors and TTL."""

from __future__ import annotations

from ..core.broadcast_state import BroadcastState, ReadOnlyBroadcastState
from ..core.state import AggregatingState, ListState, MapState, ReducingState, State, ValueState
from ..core.state_descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from ..core.state_ttl import StateTtlConfig

__all__ = [
    "BroadcastState",
    "ReadOnlyBroadcastState",
    "AggregatingState",
    "AggregatingStateDescriptor",
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
]
