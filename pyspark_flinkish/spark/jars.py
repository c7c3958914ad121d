"""The JVM jars pyspark_flinkish needs, fetched from Maven with ``mvn`` into one folder.

``python -m pyspark_flinkish.spark.jars [DIR]`` (``make jars``) runs ``mvn dependency:copy-dependencies`` on the
two POMs shipped with the package (``pyspark_flinkish/spark/jvm/``):

* ``DIR/spark/``: Delta Lake (``io.delta:delta-spark_<spark major.minor>_2.13``) and Spark's Kafka connector
  (``org.apache.spark:spark-sql-kafka-0-10_2.13``) with their runtime dependencies, minus every jar pyspark
  already ships (same artifact name), so that the session never sees two versions of a class;
* ``DIR/kafka/``: an Apache Kafka broker (``org.apache.kafka:kafka_2.13``, KRaft mode) for tests and the demo,
  run in its own JVM by :mod:`pyspark_flinkish.testing.kafka`, never on Spark's classpath.

``DIR`` is ``$PYSPARK_FLINKISH_JARS`` if set, else ``.jars`` in the source checkout the package runs from
(git-ignored). Fetching is idempotent: a folder that holds a ``.complete`` marker for the same POM is kept.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List, Optional

_JVM = Path(__file__).resolve().parent / "jvm"
POMS: Dict[str, Path] = {"spark": _JVM / "spark-pom.xml", "kafka": _JVM / "kafka-broker-pom.xml"}
_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
_VERSIONED = re.compile(r"^(?P<name>.+?)-(?P<version>\d[\w.\-]*)\.jar$")


def default_dir() -> Path:
    """Where the jars live: ``$PYSPARK_FLINKISH_JARS``, else ``<source checkout>/.jars``."""
    env = os.environ.get("PYSPARK_FLINKISH_JARS")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parents[2] / ".jars"


def _pom(kind: str) -> bytes:
    """The POM's bytes, also when the package is imported from a zip (``spark-submit --py-files``), where the
    POM is no file of its own."""
    import pkgutil

    data = pkgutil.get_data(__name__, f"jvm/{POMS[kind].name}")
    if data is None:
        msg = f"{POMS[kind].name} is missing from the pyspark_flinkish package"
        raise FileNotFoundError(msg)
    return data


def coordinates(kind: str = "spark") -> List[str]:
    """The ``group:artifact:version`` coordinates a POM declares (for ``spark.jars.packages``)."""
    root = ET.fromstring(_pom(kind))
    props = {el.tag.split("}")[1]: (el.text or "") for el in root.find("m:properties", _NS) or []}
    out = []
    for dep in root.findall("m:dependencies/m:dependency", _NS):
        fields = [dep.findtext(f"m:{f}", default="", namespaces=_NS) for f in ("groupId", "artifactId", "version")]
        out.append(":".join(re.sub(r"\$\{([^}]+)\}", lambda m: props[m.group(1)], f) for f in fields))
    return out


def _artifact(jar_name: str) -> str:
    m = _VERSIONED.match(jar_name)
    return m.group("name") if m else jar_name[: -len(".jar")]


def _pyspark_artifacts() -> set:  # type: ignore[type-arg]
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    return {_artifact(p.name) for p in jars.glob("*.jar")}


def _stamp(kind: str) -> str:
    return hashlib.sha256(_pom(kind)).hexdigest()[:16]


def jars(kind: str = "spark", directory: Optional[Path] = None) -> List[str]:
    """Absolute paths of the fetched jars of ``kind`` (empty when they were not fetched)."""
    folder = (directory or default_dir()) / kind
    marker = folder / ".complete"
    if not marker.exists() or marker.read_text().strip() != _stamp(kind):
        return []
    return sorted(str(p) for p in folder.glob("*.jar"))


def fetch(directory: Optional[Path] = None, quiet: bool = True) -> Path:
    """Fetch both jar sets with ``mvn`` (a no-op when they are already there); returns the folder."""
    base = directory or default_dir()
    for kind, pom in POMS.items():
        if jars(kind, base):
            continue
        folder = base / kind
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        cmd = ["mvn", "-B", "-Dstyle.color=never", "-f", str(pom), "dependency:copy-dependencies", "-DincludeScope=runtime",
               f"-DoutputDirectory={folder}"]
        if quiet:
            cmd.insert(1, "-q")
        subprocess.run(cmd, check=True)
        if kind == "spark":
            shipped = _pyspark_artifacts()
            for jar in folder.glob("*.jar"):
                if _artifact(jar.name) in shipped:
                    jar.unlink()
        (folder / ".complete").write_text(_stamp(kind))
    return base


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    base = fetch(Path(args[0]).resolve() if args else None, quiet="-v" not in args)
    for kind in POMS:
        print(f"{kind}: {len(jars(kind, base))} jars in {base / kind}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = [
    "POMS",
    "default_dir",
    "coordinates",
    "jars",
    "fetch",
    "main",
]
