"""The JVM jars pyspark_flinkish needs, fetched from Maven with ``mvn`` into one folder.

``python -m pyspark_flinkish.spark.jars [DIR]`` (``make jars``) runs ``mvn dependency:copy-dependencies`` on the
POMs shipped with the package (``pyspark_flinkish/spark/jvm/``):

* ``DIR/spark/``: Delta Lake (``io.delta:delta-spark_<spark major.minor>_2.13``) and Spark's Kafka connector
  (``org.apache.spark:spark-sql-kafka-0-10_2.13``) with their runtime dependencies, minus every jar pyspark
  already ships (same artifact name), so that the session never sees two versions of a class;
* ``DIR/kafka/``: an Apache Kafka broker (``org.apache.kafka:kafka_2.13``, KRaft mode) for tests and the demo,
  run in its own JVM by :mod:`pyspark_flinkish.testing.kafka`, never on Spark's classpath;
* ``DIR/hdfs/``: a real HDFS for tests (Hadoop's ``MiniDFSCluster`` from ``org.apache.hadoop:hadoop-client-minicluster``,
  of the Hadoop version pyspark ships, read from its ``jars/hadoop-client-api-<version>.jar``), with the package's
  launcher ``spark/jvm/MiniHdfs.java`` compiled by ``javac`` into ``DIR/hdfs/classes/``; run in its own JVM by
  :mod:`pyspark_flinkish.testing.hdfs`, never on Spark's classpath;
* ``DIR/s3proxy/``: an S3-compatible server for tests (S3Proxy, ``org.gaul:s3proxy``, one jar with its
  dependencies), run in its own JVM by :mod:`pyspark_flinkish.testing.s3`, never on Spark's classpath;
* ``DIR/s3a/``: Spark's ``s3a://`` file system, ``org.apache.hadoop:hadoop-aws`` of the Hadoop version pyspark
  ships (pyspark has none) with the AWS SDK v2 ``software.amazon.awssdk:bundle`` its pom declares (about 690 MB),
  minus every jar pyspark already ships; for a session that reads or writes ``s3a://`` (:func:`s3a_settings`).

``DIR`` is ``$PYSPARK_FLINKISH_JARS`` if set, else ``.jars`` in the source checkout the package runs from
(git-ignored). Fetching is idempotent: a folder that holds a ``.complete`` marker for the same POM (and, for
``hdfs``, the same Hadoop version) is kept, and the launcher is compiled again only when its source changed.
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
POMS: Dict[str, Path] = {
    "spark": _JVM / "spark-pom.xml",
    "kafka": _JVM / "kafka-broker-pom.xml",
    "hdfs": _JVM / "hdfs-minicluster-pom.xml",
    "s3proxy": _JVM / "s3proxy-pom.xml",
    "s3a": _JVM / "hadoop-aws-pom.xml",
}
_PYSPARK_HADOOP = ("hdfs", "s3a")
"""Kinds whose Hadoop jars must be of the Hadoop version pyspark ships."""
HDFS_LAUNCHER = "MiniHdfs"
"""The main class of the HDFS test cluster's JVM (``spark/jvm/MiniHdfs.java``, compiled into ``<jars>/hdfs/classes``)."""
_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
_VERSIONED = re.compile(r"^(?P<name>.+?)-(?P<version>\d[\w.\-]*)\.jar$")


def default_dir() -> Path:
    """Where the jars live: ``$PYSPARK_FLINKISH_JARS``, else ``<source checkout>/.jars``."""
    env = os.environ.get("PYSPARK_FLINKISH_JARS")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parents[2] / ".jars"


def _resource(name: str) -> bytes:
    """A file of ``spark/jvm/``, also when the package is imported from a zip (``spark-submit --py-files``), where it
    is no file of its own."""
    import pkgutil

    data = pkgutil.get_data(__name__, f"jvm/{name}")
    if data is None:
        msg = f"jvm/{name} is missing from the pyspark_flinkish package"
        raise FileNotFoundError(msg)
    return data


def _pom(kind: str) -> bytes:
    return _resource(POMS[kind].name)


def pyspark_jars_dir() -> Path:
    """The ``jars`` folder of the installed pyspark (found without importing pyspark)."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        msg = "pyspark is not installed: its jars folder (and the Hadoop version it ships) cannot be found"
        raise FileNotFoundError(msg)
    return Path(next(iter(spec.submodule_search_locations))).resolve() / "jars"


_HADOOP_API = re.compile(r"^hadoop-client-api-(?P<version>\d[\w.\-]*)\.jar$")


def _hadoop_api_versions(folder: Path) -> List[str]:
    found = (_HADOOP_API.match(p.name) for p in folder.glob("hadoop-client-api-*.jar"))
    return sorted(m.group("version") for m in found if m)


def hadoop_version() -> str:
    """The Hadoop version of the installed pyspark, from its ``jars/hadoop-client-api-<version>.jar`` (``3.5.0`` for
    pyspark 4.2.0): the version of the HDFS test cluster's jars, which must match the client Spark talks to it with."""
    folder = pyspark_jars_dir()
    versions = _hadoop_api_versions(folder)
    if len(versions) != 1:
        found = ", ".join(versions) or "none"
        msg = (
            f"cannot tell which Hadoop pyspark ships: expected one hadoop-client-api-<version>.jar in {folder}, "
            f"found {found} (the HDFS test cluster's jars must be of the same Hadoop version)"
        )
        raise RuntimeError(msg)
    return versions[0]


