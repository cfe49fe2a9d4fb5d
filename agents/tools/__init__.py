"""Sub-agents as tools, built from plain typed functions ."""

from routerlab.agents.tools.abstain import abstain
from routerlab.agents.tools.base import Tool, tool, tools
from routerlab.agents.tools.context import ToolContext, ToolSettings
from routerlab.agents.tools.programs import SQLPrograms, clean_sql
from routerlab.agents.tools.schema import INJECTED, function_schema, parse_docstring
from routerlab.agents.tools.subagents import (
    SQL_PRODUCERS,
    ask_human,
    chat,
    data_discovery,
    execute_sql_and_analyze_result,
    explain_sql,
    fix_sql,
    generate_sql,
    refuse,
)
from routerlab.agents.tools.text import extract_error, extract_sql

DEFAULT_TOOLS: tuple[Tool, ...] = (
    data_discovery,
    generate_sql,
    fix_sql,
    execute_sql_and_analyze_result,
    explain_sql,
    chat,
    ask_human,
    refuse,
    abstain,
)
"""The sub-agents every router can call, in the order shown to models."""

__all__ = [
    "DEFAULT_TOOLS",
    "INJECTED",
    "SQL_PRODUCERS",
    "SQLPrograms",
    "Tool",
    "ToolContext",
    "ToolSettings",
    "abstain",
    "ask_human",
    "chat",
    "clean_sql",
    "data_discovery",
    "execute_sql_and_analyze_result",
    "explain_sql",
    "extract_error",
    "extract_sql",
    "fix_sql",
    "function_schema",
    "generate_sql",
    "parse_docstring",
    "refuse",
    "tool",
    "tools",
]
