"""``routerlab ask``: one request through the pipeline, progress shown live."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["ask", "print_event"]


def print_event(console: Console, ev: dict[str, Any]) -> None:
    """Print one progress / completed / error event as a line."""
    style = {"progress": "cyan", "completed": "green", "error": "red"}.get(ev["type"], "white")
    console.print(f"[{style}]{ev['type']:>9}[/] {ev['display_name']}: {ev['details']}", highlight=False)


def ask(
    question: str,
    db: Path | None,
    router_name: str,
    lm_spec: str,
    api_base: str | None,
    agent: str | None,
    reply: str | None,
    console: Console,
) -> int:
    """Run one request and print events, answer, SQL and rows. Returns the exit code.

    A clarifying question is answered by ``reply``, else by the terminal user when stdin is
    interactive, else left unanswered (the turn ends with the question).
    """
    from routerlab import routers
    from routerlab.agents.errors import DatabaseError
    from routerlab.agents.graph import Pipeline
    from routerlab.agents.lm import resolve_lm
    from routerlab.benchmarks.builtin import builtin_database_path

    path = Path(db) if db is not None else builtin_database_path()
    if not path.exists():
        raise DatabaseError(
            f"database file not found: {path}",
            expected="a DuckDB or SQLite file",
            found="no such file",
            fix="pass --db PATH to an existing database file",
        )
    lm = resolve_lm(lm_spec, api_base=api_base)
    pipeline = Pipeline(routers.router.build(router_name), lm)

    def answer_question(q: str) -> str | None:
        if reply is not None:
            console.print(f"[yellow]  asked:[/] {q}\n[yellow]replied:[/] {reply}", highlight=False)
            return reply
        if sys.stdin.isatty():
            return console.input(f"[yellow]{q}[/] > ") or None
        return None

    last: dict[str, Any] = {}
    for ev in pipeline.stream(question, str(path), reply=answer_question, agent=agent):
        print_event(console, ev)
        last = ev
    console.print()
    if last.get("type") == "error":
        console.print(f"[red]{last.get('details')}[/]", highlight=False)
        return 1
    console.print(f"[bold]answer:[/] {last.get('answer')}", highlight=False)
    if last.get("sql"):
        console.print(f"[bold]sql:[/] {last['sql']}", highlight=False)
    if last.get("rows"):
        table = Table(*last.get("columns", []))
        for row in last["rows"][:20]:
            table.add_row(*[str(v) for v in row])
        console.print(table)
    return 0
