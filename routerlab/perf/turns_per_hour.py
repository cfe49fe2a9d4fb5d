"""``routerlab perf``'s turns-per-hour section: conversation turns through ``oracle``, K examples at a time.

The sample is fixed: whole conversations, taken in file order, alternately from SParC and CoSQL
(the ``sparc*`` and ``cosql*`` folders beside ``--databases``) on the *tune* half of their
databases (the ``sorted-alternate`` rule), so the figures never come from the databases results
are reported on. Without ``--databases`` the built-in conversations are the sample.

The sample is cut into blocks of whole conversations. Each block runs once at every setting (``K``
examples at once: ``routerlab run --concurrency K``; K = 1 is today's decoding, one call after
another), in alternating order from block to block so drifting load falls on every setting alike,
through the runner ``routerlab run`` uses, with the LM response cache off. Turns per hour per
setting are the sample's turns over the summed seconds, with a bootstrap interval over blocks;
the speed-up likewise. The outputs are compared example by example: the SQL and EX of every turn
against K = 1's, and for a turn whose reply differs, where the together-decoded reply parts from
the plain one and its top-2 logit margin (re-decoded plainly from the same prompt).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from routerlab._runs.runner import RouterRun, RunConfig, build_scorers, run_router
from routerlab.agents.lm import resolve_lm
from routerlab.agents.lm.local import clear_models
from routerlab.agents.lm.speculative import NEAR_TIE
from routerlab.benchmarks.dataset import dataset
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders.blend import sorted_alternate
from routerlab.eval.scoring import ExampleResult
from routerlab.perf._common import PerfFigure
from routerlab.perf.sql_decoding import first_difference

__all__ = ["conversation_sample", "turns_per_hour"]

_SECTION = "turns per hour"

#: the issue's goal for the default settings against today's (K = 1) turns per hour
_GOAL = 2.0


def _beside(databases: Path, prefix: str) -> Path | None:
    found = sorted(p for p in databases.parent.glob(f"{prefix}*") if (p / "dev.json").is_file())
    return found[0] if found else None


def conversation_sample(databases: Path | None, conversations: int) -> list[list[Example]]:
    """The fixed sample: ``conversations`` whole conversations on tune databases (see the module docstring).

    Raises:
        DatasetError: A SParC or CoSQL folder beside ``databases`` that does not load.
    """
    if databases is None:
        by: dict[str, list[Example]] = {}
        for e in dataset.build("builtin_conversations").examples:
            by.setdefault(str(e.conversation), []).append(e)
        return [sorted(c, key=lambda e: e.turn) for c in by.values()][:conversations]
    releases = [(name, folder) for name in ("sparc", "cosql") if (folder := _beside(databases, name)) is not None]
    pools: list[list[list[Example]]] = []
    for name, folder in releases:
        loaded = dataset.build(name, path=str(folder), db_dir=str(databases / "database")).examples
        by = {}
        for e in loaded:
            by.setdefault(str(e.conversation), []).append(e)
        pools.append([sorted(c, key=lambda e: e.turn) for c in by.values()])
    tune = set(sorted_alternate([c[0].db_id for pool in pools for c in pool])[0])
    pools = [[c for c in pool if c[0].db_id in tune] for pool in pools]
    out: list[list[Example]] = []
    while len(out) < conversations and any(pools):
        for pool in pools:
            if pool and len(out) < conversations:
                out.append(pool.pop(0))
    return out


def _interval(turns: np.ndarray, seconds: np.ndarray, resamples: int = 2000) -> tuple[float, float]:
    """Bootstrap interval of turns per hour, blocks resampled."""
    rng = np.random.default_rng(0)
    pick = rng.integers(0, turns.size, size=(resamples, turns.size))
    rates = 3600 * turns[pick].sum(axis=1) / seconds[pick].sum(axis=1)
    return (float(np.quantile(rates, 0.025)), float(np.quantile(rates, 0.975)))


def _ratio_interval(base: np.ndarray, other: np.ndarray, resamples: int = 2000) -> tuple[float, float]:
    """Bootstrap interval of ``sum(base) / sum(other)`` (seconds: the speed-up), blocks resampled as pairs."""
    rng = np.random.default_rng(0)
    pick = rng.integers(0, base.size, size=(resamples, base.size))
    ratios = base[pick].sum(axis=1) / other[pick].sum(axis=1)
    return (float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975)))


def _parting(engine: Any, sql: str) -> str:
    """Where the together-decoded reply holding ``sql`` parts from the plain decoding of its prompt."""
    llm = engine.llama()
    log = getattr(getattr(llm, "_routerlab_together", None), "log", ())
    squash = " ".join(sql.split())
    for prompt, decoded in reversed(log):
        if squash and squash in " ".join(decoded.text.split()):
            plain = llm.create_completion(prompt, max_tokens=len(decoded.tokens) + 8, temperature=0.0)
            text = plain["choices"][0]["text"]
            if text.startswith(decoded.text) or decoded.text.startswith(text):
                return "same reply (the turn's input differed: an earlier turn parted)"
            j, piece, margin = first_difference(llm, text, decoded)
            tie = "a near-tie" if margin < NEAR_TIE else "NOT a near-tie"
            return f"parts at token {j} ({piece!r}), top-2 margin {margin:.3f}: {tie}"
    return "its call is no longer in the log"


def turns_per_hour(
    spec: str = "local",
    databases: Path | None = None,
    conversations: int = 12,
    per_block: int = 3,
    settings: Sequence[int] = (1, 2),
) -> list[PerfFigure]:
    """Turns per hour through ``oracle`` at each setting of ``--concurrency``; see the module docstring.

    Args:
        spec: The LM (the embedded model: the section compares its decoding).
        databases: A Spider-layout folder with the SParC and CoSQL folders beside it (None: the
            built-in conversations).
        conversations: Conversations in the sample.
        per_block: Conversations per block (the unit the intervals resample).
        settings: The ``--concurrency`` values compared, today's (1) first.
    """
    sample = conversation_sample(databases, conversations)
    blocks = [sample[i : i + per_block] for i in range(0, len(sample), per_block)]
    clear_models()  # the only model in memory
    lm = resolve_lm(spec, cache=False, max_tokens=256)
    engine = getattr(lm, "_engine_spec", None)
    if not hasattr(engine, "llama"):
        return [PerfFigure(_SECTION, "skipped: not the embedded engine", 0, "")]
    config = RunConfig(dataset="perf", lm=spec, lm_cache=False)
    run = RouterRun("oracle", {}, lm, config, build_scorers(config))
    seconds = {k: np.zeros(len(blocks)) for k in settings}
    turns = np.array([sum(len(c) for c in block) for block in blocks], dtype=float)
    results: dict[int, dict[str, ExampleResult]] = {k: {} for k in settings}
    for b, block in enumerate(blocks):
        order = list(settings) if b % 2 == 0 else list(reversed(settings))
        for k in order:
            got: list[ExampleResult] = []
            t = time.perf_counter()
            with mock.patch.dict(os.environ, {"ROUTERLAB_DECODE_TOGETHER": "on"}):
                run_router(run, [e for c in block for e in c], on_result=got.append, concurrency=k)
            seconds[k][b] = time.perf_counter() - t
            results[k].update({r.example_id: r for r in got})
    base = settings[0]
    label = f"sample: {len(sample)} conversations in {len(blocks)} blocks"
    figures = [PerfFigure(_SECTION, label, float(turns.sum()), "turns")]
    rate = {}
    for k in settings:
        rate[k] = float(3600 * turns.sum() / seconds[k].sum())
        low, high = _interval(turns, seconds[k])
        label = f"K={k}: turns per hour (95% interval {low:.0f}-{high:.0f}; {seconds[k].sum():.0f} s)"
        figures.append(PerfFigure(_SECTION, label, round(rate[k], 1), "turns/h"))
    for k in settings[1:]:
        same_sql = same_ex = 0
        differing: list[str] = []
        for eid, r in results[base].items():
            other = results[k][eid]
            plain_sql = (r.trace.sql if r.trace else "") or ""
            together_sql = (other.trace.sql if other.trace else "") or ""
            same_sql += plain_sql == together_sql
            same_ex += r.value("ex") == other.value("ex")
            if plain_sql != together_sql:
                differing.append(eid)
        n = len(results[base])
        low, high = _ratio_interval(seconds[base], seconds[k])
        speedup = rate[k] / rate[base]
        figures += [
            PerfFigure(_SECTION, f"K={k}: identical SQL to K={base}", same_sql, f"of {n}"),
            PerfFigure(_SECTION, f"K={k}: identical EX to K={base}", same_ex, f"of {n}"),
            PerfFigure(
                _SECTION,
                f"K={k}: turns per hour against K={base} (95% interval {low:.2f}-{high:.2f})",
                round(speedup, 2),
                "x",
                f">= {_GOAL}x",
                bool(speedup >= _GOAL),
            ),
        ]
        for eid in differing:
            trace = results[k][eid].trace
            where = _parting(engine, (trace.sql if trace else "") or "")
            figures.append(PerfFigure(_SECTION, f"K={k}: {eid} differs: {where}", 0, ""))
    clear_models()
    return figures
