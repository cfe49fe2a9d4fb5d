"""Fixtures of the sweep tests: sweep files, a local Ray cluster, a worker that dies once."""

from __future__ import annotations

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


_RAY_START_TRIES = 3


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory) -> Iterator[Path]:
    """A 2-CPU Ray cluster on loopback for the module; yields the kill trigger directory."""
    ray = pytest.importorskip("ray")
    trigger = tmp_path_factory.mktemp("kill")
    # Ray waits a fixed 30 s for its raylet to register with the GCS; on a loaded 2-core machine
    # (load 3-6) start-up can take longer, and every Ray test errored on "The current node timed
    # out during startup". A start that timed out is shut down and tried again, up to 3 times.
    for attempt in range(1, _RAY_START_TRIES + 1):
        try:
            ray.init(
                num_cpus=2,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                log_to_driver=False,
                runtime_env={"worker_process_setup_hook": _worker_setup(str(trigger))},
            )
            break
        except Exception as exc:
            if "timed out during startup" not in str(exc) or attempt == _RAY_START_TRIES:
                raise
            ray.shutdown()
            time.sleep(5 * attempt)  # let the machine's load pass before the next start
    try:
        yield trigger
    finally:
        ray.shutdown()


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
