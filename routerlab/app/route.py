"""Scoring routers' first decisions only: the cheap routing numbers, tracked in MLflow.

``routerlab route`` and :func:`routerlab.route` both run here: every input is checked (the
history mode, each router's arguments, the MLflow store) before the model loads, then each
router decides every example's first step, logged as a child run of one MLflow parent per call
(:class:`~routerlab._routing_eval.tracking.RouteTracking`).
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

from routerlab import routers as registry
from routerlab._routing_eval.decisions import HISTORIES, FirstDecision, decisions_frame, first_decisions
from routerlab._routing_eval.stored import store_decisions
from routerlab._runs.config import load_run_config
from routerlab._runs.session import load_dataset, new_session_id, parse_routers, select
from routerlab.agents.errors import ConfigError
from routerlab.agents.lm import resolve_lm
from routerlab.agents.registry import component_spec
from routerlab.app.defaults import DEFAULT_ROUTERS, DEFAULT_STORE_PATH, DEFAULT_TRACKING_URI
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.analysis.console import render_console
from routerlab.eval.analysis.frames import rates_frame
from routerlab.eval.analysis.model import SessionComparison
from routerlab.eval.store import ROUTING, ResultsStore

if TYPE_CHECKING:
    from routerlab._routing_eval.tracking import RouteTracking
    from routerlab.benchmarks.dataset import Dataset
    from routerlab.benchmarks.example import Example

__all__ = ["RouteOutcome", "RouteProgress", "decide_routers", "route", "router_labels"]


class RouteProgress(Protocol):
    """Told as decisions are made (the CLI's progress bars); entered once the model is loaded."""

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: object) -> Any: ...

    def start(self, label: str, total: int) -> None:
        """A router starts deciding ``total`` examples."""

    def done(self, label: str, decision: FirstDecision) -> None:
        """A router made one first decision."""


@dataclass(frozen=True)
class RouteOutcome:
    """Every router's first decisions and the session's comparison.

    Attributes:
        examples: The examples decided, in order.
        by_router: Each router's decisions, by display label.
        comparison: The session's comparison model (its routing part), built from the stored
            decisions: what ``routerlab route`` prints, as ``routerlab compare`` and every other
            view render it.
        history: ``gold`` or ``predicted`` earlier turns.
        tracking: The MLflow parent and child runs (None: not logged).
        session_id: The session the decisions are stored under (``routerlab compare <id>``,
            :func:`routerlab.load`); the MLflow parent's route id is the same.
        store: The results store they are in (None: not kept).
    """

    examples: list[Example]
    by_router: dict[str, list[FirstDecision]]
    comparison: SessionComparison
    history: str
    tracking: RouteTracking | None
    session_id: str = ""
    store: str | None = None

    def report(self, width: int | None = None) -> str:
        """The verdict and rates as the run's closing table prints them, at most ``width`` columns wide."""
        return render_console(self.comparison, width=width, detail=False)

    def rates(self) -> pd.DataFrame:
        """One row per router: each measure's rate with ``_low``, ``_high``, ``_n``, then cost (the model's)."""
        return rates_frame(self.comparison, ROUTING)

    def conversation_line(self) -> str | None:
        """How conversation turns were decided, when the examples are conversations' turns."""
        convs = {e.conversation for e in self.examples if e.conversation}
        if not convs:
            return None
        return (
            f"{len(self.examples)} turns of {len(convs)} conversations, each decided with its earlier turns "
            f"({self.history} history); intervals: bootstrap over conversations"
        )

    def confusions(self) -> dict[str, pd.DataFrame]:
        """Per router: gold intent (rows) x first-decision intent (columns; ``none``: no decision), counts."""
        return {
            r.router: pd.DataFrame(r.confusion).T.fillna(0).astype(int) for r in self.comparison.part(ROUTING).routers
        }

    def write_csv(self, out: Path) -> None:
        """Every first decision of every router as one CSV."""
        out.parent.mkdir(parents=True, exist_ok=True)
        frames = [decisions_frame(label, ds) for label, ds in self.by_router.items()]
        pd.concat(frames).to_csv(out, index=False)


def _check_history(history: str) -> None:
    if history not in HISTORIES:
        raise ConfigError(
            f"invalid --history {history!r}",
            expected=f"one of {', '.join(HISTORIES)}",
            found=repr(history),
            fix="pass --history gold (the dataset's earlier turns) or --history predicted (the router's own)",
            details={"option": "--history"},
        )


class _Silent:
    """No progress to show (the Python API's default)."""

    def __enter__(self) -> _Silent:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def start(self, label: str, total: int) -> None:
        return None

    def done(self, label: str, decision: FirstDecision) -> None:
        return None


