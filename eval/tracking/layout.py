"""How routerlab lays its runs out in an MLflow store: tag names, artifact names, final statuses.

The writer (:mod:`routerlab.eval.tracking.sink`) and the reader
(:mod:`routerlab.eval.tracking.reader`) both name runs by these, and quote search literals the
same way.
"""

from __future__ import annotations

from routerlab.agents.errors import ConfigError

__all__ = [
    "DECISIONS_CSV",
    "EXAMPLES_TABLE",
    "FINAL_STATUSES",
    "KIND_ROUTE_PARENT",
    "KIND_ROUTE_RUN",
    "PARAM_ROUTER",
    "RISK_CURVE",
    "RISK_FIGURE",
    "TAG_DATASET",
    "TAG_DESCRIPTION",
    "TAG_KIND",
    "TAG_LM",
    "TAG_ROUTER",
    "TAG_RUN_KEY",
    "TAG_STATUS",
    "check_status",
    "compare_link",
    "search_literal",
]

EXAMPLES_TABLE = "examples.json"
RISK_CURVE = "risk_coverage.json"
RISK_FIGURE = "risk_coverage.png"
FINAL_STATUSES: tuple[str, ...] = ("FINISHED", "FAILED", "KILLED")

TAG_RUN_KEY = "routerlab.run_key"
TAG_KIND = "routerlab.kind"
TAG_STATUS = "routerlab.status"
TAG_ROUTER = "routerlab.router"
TAG_LM = "routerlab.lm"
TAG_DATASET = "routerlab.dataset"
#: MLflow's run description (Markdown, the Description section of the run's Overview tab)
TAG_DESCRIPTION = "mlflow.note.content"

#: a param naming the router, spelled so it sorts before every other param (upper case comes
#: first): the compare page's parallel plot takes the first three differing params in sorted order
PARAM_ROUTER = "Router"


def compare_link(run_ids: list[str], experiment_ids: list[str]) -> str:
    """The MLflow UI's compare page of these runs, relative to the UI's address (``#/compare-runs?...``)."""
    runs = ",".join(f'"{r}"' for r in run_ids)
    experiments = ",".join(f'"{e}"' for e in dict.fromkeys(experiment_ids))
    return f"#/compare-runs?runs=[{runs}]&experiments=[{experiments}]"


#: ``routerlab.kind`` of the runs ``routerlab route`` logs: one parent per invocation, one child
#: per router. Not ``comparison`` / ``router-run``: those carry per-example tables of whole
#: turns, and first decisions are not example results.
KIND_ROUTE_PARENT = "route-comparison"
KIND_ROUTE_RUN = "route-run"
#: a ``routerlab route`` child run's first decisions (the rows ``route --out`` writes)
DECISIONS_CSV = "decisions.csv"


def check_status(status: str) -> None:
    """Refuse a run status MLflow does not end runs with.

    Raises:
        ConfigError: ``status`` is not one of :data:`FINAL_STATUSES`.
    """
    if status not in FINAL_STATUSES:
        raise ConfigError(
            f"unknown final run status {status!r}",
            expected=", ".join(FINAL_STATUSES),
            found=repr(status),
            fix="FINISHED when every example ran, KILLED when interrupted, FAILED on a crash",
        )


def search_literal(value: str) -> str:
    """``value`` as a single-quoted MLflow search literal.

    Raises:
        ConfigError: ``value`` holds a single quote (MLflow's search syntax has no escape for it).
    """
    if "'" in value:
        raise ConfigError(
            "a run key or tag value contains a single quote",
            expected="ids without quotes",
            found=value,
            fix="use letters, digits, dots, dashes or underscores",
        )
    return f"'{value}'"
