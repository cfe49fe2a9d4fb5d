"""The sections of ``routerlab perf``, registered in the order a full run measures them, and the run.

A new section is a module of this package with its measuring function, and one registration here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from unittest import mock

from routerlab.agents.registry import Registry
from routerlab.perf._common import PerfFigure
from routerlab.perf.alternating_prefixes import alternating_prefixes
from routerlab.perf.concurrency import concurrency_scaling
from routerlab.perf.decode_bound import decode_bound
from routerlab.perf.ex_throughput import ex_throughput
from routerlab.perf.first_decision import first_decision_cost
from routerlab.perf.harness import harness_overhead
from routerlab.perf.model_speed import model_speed
from routerlab.perf.pipeline_split import pipeline_split
from routerlab.perf.router_replay import router_replay
from routerlab.perf.routing_prefix_reuse import routing_prefix_reuse
from routerlab.perf.rules_scaling import rules_scaling
from routerlab.perf.schema_scaling import schema_scaling
from routerlab.perf.sql_candidates import candidate_decoding
from routerlab.perf.sql_decoding import sql_decoding
from routerlab.perf.turns_per_hour import turns_per_hour

__all__ = ["figures_json", "perf_section", "run_perf"]


@dataclass(frozen=True)
class _Sizes:
    """What every section is told: the sizes asked for, the LM and the databases."""

    quick: bool
    lm: str
    databases: Path | None


_Measure = Callable[["_Sizes"], list["PerfFigure"]]


#: the sections of ``routerlab perf`` by name, in the order a full run measures them; a model
#: section is run by ``--model`` or when named with ``--section``
perf_section: Registry[list[PerfFigure]] = Registry("perf section")


def _routing_prefix(z: _Sizes) -> list[PerfFigure]:
    # its cold figure is a prefix evaluated, never one restored from an earlier run's disk state
    with mock.patch.dict(os.environ, {"ROUTERLAB_PREFIX_CACHE": "off"}):
        return routing_prefix_reuse(z.lm, 6 if z.quick else 12)


#: (name, runs the model, measure), in measuring order
_SECTIONS: tuple[tuple[str, bool, _Measure], ...] = (
    ("harness", False, lambda z: harness_overhead(24 if z.quick else 120)),
    ("ex throughput", False, lambda z: ex_throughput(1000, rows=5_000 if z.quick else 20_000)),
    (
        "concurrency",
        False,
        lambda z: concurrency_scaling((1, 4, 16) if z.quick else (1, 2, 4, 8, 16), 32 if z.quick else 64),
    ),
    ("router replay", False, lambda z: router_replay(12 if z.quick else 36)),
    ("rules scaling", False, lambda z: rules_scaling(repeats=1 if z.quick else 3)),
    ("model speed", True, lambda z: model_speed(z.lm, 2 if z.quick else 5)),
    ("alternating prefixes", True, lambda z: alternating_prefixes(z.lm, 2 if z.quick else 3)),
    ("routing prefix reuse", True, _routing_prefix),
    ("first decision", True, lambda z: first_decision_cost(z.lm, z.databases, 2 if z.quick else 3)),
    ("schema scaling", True, lambda z: schema_scaling(z.lm, (5, 15) if z.quick else (5, 15, 40))),
    ("sql decoding", True, lambda z: sql_decoding(z.lm, 3 if z.quick else 6)),
    ("decode bound", True, lambda z: decode_bound(z.lm, 4 if z.quick else 8)),
    (
        "sql candidates",
        True,
        lambda z: candidate_decoding(z.lm, 2 if z.quick else 4, (1, 4) if z.quick else (1, 2, 4, 8)),
    ),
    (
        "turns per hour",
        True,
        lambda z: turns_per_hour(z.lm, z.databases, 4 if z.quick else 12, 2 if z.quick else 3),
    ),
    ("pipeline split", True, lambda z: pipeline_split(z.lm, z.databases, 4 if z.quick else 12)),
)
for _name, _, _measure in _SECTIONS:
    perf_section(_name)(_measure)


def run_perf(
    *,
    quick: bool = False,
    model: bool = False,
    lm: str = "local",
    databases: Path | None = None,
    sections: Sequence[str] = (),
) -> list[PerfFigure]:
    """Run every section (``quick``: smaller sizes; ``model``: also time the embedded model).

    ``databases``: a Spider-layout folder whose databases the first-decision cost is measured on
    (None: generated schemas; see :func:`first_decision_cost`). ``sections``: only these (by name,
    model sections included); every name is checked before anything is measured.

    Raises:
        UnknownComponentError: A section name that does not exist (the known ones listed).
    """
    chosen = [perf_section.get(name) for name in sections]  # a typo is said before any measuring
    if not sections:
        chosen = [perf_section.get(name) for name, needs_model, _ in _SECTIONS if model or not needs_model]
    sizes = _Sizes(quick, lm, databases)
    return [figure for fn in chosen for figure in fn(sizes)]


def figures_json(figures: Sequence[PerfFigure]) -> str:
    """The figures as a JSON document."""
    return json.dumps([asdict(f) for f in figures], indent=2)
