"""The answerability check on real Spider databases: hand-written questions, Spider's own, the mixer's.

The unanswerable and answerable questions below are the developer's own, written for two
spider-dev-a databases (poker_player, voter_1) without running the check first, as a sanity set
that the check was not only fitted to the mixer's generator. Two are known misses (an adjective,
"married"; a measure a column name happens to contain, "prize money" on ``Money_Rank``); they are
kept, so the figure is honest. Skipped when the data is absent (``ROUTERLAB_SPIDER_DEV``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from routerlab.agents.answerability import check_question
from routerlab.agents.db import open_database
from routerlab.benchmarks.loaders.mixed import load_mixed

_CANDIDATES = (
    os.environ.get("ROUTERLAB_SPIDER_DEV", ""),
    str(Path(__file__).resolve().parents[3] / "shared" / "data" / "spider-dev-a"),
    "/work/shared/data/spider-dev-a",
)


@pytest.fixture(scope="module")
def spider_dev() -> Path:
    for candidate in _CANDIDATES:
        if candidate and (Path(candidate) / "dev.json").is_file():
            return Path(candidate)
    pytest.skip("no Spider dev data (set ROUTERLAB_SPIDER_DEV to a spider-dev-a folder)")


def _db(root: Path, name: str):
    return open_database(str(root / "database" / name / f"{name}.sqlite"))


UNANSWERABLE = {
    "poker_player": [
        "What is the weight of the tallest poker player?",
        "Which casino did each poker player win their biggest tournament in?",
        "How many poker players are married?",
        "List the sponsors of players from Russia.",
        "What is the average number of tournaments each player entered?",
        "Which player has the most World Series bracelets?",
        "What was the total prize money paid out in 2015?",
        "Who is the coach of the player with the highest earnings?",
        "What is the email address of Aleksey Ostapenko?",
        "How many hands did each player play?",
    ],
    "voter_1": [
        "How old is the contestant Tabatha Gehling?",
        "Which contestant won the competition?",
        "What is the home town of each contestant?",
        "How many votes were cast by email?",
        "Which judges voted for Kelly Clauss?",
        "What is the population of each state?",
        "How much did each vote cost?",
        "Which TV network broadcast the show?",
        "What is the gender of contestant number 5?",
    ],
}

ANSWERABLE = {
    "poker_player": [
        "What are the names of poker players born after 1980?",
        "List the nationalities of players whose earnings exceed 300000.",
        "Who is the tallest person?",
        "What is the best finish of the player with the highest money rank?",
        "How many people from Russia are taller than 1.9 metres?",
        "Show each person's birth date and height.",
        "What are the final tables made by players from Bulgaria?",
    ],
    "voter_1": [
        "How many votes did each contestant get?",
        "Which states cast votes for contestant Edwina Burnam?",
        "What is the area code of the state with the most votes?",
        "List the phone numbers of votes from California.",
        "When was the last vote created?",
        "How many contestants received no votes?",
        "Show the contestant names in alphabetical order.",
        "How many votes were cast in each state?",
    ],
}


def test_hand_written_unanswerable_questions_are_caught(spider_dev: Path):
    missed = [
        q
        for db, questions in UNANSWERABLE.items()
        for q in questions
        if check_question(q, _db(spider_dev, db)).answerable
    ]
    # 17 of 19 when this was written; the two known misses are named in the module docstring
    assert sorted(missed) == ["How many poker players are married?", "What was the total prize money paid out in 2015?"]


@pytest.mark.parametrize(("db", "question"), [(db, q) for db, qs in ANSWERABLE.items() for q in qs])
def test_hand_written_answerable_questions_are_kept(spider_dev: Path, db: str, question: str):
    verdict = check_question(question, _db(spider_dev, db))
    assert verdict.answerable, verdict.gaps


def test_the_gap_names_what_is_missing(spider_dev: Path):
    verdict = check_question("What is the email address of Aleksey Ostapenko?", _db(spider_dev, "poker_player"))
    assert [(g.kind, g.term) for g in verdict.gaps] == [("attribute", "email address")]
    verdict = check_question("How old is the contestant Tabatha Gehling?", _db(spider_dev, "voter_1"))
    assert [(g.kind, g.term) for g in verdict.gaps] == [("measure", "age")]


def test_spiders_own_questions_are_almost_all_answerable(spider_dev: Path):
    """Every Spider question is answerable: at most 2 % may be flagged (5 of 382 when written)."""
    records = json.loads((spider_dev / "dev.json").read_text())
    dbs = {name: _db(spider_dev, name) for name in {r["db_id"] for r in records}}
    flagged = [r["question"] for r in records if not check_question(r["question"], dbs[r["db_id"]]).answerable]
    assert len(flagged) <= 0.02 * len(records), flagged


@pytest.mark.parametrize("seed", [0, 1])
def test_the_mixers_unanswerable_variants_are_caught(spider_dev: Path, seed: int):
    ds = load_mixed("spider", seed=seed, path=str(spider_dev))
    dbs: dict[str, object] = {}
    caught = kept = n_un = n_sql = 0
    for e in ds.examples:
        if e.intent not in ("unanswerable", "sql"):
            continue
        db = dbs.setdefault(e.db_path, open_database(e.db_path))
        answerable = check_question(e.question, db).answerable
        if e.intent == "unanswerable":
            n_un, caught = n_un + 1, caught + (not answerable)
        else:
            n_sql, kept = n_sql + 1, kept + answerable
    assert n_un >= 30 and caught >= 0.9 * n_un, (caught, n_un)
    assert kept >= 0.97 * n_sql, (kept, n_sql)
