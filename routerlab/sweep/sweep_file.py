"""The sweep file read and checked: every field up front, each error with what was expected, found and the fix.

The grid it describes is :mod:`routerlab.sweep.grid`'s; the file's format is there.
"""

from __future__ import annotations

import difflib
import inspect
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import routerlab.benchmarks.builtin
import routerlab.benchmarks.loaders  # noqa: F401  (registers the on-disk formats)
from routerlab import routers  # noqa: F401  (registers the routers)
from routerlab._runs.config import RUN_FIELDS, check_keys, check_values, read_mapping_file
from routerlab._runs.runner import RunConfig
from routerlab.agents.errors import ConfigError
from routerlab.agents.lm.assets import MODELS
from routerlab.agents.lm.resolve import SPEC_FORMS
from routerlab.agents.lm.scripts import scripted_script
from routerlab.agents.registry import check_arguments
from routerlab.benchmarks.example import SPLITS
from routerlab.sweep.grid import (
    DEFAULT_EXPERIMENT,
    DEFAULT_LIMIT,
    DEFAULT_SPLIT,
    DatasetEntry,
    LMEntry,
    RayOptions,
    SweepSpec,
    dataset_factory,
    router_factory,
    takes,
)

__all__ = ["load_sweep"]

_TOP_KEYS = {
    "name",
    "experiment",
    "datasets",
    "split",
    "limit",
    "routers",
    "lms",
    "seeds",
    "providers",
    "run",
    "ray",
}
_DATASET_KEYS = {"name", "args", "split", "limit"}
_ROUTER_KEYS = {"name", "args", "grid"}
_LM_KEYS = {"spec", "api_base", "cache"}
_RAY_KEYS = {"num_cpus", "max_retries"}
#: run settings the grid itself sets: in ``run:`` they would silently fight the grid
_GRID_OWNED = {"dataset", "dataset_args", "split", "limit", "lm", "lm_api_base"}


# -- reading and checking ----------------------------------------------------------------------


def _show(value: Any) -> str:
    """A value read from the file, with its type (``str 'one'``, ``int 0``)."""
    return f"{type(value).__name__} {value!r}"


