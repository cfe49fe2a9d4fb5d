"""The ``semantic`` router: nearest exemplars in an embedding space, no LM on the confident path.

Semantic-router style: every exemplar request (the built-in benchmark's train split, committed as
``routers/programs/semantic_builtin.json``) is embedded once with the packaged all-MiniLM-L6-v2
int8 ONNX model (:func:`routerlab.agents.tools.index.load_embedder`), and a new request is routed
by similarity:

* ``centroid``: cosine similarity to each intent's mean exemplar vector;
* ``knn``: for each intent, the summed similarity of its exemplars among the ``k`` nearest.

The margin between the best and the second-best intent decides. At or above a threshold the
router answers alone (method ``semantic:centroid`` / ``semantic:knn``, no LM call, one embedding
of the request); below it the ``fallback`` decides (``semantic:fallback-rules`` or
``semantic:fallback-llm``). The threshold is calibrated on held-back exemplars only: the
exemplars are dealt into folds per intent, each fold is scored against the centroids (or
neighbours) of the others, and

* with the rules fallback, the threshold maximises the held-back accuracy of "semantic above,
  rules below" (the rules run on the same held-back requests);
* with the LM fallback (whose answers cannot be known without calling it), the threshold is the
  smallest margin above which the held-back decisions reach ``precision``.

Exemplar vectors are cached on disk under ``cache_root()/semantic``, keyed by a digest of the
exemplar texts and of the embedding model, so only the first run of a machine embeds them.

The exemplar file is plain data because routers may not import the benchmarks layer; rewrite it
from the train split with :func:`write_exemplars` (``tests/routers/test_semantic.py`` checks that
it still equals that split)::

    from routerlab.benchmarks.builtin.loader import load_builtin
    from routerlab.routers.semantic import exemplar_path, write_exemplars
    ds = load_builtin()
    train = [(e.id, e.question, e.intent) for e in ds.examples if e.split == "train"]
    write_exemplars(exemplar_path("builtin"), train, source=f"builtin {ds.version} split_seed=0 train")
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from routerlab.agents.errors import ConfigError, DatasetError
from routerlab.agents.routing import RouterEnv
from routerlab.agents.state import INTENTS, PipelineState
from routerlab.agents.tools.index import Embedder, load_embedder
from routerlab.agents.tools.text import normalise_request
from routerlab.agents.trace import Usage
from routerlab.agents.turn_history import history_of
from routerlab.routers.base import require_lm, router
from routerlab.routers.llm import intent_by_tool_call
from routerlab.routers.rules import RulesRouter
from routerlab.routers.support.embedding_cache import embed_cached
from routerlab.routers.support.intent import Classification, IntentRouter
from routerlab.routers.support.turns import split_social

__all__ = [
    "EXEMPLAR_DIR",
    "FALLBACKS",
    "STRATEGIES",
    "Calibration",
    "SemanticRouter",
    "embed_cached",
    "exemplar_names",
    "exemplar_path",
    "read_exemplars",
    "write_exemplars",
]

EXEMPLAR_DIR = Path(__file__).parent / "programs"
STRATEGIES: tuple[str, ...] = ("centroid", "knn")
FALLBACKS: tuple[str, ...] = ("rules", "llm")


def exemplar_path(name: str) -> Path:
    """Where the committed exemplar set ``name`` lies (``routers/programs/semantic_<name>.json``)."""
    return EXEMPLAR_DIR / f"semantic_{name}.json"


def write_exemplars(path: Path, records: Sequence[tuple[str, str, str]], *, source: str) -> None:
    """Write ``(id, text, intent)`` records as an exemplar file, with where they came from.

    Args:
        path: The file to write.
        records: One ``(id, text, intent)`` per exemplar, in a stable order.
        source: Provenance shown in the file (dataset, version, split).
    """
    data = {
        "source": source,
        "examples": [{"id": i, "text": t, "intent": it} for i, t, it in records],
    }
    Path(path).write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def exemplar_names() -> list[str]:
    """Names of the committed exemplar sets (``routers/programs/semantic_<name>.json``)."""
    return sorted(p.stem.removeprefix("semantic_") for p in EXEMPLAR_DIR.glob("semantic_*.json"))


def read_exemplars(source: str) -> tuple[list[str], list[str], str]:
    """Texts, intents and provenance of an exemplar set.

    Args:
        source: A committed set's name (``builtin``) or the path of an exemplar JSON file.

    Raises:
        DatasetError: When the file is missing, malformed, names an unknown intent, or gives an
            intent fewer than two exemplars (calibration holds one back).
    """
    path = Path(source) if source.endswith(".json") or os.sep in source else exemplar_path(source)
    fix = "pass exemplars='builtin' or the path of a file written by write_exemplars()"
    if not path.is_file():
        known = exemplar_names()
        raise DatasetError(
            f"no exemplar set {source!r}",
            expected=f"one of {known} or an existing JSON file",
            found=f"no file at {path}",
            fix=fix,
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        texts = [str(r["text"]) for r in data["examples"]]
        intents = [str(r["intent"]) for r in data["examples"]]
        provenance = str(data.get("source", ""))
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise DatasetError(
            "the exemplar file is malformed",
            expected='{"source": ..., "examples": [{"id", "text", "intent"}, ...]}',
            found=f"{type(exc).__name__}: {exc} in {path}",
            fix=fix,
        ) from None
    unknown = sorted(set(intents) - set(INTENTS))
    counts = {i: intents.count(i) for i in sorted(set(intents))}
    if unknown or len(counts) < 2 or min(counts.values()) < 2:
        raise DatasetError(
            "the exemplar set cannot train the semantic router",
            expected=f"at least two intents among {list(INTENTS)}, each with two or more exemplars",
            found=f"unknown intents {unknown}" if unknown else f"exemplars per intent {counts}",
            fix=fix,
        )
    return texts, intents, provenance


def _folds(texts: Sequence[str], intents: Sequence[str], n_folds: int) -> np.ndarray:
    """Fold of each exemplar: dealt round-robin per intent in an order fixed by the text's hash."""
    fold = np.zeros(len(texts), dtype=int)
    for intent in sorted(set(intents)):
        members = [i for i, it in enumerate(intents) if it == intent]
        members.sort(key=lambda i: hashlib.sha256(texts[i].encode()).hexdigest())
        for j, i in enumerate(members):
            fold[i] = j % n_folds
    return fold


