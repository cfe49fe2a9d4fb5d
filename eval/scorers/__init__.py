"""Scorers, registered with ``@scorer``; importing this package registers the built-in ones."""

from routerlab.agents.registry import import_submodules
from routerlab.eval.scorers.chain import ChainF1, ChainValidity, Trajectory, trajectory_modes, validate_chain
from routerlab.eval.scorers.execution import ExecutionAccuracy, gold_is_ordered, results_match
from routerlab.eval.scorers.gold_cache import CachedGold, GoldCache, default_gold_cache_path
from routerlab.eval.scorers.routing import RouteAccuracy, Success
from routerlab.eval.scoring import scorer

__all__ = [
    "DEFAULT_SCORERS",
    "HEADLINE_SCORERS",
    "SCORER_TITLES",
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

#: the rates ``routerlab compare`` tests pairwise and the notebook compares, in display order
HEADLINE_SCORERS: tuple[str, ...] = ("ex", "route", "chain_valid", "success")

#: how tables and figures name each default scorer's rate (docs/metrics.md §2 defines them)
SCORER_TITLES: dict[str, str] = {
    "ex": "execution accuracy (EX)",
    "chain_valid": "chain validity",
    "trajectory": "trajectory match",
    "chain_f1": "chain F1",
    "route": "routing accuracy",
    "success": "end-to-end success",
    "abstain": "abstain recall",
}

# modules added later register themselves: a new router/scorer/loader is one new file
import_submodules(__name__, __path__)

assert set(DEFAULT_SCORERS) <= set(scorer.names()), "a default scorer is not registered"
assert set(HEADLINE_SCORERS) <= set(DEFAULT_SCORERS) == set(SCORER_TITLES), "scorer lists out of step"
