"""``followup_context`` from a run config file to the run's MLflow params (issue 51).

The lead sets the mode as ``pipeline: {tools: {followup_context: edit}}`` in a ``routerlab run
--config`` file; it must be checked when the file is loaded and recorded with the run, as every
other ToolSettings field is.
"""

from __future__ import annotations

import json

import pytest
from mlflow import MlflowClient

from routerlab import routers
from routerlab._runs.config import load_run_config
from routerlab.agents.errors import UnknownComponentError
from routerlab.eval.tracking import MlflowSink
from tests.eval.conftest import build_dataset


def test_a_config_file_sets_the_mode_and_it_round_trips(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("pipeline: {tools: {followup_context: edit}}\n")
    config = load_run_config(cfg)
    assert config.pipeline.tools.followup_context == "edit"
    recorded = json.loads(json.dumps(config.to_dict()))  # as a session keeps it
    assert recorded["pipeline"]["tools"]["followup_context"] == "edit"
    assert load_run_config(None, defaults=recorded).pipeline.tools == config.pipeline.tools
    # without the key: the default, edit (chosen by the follow-up study)
    assert load_run_config(None).pipeline.tools.followup_context == "edit"


def test_an_unknown_mode_in_a_config_file_fails_when_loaded(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("pipeline: {tools: {followup_context: rewite}}\n")
    with pytest.raises(UnknownComponentError, match="unknown follow-up context mode 'rewite'") as exc:
        load_run_config(cfg)
    assert "did you mean 'rewrite'" in exc.value.fix


def test_the_mode_is_recorded_in_the_runs_mlflow_params(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("pipeline: {tools: {followup_context: rewrite}}\n")
    config = load_run_config(cfg)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with MlflowSink(uri) as sink:
        run_id = sink.start_run(routers.router.build("oracle"), "scripted:basic", build_dataset(), config.to_dict())
    params = MlflowClient(uri).get_run(run_id).data.params
    assert params["config.pipeline.tools.followup_context"] == "rewrite"
    assert params["config.pipeline.tools.followup_check"] == "false"
