"""Fitting and optimising: compiled router programs, fitted thresholds, offsets and choices.

- :mod:`~routerlab.fit.objective`: the routing score every optimizer maximises (docs/metrics.md §9);
- :mod:`~routerlab.fit.optimizers`: the ``@optimizer`` registry (bootstrap, random_search, mipro,
  gepa, stratified, calibrated);
- :mod:`~routerlab.fit.optimize`: ``routerlab optimize``: compile on a fit part of train, choose on
  held-out, score on dev once;
- :mod:`~routerlab.fit.label_calibration_fit`: the ``calibrated`` optimizer's offsets or affine map;
- :mod:`~routerlab.fit.hybrid_fit`: the ``hybrid`` router's thresholds fitted on a split;
- :mod:`~routerlab.fit.sql_program_fit`: the compiled ``generate_sql`` program;
- :mod:`~routerlab.fit.dspy_choice`: the ``dspy`` router's default program chosen by a fixed rule.

The names below load their module on first use: most of them import DSPy, and importing this
package (or one light module of it, such as the objective) must not pay for that.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the module of this package that defines it
_EXPORTS: dict[str, str] = {
    "Candidate": "dspy_choice",
    "ChoiceConfig": "dspy_choice",
    "Decision": "dspy_choice",
    "Figures": "optimize",
    "Fitted": "label_calibration_fit",
    "HybridFit": "hybrid_fit",
    "L2_GRID": "label_calibration_fit",
    "LM_THRESHOLDS": "hybrid_fit",
    "MAPS": "label_calibration_fit",
    "OPTIMIZER": "sql_program_fit",
    "OptimizeReport": "optimize",
    "Optimizer": "optimizers",
    "ReplacementRule": "dspy_choice",
    "RoutingObjective": "objective",
    "SAFETY_INTENTS": "objective",
    "SelectionTable": "dspy_choice",
    "SqlFitReport": "sql_program_fit",
    "WHY": "sql_program_fit",
    "affine_loss": "label_calibration_fit",
    "capped": "dspy_choice",
    "choose_bound": "label_calibration_fit",
    "choose_l2": "label_calibration_fit",
    "decide": "dspy_choice",
    "fit_affine": "label_calibration_fit",
    "fit_hybrid": "hybrid_fit",
    "fit_offsets": "label_calibration_fit",
    "fit_sql_program": "sql_program_fit",
    "holdout_split": "optimize",
    "hybrid_decisions": "hybrid_fit",
    "hybrid_grid": "hybrid_fit",
    "intent_correct": "objective",
    "intent_weights": "objective",
    "load_choice_config": "dspy_choice",
    "new_program": "optimize",
    "optimize_router": "optimize",
    "optimizer": "optimizers",
    "report_json": "optimize",
    "route_set": "optimize",
    "routing_score": "objective",
    "run_choice": "dspy_choice",
    "score_program": "optimize",
    "score_set": "optimize",
    "score_with_map": "label_calibration_fit",
    "schema_texts": "optimize",
    "score_with_offsets": "label_calibration_fit",
    "sql_train_examples": "sql_program_fit",
    "to_dspy_examples": "optimize",
    "to_sql_examples": "sql_program_fit",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Load a public name's module on first access (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'routerlab.fit' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"routerlab.fit.{module}"), name)
    globals()[name] = value  # cached: the next access is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
