"""The generic ``jsonl`` and ``csv`` loaders."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)
from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError, DatasetError
from routerlab.agents.plan import CHAINS
from routerlab.benchmarks.dataset import dataset
from routerlab.benchmarks.loaders import load_csv, load_jsonl
from tests.benchmarks.loaders.conftest import CSV_COLUMNS, TABLE_RECORDS


@pytest.fixture(params=["jsonl", "csv"])
def table(request, jsonl_file: Path, csv_file: Path) -> tuple[str, Path]:
    """``(format name, data file)`` for each of the two formats."""
    return request.param, jsonl_file if request.param == "jsonl" else csv_file


def _line(fmt: str, index: int) -> str:
    """The line of the index-th record (CSV files start with a header line)."""
    return f"line {index + (2 if fmt == 'csv' else 1)}"


def _write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _write(fmt: str, path: Path, records: list[dict]) -> None:
    if fmt == "jsonl":
        _write_jsonl(path, records)
        return
    import csv

    columns = list(dict.fromkeys([*CSV_COLUMNS, *(k for r in records for k in r)]))
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for r in records:
            writer.writerow({k: r.get(k, "") for k in columns})


def test_loads_intents_ids_and_defaults(table, shop_db: Path):
    fmt, path = table
    ds = dataset.build(fmt, path=str(path), db=str(shop_db))
    assert ds.name == fmt and ds.source == str(path.resolve())
    assert [e.id for e in ds.examples] == ["q1", f"questions-{1:04d}", "q3", "q4", "q5"]
    assert [e.intent for e in ds.examples] == ["sql", "explain", "chat", "clarify", "fix"]
    assert [e.split for e in ds.examples] == ["dev", "test", "train", "dev", "dev"]
    for e, rec in zip(ds.examples, TABLE_RECORDS, strict=True):
        assert e.question == rec["question"]
        assert e.gold_sql == rec.get("gold_sql")
        assert e.expected_chain == CHAINS[e.intent]
        assert e.dataset == fmt
        assert e.db_path == str(shop_db.resolve())
    q4, q5 = ds.examples[3], ds.examples[4]
    assert q4.db_id == "store" and ds.examples[0].db_id == "shop"
    assert q4.user_reply == "I mean the Lamp." and q4.hint == "prices are in EUR"
    assert q5.input_sql == "SELECT nme FROM products" and q5.error_text == "no such column: nme"
    assert q5.alt_intents == ("sql",)
    assert ds.examples[2].meta == {"source": "handmade"}
    assert ds.examples[0].difficulty == "easy" and ds.examples[2].difficulty is None


def test_gold_sql_runs_on_its_database(table, shop_db: Path):
    fmt, path = table
    for e in dataset.build(fmt, path=str(path), db=str(shop_db)).examples:
        if e.gold_sql:
            assert open_database(e.db_path).execute(e.gold_sql).rows


def test_relative_db_path_follows_the_data_file(tmp_path: Path, shop_db: Path, monkeypatch):
    path = tmp_path / "data" / "only.jsonl"
    _write_jsonl(path, [{"question": "Q?", "gold_sql": "SELECT 1", "db_path": "dbs/shop.sqlite"}])
    monkeypatch.chdir(tmp_path)  # the working directory must not matter
    assert load_jsonl(str(path)).examples[0].db_path == str(shop_db.resolve())


def test_db_argument_is_relative_to_the_working_directory(tmp_path: Path, shop_db: Path, monkeypatch):
    path = tmp_path / "data" / "only.jsonl"
    _write_jsonl(path, [{"question": "Q?", "gold_sql": "SELECT 1"}])
    monkeypatch.chdir(tmp_path / "data")
    assert load_jsonl(str(path), db="dbs/shop.sqlite").examples[0].db_path == str(shop_db.resolve())


def test_meta_object_is_merged(tmp_path: Path, shop_db: Path):
    path = tmp_path / "data" / "m.jsonl"
    _write_jsonl(path, [{"question": "Q?", "gold_sql": "SELECT 1", "meta": {"a": 1}, "topic": "x"}])
    assert load_jsonl(str(path), db=str(shop_db)).examples[0].meta == {"a": 1, "topic": "x"}


def test_limit_and_version(table, shop_db: Path):
    fmt, path = table
    loader = load_jsonl if fmt == "jsonl" else load_csv
    limited = loader(str(path), db=str(shop_db), limit=2)
    assert len(limited.examples) == 2
    # the meta counts the file's records, not the loaded ones
    assert limited.meta == {"file": str(path.resolve()), "records": str(len(TABLE_RECORDS))}
    before = loader(str(path), db=str(shop_db)).version
    assert len(before) == 12
    _write(fmt, path, TABLE_RECORDS[:3])
    assert loader(str(path), db=str(shop_db)).version != before
    with pytest.raises(ConfigError):
        loader(str(path), db=str(shop_db), limit=-2)


def test_missing_file(table, tmp_path: Path):
    fmt, _ = table
    with pytest.raises(DatasetError, match="not found") as err:
        dataset.build(fmt, path=str(tmp_path / f"absent.{fmt}"))
    what = {"jsonl": "JSON Lines dataset", "csv": "CSV dataset"}[fmt]
    assert what in err.value.what and err.value.fix == f"pass an existing .{fmt} file as path"


def test_record_without_any_database(table):
    fmt, path = table
    with pytest.raises(DatasetError) as info:
        dataset.build(fmt, path=str(path))  # record 2 has no db_path and no db= was given
    message = str(info.value)
    assert path.name in message and _line(fmt, 1) in message and "'db_path'" in message


def test_missing_database_file(table, shop_db: Path):
    fmt, path = table
    with pytest.raises(DatasetError) as info:
        dataset.build(fmt, path=str(path), db=str(shop_db.parent / "gone.sqlite"))
    message = str(info.value)
    assert path.name in message and _line(fmt, 1) in message and "'db (loader argument)'" in message
    assert "gone.sqlite" in message


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"gold_sql": "SELECT 1"}, "question"),
        ({"question": "Q?", "gold_sql": "SELECT 1", "intent": "translate"}, "intent"),
        ({"question": "Q?", "gold_sql": "SELECT 1", "split": "validation"}, "split"),
        ({"question": "Q?", "intent": "sql"}, "gold_sql"),
        ({"question": "Q?", "intent": "clarify", "gold_sql": "SELECT 1"}, "user_reply"),
        ({"question": "Q?", "intent": "fix", "gold_sql": "SELECT 1", "input_sql": "SELEC 1"}, "error_text"),
        ({"question": "Q?", "gold_sql": "SELECT 1", "alt_intents": "sql, nonsense"}, "alt_intents"),
        ({"id": "q1", "question": "Q?", "gold_sql": "SELECT 1"}, "id"),  # duplicate id
    ],
)
def test_malformed_record_names_file_line_and_field(table, shop_db: Path, record: dict, field: str):
    fmt, path = table
    good = {"id": "q1", "question": "How many?", "gold_sql": "SELECT count(*) FROM products"}
    _write(fmt, path, [good, record])
    loader = load_jsonl if fmt == "jsonl" else load_csv
    with pytest.raises(DatasetError) as info:
        loader(str(path), db=str(shop_db))
    message = str(info.value)
    assert path.name in message and _line(fmt, 1) in message and f"'{field}'" in message
    assert info.value.details["field"] == field


def test_jsonl_syntax_errors_and_non_objects(jsonl_file: Path, shop_db: Path):
    jsonl_file.write_text('{"question": "Q?", "gold_sql": "SELECT 1"}\n\n{"question": \n', encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_jsonl(str(jsonl_file), db=str(shop_db))
    assert "questions.jsonl" in str(info.value) and "line 3" in str(info.value)
    jsonl_file.write_text('["Q?", "SELECT 1"]\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"line 1.*not an object"):
        load_jsonl(str(jsonl_file), db=str(shop_db))
    jsonl_file.write_text("\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="no records"):
        load_jsonl(str(jsonl_file), db=str(shop_db))


def test_non_string_field_in_jsonl(jsonl_file: Path, shop_db: Path):
    _write_jsonl(jsonl_file, [{"question": "Q?", "gold_sql": 42}])
    with pytest.raises(DatasetError, match="'gold_sql': not a string"):
        load_jsonl(str(jsonl_file), db=str(shop_db))


def test_csv_row_with_extra_cells(csv_file: Path, shop_db: Path):
    csv_file.write_text("question,gold_sql\nQ?,SELECT 1\nQ2?,SELECT 2,surplus\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_csv(str(csv_file), db=str(shop_db))
    assert "questions.csv" in str(info.value) and "line 3" in str(info.value) and "surplus" in str(info.value)


def test_csv_without_header(csv_file: Path, shop_db: Path):
    csv_file.write_text("", encoding="utf-8")
    with pytest.raises(DatasetError, match="no header row"):
        load_csv(str(csv_file), db=str(shop_db))


def test_not_a_database(tmp_path: Path):
    path = tmp_path / "q.jsonl"
    (tmp_path / "fake.sqlite").write_text("not a database")
    _write_jsonl(path, [{"question": "Q?", "gold_sql": "SELECT 1", "db_path": "fake.sqlite"}])
    with pytest.raises(DatasetError, match=r"line 1.*'db_path'.*not usable"):
        load_jsonl(str(path))


def test_semicolon_separated_csv_is_named_as_such(tmp_path: Path):
    path = tmp_path / "q.csv"
    path.write_text("question;gold_sql;db_path\nHow many?;SELECT 1;shop.duckdb\n")
    with pytest.raises(DatasetError, match="looks semicolon-separated") as err:
        load_csv(str(path))
    assert err.value.found == "semicolon-separated header" and "commas" in err.value.fix


def test_unterminated_quote_names_the_line_where_it_opens(tmp_path: Path):
    path = tmp_path / "q.csv"
    path.write_text('question,gold_sql\nFirst,SELECT 1\n"Second,SELECT 2\nThird,SELECT 3\n')
    with pytest.raises(DatasetError, match=r"never closed \(starting on line 3\)") as err:
        load_csv(str(path))
    assert err.value.details["record"] == "line 3"


def test_doubled_quotes_inside_a_cell_are_fine(tmp_path: Path, shop_db: Path):
    path = tmp_path / "q.csv"
    path.write_text(f'question,gold_sql,db_path\n"Say ""hi""",SELECT 1,{shop_db}\n')
    assert load_csv(str(path)).examples[0].question == 'Say "hi"'


