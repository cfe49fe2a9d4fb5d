"""The command line's help and option names: defaults shown, one meaning per name, helpful errors."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from routerlab.app.defaults import DEFAULT_ROUTERS
from routerlab.cli import app


def _commands() -> dict[str, Any]:
    """Every leaf command by its full name (``server mlflow``, ``lm check``...)."""
    root = typer.main.get_command(app)
    found: dict[str, Any] = {}

    def walk(cmd: Any, prefix: str) -> None:
        # typer ships its own click: tell a group by its sub-commands, not by click's classes
        if getattr(cmd, "commands", None):
            for name, sub in cmd.commands.items():
                walk(sub, f"{prefix} {name}".strip())
        else:
            found[prefix] = cmd

    walk(root, "")
    return found


def _help(command: str) -> str:
    result = CliRunner().invoke(app, [*command.split(), "--help"], env={"COLUMNS": "400"}, terminal_width=400)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def _is_option(param: Any) -> bool:
    return getattr(param, "param_type_name", "") == "option"


def _shown_default(param: Any) -> bool:
    """The option has a default a reader needs to see (a value, not "off" or "none")."""
    return param.default not in (None, False, ()) and param.show_default is not False


@pytest.mark.parametrize("command", sorted(_commands()))
def test_every_default_is_visible_in_help(command: str) -> None:
    text = _help(command)
    options = [p for p in _commands()[command].params if _is_option(p) and not p.hidden]
    for p in options:
        help_text = p.help or ""
        if "[default:" in help_text:  # written into the help: rich must not eat it as markup
            written = help_text[help_text.index("[default:") :].split("]")[0]
            assert " ".join(written.split()) in text, f"{command} {p.opts[0]}: {written!r} missing from --help"
    expected = sum(1 for p in options if _shown_default(p) or "[default:" in (p.help or ""))
    assert text.count("[default:") >= expected, f"{command}: {text.count('[default:')} defaults shown, want {expected}"


def test_one_meaning_per_option_name() -> None:
    """``--out`` is always a file and ``--out-dir`` a folder; the MLflow store is always --tracking-uri."""
    for name, cmd in _commands().items():
        for p in cmd.params:
            if not _is_option(p) or p.hidden:
                continue
            assert "--backend-store-uri" not in p.opts, f"{name}: the MLflow store is --tracking-uri"
            if "--out" in p.opts:
                assert "folder" not in (p.help or "") and "directory" not in (p.help or ""), f"{name} --out"
            if "--out-dir" in p.opts:
                assert "folder" in (p.help or ""), f"{name} --out-dir"
            if "--dataset-path" in p.opts:
                assert "dataset" in (p.help or "").lower() or not p.help, f"{name} --dataset-path"
    assert "--out-dir" in _help("compare") and "--tracking-uri" in _help("server mlflow")


def test_route_and_run_default_to_one_router_set_without_the_slow_routers() -> None:
    assert not {"handoff", "llm", "dspy"} & set(DEFAULT_ROUTERS.split(","))
    assert {"always_sql", "rules", "semantic", "hybrid", "single_call"} == set(DEFAULT_ROUTERS.split(","))
    assert f"[default: {DEFAULT_ROUTERS}]" in _help("route")
    assert f"[default: {DEFAULT_ROUTERS}]" in " ".join(_help("run").split())


def test_a_mistyped_router_argument_names_the_one_meant(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["route", "--router", "hybrid", "--router-arg", "hybrid.treshold=0.7", "--lm", "scripted:basic"],
    )
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "did you mean 'threshold' for 'treshold'?" in text


def test_run_on_a_named_dataset_says_how_many_examples_first(tmp_path: Path, sales_db: Path) -> None:
    data = tmp_path / "q.jsonl"
    rows = [
        {"question": "How many areas are there?", "db_path": str(sales_db), "gold_sql": "SELECT count(*) FROM areas"},
        {"question": "List the area names", "db_path": str(sales_db), "gold_sql": "SELECT name FROM areas"},
        {"question": "Total revenue?", "db_path": str(sales_db), "gold_sql": "SELECT sum(amount) FROM revenue"},
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["run", "--dataset", "jsonl", "--dataset-path", str(data), "--router", "rules,oracle"]
    args += ["--lm", "scripted:basic", "--store", str(tmp_path / "r.duckdb"), "--no-mlflow"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert re.fullmatch(r"3 example\(s\) x 2 router\(s\)", first.strip()), first
    # the estimate is for the embedded model only: the scripted LM's run has none
    assert "min at" not in first


def test_help_prints_no_rst_markup_and_ui_options_say_what_they_are():
    """Docstrings in RST (double backquotes) printed literally; ui --port and --tracking-uri had no help."""
    for name in _commands():
        assert "``" not in _help(name), name
    assert "--out DIR" not in _help("compare") and "--out-dir DIR" in _help("compare")
    for cmd in _commands()["ui"].params:
        if cmd.name in ("port", "tracking_uri"):
            assert cmd.help, cmd.name
