"""Label calibration of a one-pass intent distribution: log-prior offsets, optionally an affine map.

A few-shot prompt shifts an LM's label probabilities as a whole: a label the demos show often,
or one the model favours anyway (``sql`` for anything that mentions data), wins requests it
should not, and a rare label (``clarify``, ``refuse``) loses ones it should win even when it is
the runner-up. Adding a fixed offset ``b_k`` to each intent's log probability (contextual
calibration; here the offsets are learned, ``routerlab optimize --optimizer calibrated``) moves
those decision boundaries without another LM call:

    calibrated(p)_k = softmax_k(log p_k + b_k)

The affine map (``--optimizer-arg map=affine``) also mixes the labels' log probabilities: with
``x = log p - mean_j log p_j`` (centred, so only the ratios between labels count),

    calibrated(p)_k = softmax_k(sum_j W_kj x_j + b_k)

so one label's probability can move another's logit (a request the model finds half ``sql``,
half ``clarify`` reads differently from one it finds half ``sql``, half ``chat``). ``W = I``
is the offsets alone. Offsets and map are part of a compiled ``dspy`` program (saved in its
JSON), fitted once on train and frozen; a router applies them to every distribution it reads.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import cast

from routerlab.agents.lm.scoring import normalise
from routerlab.agents.state import Intent
from routerlab.routers.support.lm_intent import OnePass

__all__ = ["FLOOR", "Weights", "calibrated", "shift"]

FLOOR = 1e-12
"""Smallest probability a log is taken of (a label the LM gave exactly 0 stays last, not -inf)."""

Weights = Mapping[str, Mapping[str, float]]
"""An affine map's matrix, row by row: output label -> input label -> weight (empty: identity).

A label without a row keeps its own centred log probability (an identity row); a missing entry
in a row is 0.
"""


def _mixed(logs: dict[str, float], weights: Weights) -> dict[str, float]:
    """``W x`` over the labels of ``logs``, with ``x`` the centred log probabilities."""
    mean = sum(logs.values()) / len(logs)
    x = {k: v - mean for k, v in logs.items()}
    return {k: sum(float(w) * x.get(j, 0.0) for j, w in weights[k].items()) if k in weights else x[k] for k in x}


def calibrated(
    probs: Mapping[str, float], offsets: Mapping[str, float], weights: Weights | None = None
) -> dict[str, float]:
    """``softmax(W x + b)`` over the labels of ``probs`` (``x``: centred log probabilities).

    Labels without an offset get 0; without ``weights`` the map is the identity, i.e.
    ``softmax(log p_k + b_k)``. The label order of ``probs`` is kept, so ties still go to the
    first label.
    """
    if not offsets and not weights:
        return dict(probs)
    logs = {k: math.log(max(p, FLOOR)) for k, p in probs.items()}
    if weights:
        logs = _mixed(logs, weights)
    return normalise({k: v + float(offsets.get(k, 0.0)) for k, v in logs.items()})


def shift(one: OnePass, offsets: Mapping[str, float], weights: Weights | None = None) -> OnePass:
    """``one`` with its distribution calibrated by ``offsets`` (and ``weights``): intent and confidence re-read.

    The usage and token accounting are the call's own (calibration costs no LM call).
    """
    if not offsets and not weights:
        return one
    scores = dataclasses.replace(one.scores, probs=calibrated(one.scores.probs, offsets, weights))
    # the choices are the intents, as they were before the calibration
    return OnePass(cast(Intent, scores.best), scores.confidence, scores, one.usage)
