"""The package layers import one way: agents <- routers <- benchmarks <- eval <- application.

Reads every module's imports (including those inside functions) with ``ast``, so a lazy import
that runs back up the stack fails here as surely as a top-level one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: layer order, lowest first; a module may import its own layer and the layers before it
LAYERS: tuple[tuple[str, str], ...] = (
    ("routerlab.agents", "agents"),
    ("routerlab.routers", "routers"),
    ("routerlab.benchmarks", "benchmarks"),
    ("routerlab.eval", "eval"),
    ("routerlab", "routerlab"),
)
#: the only names of the old flat layout; nothing may import them any more
OLD_TOP_LEVEL = {"agents", "routers", "benchmarks", "eval"}


def _layer(module: str) -> int | None:
    for i, (prefix, _) in enumerate(LAYERS):
        if module == prefix or module.startswith(prefix + "."):
            return i
    return None


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            # a relative import hides which layer it reaches (``from ..eval import store`` from
            # agents/): report it by its dots so the test below fails on it
            found.append((node.lineno, "." * node.level + (node.module or "")))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            # ``from routerlab import routers`` imports the routers layer
            if node.module == "routerlab":
                found += [(node.lineno, f"routerlab.{alias.name}") for alias in node.names]
    return found


def _modules() -> list[tuple[int, Path]]:
    out = []
    for layer, (_, folder) in enumerate(LAYERS):
        out += [(layer, p) for p in sorted((ROOT / folder).rglob("*.py"))]
    return out


@pytest.mark.parametrize(
    "layer,path", _modules(), ids=lambda v: str(v.relative_to(ROOT)) if isinstance(v, Path) else ""
)
def test_imports_run_one_way(layer: int, path: Path) -> None:
    for line, module in _imports(path):
        assert not module.startswith("."), (
            f"{path.relative_to(ROOT)}:{line} imports {module}: relative imports are banned, "
            "write the absolute routerlab.* path"
        )
        top = module.split(".")[0]
        assert top not in OLD_TOP_LEVEL, f"{path.relative_to(ROOT)}:{line} imports {module}: use routerlab.{module}"
        target = _layer(module)
        if target is None:
            continue
        assert target <= layer, (
            f"{path.relative_to(ROOT)}:{line} imports {module}: layer {LAYERS[layer][0]} may import only "
            f"{', '.join(p for p, _ in LAYERS[: layer + 1])}"
        )


def test_relative_imports_are_reported(tmp_path: Path) -> None:
    """The check above sees a relative import (it skipped them once, so ``from ..eval`` passed)."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from ..eval import store\n    from . import x\n")
    assert _imports(module) == [(2, "..eval"), (3, ".")]


def test_every_layer_is_an_installed_package() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = config["package-dir"]
    for prefix, folder in LAYERS:
        assert mapping[prefix] == folder
    packages = set(config["packages"])
    for _, folder in LAYERS:
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            prefix = next(p for p, f in LAYERS if f == folder)
            name = ".".join([prefix, *rel.parts])
            assert name in packages, f"{init.parent} is a package but pyproject.toml does not install {name}"


def _map_folders() -> set[str]:
    """Folders named in docs/architecture.md's map: ``agents/`` at the margin, ``  lm/`` under it."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    block = doc[doc.index("```\npyproject.toml") :].split("```")[1]
    folders: set[str] = set()
    parent = ""
    for line in block.splitlines():
        name = line.split()[0] if line.strip() else ""
        if not name.endswith("/"):
            continue
        if not line.startswith(" "):
            parent = name.rstrip("/")
            folders.add(parent)
        else:
            folders.add(f"{parent}/{name.rstrip('/')}")
    return folders


def test_architecture_map_names_every_package() -> None:
    """docs/architecture.md's map names every package of every layer (a new module needs no edit)."""
    named = _map_folders()
    missing = []
    for _, folder in LAYERS:
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT).as_posix()
            if rel not in named:
                missing.append(rel + "/")
    assert not missing, f"docs/architecture.md's map does not name the packages {missing}"


def test_architecture_map_names_no_missing_folder() -> None:
    """Every folder the map names exists, so a moved or removed package cannot stay on the map."""
    stale = sorted(f + "/" for f in _map_folders() if not (ROOT / f).is_dir())
    assert not stale, f"docs/architecture.md's map names folders that do not exist: {stale}"


def test_long_modules_say_why() -> None:
    """A module over 700 lines either splits or says at its top why it is long ("Long because ...")."""
    unexplained = []
    for _, folder in LAYERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text()
            if text.count("\n") > 700 and "Long because" not in (ast.get_docstring(ast.parse(text)) or ""):
                unexplained.append(f"{path.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    assert not unexplained, f"split these or give a one-line 'Long because ...' at their top: {unexplained}"
