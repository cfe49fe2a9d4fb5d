"""The shared agent layer: state and trace types, sub-agents, the dispatch graph, LMs and databases.

Subpackages: ``lm`` (LM backends), ``db`` (read-only databases and the SQL guard), ``tools``
(sub-agents as typed functions), ``swarm`` (swarm-style agents for the handoff router), ``nodes``
(the dispatch graph's nodes and a tool call's pieces). Modules: ``graph`` (the LangGraph pipeline,
wiring the nodes), ``routing`` (the Router protocol and RouteDecision), ``plan``
(the canonical next call of an intent), ``state``, ``trace``, ``events``, ``errors``, ``registry``,
``replay`` (stored sub-agent outcomes for router replay), ``paths`` (the cache directory) and
``sqlite_file`` (the SQLite file under the on-disk caches). All under ``routerlab.agents``.
"""

import os

# litellm (under DSPy and MLflow) fetches its model price map from the network at import time and,
# offline, retries from a background thread. That thread's log filter imports a module while
# MLflow's server holds its import-hook lock, and `routerlab ui` deadlocked at start-up (seen
# here). routerlab runs offline by design: use the price map litellm ships.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
