"""The application layer: what ``routerlab``'s commands, the notebook and the Python API call.

One module per job: :mod:`~routerlab.app.defaults` (defaults, in one place),
:mod:`~routerlab.app.run` (a comparison: planned, run, summarised),
:mod:`~routerlab.app.route` (first decisions only, tracked), :mod:`~routerlab.app.compare`
(stored runs compared), :mod:`~routerlab.app.loaded` (a stored session with a short repr and
pandas frames) and :mod:`~routerlab.app.optimize` (the ``dspy`` program compiled or scored as an
MLflow run). The command line (:mod:`routerlab.cli`) only parses options and prints what these
return; ``import routerlab`` exposes :func:`run`, :func:`route`, :func:`compare` and :func:`load`.

Importing this package imports nothing heavy: each function imports what it runs when called.
"""

from routerlab.app.compare import compare
from routerlab.app.loaded import LoadedSession, load
from routerlab.app.optimize import evaluate_program, optimize
from routerlab.app.route import RouteOutcome, RouteProgress, route
from routerlab.app.run import SessionSummary, plan_session, run, session_summary

__all__ = [
    "LoadedSession",
    "RouteOutcome",
    "RouteProgress",
    "SessionSummary",
    "compare",
    "evaluate_program",
    "load",
    "optimize",
    "plan_session",
    "route",
    "run",
    "session_summary",
]
