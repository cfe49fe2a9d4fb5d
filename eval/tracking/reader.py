"""Reading runs and per-example tables back from an MLflow store (the notebook's and compare's input)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

from routerlab.agents.errors import ConfigError
from routerlab.eval.tracking.client import store_client
from routerlab.eval.tracking.layout import (
    EXAMPLES_TABLE,
    search_literal,
)

__all__ = ["load_examples", "load_runs"]


def _ms(value: int | None) -> pd.Timestamp | None:
    return None if value is None else pd.Timestamp(value, unit="ms", tz="UTC")


def load_runs(
    tracking_uri: str | None = None,
    experiment: str | None = None,
    run_ids: Sequence[str] | None = None,
    tags: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Runs as a frame: one row per run with ``params.*``, ``metrics.*`` and ``tags.*`` columns.

    Args:
        tracking_uri: The store (default as :func:`~routerlab.eval.tracking.address.resolve_tracking_uri`).
        experiment: Only this experiment (e.g. ``routerlab/builtin``); default: every one.
        run_ids: Only these runs.
        tags: Only runs with these tag values (e.g. ``{"routerlab.kind": "router-run"}``).

    Raises:
        ConfigError: For an unknown experiment.
    """
    client = store_client(tracking_uri)
    if experiment is not None:
        exp = client.get_experiment_by_name(experiment)
        if exp is None:
            known = [e.name for e in client.search_experiments()]
            raise ConfigError(
                f"no MLflow experiment {experiment!r}",
                expected=f"one of {known}",
                found=experiment,
                fix="check the name (routerlab/<dataset>) and --tracking-uri",
            )
        experiment_ids = [exp.experiment_id]
    else:
        experiment_ids = [e.experiment_id for e in client.search_experiments()]
    clauses = [f"tags.`{k}` = {search_literal(v)}" for k, v in (tags or {}).items()]
    if run_ids:
        clauses.append(f"attributes.run_id IN ({', '.join(search_literal(r) for r in run_ids)})")
    runs: list[Any] = []
    token = None
    while experiment_ids:
        page = client.search_runs(
            experiment_ids,
            filter_string=" and ".join(clauses),
            page_token=token,
            order_by=["attributes.start_time ASC"],
        )
        runs.extend(page)
        token = page.token
        if not token:
            break
    rows = []
    for run in runs:
        info, data = run.info, run.data
        row: dict[str, Any] = {
            "run_id": info.run_id,
            "run_name": info.run_name,
            "experiment_id": info.experiment_id,
            "status": info.status,
            "start_time": _ms(info.start_time),
            "end_time": _ms(info.end_time),
            "parent_run_id": data.tags.get(MLFLOW_PARENT_RUN_ID),
        }
        row |= {f"params.{k}": v for k, v in data.params.items()}
        row |= {f"metrics.{k}": v for k, v in data.metrics.items()}
        row |= {f"tags.{k}": v for k, v in data.tags.items()}
        rows.append(row)
    return pd.DataFrame(rows)


def load_examples(run_id: str, tracking_uri: str | None = None) -> pd.DataFrame:
    """The per-example table logged by :meth:`MlflowSink.finish_run`.

    Raises:
        ConfigError: When the run has no table (it was never finished).
    """
    # MlflowClient.load_table searches runs through the process-wide tracking URI, not the
    # client's, so the artifact is read directly.
    client = store_client(tracking_uri)
    if not any(f.path == EXAMPLES_TABLE for f in client.list_artifacts(run_id)):
        raise ConfigError(
            f"MLflow run {run_id} has no {EXAMPLES_TABLE}",
            expected="a run closed by MlflowSink.finish_run",
            found="no table artifact",
            fix="finish (or resume and finish) the run first",
        )
    with tempfile.TemporaryDirectory() as tmp:
        path = client.download_artifacts(run_id, EXAMPLES_TABLE, dst_path=tmp)
        return pd.read_json(path, orient="split")
