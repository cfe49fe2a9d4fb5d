"""Compiling the ``dspy`` router's program, or scoring a saved one, as an MLflow run.

``routerlab optimize`` runs here: the options are checked before the model loads (the router,
the split, the optimizer's settings, the program's view and checks), then
:func:`~routerlab.fit.optimize.optimize_router` or :func:`~routerlab.fit.optimize.score_program`
runs inside one MLflow run of the experiment ``routerlab/<dataset>/optimize``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from routerlab._runs.config import load_run_config
from routerlab._runs.session import load_dataset
from routerlab.agents.errors import ConfigError
from routerlab.agents.lm import resolve_lm
from routerlab.app.defaults import DEFAULT_TRACKING_URI
from routerlab.fit.optimize import optimize_router, report_json, score_program
from routerlab.fit.optimizers import optimizer as optimizer_registry
from routerlab.routers.dspy_router import check_checks
from routerlab.routers.support.schema_outline import check_view

__all__ = [
    "check_target",
    "evaluate_program",
    "figure_metrics",
    "optimize",
    "parse_optimizer_args",
    "report_json",
]


def parse_optimizer_args(items: Sequence[str], budget: int | None = None) -> dict[str, object]:
    """``PARAM=VALUE`` items (values parsed as JSON when they are), with ``budget`` as ``demos``.

    Raises:
        ConfigError: An item without ``=`` or without a name.
    """
    args: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(
                f"bad --optimizer-arg {item!r}",
                expected="PARAM=VALUE",
                found=item,
                fix="e.g. --optimizer-arg candidates=8",
            )
        try:
            args[key] = json.loads(value)
        except json.JSONDecodeError:
            args[key] = value
    if budget is not None:
        args["demos"] = budget
    return args


def figure_metrics(prefix: str, figures: dict[str, Any]) -> dict[str, float]:
    """MLflow metrics of one set's figures: ``<prefix>_score``, ``_accuracy``, ``_recall_<intent>``, ``_seconds``."""
    out = {f"{prefix}_{k}": float(figures[k]) for k in ("score", "accuracy", "seconds")}
    out.update({f"{prefix}_recall_{k}": float(v) for k, v in figures["recall"].items()})
    if figures.get("uncalibrated"):  # a calibrated program's same calls before its offsets
        out.update(figure_metrics(f"{prefix}_uncalibrated", {"seconds": 0.0, **figures["uncalibrated"]}))
        del out[f"{prefix}_uncalibrated_seconds"]
    return out


def check_target(router: str, split: str) -> None:
    """Refuse any router but ``dspy`` and any split but ``train`` (the only program compiled)."""
    if router != "dspy" or split != "train":
        raise ConfigError(
            "only the dspy router is compiled, on the train split",
            expected="--router dspy --split train",
            found=f"--router {router} --split {split}",
            fix="drop the options or pass those values",
        )


def _dataset(name: str, path: str | None, lm: str, lm_api_base: str | None) -> Any:
    return load_dataset(load_run_config(None, dataset=name, dataset_path=path, lm=lm, lm_api_base=lm_api_base))


def _experiment(tracking_uri: str, dataset_name: str) -> Any:
    import mlflow

    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_experiment(f"routerlab/{dataset_name}/optimize")
    return mlflow


def evaluate_program(
    program: Path,
    *,
    dataset: str = "builtin",
    dataset_path: str | None = None,
    on: str = "dev",
    one_pass: bool = True,
    checks: str = "",
    cache: bool = True,
    lm: str = "local",
    lm_api_base: str | None = None,
    tracking_uri: str = DEFAULT_TRACKING_URI,
    router: str = "dspy",
    split: str = "train",
) -> Any:
    """Score a saved program on ``on`` (dev once, held-out or fit), logged as one MLflow run.

    Returns:
        The program's figures (:class:`~routerlab.fit.optimize.Figures`).
    """
    check_target(router, split)
    ds = _dataset(dataset, dataset_path, lm, lm_api_base)
    check_checks(checks)
    model = resolve_lm(lm, api_base=lm_api_base, cache=cache)
    mlflow = _experiment(tracking_uri, ds.name)
    with mlflow.start_run(run_name=f"evaluate-dspy-{on}"):
        mlflow.log_params({"program": str(program), "on": on, "lm": lm, "dataset": ds.name, "one_pass": one_pass})
        figures = score_program(program, ds, model, on=on, one_pass=one_pass)
        mlflow.log_metrics(figure_metrics(on, asdict(figures)))
    return figures


