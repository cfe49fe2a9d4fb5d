"""The command that finishes an interrupted session or sweep, built in one place.

Printed by ``routerlab run`` and ``routerlab sweep`` after an interruption, a deadline, a failed
cell or a busy store, and by a session stopped by an error: complete as printed, so the store and
tracking options the first command was given are repeated (and the defaults left out).
"""

from __future__ import annotations

from routerlab.eval.defaults import DEFAULT_STORE_PATH, DEFAULT_TRACKING_URI

__all__ = ["resume_command", "store_option", "store_options"]


def store_option(store_path: str) -> str:
    """The ``--store`` option naming a non-default results store (with a leading space), else empty."""
    return "" if store_path == DEFAULT_STORE_PATH else f" --store {store_path}"


def store_options(store_path: str, tracking_uri: str | None) -> str:
    """The ``--store``, ``--no-mlflow`` and ``--tracking-uri`` options that name non-default stores.

    Args:
        store_path: The results store the command used.
        tracking_uri: The MLflow store it used; None: MLflow was off.

    Returns:
        The options (each with a leading space), empty for the defaults.
    """
    where = store_option(store_path)
    if tracking_uri is None:
        where += " --no-mlflow"
    elif tracking_uri != DEFAULT_TRACKING_URI:
        where += f" --tracking-uri {tracking_uri}"
    return where


def resume_command(
    resume_id: str, store_path: str, tracking_uri: str | None, *, command: str = "run", options: str = ""
) -> str:
    """The command that finishes a session (``command="run"``) or a sweep (``"sweep"``).

    Args:
        resume_id: The session or sweep id.
        store_path: The results store.
        tracking_uri: The MLflow store; None: MLflow was off.
        command: ``run`` or ``sweep``.
        options: Options that go before the store's (a sweep's ``--executor`` and ``--address``).

    Returns:
        ``routerlab <command> --resume <id><options><store options>``.
    """
    return f"routerlab {command} --resume {resume_id}{options}{store_options(store_path, tracking_uri)}"
