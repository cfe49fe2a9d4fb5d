"""Fixtures of the sweep tests: sweep files, a local Ray cluster, a worker that dies once."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from routerlab.agents.lm.scripts import basic, scripted_script

#: a scripted LM answering like ``basic`` that, in a Ray worker, kills its own process once
KILL_SCRIPT = "sweep-kill-once"

if KILL_SCRIPT not in scripted_script:
    # in this (the driver's) process it never kills: the local executor runs it as plain `basic`
    scripted_script(KILL_SCRIPT)(basic)


def sweep_writer(directory: Path) -> Callable[..., Path]:
    """A function writing sweep files into ``directory`` from keyword arguments (a small valid grid by default)."""

    def write(name: str = "sweep.yaml", **doc: Any) -> Path:
        base: dict[str, Any] = {"datasets": ["builtin"], "limit": 2, "routers": ["rules"], "lms": ["scripted:basic"]}
        path = directory / name
        path.write_text(yaml.safe_dump({**base, **doc}, sort_keys=False))
        return path

    return write


@pytest.fixture
def sweep_file(tmp_path: Path) -> Callable[..., Path]:
    """Write a sweep file into the test's tmp_path from keyword arguments (see :func:`sweep_writer`)."""
    return sweep_writer(tmp_path)


def _worker_setup(trigger_dir: str) -> Callable[[], None]:
    """The Ray ``worker_process_setup_hook``: register :data:`KILL_SCRIPT` in each worker.

    The script kills the worker (``os._exit``) at the first request whose prompt holds the text
    in ``<trigger_dir>/armed``, once: the first process to create ``<trigger_dir>/fired`` dies,
    later ones (the retried task among them) answer normally. Everything is imported inside, so
    the hook pickles by value into the workers.
    """

    def hook() -> None:
        import os as _os

        from routerlab.agents.lm.messages import text_of
        from routerlab.agents.lm.scripts import basic as _basic
        from routerlab.agents.lm.scripts import scripted_script as _scripts

        def factory() -> Any:
            inner = _basic()

            def reply(request: Any) -> Any:
                armed = _os.path.join(trigger_dir, "armed")
                if _os.path.exists(armed):
                    with open(armed) as f:
                        needle = f.read()
                    system = request.system if isinstance(request.system, str) else ""
                    prompt = "\n".join([system, *(text_of(m) for m in request.messages)])
                    if needle and needle in prompt:
                        try:
                            with open(_os.path.join(trigger_dir, "fired"), "x") as f:
                                f.write(str(_os.getpid()))
                        except FileExistsError:
                            return inner(request)
                        _os._exit(1)  # a lost worker: no exception, no cleanup, no result
                return inner(request)

            return reply

        if KILL_SCRIPT not in _scripts:
            _scripts(KILL_SCRIPT)(factory)

    return hook


#: Environment variable: how many times slower than an idle machine every fixed time limit of
#: the Ray sweep tests may run (default 5: a 2-core machine shared with other work, load 10-12).
LOAD_SLACK_ENV = "ROUTERLAB_TEST_LOAD_SLACK"
_DEFAULT_LOAD_SLACK = 5.0


def _load_slack() -> float:
    raw = os.environ.get(LOAD_SLACK_ENV, "")
    try:
        value = float(raw) if raw else _DEFAULT_LOAD_SLACK
    except ValueError:
        value = math.nan
    if not 1 <= value <= 100:  # NaN fails too
        raise pytest.UsageError(
            f"${LOAD_SLACK_ENV}: expected a number between 1 and 100 (how many times slower than an idle "
            f"machine the Ray tests may run), found {raw!r}; fix: unset it for the default "
            f"{_DEFAULT_LOAD_SLACK:g}, or set e.g. {LOAD_SLACK_ENV}=10 on a heavily loaded machine"
        )
    return value


#: Factor applied to every fixed time limit of the Ray tests (see :data:`LOAD_SLACK_ENV`). Each
#: limit is ``slack(<what an idle machine needs, with margin>)``: generous under load, yet finite,
#: so a real hang still fails.
LOAD_SLACK = _load_slack()


def slack(seconds: float) -> float:
    """``seconds`` (a limit sized for an idle machine) scaled by :data:`LOAD_SLACK`."""
    return seconds * LOAD_SLACK


def ray_system_config() -> dict[str, int]:
    """Ray's own limits that fail on a loaded machine, each scaled from Ray's default (in the comment)."""
    return {
        # a started worker process must register with its raylet in this time (60 s) or is killed
        # and started again; after 5 such restarts (pop_worker_max_retries) the task fails with
        # "Failed to startup worker": a cell FAILED, not slow
        "worker_register_timeout_seconds": round(slack(60)),
        # the raylet exits, taking the whole node with it, when its runtime-env agent (a Python
        # process it starts, asked at the first worker start because of the setup hook) does not
        # answer in this time (30 s)
        "agent_register_timeout_ms": round(slack(30) * 1000),
        # the GCS declares the node dead after 5 health checks in a row that each took longer
        # than this (10 s)
        "health_check_timeout_ms": round(slack(10) * 1000),
        # a worker or raylet that cannot reach the GCS for this long exits (60 s)
        "gcs_rpc_server_reconnect_timeout_s": round(slack(60)),
        # an idle worker beyond the CPU count is killed after this long idle (1 s): the spare
        # worker :func:`warm_workers` starts must still be there when the sweep needs it
        "idle_worker_killing_time_threshold_ms": round(slack(120) * 1000),
        # not a time limit but a 30x slowdown: Ray renices its workers by +15 over the process
        # that started the cluster, so beside work at nice 0 every cell ran on ~2 % of a core
        # (CFS weight 36 against 1024) while the test waited at full priority; 0 keeps them at
        # the test's own priority (`nice -n 19 pytest` stays 19), as Ray's job manager does
        "worker_niceness": 0,
    }


