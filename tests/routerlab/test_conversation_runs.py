"""``routerlab run --dataset sparc`` end to end: question/interaction EX per turn, clustered intervals and
paired tests, in the console, ``compare`` and MLflow.

The real pipeline, the shared SParC file and its real SQLite databases, a real DuckDB store and a
real MLflow store; the scripted LM (``scripted:basic``) only drives control flow. Skipped where
the shared data is absent (``ROUTERLAB_SPIDER_DEV``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from routerlab.cli import app
from routerlab.eval.conversation_metrics import turn_bucket
from routerlab.eval.store import ResultsStore
from tests.conftest import SPIDER_DEV_A

SPARC = SPIDER_DEV_A.parent / "sparc-dev-a"

pytestmark = pytest.mark.skipif(
    not (SPARC / "dev.json").is_file() or not (SPIDER_DEV_A / "database").is_dir(),
    reason="shared conversation data not found (set ROUTERLAB_SPIDER_DEV)",
)


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> tuple[Path, str, str]:
    """One run session of oracle and rules on 8 SParC conversations (one with 4+ turns)."""
    tmp = tmp_path_factory.mktemp("sparc")
    store, uri = tmp / "r.duckdb", f"sqlite:///{tmp}/mlflow.db"
    args = ["run", "--dataset", "sparc", "--dataset-path", str(SPARC), "--router", "oracle,rules"]
    args += ["--lm", "scripted:basic", "--limit", "20", "--store", str(store), "--tracking-uri", uri]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    session_id = next(line.split()[2] for line in result.output.splitlines() if line.startswith("session id:"))
    return store, uri, session_id + "|" + result.output


def test_console_shows_question_interaction_and_turn_figures(session):
    output = session[2].split("|", 1)[1]
    flat = " ".join(output.split())
    for column in ("question EX", "interaction EX", "turn 1 EX", "turn 2 EX", "turn 3 EX"):
        assert column in flat
    assert "every turn of a conversation right" in flat


def test_compare_json_and_pairs_resample_conversations(session):
    store, _, sid = session[0], session[1], session[2].split("|", 1)[0]
    result = CliRunner().invoke(app, ["compare", sid, "--store", str(store), "--format", "json"])
    assert result.exit_code == 0, result.output
    (part,) = json.loads(result.output)["parts"]
    stored = ResultsStore(store, read_only=True)
    for router in part["routers"]:
        figures = router["figures"]
        results = stored.results(router["run_id"])
        turns = [r for r in results if r.conversation]
        convs = {r.conversation for r in turns}
        assert figures["conversation.n"] == len(convs)
        ex = [r.value("ex") for r in turns if r.value("ex") is not None]
        assert figures["question.ex"] == pytest.approx(sum(ex) / len(ex))
        assert figures["question.ex_n"] == len(ex)
        # interaction EX: a conversation counts when every one of its turns is right
        by_conv: dict[str, list[float]] = {}
        for r in turns:
            by_conv.setdefault(str(r.conversation), []).append(float(r.value("ex") or 0))
        assert figures["conversation.ex"] == pytest.approx(
            sum(all(v >= 1 for v in vs) for vs in by_conv.values()) / len(by_conv)
        )
        for bucket in ("1", "2", "3"):
            mine = [r.value("ex") for r in turns if turn_bucket(r.turn) == bucket and r.value("ex") is not None]
            assert figures[f"turn.{bucket}.ex"] == pytest.approx(sum(mine) / len(mine))
    # turns of conversations are not independent pairs: the sign-flip test over whole conversations
    pairs = [p for p in part["pairs"] if p["measure"] == "ex"]
    repeats = [r for r in part["routers"] if r["same_as"]]  # a baseline that decided as rules is not tested
    assert (pairs or repeats) and all(p["test"] == "sign-flip" for p in pairs)


def test_mlflow_has_the_conversation_metrics(session):
    from mlflow import MlflowClient

    client = MlflowClient(session[1])
    exps = [e.experiment_id for e in client.search_experiments()]
    # one run per router (the session's parent run holds no rates)
    runs = [r for r in client.search_runs(exps) if "n_examples" in r.data.metrics]
    assert len(runs) == 2
    for run in runs:
        m = run.data.metrics
        for key in ("question.ex", "question.ex_ci_low", "conversation.ex", "conversation.ex_ci_high", "turn.1.ex"):
            assert key in m, sorted(m)
        assert m["question.ex_ci_low"] <= m["question.ex"] <= m["question.ex_ci_high"]
        # the run's overall EX interval is the conversation-clustered one
        assert (m["ex_low"], m["ex_high"]) == (m["question.ex_ci_low"], m["question.ex_ci_high"])