# --- conversations in the generic formats -------------------------------------------------

EXAMPLE_FILE = Path(__file__).parents[3] / "docs" / "examples" / "conversations.jsonl"


def _conv_rows(db: Path) -> list[dict]:
    """A three-turn conversation with three intents, then a single request."""
    turns = [
        {"question": "Hi there!", "intent": "chat"},
        {"question": "How many products?", "gold_sql": "SELECT COUNT(*) FROM products"},
        {"question": "Drop the products table", "intent": "refuse"},
    ]
    rows = [{**t, "conversation": "c1", "turn": k, "db_path": str(db)} for k, t in enumerate(turns, start=1)]
    return [*rows, {"question": "List products", "gold_sql": "SELECT name FROM products", "db_path": str(db)}]


def test_jsonl_and_csv_carry_conversation_and_turn(tmp_path, shop_db):
    rows = _conv_rows(shop_db)
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    csv_file = tmp_path / "c.csv"
    with csv_file.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["question", "intent", "gold_sql", "conversation", "turn", "db_path"])
        w.writeheader()
        w.writerows(rows)
    for ds in (load_jsonl(str(jsonl)), load_csv(str(csv_file))):
        got = [(e.conversation, e.turn, e.turns, e.intent) for e in ds.examples]
        assert got == [("c1", 1, 3, "chat"), ("c1", 2, 3, "sql"), ("c1", 3, 3, "refuse"), (None, 1, 1, "sql")]
        assert "conversation" not in ds.examples[0].meta and "turn" not in ds.examples[0].meta


