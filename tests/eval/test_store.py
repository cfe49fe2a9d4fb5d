"""The DuckDB results store: upserts, resume bookkeeping, round trips, statuses."""

from __future__ import annotations

import json
import threading

import pytest

from routerlab.agents.errors import ConfigError
from routerlab.eval.store import ResultsStore


@pytest.fixture
def store(tmp_path, toy_dataset) -> ResultsStore:
    s = ResultsStore(tmp_path / "sub" / "results.duckdb")
    s.create_run(
        "s1.rules",
        router="rules",
        lm="scripted",
        dataset=toy_dataset,
        split="dev",
        config={"limit": 4},
        params={"router": {"name": "rules", "args": {"threshold": 0.5}}},
    )
    return s


def test_create_run_records_dataset_and_config(store, toy_dataset):
    runs = store.runs()
    assert runs["run_id"].tolist() == ["s1.rules"]
    row = store.run("s1.rules")
    assert row["status"] == "RUNNING"
    assert (row["dataset"], row["dataset_version"], row["dataset_digest"]) == (
        "toy",
        "1",
        toy_dataset.digest(),
    )
    assert row["config"] == {"limit": 4}
    assert row["params"]["router"]["args"] == {"threshold": 0.5}
    assert row["finished_at"] is None or str(row["finished_at"]) in ("NaT", "None")


def test_add_result_is_an_idempotent_upsert(store, make_result):
    store.add_result("s1.rules", make_result("e0", scores={"ex": 0.0}))
    store.add_result("s1.rules", make_result("e0", scores={"ex": 1.0}))  # resume re-ran it
    rows = store.query("SELECT example_id, attempt, score_ex FROM examples")
    assert len(rows) == 1
    assert rows["score_ex"].tolist() == [1.0]  # the later result replaced the earlier one
    store.add_result("s1.rules", make_result("e0", attempt=1))  # another attempt is another row
    assert len(store.query("SELECT * FROM examples")) == 2


def test_completed_ids_per_run_and_attempts(store, make_result, toy_dataset):
    store.create_run("s1.llm", router="llm", lm="scripted", dataset=toy_dataset, split="dev")
    store.add_results(
        "s1.rules",
        [
            make_result("e0"),
            make_result("e1", outcome="crash", scores={"ex": None}),
            make_result("e1", attempt=1),
        ],
    )
    store.add_result("s1.llm", make_result("e2", router="llm"))
    assert store.completed_ids("s1.rules") == {"e0", "e1"}  # a crash is a result: not re-run
    assert store.completed_ids("s1.rules", min_attempts=2) == {"e1"}
    assert store.completed_ids("s1.llm") == {"e2"}
    assert store.completed_ids("nope") == set()


def test_results_round_trip_exactly(store, make_result):
    original = [
        make_result("e1", scores={"ex": 1.0, "route": 1.0, "chain_f1": 0.5}, latency=2.5),
        make_result(
            "e0",
            scores={"ex": None, "success": 0.0},
            intent="chat",
            outcome="error",
            tool_calls=[("run_sql", {"sql": "SELEC"}, {"error": "syntax"}, "error")],
        ),
    ]
    store.add_results("s1.rules", original)
    back = store.results("s1.rules")
    assert [r.example_id for r in back] == ["e0", "e1"]  # ordered by example id
    assert back[1] == original[0]
    assert back[0] == original[1]
    assert back[0].trace.tool_calls[0]["status"] == "error"


def test_flat_columns_for_notebooks(store, make_result):
    store.add_result("s1.rules", make_result("e0", scores={"ex": 1.0, "route": 0.0}, router_tokens=(7, 3)))
    row = store.query("SELECT * FROM examples").iloc[0]
    assert row["score_ex"] == 1.0 and row["score_route"] == 0.0
    assert row["router_prompt_tokens"] == 7 and row["router_completion_tokens"] == 3
    assert row["sql"] == "SELECT 1"
    assert json.loads(row["scores"]) == {"ex": 1.0, "route": 0.0}
    joined = store.query("SELECT r.router, avg(e.score_ex) AS ex FROM examples e JOIN runs r USING (run_id) GROUP BY 1")
    assert joined.to_dict("records") == [{"router": "rules", "ex": 1.0}]


def test_a_new_scorer_gets_its_own_column(store, make_result):
    store.add_result("s1.rules", make_result("e0", scores={"ex": 1.0, "sql-style": 0.25}))
    assert store.query("SELECT score_sql_style FROM examples")["score_sql_style"].tolist() == [0.25]


