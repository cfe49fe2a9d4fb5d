"""Shared fixtures: golden files, a small real DuckDB database, scripted LMs."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

# The value the test session started with: every test starts and ends with it.
_TRACKING_URI_AT_START = os.environ.get("MLFLOW_TRACKING_URI")


def _restore_tracking_uri() -> None:
    if _TRACKING_URI_AT_START is None:
        os.environ.pop("MLFLOW_TRACKING_URI", None)
    else:
        os.environ["MLFLOW_TRACKING_URI"] = _TRACKING_URI_AT_START


@pytest.fixture(autouse=True)
def _tracking_uri_env_restored() -> Iterator[None]:
    """Give every test the ``MLFLOW_TRACKING_URI`` the session started with, and put it back after.

    ``mlflow.set_tracking_uri`` writes the variable into ``os.environ`` so child processes
    inherit it; a command run in-process by one test or by a module- or session-scoped fixture
    (``route``, ``run``) would otherwise point every later subprocess (a notebook kernel,
    ``routerlab report``) at that store. Restoring before the test too covers the fixtures, which
    are set up before this function-scoped one.
    """
    _restore_tracking_uri()
    yield
    _restore_tracking_uri()


def _copy_mlflow_sqlite_schema_from_one_migration(template: Path) -> None:
    """Give each new SQLite MLflow store of this process the schema MLflow's migrations built once.

    MLflow creates a new store's tables by running its whole Alembic history (dozens of
    migrations): 3-8 s per new ``mlflow.db`` on this 2-core machine, and most tests log to a store
    of their own. Here the migrations run once, into ``template``, and each new store gets the
    template's pages through SQLite's backup API on the engine's own connection (milliseconds):
    the same tables, indexes and ``alembic_version`` as its own migration would give (checked by
    tests/test_mlflow_store_schema.py, and by MLflow's ``_verify_schema`` as before). Stores other
    than a SQLite file, and every store a subprocess creates (the CLI started as a user would),
    are created by MLflow's own code.
    """
    import sqlite3
    import threading

    import mlflow.store.db.utils as db_utils
    import sqlalchemy

    real = db_utils._initialize_tables
    lock = threading.Lock()

    def initialize(engine: sqlalchemy.engine.Engine) -> None:
        database = engine.url.database
        if engine.dialect.name != "sqlite" or not database or database == ":memory:":
            real(engine)
            return
        # one thread at a time, and never over a store another thread has just filled: the
        # backup replaces the whole file, where a second migration would have found it done
        with lock:
            if db_utils._all_tables_exist(engine):
                return
            if not template.exists():
                built = sqlalchemy.create_engine(f"sqlite:///{template}")
                try:
                    real(built)
                finally:
                    built.dispose()
            raw = engine.raw_connection()
            try:
                source = sqlite3.connect(template)
                try:
                    source.backup(raw.driver_connection)
                finally:
                    source.close()
            finally:
                raw.close()

    initialize.real = real  # type: ignore[attr-defined]  # tests/test_mlflow_store_schema.py compares the two
    db_utils._initialize_tables = initialize


_SCHEMA_COPY_INSTALLED: list[bool] = []


@pytest.fixture(autouse=True)
def _mlflow_sqlite_schema_copied_from_one_migration(tmp_path_factory) -> None:
    """Install :func:`_copy_mlflow_sqlite_schema_from_one_migration` once MLflow is imported.

    Not before: importing MLflow takes seconds, and a pytest process that never opens a store
    (the example projects tests/test_extending.py tests in a subprocess) should not pay for it.
    Test modules that log to MLflow import it at collection, before their first test.
    """
    if not _SCHEMA_COPY_INSTALLED and "mlflow.store.db.utils" in sys.modules:
        _copy_mlflow_sqlite_schema_from_one_migration(tmp_path_factory.mktemp("mlflow-schema") / "mlflow.db")
        _SCHEMA_COPY_INSTALLED.append(True)


GOLDEN_DIR = Path(__file__).parent / "golden"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep every real-model test on one xdist worker, one after another.

    CI runs the suite on two workers (``-n 2 --dist loadgroup``, ``.ci/run``). Two tests that
    each decode with the embedded model at once would halve each other and stretch their
    deadlines; grouped, the model runs one job at a time while the other worker takes the
    tests that do not use it. Without xdist the mark does nothing.
    """
    for item in items:
        if item.get_closest_marker("model") is not None:
            item.add_marker(pytest.mark.xdist_group("model"))


# Tests never read or write the user's disk store of evaluated prompt prefixes: a state left by an
# earlier run would turn a test's cold prefix into a restored one. Tests of that store point
# ROUTERLAB_PREFIX_CACHE at their own temporary directory (the store reads it at each lookup).
os.environ["ROUTERLAB_PREFIX_CACHE"] = "off"

# A command's table width must not depend on how pytest was started: xdist's workers run with
# COLUMNS=80, which would cut the wide comparison tables the tests read (subprocesses inherit it).
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)


