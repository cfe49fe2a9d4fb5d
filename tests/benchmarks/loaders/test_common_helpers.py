"""The loader helpers several loaders share (``require_items``, ``sqlite_example``), on real files.

``sparc``/``cosql``, ``text2sql_data`` and the Spider/BIRD skeleton build their examples through
``sqlite_example`` and read their lists of turns or sentences through ``require_items``; these
tests pin what each loader gets from them, so one home serves all with one behaviour.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)
from routerlab.agents.errors import DatasetError
from routerlab.benchmarks.difficulty import sql_hardness
from routerlab.benchmarks.loaders import load_text2sql_data
from routerlab.benchmarks.loaders._common import require_items, sqlite_example
from routerlab.benchmarks.loaders.conversational import load_sparc
from routerlab.benchmarks.loaders.spider import load_spider
from tests.conftest import SPIDER_DEV_A

SPARC = SPIDER_DEV_A.parent / "sparc-dev-a"


def test_require_items_returns_the_list_and_names_file_record_and_field(tmp_path: Path):
    file = tmp_path / "dev.json"
    rec = {"interaction": [{"utterance": "How many?"}], "empty": [], "text": "x" * 500}
    assert require_items(rec, "interaction", file, "record 3", problem="no turns", expected="e", fix="f") == [
        {"utterance": "How many?"}
    ]
    for key, found in (("empty", "[]"), ("missing", "None"), ("text", "'" + "x" * 118 + "…")):
        with pytest.raises(DatasetError) as err:
            require_items(rec, key, file, "record 3", problem="no turns", expected="a non-empty list", fix="add one")
        assert err.value.details == {"file": str(file), "record": "record 3", "field": key}
        assert err.value.what == f"{file}: record 3: field {key!r}: no turns"
        assert (err.value.expected, err.value.found, err.value.fix) == ("a non-empty list", found, "add one")


def test_sqlite_example_takes_the_golds_hardness_unless_one_is_given(tmp_path: Path):
    file = tmp_path / "dev.json"
    sql = "SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)"
    fields = {"id": "q1", "question": "Who is older than average?", "db_id": "s", "db_path": str(tmp_path / "s.sqlite")}
    fields |= {"intent": "sql", "split": "dev"}
    e = sqlite_example(file, "record 0", gold_sql=sql, **fields)
    assert e.gold_sql == sql and e.difficulty == sql_hardness(sql, "sqlite") == "hard"
    assert sqlite_example(file, "record 0", gold_sql=sql, difficulty="easy", **fields).difficulty == "easy"
    with pytest.raises(DatasetError) as err:
        sqlite_example(file, "record 0", gold_sql=sql, **{**fields, "intent": "sing"})
    assert err.value.details["field"] == "intent"


def test_text2sql_data_examples_carry_their_golds_hardness(geo_files):
    path, db = geo_files
    examples = load_text2sql_data(str(path), str(db)).examples
    assert examples and all(e.difficulty == sql_hardness(e.gold_sql, "sqlite") for e in examples)


@pytest.mark.skipif(not (SPARC / "dev.json").is_file(), reason=f"shared data not found under {SPARC.parent}")
def test_conversation_and_release_examples_carry_their_golds_hardness():
    turns = load_sparc(str(SPARC), limit=20).examples
    records = load_spider(str(SPIDER_DEV_A), limit=40).examples
    for examples in (turns, records):
        assert len({e.difficulty for e in examples}) > 1  # the set spans several levels
        assert all(e.difficulty == sql_hardness(e.gold_sql, "sqlite") for e in examples)


def test_a_file_that_is_not_utf8_is_named_with_the_offset_of_its_bad_byte(tmp_path: Path):
    # one home (errors.not_utf8) for the dataset readers and the config reader: same found and fix
    from routerlab._runs.config import read_mapping_file
    from routerlab.agents.errors import ConfigError
    from routerlab.benchmarks.loaders._common import read_csv, read_json, read_jsonl

    cases = [
        (read_json, "d.json", b'{"q": "caf\xe9"}', DatasetError, "a UTF-8 encoded JSON file", 10),
        (read_jsonl, "d.jsonl", b'{"q": 1}\n{"q": "\xff"}\n', DatasetError, "a UTF-8 encoded JSON Lines file", 16),
        (read_csv, "d.csv", b"question,gold_sql\n\xfe,SELECT 1\n", DatasetError, "a UTF-8 encoded CSV file", 18),
        (read_mapping_file, "c.yaml", b"limit: 3\nsplit: d\xe9v\n", ConfigError, "a UTF-8 YAML or JSON file", 17),
    ]
    for read, name, raw, kind, expected, offset in cases:
        path = tmp_path / name
        path.write_bytes(raw)
        with pytest.raises(kind) as err:
            read(path)
        assert (err.value.expected, err.value.found) == (expected, f"undecodable byte at offset {offset}")
        assert err.value.fix == "re-save the file as UTF-8" and err.value.details == {"file": str(path)}
        assert str(path) in err.value.what and "not UTF-8 text" in err.value.what
        assert err.value.__suppress_context__  # raised from None: the decoder's traceback adds nothing
