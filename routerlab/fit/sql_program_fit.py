"""Compile a ``generate_sql`` program on the built-in benchmark's train split (``scripts/compile_generate_sql.py``).

The optimizer is DSPy's ``BootstrapFewShot`` (the ``bootstrap`` entry of
:data:`routerlab.fit.optimizers.optimizer`), with ``demos`` bootstrapped demos topped up with labelled
ones to twice as many, and no search. Why that one (recorded in every program's provenance as
:data:`WHY`):

* DSPy's optimizer guide recommends ``BootstrapFewShot`` for a few examples and a small budget,
  and the search optimizers (``BootstrapFewShotWithRandomSearch``, ``MIPROv2``) for hundreds of
  examples and budgets of many full evaluations. Each evaluation of this program is a
  1,000-token prompt on a 1.5B model on 2 cores (about 2 s a question, prefix cached): a search
  over even 8 candidate demo sets on the 62 train questions would take most of an hour, and the
  train split is too small to choose among them without overfitting.
* Bootstrapped demos are questions the model itself answered right under execution match, in
  the model's own SQL style; the labelled top-up shows the gold SQL of others. Both are shown
  without their schema (:mod:`routerlab.agents.tools.sql_program`), so 2-4 demos cost about
  80 tokens each of a 4,096-token context.
* Cross-domain demos without their schema are the "DAIL organisation" of Gao et al. (2023): the
  demos teach the task format and the dialect, not the database; the built-in database is not
  one the program is measured on.

The metric is execution match (:class:`~routerlab.eval.scorers.execution.ExecutionAccuracy`,
Spider semantics) of the query read out of the reply (``output``: the pipeline's output handling)
against the gold query on the example's database. Only the built-in train split is read: its
data questions (intent ``sql`` with a gold query).
"""

from __future__ import annotations

import datetime as _dt
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError
from routerlab.agents.lm.adapter import lm_context
from routerlab.agents.registry import component_spec
from routerlab.agents.tools import ToolSettings
from routerlab.agents.tools.framing import SQL_OUTPUT
from routerlab.agents.tools.schema_linking import link_tables
from routerlab.agents.tools.sql_program import SQLProgram, sql_program_path
from routerlab.agents.tools.views import render_schema
from routerlab.agents.trace import Trace
from routerlab.benchmarks.example import Example
from routerlab.eval.scorers.execution import ExecutionAccuracy
from routerlab.eval.tracking.provenance import git_commit
from routerlab.fit.optimizers import optimizer as optimizer_registry
from routerlab.routers.dspy_router import save_meta

__all__ = ["OPTIMIZER", "WHY", "SqlFitReport", "fit_sql_program", "sql_train_examples", "to_sql_examples"]

#: the one optimizer the program is compiled with (a name in :data:`routerlab.fit.optimizers.optimizer`)
OPTIMIZER = "bootstrap"

WHY = (
    "BootstrapFewShot, no search: DSPy's guide recommends it for few examples and a small budget; one "
    "evaluation of the 62 train questions costs minutes on a 1.5B model on 2 cores, so a search "
    "(random search, MIPROv2) over candidate demo sets does not fit ~20 minutes and would overfit 62 "
    "questions. Bootstrapped demos are questions the model answered right (execution match), in its own "
    "style; demos are shown without their schema (Gao et al. 2023, DAIL organisation) to fit 4,096 tokens."
)

#: the split a program is compiled on (never dev: the built-in dev split is a reported set)
SPLIT = "train"


@dataclass
class SqlFitReport:
    """What a compile produced (also written next to the program as ``.meta.json``).

    Attributes:
        optimizer: Registered optimizer name.
        optimizer_args: Its recorded settings (bootstrapped demos; labelled ones fill up to twice).
        why: Why that optimizer (:data:`WHY`).
        dataset: The dataset compiled on (``builtin``) and its digest.
        split: The split compiled on (``train``) and ``train_size``, its data questions used.
        seed: Order in which the optimizer walks the train questions.
        lm: The LM spec the program was compiled on.
        metric: The metric (execution match, its mode) and ``output``, how a reply is read.
        demos: Demos in the saved program, and ``demo_questions``, theirs.
        train_score: Execution accuracy of the compiled program on the ``train_size`` train
            questions (its demos' questions included); ``zero_shot_train_score``: the
            uncompiled program's on the same questions (None when skipped).
        commit: The checkout's git commit; ``date``; ``dspy_version``; ``program_file``.
    """

    optimizer: str
    optimizer_args: dict[str, Any]
    why: str
    dataset: str
    dataset_digest: str
    split: str
    train_size: int
    seed: int
    lm: str
    metric: str
    output: str
    demos: int
    demo_questions: list[str]
    train_score: float
    zero_shot_train_score: float | None
    compile_seconds: float
    seconds: float
    commit: str
    date: str
    dspy_version: str
    program_file: str
    settings: dict[str, Any] = field(default_factory=dict)


def sql_train_examples(dataset: Any, limit: int | None = None) -> list[Example]:
    """The data questions (intent ``sql`` with a gold query) of ``dataset``'s train split.

    Raises:
        ConfigError: ``dataset`` is not the built-in benchmark, or its train split has none.
    """
    if dataset.name != "builtin":
        raise ConfigError(
            f"a generate_sql program is compiled on the built-in benchmark, not {dataset.name!r}",
            expected="the builtin dataset's train split",
            found=dataset.name,
            fix="drop --dataset (spider-dev-a, cosql, sparc and every dev split are reported sets)",
        )
    examples = [e for e in dataset.split(SPLIT) if e.intent == "sql" and e.gold_sql]
    if not examples:
        raise ConfigError(
            "no data questions in the train split",
            expected="examples of intent sql with a gold query",
            found="0",
            fix="check the built-in benchmark (routerlab validate)",
        )
    return examples[:limit] if limit else examples


