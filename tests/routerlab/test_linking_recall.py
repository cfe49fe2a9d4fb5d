"""``routerlab linking``: schema-linking recall from gold SQL, on a real Spider-layout folder."""

from __future__ import annotations

import json
import shutil

from typer.testing import CliRunner

from routerlab.cli import app

QUESTIONS = [
    ("How many dogs are there?", "SELECT count(*) FROM Pets WHERE PetType = 'dog'"),
    (
        "What are the first names of students who own a dog?",
        "SELECT T1.Fname FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.StuID = T2.StuID "
        "JOIN Pets AS T3 ON T3.PetID = T2.PetID WHERE T3.PetType = 'dog'",
    ),
    ("Which make has model amc?", "SELECT Make FROM car_names WHERE Model = 'amc'"),
]


def spider_folder(tmp_path, spiderlike_db):
    root = tmp_path / "spider"
    (root / "database" / "pets_cars").mkdir(parents=True)
    shutil.copy(spiderlike_db, root / "database" / "pets_cars" / "pets_cars.sqlite")
    records = [{"db_id": "pets_cars", "question": q, "query": sql} for q, sql in QUESTIONS]
    (root / "dev.json").write_text(json.dumps(records))
    (root / "tables.json").write_text(json.dumps([{"db_id": "pets_cars"}]))
    return root


def test_linking_prints_recall_per_mode(tmp_path, spiderlike_db, monkeypatch):
    root = spider_folder(tmp_path, spiderlike_db)
    config = tmp_path / "tight.yaml"
    # a budget the whole schema does not fit: auto falls back to overlap linking of one table
    config.write_text("pipeline:\n  tools:\n    schema_budget_chars: 50\n    max_tables: 1\n")
    out = CliRunner().invoke(
        app, ["linking", "--dataset", "spider", "--dataset-path", str(root), "--modes", "full,overlap"]
    )
    assert out.exit_code == 0, out.output
    lines = {line.split()[0]: line.split() for line in out.output.splitlines()[1:]}
    assert lines["full"][1:4] == ["3", "1.000", "1.000"]
    tight = CliRunner().invoke(
        app, ["linking", "--dataset", "spider", "--dataset-path", str(root), "--modes", "auto", "--config", str(config)]
    )
    assert tight.exit_code == 0, tight.output
    auto = tight.output.splitlines()[1].split()
    # one table by word overlap: the dog question keeps Pets only and loses Student and Has_Pet
    # of its three-table join; the other two questions keep their gold tables
    assert auto[:4] == ["auto", "3", "0.667", "0.667"]


def test_unknown_mode_exits_2_naming_the_known_ones(tmp_path, spiderlike_db):
    root = spider_folder(tmp_path, spiderlike_db)
    out = CliRunner().invoke(app, ["linking", "--dataset", "spider", "--dataset-path", str(root), "--modes", "x"])
    assert out.exit_code == 2
    assert "auto, full, overlap" in out.output


def test_linking_recall_on_the_real_spider_databases(spider_dev_a):
    from routerlab.agents.tools import ToolSettings
    from routerlab.linking_recall import link_examples, linking_table

    rows = link_examples(spider_dev_a, ToolSettings(), ["auto", "overlap"])
    table = linking_table(rows).set_index("mode")
    # auto shows each of these schemas whole: every gold table and column is there
    assert table.loc["auto", "examples"] == len(spider_dev_a) and table.loc["auto", "gold_unparsed"] == 0
    assert table.loc["auto", "table_recall"] == 1.0 and table.loc["auto", "column_recall"] == 1.0
    # overlap linking shows fewer tables and loses some gold ones: the recall this measures
    assert table.loc["overlap", "tables_shown"] < table.loc["auto", "tables_shown"]
    assert 0.5 < table.loc["overlap", "table_recall"] < 1.0
    # and auto's schema text is one per database: the stable prefix the local model reuses
    chars = {(r.db_id, r.schema_chars) for r in rows if r.mode == "auto"}
    assert len(chars) == len({r.db_id for r in rows})
