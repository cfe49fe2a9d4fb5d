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

#: the routers ``run``, ``route`` and the main job compare when none is named, chosen from the
#: committed measurements (README's router table, docs/results/2026-11-26-main-job.md):
#: ``always_sql`` is the baseline routing is measured against (every decision ``sql``), ``rules``,
#: ``semantic`` and ``hybrid`` are the most accurate routers on dev, mixed and CoSQL and decide in a
#: median under 10 ms each (hybrid asks the LM on 1 request in 10), ``single_call`` is the plain
#: model call every routed pipeline must beat end to end (its first decision is free: it routes
#: everything to SQL). Left out as slow for a default: ``llm`` (1.8-2.9 s per decision cold on 2
#: cores, and the least accurate of the four on dev), ``dspy`` (about 6 s per decision), and the
#: generating routers ``handoff``, ``retrieval`` and ``team`` (seconds each); name them to include them.
DEFAULT_ROUTERS = "always_sql,rules,semantic,hybrid,single_call"
#: seconds per example and router on the embedded model, end to end: the p50 measured on the whole
#: of spider-dev-a on 2 cores (docs/results/2026-11-24-sql-quality.md); an order of magnitude only
LOCAL_SECONDS_PER_EXAMPLE = 13.0
#: ``run --router ...``'s default sample of the built-in benchmark: one request per intent
#: (``route`` and the main job's routing part decide every request: a first decision is cheap)
DEFAULT_LIMIT = 7
