"""A small scripted comparison session for the notebook and the tests (no model needed), run as every session is."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from routerlab._runs.runner import RunConfig
from routerlab.agents.lm import scripted_lm
from routerlab.app.run import execute, session_spec
from routerlab.eval.store import ResultsStore

__all__ = ["DEMO_ROUTERS", "make_demo_session"]

#: routers of the demo session: the rule router between the two baselines
DEMO_ROUTERS: tuple[str, ...] = ("rules", "oracle", "random")

_DEMO_MARKER = "demo.json"


def _demo_reply(request: Any) -> dict[str, Any]:
    """Scripted LM replies: a fixed query for SQL sub-agents, a chat call whenever tools are offered."""
    found = re.search(r"Your output fields are:\n1\. `(\w+)`", str(getattr(request, "system", "") or ""))
    name = found.group(1) if found else ""
    if getattr(request, "tools", None):
        return {"name": "chat", "args": {"message": "Hello! Ask me about the service areas."}}
    fields = {"sql": "SELECT count(*) FROM service_areas", "fixed_sql": "SELECT 1", "intent": "chat"}
    return {"fields": {name: fields.get(name, "ok")}}


def _reusable_demo(directory: Path, routers: Sequence[str]) -> tuple[str, str, str] | None:
    """The demo session recorded in ``directory`` if every one of its runs finished there."""
    marker = directory / _DEMO_MARKER
    if not marker.exists():
        return None
    saved = json.loads(marker.read_text())
    store_path, uri, session = saved["store"], saved["tracking_uri"], saved["session"]
    mlflow_db = Path(uri.removeprefix("sqlite:///"))
    if saved.get("routers") != list(routers) or not Path(store_path).exists() or not mlflow_db.exists():
        return None
    runs = ResultsStore(store_path).runs()
    done = set(runs.loc[runs["status"] == "FINISHED", "run_id"])
    if not {f"{session}.{r}" for r in routers} <= done:
        return None
    return store_path, uri, session


def make_demo_session(
    directory: str | Path,
    *,
    routers: Sequence[str] = DEMO_ROUTERS,
    limit: int = 6,
    reuse: bool = True,
) -> tuple[str, str, str]:
    """Run a small comparison with the scripted LM (no model) and return where it went.

    The session replays ``limit`` examples of the built-in dataset's dev split through each
    router, into ``<directory>/results.duckdb`` and ``sqlite:///<directory>/mlflow.db`` (without
    per-example MLflow traces, which the analyses do not read).

    Args:
        directory: Where the store and the MLflow database go (created if needed).
        routers: Router names (default ``rules`` and the ``oracle`` and ``random`` baselines).
        limit: Examples per router.
        reuse: Return the session already recorded in ``directory`` (same routers, every run
            finished) instead of running a new one.

    Returns:
        ``(store_path, tracking_uri, session_id)``.
    """
    directory = Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    if reuse and (found := _reusable_demo(directory, routers)) is not None:
        return found
    store_path = str(directory / "results.duckdb")
    tracking_uri = f"sqlite:///{directory / 'mlflow.db'}"
    spec = session_spec(
        [(r, {}) for r in routers],
        RunConfig(limit=limit, split="dev", lm="scripted:demo"),
        store=store_path,
        tracking_uri=tracking_uri,
        traces=False,
    )
    result = execute(spec, console=Console(quiet=True), lm=scripted_lm(_demo_reply, name="demo"))
    marker = {"session": result.session_id, "store": store_path, "tracking_uri": tracking_uri, "routers": list(routers)}
    (directory / _DEMO_MARKER).write_text(json.dumps(marker, indent=2))
    return store_path, tracking_uri, result.session_id
