"""docs/extending.md stays true: each example there registers, builds and works as documented."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from routerlab.agents.errors import ContractError
from routerlab.agents.registry import Registry, component_spec
from routerlab.agents.state import initial_state
from routerlab.agents.trace import Trace
from routerlab.benchmarks.dataset import Dataset, dataset
from routerlab.eval.scoring import scorer
from routerlab.routers import router

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "extending.md"


def _blocks() -> dict[str, str]:
    """Python blocks of the page, keyed by the file named in their first comment line."""
    found = re.findall(r"```python\n# (\S+)\n(.*?)```", DOC.read_text(), re.S)
    return {name: code for name, code in found}


@pytest.fixture
def registries():
    """The page's names are free during a test and every registration is undone afterwards.

    In the copy that ``test_the_pages_files_are_the_whole_change`` builds, the page's files are
    already registered: a test here runs the page's code again, as a reader would, so those
    names are lifted for it and put back after (no global state leaks either way).
    """
    registry_of = {"router": router, "scorer": scorer, "loader": dataset}
    with contextlib.ExitStack() as stack:
        for kind, (_, _, _, name) in EXAMPLES.items():
            # the page's names only: what an import registers meanwhile (the built-in loaders,
            # say, on the CLI's first run) stays for the tests after this one
            stack.enter_context(registry_of[kind].restoring(name))
            registry_of[kind]._factories.pop(name, None)
        yield


def _run(name: str) -> dict:
    namespace: dict = {"__name__": f"docs_example_{Path(name).stem}"}
    exec(compile(_blocks()[name], name, "exec"), namespace)
    return namespace


#: each kind's example: the component's file, its test file, and the conformance suite it joins
EXAMPLES: dict[str, tuple[str, str, str, str]] = {
    "router": ("routers/keyword.py", "tests/routers/test_keyword.py", "tests/routers/test_conformance.py", "keyword"),
    "scorer": (
        "eval/scorers/steps.py",
        "tests/eval/test_steps.py",
        "tests/eval/test_scorer_conformance.py",
        "few_steps",
    ),
    "loader": (
        "benchmarks/loaders/pairs.py",
        "tests/benchmarks/loaders/test_pairs.py",
        "tests/benchmarks/loaders/test_loader_conformance.py",
        "pairs",
    ),
}


def test_page_has_one_example_and_one_test_per_kind():
    assert set(_blocks()) == {name for component, test, _, _ in EXAMPLES.values() for name in (component, test)}


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


#: every test file that names or enumerates components (registries, conformance suites, the CLI's
#: and the API's router lists, golden decision and topology files, the README's commands, the layer
#: map), run unfiltered on the copy; ``test_the_selection_holds_every_enumerating_test`` keeps it whole
ENUMERATING: tuple[str, ...] = (
    "tests/test_layers.py",
    "tests/test_readme_commands.py",
    "tests/test_extending.py",
    "tests/agents/test_registry.py",
    "tests/agents/test_graph.py",
    "tests/agents/tools/test_framing.py",
    "tests/agents/tools/test_views.py",
    "tests/routers/test_conformance.py",
    "tests/routers/test_always_sql.py",
    "tests/routers/test_rules.py",
    "tests/routers/test_handoff.py",
    "tests/eval/test_scorer_conformance.py",
    "tests/eval/test_scorers.py",
    "tests/benchmarks/loaders/test_loader_conformance.py",
    "tests/routerlab/serve/test_api.py",
    "tests/routerlab/app/test_python_api.py",
)

#: what makes a test file enumerate components: a registry's list, a golden file, the routers command
_ENUMERATES = re.compile(
    r"\b(router|scorer|dataset)\.names\(\)|golden|\[\s*\"routers\"\s*\]\s*\)|DEFAULT_SCORERS|readme_commands"
)

#: set in the copy's environment, so the copy's own run of this file does not copy the project again
_IN_COPY = "ROUTERLAB_EXTENDING_COPY"


def test_the_selection_holds_every_enumerating_test():
    """A test file that enumerates components is in ``ENUMERATING``: a new one cannot slip past the copy run."""
    found = sorted(
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("test_*.py")
        if _ENUMERATES.search(path.read_text(encoding="utf-8"))
    )
    missing = [path for path in found if path not in ENUMERATING]
    assert not missing, f"{missing} enumerate components: add them to ENUMERATING in tests/test_extending.py"
    assert all((ROOT / path).is_file() for path in ENUMERATING)


def _installed_copy(root: Path) -> Path:
    """A copy of the project at ``root/repo`` and its import layout at ``root/site``.

    ``routerlab.agents`` and the other layers are installed from folders beside the application
    package (pyproject's ``package-dir``); ``root/site/routerlab`` rebuilds that layout from links
    into the copy, so ``PYTHONPATH=root/site`` imports the copy, not this checkout.
    """
    repo = root / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".venv", ".git", ".routerlab", "*.egg-info")
    for name in ("agents", "routers", "benchmarks", "eval", "routerlab", "tests", "docs", "notebooks", "scripts"):
        shutil.copytree(ROOT / name, repo / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, repo / name)
    shutil.copytree(ROOT / ".ci", repo / ".ci")
    site = root / "site" / "routerlab"
    site.mkdir(parents=True)
    for entry in (repo / "routerlab").iterdir():
        (site / entry.name).symlink_to(entry)
    for layer in ("agents", "routers", "benchmarks", "eval"):
        (site / layer).symlink_to(repo / layer)
    return repo


def _outcomes(report: Path) -> dict[str, str]:
    """``{test id: passed | failed | skipped}`` from a JUnit XML report."""
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        verdict = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        outcomes[f"{case.get('classname')}::{case.get('name')}"] = verdict
    return outcomes


@pytest.mark.skipif(os.environ.get(_IN_COPY) == "1", reason="already running in the copy this test made")
def test_the_pages_files_are_the_whole_change(tmp_path):
    """Adding exactly the page's six files to a copy of the project keeps every test that enumerates
    components green, unfiltered: the conformance suites pick the new ones up by themselves."""
    repo = _installed_copy(tmp_path)
    before = {p.relative_to(repo) for p in repo.rglob("*") if p.is_file()}
    blocks = _blocks()
    for rel, code in blocks.items():
        (repo / rel).write_text(code)
    after = {p.relative_to(repo) for p in repo.rglob("*") if p.is_file()}
    assert after - before == {Path(rel) for rel in blocks}
    report = tmp_path / "junit.xml"
    env = {
        **os.environ,
        "PYTHONPATH": str(tmp_path / "site"),
        "ROUTERLAB_CACHE": str(tmp_path / "cache"),
        _IN_COPY: "1",
    }
    new_tests = [test for _, test, _, _ in EXAMPLES.values()]
    # the embedded model and the browser are never run here (the machine's rule); nothing else is
    # deselected: every test of these files runs as CI runs it
    args = ["-q", "-p", "no:cacheprovider", "-m", "not model and not browser", f"--junitxml={report}"]
    args += [*ENUMERATING, *new_tests]
    # this checkout is installed in editable mode, and setuptools' editable finder would import
    # it instead of the copy: drop that finder so PYTHONPATH decides
    boot = (
        "import sys, pytest; "
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in getattr(f, '__module__', '')]; "
        # the copy's own routerlab/ folder (the application alone) must not shadow the layout
        f"sys.path.insert(0, {str(tmp_path / 'site')!r}); "
        "import routerlab.agents, routerlab.routers, routerlab.eval.scorers, routerlab.benchmarks.loaders; "
        f"assert routerlab.agents.__file__.startswith({str(tmp_path)!r}), routerlab.agents.__file__; "
        f"sys.exit(pytest.main({args!r}))"
    )
    done = subprocess.run([sys.executable, "-c", boot], cwd=repo, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    print(next(line for line in reversed(done.stdout.splitlines()) if " passed" in line))  # shown with -s
    outcomes = _outcomes(report)
    assert "failed" not in outcomes.values() and "error" not in outcomes.values()
    for _, test, suite, name in EXAMPLES.values():
        suite_module = suite.removesuffix(".py").replace("/", ".")
        # the suite's checks that do not apply (a loader with no sample input, say) skip, as for built-ins
        param = re.compile(rf"[\[-]{name}[\]-]")  # the component as a test parameter, e.g. [0-keyword]
        joined = {t: v for t, v in outcomes.items() if t.startswith(suite_module) and param.search(t)}
        assert "passed" in joined.values() and set(joined.values()) <= {"passed", "skipped"}, (
            f"{suite} did not run {name!r}: {joined}"
        )
        own = [t for t in outcomes if t.startswith(test.removesuffix(".py").replace("/", "."))]
        assert own and all(outcomes[t] == "passed" for t in own), f"{test} did not pass: {own}"
    assert outcomes["tests.routers.test_conformance::test_routers_command_lists_every_registered_router"] == "passed"


#: a test whose page code imports the built-in loaders (its first import registers them), and a
#: test that needs them registered: run after the first, it found an empty dataset registry
_ORDERED = (
    "tests/test_extending.py::test_loader_example",
    "tests/routerlab/test_bad_input.py::test_malformed_jsonl_names_file_record_and_field[bad_json]",
)


@pytest.mark.skipif(os.environ.get(_IN_COPY) == "1", reason="runs this checkout's tests, not the copy's")
@pytest.mark.parametrize("order", [_ORDERED, _ORDERED[::-1]], ids=["page-first", "page-last"])
def test_the_page_tests_leave_the_registries_for_the_tests_after_them(order):
    """In one process, either order: the ``registries`` fixture puts back the page's names only."""
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not model and not browser", *order]
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-1000:]


