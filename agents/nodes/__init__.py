"""The dispatch graph's nodes, one module each, and the pieces of a tool call.

Nodes (each a ``<name>_node`` function of the :class:`NodeEnv` the pipeline builds and the state):
``direct`` (direct.py), ``route`` (route.py), ``dispatch`` (dispatch.py), ``tools`` (tools.py),
``ask_human`` (ask_human.py), ``respond`` (respond.py); :func:`pick_decider` picks ``direct`` or
``route``. What a node writes is typed in updates.py; the keys it reads are in its docstring.

A tool call's pieces, one job each: replay lookup and store (call_replay.py), running it with its
injected values and cost (call_run.py), error classification (call_errors.py), deadline binding
(call_deadline.py), structured-output validation (call_structured.py) and its record, message,
event and state effects (call_record.py), passing a :class:`CallOutcome` (call_outcome.py) along.
"""

from routerlab.agents.nodes.ask_human import ask_human_node
from routerlab.agents.nodes.call_outcome import CallOutcome
from routerlab.agents.nodes.call_replay import CallReplay
from routerlab.agents.nodes.config import RECOVERABLE_ERRORS, PipelineConfig, config_dict
from routerlab.agents.nodes.decider import pick_decider
from routerlab.agents.nodes.direct import direct_node
from routerlab.agents.nodes.dispatch import CONFIRMATION_KEY, dispatch_node
from routerlab.agents.nodes.env import NodeEnv
from routerlab.agents.nodes.respond import respond_node
from routerlab.agents.nodes.route import route_node
from routerlab.agents.nodes.timing import timed
from routerlab.agents.nodes.tools import tools_node
from routerlab.agents.nodes.transient import is_transient

__all__ = [
    "CONFIRMATION_KEY",
    "RECOVERABLE_ERRORS",
    "CallOutcome",
    "CallReplay",
    "NodeEnv",
    "PipelineConfig",
    "ask_human_node",
    "config_dict",
    "direct_node",
    "dispatch_node",
    "is_transient",
    "pick_decider",
    "respond_node",
    "route_node",
    "timed",
    "tools_node",
]
