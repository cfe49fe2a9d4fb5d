"""The canonical tool chain of each intent, shared by every dataset and loader."""

from __future__ import annotations

__all__ = ["CHAINS", "chain_for"]

#: tool names in the order the dispatch pipeline calls them for a request of each intent
CHAINS: dict[str, tuple[str, ...]] = {
    "sql": ("data_discovery", "generate_sql", "execute_sql_and_analyze_result"),
    "explain": ("explain_sql",),
    "fix": ("fix_sql", "execute_sql_and_analyze_result"),
    "chat": ("chat",),
    "clarify": ("ask_human", "data_discovery", "generate_sql", "execute_sql_and_analyze_result"),
    "refuse": ("refuse",),
}


def chain_for(intent: str) -> tuple[str, ...]:
    """The canonical chain of ``intent`` (``KeyError`` for an unknown intent)."""
    return CHAINS[intent]
