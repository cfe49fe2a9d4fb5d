"""Where routerlab keeps files between runs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

__all__ = ["cache_root", "cache_writes", "cache_writes_allowed"]

_WRITES: ContextVar[bool] = ContextVar("routerlab_cache_writes", default=True)


@contextmanager
def cache_writes(allowed: bool) -> Iterator[None]:
    """Allow or forbid cache files written by what runs inside (``routerlab serve`` forbids them).

    A server builds routers for its clients; what a request makes it compute must not leave
    files behind, so caches read what is there and keep anything new in memory.
    """
    token = _WRITES.set(allowed)
    try:
        yield
    finally:
        _WRITES.reset(token)


def cache_writes_allowed() -> bool:
    """Whether code running now may write cache files."""
    return _WRITES.get()


def cache_root() -> Path:
    """``$ROUTERLAB_CACHE``, else ``$XDG_CACHE_HOME/routerlab``, else ``~/.cache/routerlab``."""
    root = os.environ.get("ROUTERLAB_CACHE")
    if root:
        return Path(root)
    return Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "routerlab"
