"""Real PyFlink (Apache Flink 2.3.0) on ``Configuration``, ``get_execution_environment(configuration)``,
``env.configure(configuration)`` and ``KeyedStream.execute_and_collect``, as the oracle for pyspark_flinkish.

Runs the cases of ``jvm-free-tests/datastream/configuration_cases.py`` with PyFlink's classes and records what
``jvm-free-tests/datastream/test_pyflink_configuration.py`` compares with (no Flink needed there):

* ``configuration``: every method of ``pyflink.common.Configuration`` on small inputs (values, their Python types,
  what a typed getter makes of a value set as another type, the exceptions);
* ``environment``: per way in (``get_execution_environment(configuration)`` and ``configure(configuration)``), what
  the environment's getters return after each configuration of ``ENV_SETTINGS`` (``parallelism.default``,
  ``pipeline.max-parallelism``, ``pipeline.auto-watermark-interval``, ``execution.checkpointing.interval`` /
  ``.mode``, an unknown key), and the output of a rolling reduce per ``execution.runtime-mode``; and a few
  calls around them (a configuration changed afterwards, ``set_parallelism`` after it, a dict instead of one);
* ``keyed_collect``: ``key_by(...).execute_and_collect()`` on untyped, tuple-, row- and string-typed streams, with and
  without ``key_type`` and ``limit``: what it returns, each element's ``repr``, type, fields and their types
  (parallelism 1).

Run with PyFlink's interpreter (Java 17 on PATH)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_configuration.py \
        --out jvm-free-tests/datastream/pyflink_configuration.json
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Dict, List

import pyflink_oracle as oracle

cases = oracle.import_cases("configuration_cases")


def environment() -> Dict[str, Any]:
    from pyflink.common import Configuration, Types
    from pyflink.datastream import StreamExecutionEnvironment

    def env_of(entries: Dict[str, Any], via: str) -> Any:
        conf = cases.configuration_of(Configuration, entries)
        if via == "configure":
            env = StreamExecutionEnvironment.get_execution_environment()
            env.configure(conf)
        else:
            env = StreamExecutionEnvironment.get_execution_environment(conf)
        env.set_python_executable(sys.executable)
        return env

    out: Dict[str, Any] = {}
    for via in ("get_execution_environment", "configure"):
        results: Dict[str, Any] = {}
        for name, entries in cases.ENV_SETTINGS.items():
            try:
                env = env_of(entries, via)
            except Exception as exc:
                results[name] = cases.outcome(lambda exc=exc: (_ for _ in ()).throw(exc))
                continue
            results[name] = cases.getters(env)
        for mode in cases.RUNTIME_MODES:
            results[f"execution.runtime-mode={mode}: rolling reduce"] = cases.outcome(
                lambda mode=mode, via=via: cases.rolling_reduce(env_of({"execution.runtime-mode": mode}, via), Types)
            )
        out[via] = results
    conf = Configuration().set_integer("parallelism.default", 3)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    conf.set_integer("parallelism.default", 5)
    out["configuration changed after get_execution_environment: get_parallelism"] = cases.outcome(env.get_parallelism)
    env.set_parallelism(2)
    out["set_parallelism(2) after it: get_parallelism"] = cases.outcome(env.get_parallelism)
    configured = StreamExecutionEnvironment.get_execution_environment()
    configured.set_parallelism(4)
    configured.configure(Configuration().set_string("no.such.key", "x"))
    out["configure without parallelism.default keeps set_parallelism(4)"] = cases.outcome(configured.get_parallelism)
    out["set_parallelism(0)"] = cases.outcome(
        lambda: StreamExecutionEnvironment.get_execution_environment().set_parallelism(0)
    )
    out["set_parallelism(-1): get_parallelism"] = cases.outcome(
        lambda: StreamExecutionEnvironment.get_execution_environment().set_parallelism(-1).get_parallelism()
    )
    out["get_execution_environment(dict)"] = cases.outcome(
        lambda: StreamExecutionEnvironment.get_execution_environment({"parallelism.default": "3"})  # type: ignore[arg-type]
    )
    out["configure(dict)"] = cases.outcome(
        lambda: StreamExecutionEnvironment.get_execution_environment().configure({"parallelism.default": "3"})  # type: ignore[arg-type]
    )
    return out


def keyed_collect() -> Dict[str, Any]:
    from pyflink.common import Row, Types
    from pyflink.datastream import StreamExecutionEnvironment

    def env() -> Any:
        e = StreamExecutionEnvironment.get_execution_environment()
        e.set_parallelism(1)
        e.set_python_executable(sys.executable)
        return e

    out: Dict[str, Any] = {}
    for name, f in cases.keyed_collect_cases(env, Types).items():
        try:
            out[name] = cases.collected(f(), Row)
        except Exception as exc:
            out[name] = cases.outcome(lambda exc=exc: (_ for _ in ()).throw(exc))
    keyed = env().from_collection([(1, "a")], type_info=Types.TUPLE([Types.INT(), Types.STRING()])).key_by(lambda x: x[0])
    out["KeyedStream.get_type()"] = cases.outcome(lambda: str(keyed.get_type()))
    return out


def main(argv: List[str]) -> int:
    from pyflink.common import Configuration

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    data = {
        "configuration": {name: cases.outcome(f) for name, f in cases.configuration_cases(Configuration).items()},
        "keyed_collect": keyed_collect(),
        "environment": environment(),
    }
    oracle.write_json(args.out, data, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
