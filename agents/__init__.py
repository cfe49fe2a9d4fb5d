"""The shared agent layer: state and trace types, sub-agents, the dispatch graph, LMs and databases.

Subpackages: ``agents.lm`` (LM backends), ``agents.db`` (read-only databases and the SQL guard),
``agents.tools`` (sub-agents as typed functions), ``agents.swarm`` (swarm-style agents for the
handoff router); modules ``agents.graph`` (the LangGraph pipeline), ``agents.state``,
``agents.trace``, ``agents.events``, ``agents.errors``, ``agents.registry``, ``agents.replay``
(stored sub-agent outcomes for router replay), ``agents.paths`` (the cache directory) and
``agents.sqlite_file`` (the SQLite file under the on-disk caches).
"""

import os

# litellm (under DSPy and MLflow) fetches its model price map from the network at import time and,
# offline, retries from a background thread. That thread's log filter imports a module while
# MLflow's server holds its import-hook lock, and `routerlab ui` deadlocked at start-up (seen
# here). routerlab runs offline by design: use the price map litellm ships.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