class _Reader:
    """Checks one sweep file; every error names the file and the field."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def error(self, field_path: str, what: str, expected: str, found: Any, fix: str) -> ConfigError:
        shown = found if isinstance(found, str) else _show(found)
        where = f"sweep file {self.path}" + (f", field {field_path}" if field_path else "")
        return ConfigError(
            f"{what} in {where}",
            expected=expected,
            found=shown[:300],
            fix=f"{fix} (edit {self.path.name})",
            details={"file": str(self.path), "field": field_path, "option": "--config"},
        )

    def rewrap(self, field_path: str, exc: ConfigError) -> ConfigError:
        """A registry's or the run-config loader's error, re-addressed to this file and field."""
        return type(exc)(
            f"{exc.what} (in sweep file {self.path}, field {field_path})",
            expected=exc.expected,
            found=exc.found,
            fix=f"{exc.fix} (edit {self.path.name})",
            details={**exc.details, "file": str(self.path), "field": field_path},
        )

    def keys(self, field_path: str, data: Mapping[str, Any], allowed: set[str]) -> None:
        unknown = sorted(map(str, set(data) - allowed))
        if unknown:
            hints = [difflib.get_close_matches(u, sorted(allowed), n=1) for u in unknown]
            fix = "; ".join(f"{u} -> {h[0]}?" for u, h in zip(unknown, hints, strict=True) if h) or "remove them"
            where = f"{field_path}.{unknown[0]}" if field_path else unknown[0]
            raise self.error(where, f"unknown key(s) {unknown}", f"keys among {sorted(allowed)}", str(unknown), fix)

    def mapping(self, field_path: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(field_path, "not a mapping", "key: value pairs", _show(value), "write it as a mapping")
        return value

    def nonempty_list(self, field_path: str, value: Any, example: str) -> list[Any]:
        if value is None:
            raise self.error(field_path, "missing", f"a non-empty list, e.g. {example}", "nothing", f"add {example}")
        if not isinstance(value, list) or not value:
            expected = f"a list, e.g. {example}"
            raise self.error(field_path, "not a non-empty list", expected, _show(value), "list the values")
        return value

    def string(self, field_path: str, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.error(field_path, "not a name", "a non-empty string", _show(value), "write the name as a string")
        return value.strip()

    def split(self, field_path: str, value: Any) -> str:
        if value not in (*SPLITS, "all"):
            expected = f"one of {', '.join(SPLITS)} or all"
            raise self.error(field_path, "unknown split", expected, _show(value), "use train, dev, test or all")
        return value

    def limit(self, field_path: str, value: Any) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            expected = "a non-negative integer (0: every example)"
            raise self.error(field_path, "bad limit", expected, _show(value), "set an integer >= 0")
        return value or None

    def unique(self, field_path: str, items: Sequence[Any], shown: Callable[[Any], str]) -> None:
        seen: set[str] = set()
        for i, item in enumerate(items):
            text = shown(item)
            if text in seen:
                raise self.error(
                    f"{field_path}[{i}]",
                    "given twice",
                    "each entry once (each would be the same runs again)",
                    text,
                    "remove the repetition; use run.attempts to run each example several times",
                )
            seen.add(text)

    def component(
        self, where: str, item: Any, allowed: set[str], lookup: Callable[[str], Callable[..., Any]]
    ) -> tuple[dict[str, Any], str, Callable[..., Any], dict[str, Any]]:
        """A ``datasets``/``routers`` item (a name or ``{name, args, ...}``): entry, name, factory, args."""
        entry = {"name": item} if isinstance(item, str) else self.mapping(where, item)
        self.keys(where, entry, allowed)
        name = self.string(f"{where}.name", entry.get("name"))
        try:
            factory = lookup(name)
        except ConfigError as exc:
            raise self.rewrap(f"{where}.name", exc) from None
        return entry, name, factory, dict(self.mapping(f"{where}.args", entry.get("args") or {}))

    def bind(self, field_path: str, kind: str, name: str, factory: Callable[..., Any], args: Mapping[str, Any]) -> None:
        """Check ``args`` against the constructor without building (a model or index may load)."""
        params = inspect.signature(factory).parameters
        try:
            inspect.signature(factory).bind(**args)
        except TypeError as exc:
            unknown = sorted(set(args) - set(params))
            raise self.error(
                f"{field_path}.{unknown[0]}" if unknown else field_path,
                f"bad arguments for {kind} {name!r} ({exc})",
                f"keyword arguments among {sorted(p for p in params if p != 'self')}",
                str(sorted(args)),
                f"check the {kind}'s documented parameters",
            ) from None
        try:
            # types and declared ranges too: a mistyped value would otherwise crash every example
            check_arguments(kind, name, factory, dict(args))
        except ConfigError as exc:
            raise self.rewrap(f"{field_path}.{exc.details.get('argument', '')}", exc) from None


def _datasets(r: _Reader, data: Mapping[str, Any]) -> tuple[DatasetEntry, ...]:
    split = r.split("split", data.get("split", DEFAULT_SPLIT))
    limit = r.limit("limit", data.get("limit", DEFAULT_LIMIT))
    out = []
    for i, item in enumerate(r.nonempty_list("datasets", data.get("datasets"), "[builtin]")):
        where = f"datasets[{i}]"
        entry, name, factory, args = r.component(where, item, _DATASET_KEYS, dataset_factory)
        r.bind(f"{where}.args", "dataset", name, factory, args)
        out.append(
            DatasetEntry(
                name=name,
                args=dict(args),
                split=r.split(f"{where}.split", entry.get("split", split)),
                limit=r.limit(f"{where}.limit", entry["limit"]) if "limit" in entry else limit,
            )
        )
    r.unique("datasets", out, lambda d: json.dumps(asdict(d), sort_keys=True, default=str))
    return tuple(out)


def _routers(r: _Reader, data: Mapping[str, Any], seeded: bool) -> tuple[tuple[str, dict[str, Any]], ...]:
    out: list[tuple[str, dict[str, Any]]] = []
    for i, item in enumerate(r.nonempty_list("routers", data.get("routers"), "[rules, llm]")):
        where = f"routers[{i}]"
        entry, name, factory, args = r.component(where, item, _ROUTER_KEYS, router_factory)
        grid = r.mapping(f"{where}.grid", entry.get("grid") or {})
        for param, values in grid.items():
            if not isinstance(values, list) or not values:
                raise r.error(
                    f"{where}.grid.{param}",
                    "not a non-empty list",
                    "the values to sweep, e.g. [0.5, 0.7]",
                    _show(values),
                    f"list the values, or move {param} to {where}.args",
                )
            if param in args:
                raise r.error(
                    f"{where}.grid.{param}",
                    "set in both args and grid",
                    "each parameter in one of them",
                    param,
                    f"remove {param} from {where}.args or from {where}.grid",
                )
        if seeded and "seed" in {*args, *grid} and takes(factory, "seed"):
            raise r.error(
                f"{where}.{'grid' if 'seed' in grid else 'args'}.seed",
                "a seed given twice",
                "the seed in seeds: or in the router's arguments",
                "both",
                "remove one of them (seeds: reaches every router that takes a seed)",
            )
        names = list(grid)
        for values in itertools.product(*(grid[n] for n in names)):
            variant = {**args, **dict(zip(names, values, strict=True))}
            r.bind(f"{where}.{'grid' if grid else 'args'}", "router", name, factory, variant)
            out.append((name, variant))
    r.unique("routers", out, lambda v: json.dumps([v[0], v[1]], sort_keys=True, default=str))
    return tuple(out)


def _check_lm_spec(r: _Reader, where: str, spec: str) -> None:
    """The forms :func:`routerlab.agents.lm.resolve_lm` accepts, checked without loading a model."""
    expected = "one of: " + "; ".join(SPEC_FORMS)
    if spec.startswith("scripted:"):
        name = spec.partition(":")[2]
        if name not in scripted_script:
            try:
                scripted_script.get(name)
            except ConfigError as exc:
                raise r.rewrap(where, exc) from None
        return
    if spec == "local" or spec.startswith("local:"):
        target = spec.partition(":")[2] or "1.5b"
        if target in MODELS or target.endswith(".gguf") or "/" in target:
            return
        raise r.error(where, "unknown local model", expected, spec, "use local, local:0.5b or local:/path/model.gguf")
    provider, _, model = spec.partition("/")
    if not provider or not model:
        raise r.error(where, "unknown LM spec", expected, spec, "use a provider-prefixed model: openai/gpt-4o-mini")


def _lms(r: _Reader, data: Mapping[str, Any]) -> tuple[LMEntry, ...]:
    out = []
    for i, item in enumerate(r.nonempty_list("lms", data.get("lms"), "[scripted:basic]")):
        where = f"lms[{i}]"
        entry = {"spec": item} if isinstance(item, str) else r.mapping(where, item)
        r.keys(where, entry, _LM_KEYS)
        spec = r.string(f"{where}.spec", entry.get("spec"))
        _check_lm_spec(r, f"{where}.spec", spec)
        api_base = entry.get("api_base")
        if api_base is not None and not isinstance(api_base, str):
            raise r.error(f"{where}.api_base", "bad value", "a URL string or null", _show(api_base), "quote the URL")
        cache = entry.get("cache", True)
        if not isinstance(cache, bool):
            raise r.error(f"{where}.cache", "bad value", "true or false", _show(cache), "write true or false")
        out.append(LMEntry(spec=spec, api_base=api_base, cache=cache))
    r.unique("lms", out, lambda m: json.dumps(asdict(m), sort_keys=True))
    return tuple(out)


def _seeds(r: _Reader, data: Mapping[str, Any]) -> tuple[int | None, ...]:
    if data.get("seeds") is None:
        return (None,)
    seeds = r.nonempty_list("seeds", data["seeds"], "[0, 1, 2]")
    for i, s in enumerate(seeds):
        if isinstance(s, bool) or not isinstance(s, int):
            raise r.error(f"seeds[{i}]", "not an integer", "integer seeds, e.g. [0, 1, 2]", _show(s), "use integers")
    r.unique("seeds", seeds, str)
    return tuple(seeds)


def _providers(r: _Reader, data: Mapping[str, Any], lms: Sequence[LMEntry]) -> dict[str, int]:
    caps = r.mapping("providers", data.get("providers") or {})
    used = sorted({m.provider for m in lms})
    for provider, cap in caps.items():
        where = f"providers.{provider}"
        if provider not in used:
            close = difflib.get_close_matches(str(provider), used, n=1)
            raise r.error(
                where,
                "no LM of the grid uses this provider",
                f"providers of lms: {used}",
                str(provider),
                f"did you mean {close[0]!r}?" if close else "remove it, or add an LM of that provider",
            )
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            expected = "an integer >= 1 (LM calls in flight)"
            raise r.error(where, "bad cap", expected, _show(cap), "set a positive integer")
    return {str(k): int(v) for k, v in caps.items()}


def _run(r: _Reader, data: Mapping[str, Any]) -> dict[str, Any]:
    # the run-config loader's own checks (types, bounds, pipeline and fault keys), on a mapping

    run = dict(r.mapping("run", data.get("run") or {}))
    owned = sorted(set(run) & _GRID_OWNED)
    if owned:
        raise r.error(
            f"run.{owned[0]}",
            "set by the grid",
            f"run settings other than {sorted(_GRID_OWNED)}",
            str(owned),
            "declare datasets, split, limit and lms at the top level",
        )
    try:
        check_keys("run", run, RUN_FIELDS - _GRID_OWNED)
        check_values("run", {k: v for k, v in run.items() if k not in ("pipeline", "faults")}, RunConfig)
    except ConfigError as exc:
        raise r.rewrap(_run_field(exc), exc) from None
    return run


def _run_field(exc: ConfigError) -> str:
    """The ``run.`` field an error of the run-config loader is about (pipeline keys nest)."""
    section = "run"
    if "pipeline.tools (" in exc.what:
        section = "run.pipeline.tools"
    elif "pipeline (" in exc.what:
        section = "run.pipeline"
    field_name = exc.details.get("field")
    if isinstance(field_name, list | tuple):
        field_name = field_name[0] if field_name else None
    return f"{section}.{field_name}" if field_name and field_name != section.rsplit(".", 1)[-1] else section


def _ray(r: _Reader, data: Mapping[str, Any]) -> RayOptions:
    opts = r.mapping("ray", data.get("ray") or {})
    r.keys("ray", opts, _RAY_KEYS)
    cpus = opts.get("num_cpus", 1.0)
    if isinstance(cpus, bool) or not isinstance(cpus, int | float) or cpus <= 0:
        expected = "a number > 0 (e.g. 0.5 for remote LMs)"
        raise r.error("ray.num_cpus", "bad value", expected, _show(cpus), "set a number > 0")
    retries = opts.get("max_retries", 3)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise r.error("ray.max_retries", "bad value", "an integer >= 0", _show(retries), "set an integer >= 0")
    return RayOptions(num_cpus=float(cpus), max_retries=retries)


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and check a sweep file, and check every cell's run settings.

    Args:
        path: The YAML or JSON file.

    Returns:
        The checked spec; :meth:`SweepSpec.cells` expands it.

    Raises:
        ConfigError: A missing or unparsable file, an unknown key or name, or a value of the wrong
            type, naming the file and the field.
    """
    path = Path(path)
    r = _Reader(path)
    data = read_mapping_file(path, what="sweep file", keys="datasets, routers, lms")
    r.keys("", data, _TOP_KEYS)
    seeds = _seeds(r, data)
    lms = _lms(r, data)
    spec = SweepSpec(
        name=r.string("name", data["name"]) if "name" in data else path.stem,
        datasets=_datasets(r, data),
        routers=_routers(r, data, seeded=seeds != (None,)),
        lms=lms,
        seeds=seeds,
        run=_run(r, data),
        providers=_providers(r, data, lms),
        ray=_ray(r, data),
        experiment=r.string("experiment", data["experiment"]) if "experiment" in data else DEFAULT_EXPERIMENT,
        source=str(path),
    )
    if seeds != (None,):
        for i, ds in enumerate(spec.datasets):
            if "seed" in ds.args and takes(dataset_factory(ds.name), "seed"):
                raise r.error(
                    f"datasets[{i}].args.seed",
                    "a seed given twice",
                    "the seed in seeds: or in the dataset's arguments",
                    "both",
                    "remove one of them (seeds: reaches every loader that takes a seed)",
                )
    # build every cell's run config now: a bad pipeline or fault setting fails before any run
    for cell in spec.cells():
        try:
            cell.run_config()
        except ConfigError as exc:
            raise r.rewrap(_run_field(exc), exc) from None
    return spec
