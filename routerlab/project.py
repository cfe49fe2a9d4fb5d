"""Where the project's results are, from wherever a process starts (a notebook's kernel, a script).

``routerlab run`` writes ``.routerlab/results.duckdb`` and ``mlflow.db`` in the directory it runs
in: the project's root, as the README runs it. A Jupyter kernel started by
``jupyter lab notebooks/`` runs in ``notebooks/``, where those relative paths point at nothing,
and opening them there would create an empty store. :func:`locate` resolves a relative store or
SQLite tracking path against the working directory when it exists there, else against the
nearest directory above it that holds it, else against the checkout routerlab is installed
from; a file found nowhere is an error naming the places searched, and nothing is created.
"""

from __future__ import annotations

from pathlib import Path

from routerlab.agents.errors import ConfigError

__all__ = ["candidates", "locate", "locate_file"]

_SQLITE = "sqlite:///"


def candidates(start: Path | None = None) -> list[Path]:
    """Directories a relative path may be relative to, nearest first.

    The working directory (or ``start``) and each of its parents, then the root of the checkout
    this package is installed from (an editable install's source tree), when it is not among them.
    """
    here = (start or Path.cwd()).resolve()
    dirs = [here, *here.parents]
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / "pyproject.toml").is_file() and checkout not in dirs:
        dirs.append(checkout)
    return dirs


def locate_file(path: str | Path, what: str, start: Path | None = None) -> Path:
    """An existing file for ``path``: itself if absolute, else the nearest of :func:`candidates`.

    Raises:
        ConfigError: The file exists in none of them (nothing is created).
    """
    p = Path(path).expanduser()
    tried = [p] if p.is_absolute() else [d / p for d in candidates(start)]
    for t in tried:
        if t.is_file():
            return t
    shown = ", ".join(str(t) for t in tried[:4]) + (f" and {len(tried) - 4} more" if len(tried) > 4 else "")
    raise ConfigError(
        f"no {what} at {str(path)!r}",
        expected=f"the {what} `routerlab run` wrote (it writes into the directory it runs in)",
        found=f"no such file; looked at {shown}",
        fix="run `routerlab run` in the project first, or give the file's absolute path",
    )


def locate(store: str | Path, tracking_uri: str | None, start: Path | None = None) -> tuple[str, str | None]:
    """The results store and MLflow tracking URI a session was recorded in, as absolute references.

    Args:
        store: The DuckDB results store, as given (``.routerlab/results.duckdb``).
        tracking_uri: The MLflow store (``sqlite:///mlflow.db``); None: no MLflow. Non-SQLite URIs
            (a tracking server) are returned as they are.
        start: Where to start looking (default: the working directory).

    Raises:
        ConfigError: The store, or the tracking URI's SQLite file, exists nowhere it was looked for.
    """
    found_store = locate_file(store, "results store", start)
    if tracking_uri is None or not tracking_uri.startswith(_SQLITE) or ":memory:" in tracking_uri:
        return str(found_store), tracking_uri
    db = locate_file(tracking_uri[len(_SQLITE) :], "MLflow store (set TRACKING_URI = None to skip MLflow)", start)
    return str(found_store), _SQLITE + str(db)
