"""Fitting per-intent log-prior offsets that maximise the routing score (``docs/metrics.md`` §9).

The ``calibrated`` optimizer reads, for every fit example, the one-pass distribution over the
intents of a compiled program once, then chooses offsets ``b_k`` so that
``argmax_k(log p_k + b_k)`` maximises the routing score on those examples
(:mod:`routerlab.routers.support.label_calibration` applies them). The score is piecewise constant in each
offset, so the search is exact coordinate ascent: for one intent at a time, every interval
between two decision boundaries is tried at its midpoint (the widest margin on both sides), a
move is kept only if the score strictly rises, and among equal scores the offset nearest zero
wins (the prompt's own distribution is the prior). ``max_offset`` bounds every offset, so a few
examples cannot push one intent to always or never win. Deterministic: no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from routerlab.fit.objective import RoutingObjective, routing_score
from routerlab.routers.support.label_calibration import FLOOR, Weights, calibrated

__all__ = [
    "L2_GRID",
    "MAPS",
    "Fitted",
    "affine_loss",
    "choose_bound",
    "choose_l2",
    "fit_affine",
    "fit_offsets",
    "score_with_map",
    "score_with_offsets",
]

_SAME = 1e-9  # nats: two decision boundaries closer than this are one


def _log_matrix(dists: Sequence[Mapping[str, float]], labels: Sequence[str]) -> np.ndarray:
    return np.array([[math.log(max(float(d.get(k, 0.0)), FLOOR)) for k in labels] for d in dists], dtype=float)


def _correct(chosen: np.ndarray, labels: Sequence[str], accepted: Sequence[Sequence[str]]) -> list[bool]:
    return [labels[int(c)] in acc for c, acc in zip(chosen, accepted, strict=True)]


def _accepted_or_gold(gold: Sequence[str], accepted: Sequence[Sequence[str]] | None) -> list[list[str]]:
    """Each example's accepted intents: as given, or its gold intent alone."""
    return [list(a) for a in accepted] if accepted is not None else [[g] for g in gold]


def _checked_accepted(
    dists: Sequence[Mapping[str, float]],
    gold: Sequence[str],
    accepted: Sequence[Sequence[str]] | None,
    what: str,
) -> list[list[str]]:
    """:func:`_accepted_or_gold`, refusing lengths that differ or no examples (``what`` names the fit)."""
    accepted = _accepted_or_gold(gold, accepted)
    if not (len(dists) == len(gold) == len(accepted)):
        raise ValueError(f"dists ({len(dists)}), gold ({len(gold)}) and accepted ({len(accepted)}) differ in length")
    if not dists:
        raise ValueError(f"{what} needs at least one example")
    return accepted


def score_with_offsets(
    dists: Sequence[Mapping[str, float]],
    gold: Sequence[str],
    accepted: Sequence[Sequence[str]],
    offsets: Mapping[str, float],
    *,
    labels: Sequence[str],
    safety: float = 2.0,
) -> float:
    """The routing score of ``argmax_k(log p_k + b_k)`` (ties: the first label) over the examples."""
    logs = _log_matrix(dists, labels) + np.array([float(offsets.get(k, 0.0)) for k in labels])
    return routing_score(gold, _correct(np.argmax(logs, axis=1), labels, accepted), safety=safety)


