"""The DSPy adapter every routerlab program runs under, and the context that installs it.

DSPy's ChatAdapter asks for ``[[ ## field ## ]]`` headers. Small local models often answer a
single-field signature with just the value (a fenced SQL block, say); the stock adapter then
retries the whole prompt through the JSONAdapter, which doubles the cost of the call (measured
here: 1,699 + 1,696 prompt tokens for one generate_sql on the 0.5B model). For a signature with
one string output, a reply without any header is unambiguous, so it is taken as that field.

For a signature with one ``Literal`` output (an intent, say), a reply that names exactly one of
the allowed values as a word ("= clarify", "intent: sql") is taken as that value; a reply naming
none or several still fails to parse.
"""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from typing import Any, Literal, get_args, get_origin

import dspy
from dspy.adapters.chat_adapter import ChatAdapter
from dspy.utils.exceptions import AdapterParseError

__all__ = ["LenientChatAdapter", "lm_context"]

_COMPLETED = "[[ ## completed ## ]]"


def _single_choice(text: str, choices: tuple[Any, ...]) -> Any | None:
    """The one allowed value ``text`` names as a whole word, or None when it names none or several."""
    named = [c for c in choices if isinstance(c, str) and re.search(rf"(?<![\w-]){re.escape(c)}(?![\w-])", text)]
    return named[0] if len(named) == 1 else None


class LenientChatAdapter(ChatAdapter):
    """ChatAdapter that accepts a header-less reply for one ``str`` output, a named choice for one ``Literal``."""

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
            if len(outputs) != 1:
                raise
            ((name, info),) = outputs.items()
            if get_origin(info.annotation) is Literal:
                body = re.sub(r"\[\[ ## \w+ ## \]\]", " ", completion)
                choice = _single_choice(body, get_args(info.annotation))
                if choice is None:
                    raise
                return {name: choice}
            if info.annotation is not str or "[[ ##" in completion:
                raise
            text = completion.strip()
            if not text:
                raise
            return {name: text}


def lm_context(lm: Any) -> AbstractContextManager[Any]:
    """``dspy.context`` with ``lm`` and the lenient adapter (thread-safe, unlike configure)."""
    return dspy.context(lm=lm, adapter=LenientChatAdapter())
