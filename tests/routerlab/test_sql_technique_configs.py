"""The measurement configs of issue 40's techniques: each is the _chat config plus its one technique."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from routerlab._runs.config import load_run_config

CONFIGS = Path(__file__).resolve().parents[2] / "docs" / "configs"


@pytest.mark.parametrize(
    ("name", "technique"),
    [
        ("values", {"value_linking": True}),
        ("select", {"candidates": 3}),  # temperature 0.7 and the 6 s budget are the defaults
        ("checks", {"result_checks": ("empty", "count_for_list", "list_for_count", "duplicates")}),
    ],
)
def test_each_technique_config_differs_from_its_before_by_that_technique_only(name, technique):
    before = load_run_config(CONFIGS / "spider_dev_a_48_chat.yaml")
    after = load_run_config(CONFIGS / f"spider_dev_a_48_{name}.yaml")
    b, a = asdict(before.pipeline.tools), asdict(after.pipeline.tools)
    assert {k: v for k, v in a.items() if b[k] != v} == technique
    # the same 48 questions, so the two runs pair question by question
    assert after.dataset_args == before.dataset_args and after.dataset == before.dataset == "spider"


def test_the_program_config_is_the_chat_config_with_the_compiled_program_as_framing():
    import yaml

    # read as written: the program it names exists once the lead has compiled it
    # (scripts/compile_generate_sql.py), and loading checks that it does
    chat = yaml.safe_load((CONFIGS / "spider_dev_a_48_chat.yaml").read_text())
    program = yaml.safe_load((CONFIGS / "spider_dev_a_48_program.yaml").read_text())
    assert {k: v for k, v in program.items() if k != "pipeline"} == {k: v for k, v in chat.items() if k != "pipeline"}
    assert program["pipeline"]["tools"] == {
        **chat["pipeline"]["tools"],
        "sql_framing": "program",
        "sql_program": "builtin",
    }
    # its control without demos: the same field format, no program
    fields = load_run_config(CONFIGS / "spider_dev_a_48_fields.yaml")
    assert fields.dataset_args == program["dataset_args"] and fields.pipeline.tools.sql_program == ""
    assert asdict(fields.pipeline.tools) == {
        **asdict(load_run_config(CONFIGS / "spider_dev_a_48_chat.yaml").pipeline.tools),
        "sql_framing": "fields",
    }