class Calibration:
    """Held-back decisions of the exemplar set and the thresholds chosen from them.

    Attributes:
        threshold: Margin at or above which the semantic decision stands.
        floors: Per intent label, the similarity to the nearest exemplar a request must reach for
            a semantic decision of that intent (requests unlike every exemplar go to the fallback).
        margins: Held-back margins, one per exemplar.
        nearest: Held-back similarity to the nearest kept exemplar, one per exemplar.
        predicted: Held-back predicted label index, one per exemplar.
        correct: Whether each held-back semantic decision was right.
        fallback_correct: Whether the rules were right on it (``None`` for the LM fallback).
        scale: Median held-back margin of right decisions (sets the confidence curve).
    """

    def __init__(
        self,
        threshold: float,
        floors: np.ndarray,
        margins: np.ndarray,
        nearest: np.ndarray,
        predicted: np.ndarray,
        correct: np.ndarray,
        fallback_correct: np.ndarray | None,
        scale: float,
    ) -> None:
        self.threshold = threshold
        self.floors = floors
        self.margins = margins
        self.nearest = nearest
        self.predicted = predicted
        self.correct = correct
        self.fallback_correct = fallback_correct
        self.scale = scale

    def kept(self) -> np.ndarray:
        """Which held-back requests the semantic decision kept (margin and floor both cleared)."""
        return (self.margins >= self.threshold) & (self.nearest >= self.floors[self.predicted])

    def coverage(self) -> float:
        """Share of held-back requests the semantic decision kept."""
        return float(self.kept().mean())

    def accuracy(self) -> float:
        """Held-back accuracy with the rules below the thresholds (the kept ones alone for the LM)."""
        kept = self.kept()
        if self.fallback_correct is None:
            return float(self.correct[kept].mean()) if kept.any() else float("nan")
        return float(np.where(kept, self.correct, self.fallback_correct).mean())


def _best_combined_threshold(margins: np.ndarray, correct: np.ndarray, fallback_correct: np.ndarray) -> float:
    """The margin that maximises "semantic at or above, fallback below" (ties: more semantic).

    A margin of ``-inf`` marks a request that goes to the fallback whatever the threshold.
    """
    order = np.argsort(-margins, kind="stable")
    m, c, f = margins[order], correct[order].astype(int), fallback_correct[order].astype(int)
    usable = int(np.isfinite(m).sum())
    # keeping the top n: sum of c over them plus f over the rest
    totals = (np.concatenate([[0], np.cumsum(c)]) + np.concatenate([[f.sum()], f.sum() - np.cumsum(f)]))[: usable + 1]
    best = int(np.flatnonzero(totals == totals.max())[-1])
    return float("inf") if best == 0 else float(m[best - 1])


