"""The keyed-snapshot encoding (``core/codec.py``) pinned by golden files: every tag on fixed values, and the
snapshots of keyed operators holding every kind of state (value, list, map, reducing, aggregating, TTL, window
contents of each window function, trigger state, the merging window set, per-window and global state, both kinds
of timer). A renamed tag or field fails the comparison; the golden files must also still decode to the inputs
(what an existing checkpoint holds stays readable). Regenerating deliberately: ``conftest.Golden``."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

from pyspark_flinkish.core.codec import FORMAT, VERSION, decode_snapshot, decode_value, encode_snapshot, encode_value

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
from inputs import VALUES, keyed_operators


def _same(decoded: Any, value: Any) -> bool:
    if isinstance(value, float) and math.isnan(value):
        return isinstance(decoded, float) and math.isnan(decoded)
    expected_type = set if type(value) is frozenset else type(value)  # {"S": ...} decodes to a set
    return type(decoded) is expected_type and decoded == value


def test_values_match_the_golden_file(golden) -> None:  # type: ignore[no-untyped-def]
    stored = golden("codec_values", {name: encode_value(v) for name, v in VALUES.items()})
    assert set(stored) == set(VALUES)


def test_golden_values_decode_to_the_inputs(golden) -> None:  # type: ignore[no-untyped-def]
    stored = golden.load("codec_values")
    assert set(stored) == set(VALUES)
    for name, data in stored.items():
        assert _same(decode_value(data), VALUES[name]), name


def _snapshots() -> Dict[str, Dict[str, Any]]:
    return {name: {str(k): snap for k, snap in h.snapshot().items()} for name, h in keyed_operators().items()}


def test_snapshots_of_every_state_kind_match_the_golden_file(golden) -> None:  # type: ignore[no-untyped-def]
    actual = {
        name: {key: json.loads(encode_snapshot(snap)) for key, snap in by_key.items()}
        for name, by_key in _snapshots().items()
    }
    stored = golden("keyed_snapshots", actual, expand=2)
    assert all(doc["format"] == FORMAT and doc["version"] == VERSION for by_key in stored.values() for doc in by_key.values())


def test_golden_snapshots_decode_and_restore_into_the_operators(golden) -> None:  # type: ignore[no-untyped-def]
    harnesses = keyed_operators()
    stored = golden.load("keyed_snapshots")
    assert set(stored) == set(harnesses)
    for name, by_key in stored.items():
        op: Any = harnesses[name].operator
        for key, doc in by_key.items():
            decoded = decode_snapshot(json.dumps(doc).encode("utf-8"))
            original = op.snapshot_key(key)
            assert decoded == original, (name, key)
            op.evict_key(key)
            assert op.snapshot_key(key) is None
            op.restore_key(key, decoded)
            assert op.snapshot_key(key) == original, (name, key)


@pytest.mark.parametrize("tag", ["T", "D", "W", "G", "V", "t", "B", "F", "S", "P"])
def test_the_golden_values_use_every_tag(tag: str, golden) -> None:  # type: ignore[no-untyped-def]
    stored = golden.load("codec_values")
    assert f'{{"{tag}":' in json.dumps(stored, separators=(",", ":"))
