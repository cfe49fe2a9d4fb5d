"""The ``blend`` dataset: several datasets' examples in one, divided by database into tune and report parts.

A blend is described by a YAML file (``--dataset blend --dataset-path FILE``)::

    databases:
      rule: sorted-alternate            # how the lists below were made (checked), or omit it
      tune: [battle_death, concert_singer, dog_kennels, tvshow]
      report: [car_1, course_teach, poker_player, voter_1]
    sources:
      - name: cosql                     # prefix of its ids; also each example's ``dataset``
        dataset: cosql                  # any registered loader but blend
        args: {path: ../shared/data/cosql-dev-a}
        part: by-database               # the default: each example goes where its database is
      - name: builtin-train
        dataset: builtin
        take: train                     # keep one split of the source (default: every example)
        part: tune                      # every example to one part, whatever its database

Every example of the **tune** part gets the split ``train`` and every example of the **report**
part the split ``dev``: ``routerlab optimize`` compiles on ``train`` only, so a report database's
turns are never seen by the optimizer and can be reported afterwards (``--split dev``). A
source's ids and conversation ids are prefixed with its ``name`` (``cosql:cosql-dev-0003-t2``),
so sources never collide, and a conversation keeps all its turns (one conversation is on one
database).

Paths inside ``args`` are the loaders' own and are read relative to the current directory, as
in the other configs under ``docs/configs`` (run from the repository root).

Database split rules (:data:`SPLIT_RULES`) are deterministic functions of the database names
alone, so the division is fixed before any example is read:

* ``sorted-alternate``: names sorted, the 1st, 3rd, 5th... to tune, the others to report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from routerlab.agents.errors import ConfigError, DatasetError
from routerlab.benchmarks.dataset import Dataset, dataset
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders._common import data_version, require_file

__all__ = ["PARTS", "SPLIT_RULES", "BlendSource", "DatabaseSplit", "load_blend", "read_blend", "sorted_alternate"]

#: part -> the split its examples get
PARTS: dict[str, str] = {"tune": "train", "report": "dev"}

#: what a source's ``part`` may be: a part, or each example's database deciding
_BY_DATABASE = "by-database"

_LAYOUT = "a YAML file with `databases: {tune: [...], report: [...]}` and `sources: [{name, dataset, args, part}]`"


def sorted_alternate(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(tune, report)``: the names sorted, the 1st, 3rd, 5th... to tune and the others to report."""
    ordered = sorted(set(names))
    return ordered[0::2], ordered[1::2]


SPLIT_RULES: dict[str, Callable[[Sequence[str]], tuple[list[str], list[str]]]] = {
    "sorted-alternate": sorted_alternate,
}
"""Rules that divide database names into (tune, report), by name only."""


class DatabaseSplit:
    """Which part each database belongs to.

    Args:
        tune: Databases whose examples the optimizer may fit and select on.
        report: Databases reported on only.
        rule: The rule the lists were made by (checked against them), or None.
        file: The blend file, for messages.

    Raises:
        ConfigError: A database in both parts, an unknown rule, or lists the rule does not give.
    """

    def __init__(self, tune: Sequence[str], report: Sequence[str], rule: str | None = None, file: str = "") -> None:
        both = sorted(set(tune) & set(report))
        if both:
            raise ConfigError(
                f"{file}: a database is in both parts of the blend",
                expected="each database in databases.tune or databases.report, not both",
                found="in both: " + ", ".join(both),
                fix="remove each of them from one of the two lists",
                details={"file": file, "field": "databases"},
            )
        if rule is not None:
            if rule not in SPLIT_RULES:
                raise ConfigError(
                    f"{file}: unknown database split rule {rule!r}",
                    expected="one of " + ", ".join(SPLIT_RULES),
                    found=repr(rule),
                    fix="write one of those as databases.rule, or leave it out",
                    details={"file": file, "field": "databases.rule"},
                )
            want_tune, want_report = SPLIT_RULES[rule]([*tune, *report])
            if sorted(tune) != want_tune or sorted(report) != want_report:
                raise ConfigError(
                    f"{file}: the database lists do not follow their rule {rule!r}",
                    expected=f"tune {want_tune}, report {want_report}",
                    found=f"tune {sorted(tune)}, report {sorted(report)}",
                    fix="write the lists the rule gives (or change the rule, before any search)",
                    details={"file": file, "field": "databases"},
                )
        self.rule = rule
        self.part = {**dict.fromkeys(tune, "tune"), **dict.fromkeys(report, "report")}

    def of(self, db_id: str) -> str | None:
        """The part of ``db_id``, or None when the split names it nowhere."""
        return self.part.get(db_id)


