"""PyFlink's two-input streams: ``ConnectedStreams`` (``DataStream.connect``), ``BroadcastStream``
(``DataStream.broadcast(MapStateDescriptor, ...)``) and ``BroadcastConnectedStream``.

Each builds one plan node with two inputs (:class:`~.plan.TwoInputSpec`); its operator
(:mod:`pyspark_flinkish.core.co_operators`) sees each record with the input it came from, and its watermark is the
minimum of its inputs' watermarks. This module does not import :mod:`.data_stream` (which imports it): the
streams it returns are made by the ``make_stream`` function the calling ``DataStream`` hands over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, List, Optional, Union

from ..core.co_functions import (
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
)
from ..core.co_operators import (
    BroadcastProcessOperator,
    CoFlatMapOperator,
    CoMapOperator,
    CoProcessOperator,
    KeyedBroadcastProcessOperator,
    KeyedCoProcessOperator,
)
from ..core.errors import InvalidPipelineError, InvalidTypeError
from ..core.state_descriptors import MapStateDescriptor
from ..core.typeinfo import TypeInformation
from .plan import ParallelOperatorFactory, Transformation, TwoInputSpec, made_with_parallelism

if TYPE_CHECKING:
    from .data_stream import DataStream

MakeStream = Callable[[Transformation], "DataStream"]


def _is_keyed(stream: Any) -> bool:
    return getattr(stream, "_key_selector", None) is not None


def _two_input(
    first: DataStream, second: DataStream, name: str, factory: Callable[[], Any], spec: TwoInputSpec,
    output_type: Optional[TypeInformation], keyed: bool,
) -> Transformation:
    t = Transformation(
        "operator", name, [first._t, second._t], factory=factory, output_type=output_type, keyed=keyed, spec=spec
    )
    made_with_parallelism(t, first._env)  # Flink: the environment's parallelism when the operator is made
    return t


def _method(obj: Any, name: str, what: str) -> Callable[..., Any]:
    fn = getattr(obj, name, None)
    if isinstance(obj, type) or not callable(fn):
        msg = f"{what} needs an instance with a {name}() method; got {type(obj).__name__} {obj!r}"
        raise InvalidTypeError(msg)
    return fn  # type: ignore[no-any-return]


class _KeyedCoMap(KeyedCoProcessFunction):  # type: ignore[type-arg]
    """A co-map or co-flat-map function on keyed connected streams, run as a ``KeyedCoProcessFunction`` (as PyFlink
    does), so that it has keyed state per key."""

    def __init__(self, function: Any, fn1: Callable[[Any], Any], fn2: Callable[[Any], Any], many: bool) -> None:
        self.function = function
        self.fns = (fn1, fn2)
        self.many = many

    def open(self, runtime_context: Any) -> None:
        opener = getattr(self.function, "open", None)
        if callable(opener):
            opener(runtime_context)

    def close(self) -> None:
        closer = getattr(self.function, "close", None)
        if callable(closer):
            closer()

    def _apply(self, i: int, value: Any) -> Any:
        result = self.fns[i](value)
        return result if self.many else [result]

    def process_element1(self, value: Any, ctx: Any) -> Any:
        return self._apply(0, value)

    def process_element2(self, value: Any, ctx: Any) -> Any:
        return self._apply(1, value)


class ConnectedStreams:
    """Two streams of possibly different types, connected (``stream1.connect(stream2)``): a co-function sees the
    elements of both, in arrival order (which Flink does not define between the inputs), and may share state
    between them. Its watermark is the minimum of the two inputs' watermarks."""

    def __init__(self, stream1: DataStream, stream2: DataStream, make_stream: MakeStream) -> None:
        if getattr(stream2, "_env", None) is not stream1._env:
            msg = "connect() of streams from different environments (or of something that is not a DataStream)"
            raise InvalidPipelineError(msg)
        self.stream1 = stream1
        self.stream2 = stream2
        self._make = make_stream

    def key_by(
        self, key_selector1: Any, key_selector2: Any, key_type: Optional[TypeInformation] = None
    ) -> ConnectedStreams:
        """Key both inputs (one key selector each, for a common key type): a ``process`` then gets keyed state and
        timers per key, shared by both inputs."""
        ds1 = self.stream1.key_by(key_selector1, key_type)
        ds2 = self.stream2.key_by(key_selector2, key_type)
        return ConnectedStreams(ds1, ds2, self._make)

    def _keyed(self) -> bool:
        return _is_keyed(self.stream1) and _is_keyed(self.stream2)

    def map(self, func: CoMapFunction, output_type: Optional[TypeInformation] = None) -> DataStream:  # type: ignore[type-arg]
        """``map1`` for elements of the first stream, ``map2`` for the second (after ``key_by``: with keyed state,
        run as a keyed co-process operator, as in PyFlink)."""
        fn1, fn2 = _method(func, "map1", "map()"), _method(func, "map2", "map()")
        if self._keyed():
            return self.process(_KeyedCoMap(func, fn1, fn2, many=False), output_type)
        t = _two_input(
            self.stream1, self.stream2, "Co-Map", lambda: CoMapOperator("Co-Map", fn1, fn2, func),
            TwoInputSpec("co_map"), output_type, False,
        )
        return self._make(t)

    def flat_map(self, func: CoFlatMapFunction, output_type: Optional[TypeInformation] = None) -> DataStream:  # type: ignore[type-arg]
        """``flat_map1`` / ``flat_map2``: zero or more outputs per element."""
        fn1, fn2 = _method(func, "flat_map1", "flat_map()"), _method(func, "flat_map2", "flat_map()")
        if self._keyed():
            return self.process(_KeyedCoMap(func, fn1, fn2, many=True), output_type)
        t = _two_input(
            self.stream1, self.stream2, "Co-Flat Map", lambda: CoFlatMapOperator("Co-Flat Map", fn1, fn2, func),
            TwoInputSpec("co_flat_map"), output_type, False,
        )
        return self._make(t)

    def process(
        self, func: Union[CoProcessFunction, KeyedCoProcessFunction], output_type: Optional[TypeInformation] = None  # type: ignore[type-arg]
    ) -> DataStream:
        """A ``CoProcessFunction`` on connected streams, or a ``KeyedCoProcessFunction`` after ``key_by``. As in
        PyFlink, the operator is keyed only when both inputs are keyed streams."""
        for m in ("process_element1", "process_element2"):
            _method(func, m, "ConnectedStreams.process()")
        if self._keyed():
            if isinstance(func, CoProcessFunction):
                msg = "a CoProcessFunction on keyed connected streams: use a KeyedCoProcessFunction after key_by"
                raise InvalidTypeError(msg)
            ks1, ks2 = self.stream1._key_selector, self.stream2._key_selector  # type: ignore[attr-defined]
            key_type = self.stream1._key_type  # type: ignore[attr-defined]
            name = "Keyed Co-Process"
            spec = TwoInputSpec("keyed_co_process", key_selectors=[ks1, ks2], key_type=key_type)
            t = _two_input(
                self.stream1, self.stream2, name, lambda: KeyedCoProcessOperator(name, ks1, ks2, func), spec,
                output_type, True,
            )
            return self._make(t)
        if isinstance(func, KeyedCoProcessFunction):
            msg = (
                "a KeyedCoProcessFunction needs keyed connected streams: call "
                "connect(...).key_by(key_selector1, key_selector2) before process(...)"
            )
            raise InvalidPipelineError(msg)
        t = _two_input(
            self.stream1, self.stream2, "Co-Process", lambda: CoProcessOperator("Co-Process", func),
            TwoInputSpec("co_process"), output_type, False,
        )
        return self._make(t)


