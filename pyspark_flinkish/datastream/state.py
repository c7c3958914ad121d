"""``pyflink.datastream.state``: keyed state, descriptors and TTL."""

from __future__ import annotations

from ..core.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
    State,
    StateDescriptor,
    StateTtlConfig,
    ValueState,
    ValueStateDescriptor,
)

__all__ = [
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
