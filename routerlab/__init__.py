"""routerlab: which router should dispatch a text-to-SQL assistant's requests, and at what cost?

One import namespace for the whole toolkit. The layers, each importing only the ones before it:

- ``routerlab.agents``: state and trace types, the Router protocol, sub-agents, the dispatch graph,
  LM backends, read-only databases and the SQL guard (folder ``agents/``);
- ``routerlab.routers``: router strategies behind the ``@router`` registry (``routers/``);
- ``routerlab.benchmarks``: data only: Example, Dataset, the built-in benchmark, every loader
  (``benchmarks/``);
- ``routerlab.eval``: scorers, metrics, statistics, MLflow tracking, the results store (``eval/``);
- the application (this folder, ``routerlab/``): the CLI, ``ask``, run orchestration (runner,
  session, config, selection), ``route``, ``serve``, ``sweep``, ``perf``, ``toolscale``,
  ``fit`` (fitting and optimising) and the demo session.

Importing this package imports nothing heavy; import the layer you need.
"""

from routerlab._lazy_iri import defer_rfc3987_syntax

# before anything imports jsonschema (through DSPy): its optional IRI checker's parsers are built
# at first use instead of at import, seconds saved in every routerlab process (see the module)
defer_rfc3987_syntax()

__version__ = "0.1.0"

__all__ = ["__version__"]
