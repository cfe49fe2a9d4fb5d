"""Old home of the scoring contract, kept so existing imports work: see :mod:`routerlab.eval.scoring`.

A thin re-export (the README, the notebook and other branches import ``routerlab.eval.result``);
new code imports from :mod:`routerlab.eval.scoring`.
"""

from routerlab.eval.scoring import (
    NOT_RUN,
    NOT_RUN_ERROR_CLASS,
    OUTCOMES,
    ExampleResult,
    Score,
    Scorer,
    did_run,
    scorer,
)

__all__ = ["NOT_RUN", "NOT_RUN_ERROR_CLASS", "OUTCOMES", "ExampleResult", "Score", "Scorer", "did_run", "scorer"]
