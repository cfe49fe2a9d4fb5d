"""Store faults: a store another process takes mid-session, and a damaged store file.

The contention is real: a second Python process opens the DuckDB file for writing (DuckDB's
own file lock) while the session runs. A hook on the session's crash check (called after a run's
writer has released the file) only times it: the holder is started there and waited for.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from routerlab import cli
from routerlab._runs import session_live
from routerlab.cli import app
from routerlab.eval.store import ResultsStore, StoreDamagedError

HOLDER = """
import sys, time, duckdb
path, hold_s = sys.argv[1], float(sys.argv[2])
end = time.monotonic() + 60
while True:
    try:
        con = duckdb.connect(path)
        break
    except duckdb.IOException:
        if time.monotonic() > end:
            sys.exit(3)
        time.sleep(0.05)
print("held", flush=True)
time.sleep(hold_s)
con.close()
"""


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    monkeypatch.setattr(cli._err, "width", 1000)
    monkeypatch.setattr(cli._out, "width", 1000)


def test_a_store_taken_mid_session_stops_resumably_and_the_hint_resumes(tmp_path: Path, monkeypatch):
    store = tmp_path / "s" / "r.duckdb"
    monkeypatch.setenv("ROUTERLAB_STORE_WAIT_S", "2")
    holders: list[subprocess.Popen] = []
    real = session_live.crash_verdict

    def verdict(results):
        # after the second router's examples are stored and its writer closed, another process
        # takes the file and keeps it for 6 s (longer than the 2 s the store waits)
        if len(holders) == 0 and results and results[0].router == "oracle":
            proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(store), "6"], stdout=subprocess.PIPE, text=True)
            holders.append(proc)
            assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        return real(results)

    monkeypatch.setattr(session_live, "crash_verdict", verdict)
    args = ["run", "--lm", "scripted:basic", "--router", "rules,oracle", "--limit", "4", "--no-mlflow"]
    t0 = time.monotonic()
    out = CliRunner().invoke(app, [*args, "--store", str(store)])
    text = " ".join(out.output.split())
    assert out.exit_code == 75, out.output
    assert time.monotonic() - t0 < 60
    assert "is locked by another process; waiting (up to 2 s" in text  # visible while waiting
    assert "stayed locked by another process" in text
    hint = text.split("the rest resumes with ")[1].strip()
    assert hint.startswith("routerlab run --resume ") and f"--store {store}" in hint and "--no-mlflow" in hint
    holders[0].wait(timeout=30)
    con = duckdb.connect(str(store), read_only=True)
    statuses = dict(con.execute("SELECT router, status FROM runs").fetchall())
    stored = con.execute("SELECT count(*) FROM examples").fetchone()[0]
    con.close()
    # the finished run is FINISHED; the one the lock interrupted is left RUNNING, not FAILED
    assert statuses == {"rules": "FINISHED", "oracle": "RUNNING"} and stored == 8
    monkeypatch.setattr(session_live, "crash_verdict", real)
    again = CliRunner().invoke(app, hint.split()[1:])  # the hint, as printed
    assert again.exit_code == 0, again.output
    con = duckdb.connect(str(store), read_only=True)
    assert set(dict(con.execute("SELECT router, status FROM runs").fetchall()).values()) == {"FINISHED"}
    assert con.execute("SELECT count(*) FROM examples").fetchone()[0] == 8  # nothing run twice
    con.close()


def test_a_store_locked_before_the_session_exits_75_and_writes_nothing(tmp_path: Path, monkeypatch):
    store = tmp_path / "r.duckdb"
    ResultsStore(store)  # an existing store
    monkeypatch.setenv("ROUTERLAB_STORE_WAIT_S", "1")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(store), "120"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        args = ["run", "--lm", "scripted:basic", "--router", "rules", "--limit", "2", "--no-mlflow"]
        out = CliRunner().invoke(app, [*args, "--store", str(store)])
    finally:
        holder.kill()  # the test's own holder process, by its handle
        holder.wait(timeout=30)
    assert out.exit_code == 75 and "nothing was written" in " ".join(out.output.split()), out.output
    assert ResultsStore(store, read_only=True).runs().empty


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated
        lambda b: b[:12288] + bytes(range(256)) * ((len(b) - 12288) // 256),  # overwritten past the header
    ],
    ids=["truncated", "overwritten"],
)
def test_a_damaged_store_exits_2_with_what_was_found_and_how_to_recover(tmp_path: Path, damage):
    store = tmp_path / "r.duckdb"
    args = ["run", "--lm", "scripted:basic", "--router", "rules", "--limit", "6", "--no-mlflow"]
    assert CliRunner().invoke(app, [*args, "--store", str(store)]).exit_code == 0
    store.write_bytes(damage(store.read_bytes()))
    for command in (["compare", "x", "--store", str(store)], [*args, "--store", str(store)]):
        out = CliRunner().invoke(app, command)
        text = " ".join(out.output.split())
        assert out.exit_code == 2, (command, out.output)
        assert "the file is damaged" in text and f"mv {store} {store}.damaged" in text, text
        assert "Traceback" not in out.output
    with pytest.raises(StoreDamagedError):
        ResultsStore(store, read_only=True).runs()
