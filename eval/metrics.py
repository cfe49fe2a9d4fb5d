"""Per-run figures the comparison model reads: cold latency, pass^k / pass@k, gold SQL that cannot run.

Rates, per-intent rates, confusion counts and costs are computed once, in
:mod:`routerlab.eval.analysis.build`; :func:`metric_name` makes an MLflow key of a figure's name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from routerlab.eval.scoring import ExampleResult
from routerlab.eval.stats import pass_at_k, pass_hat_k

__all__ = [
    "PassK",
    "cold_latency",
    "gold_failure_line",
    "gold_failures",
    "metric_name",
    "pass_k_summary",
]


def cold_latency(r: ExampleResult) -> float:
    """End-to-end latency of one example at cold cost.

    The time its LM calls took this run is replaced by their cold latency (the time each took
    when first computed): ``latency_s - LM latency + cold LM latency``. Everything else (graph,
    tools, SQL) stays as measured.
    """
    u = r.router_usage.add(r.subagent_usage)
    return r.latency_s - u.latency_s + u.cold_latency_s


#: a graded score counts as a success at 1 (within float error), as in the paired tests
_SUCCESS = 1 - 1e-9


@dataclass(frozen=True)
class PassK:
    """pass^k and pass@k of one run over its repeated attempts.

    Attributes:
        k: Attempts per example (the most any example has).
        pass_hat_k: Mean over examples of C(c, k) / C(k, k): every one of the k tries succeeded.
        pass_at_k: Mean over examples of 1 - C(k - c, k) / C(k, k): at least one try succeeded.
        n: Examples counted (all k tries scored, none ``None``).
        n_incomplete: Examples left out because they have fewer than k tries (an interrupted run).
        n_not_applicable: Examples left out because a try's score was ``None`` (invalid gold...).
    """

    k: int
    pass_hat_k: float
    pass_at_k: float
    n: int
    n_incomplete: int = 0
    n_not_applicable: int = 0


def pass_k_summary(results: Sequence[ExampleResult], scorer_name: str = "success") -> PassK | None:
    """pass^k and pass@k of ``scorer_name`` (a try succeeds at score 1), or None with one attempt.

    The tries of an example are its results over ``attempt``; ``k`` is the most tries any example
    has, so an example with fewer (an interrupted run) is left out and counted, never scored as if
    it had k tries.
    """
    tries: dict[str, list[float | None]] = {}
    for r in sorted(results, key=lambda r: (r.example_id, r.attempt)):
        tries.setdefault(r.example_id, []).append(r.value(scorer_name))
    k = max((len(v) for v in tries.values()), default=0)
    if k < 2:
        return None
    complete = [v for v in tries.values() if len(v) == k]
    scored = [[x >= _SUCCESS for x in v] for v in complete if all(x is not None for x in v)]  # type: ignore[operator]
    return PassK(
        k=k,
        pass_hat_k=pass_hat_k(scored, k),
        pass_at_k=pass_at_k(scored, k),
        n=len(scored),
        n_incomplete=len(tries) - len(complete),
        n_not_applicable=len(complete) - len(scored),
    )


#: MLflow's longest metric/param key
_MAX_KEY = 250


def metric_name(name: str) -> str:
    """``name`` reduced to MLflow's key charset (alphanumerics, ``_ - . / space``), 250 chars max.

    Colons are allowed by MLflow except on Windows; they are replaced too so a store stays
    readable everywhere.
    """
    key = re.sub(r"[^\w.\- /]", "_", name)
    key = re.sub(r"/{2,}", "/", key).strip("/")  # MLflow rejects keys that are not normalised paths
    key = re.sub(r"(^|/)\.\.?(?=/|$)", r"\1_", key)
    return key[:_MAX_KEY] or "_"


def gold_failures(results: Sequence[ExampleResult], scorer_name: str = "ex") -> tuple[int, str | None]:
    """How many examples' gold SQL could not run for ``scorer_name``, and the first cause.

    Counted in both of EX's ``gold_failure`` modes (scored wrong, or left out), so a report can
    say how many examples the number rests on that no query could have matched.
    """
    causes = [
        str(s.detail["gold_error"])
        for r in results
        if (s := r.scores.get(scorer_name)) is not None and s.detail.get("gold_error")
    ]
    return len(causes), (causes[0] if causes else None)


def gold_failure_line(run_id: str, results: Sequence[ExampleResult], scorer_name: str = "ex") -> str | None:
    """The console line of a run with unrunnable gold SQL (None when every gold ran)."""
    n, first = gold_failures(results, scorer_name)
    if not n:
        return None
    counted = (
        "left out of EX"
        if any((s := r.scores.get(scorer_name)) is not None and s.detail.get("invalid") for r in results)
        else "counted wrong in EX, as the official evaluators count them"
    )
    return (
        f"{run_id}: {n} example(s) have gold SQL that cannot run ({counted}; first: {first}); "
        "fix the dataset's gold queries (docs/metrics.md, 'Gold SQL that cannot run')"
    )
