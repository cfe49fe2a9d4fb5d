"""What a session's MLflow parent run shows, read off the comparison model (the MLflow view).

One parent run per session carries both parts: its metrics are ``<part>.<router>.<measure>``
(``routing.hybrid.routing_accuracy``, ``end_to_end.hybrid.served``) with ``_low`` and ``_high``
beside, and ``<part>.<router>.p50`` / ``.p95`` (the part's cost unit), rounded to 3 decimals as
the runs table shows them; its artifacts are the
comparison as Markdown (``comparison.md``), the verdict (``verdict.md``, also the run's
description), a table rounded as shown (``comparison.json``) and each part's rates figure. The
children are named by part and router (:func:`child_name`). Computes nothing: the sink logs it.
"""

from __future__ import annotations

from typing import Any

from routerlab.eval.analysis.figures import rates_figure
from routerlab.eval.analysis.markdown import document, verdict_md
from routerlab.eval.analysis.measures import PART_NAMES, measure
from routerlab.eval.analysis.model import Part, RouterFigures, SessionComparison
from routerlab.eval.analysis.words import interval_text, num
from routerlab.eval.store import ROUTING

__all__ = ["child_metrics", "child_name", "parent_name", "session_dashboard"]

#: decimals of the parent's metrics (the model and its JSON keep every digit)
_DIGITS = 3


def child_name(part: str, router: str) -> str:
    """``routing · hybrid``, ``end to end · hybrid``: a child run's name, by part and router."""
    return f"{PART_NAMES.get(part, part)} · {router}"


def child_metrics(p: Part, r: RouterFigures) -> dict[str, float]:
    """A child run's metrics: the router's figures in the model, rounded as the runs table shows them.

    ``n_examples``; each rate of the part with ``_low``, ``_high`` and ``_n`` (``routing_accuracy``,
    ``success``, ``ex``, ``diverted``...); ``recall.<intent>`` (routing) or ``<verdict measure>.<intent>``
    (end to end, ``success.sql``); the cost per decision in ms (``decision_p50_ms``, ``decision_p95_ms``,
    ``lm_calls_per_decision``, ``router_lm_ms_per_decision``, ``tokens_per_decision``) or per
    request in s (``request_p50_s``...); and the further figures as the model names them
    (``calibration.ece``, ``turn.<k>.<measure>``, ``risk.*``, ``asking.*``, ``gold_failed``).
    """
    # the part's measures first, verdict measure first: MLflow's compare page plots a run's first metric
    out: dict[str, float] = {}
    for key, x in r.rates.items():
        out |= {key: x.value, f"{key}_low": x.low, f"{key}_high": x.high, f"{key}_n": float(x.n)}
    out["n_examples"] = float(r.n)
    name = "recall" if p.key == ROUTING else p.verdict_measures[0]
    out |= {f"{name}.{intent}": x.value for intent, x in r.per_intent.items()}
    c, (each, unit) = r.cost, (("decision", "ms") if p.key == ROUTING else ("request", "s"))
    out |= {
        f"{each}_p50_{unit}": c.p50,
        f"{each}_p95_{unit}": c.p95,
        f"lm_calls_per_{each}": c.lm_calls,
        f"router_lm_{unit}_per_{each}": c.router_lm,
        f"tokens_per_{each}": c.tokens,
    }
    return {key: round(value, _DIGITS) for key, value in (out | r.figures).items()}


def parent_name(session: str) -> str:
    """``session <id>``: the one parent run of a session, both parts under it."""
    return f"session {session}"


def session_dashboard(model: SessionComparison, *, figures: bool = True) -> dict[str, Any]:
    """``metrics``, ``texts``, ``table`` and ``figures`` for :meth:`MlflowSink.finish_parent`.

    Args:
        model: The session's comparison.
        figures: Draw each part's rates figure (matplotlib).
    """
    import pandas as pd

    metrics: dict[str, float] = {}
    rows = []
    for p in model.parts:
        for r in p.routers:
            if r.same_as is not None:
                continue
            for key, x in r.rates.items():
                base = f"{p.key}.{r.router}.{key}"
                metrics |= {base: x.value, f"{base}_low": x.low, f"{base}_high": x.high}
            metrics |= {f"{p.key}.{r.router}.p50": r.cost.p50, f"{p.key}.{r.router}.p95": r.cost.p95}
            rows.append(
                {
                    "part": PART_NAMES.get(p.key, p.key),
                    "router": r.router,
                    **{measure(m).name: interval_text(r.rates[m]) for m in p.measures if m in r.rates},
                    "p50": f"{num(r.cost.p50, 1)} {r.cost.unit}",
                    "p95": num(r.cost.p95, 1),
                }
            )
    out: dict[str, Any] = {
        # MLflow's runs table prints a metric as text, cut to its column: 0.559, never 0.55855855…
        "metrics": {key: round(value, _DIGITS) for key, value in metrics.items()},
        "texts": {"comparison.md": document(model), "verdict.md": verdict_md(model)},
        "table": pd.DataFrame(rows).fillna(""),
    }
    if figures:
        out["figures"] = {f"{p.key}_rates.png": rates_figure(p) for p in model.parts}
    return out