def fit_offsets(
    dists: Sequence[Mapping[str, float]],
    gold: Sequence[str],
    accepted: Sequence[Sequence[str]] | None = None,
    *,
    labels: Sequence[str],
    safety: float = 2.0,
    max_offset: float = 3.0,
    rounds: int = 10,
) -> dict[str, float]:
    """Offsets (one per label, in nats) maximising the routing score of the calibrated decisions.

    Args:
        dists: Each example's distribution over ``labels`` (missing labels count as 0).
        gold: Each example's gold intent.
        accepted: Each example's accepted intents (default: its gold intent only).
        labels: The labels, in the order ties are broken in.
        safety: The objective's clarify / refuse multiplier.
        max_offset: Bound on every offset's magnitude.
        rounds: Most passes over the labels (the ascent stops earlier when a pass changes nothing).

    Returns:
        Label -> offset (0.0 for a label left alone).

    Raises:
        ValueError: Lengths differ, no examples, or ``max_offset`` is negative.
    """
    accepted = _checked_accepted(dists, gold, accepted, "fitting offsets")
    if max_offset < 0:
        raise ValueError(f"max_offset must be non-negative, got {max_offset}")
    logs = _log_matrix(dists, labels)
    ok = np.array([[k in acc for k in labels] for acc in accepted], dtype=bool)  # example x label: accepted?
    b = np.zeros(len(labels))

    def score_of(chosen: np.ndarray) -> float:
        return routing_score(gold, [bool(ok[i, c]) for i, c in enumerate(chosen)], safety=safety)

    best = score_of(np.argmax(logs + b, axis=1))
    for _ in range(rounds):
        moved = False
        for j in range(len(labels)):
            others = logs + b
            others[:, j] = -np.inf
            # label j wins example i once b_j passes this value (ties go to the first label)
            cuts = np.clip(others.max(axis=1) - logs[:, j], -max_offset, max_offset)
            edges = np.unique(np.concatenate([cuts, [-max_offset, max_offset]]))
            # boundaries equal but for rounding are one boundary: no interval only rounding makes
            edges = edges[np.concatenate([[True], np.diff(edges) > _SAME])]
            candidates = np.unique(np.concatenate([(edges[:-1] + edges[1:]) / 2, [b[j]]]))
            top, top_value = best, b[j]
            for value in sorted(candidates, key=lambda v: (abs(v), v)):
                trial = b.copy()
                trial[j] = value
                s = score_of(np.argmax(logs + trial, axis=1))
                if s > top + 1e-12:
                    top, top_value = s, value
            if top > best + 1e-12:
                best, b[j], moved = top, top_value, True
        if not moved:
            break
    return {k: float(v) for k, v in zip(labels, b, strict=True)}


def _folds(gold: Sequence[str], folds: int) -> list[int]:
    """Each example's fold: every intent's examples dealt round-robin, in input order."""
    fold_of: list[int] = [0] * len(gold)
    seen: dict[str, int] = {}
    for i, g in enumerate(gold):
        fold_of[i] = seen.get(g, 0) % folds
        seen[g] = seen.get(g, 0) + 1
    return fold_of


def _cross_validated(
    gold: Sequence[str],
    accepted: Sequence[Sequence[str]],
    *,
    labels: Sequence[str],
    settings: Sequence[float],
    folds: int,
    safety: float,
    decide: Callable[[float, list[int], list[int]], np.ndarray],
) -> dict[float, float]:
    """Every setting's routing score on decisions made by fits that did not see the decided examples.

    Examples are dealt into folds by :func:`_folds`; for each setting and fold,
    ``decide(setting, train, test)`` fits on the ``train`` indices and returns the chosen label
    index of each ``test`` example, in order. The held-back decisions of all folds are pooled and
    scored once (a fold with no train or no test examples decides nothing: it counts as wrong).

    Returns:
        Setting -> routing score, rounded to 4 places (so near-equal scores tie).
    """
    fold_of = _folds(gold, folds)
    scores: dict[float, float] = {}
    for setting in sorted(set(float(v) for v in settings)):
        correct = [False] * len(gold)
        for f in range(folds):
            train = [i for i in range(len(gold)) if fold_of[i] != f]
            test = [i for i in range(len(gold)) if fold_of[i] == f]
            if not test or not train:
                continue
            for i, c in zip(test, decide(setting, train, test), strict=True):
                correct[i] = labels[int(c)] in accepted[i]
        scores[setting] = round(routing_score(gold, correct, safety=safety), 4)
    return scores


def _pick(values: Sequence[Any], indices: Sequence[int]) -> list[Any]:
    return [values[i] for i in indices]


