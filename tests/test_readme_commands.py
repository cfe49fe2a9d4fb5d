"""Every command the README shows is run by a test: here, or by the test named for it below.

Commands run through the real CLI on real stores (DuckDB, SQLite MLflow) in a temporary folder.
The scripted LM stands in for the model where the model is not the point (the README's own
quickstart uses it for the same reason); limits are cut to two examples to keep the suite quick.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from routerlab.cli import app
from tests.conftest import SPIDER_DEV_A

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: commands run by another test: the file that runs it and a string that shows it does
ELSEWHERE: dict[str, tuple[str, str]] = {
    "bash scripts/setup.sh && .venv/bin/routerlab run": (".ci/run", "bash scripts/setup.sh"),
    "bash .ci/run": (".ci/run", "pytest"),
    ".venv/bin/jupyter lab notebooks/": (
        "tests/notebooks/test_router_comparison.py",
        "test_notebook_opened_from_notebooks_folder_finds_the_project_store",
    ),
    ".venv/bin/routerlab ui": ("tests/servers.py", '"ui", "--tracking-uri"'),  # started for tests/routerlab/test_ui.py
    ".venv/bin/routerlab report SESSION_ID --out report.html": ("tests/routerlab/test_report.py", '"--out"'),
}


def readme_commands() -> list[str]:
    """The commands of the README's ``bash`` blocks, one per line, comments dropped."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), re.S)
    lines = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line]


def test_every_command_is_run_somewhere() -> None:
    commands = readme_commands()
    assert ".venv/bin/routerlab run" in " ".join(commands)
    for command in commands:
        if command in ELSEWHERE:
            path, needle = ELSEWHERE[command]
            assert needle in (ROOT / path).read_text(), f"{command!r}: {path} no longer runs it"
        else:
            assert command.startswith(".venv/bin/routerlab "), f"{command!r}: no test runs it"
    # the main job itself: tests/routerlab/test_main_job.py runs `routerlab run` with no options
    assert '["run", "--lm", "scripted:basic"' in (ROOT / "tests/routerlab/test_main_job.py").read_text()


def _adapt(args: list[str], tmp: Path, session: str | None) -> list[str]:
    """The README's arguments, pointed at this test's data and stores, on the scripted LM, 2 examples."""
    out: list[str] = []
    for a in args:
        # the shared data folder: spider-dev-a and the conversations (cosql-dev-a, sparc-dev-a) beside it
        a = a.replace("../shared/data/", f"{SPIDER_DEV_A.parent}/")
        a = a.replace("my_questions.jsonl", str(tmp / "my_questions.jsonl"))
        a = a.replace("SESSION_ID", session or "SESSION_ID").replace("results/", str(tmp / "csv"))
        out.append(a)
    if "--limit" in out:
        out[out.index("--limit") + 1] = "2"
    elif out[0] in ("run", "route"):
        out += ["--limit", "2"]
    if out[0] in ("run", "route") and "--lm" not in out:
        out += ["--lm", "scripted:basic"]
    if out[0] in ("run", "compare"):
        out += ["--store", str(tmp / "r.duckdb")]
    if out[0] in ("run", "route"):
        out += ["--tracking-uri", f"sqlite:///{tmp / 'mlflow.db'}"]
    return out


@pytest.fixture
def keyword_router():
    """docs/extending.md's example router, registered for the README's `--router rules,keyword`.

    Where the page's file has been added (``routers/keyword.py``, as tests/test_extending.py's copy
    does), the package registered it already and the page's code is not run a second time.
    """
    from routerlab.routers import router

    with router.restoring("keyword"):
        if "keyword" not in router:
            page = (ROOT / "docs/extending.md").read_text()
            code = re.search(r"```python\n# routers/keyword.py\n(.*?)```", page, re.S)
            exec(compile(code.group(1), "routers/keyword.py", "exec"), {"__name__": "docs_keyword"})  # type: ignore[union-attr]
        yield


@pytest.mark.skipif(not SPIDER_DEV_A.exists(), reason="needs the spider-dev-a folder")
def test_readme_cli_commands_run(tmp_path: Path, sales_db: Path, keyword_router) -> None:
    rows = [
        {"question": "How many areas are there?", "db_path": str(sales_db), "gold_sql": "SELECT count(*) FROM areas"},
        {"question": "Explain SELECT name FROM areas", "db_path": str(sales_db), "gold_sql": "", "intent": "explain"},
    ]
    (tmp_path / "my_questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    session = None
    ran = []
    for command in readme_commands():
        if command in ELSEWHERE:
            continue
        args = _adapt(shlex.split(command)[1:], tmp_path, session)
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, f"{command}\n{' '.join(args)}\n{result.output}"
        if args[0] == "run":
            session = re.search(r"session id: (\S+)", result.output).group(1)  # type: ignore[union-attr]
            assert "Verdict:" in result.output, result.output
        if args[0] == "routers":
            assert "keyword" in result.output.split()
        if "--scorer" in args:
            assert "Verdict:" in result.output and "pipeline route" in result.output
        ran.append(args[0])
    # the last session has one router, so no paired tests: its rates, failures... as Parquet files
    assert "router" in pd.read_parquet(tmp_path / "csv" / "end_to_end_rates.parquet").columns
    assert ran.count("run") >= 5 and "route" in ran and ran.count("compare") == 2
