"""Per-intent label calibration of a one-pass intent distribution: fixed log-prior offsets.

A few-shot prompt shifts an LM's label probabilities as a whole: a label the demos show often,
or one the model favours anyway (``sql`` for anything that mentions data), wins requests it
should not, and a rare label (``clarify``, ``refuse``) loses ones it should win even when it is
the runner-up. Adding a fixed offset ``b_k`` to each intent's log probability (contextual
calibration; here the offsets are learned, ``routerlab optimize --optimizer calibrated``) moves
those decision boundaries without another LM call:

    calibrated(p)_k = softmax_k(log p_k + b_k)

The offsets are part of a compiled ``dspy`` program (saved in its JSON), fitted once on train and
frozen; a router applies them to every distribution it reads.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from routerlab.agents.lm.scoring import normalise
from routerlab.routers.lm_intent import OnePass

__all__ = ["FLOOR", "calibrated", "shift"]

FLOOR = 1e-12
"""Smallest probability a log is taken of (a label the LM gave exactly 0 stays last, not -inf)."""


def calibrated(probs: Mapping[str, float], offsets: Mapping[str, float]) -> dict[str, float]:
    """``softmax(log p_k + b_k)`` over the labels of ``probs``; labels without an offset get 0.

    The label order of ``probs`` is kept, so ties still go to the first label.
    """
    if not offsets:
        return dict(probs)
    return normalise({k: math.log(max(p, FLOOR)) + float(offsets.get(k, 0.0)) for k, p in probs.items()})


def shift(one: OnePass, offsets: Mapping[str, float]) -> OnePass:
    """``one`` with its distribution calibrated by ``offsets``: the intent and confidence re-read.

    The usage and token accounting are the call's own (calibration costs no LM call).
    """
    if not offsets:
        return one
    scores = dataclasses.replace(one.scores, probs=calibrated(one.scores.probs, offsets))
    return OnePass(scores.best, scores.confidence, scores, one.usage)