def test_finish_run_sets_status_and_time(store):
    store.finish_run("s1.rules", "KILLED")
    row = store.run("s1.rules")
    assert row["status"] == "KILLED"
    assert row["finished_at"] is not None
    with pytest.raises(ConfigError, match="unknown final run status"):
        store.finish_run("s1.rules", "DONE")
    with pytest.raises(ConfigError, match="no run"):
        store.finish_run("s9.rules", "FINISHED")


def test_reopening_a_run_keeps_it_and_refuses_another_dataset(store, make_result, make_dataset):
    store.add_result("s1.rules", make_result("e0"))
    store.finish_run("s1.rules", "KILLED")
    store.create_run(
        "s1.rules", router="rules", lm="scripted", dataset=make_dataset(), split="dev", mlflow_run_id="abc"
    )
    row = store.run("s1.rules")
    assert (row["status"], row["mlflow_run_id"]) == ("RUNNING", "abc")
    assert store.completed_ids("s1.rules") == {"e0"}
    with pytest.raises(ConfigError, match="another version"):
        store.create_run("s1.rules", router="rules", lm="scripted", dataset=make_dataset(n=5), split="dev")


def test_concurrent_writers_in_one_process(store, make_result, tmp_path):
    other = ResultsStore(store.path)  # a second store object on the same file shares the lock
    threads = [
        threading.Thread(target=(store if i % 2 else other).add_result, args=("s1.rules", make_result(f"e{i}")))
        for i in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.completed_ids("s1.rules") == {f"e{i}" for i in range(6)}


def test_store_persists_across_instances(store, make_result):
    store.add_result("s1.rules", make_result("e0"))
    again = ResultsStore(store.path)
    assert [r.example_id for r in again.results("s1.rules")] == ["e0"]
    store.set_mlflow_run("s1.rules", "mlf-1")
    assert again.run("s1.rules")["mlflow_run_id"] == "mlf-1"


def test_two_writers_add_the_same_new_scorer_column(store, make_result):
    # each store object remembers the columns it created; the other must not trip over them
    other = ResultsStore(store.path)
    store.add_result("s1.rules", make_result("e0", scores={"ex": 1.0, "novel": 0.5}))
    other.add_result("s1.rules", make_result("e1", scores={"ex": 0.0, "novel": 1.0}))
    store.add_result("s1.rules", make_result("e2", scores={"ex": 1.0, "novel": 0.0, "later": 1.0}))
    got = store.query("SELECT example_id, score_novel, score_later FROM examples ORDER BY example_id")
    assert got["score_novel"].tolist() == [0.5, 1.0, 0.0]
    assert got["score_later"].isna().tolist() == [True, True, False]


def test_a_rolled_back_column_is_not_remembered(store, make_result, monkeypatch):
    def broken_row(*args, **kwargs):
        raise RuntimeError("row building failed after the ALTER")

    monkeypatch.setattr("routerlab.eval.store._example_row", broken_row)
    with pytest.raises(RuntimeError):
        store.add_result("s1.rules", make_result("e0", scores={"ex": 1.0, "ghost": 1.0}))
    monkeypatch.undo()
    store.add_result("s1.rules", make_result("e0", scores={"ex": 1.0, "ghost": 1.0}))
    assert store.query("SELECT score_ghost FROM examples")["score_ghost"].tolist() == [1.0]


def test_run_writer_commits_each_result_and_releases_the_file(store, make_result, tmp_path):
    import subprocess
    import sys

    with store.writer("s1.rules") as writer:
        writer.add(make_result("e0", scores={"ex": 1.0, "brand_new": 0.5}))
        # committed at once: this process sees it while the writer still holds the file
        assert store.completed_ids("s1.rules") == {"e0"}
        writer.add(make_result("e0", scores={"ex": 0.0}))  # an upsert, as with add_result
        writer.add(make_result("e1"))
        assert store.query("SELECT count(*) AS n FROM examples")["n"][0] == 2
    assert store.query("SELECT score_ex FROM examples WHERE example_id = 'e0'")["score_ex"].tolist() == [0.0]
    assert "score_brand_new" in store.query("SELECT * FROM examples").columns
    # after the block another process can open the file for writing
    code = f"import duckdb; duckdb.connect({str(store.path)!r}).close()"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def test_run_writer_failure_rolls_back_and_keeps_earlier_results(store, make_result):
    # any engine error will do: the point is what stays stored
    with pytest.raises(Exception), store.writer("s1.rules") as writer:  # noqa: B017
        writer.add(make_result("e0"))
        bad = make_result("e1")
        bad.example_id = None  # NOT NULL key column: the engine refuses the row
        writer.add(bad)
    assert store.completed_ids("s1.rules") == {"e0"}
