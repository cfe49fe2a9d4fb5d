"""The DSPy adapter every routerlab program runs under, and the context that installs it.

DSPy's ChatAdapter asks for ``[[ ## field ## ]]`` headers. Small local models often answer a
single-field signature with just the value (a fenced SQL block, say); the stock adapter then
retries the whole prompt through the JSONAdapter, which doubles the cost of the call (measured
here: 1,699 + 1,696 prompt tokens for one generate_sql on the 0.5B model). For a signature with
one string output, a reply without any header is unambiguous, so it is taken as that field.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import dspy
from dspy.adapters.chat_adapter import ChatAdapter
from dspy.utils.exceptions import AdapterParseError

__all__ = ["LenientChatAdapter", "lm_context"]

_COMPLETED = "[[ ## completed ## ]]"


class LenientChatAdapter(ChatAdapter):
    """ChatAdapter that accepts a header-less reply for a single string output field."""

    def __init__(self) -> None:
        super().__init__(use_json_adapter_fallback=False)

    def parse(self, signature: type[dspy.Signature], completion: str) -> dict[str, Any]:
        """Parse as ChatAdapter does; fall back to the whole reply for one str output field."""
        # small models often end the value and the marker on one line ("SELECT 1 [[ ## completed ## ]]");
        # ChatAdapter only recognises headers at the start of a line and would keep it in the value
        completion = completion.replace(_COMPLETED, "\n")
        try:
            return super().parse(signature, completion)
        except AdapterParseError:
            outputs = signature.output_fields
            if len(outputs) != 1 or "[[ ##" in completion:
                raise
            ((name, info),) = outputs.items()
            if info.annotation is not str:
                raise
            text = completion.strip()
            if not text:
                raise
            return {name: text}


def lm_context(lm: Any) -> AbstractContextManager[Any]:
    """``dspy.context`` with ``lm`` and the lenient adapter (thread-safe, unlike configure)."""
    return dspy.context(lm=lm, adapter=LenientChatAdapter())
