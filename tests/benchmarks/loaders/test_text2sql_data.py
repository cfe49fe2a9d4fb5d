"""The ``text2sql_data`` loader (Finegan-Dollak et al. 2018 format) on a tiny GeoQuery-like file."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)
from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError, DatasetError
from routerlab.benchmarks.dataset import dataset
from routerlab.benchmarks.loaders import load_text2sql_data
from routerlab.benchmarks.loaders.text2sql_data import _substitute_sql, map_split
from tests.benchmarks.loaders.conftest import GEO_ENTRIES, write_json


def test_one_example_per_sentence_with_variables_substituted(geo_files):
    path, db = geo_files
    ds = dataset.build("text2sql_data", path=str(path), db=str(db))
    assert ds.name == "text2sql_data" and ds.source == str(path.resolve())
    assert len(ds.examples) == 7
    first = ds.examples[0]
    assert first.id == "geography-0000-00"
    assert first.question == "how big is texas"
    assert first.gold_sql == (
        "SELECT STATEalias0.AREA FROM STATE AS STATEalias0 WHERE STATEalias0.STATE_NAME = 'texas'"
    )
    assert first.meta["sql_variants"] == ["SELECT AREA FROM STATE WHERE STATE_NAME = 'texas'"]
    assert first.db_id == "geography" and first.db_path == str(db.resolve())
    second = ds.examples[1]
    assert second.question == "what is the area of new mexico" and "'new mexico'" in second.gold_sql


def test_missing_sentence_value_falls_back_to_the_example(geo_files):
    path, db = geo_files
    e = load_text2sql_data(str(path), str(db)).examples[2]
    assert e.question == "which cities in texas have more than 400000 people"
    assert e.gold_sql.endswith("STATE_NAME = 'texas' AND CITYalias0.POPULATION > 400000")
    assert e.meta["variables"] == {"population0": "400000", "state_name0": "texas"}


def test_quotes_in_values_are_escaped(geo_files):
    path, db = geo_files
    e = load_text2sql_data(str(path), str(db)).examples[-1]
    assert e.question == "what state is coeur d'alene in"
    assert "'coeur d''alene'" in e.gold_sql
    assert open_database(e.db_path).execute(e.gold_sql).rows == [["idaho"]]


def test_double_quoted_strings_become_sql_literals():
    values = {"topic0": "deep learning", "name0": "o'neil", "name01": "x"}
    sql = "SELECT A FROM T WHERE N LIKE \"%topic0%\" AND D = \"EECS\" AND M = name0 AND Q = 'it''s name01' ;"
    assert _substitute_sql(sql, values) == (
        "SELECT A FROM T WHERE N LIKE '%deep learning%' AND D = 'EECS' AND M = o'neil AND Q = 'it''s x' ;"
    )


def test_gold_sql_runs_and_returns_rows(geo_files):
    path, db = geo_files
    for e in load_text2sql_data(str(path), str(db)).examples:
        assert open_database(e.db_path).execute(e.gold_sql).rows, e.id


def test_question_split_and_folds(geo_files):
    path, db = geo_files
    splits = [e.split for e in load_text2sql_data(str(path), str(db)).examples]
    # dev, test | train | fold 0 -> test, fold 1 -> dev, fold 7 -> train | train
    assert splits == ["dev", "test", "train", "test", "dev", "train", "train"]


def test_query_split(geo_files):
    path, db = geo_files
    splits = [e.split for e in load_text2sql_data(str(path), str(db), split_field="query-split").examples]
    # train x2 | dev | fold 3 -> train x3 | test
    assert splits == ["train", "train", "dev", "train", "train", "train", "test"]
    with pytest.raises(ConfigError):
        load_text2sql_data(str(path), str(db), split_field="split")


def test_map_split():
    assert [map_split(v) for v in ("train", "dev", "test", "0", "1", "2", "9")] == [
        "train",
        "dev",
        "test",
        "test",
        "dev",
        "train",
        "train",
    ]
    assert map_split("exclude") is None


def test_limit_counts_examples(geo_files):
    path, db = geo_files
    assert len(load_text2sql_data(str(path), str(db), limit=3).examples) == 3


def test_version_changes_with_the_file(geo_files):
    path, db = geo_files
    before = load_text2sql_data(str(path), str(db)).version
    write_json(path, GEO_ENTRIES[:2])
    assert load_text2sql_data(str(path), str(db)).version != before


def test_missing_files(geo_files, tmp_path: Path):
    path, db = geo_files
    with pytest.raises(DatasetError, match="text2sql-data file not found"):
        load_text2sql_data(str(tmp_path / "atis.json"), str(db))
    with pytest.raises(DatasetError, match="text2sql-data database not found"):
        load_text2sql_data(str(path), str(tmp_path / "atis.sqlite"))


def _broken(change) -> list[dict]:
    entries = copy.deepcopy(GEO_ENTRIES)
    change(entries)
    return entries


@pytest.mark.parametrize(
    ("change", "record", "field"),
    [
        (lambda es: es[1].pop("sql"), "entry 1", "sql"),
        (lambda es: es[1].update(sql=[]), "entry 1", "sql"),
        (lambda es: es[1].pop("sentences"), "entry 1", "sentences"),
        (lambda es: es[1].update(sentences=[]), "entry 1", "sentences"),
        (lambda es: es[0]["sentences"][1].pop("text"), "entry 0 sentences[1]", "text"),
        (
            lambda es: es[0]["sentences"][1].update({"question-split": "holdout"}),
            "entry 0 sentences[1]",
            "question-split",
        ),
        (lambda es: es[0]["sentences"][1].update(variables=["texas"]), "entry 0 sentences[1]", "variables"),
        # state_name0 has neither a sentence value nor an example to fall back to
        (lambda es: es[1]["variables"][0].pop("example"), "entry 1 sentences[0]", "variables"),
        (lambda es: es[0]["variables"][0].pop("name"), "entry 0 variables[0]", "name"),
    ],
)
def test_malformed_entries_name_file_record_and_field(geo_files, change, record: str, field: str):
    path, db = geo_files
    write_json(path, _broken(change))
    with pytest.raises(DatasetError) as info:
        load_text2sql_data(str(path), str(db))
    message = str(info.value)
    assert "geography.json" in message and record in message and f"'{field}'" in message


def test_invalid_json(geo_files):
    path, db = geo_files
    path.write_text("[{", encoding="utf-8")
    with pytest.raises(DatasetError, match="invalid JSON at line 1"):
        load_text2sql_data(str(path), str(db))
