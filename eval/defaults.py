"""Where a project's results go unless told otherwise: the results store and the MLflow store.

Kept in a module that imports nothing, so the command line can show them as its options'
defaults without importing DuckDB or MLflow; :mod:`routerlab.eval.store` and
:mod:`routerlab.eval.tracking.address` re-export them where they are used.
"""

__all__ = ["DEFAULT_STORE_PATH", "DEFAULT_TRACKING_URI"]

#: the DuckDB results store, relative to the directory a command runs in
DEFAULT_STORE_PATH = ".routerlab/results.duckdb"

#: the MLflow store, a SQLite file beside the results folder
DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
