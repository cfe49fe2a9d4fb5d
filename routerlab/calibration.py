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

__all__ = ["fit_offsets", "score_with_offsets"]

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