class BlendSource:
    """One source of a blend: a registered dataset, optionally one of its splits, sent to a part.

    Args:
        name: Prefix of its example and conversation ids.
        dataset: The registered loader.
        args: The loader's arguments.
        take: Keep only this split of the loaded dataset (None: every example).
        part: ``tune``, ``report`` or ``by-database``.
    """

    def __init__(
        self, name: str, dataset: str, args: dict[str, Any], take: str | None = None, part: str = _BY_DATABASE
    ) -> None:
        self.name = name
        self.dataset = dataset
        self.args = args
        self.take = take
        self.part = part


def _require(cond: bool, file: str, field: str, problem: str, *, expected: str, found: Any, fix: str) -> None:
    if not cond:
        raise ConfigError(
            f"{file}: {field}: {problem}",
            expected=expected,
            found=repr(found)[:200],
            fix=fix,
            details={"file": file, "field": field},
        )


def _names(value: Any, file: str, field: str) -> list[str]:
    ok = isinstance(value, list) and all(isinstance(v, str) and v for v in value)
    _require(ok, file, field, "not a list of database names", expected="a list of names", found=value, fix=_LAYOUT)
    return list(value)


def _source(raw: Any, i: int, file: str, seen: set[str]) -> BlendSource:
    field = f"sources[{i}]"
    _require(isinstance(raw, dict), file, field, "not a mapping", expected=_LAYOUT, found=raw, fix="see the layout")
    unknown = sorted(set(raw) - {"name", "dataset", "args", "take", "part"})
    _require(
        not unknown,
        file,
        field,
        "unknown keys",
        expected="name, dataset, args, take, part",
        found=unknown,
        fix="remove or rename them",
    )
    name, loader, args = raw.get("name"), raw.get("dataset"), raw.get("args") or {}
    part, take = raw.get("part", _BY_DATABASE), raw.get("take")
    _require(
        isinstance(name, str) and bool(name) and ":" not in name and name not in seen,
        file,
        f"{field}.name",
        "missing, repeated or containing ':'",
        expected="a unique name per source (the prefix of its ids)",
        found=name,
        fix="give each source its own name",
    )
    _require(
        isinstance(loader, str) and loader in dataset and loader != "blend",
        file,
        f"{field}.dataset",
        "unknown source dataset",
        expected="a registered dataset other than blend: " + ", ".join(n for n in dataset.names() if n != "blend"),
        found=loader,
        fix="name one of those loaders (docs/cli.md lists them)",
    )
    _require(
        isinstance(args, dict),
        file,
        f"{field}.args",
        "not a mapping",
        expected="the loader's arguments",
        found=args,
        fix="write args: {path: ...}",
    )
    choices = (*PARTS, _BY_DATABASE)
    _require(
        part in choices,
        file,
        f"{field}.part",
        "unknown part",
        expected="one of " + ", ".join(choices),
        found=part,
        fix="write part: by-database (or tune / report for a source off the split's databases)",
    )
    _require(
        take is None or take in ("train", "dev", "test"),
        file,
        f"{field}.take",
        "unknown split",
        expected="train, dev or test (or leave it out: every example)",
        found=take,
        fix="write take: train",
    )
    seen.add(name)
    return BlendSource(name, loader, dict(args), take, part)


