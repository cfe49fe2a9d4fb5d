"""Scorers, registered with ``@scorer``; importing this package registers the built-in ones."""

from eval.scorers.chain import ChainF1, ChainValidity, Trajectory, trajectory_modes, validate_chain
from eval.scorers.execution import ExecutionAccuracy, gold_is_ordered, results_match
from eval.scorers.gold_cache import CachedGold, GoldCache, default_gold_cache_path
from eval.scorers.routing import RouteAccuracy, Success

__all__ = [
    "CachedGold",
    "ChainF1",
    "ChainValidity",
    "ExecutionAccuracy",
    "GoldCache",
    "RouteAccuracy",
    "Success",
    "Trajectory",
    "default_gold_cache_path",
    "gold_is_ordered",
    "results_match",
    "trajectory_modes",
    "validate_chain",
]
