"""Fixtures shared by the SQL tools' tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: spider-dev-a's SQLite databases (``$ROUTERLAB_SPIDER_DEV`` overrides the shared data folder)
DATABASES = Path(os.environ.get("ROUTERLAB_SPIDER_DEV", "/work/shared/data/spider-dev-a")) / "database"


@pytest.fixture(scope="module")
def singers() -> Path:
    """The real concert_singer database (skipped where spider-dev-a is absent)."""
    path = DATABASES / "concert_singer" / "concert_singer.sqlite"
    if not path.exists():
        pytest.skip(f"spider-dev-a is not at {DATABASES}")
    return path
