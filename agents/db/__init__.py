"""Database access (DuckDB, SQLite) and the read-only SQL guard."""

import logging

from routerlab.agents.db.catalogue import SQL_FROM_STRING_FUNCTIONS, FunctionCatalogue, function_catalogue
from routerlab.agents.db.database import (
    ColumnInfo,
    Database,
    QueryResult,
    TableInfo,
    clear_database_cache,
    connect_duckdb_readonly,
    current_engine_scope,
    engine_scope,
    file_digest,
    open_database,
    scrub_paths,
    sql_ident,
)
from routerlab.agents.db.guard import check_sql

# sqlglot logs a warning for every statement it can only parse as a generic Command; the guard
# refuses those anyway, so the warning is noise
logging.getLogger("sqlglot").setLevel(logging.ERROR)

__all__ = [
    "SQL_FROM_STRING_FUNCTIONS",
    "ColumnInfo",
    "Database",
    "FunctionCatalogue",
    "QueryResult",
    "TableInfo",
    "check_sql",
    "clear_database_cache",
    "connect_duckdb_readonly",
    "current_engine_scope",
    "engine_scope",
    "file_digest",
    "function_catalogue",
    "open_database",
    "scrub_paths",
    "sql_ident",
]
