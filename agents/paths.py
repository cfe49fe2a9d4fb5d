"""Where routerlab keeps files between runs."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root() -> Path:
    """``$ROUTERLAB_CACHE``, else ``$XDG_CACHE_HOME/routerlab``, else ``~/.cache/routerlab``."""
    root = os.environ.get("ROUTERLAB_CACHE")
    if root:
        return Path(root)
    return Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "routerlab"
