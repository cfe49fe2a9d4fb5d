"""A session planned and registered.

Every input is checked before anything is written, then every run is created in the store in one
transaction.

:class:`SessionSpec` (what to run) and :class:`SessionResult` (what it produced) are defined here,
with :class:`Live`, what the runs of a session share while it runs (:mod:`routerlab._runs.session_live`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

import routerlab.benchmarks.builtin
import routerlab.benchmarks.loaders  # noqa: F401  (registers the on-disk formats)
from routerlab._runs.runner import RouterRun, RunConfig, build_scorers
from routerlab._runs.session_spec import (
    session_runs,
    unknown_session,
)
from routerlab.agents.errors import ConfigError, RunError
from routerlab.agents.faults import FaultCall
from routerlab.agents.lm import resolve_lm
from routerlab.agents.registry import component_spec
from routerlab.agents.signals import shield
from routerlab.agents.tools.sql_program import sql_program_record
from routerlab.benchmarks.dataset import Dataset, Draw, dataset, draws_while_reading
from routerlab.benchmarks.db_digest import check_database_digests, database_digests
from routerlab.benchmarks.dbcheck import BadDatabase, bad_databases_error, check_databases
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.selection import of_intents, schedule, stratified_subset
from routerlab.eval.defaults import DEFAULT_STORE_PATH, DEFAULT_TRACKING_URI
from routerlab.eval.scoring import ExampleResult
from routerlab.eval.store import ResultsStore

__all__ = [
    "Live",
    "Plan",
    "SessionResult",
    "SessionSpec",
    "create_runs",
    "load_dataset",
    "new_session_id",
    "plan_session",
    "run_draw",
    "select",
]


@dataclass
class SessionSpec:
    """A comparison to run.

    Attributes:
        routers: ``(name, constructor args)`` per router, in display order.
        config: The run config shared by all routers.
        tracking_uri: MLflow tracking URI (None: no MLflow logging).
        store_path: DuckDB results store file.
        traces: Log one MLflow trace per example.
        skip_bad_databases: Leave the examples of a bad database out as ``not_run`` (error class
            ``bad_database``) instead of refusing the run (see :mod:`routerlab.benchmarks.dbcheck`).
        dataset: The dataset already loaded from ``config`` (``routerlab run``'s size line loads
            it): the plan takes it instead of reading the source again. None: the plan loads it.
    """

    routers: list[tuple[str, dict[str, Any]]]
    config: RunConfig
    tracking_uri: str | None = DEFAULT_TRACKING_URI
    store_path: str = DEFAULT_STORE_PATH
    traces: bool = True
    skip_bad_databases: bool = False
    dataset: Dataset | None = None


@dataclass
class SessionResult:
    """What a session produced."""

    session_id: str
    run_ids: list[str]
    results: dict[str, list[ExampleResult]] = field(default_factory=dict)
    interrupted: bool = False
    #: examples the run's deadline kept from starting (recorded as ``not_run``, in no rate)
    skipped: int = 0
    #: run id -> why it ended FAILED although it ran to the end (most of its examples crashed)
    failed: dict[str, str] = field(default_factory=dict)
    #: the signal that stopped the session (``SIGINT``, ``SIGTERM``), when ``interrupted``
    signal_name: str | None = None
    #: every fault-injection decision of this invocation, by run id (empty without ``faults``)
    fault_calls: dict[str, list[FaultCall]] = field(default_factory=dict)
    #: databases whose examples were left out (``--skip-bad-databases``)
    bad_databases: list[BadDatabase] = field(default_factory=list)
    #: run id -> (examples that crashed, examples that ran, first crash) of a run that stands
    crashed: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    #: the store stayed locked by another process past the wait limit: the session stopped,
    #: runs not closed stay RUNNING (resumable), runs already closed keep their status
    store_busy: RunError | None = None
    #: the session's runs are in the store (False: a stop or an error came before they were)
    registered: bool = False


def new_session_id() -> str:
    """Sortable, unique: ``YYYYmmdd-HHMMSS-<16 hex>`` (64 random bits; a collision is refused too)."""
    return f"{_dt.datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(8)}"


def run_draw(config: RunConfig) -> Draw | None:
    """The examples a run takes of its dataset, when it takes a subset (``--limit``)."""
    return Draw(config.limit, config.split, config.intents) if config.limit else None


def load_dataset(config: RunConfig) -> Dataset:
    """Build the configured dataset through the registry (importing the built-in loaders).

    With ``--limit``, a loader that draws while it reads (:func:`~routerlab.benchmarks.dataset.draws`)
    builds only the run's examples: a large file is read once, its other records never become
    examples.
    """
    spec = run_draw(config)
    args = dict(config.dataset_args)
    if spec is not None and "draw" not in args and draws_while_reading(config.dataset):
        args["draw"] = spec
    try:
        return dataset.build(config.dataset, **args)
    except RunError as exc:
        # loaders name their argument ("pass ... as path"); the user typed --dataset-path
        fix = re.sub(r"\bas path\b", "as --dataset-path (dataset_args.path in a run config)", exc.fix or "")
        if fix == exc.fix:
            raise
        raise dataclasses.replace(exc, fix=fix) from None


def select(ds: Dataset, config: RunConfig) -> list[Example]:
    """The examples the run replays, scheduled by database."""
    spec = run_draw(config)
    if spec is not None and ds.drawn == spec:
        # the loader drew this run's examples (drawing again could differ: the seeded database
        # order of conversations depends on which databases are there)
        return schedule(list(ds.examples))
    return schedule(stratified_subset(of_intents(ds.split(config.split), config.intents), config.limit))


@dataclass
class Plan:
    """A session's inputs, every one checked before anything is written."""

    session_id: str
    #: run ids the resumed session already has in the store (empty for a new session)
    existing: set[str]
    reader: Any
    ds: Dataset
    examples: list[Example]
    bad: list[BadDatabase]
    runs: list[RouterRun]
    #: sha256 of each database the examples read, recorded with the runs, checked on resume
    db_digests: dict[str, str] = field(default_factory=dict)

    @property
    def by_id(self) -> dict[str, Example]:
        """The examples by id."""
        return {e.id: e for e in self.examples}

    @property
    def left_out(self) -> dict[str, BadDatabase]:
        """Example id -> the bad database that leaves it out."""
        return {eid: b for b in self.bad for eid in b.examples}

    def run_id(self, rr: RouterRun) -> str:
        """The run id of ``rr`` in this session: ``<session>.<router>``."""
        return f"{self.session_id}.{rr.router_name}"


