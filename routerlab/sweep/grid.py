"""The sweep's grid: datasets x LMs x seeds x router variants, and the cells it expands to.

The file is read and every field checked up front in :mod:`routerlab.sweep.sweep_file`.

A sweep file is YAML (or JSON)::

    name: hybrid-thresholds          # optional label (the MLflow parent run's name)
    experiment: routerlab/sweeps     # optional MLflow experiment of the parent and every cell
    datasets:                        # a registry name, or a mapping
      - builtin
      - {name: mixed, args: {base: spider, path: /data/spider}, split: dev, limit: 60}
    split: dev                       # default split of the datasets (default dev)
    limit: 6                         # default limit of the datasets (default 6; 0 = every example)
    routers:
      - rules
      - {name: hybrid, args: {max_steps: 8}, grid: {threshold: [0.5, 0.7, 0.9]}}
    lms:
      - scripted:basic
      - {spec: openai/gpt-4o-mini, api_base: null, cache: true}
    seeds: [0, 1]                    # optional; passed to every component that takes a seed
    providers: {openai: 4}           # optional: LM calls in flight per provider, across all workers
    run: {concurrency: 2, attempts: 1}   # optional: `routerlab run --config` settings for every cell
    ray: {num_cpus: 1, max_retries: 3}   # optional: Ray task options (--executor ray)

It expands into :class:`Cell` s, the cartesian product in the order datasets, LMs, seeds, router
variants. A router's ``grid`` expands too (one variant per combination of its values). A grid
seed goes to the router and the dataset loader when their constructors take a ``seed``, and to
``run.faults``; a cell whose components take none is a plain repeat.

Everything is checked before anything runs: unknown keys, types, registry names, router and
loader arguments (bound against their constructors, without building them), LM spec forms and
every cell's run settings. A bad value raises :class:`~routerlab.agents.errors.ConfigError` naming the file
and the field (``routers[1].grid.threshold``).
"""

from __future__ import annotations

import inspect
import itertools
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import routerlab.benchmarks.builtin
import routerlab.benchmarks.loaders  # noqa: F401  (registers the on-disk formats)
from routerlab import routers  # noqa: F401  (registers the routers)
from routerlab._runs.config import load_run_config
from routerlab._runs.runner import RunConfig
from routerlab.benchmarks.dataset import dataset
from routerlab.routers import router as router_registry

__all__ = [
    "DEFAULT_EXPERIMENT",
    "DEFAULT_LIMIT",
    "DEFAULT_SPLIT",
    "Cell",
    "DatasetEntry",
    "LMEntry",
    "RayOptions",
    "SweepSpec",
    "dataset_factory",
    "lm_provider",
    "router_factory",
    "takes",
]

DEFAULT_EXPERIMENT = "routerlab/sweeps"
#: the defaults of ``routerlab run``: the dev split, a stratified 6-example subset
DEFAULT_SPLIT = "dev"
DEFAULT_LIMIT = 6


def lm_provider(spec: str) -> str:
    """The provider of an ``--lm`` spec: ``openai`` for ``openai/gpt-4o-mini``, ``local``, ``scripted``.

    Concurrency caps (``providers:``) are keyed by it: one API key's rate limit covers every model
    of its provider.
    """
    if spec == "local" or spec.startswith("local:"):
        return "local"
    if spec.startswith("scripted:"):
        return "scripted"
    return spec.split("/", 1)[0]


@dataclass(frozen=True)
class DatasetEntry:
    """One dataset of the grid.

    Attributes:
        name: Dataset registry name.
        args: Loader arguments.
        split: Split replayed.
        limit: At most this many examples (stratified); None for every example.
    """

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    split: str = DEFAULT_SPLIT
    limit: int | None = DEFAULT_LIMIT

    @property
    def load_key(self) -> str:
        """What the loaded dataset depends on: name, arguments, split and limit.

        Split and limit count: a loader that draws while it reads loads only the run's examples
        (``routerlab._runs.session_plan.load_dataset``).
        """
        return json.dumps([self.name, self.args, self.split, self.limit], sort_keys=True, default=str)