@pytest.fixture
def golden():
    """Compare a JSON-able value with ``tests/golden/<name>.json``.

    ``ROUTERLAB_UPDATE_GOLDEN=1 pytest`` writes or rewrites the files (review the diff before
    committing); without it a missing file fails the test.
    """

    def check(name: str, value: object) -> None:
        path = GOLDEN_DIR / f"{name}.json"
        text = json.dumps(value, indent=2, sort_keys=True, default=str) + "\n"
        if os.environ.get("ROUTERLAB_UPDATE_GOLDEN") == "1":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        elif not path.exists():
            # a missing golden file is a failure everywhere (not only in CI): writing it and
            # comparing the value with itself would pass whatever the value is
            pytest.fail(
                f"golden file {path} is missing; expected: a committed golden file; "
                "fix: run with ROUTERLAB_UPDATE_GOLDEN=1, review the file and commit it"
            )
        assert json.loads(text) == json.loads(path.read_text()), f"differs from golden {path.name}"

    return check


@pytest.fixture(scope="session")
def sales_db(tmp_path_factory) -> Path:
    """A small real DuckDB file: areas and revenue, with NULLs and mixed-case text."""
    import duckdb

    path = tmp_path_factory.mktemp("db") / "sales.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE areas (id INTEGER PRIMARY KEY, name VARCHAR, region VARCHAR, has_ev BOOLEAN);"
        "INSERT INTO areas VALUES (1, 'Qinling North', 'Shaanxi', true), (2, 'Hanzhong East', 'Shaanxi', false),"
        " (3, 'Baoji West', 'Shaanxi', NULL);"
        "CREATE TABLE revenue (area_id INTEGER REFERENCES areas(id), day DATE, kind VARCHAR, amount DOUBLE);"
        "INSERT INTO revenue VALUES (1, DATE '2024-01-01', 'Fuel', 100.0), (1, DATE '2024-01-02', 'Food', 50.5),"
        " (2, DATE '2024-01-01', 'Fuel', 80.0), (3, DATE '2024-01-01', 'fuel', NULL);"
    )
    con.close()
    return path


