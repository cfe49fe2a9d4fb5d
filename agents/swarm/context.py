"""Context variables: the long-lived memory the agents of one swarm run share.

The conversation is an agent's short-term memory; context variables are the rest (the user's
question, a clarification, what an earlier agent found). Tools and instructions receive them by
declaring a parameter of type :data:`Context`.
"""

from __future__ import annotations

from typing import Annotated, Any, get_args, get_origin

from routerlab.agents.tools.schema import INJECTED

__all__ = ["Context", "ContextVariables", "is_context_hint"]


class ContextVariables(dict[str, Any]):
    """A dict of context variables.

    A class of its own so that a tool returning one is read as "update the context", not as a
    plain result.
    """


Context = Annotated[ContextVariables, INJECTED]
"""Annotate a tool or instruction parameter with this to receive the run's context variables.

The ``INJECTED`` marker is what keeps the parameter out of the tool's JSON schema: the schema
comes from :func:`routerlab.agents.tools.schema.function_schema`, the same code the pipeline's tools use.
"""


def _base(hint: Any) -> Any:
    return get_args(hint)[0] if get_origin(hint) is Annotated else hint


def is_context_hint(hint: Any) -> bool:
    """Whether a type hint asks for the context variables (``Context`` or ``ContextVariables``)."""
    base = _base(hint)
    return isinstance(base, type) and issubclass(base, ContextVariables)
