"""The plugin's ``flinkish_spark`` fixture: a user's test gets the active session (this suite's ``spark``, which is
the same fixture) with Delta and Kafka configured, and leaving that test session does not stop it."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark
pytest_plugins = ["pytester"]


def test_flinkish_spark_reuses_the_active_session_and_leaves_it_running(
    spark, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    app_id = spark.sparkContext.applicationId
    pytester.makepyfile(f'''
        def test_users_spark_test(flinkish_spark):
            assert flinkish_spark.sparkContext.applicationId == {app_id!r}
            assert flinkish_spark.conf.get("spark.sql.session.timeZone") == "UTC"
            assert "DeltaSparkSessionExtension" in flinkish_spark.conf.get("spark.sql.extensions")
            jars = flinkish_spark.conf.get("spark.jars", "") + flinkish_spark.conf.get("spark.jars.packages", "")
            assert "spark-sql-kafka" in jars and "delta" in jars
            assert flinkish_spark.range(3).count() == 3
    ''')
    result = pytester.runpytest("-p", "pyspark_flinkish.testing.plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert spark.range(2).count() == 2  # still running
