"""The repository's ``conformance/`` is a byte-identical copy of the project's shared conformance material
(``../shared/conformance`` beside the repository, which is never edited): same files, same bytes. A fresh clone
has no such folder, so there the comparison is skipped and the vendored copy is what the tests run.

To update the vendored copy after the shared material changed (new Flink outputs, new scenarios)::

    rm -r conformance && cp -r ../shared/conformance conformance && chmod -R u+w conformance
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict

import pytest

REPO = Path(__file__).resolve().parents[2]
VENDORED = REPO / "conformance"
SHARED = REPO.parent / "shared" / "conformance"


def _tree(root: Path) -> Dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_vendored_copy_holds_the_scenarios_their_expected_outputs_and_the_readme() -> None:
    tree = _tree(VENDORED)
    scenarios = {name[len("scenarios/") : -len(".json")] for name in tree if name.startswith("scenarios/")}
    expected = {name[len("expected/") : -len(".expected.json")] for name in tree if name.startswith("expected/")}
    assert "README.md" in tree
    assert len(scenarios) >= 42
    assert scenarios == expected, "every scenario needs its expected output and vice versa"
    assert set(tree) == {"README.md"} | {f"scenarios/{n}.json" for n in scenarios} | {
        f"expected/{n}.expected.json" for n in expected
    }, "nothing but the shared material belongs in conformance/"


def test_vendored_copy_is_identical_to_the_shared_material() -> None:
    if not SHARED.is_dir():
        pytest.skip(f"no shared conformance material beside the repository ({SHARED}): nothing to compare with")
    vendored, shared = _tree(VENDORED), _tree(SHARED)
    missing = sorted(set(shared) - set(vendored))
    extra = sorted(set(vendored) - set(shared))
    changed = sorted(name for name in set(shared) & set(vendored) if shared[name] != vendored[name])
    assert (missing, extra, changed) == ([], [], []), (
        f"conformance/ differs from {SHARED}: missing {missing}, not in the shared material {extra}, "
        f"different bytes {changed}; refresh it as this module's docstring says"
    )