def read_blend(path: str | Path) -> tuple[DatabaseSplit, list[BlendSource]]:
    """The database split and the sources of a blend file (nothing is loaded yet).

    Raises:
        DatasetError: The file is missing or not YAML.
        ConfigError: A malformed split or source (see :class:`DatabaseSplit` and the layout).
    """
    import routerlab.benchmarks.builtin  # noqa: F401  (registers builtin: a source may name it)

    file = require_file(Path(path), what="blend file", fix=f"pass the blend's YAML file ({_LAYOUT})")
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DatasetError(
            f"{file}: not valid YAML",
            expected=_LAYOUT,
            found=str(exc).splitlines()[0],
            fix="repair the YAML",
            details={"file": str(file)},
        ) from None
    name = str(file)
    _require(isinstance(raw, dict), name, "-", "not a mapping", expected=_LAYOUT, found=raw, fix="see the layout")
    dbs, sources = raw.get("databases") or {}, raw.get("sources")
    _require(isinstance(dbs, dict), name, "databases", "not a mapping", expected=_LAYOUT, found=dbs, fix=_LAYOUT)
    _require(
        isinstance(sources, list) and bool(sources),
        name,
        "sources",
        "no sources",
        expected="a non-empty list of sources",
        found=sources,
        fix=_LAYOUT,
    )
    split = DatabaseSplit(
        _names(dbs.get("tune", []), name, "databases.tune"),
        _names(dbs.get("report", []), name, "databases.report"),
        rule=dbs.get("rule"),
        file=name,
    )
    seen: set[str] = set()
    return split, [_source(s, i, name, seen) for i, s in enumerate(sources)]


def _prefixed(e: Example, source: BlendSource, split: str) -> Example:
    conversation = f"{source.name}:{e.conversation}" if e.conversation else None
    meta = {**e.meta, "source": source.name, "source_id": e.id, "source_split": e.split}
    return replace(
        e, id=f"{source.name}:{e.id}", conversation=conversation, split=split, dataset=source.name, meta=meta
    )


def _place(source: BlendSource, examples: list[Example], dbs: DatabaseSplit, file: str) -> list[Example]:
    """The source's examples with their blend ids and the split of their part."""
    if source.part != _BY_DATABASE:
        return [_prefixed(e, source, PARTS[source.part]) for e in examples]
    unplaced = sorted({e.db_id for e in examples if dbs.of(e.db_id) is None})
    if unplaced:
        raise ConfigError(
            f"{file}: source {source.name!r} has examples on databases the split names nowhere",
            expected="every database of a by-database source in databases.tune or databases.report",
            found=", ".join(unplaced[:10]) + (" ..." if len(unplaced) > 10 else ""),
            fix="add them to one part (by the split's rule), or give the source part: tune / report",
            details={"file": file, "field": "databases"},
        )
    return [_prefixed(e, source, PARTS[str(dbs.of(e.db_id))]) for e in examples]


@dataset("blend")
def load_blend(path: str) -> Dataset:
    """Load every source of the blend file ``path``, each example in the split of its part.

    Args:
        path: The blend's YAML file (layout in the module docstring).

    Returns:
        The dataset named ``blend``: the tune part as ``train``, the report part as ``dev``;
        ``meta`` records the split rule and each part's databases.

    Raises:
        DatasetError: A missing or malformed file, or a source's own data error.
        ConfigError: A database in both parts, an unknown source dataset, a source example on a
            database the split does not name, or any other malformed entry.
    """
    dbs, sources = read_blend(path)
    examples: list[Example] = []
    versions: list[str] = []
    for source in sources:
        loaded = dataset.build(source.dataset, **source.args)
        part = loaded.split(source.take) if source.take else loaded.examples
        examples.extend(_place(source, part, dbs, str(path)))
        versions.append(f"{source.name}={loaded.version}")
    tune = sorted(d for d, p in dbs.part.items() if p == "tune")
    report = sorted(d for d, p in dbs.part.items() if p == "report")
    return Dataset(
        name="blend",
        version=data_version(Path(path)) + "+" + ",".join(versions),
        examples=examples,
        source=str(Path(path).resolve()),
        meta={"rule": dbs.rule or "", "tune": ",".join(tune), "report": ",".join(report)},
    )
