"""routerlab: which router should dispatch a text-to-SQL assistant's requests, and at what cost?

The Python API (the same application layer the ``routerlab`` command calls, :mod:`routerlab.app`)::

    import routerlab

    s = routerlab.run(["rules", "llm"], lm="scripted:basic", tracking_uri=None)
    s                   # session id, dataset, routers, n and headline rates, in a dozen lines
    s.rates()           # rates with 95 % CIs, a pandas frame
    routerlab.load(s.session_id).results()   # one row per example result

:func:`run`, :func:`route`, :func:`compare` and :func:`load`, plus the registries a new
component joins: :data:`router`, :data:`scorer` and :data:`dataset` (``routerlab.router.names()``).

One import namespace for the whole toolkit. The layers, each importing only the ones before it:

- ``routerlab.agents``: state and trace types, the Router protocol, sub-agents, the dispatch graph,
  LM backends, read-only databases and the SQL guard (folder ``agents/``);
- ``routerlab.routers``: router strategies behind the ``@router`` registry (``routers/``);
- ``routerlab.benchmarks``: data only: Example, Dataset, the built-in benchmark, every loader
  (``benchmarks/``);
- ``routerlab.eval``: scorers, metrics, statistics, MLflow tracking, the results store (``eval/``);
- the application (this folder, ``routerlab/``): ``app`` (the layer the CLI, the notebook and this
  API call), the CLI, ``ask``, run orchestration (runner, session, config, selection), ``serve``,
  ``sweep``, ``perf``, ``toolscale``, ``fit`` (fitting and optimising) and the demo session.

Importing this package imports nothing heavy: every name above loads its module on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from routerlab._lazy_iri import defer_rfc3987_syntax

# before anything imports jsonschema (through DSPy): its optional IRI checker's parsers are built
# at first use instead of at import, seconds saved in every routerlab process (see the module)
defer_rfc3987_syntax()

__version__ = "0.1.0"

#: public name -> (module, attribute ("": the module itself), modules imported first so the
#: registry is complete)
_LAZY: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "run": ("routerlab.app.run", "run", ()),
    "route": ("routerlab.app.route", "route", ()),
    "compare": ("routerlab.app.compare", "compare", ()),
    "load": ("routerlab.app.loaded", "load", ()),
    "LoadedSession": ("routerlab.app.loaded", "LoadedSession", ()),
    "router": ("routerlab.routers", "router", ()),
    "routers": ("routerlab.routers", "", ()),
    "scorer": ("routerlab.eval.scoring", "scorer", ("routerlab.eval.scorers",)),
    "dataset": (
        "routerlab.benchmarks.dataset",
        "dataset",
        ("routerlab.benchmarks.builtin", "routerlab.benchmarks.loaders"),
    ),
}

__all__ = [
    "LoadedSession",
    "__version__",
    "compare",
    "dataset",
    "load",
    "route",
    "router",
    "routers",
    "run",
    "scorer",
]


def __getattr__(name: str) -> Any:
    """Load a public name's module on first access (PEP 562): ``import routerlab`` stays cheap."""
    if name not in _LAZY:
        raise AttributeError(f"module 'routerlab' has no attribute {name!r}")
    module, attribute, registering = _LAZY[name]
    for first in registering:  # the loaders and scorers register themselves when imported
        importlib.import_module(first)
    loaded = importlib.import_module(module)
    value = getattr(loaded, attribute) if attribute else loaded
    globals()[name] = value  # cached: the next access is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
