"""The application layer: what ``routerlab``'s commands, the notebook and the Python API call.

One module per job, each a command's door: :mod:`~routerlab.app.defaults` (defaults, in one
place), :mod:`~routerlab.app.run` (a comparison: planned, run, summarised),
:mod:`~routerlab.app.main_job` (``routerlab run`` with no options), :mod:`~routerlab.app.route`
(first decisions only, tracked), :mod:`~routerlab.app.compare` (stored runs compared),
:mod:`~routerlab.app.loaded` (a stored session with a short repr and pandas frames),
:mod:`~routerlab.app.ask` (one request, checked as :mod:`~routerlab.app.ask_request` says, as
the server checks it), :mod:`~routerlab.app.optimize` (the ``dspy`` program compiled or scored as
an MLflow run), :mod:`~routerlab.app.measure` (``perf``, ``toolscale``, ``linking``, ``lm
check``), :mod:`~routerlab.app.sweep`, :mod:`~routerlab.app.serve`, :mod:`~routerlab.app.report`,
:mod:`~routerlab.app.ui` (the MLflow UI and a team's tracking server) and
:mod:`~routerlab.app.demo`. The command line (:mod:`routerlab.cli`) only parses options and
prints what these return; ``import routerlab`` exposes :func:`~routerlab.app.run.run`,
:func:`~routerlab.app.route.route`, :func:`~routerlab.app.compare.compare` and
:func:`~routerlab.app.loaded.load`.

Each module imports what it runs at its top; this package imports none of them until one is
used (``routerlab.app.run`` loads the run machinery on first access, PEP 562), so
``routerlab --help``, which reads only :mod:`~routerlab.app.defaults`, loads no pandas, no
DuckDB and no MLflow. The imports under ``TYPE_CHECKING`` name every module for the type checker
and for the layer test's import graph.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from routerlab.app import (
        ask,
        ask_request,
        compare,
        defaults,
        demo,
        loaded,
        main_job,
        measure,
        optimize,
        report,
        route,
        run,
        serve,
        sweep,
        ui,
    )

#: the modules of the layer, each loaded on first access
__all__ = [
    "ask",
    "ask_request",
    "compare",
    "defaults",
    "demo",
    "loaded",
    "main_job",
    "measure",
    "optimize",
    "report",
    "route",
    "run",
    "serve",
    "sweep",
    "ui",
]


def __getattr__(name: str) -> ModuleType:
    """Import the module ``name`` of the layer on first access (its attribute afterwards)."""
    if name not in __all__:
        raise AttributeError(f"module 'routerlab.app' has no attribute {name!r}")
    return importlib.import_module(f"{__name__}.{name}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
