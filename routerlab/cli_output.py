"""What the ``routerlab`` command line prints: its two consoles and the messages that end a command.

:mod:`routerlab.cli` parses options and calls :mod:`routerlab.app`; the printing that is more than
a line (a session's ending, CSV tables, the route progress bars) lives here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from routerlab._runs.resume import store_option

__all__ = [
    "STORE_BUSY_EXIT",
    "CountBar",
    "RouteBars",
    "deprecated",
    "end_main_job",
    "end_planned",
    "end_session",
    "end_sweep",
    "err",
    "mlflow_server_ready",
    "out",
    "perf_table",
    "print_plain",
    "print_route",
    "print_summary",
    "split_names",
]

# no emoji codes anywhere: a ':x:' in a question or an answer is text
err = Console(stderr=True, emoji=False)
# piped output (CI logs, `| tee`) would otherwise wrap the comparison tables at 80 columns
out = Console(width=None if sys.stdout.isatty() else 200, emoji=False)


def print_plain(console: Console, text: str) -> None:
    """A line as it is: no markup, no highlighting, never wrapped."""
    console.print(text, highlight=False, markup=False, soft_wrap=True)


def split_names(text: str | None) -> list[str] | None:
    """``a,b`` -> ``["a", "b"]``; None (not given) stays None."""
    return None if text is None else [n.strip() for n in text.split(",") if n.strip()]


def deprecated(old: str, old_value: Any, new: str, new_value: Any) -> Any:
    """The value of an option given under its former name, with a note; the new name wins."""
    if old_value is None:
        return new_value
    err.print(f"note: {old} is deprecated here; use {new}", highlight=False, markup=False)
    return new_value if new_value is not None else old_value


def end_session(
    result: Any, stopped: Any, store: str, tracking_uri: str | None, again: str, stored: Any = None
) -> None:
    """Print the session id and, after an interruption, failure or deadline, the exit code and resume command.

    Args:
        result: The session's :class:`~routerlab._runs.session.SessionResult`.
        stopped: The signal watch of the run (its ``name`` and ``exit_code`` after a stop).
        store: The results store.
        tracking_uri: The MLflow store; None: MLflow was off.
        again: The command that finishes the session.
        stored: After a stop, the results stored per run (:func:`routerlab.app.run.stored_runs`).

    Raises:
        typer.Exit: 1 a run FAILED, 3 examples crashed, 124 the deadline ran out, or the stop signal's code.
    """
    # user paths are printed literally: 'q[/b]' is a folder name, not markup
    out.print(
        f"session id: [bold]{result.session_id}[/]\n"
        f"  (store {escape(str(store))}; MLflow {escape(tracking_uri or 'off')})"
    )
    if result.interrupted:
        stop_message(result, stopped, again, stored)
        raise typer.Exit(stopped.exit_code)
    for run_id, why in result.failed.items():
        print_plain(
            err,
            f"run {run_id} FAILED: {why}. Its examples are stored, but its rates measure crashes, "
            "not the router: fix the cause and start a new session",
        )
    if result.failed:
        raise typer.Exit(1)
    for bad in result.bad_databases:
        print_plain(err, f"left out (not run, in no rate): {bad.line()}")
    for run_id, (n, ran, first) in result.crashed.items():
        print_plain(
            err,
            f"run {run_id}: {n} of {ran} examples crashed (first: {first}); they are stored as crashes and "
            "count as failures in its rates: fix the cause and rerun them in a new session",
        )
    if result.skipped:
        print_plain(
            err,
            f"deadline reached: {result.skipped} example(s) not started or cut off (stored as not run, left out "
            f"of every rate and paired test); run them with  {again}",
        )
        raise typer.Exit(124)
    if result.crashed:
        raise typer.Exit(3)


def stop_message(result: Any, stopped: Any, again: str, stored: dict[str, tuple[int, str]] | None = None) -> None:
    """After a stop signal: what the session saved, run by run, and the command that finishes it.

    Args:
        result: The stopped session's :class:`~routerlab._runs.session.SessionResult`.
        stopped: The signal watch (its ``name``).
        again: The command that finishes the session.
        stored: The results stored and status per run (:func:`routerlab.app.run.stored_runs`);
            None: what this process delivered.
    """
    if not result.registered:
        print_plain(
            err,
            f"stopped by {stopped.name} before session {result.session_id} was registered: nothing was saved; "
            "run the same command again",
        )
        return
    if stored is None:
        stored = {run_id: (len(result.results.get(run_id, [])), "KILLED") for run_id in result.run_ids}
    # a run that ended before the signal stays FINISHED: say so rather than count it as cut off
    saved = [
        f"{run_id} {n} result(s)" + ("" if status == "KILLED" else f" ({status.lower()})")
        for run_id, (n, status) in stored.items()
    ]
    print_plain(
        err,
        f"stopped by {stopped.name}; runs closed KILLED; saved: {', '.join(saved) or 'no results yet'}",
    )
    print_plain(err, f"interrupted: resume with  {again}")


class RouteBars:
    """``routerlab route``'s progress: a bar per router on a terminal, a line per decision in a log."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        columns = (TextColumn("[bold]{task.description:<18}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        self._progress = Progress(*columns, console=out, disable=not out.is_terminal)
        self._tasks: dict[str, Any] = {}
        self._totals: dict[str, int] = {}

    def __enter__(self) -> RouteBars:
        self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.__exit__(*exc)  # type: ignore[arg-type]

    def start(self, label: str, total: int) -> None:
        """A bar for ``label``'s ``total`` decisions."""
        self._tasks[label] = self._progress.add_task(label, total=total)
        self._totals[label] = total

    def done(self, label: str, decision: Any) -> None:
        """One decision made: the bar moves, or (not a terminal) one line is printed."""
        task = self._tasks[label]
        self._progress.advance(task)
        if not out.is_terminal:  # a log gets one line per decision instead of a bar
            n = int(self._progress.tasks[task].completed)
            mark = "ok" if decision.correct else f"wrong ({decision.error or decision.predicted})"
            print(f"{label} {n}/{self._totals[label]} {decision.example_id} {decision.seconds:.1f}s {mark}", flush=True)


