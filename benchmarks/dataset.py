"""Datasets: a named, versioned list of examples, and the ``@dataset`` registry of loaders."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from routerlab.agents.errors import ConfigError
from routerlab.agents.registry import Registry
from routerlab.benchmarks.example import SPLITS, Example

__all__ = [
    "Dataset",
    "Draw",
    "LayoutCheck",
    "check_split",
    "dataset",
    "draws",
    "draws_while_reading",
    "layout_loaders",
    "loaders_for",
    "recognizes",
]


def check_split(name: str | None) -> str | None:
    """Return ``name`` if it names a split (``None`` or ``"all"``: every example).

    Raises:
        ConfigError: Naming the splits there are.
    """
    if name not in (None, "all", *SPLITS):
        raise ConfigError(
            f"unknown split {name!r}",
            expected=f"one of {', '.join(SPLITS)} or all",
            found=repr(name),
            fix="pass --split train, dev, test or all",
        )
    return name


@dataclass(frozen=True)
class Draw:
    """A run's examples: one split, some intents, at most ``limit`` stratified by intent.

    A run takes it from the loaded examples (``routerlab._runs.session_plan.select``: the split,
    then :func:`~routerlab.benchmarks.selection.of_intents`, then
    :func:`~routerlab.benchmarks.selection.stratified_subset`); a loader marked :func:`draws` takes
    it while it reads (``draw=``), holding only the candidates, so a 1,000,000-record file with
    ``--limit 5`` builds 5 examples, not a million. Both give the same examples.

    Attributes:
        limit: At most this many examples (a conversation is taken whole).
        split: The split (None or ``"all"``: every example).
        intents: The gold intents kept (None: all).
        seed: Orders the databases conversations are drawn from.
    """

    limit: int
    split: str | None = None
    intents: tuple[str, ...] | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise ConfigError(
                f"invalid draw limit {self.limit!r}",
                expected="a positive number of examples",
                found=repr(self.limit),
                fix="pass --limit N with N >= 1 (0: every example, no draw)",
            )
        check_split(self.split)
        if self.intents is not None:
            # a recorded draw comes back from JSON with a list
            object.__setattr__(self, "intents", tuple(self.intents))

    @classmethod
    def of(cls, value: Draw | dict[str, Any]) -> Draw:
        """``value`` itself, or the draw its recorded form (a dict) describes."""
        return value if isinstance(value, Draw) else cls(**value)


@dataclass
class Dataset:
    """A loaded dataset.

    Attributes:
        name: Registry name of the loader that produced it.
        version: Version string of the source (file date, release tag, package version).
        examples: All examples, every split.
        source: Where it was loaded from (a path, or "builtin").
    """

    name: str
    version: str
    examples: list[Example]
    source: str = ""
    meta: dict[str, str] = field(default_factory=dict)
    #: the draw the loader took while reading (None: every example of the source)
    drawn: Draw | None = None

    def split(self, name: str | None) -> list[Example]:
        """Examples of one split (``None`` or ``"all"``: every example)."""
        if check_split(name) in (None, "all"):
            return list(self.examples)
        return [e for e in self.examples if e.split == name]

    def digest(self) -> str:
        """SHA-256 over the examples' content: changes whenever any example changes."""
        h = hashlib.sha256()
        for e in self.examples:
            d = e.to_dict()
            d.pop("meta", None)
            d.pop("db_path", None)  # the same dataset on another disk hashes the same
            if d.get("conversation") is None:
                # single requests hash as they did before conversations existed
                d.pop("conversation", None)
                d.pop("turn", None)
                d.pop("turns", None)
            h.update(json.dumps(d, sort_keys=True, default=str).encode())
        return h.hexdigest()


dataset: Registry[Dataset] = Registry("dataset", returns=Dataset)
"""Registry of loaders: ``@dataset("spider") def load_spider(path: str, ...) -> Dataset``."""


LayoutCheck = Callable[[Path], bool]
"""``path -> bool``: whether a file or directory has the layout a loader reads (no parsing)."""

#: attribute under which a loader keeps its :data:`LayoutCheck`
_LAYOUT_ATTR = "recognizes"

_F = TypeVar("_F", bound=Callable[..., Any])


def recognizes(check: LayoutCheck) -> Callable[[_F], _F]:
    """Declare how a loader's on-disk layout looks, so a path alone can name its loader.

    Used under ``@dataset``: ``@dataset("spider") @recognizes(is_spider_dir) def load_spider``.
    The check only looks at names on disk (files, folders, suffixes); it reads no records.
    """

    def mark(loader: _F) -> _F:
        setattr(loader, _LAYOUT_ATTR, check)
        return loader

    return mark


#: attribute set on a loader that takes ``draw=`` (:func:`draws`)
_DRAWS_ATTR = "draws"


def draws(loader: _F) -> _F:
    """Declare that a loader takes ``draw: Draw | None`` and then returns only that draw's examples.

    Used under ``@dataset``, like :func:`recognizes`. The loader reads its source once and
    builds only the drawn examples; the returned :class:`Dataset` has ``drawn`` set.
    """
    setattr(loader, _DRAWS_ATTR, True)
    return loader


def draws_while_reading(name: str) -> bool:
    """Whether the registered loader ``name`` takes a draw (:func:`draws`)."""
    return bool(getattr(dataset.get(name), _DRAWS_ATTR, False))


def layout_loaders() -> dict[str, LayoutCheck]:
    """Registered loaders that declared their layout (:func:`recognizes`), by name, sorted."""
    checks = {name: getattr(dataset.get(name), _LAYOUT_ATTR, None) for name in dataset.names()}
    return {name: check for name, check in checks.items() if check is not None}


def loaders_for(path: str | Path) -> list[str]:
    """Registered loaders whose layout ``path`` has, sorted (empty for a path none recognises).

    Only loaders registered so far are asked: import :mod:`routerlab.benchmarks.loaders` first.
    """
    target = Path(path)
    return [name for name, check in layout_loaders().items() if check(target)]
