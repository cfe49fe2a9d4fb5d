"""User text and paths are printed literally: no rich markup, no emoji codes, rule names kept.

The probes (issue 50, item 8): ``--dataset-path 'q[/b].jsonl'`` crashed with a MarkupError
traceback, the guard's rule names (``[only_select]``) vanished from CLI answers, and ``:x:``
printed as an emoji.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from routerlab import cli
from routerlab.app.ask import print_event


@pytest.mark.parametrize("name", ["q[/b].jsonl", "q[bold]x.jsonl", "q:x:.jsonl"])
def test_a_path_with_markup_or_emoji_codes_is_named_literally(tmp_path: Path, name: str) -> None:
    missing = tmp_path / name
    out = CliRunner().invoke(
        cli.app,
        [
            *("run", "--lm", "scripted:basic", "--router", "rules", "--dataset", "jsonl"),
            *("--dataset-path", str(missing), "--store", str(tmp_path / "r.duckdb"), "--no-mlflow"),
        ],
        env={"COLUMNS": "400"},
    )
    text = "".join(out.output.split())
    assert out.exit_code == 2, out.output
    assert out.exception is None or isinstance(out.exception, SystemExit), repr(out.exception)
    assert name in text, out.output
    assert "\u274c" not in out.output  # :x: stays three characters


def test_rule_names_and_emoji_codes_survive_in_ask_output() -> None:
    console = Console(record=True, width=300, emoji=False)
    print_event(
        console,
        {
            "type": "error",
            "display_name": "execute_sql [tool]",
            "details": "refused by SQL guard [only_select]: only SELECT is allowed :x: [/b]",
        },
    )
    shown = console.export_text()
    assert "[only_select]" in shown and ":x:" in shown and "[/b]" in shown and "[tool]" in shown
