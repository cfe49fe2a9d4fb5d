"""Comparing routers on a dataset: the session a set of settings describes, run and summarised.

``routerlab run`` and :func:`routerlab.run` both plan a session here (:func:`plan_session`: the
recorded routers and settings of a resumed session, the defaults of a new one, every option
checked), run it and read its summary back (:func:`session_summary`). Every session of the
package is built by :func:`session_spec` and run by :func:`execute`, the one caller of the run
machinery's :func:`~routerlab._runs.session.run_session`: ``routerlab run`` (:func:`run_planned`),
the main job (:mod:`routerlab.app.main_job`), a sweep's cells and the demo session go through them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from routerlab._runs.config import load_run_config, read_mapping_file
from routerlab._runs.resume import resume_command
from routerlab._runs.session import (
    SessionResult,
    SessionSpec,
    check_resume,
    load_dataset,
    parse_routers,
    recorded_session,
    run_session,
    select,
)
from routerlab._runs.session_spec import session_runs
from routerlab.agents.signals import stop_signals
from routerlab.app.defaults import (
    DEFAULT_LIMIT,
    DEFAULT_ROUTERS,
    DEFAULT_STORE_PATH,
    DEFAULT_TRACKING_URI,
    LOCAL_SECONDS_PER_EXAMPLE,
)
from routerlab.app.loaded import LoadedSession, load
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.analysis.console import render_console
from routerlab.eval.store import ResultsStore, StoreBusyError

if TYPE_CHECKING:
    from routerlab._runs.runner import RunConfig
    from routerlab.agents.signals import StopSignal

__all__ = [
    "PlannedRun",
    "SessionSummary",
    "execute",
    "plan_session",
    "run",
    "run_defaults",
    "run_planned",
    "session_spec",
    "session_summary",
    "size_line",
    "stored_runs",
]


def _router_text(routers: str | Sequence[str] | None) -> str | None:
    """``"rules,llm"`` or ``["rules", "llm"]`` as the comma-separated text ``--router`` takes."""
    return routers if routers is None or isinstance(routers, str) else ",".join(routers)


def run_defaults(dataset: str | None, config_file: Path | None) -> dict[str, Any]:
    """The defaults of a new session, under the config file's and the caller's settings.

    The main job's short stratified subset is for the built-in benchmark; a dataset the user points
    at (Spider, BIRD, a mixed set) is scored whole unless ``limit`` or the config file says
    otherwise, so its figures are the dataset's and not a 7-question sample's.

    Args:
        dataset: The dataset named by the caller (None: the config file's, else ``builtin``).
        config_file: A run config file, read for its ``dataset``.

    Returns:
        ``{"limit": DEFAULT_LIMIT}`` for the built-in benchmark, else no default.
    """
    file_values = read_mapping_file(config_file) if config_file else {}
    chosen = dataset or file_values.get("dataset") or "builtin"
    return {"limit": DEFAULT_LIMIT} if chosen == "builtin" else {}


def plan_session(
    *,
    routers: str | Sequence[str] | None = None,
    router_args: Sequence[str] = (),
    config_file: Path | None = None,
    resume: str | None = None,
    store: str = DEFAULT_STORE_PATH,
    tracking_uri: str | None = DEFAULT_TRACKING_URI,
    skip_bad_databases: bool = False,
    **settings: Any,
) -> SessionSpec:
    """The session to run, every setting checked, before anything runs or is written.

    A resumed session starts from the routers and settings it recorded, and options that would
    change what it computes are refused; a new one starts from :func:`run_defaults`.

    Args:
        routers: Router names (comma-separated text or a list); default: the resumed session's,
            else :data:`~routerlab.app.defaults.DEFAULT_ROUTERS`.
        router_args: ``ROUTER.PARAM=VALUE`` items.
        config_file: A YAML/JSON run config; ``settings`` given here win over it.
        resume: An earlier session id to finish.
        store: The DuckDB results store.
        tracking_uri: The MLflow store; None: no MLflow logging.
        skip_bad_databases: Leave out the examples of a database that does not open.
        **settings: Run settings as :func:`~routerlab._runs.config.load_run_config` takes them
            (``dataset``, ``split``, ``limit``, ``lm``, ``scorers``, ``attempts``...); None: not given.

    Returns:
        The session's spec.

    Raises:
        ConfigError: Bad settings, an unknown session, or a resume that changes the session.
    """
    recorded_routers, defaults = (
        recorded_session(store, resume) if resume else ([], run_defaults(settings.get("dataset"), config_file))
    )
    recorded_config = dict(defaults)
    # a deadline budgets one invocation, not the session: the printed resume command must finish it
    defaults.pop("deadline_s", None)
    config = load_run_config(config_file, defaults=defaults, **settings)
    names = _router_text(routers) or ",".join(n for n, _ in recorded_routers) or DEFAULT_ROUTERS
    parsed = parse_routers(names, router_args, dict(recorded_routers))
    if resume:
        check_resume(resume, recorded_routers, recorded_config, parsed, config)
    return session_spec(parsed, config, store=store, tracking_uri=tracking_uri, skip_bad_databases=skip_bad_databases)


def session_spec(
    routers: Sequence[tuple[str, dict[str, Any]]],
    config: RunConfig,
    *,
    store: str | Path,
    tracking_uri: str | None,
    skip_bad_databases: bool = False,
    traces: bool = True,
) -> SessionSpec:
    """The spec of a session: the one place one is built (``run``, the main job, a sweep cell, the demo).

    Args:
        routers: ``(name, constructor args)`` per router, in display order.
        config: The run config every router shares.
        store: The DuckDB results store.
        tracking_uri: The MLflow store; None: no MLflow logging.
        skip_bad_databases: Leave out the examples of a database that does not open.
        traces: Log one MLflow trace per example.
    """
    return SessionSpec(
        routers=[(name, dict(args)) for name, args in routers],
        config=config,
        tracking_uri=tracking_uri,
        store_path=str(store),
        traces=traces,
        skip_bad_databases=skip_bad_databases,
    )


def execute(
    spec: SessionSpec,
    *,
    console: Console,
    resume: str | None = None,
    lm: Any = None,
    session_id: str | None = None,
) -> SessionResult:
    """Run a session: the one door of the application to the run machinery.

    Args:
        spec: What to run (:func:`session_spec`, :func:`plan_session`).
        console: Where progress goes.
        resume: An earlier session id to finish.
        lm: A resolved LM (default: resolve ``spec.config.lm``).
        session_id: The id of a new session whose other part is already stored (the main job's
            routing part).

    Returns:
        The session's run ids and results (see :func:`~routerlab._runs.session.run_session`).
    """
    return run_session(spec, console=console, resume=resume, lm=lm, session_id=session_id)


def size_line(spec: SessionSpec) -> str:
    """How many examples a new session runs and, on the embedded model, about how long it takes.

    A named dataset is scored whole by default; a full Spider dev folder on a CPU model runs for
    hours, and the person who started it should know that before it starts, not after. The
    dataset loaded for the count is kept in ``spec.dataset``: the plan takes it, so a large file
    is read once, not once for this line and again for the run.
    """
    config = spec.config
    spec.dataset = load_dataset(config)
    n = len(select(spec.dataset, config))
    line = f"{n} example(s) x {len(spec.routers)} router(s)"
    if str(config.lm).startswith("local"):
        minutes = n * len(spec.routers) * LOCAL_SECONDS_PER_EXAMPLE / 60
        line += (
            f"; on the embedded model about {minutes:.0f} min at ~{LOCAL_SECONDS_PER_EXAMPLE:.0f} s per example "
            "and router (2 cores; --limit N runs fewer)"
        )
    return line


@dataclass(frozen=True)
class SessionSummary:
    """What ``routerlab run`` prints after a session: each part's verdict and rates.

    Attributes:
        table: The session's comparison (:func:`routerlab.eval.analysis.console.render_console`,
            without the details ``routerlab compare`` adds), no wider than the terminal.
    """

    table: str


def session_summary(spec: SessionSpec, result: SessionResult, *, width: int | None = None) -> SessionSummary:
    """The verdict and rates of a session's runs, read from the store (the same model ``compare`` renders)."""
    if not result.run_ids:
        return SessionSummary("")
    model = build_comparison(ResultsStore(spec.store_path, read_only=True), result.run_ids)
    return SessionSummary(render_console(model, width=width, detail=False))


