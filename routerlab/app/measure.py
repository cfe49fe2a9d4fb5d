"""Measurements: ``perf``'s figures (and their MLflow run), ``toolscale``'s run, schema-linking recall, ``lm check``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from routerlab._runs.config import load_run_config
from routerlab._runs.session import load_dataset, select
from routerlab.agents.lm import resolve_lm
from routerlab.agents.lm.check import format_report, lm_check
from routerlab.benchmarks.loaders.spider import load_spider
from routerlab.eval.metrics import metric_name
from routerlab.linking_recall import link_examples, linking_table
from routerlab.perf import figures_json, perf_section, run_perf
from routerlab.toolscale import parse_sizes, run_toolscale

__all__ = ["check_lm", "linking", "log_perf", "perf", "toolscale"]


def log_perf(
    figures: Sequence[Any], out: Path, tracking_uri: str, *, quick: bool, model: bool, lm: str, databases: Path | None
) -> None:
    """Log ``routerlab perf``'s figures (and their JSON file) as one run of ``routerlab/perf``."""
    import mlflow  # imported here: it costs seconds, and a perf without MLflow never loads it

    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_experiment("routerlab/perf")
    with mlflow.start_run(run_name="perf" + (" --quick" if quick else "")):
        mlflow.log_params({"quick": quick, "model": model, "lm": lm, "databases": str(databases or "")})
        for f in figures:
            mlflow.log_metric(metric_name(f"{f.section}.{f.name}"), float(f.value))
        mlflow.log_artifact(str(out))


def toolscale(
    *,
    sizes: str,
    routers: str,
    dataset: str,
    dataset_path: str | None,
    split: str,
    limit: int,
    lm: str,
    lm_api_base: str | None,
    on_start: Callable[[int], Callable[[Any], None]],
    plot: Path | None = None,
    **settings: Any,
) -> Any:
    """First-decision routing as the toolset grows (``routerlab toolscale``).

    Args:
        sizes: Comma-separated toolset sizes.
        routers: Comma-separated routers.
        dataset: Dataset name.
        dataset_path: Its directory or file.
        split: The split decided.
        limit: At most this many examples; 0: all.
        lm: LM spec.
        lm_api_base: API base URL of an OpenAI-compatible server.
        on_start: Told the number of decisions to come once the model is loaded; returns the
            callback told of each one.
        plot: Where its figure goes (PNG, SVG...; None: no figure).
        **settings: :func:`~routerlab.toolscale.run_toolscale`'s ``k``, ``index``, ``seed``,
            ``max_tokens``, ``tracking_uri`` and ``out``.

    Returns:
        The :func:`~routerlab.toolscale.run_toolscale` result (its ``table``).
    """
    size_list = parse_sizes(sizes)
    names = [n.strip() for n in routers.split(",") if n.strip()]
    config = load_run_config(None, dataset=dataset, dataset_path=dataset_path, split=split, limit=limit or None, lm=lm)
    examples = select(load_dataset(config), config)
    model = resolve_lm(lm, api_base=lm_api_base)
    on_done = on_start(len(examples) * len(size_list) * len(names))
    result = run_toolscale(examples, model, sizes=size_list, routers=names, lm_spec=lm, on_done=on_done, **settings)
    if plot is not None:
        # imported here: matplotlib costs a second at import, and only a figure needs it
        from routerlab.eval.toolscale_plots import plot_toolscale

        plot.parent.mkdir(parents=True, exist_ok=True)
        plot_toolscale(result.table).savefig(plot, dpi=120)
    return result


def perf(
    *,
    quick: bool,
    model: bool,
    lm: str,
    databases: Path | None,
    out: Path,
    tracking_uri: str | None,
    sections: str | Sequence[str] = (),
) -> list[Any]:
    """Measure the harness (``routerlab perf``), write the figures as JSON and log them to MLflow.

    Args:
        quick: Smaller sizes.
        model: Also time the embedded model.
        lm: LM spec for ``model``.
        databases: A Spider-layout folder the first-decision cost is measured on (None: generated schemas).
        out: The JSON file written.
        tracking_uri: The MLflow store, checked before measuring; None: not logged.
        sections: Only these sections (``routerlab.perf.perf_section`` names, or one comma-separated
            string of them); empty: all.

    Returns:
        The figures.

    Raises:
        ConfigError: ``databases`` is not a Spider-layout folder, or ``tracking_uri`` names no
            store this process can write (both said before any measurement).
        UnknownComponentError: A section that does not exist (said before any measurement).
    """
    if isinstance(sections, str):
        sections = [n.strip() for n in sections.split(",") if n.strip()]
    for name in sections:
        perf_section.get(name)

    if databases is not None:
        load_spider(str(databases), limit=1)  # a wrong folder is said now, not after minutes of measuring
    if tracking_uri:
        # imported here: MLflow costs seconds at import, and a perf without MLflow never loads it
        from routerlab.eval.tracking import check_tracking_store, resolve_tracking_uri

        # as run does: a store that cannot take the figures is said before measuring, not after
        tracking_uri = resolve_tracking_uri(tracking_uri)
        check_tracking_store(tracking_uri)
    figures = run_perf(quick=quick, model=model, lm=lm, databases=databases, sections=sections)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(figures_json(figures))
    if tracking_uri:
        log_perf(figures, out, tracking_uri, quick=quick, model=model, lm=lm, databases=databases)
    return figures


def linking(
    *,
    dataset: str,
    dataset_path: str | None,
    split: str,
    limit: int,
    modes: Sequence[str],
    config_file: Path | None,
) -> Any:
    """Schema-linking recall per mode (``routerlab linking``): gold tables and columns inside the linked schema.

    Raises:
        ConfigError: An unknown mode (before any database is opened) or bad dataset settings.
    """
    config = load_run_config(config_file, dataset=dataset, dataset_path=dataset_path, split=split, limit=limit or None)
    examples = select(load_dataset(config), config)
    settings = config.pipeline.tools
    for m in modes:  # an unknown mode is refused before any database is opened
        dataclasses.replace(settings, linking=m)
    return linking_table(link_examples(examples, settings, list(modes)))


def check_lm(lm: str = "local", *, api_base: str | None = None) -> str:
    """Load the LM, make one completion and one tool call: its timings as lines of text (``routerlab lm check``)."""
    return format_report(lm_check(lm, api_base=api_base))