#: pets_1 and car_1 of Spider in miniature, with the identifiers a small model gets wrong
#: (``PetType``, ``Make`` on the other side of a join) and a table that needs quoting
PETS_CARS_SQL = """
CREATE TABLE Student (StuID INTEGER PRIMARY KEY, LName VARCHAR(12), Fname VARCHAR(12), Age INTEGER);
INSERT INTO Student VALUES (1001, 'Smith', 'Linda', 18), (1002, 'Kim', 'Tracy', 19), (1003, 'Jones', 'Shiela', 21);
CREATE TABLE Pets (PetID INTEGER PRIMARY KEY, PetType VARCHAR(20), pet_age INTEGER, weight REAL);
INSERT INTO Pets VALUES (2001, 'cat', 3, 12.0), (2002, 'dog', 2, 13.4), (2003, 'dog', 1, 9.3);
CREATE TABLE Has_Pet (StuID INTEGER, PetID INTEGER,
  FOREIGN KEY (PetID) REFERENCES Pets(PetID), FOREIGN KEY (StuID) REFERENCES Student(StuID));
INSERT INTO Has_Pet VALUES (1001, 2001), (1002, 2002), (1002, 2003);
CREATE TABLE model_list (ModelId INTEGER PRIMARY KEY, Maker INTEGER, Model TEXT UNIQUE);
INSERT INTO model_list VALUES (1, 1, 'amc'), (2, 2, 'audi'), (3, 3, 'bmw');
CREATE TABLE car_names (MakeId INTEGER PRIMARY KEY, Model TEXT REFERENCES model_list(Model), Make TEXT);
INSERT INTO car_names VALUES (1, 'amc', 'amc hornet'), (2, 'audi', 'audi 100ls'), (3, 'bmw', 'bmw 2002'),
  (4, 'amc', 'amc rebel');
CREATE TABLE "Order Items" ("order" INTEGER, qty INTEGER, PetID INTEGER REFERENCES Pets);
INSERT INTO "Order Items" VALUES (1, 2, 2001), (2, 5, 2002);
"""


@pytest.fixture(scope="session")
def spiderlike_db(tmp_path_factory) -> Path:
    """A real Spider-style SQLite file: mixed-case identifiers, foreign keys, a quoted table."""
    import sqlite3

    path = tmp_path_factory.mktemp("spiderlike") / "pets_cars.sqlite"
    con = sqlite3.connect(path)
    try:
        con.executescript(PETS_CARS_SQL)
        con.commit()
    finally:
        con.close()
    return path


#: Spider dev questions on 8 real databases (../shared/data/README.md); tests that need real data
#: read it in place (never copied into the repository) and are skipped where it is absent
SPIDER_DEV_A = Path(os.environ.get("ROUTERLAB_SPIDER_DEV", "/work/shared/data/spider-dev-a"))


@pytest.fixture(scope="session")
def spider_dev_a():
    """The ``spider-dev-a`` examples (dev split), loaded with the ``spider`` loader."""
    if not (SPIDER_DEV_A / "dev.json").is_file():
        pytest.skip(f"real Spider data not found at {SPIDER_DEV_A} (set ROUTERLAB_SPIDER_DEV)")
    from routerlab.benchmarks.loaders.spider import load_spider

    return load_spider(str(SPIDER_DEV_A)).split("dev")


def turn_result(conv: str, turn: int, turns: int, ex: float | None, attempt: int = 0) -> Any:
    """A stored result of one conversation turn (router ``r``, intent sql) whose ``ex`` and ``success`` are ``ex``."""
    from routerlab.eval.scoring import ExampleResult, Score

    return ExampleResult(
        example_id=f"{conv}-t{turn}",
        dataset="d",
        split="dev",
        intent="sql",
        difficulty=None,
        router="r",
        lm="l",
        outcome="ok",
        scores={"ex": Score("ex", ex), "success": Score("success", ex)},
        attempt=attempt,
        conversation=conv,
        turn=turn,
        turns=turns,
    )


def figures_of(store: Path, results: Sequence[Any], part: str = "end_to_end") -> Any:
    """``results`` stored as one run in ``store`` and read back as the session's comparison model has them.

    Returns:
        The run's :class:`~routerlab.eval.analysis.model.RouterFigures` (rates, per-intent rates,
        confusion, cost, further figures), as every view renders them.
    """
    from routerlab.benchmarks.dataset import Dataset
    from routerlab.eval.analysis.build import build_comparison
    from routerlab.eval.store import ResultsStore, part_run_id

    router = results[0].router
    run_id = part_run_id("s", router, part)
    rs = ResultsStore(str(store))
    rs.create_run(run_id, router=router, lm="scripted", dataset=Dataset("toy", "v1", []), split="dev", part=part)
    rs.add_results(run_id, list(results))
    rs.finish_run(run_id)
    return build_comparison(rs, run_id).part(part).router(router)
