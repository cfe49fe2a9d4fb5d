"""What a session runs: routers parsed from options, a recorded session's routers and settings.

``routerlab run --resume SESSION`` starts from what the session recorded
(:func:`recorded_session`) and refuses options that would change what it computes
(:func:`check_resume`); :func:`parse_routers` reads ``--router`` and ``--router-arg``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from routerlab._runs.runner import RunConfig
from routerlab.agents.errors import ConfigError
from routerlab.eval.store import END_TO_END, ResultsStore, session_of

__all__ = [
    "RESUME_MAY_CHANGE",
    "check_resume",
    "parse_routers",
    "recorded_session",
    "session_runs",
    "unknown_session",
]


def session_runs(store: Any, session_id: str) -> list[str]:
    """The end-to-end run ids of a stored session (``<session>.<router>``), in the store's order.

    A session's routing part (first decisions, :data:`~routerlab.eval.store.ROUTING`) is complete
    once stored: resuming finishes the end-to-end runs only.
    """
    runs = store.runs()
    return [
        r
        for r, part in zip(runs["run_id"], runs["part"], strict=True)
        if session_of(r) == session_id and part == END_TO_END
    ]


def unknown_session(store: Any, session_id: str) -> ConfigError:
    """The error for a session id the store does not hold, naming its latest sessions."""
    sessions = sorted({session_of(r) for r in store.runs()["run_id"]})
    return ConfigError(
        f"no session {session_id!r} in {store.path}",
        expected="a session id printed by an earlier `routerlab run`",
        found=f"latest sessions: {sessions[-5:]}",
        fix="check the id, or the --store path",
        details={"option": "--resume"},
    )


def recorded_session(store_path: str, session_id: str) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    """The routers (with their recorded arguments) and run settings of a stored session.

    ``routerlab run --resume SESSION`` starts from these, so the printed resume command finishes
    the same examples with the same routers without repeating the original options.

    Raises:
        ConfigError: No such session in the store.
    """
    store = ResultsStore(store_path, read_only=True)
    run_ids = session_runs(store, session_id)
    if not run_ids:
        raise unknown_session(store, session_id)
    rows = [store.run(r) for r in run_ids]
    rows.sort(key=lambda row: (row["started_at"], row["run_id"]))
    routers = [(row["router"], dict(row["params"].get("router", {}).get("args", {}))) for row in rows]
    return routers, rows[0]["config"]


#: run settings a resumed session may change: they decide how fast it runs, not what it computes
RESUME_MAY_CHANGE = frozenset({"concurrency", "deadline_s", "lm_api_base"})


def _canonical(value: Any) -> Any:
    """``value`` as a JSON round trip gives it back (tuples become lists), for comparisons."""
    return json.loads(json.dumps(value, sort_keys=True, default=repr))


def _with_defaults(recorded: Any, defaults: Any) -> Any:
    """``recorded`` with every key it lacks taken from ``defaults``, at every depth.

    A session written before a setting existed (``pipeline.call_timeout_s``, say) has no value for
    it; it is read as that setting's default, as :func:`routerlab._runs.config.load_run_config` reads
    it, so the session stays resumable. A key both hold keeps its recorded value.
    """
    if not (isinstance(recorded, dict) and isinstance(defaults, dict)):
        return recorded
    filled = {k: _with_defaults(v, defaults[k]) if k in defaults else v for k, v in recorded.items()}
    return {**{k: v for k, v in defaults.items() if k not in recorded}, **filled}


def check_resume(
    session_id: str,
    recorded_routers: Sequence[tuple[str, Mapping[str, Any]]],
    recorded_config: Mapping[str, Any],
    routers: Sequence[tuple[str, Mapping[str, Any]]],
    config: RunConfig,
) -> None:
    """Refuse a resume whose options would change what the recorded session computes.

    Resuming fills in the examples a session is missing; a different router, limit, LM, dataset
    or scorer would mix two experiments under one id (``compare`` would then pair n = 6 with
    n = 2). Only the settings in :data:`RESUME_MAY_CHANGE` may differ; a setting the recorded
    session lacks (it predates the option) counts as its default.

    Raises:
        ConfigError: Naming each changed setting with its recorded and its new value.
    """
    changes: list[str] = []
    was = {n: _canonical(dict(a)) for n, a in recorded_routers}
    now = {n: _canonical(dict(a)) for n, a in routers}
    if sorted(was) != sorted(now):
        changes.append(f"routers {','.join(was)} -> {','.join(now)}")
    changes += [f"{n} arguments {was[n]} -> {now[n]}" for n in now if n in was and now[n] != was[n]]
    new = _canonical(config.to_dict())
    old = _with_defaults(_canonical(dict(recorded_config)), _canonical(RunConfig().to_dict()))
    for key in sorted(set(new) | set(old)):
        if key not in RESUME_MAY_CHANGE and new.get(key) != old.get(key):
            changes.append(f"{key} {old.get(key)!r} -> {new.get(key)!r}")
    if changes:
        raise ConfigError(
            f"--resume {session_id} with options that change the recorded session",
            expected="the session's recorded routers and settings (only --concurrency, --deadline-s and "
            "--lm-api-base may differ)",
            found="; ".join(changes),
            fix=f"drop those options to finish session {session_id}, or start a new session without --resume",
            details={"option": "--resume", "changes": changes},
        )


def parse_routers(
    text: str, router_args: Sequence[str] = (), base_args: Mapping[str, Mapping[str, Any]] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """Parse ``--router rules,llm`` and ``--router-arg hybrid.threshold=0.7`` options.

    Args:
        text: Comma-separated router names.
        router_args: ``ROUTER.PARAM=VALUE`` items (values parsed as JSON when they are).
        base_args: Arguments each router starts from (a resumed session's), under the given ones.

    Raises:
        ConfigError: No router, a router named twice, or a malformed ``--router-arg``.
    """
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ConfigError(
            "no router given",
            expected="comma-separated router names, e.g. --router rules,llm",
            found=repr(text),
            fix="see `routerlab routers` for the names",
            details={"option": "--router"},
        )
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(
            f"router(s) {repeated} given twice in --router",
            expected="each router once (one run per router)",
            found=text,
            fix="remove the repetition; use --attempts N to run each example several times",
            details={"option": "--router"},
        )
    args: dict[str, dict[str, Any]] = {n: dict((base_args or {}).get(n, {})) for n in names}
    for item in router_args:
        key, sep, value = item.partition("=")
        name, dot, param = key.partition(".")
        if not sep or not dot or name not in args:
            raise ConfigError(
                f"bad --router-arg {item!r}",
                expected="ROUTER.PARAM=VALUE for a router given in --router",
                found=item,
                fix="e.g. --router-arg hybrid.threshold=0.7",
                details={"option": "--router-arg"},
            )
        try:
            args[name][param] = json.loads(value)
        except json.JSONDecodeError:
            args[name][param] = value
    return [(n, args[n]) for n in names]
