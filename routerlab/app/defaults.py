"""The application's defaults, in one place: stores, routers, the built-in benchmark's subset.

Importing this module imports nothing heavy: the command line shows these as its options'
defaults before it imports anything else.
"""

from __future__ import annotations

from routerlab.eval.defaults import DEFAULT_STORE_PATH, DEFAULT_TRACKING_URI

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_ROUTERS",
    "DEFAULT_STORE_PATH",
    "DEFAULT_TRACKING_URI",
    "LOCAL_SECONDS_PER_EXAMPLE",
]

#: the routers ``run``, ``route`` and the main job compare when none is named, decided by the rule in
#: docs/results/2026-12-06-default-routers.md (written before any new model run): ``always_sql`` (every decision
#: ``sql``, the reference routing accuracy is read against) and ``single_call`` (the plain model call a
#: routed pipeline must beat end to end; its first decision is free) are baselines, in by their role.
#: Any other router is in when, held out (leave one database out over the shared CoSQL and SParC
#: turns, choices on tune folds only), it diverts at most 0.02 of data questions at an accuracy at
#: least always_sql's - 0.02, beats always_sql significantly on the main job's routing part, and
#: decides in a median of at most 100 ms: ``rules``, ``semantic`` and ``hybrid`` (whose LM path
#: changes none of the held-out decisions, whatever the LM answers). Left out, with no held-out
#: figure and seconds per decision: ``llm``, ``dspy`` and the routers that generate or draft to decide
#: (``handoff``, ``retrieval``, ``team``, ``answer_first``); name them to include them.
DEFAULT_ROUTERS = "always_sql,rules,semantic,hybrid,single_call"
#: seconds per example and router on the embedded model, end to end: the p50 measured on the whole
#: of spider-dev-a on 2 cores (docs/results/2026-11-24-sql-quality.md); an order of magnitude only
LOCAL_SECONDS_PER_EXAMPLE = 13.0
#: ``run --router ...``'s default sample of the built-in benchmark: one request per intent
#: (``route`` and the main job's routing part decide every request: a first decision is cheap)
DEFAULT_LIMIT = 7
