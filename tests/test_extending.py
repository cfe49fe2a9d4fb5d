"""docs/extending.md stays true: each example there registers, builds and works as documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from routerlab.agents.errors import ContractError
from routerlab.agents.registry import Registry, component_spec
from routerlab.agents.state import initial_state
from routerlab.agents.trace import Trace
from routerlab.benchmarks.dataset import Dataset, dataset
from routerlab.eval.scoring import scorer
from routerlab.routers import router

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def _blocks() -> dict[str, str]:
    """Python blocks of the page, keyed by the file named in their first comment line."""
    found = re.findall(r"```python\n# (\S+)\n(.*?)```", DOC.read_text(), re.S)
    return {name: code for name, code in found}


@pytest.fixture
def registries():
    """Registrations made by a test are undone afterwards (no global state leaks)."""
    saved = {reg: dict(reg._factories) for reg in (router, scorer, dataset)}
    yield
    for reg, factories in saved.items():
        reg._factories.clear()
        reg._factories.update(factories)


def _run(name: str) -> dict:
    namespace: dict = {"__name__": f"docs_example_{Path(name).stem}"}
    exec(compile(_blocks()[name], name, "exec"), namespace)
    return namespace


def test_page_has_one_example_per_kind():
    assert set(_blocks()) == {"routers/keyword.py", "eval/scorers/steps.py", "benchmarks/loaders/pairs.py"}


def test_router_example(registries):
    _run("routers/keyword.py")
    built = router.build("keyword", word="describe")
    assert component_spec(built) == {"kind": "router", "name": "keyword", "args": {"word": "describe", "fix_budget": 1}}
    assert built.classify(initial_state("Describe this query: SELECT 1", "db.duckdb")).intent == "explain"
    assert built.classify(initial_state("How many rows?", "db.duckdb")).intent == "sql"


def test_scorer_example(registries):
    _run("eval/scorers/steps.py")
    few = scorer.build("few_steps", max_calls=1)
    trace = Trace(example_id="x", tool_calls=[{"name": "chat", "status": "success"}])
    assert few.score(None, trace).value == 1.0
    assert scorer.build("few_steps", max_calls=0).score(None, trace).value == 0.0


def test_loader_example(registries, tmp_path):
    _run("benchmarks/loaders/pairs.py")
    data = tmp_path / "q.tsv"
    data.write_text("How many areas?\tSELECT count(*) FROM areas\nName them\tSELECT name FROM areas\n")
    loaded = dataset.build("pairs", path=str(data), db="sales.duckdb")
    assert isinstance(loaded, Dataset)
    assert [e.gold_sql for e in loaded.examples] == ["SELECT count(*) FROM areas", "SELECT name FROM areas"]


def test_registry_checks_what_a_factory_builds():
    things: Registry[Dataset] = Registry("dataset", returns=Dataset)
    things("broken")(lambda: "not a dataset")
    with pytest.raises(ContractError, match="built the wrong kind of object") as err:
        things.build("broken")
    assert err.value.expected == "an instance of Dataset" and err.value.found == "str"