@dataclass(frozen=True)
class LMEntry:
    """One LM of the grid.

    Attributes:
        spec: ``--lm`` spec (``local``, ``openai/gpt-4o-mini``, ``scripted:basic``...).
        api_base: API base of an OpenAI-compatible server.
        cache: Use DSPy's response cache (off to measure a provider's latency).
    """

    spec: str
    api_base: str | None = None
    cache: bool = True

    @property
    def provider(self) -> str:
        """See :func:`lm_provider`."""
        return lm_provider(self.spec)


@dataclass(frozen=True)
class RayOptions:
    """Options of the Ray tasks that run the cells.

    Attributes:
        num_cpus: CPUs a cell's task reserves; below 1 packs several I/O-bound cells (remote LMs)
            per core.
        max_retries: Times Ray reruns a cell whose worker process died; the rerun resumes from the
            examples the dead one stored.
    """

    num_cpus: float = 1.0
    max_retries: int = 3


@dataclass(frozen=True)
class Cell:
    """One run of the grid: a router variant on one dataset with one LM and seed.

    Attributes:
        index: Position in the expansion (names the cell: ``c003``).
        dataset: The dataset (with the seed applied to its arguments).
        router: Router registry name.
        router_args: Constructor arguments (with the seed applied).
        lm: The LM.
        seed: The grid seed (None without ``seeds``).
        run: Shared run settings (``run:`` of the file).
        seeded: Which components took the seed (``router``, ``dataset``, ``faults``).
    """

    index: int
    dataset: DatasetEntry
    router: str
    router_args: dict[str, Any]
    lm: LMEntry
    seed: int | None = None
    run: dict[str, Any] = field(default_factory=dict)
    seeded: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """Short stable name within its sweep."""
        return f"c{self.index:03d}"

    @property
    def provider(self) -> str:
        """Provider of the cell's LM (what its concurrency cap is keyed by)."""
        return self.lm.provider

    def session_id(self, sweep_id: str) -> str:
        """The session the runner records the cell under: ``<sweep>.<cell>``."""
        return f"{sweep_id}.{self.key}"

    def run_id(self, sweep_id: str) -> str:
        """The cell's run id in the results store: ``<sweep>.<cell>.<router>``."""
        return f"{self.session_id(sweep_id)}.{self.router}"

    def label(self) -> str:
        """One line for people: router and arguments, LM, dataset/split, seed."""
        args = ", ".join(f"{k}={v}" for k, v in sorted(self.router_args.items()) if k != "seed")
        router = f"{self.router}({args})" if args else self.router
        seed = "" if self.seed is None else f" | seed {self.seed}"
        return f"{router} | {self.lm.spec} | {self.dataset.name}/{self.dataset.split}{seed}"

    def run_config(self) -> RunConfig:
        """The runner's settings for this cell (the grid's values over the shared ``run:`` ones)."""
        config = load_run_config(
            None,
            defaults=self.run,
            dataset=self.dataset.name,
            split=self.dataset.split,
            lm=self.lm.spec,
            lm_api_base=self.lm.api_base,
        )
        # set after loading: load_run_config reads None as "not given" and 0 as "every example"
        config = replace(config, dataset_args=dict(self.dataset.args), limit=self.dataset.limit)
        if "faults" in self.seeded and config.faults is not None and self.seed is not None:
            config = replace(config, faults=replace(config.faults, seed=self.seed))
        return config

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (recorded with the sweep, rebuilt by :meth:`from_dict`)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Cell:
        """Rebuild a cell from :meth:`to_dict`."""
        return cls(
            index=d["index"],
            dataset=DatasetEntry(**d["dataset"]),
            router=d["router"],
            router_args=dict(d["router_args"]),
            lm=LMEntry(**d["lm"]),
            seed=d.get("seed"),
            run=dict(d.get("run") or {}),
            seeded=tuple(d.get("seeded") or ()),
        )