def end_sweep(result: Any, store: str, tracking_uri: str | None, again: str) -> None:
    """Print a sweep's cells, provider slots and id; after an interruption or a failed cell, how to finish it.

    Raises:
        typer.Exit: 130 interrupted, 1 a cell did not finish.
    """
    summary = result.summary.assign(error=result.summary["error"].str.slice(0, 80))
    # plain print: rich would wrap the wide table at 80 columns when stdout is not a terminal
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.2f}"), flush=True)
    for provider, st in result.slot_stats.items():
        out.print(
            f"provider {provider}: cap {st['cap']}, at most {st['max_in_flight']} LM call(s) in flight, "
            f"{st['granted']} calls",
            highlight=False,
        )
    # the compare command names the store only: compare reads no MLflow
    compare_where = store_option(store)
    out.print(
        f"sweep id: [bold]{result.sweep_id}[/] {result.status} in {result.wall_s:.1f} s  "
        f"(store {escape(str(store))}; MLflow {escape(tracking_uri or 'off')}; "
        f"compare: routerlab compare {result.sweep_id}{escape(compare_where)})"
    )
    if result.interrupted:
        print_plain(err, f"interrupted: resume with  {again}")
        raise typer.Exit(130)
    if result.status != "FINISHED":
        print_plain(err, f"sweep {result.status}: cells that did not finish rerun with  {again}")
        raise typer.Exit(1)


def mlflow_server_ready(url: str) -> None:
    """What ``routerlab server mlflow`` prints once its server answers."""
    out.print(f"MLflow tracking server ready: {url}", highlight=False, soft_wrap=True)
    out.print(
        f"  log to it with --tracking-uri {url}  (e.g. routerlab sweep --config sweep.yaml --executor ray "
        f"--tracking-uri {url})",
        highlight=False,
        soft_wrap=True,
    )


def perf_table(figures: Any) -> Any:
    """``routerlab perf``'s figures as a rich table, with whether each met its goal."""
    from rich.table import Table

    table = Table("section", "figure", "value", "unit", "goal", "met", title="routerlab perf")
    for f in figures:
        met = "" if f.met is None else ("yes" if f.met else "NO")
        table.add_row(f.section, f.name, f"{f.value:g}", f.unit, f.goal, met)
    return table