def to_sql_examples(examples: Sequence[Example], settings: ToolSettings) -> list[dspy.Example]:
    """DSPy examples ``(db_schema, dialect, hint, question) -> sql``, each with its ``id``.

    ``db_schema`` is what ``data_discovery`` hands ``generate_sql`` under ``settings`` (the linked
    tables in the schema view), so the teacher sees the pipeline's prompt; the demos drop it.
    """
    out = []
    for e in examples:
        db = open_database(e.db_path)
        tables = link_tables(db, e.question, settings)
        schema = render_schema(
            settings.schema_view, db, tables, foreign_keys=settings.foreign_keys, example_values=settings.example_values
        )
        out.append(
            dspy.Example(
                id=e.id, db_schema=schema, dialect=db.dialect, hint=e.hint or "", question=e.question, sql=e.gold_sql
            ).with_inputs("db_schema", "dialect", "hint", "question")
        )
    return out


class _ExecutionMatch:
    """DSPy metric: the reply's query returns what the gold query returns on the example's database."""

    def __init__(self, examples: Sequence[Example], output: str) -> None:
        self.by_id = {e.id: e for e in examples}
        self.output = output
        self.scorer = ExecutionAccuracy(gold_cache=False)

    def __call__(self, example: dspy.Example, pred: dspy.Prediction, trace: Any = None) -> bool:
        """True on an execution match (an unreadable or failing query is no match)."""
        gold = self.by_id[example.id]
        sql = SQL_OUTPUT[self.output](str(getattr(pred, "sql", "") or ""), example.dialect)
        return self.scorer.score(gold, Trace(example_id=gold.id, sql=sql)).value == 1.0


def _score(program: dspy.Module, data: Sequence[dspy.Example], metric: _ExecutionMatch, label: str) -> float:
    """Execution accuracy of ``program`` on ``data``, with a progress bar on stderr."""
    from rich.console import Console
    from rich.progress import track

    hits = 0
    for ex in track(data, description=label, console=Console(stderr=True)):
        try:
            pred = program(**ex.inputs())
        except (AdapterParseError, ValueError, RuntimeError):  # an unparsable reply is a miss, never a crashed compile
            continue
        hits += metric(ex, pred)
    return round(hits / len(data), 4) if data else float("nan")


def fit_sql_program(
    dataset: Any,
    lm: Any,
    *,
    lm_spec: str,
    demos: int = 2,
    seed: int = 0,
    output: str = "extract",
    train_limit: int | None = None,
    out: Path | None = None,
    zero_shot: bool = True,
    settings: ToolSettings | None = None,
) -> SqlFitReport:
    """Compile :class:`SQLProgram` on the built-in train split's data questions and save it.

    Args:
        dataset: The loaded built-in benchmark.
        lm: The LM the program will run on.
        lm_spec: Its spec, recorded.
        demos: Bootstrapped demos (labelled demos fill the program up to twice as many).
        seed: Order in which the optimizer walks the train questions (it keeps the first it gets right).
        output: How a reply is read (a name in ``SQL_OUTPUT``; the measured configs use ``extract``).
        train_limit: Use the first N train questions (None: all).
        out: Program file (default ``routers/programs/generate_sql_builtin.json``).
        zero_shot: Also score the uncompiled program on the train questions.
        settings: The pipeline settings whose discovery schema the teacher sees (default: defaults).

    Raises:
        ConfigError: Not the built-in benchmark, bad ``demos`` or an unknown ``output``.
    """
    if output not in SQL_OUTPUT:
        raise ConfigError(
            f"unknown SQL output handling {output!r}",
            expected=f"one of {', '.join(SQL_OUTPUT)}",
            found=repr(output),
            fix="pass --output extract (the measured configs') or clean",
        )
    opt = optimizer_registry.build(OPTIMIZER, demos=demos, seed=seed)
    settings = settings or ToolSettings()
    examples = sql_train_examples(dataset, train_limit)
    data = to_sql_examples(examples, settings)
    walk = list(data)
    random.Random(seed).shuffle(walk)  # bootstrapping keeps the first demos that pass: a seeded walk
    metric = _ExecutionMatch(examples, output)
    t0 = time.perf_counter()
    with lm_context(lm), dspy.context(num_threads=1):
        zero = _score(SQLProgram(), data, metric, "zero-shot on train") if zero_shot else None
        t1 = time.perf_counter()
        compiled = opt.compile(SQLProgram(), trainset=walk, valset=[], metric=metric, lm=lm)
        compile_seconds = time.perf_counter() - t1
        compiled.strip_demos()
        train = _score(compiled, data, metric, "compiled on train")
    path = out or sql_program_path(dataset.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    compiled.save(str(path))
    report = SqlFitReport(
        optimizer=OPTIMIZER,
        optimizer_args=dict(component_spec(opt)["args"]),
        why=WHY,
        dataset=dataset.name,
        dataset_digest=dataset.digest(),
        split=SPLIT,
        train_size=len(data),
        seed=seed,
        lm=lm_spec,
        metric="execution match (ex, spider mode) against the gold query on the example's database",
        output=output,
        demos=len(compiled.generate.demos),
        demo_questions=[d["question"] for d in compiled.generate.demos],
        train_score=train,
        zero_shot_train_score=zero,
        compile_seconds=round(compile_seconds, 1),
        seconds=round(time.perf_counter() - t0, 1),
        commit=git_commit(),
        date=_dt.date.today().isoformat(),
        dspy_version=dspy.__version__,
        program_file=path.name,
        settings={k: getattr(settings, k) for k in ("schema_view", "foreign_keys", "example_values", "linking")},
    )
    save_meta(path, asdict(report))
    return report
