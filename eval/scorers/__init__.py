"""Scorers, registered with ``@scorer``; importing this package registers the built-in ones."""

from eval.scorers.chain import ChainF1, ChainValidity, Trajectory, trajectory_modes, validate_chain
from eval.scorers.execution import ExecutionAccuracy, gold_is_ordered, results_match
from eval.scorers.routing import RouteAccuracy, Success

__all__ = [
    "ChainF1",
    "ChainValidity",
    "ExecutionAccuracy",
    "RouteAccuracy",
    "Success",
    "Trajectory",
    "gold_is_ordered",
    "results_match",
    "trajectory_modes",
    "validate_chain",
]
