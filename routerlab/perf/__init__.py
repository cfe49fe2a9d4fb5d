"""``routerlab perf``: speed of the harness, the EX scorer, concurrency and the embedded model.

One module per section (its measuring function), the sections registered in measuring order in
:mod:`routerlab.perf.sections`, what they share in :mod:`routerlab.perf._common`.

Every figure is measured here, in a benchmark command, never asserted in a test. The machines
this runs on are shared and noisy, so each section also reports a ratio against a baseline
measured in the same run, which is what to compare across machines.
"""

from routerlab.perf._common import PerfFigure
from routerlab.perf.alternating_prefixes import alternating_prefixes
from routerlab.perf.concurrency import concurrency_scaling
from routerlab.perf.ex_throughput import ex_throughput
from routerlab.perf.first_decision import first_decision_cost
from routerlab.perf.harness import harness_overhead
from routerlab.perf.model_speed import model_speed
from routerlab.perf.pipeline_split import pipeline_split, stage_seconds
from routerlab.perf.router_replay import router_replay
from routerlab.perf.routing_prefix_reuse import routing_prefix_reuse
from routerlab.perf.rules_scaling import RULES_WORST_TEXTS, rules_scaling
from routerlab.perf.schema_scaling import schema_scaling
from routerlab.perf.sections import figures_json, perf_section, run_perf
from routerlab.perf.sql_candidates import candidate_decoding
from routerlab.perf.sql_decoding import sql_decoding
from routerlab.perf.turns_per_hour import turns_per_hour

__all__ = [
    "RULES_WORST_TEXTS",
    "PerfFigure",
    "alternating_prefixes",
    "candidate_decoding",
    "concurrency_scaling",
    "ex_throughput",
    "figures_json",
    "first_decision_cost",
    "harness_overhead",
    "model_speed",
    "perf_section",
    "pipeline_split",
    "router_replay",
    "routing_prefix_reuse",
    "rules_scaling",
    "run_perf",
    "schema_scaling",
    "sql_decoding",
    "stage_seconds",
    "turns_per_hour",
]