@dataclass(frozen=True)
class SweepSpec:
    """A checked sweep file.

    Attributes:
        name: Label of the sweep.
        experiment: MLflow experiment of the parent run and the cells.
        datasets: The datasets.
        routers: Router variants ``(name, args)`` after expanding each router's ``grid``.
        lms: The LMs.
        seeds: The seeds (``(None,)`` without ``seeds:``).
        run: Shared run settings.
        providers: Concurrency cap per LM provider (LM calls in flight across all workers).
        ray: Ray task options.
        source: The file it was read from.
    """

    name: str
    datasets: tuple[DatasetEntry, ...]
    routers: tuple[tuple[str, dict[str, Any]], ...]
    lms: tuple[LMEntry, ...]
    seeds: tuple[int | None, ...] = (None,)
    run: dict[str, Any] = field(default_factory=dict)
    providers: dict[str, int] = field(default_factory=dict)
    ray: RayOptions = field(default_factory=RayOptions)
    experiment: str = DEFAULT_EXPERIMENT
    source: str = ""

    def cells(self) -> list[Cell]:
        """The grid, expanded: datasets x LMs x seeds x router variants, in that order."""
        cells = []
        combos = itertools.product(self.datasets, self.lms, self.seeds, self.routers)
        for index, (ds, lm, seed, (router, args)) in enumerate(combos):
            seeded: list[str] = []
            router_args, ds_args = dict(args), dict(ds.args)
            if seed is not None:
                if takes(router_factory(router), "seed"):
                    router_args["seed"] = seed
                    seeded.append("router")
                if takes(dataset_factory(ds.name), "seed"):
                    ds_args["seed"] = seed
                    seeded.append("dataset")
                if self.run.get("faults") is not None:
                    seeded.append("faults")
            cells.append(
                Cell(
                    index=index,
                    dataset=replace(ds, args=ds_args),
                    router=router,
                    router_args=router_args,
                    lm=lm,
                    seed=seed,
                    run=dict(self.run),
                    seeded=tuple(seeded),
                )
            )
        return cells

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (what a sweep records, so ``--resume`` needs no file)."""
        d = asdict(self)
        d["routers"] = [{"name": n, "args": a} for n, a in self.routers]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SweepSpec:
        """Rebuild a spec from :meth:`to_dict`."""
        return cls(
            name=d["name"],
            datasets=tuple(DatasetEntry(**x) for x in d["datasets"]),
            routers=tuple((r["name"], dict(r["args"])) for r in d["routers"]),
            lms=tuple(LMEntry(**x) for x in d["lms"]),
            seeds=tuple(d["seeds"]),
            run=dict(d["run"]),
            providers=dict(d["providers"]),
            ray=RayOptions(**d["ray"]),
            experiment=d["experiment"],
            source=d.get("source", ""),
        )

    def same_grid(self, other: SweepSpec) -> bool:
        """Whether two specs expand to the same cells (their sources may differ)."""
        a, b = self.to_dict(), other.to_dict()
        a.pop("source"), b.pop("source")
        return json.loads(json.dumps(a, default=str)) == json.loads(json.dumps(b, default=str))


# -- registries ------------------------------------------------------------------------------


def router_factory(name: str) -> Callable[..., Any]:
    """The registered factory of the router ``name``."""
    return router_registry.get(name)


def dataset_factory(name: str) -> Callable[..., Any]:
    """The registered loader ``name``."""
    return dataset.get(name)


def takes(factory: Callable[..., Any], param: str) -> bool:
    """Whether ``factory`` has a parameter ``param`` (a seed is passed only to what takes one)."""
    return param in inspect.signature(factory).parameters
