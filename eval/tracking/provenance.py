"""What a run was made from: the routerlab checkout's git commit and the installed version."""

from __future__ import annotations

import importlib.metadata
import subprocess
from pathlib import Path

__all__ = ["git_commit", "routerlab_version"]


def git_commit() -> str:
    """The routerlab checkout's ``HEAD`` commit, or ``unknown`` (no git, not a checkout)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parents[2],  # eval/tracking/ -> the checkout
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def routerlab_version() -> str:
    """The installed routerlab distribution's version, or ``unknown`` (not installed)."""
    try:
        return importlib.metadata.version("routerlab")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
