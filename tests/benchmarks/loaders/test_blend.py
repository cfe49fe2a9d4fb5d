"""The ``blend`` loader: sources divided by database into tune (train) and report (dev) parts.

Real shared data (cosql-dev-a, sparc-dev-a, spider-dev-a); skipped where it is absent.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)
from routerlab.agents.errors import ConfigError
from routerlab.benchmarks.dataset import dataset
from routerlab.benchmarks.loaders.blend import SPLIT_RULES, read_blend, sorted_alternate
from routerlab.cli import app
from tests.conftest import SPIDER_DEV_A

DATA = SPIDER_DEV_A.parent
REPO = Path(__file__).resolve().parents[3]
BLEND = REPO / "docs" / "configs" / "dspy_real_blend.yaml"
DATABASES = [
    "car_1",
    "dog_kennels",
    "tvshow",
    "concert_singer",
    "poker_player",
    "course_teach",
    "battle_death",
    "voter_1",
]

pytestmark = pytest.mark.skipif(
    not all((DATA / d / "dev.json").is_file() for d in ("cosql-dev-a", "sparc-dev-a", "spider-dev-a")),
    reason=f"shared data not found under {DATA} (set ROUTERLAB_SPIDER_DEV)",
)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "blend.yaml"
    path.write_text(text.replace("DATA", str(DATA)))
    return path


def test_the_split_rule_puts_every_database_in_exactly_one_part_whatever_the_order():
    tune, report = sorted_alternate(DATABASES)
    assert not set(tune) & set(report) and sorted(tune + report) == sorted(DATABASES)
    assert (len(tune), len(report)) == (4, 4)
    shuffled = list(DATABASES)
    random.Random(7).shuffle(shuffled)
    assert sorted_alternate(shuffled) == (tune, report)  # names alone decide, not their order
    assert tune == ["battle_death", "concert_singer", "dog_kennels", "tvshow"]
    assert set(SPLIT_RULES) == {"sorted-alternate"}


def test_the_committed_blend_follows_its_rule_and_keeps_report_databases_out_of_train():
    split, sources = read_blend(BLEND)
    assert split.rule == "sorted-alternate"
    assert sorted(d for d, p in split.part.items() if p == "tune") == sorted_alternate(DATABASES)[0]
    assert {s.name for s in sources} == {"builtin-train", "builtin-dev", "cosql", "sparc", "mixed"}
    ds = dataset.build("blend", path=str(BLEND))
    train, dev = ds.split("train"), ds.split("dev")
    tune_dbs, report_dbs = set(sorted_alternate(DATABASES)[0]), set(sorted_alternate(DATABASES)[1])
    spider_family = [e for e in ds.examples if e.dataset in ("cosql", "sparc", "mixed")]
    assert {e.db_id for e in spider_family if e.split == "train"} == tune_dbs
    assert {e.db_id for e in spider_family if e.split == "dev"} == report_dbs
    # the built-in benchmark keeps its own division: train tunes, dev reports
    assert {e.split for e in ds.examples if e.dataset == "builtin-train"} == {"train"}
    assert {e.split for e in ds.examples if e.dataset == "builtin-dev"} == {"dev"}
    assert len(train) == 113 + 224 + 223 + 205 and len(dev) == 111 + 176 + 264 + 177
    # ids and conversations are prefixed by source, unique, and a conversation sits in one part
    assert len({e.id for e in ds.examples}) == len(ds.examples)
    parts: dict[str, set[str]] = {}
    for e in ds.examples:
        assert e.id.startswith(f"{e.dataset}:") and e.meta["source_id"] == e.id.split(":", 1)[1]
        if e.conversation:
            parts.setdefault(e.conversation, set()).add(e.split)
    assert parts and all(len(p) == 1 for p in parts.values())
    assert {e.intent for e in train if e.dataset == "cosql"} == {"sql", "clarify"}


def test_a_database_in_both_parts_is_refused_with_its_name(tmp_path):
    path = _write(
        tmp_path,
        "databases: {tune: [car_1, tvshow], report: [tvshow, voter_1]}\n"
        "sources: [{name: c, dataset: cosql, args: {path: DATA/cosql-dev-a}}]\n",
    )
    with pytest.raises(ConfigError, match="both parts") as err:
        dataset.build("blend", path=str(path))
    assert "tvshow" in err.value.found and "car_1" not in err.value.found


def test_lists_that_do_not_follow_their_rule_are_refused(tmp_path):
    path = _write(
        tmp_path,
        "databases: {rule: sorted-alternate, tune: [car_1, dog_kennels], report: [tvshow, voter_1]}\n"
        "sources: [{name: c, dataset: cosql, args: {path: DATA/cosql-dev-a}}]\n",
    )
    with pytest.raises(ConfigError, match="do not follow their rule") as err:
        read_blend(path)
    assert "tune ['car_1', 'tvshow']" in err.value.expected


def test_an_unknown_source_dataset_is_refused_with_the_known_ones(tmp_path):
    path = _write(tmp_path, "databases: {tune: [car_1]}\nsources: [{name: c, dataset: cosqll, args: {}}]\n")
    with pytest.raises(ConfigError, match="unknown source dataset") as err:
        read_blend(path)
    assert "cosql" in err.value.expected and "'cosqll'" in err.value.found


def test_a_database_the_split_names_nowhere_is_refused(tmp_path):
    path = _write(
        tmp_path,
        "databases: {tune: [car_1, dog_kennels], report: [tvshow]}\n"
        "sources: [{name: c, dataset: cosql, args: {path: DATA/cosql-dev-a}}]\n",
    )
    with pytest.raises(ConfigError, match="names nowhere") as err:
        dataset.build("blend", path=str(path))
    assert "voter_1" in err.value.found


def test_the_cli_exits_2_on_a_bad_blend_before_any_model(tmp_path):
    path = _write(
        tmp_path,
        "databases: {tune: [car_1], report: [car_1]}\n"
        "sources: [{name: c, dataset: cosql, args: {path: DATA/cosql-dev-a}}]\n",
    )
    result = CliRunner().invoke(
        app, ["route", "--router", "rules", "--lm", "scripted:basic", "--dataset", "blend", "--dataset-path", str(path)]
    )
    assert result.exit_code == 2 and "both parts" in result.output
