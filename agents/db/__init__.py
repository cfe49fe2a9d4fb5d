"""Database access (DuckDB, SQLite) and the read-only SQL guard."""

import logging

from routerlab.agents.db.database import (
    ColumnInfo,
    Database,
    QueryResult,
    TableInfo,
    clear_database_cache,
    connect_duckdb_readonly,
    file_digest,
    open_database,
    sql_ident,
)
from routerlab.agents.db.guard import FORBIDDEN_FUNCTIONS, SQL_FROM_STRING_FUNCTIONS, check_sql

# sqlglot logs a warning for every statement it can only parse as a generic Command; the guard
# refuses those anyway, so the warning is noise
logging.getLogger("sqlglot").setLevel(logging.ERROR)

__all__ = [
    "FORBIDDEN_FUNCTIONS",
    "SQL_FROM_STRING_FUNCTIONS",
    "ColumnInfo",
    "Database",
    "QueryResult",
    "TableInfo",
    "check_sql",
    "clear_database_cache",
    "connect_duckdb_readonly",
    "file_digest",
    "open_database",
    "sql_ident",
]
