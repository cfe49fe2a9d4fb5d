"""MLflow as a process: the UI on a store (``routerlab ui``) and a tracking server for a team.

``routerlab server mlflow`` starts ``mlflow server`` backed by a database (SQLite by default,
any SQLAlchemy URI such as ``postgresql://...``) with an artifact root it serves itself
(``--serve-artifacts``), so clients on other machines, Ray workers among them, log runs and
upload artifacts over HTTP only. It prints the URI to pass as ``--tracking-uri`` once the
server answers ``/health``.

Both start MLflow without its job runner (:func:`mlflow_env`), which routerlab does not use.
"""

from __future__ import annotations

import math
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

from routerlab.agents.errors import ConfigError, RunError

__all__ = [
    "JOB_EXECUTION_ENV",
    "READY_TIMEOUT_ENV",
    "default_artifacts_destination",
    "mlflow_command",
    "mlflow_env",
    "ready_timeout_s",
    "serve_mlflow",
    "tracking_url",
    "wait_ready",
]

#: start-up imports take tens of seconds on a loaded 2-core machine (see tests/benchmarks/test_ui.py)
_READY_TIMEOUT_S = 240.0

#: environment variable overriding how long a started server has to answer ``/health`` (seconds)
READY_TIMEOUT_ENV = "ROUTERLAB_MLFLOW_READY_TIMEOUT_S"

#: MLflow's switch of its server-side job runner
JOB_EXECUTION_ENV = "MLFLOW_SERVER_ENABLE_JOB_EXECUTION"