def test_a_custom_scorer_reaches_the_table_compare_and_mlflow(registries, tmp_path):
    """``routerlab run --scorer ex,few_steps`` as the page says: its column in every view of the run."""
    import mlflow
    from typer.testing import CliRunner

    from routerlab.cli import app

    _run("eval/scorers/steps.py")
    store, tracking = str(tmp_path / "r.duckdb"), f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = ["run", "--router", "rules", "--scorer", "ex,few_steps", "--lm", "scripted:basic", "--limit", "3"]
    result = CliRunner().invoke(app, [*args, "--store", store, "--tracking-uri", tracking])
    assert result.exit_code == 0, result.output
    # the closing table: the scorer is a measure of its own (stacked or in a column at this width)
    assert "few_steps" in result.output[result.output.index("== end to end") :], result.output
    session = re.search(r"session id: (\S+)", result.output).group(1)  # type: ignore[union-attr]
    shown = CliRunner().invoke(app, ["compare", session, "--store", store, "--format", "markdown"])
    table_header = next(line for line in shown.output.splitlines() if line.startswith("| router |"))
    assert shown.exit_code == 0 and "few_steps" in table_header, shown.output
    client = mlflow.MlflowClient(tracking)
    runs = client.search_runs(
        [e.experiment_id for e in client.search_experiments()], f"tags.`routerlab.run_key` = '{session}.rules'"
    )
    assert runs, "the router's MLflow run"
    metrics = runs[0].data.metrics
    assert 0.0 <= metrics["few_steps"] <= 1.0 and metrics["few_steps_n"] == 3.0
