"""Fitting per-intent log-prior offsets that maximise the routing score (``docs/metrics.md`` §9).

The ``calibrated`` optimizer reads, for every fit example, the one-pass distribution over the
intents of a compiled program once, then chooses offsets ``b_k`` so that
``argmax_k(log p_k + b_k)`` maximises the routing score on those examples
(:mod:`routerlab.routers.calibration` applies them). The score is piecewise constant in each
offset, so the search is exact coordinate ascent: for one intent at a time, every interval
between two decision boundaries is tried at its midpoint (the widest margin on both sides), a
move is kept only if the score strictly rises, and among equal scores the offset nearest zero
wins (the prompt's own distribution is the prior). ``max_offset`` bounds every offset, so a few
examples cannot push one intent to always or never win. Deterministic: no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from routerlab.objective import routing_score
from routerlab.routers.calibration import FLOOR

__all__ = ["choose_bound", "fit_offsets", "score_with_offsets"]

_SAME = 1e-9  # nats: two decision boundaries closer than this are one


def _log_matrix(dists: Sequence[Mapping[str, float]], labels: Sequence[str]) -> np.ndarray:
    return np.array([[math.log(max(float(d.get(k, 0.0)), FLOOR)) for k in labels] for d in dists], dtype=float)


def _correct(chosen: np.ndarray, labels: Sequence[str], accepted: Sequence[Sequence[str]]) -> list[bool]:
    return [labels[int(c)] in acc for c, acc in zip(chosen, accepted, strict=True)]


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
    accepted = [list(a) for a in accepted] if accepted is not None else [[g] for g in gold]
    if not (len(dists) == len(gold) == len(accepted)):
        raise ValueError(f"dists ({len(dists)}), gold ({len(gold)}) and accepted ({len(accepted)}) differ in length")
    if not dists:
        raise ValueError("fitting offsets needs at least one example")
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
    accepted = [list(a) for a in accepted] if accepted is not None else [[g] for g in gold]
    fold_of: list[int] = [0] * len(gold)
    seen: dict[str, int] = {}
    for i, g in enumerate(gold):
        fold_of[i] = seen.get(g, 0) % folds
        seen[g] = seen.get(g, 0) + 1
    scores: dict[float, float] = {}
    for bound in sorted(set(float(b) for b in bounds)):
        correct = [False] * len(gold)
        for f in range(folds):
            train = [i for i in range(len(gold)) if fold_of[i] != f]
            test = [i for i in range(len(gold)) if fold_of[i] == f]
            if not test or not train:
                continue
            offsets = fit_offsets(
                [dists[i] for i in train],
                [gold[i] for i in train],
                [accepted[i] for i in train],
                labels=labels,
                safety=safety,
                max_offset=bound,
            )
            logs = _log_matrix([dists[i] for i in test], labels) + np.array([offsets[k] for k in labels])
            for i, c in zip(test, np.argmax(logs, axis=1), strict=True):
                correct[i] = labels[int(c)] in accepted[i]
        scores[bound] = round(routing_score(gold, correct, safety=safety), 4)
    best = max(scores.values())
    return min(b for b, s in scores.items() if s == best), scores
