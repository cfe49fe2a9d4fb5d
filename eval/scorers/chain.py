"""Tool-chain scorers: structural validity, trajectory match, node/edge F1.

Validity rules (stable ids; checked in this order and the first violated one is reported):
``invalid_tool_call`` (the LM emitted a call that could not be parsed or validated),
``no_outcome`` (no call and no answer), ``step_budget``, ``missing_id``, ``duplicate_id``, then per
call in order ``after_terminal``, ``unknown_tool``, ``invalid_args``, ``self_ref``,
``dangling_ref``, ``forward_ref``, ``ref_kind``, ``fix_without_error``, ``execute_without_sql``,
then ``result_count``, and last the turn's own error (:data:`TURN_ERROR_RULES`): a turn that ended
in error is never a valid chain, whatever apology the pipeline answered with. A reference may only
cite an earlier call, so a cycle other than a self-reference shows up as ``forward_ref`` (the
message names the chain).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import jsonschema

from routerlab.agents.trace import Trace
from routerlab.benchmarks.example import Example
from routerlab.eval.scoring import Score, Scorer, scorer

__all__ = [
    "TURN_ERROR_RULES",
    "ChainF1",
    "ChainValidity",
    "Trajectory",
    "f1",
    "trajectory_modes",
    "turn_error_rule",
    "validate_chain",
]

#: rule id reported for a turn that ended in error, by the trace's ``error_class``; an exception
#: that escaped the pipeline (``crash:<type>``) is ``crash`` and any other class (a tool error the
#: router gave up on, a guard violation...) is ``turn_error``
TURN_ERROR_RULES: Mapping[str, str] = {
    "step_limit": "step_limit",
    "timeout": "deadline",
    "invalid_tool_call": "invalid_tool_call",
    "unknown_tool": "unknown_tool",
    "no_decision": "no_decision",
    "internal_error": "router_error",
    "router_error": "router_error",
}


def _default_catalog() -> Mapping[str, Any]:
    # imported here: the tools package pulls in DSPy, which scoring does not need otherwise
    from routerlab.agents.tools import DEFAULT_TOOLS

    return {t.name: t for t in DEFAULT_TOOLS}


def _refs(call: Mapping[str, Any], tool: Any) -> list[tuple[str, str]]:
    return [(p, call.get("args", {}).get(p)) for p in getattr(tool, "refs", {}) if call.get("args", {}).get(p)]


def turn_error_rule(trace: Trace) -> tuple[str | None, str]:
    """The rule a turn that ended in error breaks, or ``(None, "")`` when it did not."""
    if not (trace.error or trace.error_class):
        return None, ""
    cls = trace.error_class or "internal_error"
    # the runner names an exception that escaped the pipeline (a router or tool that raised)
    # ``crash:<ExceptionType>``
    rule = "crash" if cls.startswith("crash:") else TURN_ERROR_RULES.get(cls, "turn_error")
    return rule, f"the turn ended in error ({cls}): {trace.error or cls}"


def validate_chain(trace: Trace, catalog: Mapping[str, Any], max_steps: int) -> tuple[str | None, str]:
    """Return ``(rule, message)`` of the first violated rule, or ``(None, "valid")``.

    A turn that ended in error (step limit, invalid or unknown tool call, router error, deadline,
    a failed tool the router gave up on) is invalid even when every recorded call is well formed:
    the pipeline's apology answer is not an outcome.
    """
    calls = trace.tool_calls
    bad = trace.invalid_tool_calls
    if bad:
        first = bad[0]
        return "invalid_tool_call", f"the LM emitted an invalid call to {first.get('name')!r}: {first.get('error')}"
    if not calls:
        rule, message = turn_error_rule(trace)
        if rule is not None:
            return rule, message
        return (None, "valid") if trace.answer else ("no_outcome", "no call and no final answer")
    if len(calls) > max_steps:
        return "step_budget", f"{len(calls)} calls exceed the budget of {max_steps}"
    seen: dict[str, int] = {}
    for i, c in enumerate(calls):
        cid = c.get("id")
        if not cid:
            return "missing_id", f"call {i} ({c.get('name')}) has no id"
        if cid in seen:
            return "duplicate_id", f"id {cid} is used twice"
        seen[cid] = i
    terminal_done = False
    for i, c in enumerate(calls):
        name = c.get("name", "")
        if terminal_done:
            return "after_terminal", f"{name} was called after the turn had ended"
        tool = catalog.get(name)
        if tool is None:
            return "unknown_tool", f"call {i} uses unknown tool {name!r}"
        errors = list(jsonschema.Draft202012Validator(tool.parameters).iter_errors(c.get("args", {})))
        if errors:
            return "invalid_args", f"{name}: {errors[0].message}"
        for param, ref in _refs(c, tool):
            if ref == c["id"]:
                return "self_ref", f"{name}.{param} cites its own call: circle detected ({ref} -> {ref})"
            if ref not in seen:
                return "dangling_ref", f"{name}.{param} cites unknown call {ref}"
            if seen[ref] > i:
                return "forward_ref", f"{name}.{param} cites a later call {ref}"
            cited = calls[seen[ref]]
            if cited.get("name") not in tool.refs[param]:
                return (
                    "ref_kind",
                    f"{name}.{param} cites a {cited.get('name')} call; allowed: {tool.refs[param]}",
                )
            if name == "fix_sql" and cited.get("status") != "error":
                return "fix_without_error", f"fix_sql cites {ref}, which did not fail"
            if name == "execute_sql_and_analyze_result" and cited.get("status") != "success":
                return "execute_without_sql", f"execute cites {ref}, which produced no SQL"
        if name == "execute_sql_and_analyze_result" and not _refs(c, tool):
            return "execute_without_sql", "execute cites no SQL-producing call"
        status = c.get("status")
        if (getattr(tool, "terminal", False) and status == "success") or (
            getattr(tool, "interrupts", False) and not trace.turns > 1
        ):
            terminal_done = True
    # every call id gets exactly one tool-result message with that id and a status
    results = Counter(m.get("tool_call_id") for m in trace.messages if m.get("role") == "tool")
    # when the turn ended in error, a call the pipeline never ran (still ``pending``, or
    # ``rejected``) has no result; the turn's error below is what broke the chain
    ended_in_error = bool(trace.error or trace.error_class)
    for c in calls:
        if ended_in_error and c.get("status") not in ("success", "error"):
            continue
        n = results.get(c["id"], 0)
        if n != 1:
            return "result_count", f"call {c['id']} ({c.get('name')}) has {n} result messages"
    odd = [m for m in trace.messages if m.get("role") == "tool" and m.get("status") not in ("success", "error")]
    if odd:
        return "result_count", f"a tool result has no status ({odd[0].get('tool_call_id')})"
    rule, message = turn_error_rule(trace)
    if rule is not None:
        return rule, message
    return None, "valid"


@scorer("chain_valid")
class ChainValidity(Scorer):
    """1 when the recorded tool chain breaks no structural rule; the reason names the first broken one.

    Args:
        max_steps: Call budget of a turn.
    """

    def __init__(self, max_steps: int = 8) -> None:
        self.max_steps = max_steps
        self._catalog: Mapping[str, Any] | None = None

    def score(self, example: Example, trace: Trace) -> Score:
        """Validity of ``trace.tool_calls``."""
        if self._catalog is None:
            self._catalog = _default_catalog()
        rule, message = validate_chain(trace, self._catalog, self.max_steps)
        return Score(self.name, 1.0 if rule is None else 0.0, message, {"rule": rule})


def trajectory_modes(called: list[str], expected: list[str]) -> dict[str, bool]:
    """The four trajectory matches researchers use."""
    return {
        "strict": called == expected,
        "unordered": Counter(called) == Counter(expected),
        "subset": set(called) <= set(expected),
        "superset": set(expected) <= set(called),
    }


@scorer("trajectory")
class Trajectory(Scorer):
    """Strict match of called tool names with the expected chain; all four modes in ``detail``."""

    def score(self, example: Example, trace: Trace) -> Score:
        """Compare ``trace.tool_names`` with ``example.expected_chain``."""
        if not example.expected_chain:
            return Score(self.name, None, "no expected chain")
        modes = trajectory_modes(trace.tool_names, list(example.expected_chain))
        return Score(self.name, 1.0 if modes["strict"] else 0.0, "strict" if modes["strict"] else "differs", modes)


def f1(pred: Counter, gold: Counter) -> float:
    """Multiset F1; 1.0 when both are empty."""
    if not pred and not gold:
        return 1.0
    tp = sum((pred & gold).values())
    if tp == 0:
        return 0.0
    p, r = tp / sum(pred.values()), tp / sum(gold.values())
    return 2 * p * r / (p + r)


def _expected_edges(chain: list[str], catalog: Mapping[str, Any]) -> Counter:
    edges: Counter = Counter()
    for i, name in enumerate(chain):
        tool = catalog.get(name)
        for allowed in getattr(tool, "refs", {}).values():
            # the nearest earlier call of an allowed kind is the one the canonical plan cites
            src = next((chain[j] for j in range(i - 1, -1, -1) if chain[j] in allowed), None)
            if src is not None:
                edges[(src, name)] += 1
    return edges


@scorer("chain_f1")
class ChainF1(Scorer):
    """Node F1 (tool-name multisets) as the value; edge F1 (cited -> citing tool names) in detail."""

    def __init__(self) -> None:
        self._catalog: Mapping[str, Any] | None = None

    def score(self, example: Example, trace: Trace) -> Score:
        """F1 of the call graph against the expected chain."""
        if not example.expected_chain:
            return Score(self.name, None, "no expected chain")
        if self._catalog is None:
            self._catalog = _default_catalog()
        by_id = {c["id"]: c["name"] for c in trace.tool_calls if c.get("id")}
        pred_edges = Counter((by_id[c["parent"]], c["name"]) for c in trace.tool_calls if c.get("parent") in by_id)
        node = f1(Counter(trace.tool_names), Counter(example.expected_chain))
        edge = f1(pred_edges, _expected_edges(list(example.expected_chain), self._catalog))
        return Score(self.name, node, f"node F1 {node:.2f}, edge F1 {edge:.2f}", {"node_f1": node, "edge_f1": edge})
