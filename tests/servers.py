"""Servers the tests start as a user would: a free loopback port, and ``routerlab ui`` on a store.

The UI tests (``test_ui``, ``test_store_copy``, ``test_screenshots``) each need the command
running on a real store and answering ``/health``; they share this one start-up and shutdown.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: start-up imports take tens of seconds on a loaded 2-core machine
UI_START_S = 240


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class RunningUi:
    """A ``routerlab ui`` process that answers ``/health``.

    Attributes:
        base: Its base URL (``http://127.0.0.1:PORT``).
        port: Its port.
        proc: The process (the leader of its own process group).
        log: The file its stdout and stderr go to.
    """

    base: str
    port: int
    proc: subprocess.Popen
    log: Path


@contextmanager
def routerlab_ui(uri: str, work: Path) -> Iterator[RunningUi]:
    """Run ``routerlab ui --tracking-uri uri`` from ``work`` until it answers ``/health``; stop it after.

    The command runs in a fresh process (and process group) with a user's environment, from
    ``work`` so that nothing may depend on the test's working directory; its output goes to
    ``work/ui.out``. On exit the whole group is stopped, the MLflow server it started included.

    Raises:
        AssertionError: The command exits, or does not answer within :data:`UI_START_S` seconds.
    """
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}  # as a user's shell
    cli = [sys.executable, "-m", "routerlab.cli", "ui", "--tracking-uri", uri, "--port", str(port)]
    log_path = work / "ui.out"
    log = log_path.open("w")
    proc = subprocess.Popen(cli, env=env, cwd=work, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + UI_START_S
        while True:
            assert proc.poll() is None, f"routerlab ui exited: {log_path.read_text()[-3000:]}"
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "routerlab ui did not answer /health (start-up deadlock?)"
            time.sleep(0.25)  # a refused connection costs nothing: poll often, answer within a quarter second
        yield RunningUi(base, port, proc, log_path)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=60)
        log.close()