#: exit code of a run stopped because another process kept the results store locked (EX_TEMPFAIL)
STORE_BUSY_EXIT = 75


def end_main_job(ended: Any, store: str, tracking_uri: str | None) -> None:
    """The main job's ending (:func:`routerlab.app.main_job.main_job`): its session id and exit code."""
    end_session(ended.job.session, ended.stop, store, tracking_uri, ended.again, ended.stored)


def print_summary(summary: Any) -> None:
    """A session's verdict and rates (:class:`routerlab.app.run.SessionSummary`), as rendered."""
    print(summary.table, end="")


def end_planned(ended: Any) -> None:
    """How a planned session ended (:class:`routerlab.app.run.PlannedRun`), with its exit code.

    Raises:
        typer.Exit: 75 the store stayed locked; the stop signal's code when stopped before the
            session was registered; else as :func:`end_session`.
    """
    if ended.busy is not None:  # locked before the session began: nothing was written
        err.print(
            f"[bold red]error:[/] {escape(str(ended.busy))}\nnothing was written; run again once it is free",
            highlight=False,
        )
        raise typer.Exit(STORE_BUSY_EXIT)
    if ended.result is None:  # stopped while the session was being planned: nothing exists yet
        print_plain(err, f"stopped by {ended.stop.name} before the session was registered: nothing was saved")
        raise typer.Exit(ended.stop.exit_code)
    if ended.result.store_busy is not None:
        # the store is another process's now: no table (it cannot be read), the resume command
        err.print(f"[bold red]error:[/] {escape(str(ended.result.store_busy))}", highlight=False)
        print_plain(
            err,
            f"stopped: the results store stayed locked; what finished is stored, the rest resumes with  {ended.again}",
        )
        raise typer.Exit(STORE_BUSY_EXIT)
    end_session(ended.result, ended.stop, ended.spec.store_path, ended.spec.tracking_uri, ended.again, ended.stored)


def print_route(outcome: Any, csv_file: Path | None) -> None:
    """``routerlab route``'s verdict and rates (the run's closing table), CSV file and MLflow runs."""
    if (line := outcome.conversation_line()) is not None:
        print_plain(out, line)
    print(outcome.report(), end="")
    if csv_file is not None:
        outcome.write_csv(csv_file)
        out.print(f"first decisions written to {csv_file}")
    if (t := outcome.tracking) is not None:
        print_plain(out, f"MLflow: route {t.route_id}, parent run {t.parent} (store {t.tracking_uri})")
    if outcome.store is not None:
        print_plain(
            out,
            f"session {outcome.session_id} (store {outcome.store}); paired tests, recall per intent, disagreements "
            f"and failures: routerlab compare {outcome.session_id}; confusion matrices: routerlab report "
            f"{outcome.session_id}",
        )


def ui_ready(tracking_uri: str) -> Callable[[str, list[Any]], None]:
    """What ``routerlab ui`` prints once the server starts: its URL, then each experiment's landing pages.

    A landing page is the runs table with the headline metrics as columns (MLflow 3 opens an
    experiment on its GenAI overview otherwise: :mod:`routerlab.eval.tracking.landing`).
    """

    def ready(url: str, pages: list[Any]) -> None:
        print_plain(out, f"MLflow UI: {url}  (store {tracking_uri}; Ctrl-C stops it)")
        if pages:
            print_plain(out, "runs tables with the headline metrics (open one of these, not the overview):")
        for page in pages:
            print_plain(out, f"  {page.experiment}, {page.what}: {url}/{page.path}")

    return ready


class CountBar:
    """One progress bar over a count told once the work is known (``routerlab toolscale``)."""

    def __init__(self, label: str) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._label = label
        columns = (TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        self._progress = Progress(*columns, console=out)

    def __enter__(self) -> CountBar:
        self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.__exit__(*exc)  # type: ignore[arg-type]

    def start(self, total: int) -> Callable[[Any], None]:
        """Show a bar of ``total`` steps; returns the callback that advances it by one."""
        task = self._progress.add_task(self._label, total=total)
        return lambda _: self._progress.advance(task)
