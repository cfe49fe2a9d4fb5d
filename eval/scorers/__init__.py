"""Scorers, registered with ``@scorer``; importing this package registers the built-in ones."""

from routerlab.agents.registry import import_submodules
from routerlab.eval.scorers.chain import ChainF1, ChainValidity, Trajectory, trajectory_modes, validate_chain
from routerlab.eval.scorers.execution import ExecutionAccuracy, gold_is_ordered, results_match
from routerlab.eval.scorers.gold_cache import CachedGold, GoldCache, default_gold_cache_path
from routerlab.eval.scorers.routing import RouteAccuracy, Success
from routerlab.eval.scoring import scorer

__all__ = [
    "DEFAULT_SCORERS",
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

#: the scorers every run applies unless told otherwise, in table order (the built-in registrations)
DEFAULT_SCORERS: tuple[str, ...] = ("ex", "chain_valid", "trajectory", "chain_f1", "route", "success", "abstain")

# modules added later register themselves: a new router/scorer/loader is one new file
import_submodules(__name__, __path__)

assert set(DEFAULT_SCORERS) <= set(scorer.names()), "a default scorer is not registered"
