"""What each parallel instance gets of a broadcast element, written once for both APIs: in Flink every instance
decodes its own copy from what the previous operator's coder wrote (an untyped value: a pickle round trip,
``cloudpickle.dumps`` then ``loads``; a declared type: its coder), so an object whose ``__deepcopy__`` or
``__reduce__`` is its own is copied as pickle does, never as ``copy.deepcopy`` does.
``benchmarks/pyflink_broadcast_copies.py`` runs these jobs in real PyFlink 2.3.0 and records their outputs in
``pyflink_broadcast_copies.json``; ``test_pyflink_broadcast_copies.py`` runs them with pyspark_flinkish and compares.

Cases (parallelism 2), each ``from_collection([0, 1, 2])`` then ``map(make)`` (untyped, or the declared type):

* ``broadcast map``: ``broadcast()`` then ``map(show, STRING)``: once per instance;
* ``broadcast state``: ``connect(<a one-element stream>, broadcast(descriptor))`` with a ``BroadcastProcessFunction``
  whose ``process_broadcast_element`` yields the element it got, then ``map(show, STRING)``.

``make``: ``Generation`` (its ``__reduce__`` makes a copy one generation older), ``DeepCopied`` (its ``__deepcopy__``
adds 100; pickled as it is) or ``FLOAT`` (``v / 10`` declared ``Types.FLOAT()``).

This module imports neither library: functions take ``api``, a namespace with ``Types``, ``MapStateDescriptor``
and ``BroadcastProcessFunction`` from one of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

ORACLE = Path(__file__).with_name("pyflink_broadcast_copies.json")


class Generation:
    """Copied by pickle (and by ``copy.deepcopy``, which uses ``__reduce_ex__``) one generation older."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __reduce__(self) -> Any:
        return (Generation, (self.n + 1,))


class DeepCopied:
    """Pickled as it is; ``copy.deepcopy`` adds 100."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __deepcopy__(self, memo: Any) -> DeepCopied:
        return DeepCopied(self.n + 100)


def show(value: Any) -> str:
    if isinstance(value, (Generation, DeepCopied)):
        return f"{type(value).__name__}:{value.n}"
    return f"{type(value).__name__}:{value!r}"


# name -> (shape, make)
CASES: Dict[str, Tuple[str, str]] = {
    "broadcast map Generation": ("map", "Generation"),
    "broadcast map DeepCopied": ("map", "DeepCopied"),
    "broadcast map FLOAT": ("map", "FLOAT"),
    "broadcast state Generation": ("state", "Generation"),
    "broadcast state DeepCopied": ("state", "DeepCopied"),
    "broadcast state FLOAT": ("state", "FLOAT"),
}


def _made(api: Any, env: Any, make: str) -> Any:
    T = api.Types  # noqa: N806
    numbers = env.from_collection([0, 1, 2], type_info=T.INT())
    if make == "Generation":
        return numbers.map(Generation)
    if make == "DeepCopied":
        return numbers.map(DeepCopied)
    return numbers.map(lambda v: v / 10, output_type=T.FLOAT())


def job(api: Any, environment: Callable[[], Any], name: str) -> Any:
    """Case ``name``'s stream of strings (the environment at parallelism 2)."""
    shape, make = CASES[name]
    T = api.Types  # noqa: N806
    env = environment()
    made = _made(api, env, make)
    if shape == "map":
        return made.broadcast().map(show, output_type=T.STRING())
    descriptor = api.MapStateDescriptor("seen", T.STRING(), T.STRING())

    class Echo(api.BroadcastProcessFunction):  # type: ignore[misc,name-defined]
        def process_element(self, value: Any, ctx: Any) -> Any:
            return []

        def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
            yield value

    other = env.from_collection(["x"], type_info=T.STRING())
    return other.connect(made.broadcast(descriptor)).process(Echo()).map(show, output_type=T.STRING())


def recorded() -> Dict[str, List[str]]:
    return json.loads(ORACLE.read_text(encoding="utf-8"))["cases"]  # type: ignore[no-any-return]
