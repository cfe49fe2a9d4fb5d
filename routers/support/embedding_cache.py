"""Embeddings of texts, cached on disk by model and texts: what the semantic router and the neighbours pool share."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from routerlab.agents.paths import cache_root, cache_writes_allowed
from routerlab.agents.tools.index import Embedder

__all__ = ["embed_cached"]

_MODEL_DIGESTS: dict[str, str] = {}


def _model_digest(embedder: Embedder) -> str:
    """Identity of the embedding model: its file's SHA-256 when it has one, else its class."""
    model_path = getattr(embedder, "model_path", None)
    if model_path is not None and Path(model_path).is_file():
        key = str(model_path)
        if key not in _MODEL_DIGESTS:
            _MODEL_DIGESTS[key] = hashlib.sha256(Path(model_path).read_bytes()).hexdigest()
        return _MODEL_DIGESTS[key]
    return f"{type(embedder).__module__}.{type(embedder).__qualname__}"


def embed_cached(embedder: Embedder, texts: Sequence[str], cache_dir: Path | None = None) -> np.ndarray:
    """Vectors of ``texts``, read from the on-disk cache when this model embedded them before.

    The cache file is named by a digest of the model and of the texts in order, so a changed
    exemplar set or model never reads stale vectors. A cache file that cannot be read, or has the
    wrong shape, is recomputed and replaced.

    Args:
        embedder: The embedding model.
        texts: The texts, in order.
        cache_dir: Default ``cache_root()/semantic``.
    """
    folder = cache_dir or cache_root() / "semantic"
    digest = hashlib.sha256(_model_digest(embedder).encode())
    for text in texts:
        digest.update(hashlib.sha256(text.encode()).digest())
    path = folder / f"{digest.hexdigest()[:32]}.npy"
    if path.is_file():
        try:
            cached = np.load(path, allow_pickle=False)
            if cached.ndim == 2 and cached.shape[0] == len(texts):
                return cached
        except (OSError, ValueError):
            pass  # unreadable: recompute below and overwrite
    vectors = np.asarray(embedder.embed(list(texts)), dtype=np.float32)
    if not cache_writes_allowed():
        return vectors  # a server request writes no file (routerlab serve)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # write then rename: a concurrent reader sees the old file or the whole new one
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".npy.tmp")
        with os.fdopen(fd, "wb") as f:
            np.save(f, vectors, allow_pickle=False)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache only costs the next process the embedding again
    return vectors