def test_turn_defaults_to_file_order_and_limit_keeps_conversations_whole(tmp_path, shop_db):
    rows = [{k: v for k, v in r.items() if k != "turn"} for r in _conv_rows(shop_db)]
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert [e.turn for e in load_jsonl(str(jsonl)).examples] == [1, 2, 3, 1]
    assert [e.id for e in load_jsonl(str(jsonl), limit=1).examples] == ["c-0000", "c-0001", "c-0002"]


@pytest.mark.parametrize("limit", [0, 1])
@pytest.mark.parametrize("draw", [None, {"limit": 2}])
def test_a_conversation_that_is_no_string_is_named_with_or_without_a_limit(tmp_path, shop_db, limit, draw):
    # with a limit it was a set member first: TypeError, unhashable type: 'list'
    rows = _conv_rows(shop_db)
    rows[0] = {**rows[0], "conversation": ["c1"]}
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(DatasetError, match="not a string") as err:
        load_jsonl(str(jsonl), limit=limit, draw=draw)
    assert err.value.details["field"] == "conversation" and "line 1" in str(err.value)


@pytest.mark.parametrize(
    ("change", "field", "needle"),
    [
        ({"turn": 5}, "turn", "turns are not 1..n"),
        ({"turn": "two"}, "turn", "not a turn number"),
        ({"turn": 0}, "turn", "not a turn number"),
        ({"turns": 7}, "turns", "wrong number of turns"),
    ],
)
def test_bad_turns_are_named(tmp_path, shop_db, change, field, needle):
    rows = _conv_rows(shop_db)
    rows[1] = {**rows[1], **change}
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(DatasetError, match=needle) as err:
        load_jsonl(str(jsonl))
    assert err.value.details["field"] == field


def test_documented_example_file_loads():
    """docs/examples/conversations.jsonl: two logged conversations with any intent per turn."""
    from tests.conftest import SPIDER_DEV_A

    if not (SPIDER_DEV_A / "database" / "concert_singer").is_dir():
        pytest.skip("the example's database is spider-dev-a's concert_singer (../shared/data)")
    examples = load_jsonl(str(EXAMPLE_FILE)).examples
    convs = {e.conversation for e in examples if e.conversation}
    assert convs == {"log-1", "log-2"}
    assert {e.intent for e in examples} == {"chat", "sql", "refuse", "clarify", "explain"}
    for e in examples:
        if e.gold_sql:
            assert open_database(e.db_path).execute(e.gold_sql).rows


def test_a_record_missing_gold_sql_lists_the_keys_it_has(jsonl_file: Path, shop_db: Path):
    """`found: None` told nothing: the record's own keys show a gold query stored under another name."""
    path = jsonl_file
    _write_jsonl(path, [{"id": "q1", "question": "How many?", "intent": "sql", "query": "SELECT 1"}])
    with pytest.raises(DatasetError) as info:
        load_jsonl(str(path), db=str(shop_db))
    message = str(info.value)
    assert "'gold_sql'" in message and "no gold_sql; the record's keys: id, question, intent, query" in message