#: environment of every Ray worker process (Python-side limits Ray reads from the environment)
_WORKER_ENV = {
    # how long a new worker waits to fetch the setup hook from the GCS before exiting (60 s)
    "RAY_WORKER_PROCESS_SETUP_HOOK_LOAD_TIMEOUT": str(round(slack(60))),
}

#: environment of this (the driver's) process while ``ray.init`` starts the cluster
_DRIVER_ENV = {
    # the wait for the GCS to write its port, and the tries (1 s apart) to connect to it (30 s, 20)
    "RAY_gcs_server_port_wait_time_s": str(round(slack(30))),
    "RAY_NUM_REDIS_GET_RETRIES": str(round(slack(20))),
}

#: starts of the module's cluster tried before giving up (see :func:`ray_cluster`)
_RAY_START_TRIES = 4


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory) -> Iterator[Path]:
    """A 2-CPU Ray cluster on loopback for the module; yields the kill trigger directory.

    Every limit of Ray's that a loaded 2-core machine can exceed is scaled by
    :data:`LOAD_SLACK` (:func:`ray_system_config`, :data:`_WORKER_ENV`, :data:`_DRIVER_ENV`).
    """
    ray = pytest.importorskip("ray")
    trigger = tmp_path_factory.mktemp("kill")
    # "The current node timed out during startup" (every Ray test errored on it at load 3-6):
    # Ray waits a fixed 30 s for its raylet to register with the GCS (a constant in
    # ray/_private/node.py), and the raylet first waits a fixed 15 s for each of the dashboard
    # agent's port files, then fails a check and exits ("Timed out waiting for file
    # .../metrics_agent_port_...", or dashboard_agent_listen_port, in raylet.out: seen here at
    # load 5 under nice 19, the agent importing every dashboard module for 15-20 s). No setting
    # reaches either wait in Ray 2.60, so a start that timed out is shut down and tried again.
    for attempt in range(1, _RAY_START_TRIES + 1):
        try:
            with pytest.MonkeyPatch.context() as env:
                for name, value in _DRIVER_ENV.items():
                    env.setenv(name, value)
                ray.init(
                    num_cpus=2,
                    include_dashboard=False,
                    _node_ip_address="127.0.0.1",
                    log_to_driver=False,
                    runtime_env={"worker_process_setup_hook": _worker_setup(str(trigger)), "env_vars": _WORKER_ENV},
                    _system_config=ray_system_config(),
                )
            break
        except Exception as exc:
            if "timed out during startup" not in str(exc) or attempt == _RAY_START_TRIES:
                raise
            ray.shutdown()
            time.sleep(slack(2) * attempt)  # let the machine's load pass before the next start
    try:
        yield trigger
    finally:
        ray.shutdown()


def _warm_task() -> Callable[[int, str, float], int]:
    """The Ray task of :func:`warm_workers` (built here, imports inside: it pickles by value)."""

    def warm(count: int, barrier: str, wait_s: float) -> int:
        # hold this worker until `count` workers hold one each; returns this worker's pid
        import os as _os
        import time as _time

        import routerlab._runs.session  # noqa: F401  (the imports of a cell's first example, paid here)

        open(_os.path.join(barrier, str(_os.getpid())), "w").close()
        deadline = _time.monotonic() + wait_s
        while len(_os.listdir(barrier)) < count:
            if _time.monotonic() > deadline:
                raise TimeoutError(f"{len(_os.listdir(barrier))} of {count} workers started in {wait_s:g} s")
            _time.sleep(0.2)
        return _os.getpid()

    return warm


def warm_workers(count: int, barrier: Path) -> set[int]:
    """Start ``count`` Ray worker processes (setup hook and cell imports done) and leave them idle.

    A sweep that loses a worker needs another one at once: started cold (Python, Ray, the setup
    hook, DSPy, the runner) on a loaded machine, the replacement could still be importing when
    the surviving worker had finished the whole grid alone. Tasks of no CPU, each held until all
    ``count`` run, force ``count`` distinct processes.

    Raises:
        AssertionError: Fewer distinct workers started within the (scaled) limit.
    """
    import ray

    barrier.mkdir(parents=True, exist_ok=True)
    task = ray.remote(num_cpus=0, max_retries=0)(_warm_task())
    pids = ray.get([task.remote(count, str(barrier), slack(120)) for _ in range(count)], timeout=slack(180))
    assert len(set(pids)) == count, f"expected {count} distinct warm workers, found pids {pids}"
    return set(pids)


def quiet_sweep(spec, executor, store, *, tracking_uri=None, resume=None):
    """``run_sweep`` with no console output and, by default, no MLflow."""
    from rich.console import Console

    from routerlab.sweep import run_sweep

    return run_sweep(
        spec,
        executor=executor,
        store_path=str(store),
        tracking_uri=tracking_uri,
        console=Console(quiet=True),
        resume=resume,
    )