class BroadcastStream:
    """A stream whose elements go to every parallel instance of the operator it is connected to, with the
    broadcast state maps of ``broadcast_state_descriptors`` (``DataStream.broadcast(descriptor, ...)``). It can
    only be connected: ``stream.connect(broadcast_stream)`` or ``keyed_stream.connect(broadcast_stream)``."""

    def __init__(self, input_stream: DataStream, broadcast_state_descriptors: List[MapStateDescriptor]) -> None:
        self.input_stream = input_stream
        self.broadcast_state_descriptors = broadcast_state_descriptors


def broadcast_stream(stream: DataStream, descriptors: List[Any]) -> BroadcastStream:
    """``stream.broadcast(descriptor, ...)``: checks the descriptors (``MapStateDescriptor``s, as in PyFlink)."""
    if not descriptors:
        msg = "a BroadcastStream needs at least one MapStateDescriptor (broadcast() without one is a partitioning)"
        raise InvalidPipelineError(msg)
    for d in descriptors:
        if not isinstance(d, MapStateDescriptor):
            msg = f"broadcast_state_descriptor must be a MapStateDescriptor; got {type(d).__name__} {d!r}"
            raise InvalidTypeError(msg)
    return BroadcastStream(stream, list(descriptors))


class BroadcastConnectedStream:
    """A keyed or non-keyed stream connected with a :class:`BroadcastStream`: ``process`` with a
    ``BroadcastProcessFunction`` (non-keyed) or a ``KeyedBroadcastProcessFunction`` (keyed)."""

    def __init__(
        self,
        non_broadcast_stream: DataStream,
        broadcast_stream: BroadcastStream,
        broadcast_state_descriptors: List[MapStateDescriptor],
        make_stream: MakeStream,
    ) -> None:
        if broadcast_stream.input_stream._env is not non_broadcast_stream._env:
            msg = "connect() of streams from different environments"
            raise InvalidPipelineError(msg)
        self.non_broadcast_stream = non_broadcast_stream
        self.broadcast_stream = broadcast_stream
        self.broadcast_state_descriptors = broadcast_state_descriptors
        self._make = make_stream

    def process(
        self,
        func: Union[BroadcastProcessFunction, KeyedBroadcastProcessFunction],  # type: ignore[type-arg]
        output_type: Optional[TypeInformation] = None,
    ) -> DataStream:
        """``process_element`` for the stream's elements, ``process_broadcast_element`` for the broadcast ones."""
        for m in ("process_element", "process_broadcast_element"):
            _method(func, m, "BroadcastConnectedStream.process()")
        keyed = _is_keyed(self.non_broadcast_stream)
        if isinstance(func, BroadcastProcessFunction) and keyed:
            msg = "BroadcastProcessFunction should be applied to non-keyed DataStream (PyFlink raises the same)"
            raise InvalidTypeError(msg)
        if isinstance(func, KeyedBroadcastProcessFunction) and not keyed:
            msg = "KeyedBroadcastProcessFunction should be applied to keyed DataStream (PyFlink raises the same)"
            raise InvalidTypeError(msg)
        descriptors = list(self.broadcast_state_descriptors)
        first, second = self.non_broadcast_stream, self.broadcast_stream.input_stream
        if keyed:
            ks = first._key_selector  # type: ignore[attr-defined]
            name = "Keyed-Co-Process-Broadcast"
            spec = TwoInputSpec(
                "keyed_broadcast_process", key_selectors=[ks, None], key_type=first._key_type,  # type: ignore[attr-defined]
                broadcast_descriptors=descriptors,
            )
            factory = ParallelOperatorFactory(lambda n: KeyedBroadcastProcessOperator(name, ks, func, descriptors, n))
            t = _two_input(first, second, name, factory, spec, output_type, True)
            return self._make(t)
        name = "Co-Process-Broadcast"
        spec = TwoInputSpec("broadcast_process", broadcast_descriptors=descriptors)
        factory = ParallelOperatorFactory(lambda n: BroadcastProcessOperator(name, func, descriptors, n))
        t = _two_input(first, second, name, factory, spec, output_type, False)
        return self._make(t)


def connect(stream: DataStream, other: Any, make_stream: MakeStream) -> Union[ConnectedStreams, BroadcastConnectedStream]:
    """``stream.connect(other)``: a :class:`BroadcastConnectedStream` for a :class:`BroadcastStream`, else
    :class:`ConnectedStreams`."""
    if isinstance(other, BroadcastStream):
        return BroadcastConnectedStream(stream, other, other.broadcast_state_descriptors, make_stream)
    if not hasattr(other, "_t") or not hasattr(other, "key_by"):
        msg = f"connect() takes a DataStream or a BroadcastStream; got {type(other).__name__} {other!r}"
        raise InvalidTypeError(msg)
    return ConnectedStreams(stream, other, make_stream)


__all__ = ["BroadcastConnectedStream", "BroadcastStream", "ConnectedStreams", "broadcast_stream", "connect"]
