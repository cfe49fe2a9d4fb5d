"""Run settings from CLI options and an optional YAML/JSON config file.

Precedence: an option given on the command line, then the config file, then ``defaults`` (the
CLI's own defaults), then :class:`~routerlab._runs.runner.RunConfig`'s. Every value read from a file
is checked against the type its setting declares before anything runs, and the error names the
file and the key.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import yaml

import routerlab.eval.scorers  # noqa: F401  (registers the built-in scorers)
from routerlab._runs.runner import RunConfig
from routerlab.agents.errors import ConfigError, UnknownComponentError, not_utf8
from routerlab.agents.faults import FaultSpec, parse_fault_spec
from routerlab.agents.graph import PipelineConfig
from routerlab.agents.tools import ToolSettings
from routerlab.eval.scoring import scorer

__all__ = ["RUN_FIELDS", "check_keys", "check_values", "load_run_config", "read_mapping_file"]

RUN_FIELDS = {f.name for f in fields(RunConfig)}
_PIPE_FIELDS = {f.name for f in fields(PipelineConfig)}
_TOOL_FIELDS = {f.name for f in fields(ToolSettings)}
_FAULT_FIELDS = {f.name for f in fields(FaultSpec)}

#: smallest valid value of numeric pipeline and tool settings (others: >= 0)
_MINIMUM: dict[str, float] = {
    "max_steps": 1,
    "retry_attempts": 1,
    "retry_backoff": 1,
    "max_rows": 1,
    "max_tables": 1,
    "fix_attempts": 1,
    "candidates": 1,
}
#: settings that must be strictly positive (a zero timeout would fail every call)
_POSITIVE: frozenset[str] = frozenset({"timeout_s", "sql_timeout_s"})


def read_mapping_file(path: Path, *, what: str = "config file", keys: str = "split, limit, pipeline") -> dict[str, Any]:
    """Read a YAML or JSON file whose top level is a mapping (run configs, sweep grids).

    Args:
        path: The file.
        what: How messages name it ("config file", "sweep file").
        keys: Example top-level keys, for the message when it is not a mapping.

    Raises:
        ConfigError: Missing, not UTF-8, unparsable or not a mapping, naming the file.
    """
    if not path.is_file():
        raise ConfigError(
            f"{what} not found: {path}",
            expected="a YAML or JSON file",
            found="a directory" if path.exists() else "no such file",
            fix="check the --config path",
            details={"file": str(path), "option": "--config"},
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(
            path, exc, ConfigError, expected="a UTF-8 YAML or JSON file", what=f"{what} {path} is not UTF-8 text"
        ) from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        line, column, problem = _syntax_position(exc)
        at = f" at line {line}, column {column}" if line else ""
        raise ConfigError(
            f"{what} {path} does not parse{at}",
            expected="valid YAML or JSON",
            found=problem,
            fix=f"fix the syntax{at or ' at the reported position'}",
            details={"file": str(path), "line": line, "column": column},
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{what} {path} is not a mapping",
            expected=f"top-level keys such as {keys}",
            found=type(data).__name__,
            fix="write the settings as key: value pairs",
            details={"file": str(path)},
        )
    return data


def _syntax_position(exc: Exception) -> tuple[int | None, int | None, str]:
    """1-based line and column of a YAML or JSON syntax error, and its one-line description."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.lineno, exc.colno, exc.msg
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = " ".join(str(p) for p in (getattr(exc, "context", None), getattr(exc, "problem", None)) if p)
    if mark is None:
        return None, None, problem or str(exc).splitlines()[0]
    return mark.line + 1, mark.column + 1, problem or str(exc).splitlines()[0]


#: keys that belong to another command's file, with the fix that names them where they go
_MISPLACED_KEYS = {
    "routers": "name routers on the command line (--router rules,llm, --router-arg hybrid.threshold=0.7); "
    "a routers: list belongs in a sweep file (routerlab sweep --config)",
    "router": "name routers on the command line: --router rules,llm",
    "router_args": "pass router arguments as --router-arg ROUTER.PARAM=VALUE",
}


def check_keys(where: str, data: Mapping[str, Any], allowed: set[str]) -> None:
    """Refuse keys of ``data`` outside ``allowed``, suggesting the closest allowed one.

    Raises:
        ConfigError: Naming ``where``, the unknown keys and the allowed ones.
    """
    unknown = sorted(map(str, set(data) - allowed))
    if unknown:
        import difflib

        hints = [difflib.get_close_matches(u, sorted(allowed), n=1) for u in unknown]
        fixes = [_MISPLACED_KEYS[u] for u in unknown if u in _MISPLACED_KEYS]
        fixes += [f"{u} -> {h[0]}?" for u, h in zip(unknown, hints, strict=True) if h and u not in _MISPLACED_KEYS]
        raise ConfigError(
            f"unknown setting(s) {unknown} in {where}",
            expected=f"keys among {sorted(allowed)}",
            found=str(unknown),
            fix="; ".join(fixes) or "remove them",
            details={"field": unknown[0]},
        )


