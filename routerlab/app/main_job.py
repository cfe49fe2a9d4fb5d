"""The main job: what ``routerlab run`` with no options runs, sized to end with a verdict in minutes.

A full end-to-end run costs tens of seconds per request and router on a CPU model, so the sample
it can afford in ten minutes (a handful of requests) cannot tell routers apart. Whether a router
sends a request to the right sub-agent is decided by its first decision, which costs one router
call, so the job splits the question in two:

1. **routing**: the first decision of every router of the default set
   (:data:`~routerlab.app.defaults.DEFAULT_ROUTERS`: ``always_sql``, ``rules``, ``semantic``,
   ``hybrid``, ``single_call``, each deciding in milliseconds) on the whole dev split of the
   built-in benchmark (111 requests): large enough for paired tests to separate routers;
2. **end to end**: one request per intent through the whole pipeline with the same routers,
   sharing sub-agent outcomes between routers (``replay``) so each one pays mostly for its own
   decisions. The clarify and explain requests are left out: their chains (ask, then answer the
   reply; a free-text explanation) each cost minutes of cold generation on a CPU, more than the
   rest of the job together (measured in docs/results/2026-11-26-main-job.md); ``routerlab run
   --router ... --split dev`` scores them;

and ends with the session's comparison (:func:`routerlab.eval.analysis.console.render_console`
of :func:`routerlab.eval.analysis.build.build_comparison`): each part's verdict and rates. Both
parts are one session of the results store: the routing part's first decisions as runs
``<session>.routing.<router>`` (:mod:`routerlab._routing_eval.stored`), the end to end part as
``<session>.<router>``, under one MLflow parent ``session <session>``, so ``routerlab compare
<session>``, the report, MLflow and :func:`routerlab.load` show all of it with the numbers printed
here. The routers and sizes are the constants below; :func:`main_job` runs it under a stop-signal
watch, its routing part decided by :func:`routerlab.app.route.decide_routers` as ``routerlab
route``'s is, its end-to-end part a session built and run by :func:`routerlab.app.run.session_spec`
and :func:`routerlab.app.run.execute`, as every session is. Options that pick the data or the LM
(``--dataset``, ``--split``, ``--limit``, ``--lm``...) keep this shape on what they pick; only
``--router``, ``--config`` or ``--resume`` run a plain comparison instead.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from routerlab._routing_eval.decisions import FirstDecision
from routerlab._runs.config import load_run_config
from routerlab._runs.resume import resume_command
from routerlab._runs.session import SessionResult, load_dataset, new_session_id, select
from routerlab.agents.lm import resolve_lm
from routerlab.agents.signals import StopSignal, stop_signals
from routerlab.app.defaults import DEFAULT_ROUTERS
from routerlab.app.route import decide_routers
from routerlab.app.run import execute, session_spec, stored_runs
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.analysis.console import render_console, terminal_width
from routerlab.eval.analysis.model import SessionComparison
from routerlab.eval.store import ResultsStore
from routerlab.routers import router as registry

__all__ = ["E2E_INTENTS", "E2E_LIMIT", "ROUTERS", "MainJob", "MainJobResult", "main_job", "run_main_job"]

#: both parts' routers: the one default set of ``run``, ``route`` and the main job (why these:
#: :data:`routerlab.app.defaults.DEFAULT_ROUTERS`)
ROUTERS: tuple[str, ...] = tuple(DEFAULT_ROUTERS.split(","))
#: the intents of the end-to-end part (clarify and explain cost minutes each, see above)
E2E_INTENTS: tuple[str, ...] = ("sql", "fix", "chat", "refuse", "unanswerable")
#: one request per intent
E2E_LIMIT = len(E2E_INTENTS)


@dataclass(frozen=True)
class MainJobResult:
    """What the main job produced.

    Attributes:
        session: The end-to-end session (its run ids, interruptions, failures).
        decisions: ``router -> first decisions`` of the routing part.
        routing_run_ids: The routing part's runs in the results store (same session id).
        comparison: Both parts' comparison, as ``routerlab compare`` shows it.
        routing_csv: Where the first decisions were written.
    """

    session: SessionResult
    decisions: dict[str, list[FirstDecision]]
    comparison: SessionComparison
    routing_csv: Path
    routing_run_ids: list[str]


#: the settings that pick the requests: both parts take them
_DATA_SETTINGS = ("dataset", "dataset_path", "db_dir", "split", "lm", "lm_api_base", "lm_cache")


def _part_configs(settings: Mapping[str, Any]) -> tuple[Any, Any]:
    """The routing part's and the end-to-end part's run configs, the caller's settings over the job's.

    ``limit`` means what it means in ``run`` and ``route``: the requests taken from the set
    (:func:`routerlab._runs.session.select`: stratified by intent, conversations whole and spread over
    databases). The routing part decides all of them (default: the whole split); the end-to-end
    part runs at most :data:`E2E_LIMIT` (one per intent of :data:`E2E_INTENTS`). Settings that
    only a whole-pipeline run has (scorers, attempts, faults, deadline, concurrency) go to the
    end-to-end part.
    """
    data = {k: settings.get(k) for k in _DATA_SETTINGS}
    rest = {k: v for k, v in settings.items() if k not in _DATA_SETTINGS and k != "limit"}
    limit = settings.get("limit")
    routing = load_run_config(None, defaults={"dataset": "builtin", "split": "dev", "limit": 0}, limit=limit, **data)
    e2e_limit = E2E_LIMIT if not limit else min(limit, E2E_LIMIT)
    e2e = load_run_config(
        None,
        defaults={"dataset": "builtin", "split": "dev", "replay": True},
        limit=e2e_limit,
        intents=E2E_INTENTS,
        **data,
        **rest,
    )
    return routing, e2e


def run_main_job(
    *,
    store: str,
    tracking_uri: str | None,
    console: Console,
    settings: Mapping[str, Any] | None = None,
) -> MainJobResult:
    """Run the routing part, then the end-to-end session, and print both tables and the verdict.

    Args:
        store: The DuckDB results store (the first decisions are written beside it as CSV).
        tracking_uri: MLflow store (None: off).
        console: Where progress and tables go.
        settings: Run settings as ``routerlab run``'s options give them (``lm``, ``lm_api_base``,
            ``lm_cache``, ``dataset``, ``dataset_path``, ``db_dir``, ``split``, ``limit``,
            ``scorers``, ``attempts``...; None: not given): the job keeps its shape, on the
            requests and with the LM they pick.
    """
    # imported here: MLflow costs seconds at import, and a run without MLflow never loads it
    from routerlab._routing_eval.tracking import RouteTracking

    def say(text: str) -> None:
        # wrapped to the terminal, as the closing table is (a log's console is wider than its reader)
        console.print(textwrap.fill(text, terminal_width(), break_on_hyphens=False), highlight=False, markup=False)

    routing_config, e2e_config = _part_configs(settings or {})
    dataset = load_dataset(routing_config)
    examples = select(dataset, routing_config)
    # one session for both parts: the routing runs are stored under the id the end-to-end part gets
    session_id = new_session_id()
    say(
        f"main job, session id: {session_id} (both parts): first decisions of {', '.join(ROUTERS)} on "
        f"{len(examples)} {routing_config.split} requests of {routing_config.dataset}, then the same routers end "
        f"to end on at most {e2e_config.limit} (one each of {', '.join(E2E_INTENTS)}); a verdict at the end"
    )
    model = resolve_lm(routing_config.lm, api_base=routing_config.lm_api_base, cache=routing_config.lm_cache)
    built = {name: registry.build(name) for name in ROUTERS}
    logged = {
        "dataset": routing_config.dataset,
        "dataset_args": routing_config.dataset_args,
        "split": routing_config.split,
        "limit": routing_config.limit,
        "lm": routing_config.lm,
        "history": "gold",
    }
    # the session's one MLflow parent: the end-to-end part reopens it by the session id
    tracking = RouteTracking(tracking_uri, session_id, dataset, logged, list(ROUTERS)) if tracking_uri else None
    decisions, routing_ids, _ = decide_routers(
        {name: ({}, built[name]) for name in ROUTERS},
        examples,
        model,
        history="gold",
        progress=_Bars(console, say),
        tracking=tracking,
        store=ResultsStore(store),
        session_id=session_id,
        dataset=dataset,
        settings=logged,
        label=str,
    )
    say(f"routing part stored ({len(routing_ids)} routers); now end to end")
    spec = session_spec([(r, {}) for r in ROUTERS], e2e_config, store=store, tracking_uri=tracking_uri)
    session = execute(spec, console=console, lm=model, session_id=session_id)
    csv_path = Path(store).parent / f"{session.session_id}.routing.csv"
    frames = [pd.DataFrame([d.__dict__ for d in ds]).assign(router=r) for r, ds in decisions.items()]
    pd.concat(frames).to_csv(csv_path, index=False)
    # both parts, as `routerlab compare <session>` shows them: one model, rendered
    comparison = build_comparison(ResultsStore(store, read_only=True), session.session_id)
    console.print(render_console(comparison, detail=False), highlight=False, markup=False, soft_wrap=True, end="")
    say(
        f"details: routerlab compare {session.session_id} (paired tests, per-intent rates, failures and "
        f"disagreements of both parts); first decisions also in {csv_path}"
    )
    return MainJobResult(
        session=session,
        decisions=decisions,
        comparison=comparison,
        routing_csv=csv_path,
        routing_run_ids=routing_ids,
    )


class _Bars:
    """The routing part's progress: a bar per router on a terminal, a line per router in a log."""

    def __init__(self, console: Console, say: Callable[[str], None]) -> None:
        columns = (TextColumn("[bold]{task.description:<12}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        self._bars = Progress(*columns, console=console, disable=not console.is_terminal)
        self._log = None if console.is_terminal else say
        self._task = TaskID(0)
        self._total = 0
        self._decided: list[FirstDecision] = []

    def __enter__(self) -> _Bars:
        self._bars.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._bars.__exit__(*exc)

    def start(self, label: str, total: int) -> None:
        # the routers decide one after the other: one bar is filling at a time
        self._task, self._total, self._decided = self._bars.add_task(label, total=total), total, []
        if total == 0:
            self._told(label)

    def done(self, label: str, decision: FirstDecision) -> None:
        self._bars.advance(self._task)
        self._decided.append(decision)
        if len(self._decided) == self._total:
            self._told(label)

    def _told(self, label: str) -> None:
        if self._log is not None:  # a log gets one line per router, once it has decided every request
            self._log(f"routing {label}: {sum(d.correct for d in self._decided)}/{self._total} right")


@dataclass(frozen=True)
class MainJob:
    """How the main job ended.

    Attributes:
        job: Its routing part, end-to-end session and verdicts.
        stop: The stop-signal watch (its ``name`` and ``exit_code`` after a stop).
        again: The command that finishes the end-to-end session.
        stored: After a stop, the results stored and the status per run (:func:`~routerlab.app.run.stored_runs`).
    """

    job: MainJobResult
    stop: StopSignal
    again: str
    stored: dict[str, tuple[int, str]] | None = None


def main_job(
    *, store: str, tracking_uri: str | None, console: Console, settings: Mapping[str, Any] | None = None
) -> MainJob:
    """Run the main job under a stop-signal watch, printing its progress, tables and verdict on ``console``.

    Args:
        store: The DuckDB results store.
        tracking_uri: The MLflow store; None: no MLflow logging.
        console: Where progress, the tables and the verdict go.
        settings: Run settings as ``routerlab run``'s options give them (None: not given).
    """
    with stop_signals() as stopped:
        job = run_main_job(store=store, tracking_uri=tracking_uri, console=console, settings=settings)
    again = resume_command(job.session.session_id, store, tracking_uri)
    return MainJob(job, stopped, again, stored_runs(store, job.session) if job.session.interrupted else None)