def plan_session(spec: SessionSpec, resume: str | None, lm: Any, session_id: str | None = None) -> Plan:
    """Check every input (dataset, databases, scorers, LM, routers, a resumed session's digest, MLflow).

    Raises:
        ConfigError: Bad input; nothing has been written.
    """
    config = spec.config
    session_id = resume or session_id or new_session_id()
    # nothing is written until every input is checked: bad input leaves no store behind
    reader = ResultsStore(spec.store_path, read_only=True) if resume is not None else None
    existing = set(session_runs(reader, session_id)) if reader is not None else set()
    if reader is not None and not existing:
        raise unknown_session(reader, session_id)
    ds = spec.dataset if spec.dataset is not None else load_dataset(config)
    examples = select(ds, config)
    # every database opens and has its examples' tables, or the run stops here (exit 2)
    bad = check_databases(examples)
    if bad and not spec.skip_bad_databases:
        raise bad_databases_error(bad)
    scorers = build_scorers(config)
    lm = lm if lm is not None else resolve_lm(config.lm, api_base=config.lm_api_base, cache=config.lm_cache)
    # build every router (and check its contract) before anything runs
    runs = [RouterRun(name, args, lm, config, scorers) for name, args in spec.routers]
    plan = Plan(session_id, existing, reader, ds, examples, list(bad), runs, database_digests(examples))
    _check_digests(plan)
    if spec.tracking_uri:
        # imported here: MLflow costs seconds at import, and a run without MLflow never loads it
        from routerlab.eval.tracking import check_tracking_store, resolve_tracking_uri

        # a store that cannot take the runs must fail here, before any run is created
        check_tracking_store(resolve_tracking_uri(spec.tracking_uri))
    return plan


def _check_digests(plan: Plan) -> None:
    """Refuse to resume a run recorded on another version of the dataset."""
    digest = plan.ds.digest()
    for rr in plan.runs:
        run_id = plan.run_id(rr)
        if run_id not in plan.existing:
            continue
        stored = plan.reader.run(run_id)
        # the databases' contents, not only the dataset file: changed rows would mix two versions
        check_database_digests(run_id, stored["params"].get("databases", {}), plan.db_digests)
        if (recorded := stored["dataset_digest"]) != digest:
            raise ConfigError(
                f"run {run_id!r} was recorded on another version of dataset {plan.ds.name!r}",
                expected=f"dataset digest {recorded[:12]}...",
                found=f"{digest[:12]}...",
                fix="start a new session instead of resuming this one",
                details={"option": "--resume"},
            )


@dataclass
class Live:
    """What the runs of a session share while it runs."""

    spec: SessionSpec
    plan: Plan
    store: Any
    sink: Any
    out: SessionResult
    console: Console
    stop: threading.Event = field(default_factory=threading.Event)
    deadline: float | None = None
    parent: str | None = None
    #: the run being run: (run id, MLflow run id), to close it if the session stops
    current: tuple[str, str | None] | None = None


def create_runs(live: Live) -> None:
    """Say what the session runs, and create every run (RUNNING) before any MLflow run exists."""
    store, spec, plan, console = live.store, live.spec, live.plan, live.console
    config = spec.config
    faults = f", faults {config.faults.to_text()}" if config.faults is not None else ""
    console.print(
        f"session {plan.session_id}: {config.dataset}/{config.split}, {len(plan.examples)} examples, "
        f"routers {','.join(n for n, _ in spec.routers)}, lm {config.lm}{faults}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    if not plan.existing:
        # a new id that an earlier session holds is refused whole, never merged into, whatever
        # routers either session runs (issue 62: another router's session was merged silently)
        store.refuse_existing([*session_runs(store, plan.session_id), *(plan.run_id(rr) for rr in plan.runs)])
    # every run exists (RUNNING) before any MLflow run does: a kill from here on is resumable.
    # They are registered in one transaction: a signal half-way leaves all of them or none, so
    # --resume never knows only some of the routers the session was asked to run
    registrations = []
    for rr in plan.runs:
        params = {
            "router": component_spec(rr.router),
            "config": config.to_dict(),
            "session": plan.session_id,
            "databases": plan.db_digests,
        }
        program = config.pipeline.tools.sql_program
        if program:  # the compiled generate_sql program's file and digest, next to its name in config
            params["sql_program"] = sql_program_record(program)
        run_id = plan.run_id(rr)
        registrations.append(
            {
                "run_id": run_id,
                "router": rr.router_name,
                "lm": config.lm,
                "dataset": plan.ds,
                "split": config.split,
                "config": config.to_dict(),
                "params": params,
                "new": run_id not in plan.existing,
            }
        )
    # held signals: the transaction commits (every router known to --resume), then the stop is raised
    with shield():
        store.create_runs(registrations)
        live.out.registered = True