def mlflow_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of an MLflow server routerlab starts: ``environ``, job runner off unless set there.

    MLflow's job runner (a huey consumer and a job-runner process beside the server) runs GenAI
    jobs started from the UI (judges, trace roll-ups); routerlab logs and reads runs only. Left on,
    the two extra processes import MLflow while the server starts, which took the start-up from
    28 s to 41 s on a loaded 2-core machine. A value already set (``true`` to have the runner) wins.

    Args:
        environ: The environment to start from (default: this process's).
    """
    env = dict(os.environ if environ is None else environ)
    env.setdefault(JOB_EXECUTION_ENV, "false")
    return env


def mlflow_command(
    kind: Literal["ui", "server"],
    *,
    backend_store_uri: str,
    host: str = "127.0.0.1",
    port: int = 5000,
    artifacts_destination: str | None = None,
    workers: int | None = None,
    allowed_hosts: str | None = None,
) -> list[str]:
    """The command line of ``mlflow ui`` or ``mlflow server`` run by this interpreter.

    Args:
        kind: ``ui`` (a viewer of the store) or ``server`` (tracking server that serves artifacts).
        backend_store_uri: Where runs live (``sqlite:///...``, ``postgresql://...``).
        host: Bind address.
        port: TCP port.
        artifacts_destination: Root of the artifacts the server stores and serves, against which
            ``mlflow-artifacts:/`` locations resolve.
        workers: Server worker processes (MLflow's default, 4, when None).
        allowed_hosts: Host headers the server accepts besides localhost and private IPs.
    """
    cmd = [sys.executable, "-m", "mlflow", kind, "--backend-store-uri", backend_store_uri]
    cmd += ["--host", host, "--port", str(port)]
    if artifacts_destination is not None:
        # the root `mlflow-artifacts:/...` locations resolve against (both kinds serve artifacts)
        cmd += ["--artifacts-destination", artifacts_destination]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    if kind == "server":
        cmd.append("--serve-artifacts")
        if allowed_hosts:
            cmd += ["--allowed-hosts", allowed_hosts]
    return cmd


def default_artifacts_destination(backend_store_uri: str) -> str:
    """``mlartifacts`` beside a SQLite store (where ``MlflowSink`` puts them), else in the working directory."""
    prefix = "sqlite:///"
    if backend_store_uri.startswith(prefix):
        return str(Path(backend_store_uri[len(prefix) :]).resolve().parent / "mlartifacts")
    return str(Path("mlartifacts").resolve())


def tracking_url(host: str, port: int) -> str:
    """The URL clients use: this machine's name when bound to every interface."""
    if host in ("0.0.0.0", "::", ""):
        host = socket.getfqdn()
    return f"http://{host}:{port}"


def ready_timeout_s() -> float:
    """How long a started server has to answer ``/health``: ``$ROUTERLAB_MLFLOW_READY_TIMEOUT_S``, else 240 s.

    Raises:
        ConfigError: The variable is set to something other than a positive number of seconds.
    """
    raw = os.environ.get(READY_TIMEOUT_ENV, "")
    if not raw:
        return _READY_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:  # NaN fails too
        raise ConfigError(
            f"${READY_TIMEOUT_ENV} is not a number of seconds",
            expected="a positive number of seconds",
            found=repr(raw),
            fix=f"unset it for the default {_READY_TIMEOUT_S:g} s, or set e.g. {READY_TIMEOUT_ENV}=600",
            details={"option": READY_TIMEOUT_ENV},
        )
    return value


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout_s: float | None = None) -> None:
    """Wait until the server at ``url`` answers ``/health``.

    Args:
        url: The server's URL.
        proc: Its process (an exit ends the wait).
        timeout_s: How long to wait (default: :func:`ready_timeout_s`).

    Raises:
        RunError: The process exited, or did not answer within ``timeout_s``.
    """
    timeout_s = ready_timeout_s() if timeout_s is None else timeout_s
    deadline = time.monotonic() + timeout_s
    probe = url.replace("://0.0.0.0:", "://127.0.0.1:")
    while True:
        if proc.poll() is not None:
            raise RunError(
                "the MLflow server exited during start-up",
                expected="a server answering /health",
                found=f"exit code {proc.returncode}",
                fix="read its output above (a port in use? a bad --backend-store-uri?)",
            )
        try:
            with urllib.request.urlopen(f"{probe}/health", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RunError(
                "the MLflow server did not start in time",
                expected=f"/health answering within {timeout_s:g} s",
                found="no answer",
                fix="check the machine's load and the server's output",
            )
        time.sleep(0.5)


def _port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def serve_mlflow(
    *,
    backend_store_uri: str,
    host: str,
    port: int,
    artifacts_destination: str | None = None,
    workers: int | None = None,
    allowed_hosts: str | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> int:
    """Run an MLflow tracking server in the foreground until it exits or is interrupted.

    Args:
        backend_store_uri: The database of runs (a relative SQLite path is made absolute).
        host: Bind address.
        port: TCP port.
        artifacts_destination: Artifact root (default: ``mlartifacts`` beside a SQLite store).
        workers: Server worker processes.
        allowed_hosts: Extra Host headers to accept (see ``mlflow server --help``).
        on_ready: Called with the tracking URI once the server answers.

    Returns:
        The server's exit code (0 after Ctrl-C).

    Raises:
        ConfigError: The port is taken, or ``$ROUTERLAB_MLFLOW_READY_TIMEOUT_S`` is not a number of seconds.
        RunError: The server did not start (in ``$ROUTERLAB_MLFLOW_READY_TIMEOUT_S``, default 240 s).
    """
    # imported here: MLflow costs seconds at import, and a run without MLflow never loads it
    from routerlab.eval.tracking import resolve_tracking_uri

    ready_s = ready_timeout_s()  # a bad override fails before a server starts
    if not _port_free(host, port):
        raise ConfigError(
            f"port {port} on {host} is in use",
            expected="a free TCP port",
            found=f"{host}:{port} taken (another MLflow server or `routerlab ui`?)",
            fix="pass --port with another number, or use the server already running there",
            details={"option": "--port"},
        )
    backend = resolve_tracking_uri(backend_store_uri)
    artifacts = artifacts_destination or default_artifacts_destination(backend)
    cmd = mlflow_command(
        "server",
        backend_store_uri=backend,
        host=host,
        port=port,
        artifacts_destination=artifacts,
        workers=workers,
        allowed_hosts=allowed_hosts,
    )
    proc = subprocess.Popen(cmd, env=mlflow_env())
    # a plain SIGTERM to this process must not leave the server running without it
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        url = tracking_url(host, port)
        wait_ready(url, proc, ready_s)
        if on_ready is not None:
            on_ready(url)
        return proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
