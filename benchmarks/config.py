"""Run settings from CLI options and an optional YAML/JSON config file."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import yaml

from agents.errors import ConfigError
from agents.graph import PipelineConfig
from agents.tools import ToolSettings
from benchmarks.runner import RunConfig

__all__ = ["load_run_config"]

_RUN_FIELDS = {f.name for f in fields(RunConfig)}
_PIPE_FIELDS = {f.name for f in fields(PipelineConfig)}
_TOOL_FIELDS = {f.name for f in fields(ToolSettings)}


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError(
            f"config file not found: {path}",
            expected="a YAML or JSON file",
            found="no such file",
            fix="check the --config path",
        )
    try:
        data = json.loads(path.read_text()) if path.suffix == ".json" else yaml.safe_load(path.read_text())
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(
            f"config file {path} does not parse",
            expected="valid YAML or JSON",
            found=str(exc).splitlines()[0],
            fix="fix the syntax at the reported position",
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"config file {path} is not a mapping",
            expected="top-level keys such as split, limit, pipeline",
            found=type(data).__name__,
            fix="write the settings as key: value pairs",
        )
    return data


def _check_keys(where: str, data: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        import difflib

        hints = [difflib.get_close_matches(u, sorted(allowed), n=1) for u in unknown]
        raise ConfigError(
            f"unknown setting(s) {unknown} in {where}",
            expected=f"keys among {sorted(allowed)}",
            found=str(unknown),
            fix="; ".join(f"{u} -> {h[0]}?" for u, h in zip(unknown, hints, strict=True) if h) or "remove them",
        )


def load_run_config(path: Path | None, **cli: Any) -> RunConfig:
    """Merge a config file (if any) under CLI values into a :class:`RunConfig`.

    ``dataset_path`` (CLI) becomes ``dataset_args.path``. The file may hold RunConfig keys plus
    ``pipeline: {...}`` and ``pipeline.tools: {...}``.
    """
    data = _read(path) if path is not None else {}
    _check_keys(str(path), data, _RUN_FIELDS)
    dataset_path = cli.pop("dataset_path", None)
    merged = {**data, **{k: v for k, v in cli.items() if v is not None}}
    pipe = dict(merged.pop("pipeline", {}) or {})
    _check_keys("pipeline", pipe, _PIPE_FIELDS)
    tools = dict(pipe.pop("tools", {}) or {})
    _check_keys("pipeline.tools", tools, _TOOL_FIELDS)
    if "recoverable_errors" in pipe:
        pipe["recoverable_errors"] = tuple(pipe["recoverable_errors"])
    merged["pipeline"] = PipelineConfig(**pipe, tools=ToolSettings(**tools))
    args = dict(merged.get("dataset_args", {}) or {})
    if dataset_path:
        args["path"] = dataset_path
    merged["dataset_args"] = args
    if "scorers" in merged:
        merged["scorers"] = tuple(merged["scorers"])
    try:
        return RunConfig(**merged)
    except TypeError as exc:
        raise ConfigError(
            "bad run settings", expected="valid RunConfig fields", found=str(exc), fix="check the config file"
        ) from None
