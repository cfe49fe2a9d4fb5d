"""Artifacts stored relative to the MLflow store, so a copied store folder keeps them.

MLflow records an experiment's artifact location as an absolute URI (a relative path is resolved
against the working directory when the experiment is created), so a store folder copied or moved
elsewhere points back at the folder it came from. Its one relative form is the proxy scheme
``mlflow-artifacts:/<path>``, which a tracking server resolves against its
``--artifacts-destination``. routerlab uses that form for the experiments it creates beside a
SQLite store, and resolves it itself where there is no server:

* in this process, with a ``sqlite:///DIR/mlflow.db`` tracking URI, ``mlflow-artifacts:/<path>``
  is ``DIR/mlartifacts/<path>`` (:func:`register_store_relative_artifacts` teaches MLflow's
  artifact registry that; any other tracking URI keeps MLflow's own proxy repository);
* ``routerlab ui`` starts MLflow's server with ``--artifacts-destination DIR/mlartifacts``, so the
  browser's artifact views read the same files.

Experiments created before this (absolute locations) keep working where they are.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

from mlflow.store.artifact.artifact_repo import ArtifactRepository

__all__ = [
    "ARTIFACTS_FOLDER",
    "PROXY_SCHEME",
    "artifacts_folder",
    "experiment_folder",
    "experiment_location",
    "register_store_relative_artifacts",
]

#: the folder beside a SQLite store that holds its artifacts
ARTIFACTS_FOLDER = "mlartifacts"
#: MLflow's relative artifact scheme (resolved against the store's artifacts folder)
PROXY_SCHEME = "mlflow-artifacts"
_SQLITE = "sqlite:///"


def artifacts_folder(tracking_uri: str) -> Path | None:
    """The artifacts folder of a SQLite store (``mlartifacts`` beside the database), else None."""
    if not tracking_uri.startswith(_SQLITE) or ":memory:" in tracking_uri:
        return None
    return Path(tracking_uri[len(_SQLITE) :]).resolve().parent / ARTIFACTS_FOLDER


def experiment_folder(name: str) -> str:
    """The folder name of an experiment's artifacts (``routerlab/builtin`` -> ``routerlab_builtin``)."""
    return re.sub(r"[^\w.-]+", "_", name)


def experiment_location(tracking_uri: str, name: str) -> str | None:
    """Where a new experiment ``name`` keeps its artifacts: relative to a SQLite store; None for a server.

    A tracking server decides by itself (its ``--default-artifact-root``, ``mlflow-artifacts:/``
    when it serves artifacts), so nothing is imposed on it.
    """
    if artifacts_folder(tracking_uri) is None:
        return None
    return f"{PROXY_SCHEME}:/{experiment_folder(name)}"


def _repository(
    artifact_uri: str, tracking_uri: str | None = None, registry_uri: str | None = None
) -> ArtifactRepository:
    """The repository of an ``mlflow-artifacts:`` URI: local files beside a SQLite store, else MLflow's proxy."""
    import mlflow
    from mlflow.store.artifact.local_artifact_repo import LocalArtifactRepository
    from mlflow.store.artifact.mlflow_artifacts_repo import MlflowArtifactsRepository

    parsed = urlparse(artifact_uri)
    folder = artifacts_folder(tracking_uri or mlflow.get_tracking_uri())
    if folder is not None and not parsed.netloc:
        return LocalArtifactRepository(str(folder / parsed.path.lstrip("/")), tracking_uri=tracking_uri)
    return MlflowArtifactsRepository(artifact_uri, tracking_uri=tracking_uri, registry_uri=registry_uri)


def register_store_relative_artifacts() -> None:
    """Resolve ``mlflow-artifacts:`` URIs against a SQLite store's folder in this process (idempotent).

    Without it MLflow refuses such a URI unless the tracking URI is an HTTP server; with it, a
    server tracking URI (``http://...``) still goes through MLflow's own proxy repository.
    """
    from mlflow.store.artifact.artifact_repository_registry import _artifact_repository_registry

    _artifact_repository_registry.register(PROXY_SCHEME, _repository)
