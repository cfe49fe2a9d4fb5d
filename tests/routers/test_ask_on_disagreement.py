"""``scripts/ask_on_disagreement.py``: the ask-on-disagreement rule of issue 49, case by case."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import routerlab

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "ask_on_disagreement.py"
_spec = importlib.util.spec_from_file_location("ask_on_disagreement", SCRIPT)
study = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["ask_on_disagreement"] = study  # dataclasses look their module up while the class is built
_spec.loader.exec_module(study)  # type: ignore[union-attr]
Turn = study.Turn


def _turns(data_distinct: list[int], clarify_distinct: list[int]) -> list:
    """Data questions answered right, clarification turns answered directly (so scored wrong)."""
    data = [Turn(f"d{i}", "sql", "sql", True, d) for i, d in enumerate(data_distinct)]
    clarify = [Turn(f"c{i}", "clarify", "sql", False, d) for i, d in enumerate(clarify_distinct)]
    return data + clarify


def test_a_turn_is_asked_only_when_its_candidates_return_at_least_d_results():
    t = Turn("x", "sql", "sql", True, 3)
    assert [study.decide(t, d) for d in (None, 2, 3, 4)] == ["sql", "clarify", "clarify", "sql"]
    # only drafted sql decisions change: an abstention or a turn without a selection keeps its decision
    assert study.decide(Turn("y", "sql", "unanswerable", False, 4), 2) == "unanswerable"
    assert study.decide(Turn("z", "clarify", "sql", False, 0), 2) == "sql"


def test_the_reading_counts_asked_clarification_turns_as_right_and_asked_data_questions_as_diverted():
    turns = _turns([1] * 8 + [2] * 2, [4, 2])
    as_run = study.read(turns, None)
    assert (as_run.accuracy, as_run.diverted, as_run.clarify_asked) == (pytest.approx(10 / 12), 0, 0)
    two = study.read(turns, 2)  # asks both clarification turns and 2 of the 10 data questions
    assert (two.accuracy, two.diverted, two.diverted_share, two.clarify_asked) == (
        pytest.approx(10 / 12),
        2,
        pytest.approx(0.2),
        2,
    )
    four = study.read(turns, 4)  # only the turn whose 4 candidates all differ
    assert (four.accuracy, four.diverted, four.clarify_asked) == (pytest.approx(11 / 12), 0, 1)


def test_the_rule_keeps_the_threshold_that_diverts_little_beats_always_sql_and_asks_more():
    turns = _turns([1] * 60, [4, 4, 3, 2])
    chosen, reasons = study.verdict(turns)
    # no data question disagrees, so every threshold passes; d=2 asks all 4 clarification turns,
    # d=3 three, d=4 two: the highest accuracy wins
    assert chosen == 2
    assert reasons == ["d=2: passes", "d=3: passes", "d=4: passes"]


def test_a_tie_in_accuracy_goes_to_the_larger_threshold():
    turns = _turns([1] * 60, [4, 4])
    chosen, _ = study.verdict(turns)
    assert chosen == 4


def test_the_setting_stays_off_when_every_threshold_diverts_too_many_data_questions():
    turns = _turns([1] * 90 + [4] * 3 + [2] * 7, [4] * 3)
    chosen, reasons = study.verdict(turns)
    assert chosen is None
    assert reasons[0].startswith("d=2: diverts 0.100 > 0.02")
    assert reasons[2].startswith("d=4: diverts 0.030 > 0.02")


def test_a_threshold_that_asks_no_clarification_turn_is_not_kept():
    chosen, reasons = study.verdict(_turns([1] * 20, [1] * 2))
    assert chosen is None
    assert all("asks 0 clarification turns, not more than 0" in r for r in reasons)


def test_disagreement_is_read_from_a_real_run_in_a_real_store(tmp_path, monkeypatch):
    """A real ``answer_first`` run with 3 candidates (scripted LM) stored in DuckDB, read back."""
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "c3.yaml"
    config.write_text("pipeline:\n  tools:\n    candidates: 3\n")
    store = str(tmp_path / "runs.duckdb")
    session = routerlab.run(
        "answer_first", dataset="builtin", lm="scripted:basic", store=store, tracking_uri=None, config_file=config
    )
    turns = study.load_turns(session.run_ids[0], store)
    results = session.results().set_index("example_id")
    assert len(turns) == len(results) > 0
    drafted = [t for t in turns if t.distinct]
    assert drafted, "no turn recorded a candidate selection"
    for t in drafted:
        # 3 candidates give 1 to 3 distinct results (the scripted LM writes the same query thrice: 1)
        assert 1 <= t.distinct <= 3
        assert t.predicted == results.loc[t.example_id, "decision"]
    # the CLI prints the table and the rule's verdict
    assert study.main([session.run_ids[0], "--store", store]) == 0


def test_an_unknown_run_says_what_was_expected(tmp_path):
    from routerlab.eval.store import ResultsStore

    store = tmp_path / "empty.duckdb"
    ResultsStore(store).query("SELECT count(*) FROM examples")  # a real store, with no run in it
    with pytest.raises(SystemExit, match=r"expected SESSION\.router"):
        study.load_turns("nope.answer_first", str(store))


def test_a_missing_store_says_what_was_expected(tmp_path):
    # the store's own diagnosis: what was expected, what was found and what to do
    with pytest.raises(SystemExit, match=r"(?s)missing\.duckdb.*an existing results store.*routerlab run"):
        study.load_turns("x.answer_first", str(tmp_path / "missing.duckdb"))
