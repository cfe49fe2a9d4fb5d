"""Sweep files: grid expansion, and every bad field rejected up front with a fix-it message (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import routerlab.cli as cli
from routerlab.agents.errors import ConfigError, RouterlabError
from routerlab.sweep import Cell, SweepSpec, lm_provider, load_sweep


@pytest.fixture(autouse=True)
def wide_errors(monkeypatch):
    # rich wraps the error at 80 columns; the assertions look for whole paths and names
    monkeypatch.setattr(cli._err, "width", 1000)
    monkeypatch.setattr(cli._out, "width", 1000)


# -- expansion -----------------------------------------------------------------------------------


def test_the_grid_is_the_cartesian_product_in_a_fixed_order(sweep_file):
    spec = load_sweep(
        sweep_file(
            datasets=["builtin", {"name": "builtin", "args": {"split_seed": 1}, "split": "test", "limit": 0}],
            routers=["rules", {"name": "hybrid", "args": {"fix_budget": 2}, "grid": {"threshold": [0.5, 0.9]}}],
            lms=["scripted:basic", {"spec": "openai/gpt-4o-mini", "api_base": "http://127.0.0.1:1/v1", "cache": False}],
            seeds=[0, 1],
        )
    )
    cells = spec.cells()
    assert len(cells) == 2 * 3 * 2 * 2
    assert [c.key for c in cells[:3]] == ["c000", "c001", "c002"]
    # datasets, then LMs, then seeds, then router variants
    first = cells[:3]
    assert [(c.router, c.router_args.get("threshold")) for c in first] == [
        ("rules", None),
        ("hybrid", 0.5),
        ("hybrid", 0.9),
    ]
    assert {c.seed for c in first} == {0} and cells[3].seed == 1
    assert cells[6].lm.spec == "openai/gpt-4o-mini" and cells[6].lm.cache is False
    assert cells[12].dataset.args == {"split_seed": 1} and cells[12].dataset.split == "test"
    # limit 0 means every example, as on the command line
    assert cells[12].dataset.limit is None and cells[0].dataset.limit == 2
    assert all(c.router_args.get("fix_budget") == 2 for c in cells if c.router == "hybrid")
    # every cell has its own run id under the sweep, and its config carries the grid's values
    assert len({c.run_id("s") for c in cells}) == len(cells)
    config = cells[7].run_config()
    assert (config.lm, config.lm_api_base, config.limit) == ("openai/gpt-4o-mini", "http://127.0.0.1:1/v1", 2)


def test_a_seed_reaches_every_component_that_takes_one(sweep_file):
    spec = load_sweep(
        sweep_file(
            routers=["rules", "random"],
            seeds=[3, 4],
            run={"faults": {"rate": 0.1, "seed": 99}},
        )
    )
    by = {(c.router, c.seed): c for c in spec.cells()}
    assert by[("random", 3)].router_args == {"seed": 3}
    assert by[("random", 4)].router_args == {"seed": 4}
    # rules takes no seed: its cells are plain repeats, said so in `seeded`
    assert by[("rules", 3)].router_args == {}
    assert by[("rules", 3)].seeded == ("faults",) and by[("random", 3)].seeded == ("router", "faults")
    assert by[("rules", 4)].run_config().faults.seed == 4
    assert by[("random", 3)].run_config().faults.rate == 0.1


def test_a_mixed_dataset_gets_the_seed(sweep_file, tmp_path):
    spec = load_sweep(sweep_file(datasets=[{"name": "mixed", "args": {"base": "builtin"}}], seeds=[7]))
    (cell,) = spec.cells()
    assert cell.dataset.args == {"base": "builtin", "seed": 7} and cell.seeded == ("dataset",)


def test_without_seeds_nothing_is_seeded(sweep_file):
    spec = load_sweep(sweep_file(routers=["random"]))
    (cell,) = spec.cells()
    assert cell.seed is None and cell.router_args == {} and cell.seeded == ()
    assert spec.name == "sweep" and spec.experiment == "routerlab/sweeps"


def test_cells_and_specs_survive_a_json_round_trip(sweep_file):
    import json

    spec = load_sweep(
        sweep_file(
            routers=[{"name": "hybrid", "grid": {"threshold": [0.4, 0.6]}}], seeds=[1], providers={"scripted": 2}
        )
    )
    again = SweepSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert again.same_grid(spec) and again.cells() == spec.cells()
    cell = spec.cells()[1]
    assert Cell.from_dict(json.loads(json.dumps(cell.to_dict()))) == cell


def test_lm_providers_come_from_the_spec_prefix():
    assert lm_provider("openai/gpt-4o-mini") == "openai"
    assert lm_provider("hosted_vllm/qwen") == "hosted_vllm"
    assert lm_provider("local") == lm_provider("local:0.5b") == "local"
    assert lm_provider("scripted:basic") == "scripted"


# -- validation, case by case ------------------------------------------------------------------------


BAD = [
    # (case, sweep file content over the valid base, field named, words in the message)
    ("unknown top-level key", {"router": ["rules"]}, "router", "routers?"),
    ("no datasets", {"datasets": []}, "datasets", "non-empty list"),
    ("unknown dataset", {"datasets": ["spyder"]}, "datasets[0].name", "unknown dataset"),
    ("bad dataset argument", {"datasets": [{"name": "builtin", "args": {"nope": 1}}]}, "datasets[0].args.nope", "nope"),
    ("unknown key in a dataset", {"datasets": [{"name": "builtin", "spilt": "dev"}]}, "datasets[0].spilt", "split?"),
    ("bad split", {"split": "validation"}, "split", "unknown split"),
    ("negative limit", {"limit": -1}, "limit", "non-negative"),
    ("unknown router", {"routers": ["rulez"]}, "routers[0].name", "rules"),
    ("bad router argument", {"routers": [{"name": "hybrid", "args": {"treshold": 0.5}}]}, "treshold", "threshold"),
    ("grid value not a list", {"routers": [{"name": "hybrid", "grid": {"threshold": 0.5}}]}, "grid.threshold", "list"),
    ("empty grid list", {"routers": [{"name": "hybrid", "grid": {"threshold": []}}]}, "grid.threshold", "list"),
    (
        "parameter in args and grid",
        {"routers": [{"name": "hybrid", "args": {"threshold": 0.5}, "grid": {"threshold": [0.1]}}]},
        "routers[0].grid.threshold",
        "both",
    ),
    ("router given twice", {"routers": ["rules", "oracle", "rules"]}, "routers[2]", "twice"),
    ("seed twice", {"routers": [{"name": "random", "args": {"seed": 1}}], "seeds": [0]}, "args.seed", "twice"),
    ("unknown LM spec", {"lms": ["gpt4"]}, "lms[0].spec", "provider-prefixed"),
    ("unknown scripted script", {"lms": ["scripted:nope"]}, "lms[0].spec", "scripted LM script"),
    ("unknown local model", {"lms": ["local:7b"]}, "lms[0].spec", "local:0.5b"),
    ("unknown LM key", {"lms": [{"spec": "scripted:basic", "apibase": "x"}]}, "lms[0].apibase", "api_base?"),
    ("bad LM cache", {"lms": [{"spec": "scripted:basic", "cache": "no"}]}, "lms[0].cache", "true or false"),
    ("seeds not integers", {"seeds": [0, "one"]}, "seeds[1]", "integer"),
    ("repeated seed", {"seeds": [1, 1]}, "seeds[1]", "twice"),
    ("provider of no LM", {"providers": {"opneai": 2}}, "providers.opneai", "provider"),
    ("cap not positive", {"providers": {"scripted": 0}}, "providers.scripted", ">= 1"),
    ("unknown run setting", {"run": {"concurency": 2}}, "run.concurency", "concurrency?"),
    ("run setting of the wrong type", {"run": {"concurrency": "two"}}, "run.concurrency", "integer"),
    ("run setting out of range", {"run": {"attempts": 0}}, "run.attempts", "from 1 to 100"),
    ("run setting the grid owns", {"run": {"lm": "local"}}, "run.lm", "set by the grid"),
    ("bad pipeline setting", {"run": {"pipeline": {"max_steps": 0}}}, "run.pipeline.max_steps", ">= 1"),
    ("unknown pipeline key", {"run": {"pipeline": {"max_stepz": 3}}}, "run.pipeline.max_stepz", "max_steps?"),
    ("unknown scorer", {"run": {"scorers": ["exx"]}}, "run.scorers", "unknown scorer"),
    ("bad ray cpus", {"ray": {"num_cpus": 0}}, "ray.num_cpus", "> 0"),
    ("bad ray retries", {"ray": {"max_retries": -1}}, "ray.max_retries", ">= 0"),
    ("unknown ray key", {"ray": {"retries": 1}}, "ray.retries", "max_retries?"),
]


@pytest.mark.parametrize(("case", "doc", "field", "words"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_field_names_the_file_and_the_field(sweep_file, case, doc, field, words):
    path = sweep_file(**doc)
    with pytest.raises(ConfigError) as err:
        load_sweep(path)
    text = str(err.value)
    assert str(path) in text and field in text, text
    assert words in text, text
    assert err.value.expected and err.value.found and err.value.fix, text
    assert err.value.details["file"] == str(path)


def test_files_that_do_not_parse_or_are_not_mappings(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match="not found"):
        load_sweep(missing)
    broken = tmp_path / "broken.yaml"
    broken.write_text("datasets: [builtin\nrouters: rules")
    with pytest.raises(ConfigError, match="does not parse"):
        load_sweep(broken)
    listed = tmp_path / "list.yaml"
    listed.write_text("- builtin\n")
    with pytest.raises(ConfigError, match="not a mapping"):
        load_sweep(listed)


# -- through the command line: exit 2, a fix-it message, nothing left behind ----------------------------


def _sweep_cli(tmp_path: Path, *args: str) -> tuple[int, str]:
    store = tmp_path / "results.duckdb"
    out = CliRunner().invoke(cli.app, ["sweep", *args, "--store", str(store), "--no-mlflow"])
    assert not isinstance(out.exception, RouterlabError | AssertionError), out.exception
    return out.exit_code, " ".join(out.output.split())


def test_the_cli_rejects_a_bad_sweep_file_with_exit_2_and_runs_nothing(sweep_file, tmp_path):
    code, text = _sweep_cli(tmp_path, "--config", str(sweep_file(routers=[{"name": "hybrid", "args": {"x": 1}}])))
    assert code == 2 and "routers[0].args.x" in text and "expected:" in text and "fix:" in text, text
    assert not (tmp_path / "results.duckdb").exists() and not (tmp_path / "sweeps").exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--executor", "slurm"], "unknown sweep executor"),
        (["--executor", "local", "--address", "auto"], "--address"),
        ([], "no sweep given"),
        (["--resume", "sweep-20990101-000000-beef"], "no sweep"),
    ],
    ids=["unknown executor", "address without ray", "no config", "unknown sweep"],
)
def test_the_cli_rejects_bad_options_with_exit_2(tmp_path, sweep_file, args, words):
    given = ["--config", str(sweep_file())] if args and args[0] == "--executor" else []
    code, text = _sweep_cli(tmp_path, *given, *args)
    assert code == 2 and words in text and "fix:" in text, text


def test_ray_needs_a_tracking_server_not_a_local_store(sweep_file, tmp_path):
    pytest.importorskip("ray")
    out = CliRunner().invoke(
        cli.app,
        [
            "sweep",
            "--config",
            str(sweep_file()),
            "--executor",
            "ray",
            "--store",
            str(tmp_path / "r.duckdb"),
            "--tracking-uri",
            f"sqlite:///{tmp_path}/mlflow.db",
        ],
    )
    text = " ".join(out.output.split())
    assert out.exit_code == 2 and "routerlab server mlflow" in text and "--no-mlflow" in text, text
    assert not (tmp_path / "mlflow.db").exists()