@dataclass
class PlannedRun:
    """How a planned session ended: what ``routerlab run`` reports and which exit code it takes.

    Attributes:
        spec: The session's spec.
        stop: The stop-signal watch of the run (its ``name`` and ``exit_code`` after a stop).
        result: The session; None when none was registered (``busy``, or stopped while planning).
        busy: The results store was locked by another process before the session began.
        summary: The comparison and verdict (None when none could be read).
        again: The command that finishes the session ("" with no session).
        stored: After a stop, the results stored and the status per run (:func:`stored_runs`).
    """

    spec: SessionSpec
    stop: StopSignal
    result: SessionResult | None = None
    busy: StoreBusyError | None = None
    summary: SessionSummary | None = None
    again: str = ""
    stored: dict[str, tuple[int, str]] | None = None


def run_planned(
    spec: SessionSpec,
    *,
    console: Console,
    resume: str | None = None,
    on_summary: Callable[[SessionSummary], None] | None = None,
) -> PlannedRun:
    """Run a planned session under a stop-signal watch and read its summary back.

    The watch stays on through the summary: a signal while it is shown ends the session with the
    same message and exit code as one during the run (the runs are closed and stored already).

    Args:
        spec: The session (:func:`plan_session`).
        console: Where progress goes.
        resume: The session id being finished.
        on_summary: Shows the summary as soon as it is read (inside the watch).

    Returns:
        How it ended, for the caller to report.
    """
    with stop_signals() as stopped:
        outcome = PlannedRun(spec=spec, stop=stopped)
        try:
            outcome.result = result = execute(spec, console=console, resume=resume)
        except StoreBusyError as exc:  # locked before the session began: nothing was written
            outcome.busy = exc
            return outcome
        except KeyboardInterrupt:  # stopped while the session was being planned: nothing exists yet
            return outcome
        outcome.again = resume_command(result.session_id, spec.store_path, spec.tracking_uri)
        if result.store_busy is not None:  # the store is another process's now: it cannot be read
            return outcome
        try:
            outcome.summary = session_summary(spec, result)
            if on_summary is not None:
                on_summary(outcome.summary)
        except KeyboardInterrupt:
            # every run is closed and stored; only the summary was cut short
            result.interrupted = True
    if result.interrupted:
        outcome.stored = stored_runs(spec.store_path, result)
    return outcome