def choose_bound(
    dists: Sequence[Mapping[str, float]],
    gold: Sequence[str],
    accepted: Sequence[Sequence[str]] | None = None,
    *,
    labels: Sequence[str],
    bounds: Sequence[float],
    folds: int = 5,
    safety: float = 2.0,
) -> tuple[float, dict[float, float]]:
    """The offset bound whose fits score best on the examples they did not see (k-fold, per intent).

    Fitting offsets to maximise the score of a few examples per rare intent overfits; the bound
    limits how far they move. Each intent's examples are dealt round-robin into ``folds`` folds
    (in input order, so deterministic); for each bound, offsets fitted on the other folds decide
    each fold's examples, and the pooled decisions are scored. Ties go to the smaller bound.

    Returns:
        The chosen bound, and every bound's cross-validated routing score.

    Raises:
        ValueError: ``folds`` below 2, no bounds, or a negative bound.
    """
    if folds < 2 or not bounds or min(bounds) < 0:
        raise ValueError(f"need folds >= 2 and non-negative bounds, got folds={folds}, bounds={list(bounds)}")
    accepted = _accepted_or_gold(gold, accepted)

    def decide(bound: float, train: list[int], test: list[int]) -> np.ndarray:
        offsets = fit_offsets(
            _pick(dists, train),
            _pick(gold, train),
            _pick(accepted, train),
            labels=labels,
            safety=safety,
            max_offset=bound,
        )
        logs = _log_matrix(_pick(dists, test), labels) + np.array([offsets[k] for k in labels])
        return np.argmax(logs, axis=1)

    scores = _cross_validated(gold, accepted, labels=labels, settings=bounds, folds=folds, safety=safety, decide=decide)
    best = max(scores.values())
    return min(b for b, s in scores.items() if s == best), scores


L2_GRID: tuple[float, ...] = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
"""L2 strengths :func:`choose_l2` chooses among by default (the loss is a weighted mean, so per example)."""


def _centred(dists: Sequence[Mapping[str, float]], labels: Sequence[str]) -> np.ndarray:
    logs = _log_matrix(dists, labels)
    return logs - logs.mean(axis=1, keepdims=True)


def _accepted_matrix(accepted: Sequence[Sequence[str]], labels: Sequence[str]) -> np.ndarray:
    return np.array([[k in acc for k in labels] for acc in accepted], dtype=bool)


def _example_weights(gold: Sequence[str], safety: float) -> np.ndarray:
    """Each example's share of the routing score (its gold intent's objective weight), summing to 1."""
    objective = RoutingObjective.from_intents(list(gold), safety=safety)
    w = np.array([objective.weight(g) for g in gold], dtype=float)
    return w / w.sum()


def _loss_and_grad(
    params: np.ndarray, x: np.ndarray, ok: np.ndarray, w: np.ndarray, l2: float
) -> tuple[float, np.ndarray]:
    k = x.shape[1]
    mat, b = params[: k * k].reshape(k, k), params[k * k :]
    z = x @ mat.T + b
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    right = np.maximum((p * ok).sum(axis=1), 1e-300)
    delta = mat - np.eye(k)
    loss = float(-(w * np.log(right)).sum() + l2 * ((delta**2).sum() + (b**2).sum()))
    # d(-log sum_{a in accepted} p_a)/dz = p - p restricted to the accepted labels, renormalised
    g = w[:, None] * (p - p * ok / right[:, None])
    grad = np.concatenate([(g.T @ x + 2 * l2 * delta).ravel(), g.sum(axis=0) + 2 * l2 * b])
    return loss, grad


def _prepare(
    dists: Sequence[Mapping[str, float]],
    gold: Sequence[str],
    accepted: Sequence[Sequence[str]] | None,
    labels: Sequence[str],
) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    accepted = _checked_accepted(dists, gold, accepted, "fitting a calibration")
    return _centred(dists, labels), _accepted_matrix(accepted, labels), accepted


