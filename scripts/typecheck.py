"""Type-check the product packages with mypy, under the names they are installed as.

The design card's top-level folders are installed as ``routerlab.agents``, ``routerlab.routers``...
(``[tool.setuptools.package-dir]`` in pyproject.toml), and the code imports them under those
names. mypy knows no package-dir mapping and cannot follow the editable install's import hook, so
this script lays the package out as installed, a tree of symbolic links under
``build/mypy/``, checks ``-p routerlab`` there (configuration: ``[tool.mypy]``), and prints each
finding under its file's path in the repository.

Usage: ``.venv/bin/python scripts/typecheck.py [extra mypy options]``; exit code as mypy's.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "mypy"


def lay_out(root: Path = ROOT, tree: Path = TREE) -> Path:
    """Rebuild ``tree`` as the installed layout: one folder per mapped package, links to the sources.

    A package whose sub-packages live elsewhere (``routerlab``, with ``routerlab.agents`` in
    ``agents/``) is a real folder holding a link per entry of its own folder plus a link per
    mapped sub-package; every other mapped package is one link to its folder.

    Returns:
        The folder to give mypy as its search path.
    """
    mapping: dict[str, str] = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    if tree.exists():
        shutil.rmtree(tree)
    parents = {name.rsplit(".", 1)[0] for name in mapping if "." in name}
    for name in sorted(mapping, key=lambda n: n.count(".")):
        where = tree.joinpath(*name.split("."))
        source = root / mapping[name]
        if name in parents:
            where.mkdir(parents=True)
            for entry in source.iterdir():
                if entry.name != "__pycache__":
                    (where / entry.name).symlink_to(entry)
        else:
            where.parent.mkdir(parents=True, exist_ok=True)
            if where.is_symlink():  # the parent's own folder already holds it: the mapping wins
                where.unlink()
            where.symlink_to(source, target_is_directory=True)
    return tree


def _real_paths(text: str, tree: Path) -> str:
    """Findings under their files' paths in the repository, relative to it, not under the link tree."""

    def real(match: re.Match[str]) -> str:
        path = Path(match.group(1))
        resolved = (ROOT / path).resolve() if not path.is_absolute() else path.resolve()
        try:
            return str(resolved.relative_to(ROOT)) + ":"
        except ValueError:
            return match.group(0)

    prefix = re.escape(os.path.relpath(tree, ROOT))
    return re.sub(rf"^((?:{prefix}|{re.escape(str(tree))})/[^:\s]+):", real, text, flags=re.MULTILINE)


def main(argv: list[str]) -> int:
    """Lay the tree out, run mypy on ``-p routerlab`` and print its findings with real paths."""
    from mypy import api

    os.chdir(ROOT)
    tree = lay_out()
    os.environ["MYPYPATH"] = os.path.relpath(tree, ROOT)
    stdout, stderr, code = api.run(["--config-file", "pyproject.toml", "-p", "routerlab", *argv])
    sys.stdout.write(_real_paths(stdout, tree))
    sys.stderr.write(_real_paths(stderr, tree))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