def route(
    routers: str | Sequence[str] = DEFAULT_ROUTERS,
    *,
    router_args: Sequence[str] = (),
    config_file: Path | None = None,
    history: str = "gold",
    store: str | None = DEFAULT_STORE_PATH,
    tracking_uri: str | None = DEFAULT_TRACKING_URI,
    progress: RouteProgress | None = None,
    **settings: Any,
) -> RouteOutcome:
    """Score each router's first decision on a dataset (``routerlab route`` in Python).

    Args:
        routers: Router names (comma-separated text or a list).
        router_args: ``ROUTER.PARAM=VALUE`` items.
        config_file: A YAML/JSON run config; ``settings`` given here win over it.
        history: A conversation's earlier turns as the router sees them: ``gold`` or ``predicted``.
        store: The DuckDB results store the decisions are kept in, as a session's routing part
            (:mod:`routerlab._routing_eval.stored`); None: kept in a temporary store only until
            the comparison is built.
        tracking_uri: The MLflow store; None: no MLflow logging.
        progress: Told of each decision (default: nothing shown).
        **settings: ``dataset``, ``dataset_path``, ``db_dir``, ``split``, ``limit``, ``lm``, ``lm_api_base``.

    Returns:
        The decisions by router and the session's comparison.

    Raises:
        ConfigError: Bad input, before the model loads and before anything is logged.
    """
    config = load_run_config(config_file, **settings)
    _check_history(history)  # refused before the model loads
    chosen = parse_routers(routers if isinstance(routers, str) else ",".join(routers), router_args)
    # every router is built (its arguments checked) and the MLflow store checked before the model
    # loads: bad input exits 2 with nothing logged
    built = {name: registry.router.build(name, **args) for name, args in chosen}
    if tracking_uri is not None:
        # imported here: MLflow costs seconds at import, and a route without MLflow never loads it
        from routerlab._routing_eval.tracking import RouteTracking
        from routerlab.eval.tracking import check_tracking_store, resolve_tracking_uri

        check_tracking_store(resolve_tracking_uri(tracking_uri))
    # no store asked for: the decisions go to a temporary one, so the comparison is built the one way
    scratch: tempfile.TemporaryDirectory[str] | None = None
    where = store
    if where is None:
        scratch = tempfile.TemporaryDirectory(prefix="routerlab-route-")
        where = str(Path(scratch.name) / "results.duckdb")
    results_store = ResultsStore(where)  # a bad --store path is refused before the model loads
    dataset = load_dataset(config)
    examples = select(dataset, config)
    model = resolve_lm(config.lm, api_base=config.lm_api_base)
    settings_logged = {
        "dataset": config.dataset,
        "dataset_args": config.dataset_args,
        "split": config.split,
        "limit": config.limit,
        "lm": config.lm,
        "history": history,
    }
    session_id = new_session_id()
    tracking = (
        None
        if tracking_uri is None
        # the parent's key is the session id, the children's the store's run ids <session>.routing.<router>
        else RouteTracking(tracking_uri, session_id, dataset, settings_logged, list(built))
    )
    shown = progress if progress is not None else _Silent()
    try:
        by_name, _, comparison = decide_routers(
            {name: (args, built[name]) for name, args in chosen},
            examples,
            model,
            history=history,
            progress=shown,
            tracking=tracking,
            store=results_store,
            session_id=session_id,
            dataset=dataset,
            settings=settings_logged,
        )
    finally:
        if scratch is not None:
            scratch.cleanup()
    by_router = {registry.label(name): ds for name, ds in by_name.items()}
    return RouteOutcome(
        list(examples), by_router, comparison, history, tracking, session_id, None if store is None else str(store)
    )


def decide_routers(
    routers: Mapping[str, tuple[dict[str, Any], Any]],
    examples: Sequence[Example],
    model: Any,
    *,
    history: str,
    progress: RouteProgress,
    tracking: RouteTracking | None,
    store: ResultsStore,
    session_id: str,
    dataset: Dataset,
    settings: Mapping[str, Any],
    label: Callable[[str], str] = registry.label,
) -> tuple[dict[str, list[FirstDecision]], list[str], SessionComparison]:
    """Every router's first decisions, logged, stored as the session's routing part and compared.

    The one routing loop of ``routerlab route`` and of the main job's routing part.

    Args:
        routers: ``name -> (arguments, built router)``, in the order they decide.
        examples: The examples each router decides.
        model: The LM the routers call.
        history: A conversation's earlier turns as the router sees them: ``gold`` or ``predicted``.
        progress: Told as each router starts and decides (entered around the loop).
        tracking: The session's MLflow parent and children (None: not logged).
        store: The results store the decisions are kept in.
        session_id: The session they are stored under.
        dataset: The dataset decided on.
        settings: What the decisions depend on besides the router, recorded with them.
        label: A router's name as the progress and its MLflow ``decisions.csv`` show it.

    Returns:
        The decisions by router name, the routing runs' ids in the store, the session's comparison.
    """
    by_name: dict[str, list[FirstDecision]] = {}
    with tracking if tracking is not None else contextlib.nullcontext(), progress:
        for name, (args, router) in routers.items():
            shown = label(name)
            progress.start(shown, len(examples))
            if tracking is not None:
                tracking.start_router(name, router)
            by_name[name] = first_decisions(
                name,
                args,
                examples,
                model,
                on_done=functools.partial(progress.done, shown),
                history=history,
                router=router,
            )
            if tracking is not None:
                tracking.finish_router(name, shown, by_name[name])
        run_ids = store_decisions(
            store,
            session_id,
            dataset=dataset,
            examples=examples,
            settings=settings,
            specs={name: component_spec(router) for name, (_, router) in routers.items()},
            by_router=by_name,
        )
        comparison = build_comparison(store, session_id)
        if tracking is not None:
            tracking.finish(comparison)
    return by_name, run_ids, comparison


def router_labels() -> list[str]:
    """Every registered router, as ``routerlab routers`` lists them (name and what it is)."""
    return [registry.label(name) for name in registry.router.names()]