def _params(report: Any, optimizer: str, seed: int, lm: str, ds: Any, settings: dict[str, Any]) -> dict[str, Any]:
    """The compile run's MLflow params: the optimizer's settings, the division, the program's file."""
    return {
        "optimizer": optimizer,
        **{f"optimizer.{k}": v for k, v in report.optimizer_args.items()},
        "seed": seed,
        "lm": lm,
        "dataset": ds.name,
        "one_pass": settings["one_pass"],
        "schema": settings["schema"],
        "checks": ",".join(settings["checks"]),
        **{f"calibration.{k}": round(v, 4) for k, v in report.calibration.items()},
        # the affine map's matrix is in the program and its .meta.json; its kind is a param
        **{k: v for k, v in report.optimizer_notes.items() if k in ("calibration_map", "instructions")},
        "heldout_fraction": report.heldout_fraction,
        "safety": settings["safety"],
        "fit_size": report.fit_size,
        "heldout_size": report.heldout_size,
        "program_file": report.program_file,
    }


def _metrics(report: Any) -> dict[str, float]:
    """The compile run's MLflow metrics: timings, the optimizer's numeric notes, each set's figures."""
    metrics = {"compile_seconds": report.compile_seconds, "seconds": report.seconds, "demos": report.demos}
    metrics.update({k: float(v) for k, v in report.optimizer_notes.items() if isinstance(v, int | float)})
    for name in ("zero_shot_heldout", "fit", "heldout"):
        if getattr(report, name) is not None:
            metrics.update(figure_metrics(name, asdict(getattr(report, name))))
    return metrics


def optimize(
    *,
    optimizer: str = "bootstrap",
    optimizer_args: dict[str, object] | None = None,
    dataset: str = "builtin",
    dataset_path: str | None = None,
    seed: int = 0,
    checks: str = "",
    cache: bool = True,
    lm: str = "local",
    lm_api_base: str | None = None,
    tracking_uri: str = DEFAULT_TRACKING_URI,
    router: str = "dspy",
    split: str = "train",
    **settings: Any,
) -> Any:
    """Compile the ``dspy`` router's program on train (fit / held-out), logged as one MLflow run.

    Args:
        optimizer: A name in :data:`routerlab.fit.optimizers.optimizer`.
        optimizer_args: Its settings (``demos``, ``candidates``...).
        dataset: Dataset name.
        dataset_path: Its directory or file (on-disk formats).
        seed: The fit / held-out division and fit order; the optimizer's seed.
        checks: Comma-separated checks whose findings the program reads as evidence.
        cache: DSPy's response cache for generated calls.
        lm: LM spec.
        lm_api_base: API base URL of an OpenAI-compatible server.
        tracking_uri: The MLflow store.
        router: Only ``dspy`` has a program to compile.
        split: Only ``train`` is compiled on.
        **settings: :func:`~routerlab.fit.optimize.optimize_router`'s other settings:
            ``heldout_fraction``, ``safety``, ``one_pass``, ``schema``, ``train_limit``, ``out``,
            ``zero_shot``, ``score_fit``.

    Returns:
        The compile's report (:class:`~routerlab.fit.optimize.OptimizeReport`).

    Raises:
        ConfigError: Bad settings, before the model loads.
    """
    check_target(router, split)
    args = dict(optimizer_args or {})
    ds = _dataset(dataset, dataset_path, lm, lm_api_base)
    optimizer_registry.build(optimizer, **{"seed": seed, **args})  # bad settings exit 2 before the model loads
    settings = {"one_pass": True, "schema": "tables", "safety": 2.0, **settings}
    check_view("dspy", settings["schema"])
    settings["checks"] = check_checks(checks)
    model = resolve_lm(lm, api_base=lm_api_base, cache=cache)
    mlflow = _experiment(tracking_uri, ds.name)
    mlflow.dspy.autolog(log_compiles=True, log_evals=False, log_traces=False)
    with mlflow.start_run(run_name=f"optimize-dspy-{optimizer}"):
        report = optimize_router(ds, model, lm_spec=lm, optimizer=optimizer, optimizer_args=args, seed=seed, **settings)
        mlflow.log_params(_params(report, optimizer, seed, lm, ds, settings))
        mlflow.log_metrics(_metrics(report))
    return report