def _precision_threshold(margins: np.ndarray, correct: np.ndarray, precision: float) -> float:
    """The smallest margin above which the held-back decisions are right at least ``precision`` often."""
    order = np.argsort(-margins, kind="stable")
    hits = np.cumsum(correct[order]) / np.arange(1, len(order) + 1)
    ok = np.flatnonzero((hits >= precision) & np.isfinite(margins[order]))
    return float("inf") if len(ok) == 0 else float(margins[order][ok[-1]])


@router("semantic")
class SemanticRouter(IntentRouter):
    """Route by similarity to embedded exemplar requests; a fallback decides the unsure ones.

    Args:
        exemplars: A committed exemplar set (``builtin``: the built-in train split) or the path
            of an exemplar JSON file (:func:`write_exemplars`).
        strategy: ``centroid`` (similarity to each intent's mean vector) or ``knn``.
        k: Neighbours consulted by ``knn``.
        fallback: ``rules`` (no LM ever) or ``llm`` (one tool-calling LM request).
        threshold: Margin at or above which the semantic decision stands; ``None`` calibrates it
            on held-back exemplars.
        precision: Held-back precision the calibrated threshold must reach with the LM fallback.
        floor_quantile: Per intent, the share of right held-back decisions allowed below that
            intent's nearest-exemplar floor; a request less similar than the floor to every
            exemplar goes to the fallback (0 turns the floors off).
        folds: Folds of the held-back calibration (each exemplar is held back once).
        fix_budget: fix_sql calls a failed execution may trigger.
        max_tokens: Completion budget of the fallback LM call.
        ambiguity_first: Let the schema-grounded ambiguity checks (``routers/support/ambiguity.py``,
            each a clarify rule of the ``rules`` table) decide before the embedding, as the turn
            checks do: a request that leaves a column, a measure, a table or a referent open on its
            database, with the conversation settling none of it, is asked about whatever its
            nearest exemplars say. False: they decide only on the rules fallback (the former
            behaviour, for a before/after measurement).
        rules_without: Rules left out of the table the turn checks, the ambiguity checks and the
            rules fallback read (the ``rules`` router's ``without``), to switch single checks off.
        data_words_stand: When the rules read the request as a plain data question (their
            ``data_question`` rule wins: data words, no check of theirs fired) and the nearest
            exemplars say anything else, the rules' ``sql`` stands (method
            ``semantic:<strategy>->rules``): an embedding near another intent's exemplars is no
            evidence the request is not for the database (issue 59). False: the embedding decides.

    Raises:
        ConfigError: For an unknown strategy or fallback, or a number out of range.
    """

    #: arguments that name a file, by kind (the server takes only allow-listed names for them)
    file_arguments: ClassVar[dict[str, str]] = {"exemplars": "exemplars"}

    def __init__(
        self,
        exemplars: str = "builtin",
        strategy: str = "centroid",
        k: int = 5,
        fallback: str = "rules",
        threshold: float | None = None,
        precision: float = 0.9,
        floor_quantile: float = 0.05,
        folds: int = 5,
        fix_budget: int = 1,
        max_tokens: int = 256,
        ambiguity_first: bool = True,
        rules_without: Sequence[str] | str = (),
        data_words_stand: bool = True,
    ) -> None:
        super().__init__(fix_budget=fix_budget)
        for label, value, known in (("strategy", strategy, STRATEGIES), ("fallback", fallback, FALLBACKS)):
            if value not in known:
                raise ConfigError(
                    f"unknown semantic router {label} {value!r}",
                    expected=f"one of {list(known)}",
                    found=repr(value),
                    fix=f"pass semantic.{label}={known[0]}",
                )
        checks: tuple[tuple[str, object, bool, str], ...] = (
            ("k", k, k >= 1, "k >= 1"),
            ("folds", folds, folds >= 2, "folds >= 2"),
            ("precision", precision, 0.0 < precision <= 1.0, "0 < precision <= 1"),
            ("floor_quantile", floor_quantile, 0.0 <= floor_quantile < 1.0, "0 <= floor_quantile < 1"),
            ("threshold", threshold, threshold is None or math.isfinite(threshold), "a finite number or None"),
            ("max_tokens", max_tokens, max_tokens >= 1, "max_tokens >= 1"),
        )
        for label, setting, ok, expected in checks:
            if not ok:
                raise ConfigError(
                    f"the semantic router's {label} is out of range",
                    expected=expected,
                    found=repr(setting),
                    fix=f"pass --router-arg semantic.{label}=<value> with {expected}",
                )
        # a missing or unusable exemplar set fails when the router is built, not mid-run
        self._texts, self._intents, self.provenance = read_exemplars(exemplars)
        self.exemplars = exemplars
        self.strategy = strategy
        self.k = k
        self.fallback = fallback
        self.threshold = threshold
        self.precision = precision
        self.floor_quantile = floor_quantile
        self.folds = folds
        self.max_tokens = max_tokens
        self.ambiguity_first = ambiguity_first
        self.data_words_stand = data_words_stand
        self._rules = RulesRouter(fix_budget=fix_budget, without=rules_without)
        self.rules_without = self._rules.without
        # a clarification names only what the checks left in the table find open
        self.clarify_kinds = self._rules.clarify_kinds
        self.embedder: Embedder | None = None
        self.calibration: Calibration | None = None
        self._centroids: np.ndarray | None = None
        self._labels: tuple[str, ...] = ()
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._y = np.zeros(0, dtype=int)

    # -- scoring ---------------------------------------------------------------------------------

    def _centroid_matrix(self, vectors: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Unit-length mean vector of each intent label, one row per label."""
        centroids = np.stack([vectors[y == j].mean(axis=0) for j in range(len(self._labels))])
        return centroids / np.clip(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12, None)

    def _scores(
        self, vectors: np.ndarray, y: np.ndarray, queries: np.ndarray, centroids: np.ndarray | None = None
    ) -> np.ndarray:
        """Score of every intent for every query, shape ``(len(queries), len(self._labels))``."""
        n = len(self._labels)
        if self.strategy == "centroid":
            return queries @ (self._centroid_matrix(vectors, y) if centroids is None else centroids).T
        sims = queries @ vectors.T
        k = min(self.k, len(y))
        # stable sort: equal similarities keep exemplar order, so decisions are reproducible
        top = np.argsort(-sims, axis=1, kind="stable")[:, :k]
        out = np.zeros((len(queries), n))
        for row in range(len(queries)):
            for i in top[row]:
                out[row, y[i]] += sims[row, i]
        return out / k

    def _rank(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Best intent index and best-minus-second margin per row (ties: exemplar label order)."""
        order = np.argsort(-scores, axis=1, kind="stable")
        rows = np.arange(len(scores))
        return order[:, 0], scores[rows, order[:, 0]] - scores[rows, order[:, 1]]

    def _calibrate(self, texts: list[str]) -> Calibration:
        """Score every exemplar against the others' folds, then choose the floors and the threshold."""
        n = len(texts)
        fold = _folds(texts, [self._labels[j] for j in self._y], self.folds)
        margins, nearest = np.full(n, -np.inf), np.full(n, -np.inf)
        predicted, correct = np.zeros(n, dtype=int), np.zeros(n, dtype=bool)
        for f in range(self.folds):
            held = fold == f
            kept = ~held
            if not held.any() or len(set(self._y[kept])) < len(self._labels):
                continue  # a fold that held back a whole intent cannot be scored; its exemplars stay out
            queries = self._vectors[held]
            best, margin = self._rank(self._scores(self._vectors[kept], self._y[kept], queries))
            margins[held], predicted[held], correct[held] = margin, best, best == self._y[held]
            nearest[held] = (queries @ self._vectors[kept].T).max(axis=1)
        floors = np.full(len(self._labels), -np.inf)
        if self.floor_quantile > 0:
            for j in range(len(self._labels)):
                # the floor of an intent comes from its right held-back decisions (all of its
                # held-back requests when none was right)
                pool = nearest[(predicted == j) & correct & (self._y == j)]
                pool = pool if len(pool) else nearest[(self._y == j) & np.isfinite(nearest)]
                if len(pool):
                    floors[j] = float(np.quantile(pool, self.floor_quantile))
        # requests under their floor go to the fallback whatever the margin
        usable = np.where(nearest >= floors[predicted], margins, -np.inf)
        fallback_correct = None
        if self.fallback == "rules":
            truth = [self._labels[j] for j in self._y]
            fallback_correct = np.array(
                [self._rules.match(t)[0].intent == g for t, g in zip(texts, truth, strict=True)]
            )
        if self.threshold is not None:
            threshold = float(self.threshold)
        elif fallback_correct is not None:
            threshold = _best_combined_threshold(usable, correct, fallback_correct)
        else:
            threshold = _precision_threshold(usable, correct, self.precision)
        right = margins[correct & np.isfinite(margins)]
        scale = float(np.median(right)) if len(right) and np.median(right) > 0 else 0.05
        return Calibration(threshold, floors, margins, nearest, predicted, correct, fallback_correct, scale)

    # -- router protocol -------------------------------------------------------------------------

    def bind(self, env: RouterEnv) -> None:
        """Check tools (and the LM for the LM fallback), embed the exemplars, calibrate."""
        if self.fallback == "llm":
            require_lm(env, "the semantic router's LM fallback", fix="pass --lm local, or semantic.fallback=rules")
        super().bind(env)
        self._rules.bind(env)
        self._labels = tuple(i for i in INTENTS if i in set(self._intents))
        self._y = np.array([self._labels.index(i) for i in self._intents], dtype=int)
        self.embedder = load_embedder()
        self._vectors = embed_cached(self.embedder, self._texts)
        self.calibration = self._calibrate(self._texts)
        self._centroids = self._centroid_matrix(self._vectors, self._y)

    def confidence(self, margin: float) -> float:
        """Confidence of a semantic decision: 0.5 at zero margin, rising towards 1 with the margin.

        The margin is measured in units of the typical held-back margin of a right decision, so
        the curve means the same for both strategies.
        """
        scale = self.calibration.scale if self.calibration else 0.05
        return 0.5 + 0.5 * (1.0 - math.exp(-max(margin, 0.0) / scale))

    def classify(self, state: PipelineState) -> Classification:
        """The nearest intent when its margin clears the threshold, else the fallback's intent."""
        assert self.embedder is not None and self.calibration is not None
        question = state.get("question", "") or ""
        # a turn the turn checks place outside the data (small talk, an action the assistant
        # cannot take, general knowledge about a value) is decided by them, as the rules would
        rule, _ = self._rules.match(question, self._database(state), history_of(state))
        if rule.detector is not None and rule.detector.startswith("turn:"):
            return Classification(rule.intent, rule.confidence, f"semantic:turn-check:{rule.name}", Usage())
        if self.ambiguity_first and rule.detector is not None and rule.detector.startswith("ambiguity:"):
            # the ambiguity detectors read the conversation: a finding is still open after it
            return Classification(rule.intent, rule.confidence, f"semantic:ambiguity-check:{rule.name}", Usage())
        # greetings and thanks around a data question are not what it asks: embed the rest
        question = split_social(normalise_request(question)).rest or question
        query = np.asarray(self.embedder.embed([question]), dtype=np.float32)
        best, margin = self._rank(self._scores(self._vectors, self._y, query, self._centroids))
        label, gap = int(best[0]), float(margin[0])
        intent, nearest = self._labels[label], float((self._vectors @ query[0]).max())
        if gap >= self.calibration.threshold and nearest >= self.calibration.floors[label]:
            if self.data_words_stand and intent != "sql" and rule.name == "data_question":
                return Classification("sql", rule.confidence, f"semantic:{self.strategy}->rules", Usage())
            return Classification(intent, self.confidence(gap), f"semantic:{self.strategy}", Usage())  # type: ignore[arg-type]
        if self.fallback == "rules":
            rule_intent, rule_conf, _, _ = self._rules.classify(state)
            return Classification(rule_intent, rule_conf, "semantic:fallback-rules", Usage())
        return self._ask_lm(state, intent, gap)

    def _ask_lm(self, state: PipelineState, intent: str, gap: float) -> Classification:
        """One tool-calling request; an unusable reply keeps the semantic guess."""
        assert self.env is not None
        found, usage = intent_by_tool_call(self.env, state, self.max_tokens)
        if found is not None:
            return Classification(found, 1.0, "semantic:fallback-llm", usage)  # type: ignore[arg-type]
        return Classification(intent, self.confidence(gap), "semantic:fallback-llm(invalid)", usage)  # type: ignore[arg-type]

    def describe(self) -> dict[str, Any]:
        """The calibration in plain numbers (threshold, held-back coverage and accuracy, provenance)."""
        cal = self.calibration
        if cal is None:
            return {"bound": False}
        return {
            "bound": True,
            "exemplars": len(self._y),
            "source": self.provenance,
            "threshold": cal.threshold,
            "floors": {label: float(f) for label, f in zip(self._labels, cal.floors, strict=True)},
            "heldback_coverage": cal.coverage(),
            "heldback_accuracy": cal.accuracy(),
            "heldback_semantic_accuracy": float(cal.correct.mean()),
        }
