"""A local SparkSession configured for pyspark_flinkish (tests, demos, ``spark-submit`` jobs)."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any, Dict, Optional

from .storage import S3A_SETTINGS, options_from_hadoop, scheme_of


def on_databricks() -> bool:
    """True inside a Databricks runtime, where Delta and the Kafka connector are built in."""
    return "DATABRICKS_RUNTIME_VERSION" in os.environ


def default_file_system(spark: Any) -> str:
    """The session's ``fs.defaultFS`` (Hadoop's default file system, against which Spark resolves a path without a
    scheme): the JVM's Hadoop configuration on a classic session (it holds ``core-site.xml``), else
    ``spark.hadoop.fs.defaultFS`` (a Spark Connect session), else ``file:///``."""
    try:
        value = spark.sparkContext._jsc.hadoopConfiguration().get("fs.defaultFS")
    except Exception:  # Spark Connect: no JVM in reach
        value = None
    if not value and spark is not None:
        value = spark.conf.get("spark.hadoop.fs.defaultFS", None)
    return str(value or "file:///")


def storage_options(spark: Any) -> Dict[str, str]:
    """The settings the package's S3 client takes from the session (``storage.options_from_hadoop``), as Spark's
    own ``s3a`` file system gets them for a query (``SessionState.newHadoopConf``): the JVM's Hadoop configuration
    (``core-site.xml`` and ``spark.hadoop.*``) overridden by the session's ``fs.s3a.*`` settings
    (``spark.conf.set("fs.s3a.endpoint", ...)`` on a running session). On Spark Connect (no JVM in reach) the
    session's ``spark.hadoop.fs.s3a.*``, overridden by its ``fs.s3a.*``."""
    conf: Dict[str, str] = {}
    try:
        hadoop = spark.sparkContext._jsc.hadoopConfiguration()
        for name in S3A_SETTINGS:
            value = hadoop.get(name)
            if value:
                conf[name] = str(value)
    except Exception:  # Spark Connect: no JVM in reach
        for name in S3A_SETTINGS:
            value = spark.conf.get(f"spark.hadoop.{name}", None) if spark is not None else None
            if value:
                conf[name] = str(value)
    for name in S3A_SETTINGS:  # the session's settings win, as in the Hadoop configuration of Spark's queries
        try:
            value = spark.conf.get(name, None) if spark is not None else None
        except Exception:  # a session that refuses to answer (stopped): its Hadoop configuration stands
            value = None
        if value:
            conf[name] = str(value)
    return options_from_hadoop(conf)


def spark_path(path: str) -> str:
    """A local path as Spark's readers and writers must be given it.

    On Databricks a path without a scheme means the DBFS root, not the local file system, and the DBFS FUSE mount
    ``/dbfs/X`` is ``dbfs:/X`` there: ``/dbfs/tmp/ck`` becomes ``dbfs:/tmp/ck``, so that Spark's checkpoint and
    files written with local file APIs (keyed state, replayed micro-batches) are the same directory. Any other path
    is named as a ``file:`` URI (a path without a scheme would be resolved against ``fs.defaultFS``).
    """
    if on_databricks():
        if path == "/dbfs" or path.startswith("/dbfs/"):
            return "dbfs:/" + path[len("/dbfs/") :]
        return path
    if scheme_of(path):
        return path  # a URI (hdfs://, s3a://, dbfs:/, ...) as it is
    if path.startswith("/"):
        # the local file system by name: a session whose fs.defaultFS is another file system (hdfs:// on YARN/EMR)
        # would otherwise put Spark's offsets and commits there while the package's files stay on the local disk
        return "file:" + path
    return path


def local_temp_dir(prefix: str) -> str:
    """A new temporary directory that the driver and every executor can open as a local path: under
    ``/dbfs/tmp`` on Databricks (a shared mount), the system's temporary directory elsewhere."""
    if on_databricks():
        root = "/dbfs/tmp"
        os.makedirs(root, exist_ok=True)
        return tempfile.mkdtemp(prefix=prefix, dir=root)
    return tempfile.mkdtemp(prefix=prefix)


