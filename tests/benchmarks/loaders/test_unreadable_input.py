"""Records the JSON parser or the file system cannot read are a clear exit, never a traceback (issue 62).

The probes: a JSONL line nested 100,000 deep (in ``meta`` or in ``question``) ended in a
RecursionError traceback, an id of 5,001 digits in a ValueError, a ``db_path`` symbolic link loop
in a RuntimeError/OSError (exit 1 each). Each is now exit 2 naming the file, the line and the fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from routerlab import cli

_RECORD = {"id": "q1", "question": "How many areas are there?", "gold_sql": "SELECT 1", "intent": "sql"}


def _run(tmp_path: Path, data: Path) -> tuple[int, str]:
    out = CliRunner().invoke(
        cli.app,
        [
            *("run", "--lm", "scripted:basic", "--router", "rules", "--dataset", "jsonl"),
            *("--dataset-path", str(data), "--store", str(tmp_path / "r.duckdb"), "--no-mlflow"),
        ],
        env={"COLUMNS": "400"},
    )
    assert out.exception is None or isinstance(out.exception, SystemExit), repr(out.exception)
    return out.exit_code, " ".join(out.output.split())


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("line", "found"),
    [
        (json.dumps(_RECORD)[:-1] + ', "meta": ' + _deep(100_000) + "}", "nested deeper than the JSON parser allows"),
        ('{"id": "q1", "question": ' + _deep(100_000) + "}", "nested deeper than the JSON parser allows"),
        ('{"id": ' + "9" * 5001 + ', "question": "How many?", "gold_sql": "SELECT 1"}', "value has 5001 digits"),
    ],
    ids=["deep-meta", "deep-question", "5001-digit-id"],
)
def test_json_the_parser_cannot_read_is_named_by_line(tmp_path: Path, line: str, found: str) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text(json.dumps(_RECORD | {"id": "q0"}) + "\n" + line + "\n")
    code, text = _run(tmp_path, data)
    assert code == 2, text
    assert "bad.jsonl: line 2: JSON the parser cannot read" in text and found in text
    assert "Traceback" not in text and "fix:" in text


def test_a_db_path_symlink_loop_is_named_by_record(tmp_path: Path) -> None:
    (tmp_path / "a.duckdb").symlink_to(tmp_path / "b.duckdb")
    (tmp_path / "b.duckdb").symlink_to(tmp_path / "a.duckdb")
    data = tmp_path / "loop.jsonl"
    data.write_text(json.dumps(_RECORD | {"db_path": str(tmp_path / "a.duckdb")}) + "\n")
    code, text = _run(tmp_path, data)
    assert code == 2, text
    assert "line 1 (id 'q1'): field 'db_path': the path cannot be resolved" in text
    assert "symbolic links" in text and "Traceback" not in text