def _matches(value: Any, tp: Any) -> bool:
    """Whether a value read from YAML/JSON fits a declared field type (lists stand for tuples)."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, a) for a in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if origin is dict or tp is dict:
        return isinstance(value, dict)
    if origin is tuple:
        args = typing.get_args(tp)
        item = args[0] if args else Any
        return isinstance(value, list | tuple) and all(_matches(v, item) for v in value)
    if is_dataclass(tp):
        return isinstance(value, dict | tp)
    return True


def _type_name(tp: Any) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false", type(None): "null"}
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if typing.get_origin(tp) is tuple:
        item = typing.get_args(tp)[0]
        return "a list of " + {str: "strings", int: "integers", float: "numbers"}.get(item, "values")
    if typing.get_origin(tp) is dict or tp is dict:
        return "a mapping"
    return names.get(tp, getattr(tp, "__name__", str(tp)))


def check_values(where: str, data: Mapping[str, Any], cls: type) -> None:
    """Check each value of ``data`` against ``cls``'s field types and numeric bounds."""
    hints = typing.get_type_hints(cls)
    for key, value in data.items():
        tp = hints[key]
        ok = _matches(value, tp)
        expected = _type_name(tp)
        if ok and isinstance(value, int | float) and not isinstance(value, bool) and cls is not RunConfig:
            low = _MINIMUM.get(key, 0)
            ok = value > 0 if key in _POSITIVE else value >= low
            expected = f"a number {'> 0' if key in _POSITIVE else f'>= {low:g}'}"
        if not ok:
            raise ConfigError(
                f"bad value for {key!r} in {where}",
                expected=expected,
                found=f"{type(value).__name__} {value!r}"[:200],
                fix=f"set {key} to {expected}",
                details={"field": key},
            )


def _faults(value: Any, where: str) -> FaultSpec | None:
    if value is None or isinstance(value, FaultSpec):
        return value
    if isinstance(value, str):
        return parse_fault_spec(value, option=where)
    if isinstance(value, dict):
        check_keys(where, value, _FAULT_FIELDS)
        return FaultSpec(**value)
    raise ConfigError(
        f"bad value for faults in {where}",
        expected='"rate=0.2,seed=7" or a mapping {rate: 0.2, seed: 7, kinds: [lm_error, timeout]}',
        found=f"{type(value).__name__} {value!r}"[:200],
        fix="write faults as a string or a mapping",
        details={"field": "faults"},
    )


def load_run_config(path: Path | None, *, defaults: Mapping[str, Any] | None = None, **cli: Any) -> RunConfig:
    """Merge CLI values over a config file (if any) over ``defaults`` into a :class:`RunConfig`.

    ``dataset_path`` (CLI) becomes ``dataset_args.path`` and ``db_dir`` ``dataset_args.db_dir``;
    ``faults`` may be a ``--faults`` string or, in the file, a mapping. A CLI value of None means
    "not given". The file may hold RunConfig keys plus ``pipeline: {...}`` and
    ``pipeline.tools: {...}``. Scorer names are looked up here, so a typo fails before anything runs.

    Raises:
        ConfigError: A missing or unparsable file, an unknown key or name, or a value of the wrong
            type or out of range, naming the file (or option) and the key.
    """
    data = read_mapping_file(path) if path is not None else {}
    given = {k: v for k, v in cli.items() if v is not None}
    # defaults may be a session recorded by another version: keep the settings this one knows
    known = {k: v for k, v in (defaults or {}).items() if k in RUN_FIELDS}
    try:
        return _build(path, data, known, given)
    except ConfigError as exc:
        field = exc.details.get("field")
        if path is None or str(path) in exc.what or field not in data or field in given:
            raise
        # the bad value came from the file: say which file
        raise ConfigError(
            f"{exc.what} (in config file {path})",
            expected=exc.expected,
            found=exc.found,
            fix=f"{exc.fix} (edit {path.name})",
            details={**exc.details, "file": str(path)},
        ) from None


def _build(path: Path | None, data: dict[str, Any], defaults: dict[str, Any], given: dict[str, Any]) -> RunConfig:
    where = f"config file {path}" if path is not None else "run settings"
    check_keys(where, data, RUN_FIELDS)
    check_values(where, {k: v for k, v in data.items() if k not in ("pipeline", "faults")}, RunConfig)
    dataset_path = given.pop("dataset_path", None)
    db_dir = given.pop("db_dir", None)
    cli_faults = given.pop("faults", None)
    cli_replay = given.pop("replay", None)
    merged = {**defaults, **data, **given}
    if cli_faults is not None:
        merged["faults"] = _faults(cli_faults, "--faults")
    else:
        merged["faults"] = _faults(merged.get("faults"), f"faults ({where})")
    pipe = merged.pop("pipeline", None) or {}
    if not isinstance(pipe, dict):
        check_values(where, {"pipeline": pipe}, RunConfig)
    pipe = dict(pipe)
    check_keys(f"pipeline ({where})", pipe, _PIPE_FIELDS)
    tools = pipe.pop("tools", None) or {}
    if not isinstance(tools, dict):
        check_values(f"pipeline ({where})", {"tools": tools}, PipelineConfig)
    tools = dict(tools)
    check_keys(f"pipeline.tools ({where})", tools, _TOOL_FIELDS)
    check_values(f"pipeline ({where})", pipe, PipelineConfig)
    check_values(f"pipeline.tools ({where})", tools, ToolSettings)
    if cli_replay:
        pipe["replay"] = True
    if "recoverable_errors" in pipe:
        pipe["recoverable_errors"] = tuple(pipe["recoverable_errors"])
    merged["pipeline"] = PipelineConfig(**pipe, tools=ToolSettings(**tools))
    args = dict(merged.get("dataset_args", {}) or {})
    if dataset_path:
        args["path"] = dataset_path
    if db_dir:
        args["db_dir"] = db_dir
    merged["dataset_args"] = args
    if "scorers" in merged:
        merged["scorers"] = tuple(merged["scorers"])
        _check_scorers(where, merged["scorers"])
    return RunConfig(**merged)


def _check_scorers(where: str, names: tuple[str, ...]) -> None:
    for name in names:
        if name not in scorer:
            try:
                scorer.get(name)
            except UnknownComponentError as exc:
                raise UnknownComponentError(
                    f"{exc.what} in {where}",
                    expected=exc.expected,
                    found=exc.found,
                    fix=exc.fix,
                    details={**exc.details, "field": "scorers"},
                ) from None