def jar_settings(connectors: bool = True) -> Dict[str, str]:
    """Spark settings that put Delta Lake and the Kafka connector on the classpath, in this order of preference:

    * on Databricks: nothing (both are built in);
    * jars fetched with ``python -m pyspark_flinkish.spark.jars`` (``make jars``): ``spark.jars`` — works offline;
    * otherwise: ``spark.jars.packages`` with the same Maven coordinates, resolved by Spark at start-up (needs
      access to a Maven repository);
    * under ``spark-submit`` the classpath is the submit's: pass ``--jars .jars/spark/*.jar`` (or ``--packages``);
      Delta's settings are added only when Delta is among them.

    Delta's SQL extension and catalog are set too (except on Databricks).
    """
    if not connectors or on_databricks():
        return {}
    from pyspark_flinkish.spark import jars

    out = {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    }
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        # launched by spark-submit: the JVM and its classpath exist already, so jars cannot be added here; set up
        # Delta only when the submit brought it (--jars / --packages), else leave the session as submitted
        from pyspark import SparkConf, SparkContext

        SparkContext._ensure_initialized()  # connect to the submit's JVM first: only then does SparkConf see its settings
        submitted = SparkConf()
        given = f"{submitted.get('spark.jars', '')},{submitted.get('spark.jars.packages', '')}"
        return out if "delta-spark" in given else {}
    local = jars.jars("spark")
    if local:
        out["spark.jars"] = ",".join(local)
    else:
        out["spark.jars.packages"] = ",".join(jars.coordinates("spark"))
    return out


def configure(
    builder: Any, shuffle_partitions: int = 4, extra: Optional[Dict[str, str]] = None, connectors: bool = True
) -> Any:
    """Apply the settings pyspark_flinkish relies on to a ``SparkSession.builder``.

    Python workers use this interpreter (so pandas and pyarrow are there), the session time zone is UTC, and
    shuffles use few partitions (Spark's default of 200 makes each small micro-batch take seconds). With
    ``connectors`` (the default), Delta Lake and the Kafka connector are configured as :func:`jar_settings` says.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    for k, v in jar_settings(connectors).items():
        builder = builder.config(k, v)
    builder = (
        builder.config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for k, v in (extra or {}).items():
        builder = builder.config(k, v)
    return builder


#: Environment variable: a Spark Connect address for :func:`session` (``local[2]`` starts a local Connect server,
#: ``sc://host:port`` connects to one) when its ``remote`` argument is not given.
REMOTE_ENV = "PYSPARK_FLINKISH_REMOTE"


def session(
    app_name: str = "pyspark_flinkish",
    master: str = "local[2]",
    shuffle_partitions: int = 4,
    connectors: bool = True,
    remote: Optional[str] = None,
    **conf: str,
) -> Any:
    """Get or create a SparkSession for pyspark_flinkish (``master`` is ignored when a session exists).

    ``remote`` (default: ``$PYSPARK_FLINKISH_REMOTE``) gives a Spark Connect session instead:
    ``"local[2]"`` starts a local Spark Connect server with this package's settings (``master`` is then unused),
    ``"sc://host:port"`` connects to a running server (only runtime SQL settings can be set then). It needs the
    Connect client packages (``pip install pyspark_flinkish[connect]``). See ``docs/databricks-and-spark-connect.md``.

    On Databricks this returns the notebook's session unchanged apart from the shuffle partitions.
    """
    from pyspark.sql import SparkSession

    if on_databricks():
        spark = SparkSession.builder.getOrCreate()
        spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
        return spark
    remote = remote if remote is not None else (os.environ.get(REMOTE_ENV) or None)
    if remote is not None:
        return _connect_session(remote, app_name, shuffle_partitions, connectors, conf)
    builder = configure(
        SparkSession.builder.appName(app_name).master(master).config("spark.ui.enabled", "false"),
        shuffle_partitions,
        {k.replace("__", "."): v for k, v in conf.items()},
        connectors,
    )
    return builder.getOrCreate()


def _connect_session(
    remote: str, app_name: str, shuffle_partitions: int, connectors: bool, conf: Dict[str, str]
) -> Any:
    """A Spark Connect session: a local server started with :func:`configure`'s settings, or a remote one."""
    from pyspark.sql import SparkSession

    extra = {k.replace("__", "."): v for k, v in conf.items()}
    if remote.startswith("sc://"):
        # pyspark's generic builder: it also switches this process to Connect mode (pyspark.sql.functions then build
        # Connect columns), as a Databricks notebook is
        builder = SparkSession.builder.remote(remote)
        settings = {
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.shuffle.partitions": str(shuffle_partitions),
            "spark.sql.execution.arrow.pyspark.enabled": "true",
            **extra,
        }
        for k, v in settings.items():
            builder = builder.config(k, v)
        return builder.getOrCreate()
    # a local server: this process starts its JVM, so static settings (jars, extensions) apply
    builder = configure(
        SparkSession.builder.remote(remote).appName(app_name).config("spark.ui.enabled", "false"),
        shuffle_partitions,
        extra,
        connectors,
    )
    return builder.getOrCreate()


__all__ = [
    "REMOTE_ENV",
    "default_file_system",
    "on_databricks",
    "spark_path",
    "local_temp_dir",
    "jar_settings",
    "configure",
    "session",
]