def _as_map(
    mat: np.ndarray, b: np.ndarray, labels: Sequence[str]
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    weights = {k: {j: float(mat[r, c]) for c, j in enumerate(labels)} for r, k in enumerate(labels)}
    return weights, {k: float(v) for k, v in zip(labels, b, strict=True)}


def _as_arrays(weights: Weights, offsets: Mapping[str, float], labels: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    mat = np.eye(len(labels))
    for r, k in enumerate(labels):
        if k in weights:
            mat[r] = [float(weights[k].get(j, 0.0)) for j in labels]
    return mat, np.array([float(offsets.get(k, 0.0)) for k in labels])


def affine_loss(
    dists: Sequence[Mapping[str, float]],
    gold: Sequence[str],
    accepted: Sequence[Sequence[str]] | None,
    weights: Weights,
    offsets: Mapping[str, float],
    *,
    labels: Sequence[str],
    safety: float = 2.0,
    l2: float = 0.0,
) -> float:
    """The objective :func:`fit_affine` minimises, for a given map (empty ``weights``: the identity)."""
    x, ok, _ = _prepare(dists, gold, accepted, labels)
    mat, b = _as_arrays(weights, offsets, labels)
    keep = ok.any(axis=1)
    w = _example_weights(gold, safety)
    return _loss_and_grad(np.concatenate([mat.ravel(), b]), x[keep], ok[keep], w[keep], l2)[0]


def fit_affine(
    dists: Sequence[Mapping[str, float]],
    gold: Sequence[str],
    accepted: Sequence[Sequence[str]] | None = None,
    *,
    labels: Sequence[str],
    safety: float = 2.0,
    l2: float = 0.1,
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """The affine map (``W``, ``b``) minimising the routing-weighted log loss plus its L2 distance from the identity.

    Args:
        dists: Each example's distribution over ``labels`` (missing labels count as 0).
        gold: Each example's gold intent (its weight in the loss).
        accepted: Each example's accepted intents (default: its gold intent only); the loss is
            ``-log`` of their calibrated probability. An example none of whose accepted intents
            is a label cannot be right and is left out.
        labels: The labels (the map's rows and columns).
        safety: The objective's clarify / refuse multiplier.
        l2: Penalty on ``||W - I||^2 + ||b||^2``; 0 fits the weighted log loss alone.

    Returns:
        ``W`` as output label -> input label -> weight, and ``b`` as label -> offset.

    Raises:
        ValueError: Lengths differ, no examples, or ``l2`` is negative.
    """
    from scipy.optimize import minimize

    if l2 < 0:
        raise ValueError(f"l2 must be non-negative, got {l2}")
    x, ok, _ = _prepare(dists, gold, accepted, labels)
    keep = ok.any(axis=1)
    w = _example_weights(gold, safety)
    k = len(labels)
    start = np.concatenate([np.eye(k).ravel(), np.zeros(k)])
    if not keep.any():
        return _as_map(np.eye(k), np.zeros(k), labels)
    args = (x[keep], ok[keep], w[keep], float(l2))
    res = minimize(_loss_and_grad, start, args=args, jac=True, method="L-BFGS-B", options={"maxiter": 500})
    # the identity is where the search starts: never return a map that is worse than it
    best = res.x if res.fun <= _loss_and_grad(start, *args)[0] else start
    return _as_map(best[: k * k].reshape(k, k), best[k * k :], labels)


def score_with_map(
    dists: Sequence[Mapping[str, float]],
    gold: Sequence[str],
    accepted: Sequence[Sequence[str]] | None,
    weights: Weights,
    offsets: Mapping[str, float],
    *,
    labels: Sequence[str],
    safety: float = 2.0,
) -> float:
    """The routing score of the decisions that :func:`~routerlab.routers.support.label_calibration.calibrated` makes."""
    accepted = _accepted_or_gold(gold, accepted)
    correct = []
    for d, acc in zip(dists, accepted, strict=True):
        probs = calibrated({k: float(d.get(k, 0.0)) for k in labels}, offsets, weights)
        correct.append(max(probs, key=probs.__getitem__) in acc)  # ties: the first label, as the router
    return routing_score(gold, correct, safety=safety)


def choose_l2(
    dists: Sequence[Mapping[str, float]],
    gold: Sequence[str],
    accepted: Sequence[Sequence[str]] | None = None,
    *,
    labels: Sequence[str],
    grid: Sequence[float] = L2_GRID,
    folds: int = 5,
    safety: float = 2.0,
) -> tuple[float, dict[float, float]]:
    """The L2 strength whose affine fits score best on the examples they did not see (k-fold, per intent).

    Folds as in :func:`choose_bound`; each strength's held-back decisions are pooled and scored
    with the routing score. Ties go to the larger strength (the map nearer the identity).

    Returns:
        The chosen strength, and every strength's cross-validated routing score.

    Raises:
        ValueError: ``folds`` below 2, an empty grid, or a negative strength.
    """
    if folds < 2 or not grid or min(grid) < 0:
        raise ValueError(f"need folds >= 2 and non-negative strengths, got folds={folds}, grid={list(grid)}")
    x, _, accepted = _prepare(dists, gold, accepted, labels)

    def decide(l2: float, train: list[int], test: list[int]) -> np.ndarray:
        weights, offsets = fit_affine(
            _pick(dists, train), _pick(gold, train), _pick(accepted, train), labels=labels, safety=safety, l2=l2
        )
        mat, b = _as_arrays(weights, offsets, labels)
        return np.argmax(x[test] @ mat.T + b, axis=1)

    scores = _cross_validated(gold, accepted, labels=labels, settings=grid, folds=folds, safety=safety, decide=decide)
    best = max(scores.values())
    return max(v for v, s in scores.items() if s == best), scores


@dataclass(frozen=True)
class Fitted:
    """A fitted calibration: what the program saves, and what was chosen on the way.

    Attributes:
        offsets: Label -> offset ``b_k``.
        weights: The affine map's matrix (empty: the offsets alone).
        notes: The setting chosen (``calibration_bound`` or ``calibration_l2``) and each
            candidate setting's cross-validated routing score.
    """

    offsets: dict[str, float]
    weights: dict[str, dict[str, float]] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)


_BOUNDS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0)  # nats; the bounds cross-validation chooses among


def _fit_offsets_map(
    dists: Sequence[Mapping[str, float]],
    gold: Sequence[str],
    accepted: Sequence[Sequence[str]],
    *,
    labels: Sequence[str],
    safety: float,
    folds: int,
    max_offset: float,
    l2: float | None,
) -> Fitted:
    """``map=offsets``: the bound chosen by ``folds``-fold CV up to ``max_offset`` (0: ``max_offset``)."""
    bound = max_offset
    cv: dict[float, float] = {}
    if folds:
        grid = [b for b in _BOUNDS if b < max_offset] + [max_offset]
        bound, cv = choose_bound(dists, gold, accepted, labels=labels, bounds=grid, folds=folds, safety=safety)
    offsets = fit_offsets(dists, gold, accepted, labels=labels, safety=safety, max_offset=bound)
    return Fitted(
        offsets, {}, {"calibration_bound": bound, **{f"calibration_cv_score_{b:g}": s for b, s in cv.items()}}
    )


def _fit_affine_map(
    dists: Sequence[Mapping[str, float]],
    gold: Sequence[str],
    accepted: Sequence[Sequence[str]],
    *,
    labels: Sequence[str],
    safety: float,
    folds: int,
    max_offset: float,
    l2: float | None,
) -> Fitted:
    """``map=affine``: ``l2`` as given, or chosen by ``folds``-fold CV on :data:`L2_GRID` when None."""
    cv: dict[float, float] = {}
    if l2 is None:
        if not folds:
            raise ValueError("map=affine needs an l2 strength or folds >= 2 to choose one")
        l2, cv = choose_l2(dists, gold, accepted, labels=labels, folds=folds, safety=safety)
    weights, offsets = fit_affine(dists, gold, accepted, labels=labels, safety=safety, l2=l2)
    return Fitted(
        offsets, weights, {"calibration_l2": l2, **{f"calibration_cv_score_l2_{v:g}": s for v, s in cv.items()}}
    )


MAPS: dict[str, Callable[..., Fitted]] = {"offsets": _fit_offsets_map, "affine": _fit_affine_map}
"""Calibration maps by name (``--optimizer-arg map=NAME``): each fits a :class:`Fitted` from
``(dists, gold, accepted, *, labels, safety, folds, max_offset, l2)``."""
