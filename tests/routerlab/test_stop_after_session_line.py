"""A stop at any moment after the ``session`` line says what was saved and how to resume (issue 62).

The probes: SIGTERM 0.02-0.05 s after the session line exited 2 with "nothing to compare" and no
resume command (the runs were registered and closed KILLED, but no router had begun, so the
summary compared no runs); the stop message counted what this process delivered, not what was
stored ("hybrid 0 result(s)" with 7 stored).
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from routerlab import cli, cli_output
from routerlab._runs import session as session_mod
from routerlab._runs.runner import RunConfig
from routerlab._runs.session import SessionSpec, run_session
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field
from routerlab.app.run import stored_runs
from routerlab.eval.store import ResultsStore

ROUTERLAB = str(Path(sys.executable).with_name("routerlab"))


def _stop_after_line(tmp_path: Path, delay_s: float, signum: int) -> tuple[int, str, Path]:
    store = tmp_path / "r.duckdb"
    cmd = [ROUTERLAB, "run", "--lm", "scripted:basic", "--router", "rules,hybrid", "--limit", "30"]
    cmd += ["--store", str(store), "--no-mlflow"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "COLUMNS": "400"}
    )
    lines: list[str] = []
    sent = False
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        # one signal, after the first session line (the summary repeats the session's name)
        if not sent and line.startswith("session ") and ": builtin/dev" in line:
            sent = True
            time.sleep(delay_s)
            proc.send_signal(signum)
    return proc.wait(timeout=300), "".join(lines), store


@pytest.mark.parametrize(
    ("delay_s", "signum"),
    [(0.0, signal.SIGTERM), (0.03, signal.SIGTERM), (1.0, signal.SIGTERM), (0.05, signal.SIGINT)],
    ids=["term-0s", "term-30ms", "term-1s", "int-50ms"],
)
def test_a_stop_after_the_session_line_says_what_was_saved(tmp_path: Path, delay_s: float, signum: int) -> None:
    code, output, store = _stop_after_line(tmp_path, delay_s, signum)
    name = signal.Signals(signum).name
    assert code == 128 + signum, output[-3000:]
    assert "nothing to compare" not in output and "Traceback" not in output, output[-3000:]
    text = " ".join(output.split())
    if "was registered: nothing was saved" in text:
        # stopped before the runs were registered: the store holds none of them
        assert f"stopped by {name} before session" in text and "run the same command again" in text
        assert not store.exists() or ResultsStore(store, read_only=True).runs().empty
        return
    found = re.findall(r"(\S+\.(?:rules|hybrid)) (\d+) result\(s\)( \(finished\))?", text)
    saved = {run_id: n for run_id, n, _ in found}
    assert f"stopped by {name}; runs closed KILLED; saved:" in text and set(saved) == {
        r for r in ResultsStore(store, read_only=True).runs()["run_id"]
    }
    reader = ResultsStore(store, read_only=True)
    for run_id, n in saved.items():
        assert int(n) == len(reader.results(run_id)), (run_id, n)
    # a run that ended before the signal is FINISHED and the message says so; every other is KILLED
    statuses = dict(zip(reader.runs()["run_id"], reader.runs()["status"], strict=True))
    assert statuses == {run_id: "FINISHED" if done else "KILLED" for run_id, _, done in found}, text
    assert "resume with routerlab run --resume" in text


def test_a_stop_before_any_router_began_prints_the_resume_command(tmp_path, monkeypatch) -> None:
    # the window of the probe, made certain: the stop arrives right after the runs are registered
    def stopped_at_once(live):
        raise KeyboardInterrupt("SIGTERM")

    monkeypatch.setattr(session_mod, "run_all", stopped_at_once)
    store = tmp_path / "r.duckdb"
    out = CliRunner().invoke(
        cli.app,
        [
            *("run", "--lm", "scripted:basic", "--router", "rules,hybrid", "--limit", "3"),
            *("--store", str(store), "--no-mlflow"),
        ],
        env={"COLUMNS": "400"},
    )
    text = " ".join(out.output.split())
    assert out.exit_code == 130, out.output  # no signal handler saw it: Ctrl-C's code
    assert "nothing to compare" not in text
    runs = ResultsStore(store, read_only=True).runs()
    assert sorted(runs["status"]) == ["KILLED", "KILLED"]
    for run_id in runs["run_id"]:
        assert f"{run_id} 0 result(s)" in text
    assert "resume with routerlab run --resume" in text


def test_the_stop_message_counts_what_is_stored(tmp_path, capsys) -> None:
    # a resumed session's earlier results are stored but were never delivered to this process
    spec = SessionSpec(
        routers=[("rules", {})],
        config=RunConfig(limit=4, split="dev"),
        tracking_uri=None,
        store_path=str(tmp_path / "r.duckdb"),
    )
    lm = scripted_lm(lambda request: answer_field(request, "SELECT count(*) FROM service_areas"))
    done = run_session(spec, console=Console(quiet=True), lm=lm)
    stored = len(ResultsStore(spec.store_path, read_only=True).results(done.run_ids[0]))
    assert stored == 4
    this_process = dataclasses.replace(done, results={}, interrupted=True)

    class Stopped:
        name = "SIGTERM"

    cli_output.stop_message(
        this_process, Stopped(), "routerlab run --resume X", stored_runs(spec.store_path, this_process)
    )
    text = " ".join(capsys.readouterr().err.split())
    assert f"saved: {done.run_ids[0]} 4 result(s)" in text
