"""docs/cli.md's command block names every command of the Typer app, and only those."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from routerlab.cli import app

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _commands(group: Any, prefix: str = "") -> set[str]:
    """Every runnable command path of ``group`` (``run``, ``lm check``), hidden ones left out.

    Groups are told by their ``commands`` mapping: Typer builds them on its own copy of Click, so
    an ``isinstance`` test against the installed Click would miss them.
    """
    found: set[str] = set()
    for name, command in group.commands.items():
        if command.hidden:
            continue
        path = f"{prefix}{name}"
        if getattr(command, "commands", None):
            found |= _commands(command, f"{path} ")
        else:
            found.add(path)
    return found


def _documented() -> set[str]:
    """Command paths shown in the page's "## Commands" block (``routerlab lm check ...`` -> ``lm check``)."""
    section = DOC.read_text(encoding="utf-8").split("## Commands", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    words = [m.group(1).split() for m in re.finditer(r"routerlab ((?:[a-z][a-z_-]*)(?: [a-z][a-z_-]*)?)", block)]
    return {" ".join(w) for w in words}


def test_every_command_is_in_the_commands_block() -> None:
    commands = _commands(typer.main.get_command(app))
    assert {"run", "routers", "linking", "lm check", "server mlflow"} <= commands
    documented = _documented()
    # a group's command is documented with its sub-command; a top-level command may be followed by an argument
    missing = sorted(c for c in commands if c not in documented and not any(d.split()[0] == c for d in documented))
    assert not missing, f"docs/cli.md's Commands block does not show {missing}: add a line for each"


def test_the_commands_block_names_no_missing_command() -> None:
    commands = _commands(typer.main.get_command(app))
    stale = sorted({d.split()[0] for d in _documented()} - {c.split()[0] for c in commands})
    assert not stale, f"docs/cli.md's Commands block shows commands the CLI does not have: {stale}"
