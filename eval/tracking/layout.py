"""How routerlab lays its runs out in an MLflow store: tag names, artifact names, final statuses.

The writer (:mod:`routerlab.eval.tracking.sink`) and the reader
(:mod:`routerlab.eval.tracking.reader`) both name runs by these, and quote search literals the
same way.
"""

from __future__ import annotations

from routerlab.agents.errors import ConfigError

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

#: ``routerlab.kind`` of the runs ``routerlab route`` logs: one parent per invocation, one child
#: per router. Not ``comparison`` / ``router-run``: those carry example tables that
#: ``load_mlflow`` and the report read, and first decisions are not example results.
KIND_ROUTE_PARENT = "route-comparison"
KIND_ROUTE_RUN = "route-run"
#: a ``routerlab route`` child run's first decisions (the rows ``route --out`` writes)
DECISIONS_CSV = "decisions.csv"


def _check_status(status: str) -> None:
    if status not in FINAL_STATUSES:
        raise ConfigError(
            f"unknown final run status {status!r}",
            expected=", ".join(FINAL_STATUSES),
            found=repr(status),
            fix="FINISHED when every example ran, KILLED when interrupted, FAILED on a crash",
        )


def _quote(value: str) -> str:
    """``value`` as a single-quoted MLflow search literal."""
    if "'" in value:
        raise ConfigError(
            "a run key or tag value contains a single quote",
            expected="ids without quotes",
            found=value,
            fix="use letters, digits, dots, dashes or underscores",
        )
    return f"'{value}'"