def stored_runs(store: str, result: SessionResult) -> dict[str, tuple[int, str]]:
    """After a stop: the results stored and the status of each run the session registered.

    Read from the results store: every run registered (a stop before a router began still leaves
    its run, closed KILLED), with every result stored for it, those of an earlier invocation that
    this one resumed included. When the store cannot be read now (another process holds it), what
    this process delivered, each run KILLED.
    """
    try:
        reader = ResultsStore(store, read_only=True)
        run_ids = session_runs(reader, result.session_id)
        if not run_ids:
            return {}
        marks = ", ".join("?" for _ in run_ids)
        rows = reader.query(
            f"SELECT r.run_id, r.status, count(e.run_id) AS n FROM runs r LEFT JOIN examples e USING (run_id) "
            f"WHERE r.run_id IN ({marks}) GROUP BY r.run_id, r.status",
            run_ids,
        )
    except Exception:  # the stop message must print whatever the store's state: what was delivered
        return {run_id: (len(result.results.get(run_id, [])), "KILLED") for run_id in result.run_ids}
    stored = {
        run_id: (int(n), str(status))
        for run_id, status, n in zip(rows["run_id"], rows["status"], rows["n"], strict=True)
    }
    return {run_id: stored.get(run_id, (0, "KILLED")) for run_id in run_ids}


def run(
    routers: str | Sequence[str] | None = None,
    *,
    dataset: str | None = None,
    lm: str | None = None,
    store: str = DEFAULT_STORE_PATH,
    tracking_uri: str | None = DEFAULT_TRACKING_URI,
    router_args: Sequence[str] = (),
    config_file: Path | None = None,
    resume: str | None = None,
    console: Console | None = None,
    **settings: Any,
) -> LoadedSession:
    """Compare routers on a dataset and return the stored session (``routerlab run`` in Python).

    The same session as ``routerlab run --router ... --dataset ... --lm ...`` with the same
    settings: the same defaults (the built-in benchmark's 7-request subset), the same store, MLflow
    runs and rates.

    Args:
        routers: Router names, e.g. ``["rules", "llm"]``; default :data:`~routerlab.app.defaults.DEFAULT_ROUTERS`.
        dataset: Dataset name (``builtin``, ``spider``...; default ``builtin``).
        lm: LM spec (``local``, a LiteLLM model, ``scripted:basic``...; default ``local``).
        store: The DuckDB results store.
        tracking_uri: The MLflow store; None: no MLflow logging.
        router_args: ``ROUTER.PARAM=VALUE`` items.
        config_file: A YAML/JSON run config; arguments given here win over it.
        resume: An interrupted session to finish.
        console: Where progress goes (default: nowhere).
        **settings: Any other run setting (``split``, ``limit``, ``scorers``, ``attempts``, ``faults``...).

    Returns:
        The session as :func:`routerlab.load` returns it, with the run's outcome as ``outcome``.

    Raises:
        ConfigError: Bad settings (nothing runs). RunError: the results store stayed locked.
    """
    spec = plan_session(
        routers=routers,
        router_args=router_args,
        config_file=config_file,
        resume=resume,
        store=store,
        tracking_uri=tracking_uri,
        dataset=dataset,
        lm=lm,
        **settings,
    )
    result = execute(spec, console=console or Console(quiet=True), resume=resume)
    if result.store_busy is not None:
        raise result.store_busy
    return load(result.session_id, store=store, tracking_uri=tracking_uri, outcome=result)
