"""``store_client``: an MLflow client on a store, its store-relative artifacts resolvable.

Every reader and writer of a store opens it here, so the patch of MLflow's artifact registry
(:func:`~routerlab.eval.tracking.artifacts.register_store_relative_artifacts`) happens where a
store is opened rather than as a side effect of importing the package.
"""

from __future__ import annotations

from mlflow import MlflowClient

from routerlab.eval.tracking.address import resolve_tracking_uri
from routerlab.eval.tracking.artifacts import register_store_relative_artifacts

__all__ = ["store_client"]


def store_client(tracking_uri: str | None = None) -> MlflowClient:
    """An :class:`mlflow.MlflowClient` on ``tracking_uri`` (resolved as :func:`resolve_tracking_uri`).

    Registers the store-relative artifact repository first (idempotent), so artifacts stored
    beside a copied SQLite store are found wherever the folder now lives.
    """
    register_store_relative_artifacts()
    return MlflowClient(tracking_uri=resolve_tracking_uri(tracking_uri))