def fetched_hadoop_version(directory: Optional[Path] = None) -> Optional[str]:
    """The Hadoop version of the HDFS test cluster's jars in ``<directory>/hdfs`` (None when there are none)."""
    versions = _hadoop_api_versions((directory or default_dir()) / "hdfs")
    return versions[-1] if versions else None


def _overrides(kind: str) -> Dict[str, str]:
    """POM properties set on mvn's command line (``-Dname=value``): the HDFS cluster's and hadoop-aws's Hadoop is
    pyspark's own."""
    return {"hadoop.version": hadoop_version()} if kind in _PYSPARK_HADOOP else {}


def coordinates(kind: str = "spark") -> List[str]:
    """The ``group:artifact:version`` coordinates a POM declares (for ``spark.jars.packages``)."""
    root = ET.fromstring(_pom(kind))
    props = {el.tag.split("}")[1]: (el.text or "") for el in root.find("m:properties", _NS) or []}
    props.update(_overrides(kind))
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
    digest = hashlib.sha256(_pom(kind))
    for name, value in sorted(_overrides(kind).items()):  # none for spark and kafka: their markers stay as they were
        digest.update(f"\0{name}={value}".encode())
    return digest.hexdigest()[:16]


def jars(kind: str = "spark", directory: Optional[Path] = None) -> List[str]:
    """Absolute paths of the fetched jars of ``kind`` (empty when they were not fetched)."""
    folder = (directory or default_dir()) / kind
    marker = folder / ".complete"
    if not marker.exists() or marker.read_text().strip() != _stamp(kind):
        return []
    return sorted(str(p) for p in folder.glob("*.jar"))


def _javac() -> str:
    home = os.environ.get("JAVA_HOME")
    return os.path.join(home, "bin", "javac") if home else "javac"


def hdfs_launcher(directory: Optional[Path] = None) -> Path:
    """The folder of the compiled HDFS test cluster launcher (``<jars>/hdfs/classes``, holding ``MiniHdfs.class``).

    ``spark/jvm/MiniHdfs.java`` is compiled with ``javac`` against the fetched ``hdfs`` jars when the folder is
    missing or was compiled from another source or against other jars (``classes/.complete`` records both).
    Raises ``FileNotFoundError`` when the jars were not fetched and ``RuntimeError`` when ``javac`` fails.
    """
    base = directory or default_dir()
    classpath = jars("hdfs", base)
    if not classpath:
        msg = f"the HDFS minicluster jars are not in {base / 'hdfs'}: run `make jars`"
        raise FileNotFoundError(msg)
    source = _resource(f"{HDFS_LAUNCHER}.java")
    stamp = hashlib.sha256(source + _stamp("hdfs").encode()).hexdigest()[:16]
    classes = base / "hdfs" / "classes"
    marker = classes / ".complete"
    if marker.exists() and marker.read_text().strip() == stamp and (classes / f"{HDFS_LAUNCHER}.class").exists():
        return classes
    if classes.exists():
        shutil.rmtree(classes)
    src = base / "hdfs" / "src"
    src.mkdir(parents=True, exist_ok=True)
    (src / f"{HDFS_LAUNCHER}.java").write_bytes(source)
    classes.mkdir(parents=True)
    cmd = [_javac(), "-nowarn", "-encoding", "UTF-8", "-d", str(classes), "-cp", os.pathsep.join(classpath),
           str(src / f"{HDFS_LAUNCHER}.java")]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    except FileNotFoundError as exc:
        msg = f"compiling the HDFS test cluster's launcher needs `javac` (a JDK 17), not found: {exc}"
        raise RuntimeError(msg) from exc
    if result.returncode != 0:
        java_file = src / f"{HDFS_LAUNCHER}.java"
        msg = f"javac failed on {java_file} (exit code {result.returncode}):\n{result.stdout}{result.stderr}"
        raise RuntimeError(msg)
    marker.write_text(stamp)
    return classes


def fetch(directory: Optional[Path] = None, quiet: bool = True) -> Path:
    """Fetch every jar set with ``mvn`` and compile the HDFS launcher (a no-op when they are already there);
    returns the folder."""
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
        cmd += [f"-D{name}={value}" for name, value in _overrides(kind).items()]
        if quiet:
            cmd.insert(1, "-q")
        subprocess.run(cmd, check=True)
        if kind in ("spark", "s3a"):  # on Spark's classpath: never a second copy of a jar pyspark ships
            shipped = _pyspark_artifacts()
            for jar in folder.glob("*.jar"):
                if _artifact(jar.name) in shipped:
                    jar.unlink()
        (folder / ".complete").write_text(_stamp(kind))
    hdfs_launcher(base)
    return base


def s3a_settings(directory: Optional[Path] = None) -> Dict[str, str]:
    """Spark settings that put the fetched ``s3a`` jars (hadoop-aws and the AWS SDK bundle) on the classpath of a
    local session's JVM (``spark.driver.extraClassPath``: local mode runs its executors there, and the jars are
    not copied to an executors' folder as ``spark.jars`` would, about 690 MB). Empty when they were not fetched."""
    found = jars("s3a", directory)
    return {"spark.driver.extraClassPath": os.pathsep.join(found)} if found else {}


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    base = fetch(Path(args[0]).resolve() if args else None, quiet="-v" not in args)
    for kind in POMS:
        print(f"{kind}: {len(jars(kind, base))} jars in {base / kind}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = [
    "HDFS_LAUNCHER",
    "POMS",
    "default_dir",
    "coordinates",
    "fetched_hadoop_version",
    "hadoop_version",
    "hdfs_launcher",
    "jars",
    "fetch",
    "main",
    "pyspark_jars_dir",
    "s3a_settings",
]
