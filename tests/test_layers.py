"""The package layers import one way: agents <- routers <- benchmarks <- eval <- application.

Reads every module's imports (including those inside functions) with ``ast``, so a lazy import
that runs back up the stack fails here as surely as a top-level one. Within a layer, no two
modules import each other, directly or around a loop: a function-local import does not hide a
cycle from :func:`import_graph`. Every product module with public names lists them in ``__all__``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

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
    """Folders named in docs/architecture.md's map: ``agents/`` at the margin, ``  lm/`` under it,
    ``    ambiguity/`` under the folder above it indented less (two spaces a level)."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    block = doc[doc.index("```\npyproject.toml") :].split("```")[1]
    folders: set[str] = set()
    parents: list[str] = []  # the enclosing folders, one per level of indentation
    for line in block.splitlines():
        name = line.split()[0] if line.strip() else ""
        if not name.endswith("/"):
            continue
        level = (len(line) - len(line.lstrip(" "))) // 2
        parents = [*parents[:level], name.rstrip("/")]
        folders.add("/".join(parents))
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


# -- cycles between modules, inside a package too ---------------------------------------------


class Edge(NamedTuple):
    """One import: ``source`` imports ``target`` at ``path:line``."""

    source: str
    target: str
    path: Path
    line: int


def _module_names(packages: Iterable[tuple[str, Path]]) -> dict[str, Path]:
    """``dotted name -> file`` of every module under each ``(package name, folder)``."""
    names: dict[str, Path] = {}
    for prefix, folder in packages:
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            names[".".join([prefix, *parts])] = path
    return names


def _known(name: str, modules: Mapping[str, Path]) -> str | None:
    """The module ``name`` loads: itself, else its longest prefix that is a module (``pkg.sub.attr``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(packages: Iterable[tuple[str, Path]]) -> dict[str, list[Edge]]:
    """Every module's imports of the other modules, top-level, in functions and under TYPE_CHECKING.

    ``from a.b import c`` is an import of ``a.b.c`` when ``c`` is a module, else of ``a.b``;
    a relative import counts from the importing module's package.
    """
    modules = _module_names(packages)
    graph: dict[str, list[Edge]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: list[Edge] = []
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names
                ]
            for target in targets:
                known = _known(target, modules)
                if known is not None and known != name:
                    edges.append(Edge(name, known, path, node.lineno))
        graph[name] = edges
    return graph


def _components(graph: Mapping[str, Sequence[Edge]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            edge = next(edges, None)
            if edge is not None:
                if edge.target not in index:
                    index[edge.target] = low[edge.target] = len(index)
                    stack.append(edge.target)
                    on_stack.add(edge.target)
                    work.append((edge.target, iter(graph[edge.target])))
                elif edge.target in on_stack:
                    low[node] = min(low[node], index[edge.target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _loop(graph: Mapping[str, Sequence[Edge]], component: Sequence[str]) -> list[Edge]:
    """The shortest chain of imports from the component's first module back to itself."""
    inside = set(component)
    start = component[0]
    came: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for edge in graph[node]:
                if edge.target not in inside or edge.target in came:
                    continue
                came[edge.target] = edge
                if edge.target == start:
                    chain = [edge]
                    while chain[0].source != start:
                        chain.insert(0, came[chain[0].source])
                    return chain
                following.append(edge.target)
        frontier = following
    raise AssertionError(f"{component} is not strongly connected")  # Tarjan says it is


def import_cycles(graph: Mapping[str, Sequence[Edge]], root: Path) -> list[str]:
    """One line per tangle: a chain of modules back to the first, each import with its ``file:line``.

    The modules of the tangle (strongly connected component) off that chain are named after it.
    """
    lines = []
    for component in _components(graph):
        chain = _loop(graph, component)
        steps = " -> ".join(f"{e.source} ({e.path.relative_to(root)}:{e.line})" for e in chain)
        rest = sorted(set(component) - {e.source for e in chain})
        tangled = f" (tangled with {', '.join(rest)})" if rest else ""
        lines.append(f"{steps} -> {chain[0].source}{tangled}")
    return lines


def test_no_module_imports_itself_around_a_loop() -> None:
    """No import cycle anywhere in the product, inside a package or across packages."""
    cycles = import_cycles(import_graph((prefix, ROOT / folder) for prefix, folder in LAYERS), ROOT)
    assert not cycles, (
        "import cycles (move the shared piece to the module that owns it; a function-local import "
        "does not break a cycle):\n" + "\n".join(cycles)
    )


def test_a_cycle_inside_a_package_is_reported_with_its_imports(tmp_path: Path) -> None:
    """A loop hidden by a function-local import, within one package, fails with the chain that ties it."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("import os\n\nfrom pkg.c import C\n")
    (package / "c.py").write_text("def f():\n    from pkg import a\n\n    return a\n\nC = 1\n")
    (package / "d.py").write_text("from pkg.a import b\n")  # imports into the loop, not part of it
    graph = import_graph([("pkg", package)])
    assert import_cycles(graph, tmp_path) == [
        "pkg.a (pkg/a.py:1) -> pkg.sub.b (pkg/sub/b.py:3) -> pkg.c (pkg/c.py:2) -> pkg.a"
    ]
    # the same tree without the function-local import has none
    (package / "c.py").write_text("C = 1\n")
    assert import_cycles(import_graph([("pkg", package)]), tmp_path) == []


def test_relative_and_type_checking_imports_are_edges(tmp_path: Path) -> None:
    """A relative import and one under ``TYPE_CHECKING`` tie modules as surely as a plain one."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pkg.b import B\n")
    (package / "b.py").write_text("from . import a\n")
    graph = import_graph([("pkg", package)])
    assert graph["pkg.a"] == [Edge("pkg.a", "pkg.b", package / "a.py", 4)]
    assert graph["pkg.b"] == [Edge("pkg.b", "pkg.a", package / "b.py", 1)]
    assert import_cycles(graph, tmp_path) == ["pkg.a (pkg/a.py:4) -> pkg.b (pkg/b.py:1) -> pkg.a"]


# -- __all__ -------------------------------------------------------------------------------------


def _public_names(tree: ast.Module, is_package: bool) -> list[str]:
    """Top-level definitions not marked private; in a package ``__init__``, routerlab names it imports."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
        elif is_package and isinstance(node, ast.ImportFrom) and (node.module or "").startswith("routerlab"):
            names += [alias.asname or alias.name for alias in node.names]
    return [n for n in names if not n.startswith("_")]


def _declares_all(tree: ast.Module) -> bool:
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return True
    return False


def test_every_module_with_public_names_declares_all() -> None:
    """``__all__`` says what a module offers, so a private helper is never imported by accident."""
    missing = []
    for _, folder in LAYERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "__main__.py":
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            public = _public_names(tree, path.name == "__init__.py")
            if public and not _declares_all(tree):
                missing.append(f"{path.relative_to(ROOT)} ({', '.join(public[:3])}...)")
    assert not missing, f"add __all__ (its public names) to: {missing}"


def test_no_module_imports_a_private_name_of_another() -> None:
    """``from routerlab.x import _helper`` reaches past a module's ``__all__``: make it public or move it."""
    reached = []
    for _, folder in LAYERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("routerlab"):
                    private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                    if private:
                        reached.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.module} {private}")
    assert not reached, f"imports of private names: {reached}"


# -- order inside a layer: its sub-packages and top-level modules ----------------------------


#: packages whose modules are units of their own: ``routerlab.app`` is one door per command
#: (``app/run``, ``app/ask``, ``app/sweep``...), and ``sweep/`` and ``serve/`` sit between its
#: modules: above the run and ask they call, below the ``sweep`` and ``serve`` commands that start them
SPLIT: Mapping[str, tuple[str, ...]] = {"routerlab": ("app",)}


def _unit(module: str, prefix: str, folder: Path) -> str:
    """What ``module`` belongs to inside its layer: its sub-package (``tools/``), else itself (``store``).

    A module of a package in :data:`SPLIT` is a unit of its own (``app/run``).
    """
    rest = module[len(prefix) + 1 :].split(".") if module != prefix else ["__init__"]
    if rest[0] in SPLIT.get(prefix, ()):
        return f"{rest[0]}/{rest[1] if len(rest) > 1 else '__init__'}"
    return f"{rest[0]}/" if (folder / rest[0]).is_dir() else rest[0]


def unit_graph(graph: Mapping[str, Sequence[Edge]], prefix: str, folder: Path) -> dict[str, list[Edge]]:
    """The imports between the units (sub-packages, top-level modules, :data:`SPLIT`'s modules) of the layer ``prefix``.

    Every import counts (top-level, in a function, under ``TYPE_CHECKING``); imports of other
    layers, and of a unit by itself, are left out.
    """
    inner = [p for p, _ in LAYERS if p != prefix and p.startswith(prefix + ".")]

    def mine(name: str) -> bool:
        return (name == prefix or name.startswith(prefix + ".")) and not any(
            name == p or name.startswith(p + ".") for p in inner
        )

    units: dict[str, list[Edge]] = {}
    for source, edges in graph.items():
        if not mine(source):
            continue
        a = _unit(source, prefix, folder)
        units.setdefault(a, [])
        for e in edges:
            if mine(e.target) and (b := _unit(e.target, prefix, folder)) != a:
                units[a].append(Edge(a, b, e.path, e.line))
                units.setdefault(b, [])
    return units


#: the layers whose units are ordered: every one, the application's included
ORDERED_LAYERS = LAYERS


@pytest.mark.parametrize("prefix,folder", ORDERED_LAYERS, ids=[f for _, f in ORDERED_LAYERS])
def test_units_of_a_layer_import_one_way(prefix: str, folder: str) -> None:
    """Inside a layer, sub-packages and top-level modules have an order: none imports one that imports it.

    ``routers/support/`` sits below the routers, ``agents/tools/`` below ``agents/nodes/``:
    a function-local import back up (``support/neighbours`` into ``semantic``) is a loop of
    folders even where no two modules import each other.
    """
    graph = import_graph((p, ROOT / f) for p, f in LAYERS)
    loops = import_cycles(unit_graph(graph, prefix, ROOT / folder), ROOT)
    assert not loops, (
        f"the units of {folder}/ import each other around a loop (move the shared piece down to the "
        "unit both can import):\n" + "\n".join(loops)
    )


def test_a_back_edge_between_units_is_reported(tmp_path: Path) -> None:
    """A function-local import from a sub-package back up to a module that imports it fails the order."""
    package = tmp_path / "pkg"
    (package / "support").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "support" / "__init__.py").write_text("")
    (package / "support" / "intent.py").write_text("X = 1\n")
    (package / "support" / "outline.py").write_text("Y = 2\n")
    (package / "rules.py").write_text("from pkg.support.intent import X\n")
    assert import_cycles(unit_graph(import_graph([("pkg", package)]), "pkg", package), tmp_path) == []
    (package / "support" / "outline.py").write_text("def f():\n    from pkg.rules import X\n\n    return X\n")
    graph = import_graph([("pkg", package)])
    # no two modules import each other (outline -> rules -> intent): the loop is one of units only
    assert import_cycles(graph, tmp_path) == []
    assert import_cycles(unit_graph(graph, "pkg", package), tmp_path) == [
        "rules (pkg/rules.py:1) -> support/ (pkg/support/outline.py:2) -> rules"
    ]


@pytest.mark.parametrize(
    "source,target,back",
    [
        # a support module importing a router
        ("routers/support/intent.py", "routerlab.routers.rules", "support/ (routers/support/intent.py:1) -> rules"),
        # the run machinery calling the application back
        ("routerlab/_runs/session.py", "routerlab.app.run", "_runs/ (routerlab/_runs/session.py:1) -> app/run"),
        # a sweep's cells run sessions through app/run.py: it may not start a sweep
        ("routerlab/app/run.py", "routerlab.sweep.driver", "app/run (routerlab/app/run.py:1) -> sweep/"),
        # the server checks requests with app/ask.py's checks: ask may not reach into the server
        ("routerlab/app/ask.py", "routerlab.serve.app", "app/ask (routerlab/app/ask.py:1) -> serve/"),
    ],
    ids=["routers-support", "routerlab-runs", "routerlab-sweep", "routerlab-serve"],
)
def test_the_real_tree_fails_on_an_injected_back_edge(source: str, target: str, back: str) -> None:
    """The order holds today, and one import against it breaks it: inside ``routers/`` and ``routerlab/``."""
    folder = source.split("/")[0]
    prefix = dict((f, p) for p, f in LAYERS)[folder]
    graph = import_graph((p, ROOT / f) for p, f in LAYERS)
    assert import_cycles(unit_graph(graph, prefix, ROOT / folder), ROOT) == []
    module = ".".join([prefix, *Path(source).with_suffix("").parts[1:]])
    injected = {**graph, module: [*graph[module], Edge(module, target, ROOT / source, 1)]}
    (loop,) = import_cycles(unit_graph(injected, prefix, ROOT / folder), ROOT)
    assert back in loop, loop


# -- function-local imports of routerlab's own modules ---------------------------------------

#: function-local imports of routerlab modules the product may hold
MAX_LOCAL_IMPORTS = 40


class LocalImport(NamedTuple):
    """A function-local import of a routerlab module at ``path:line``, and why it is there."""

    path: Path
    line: int
    module: str
    reason: str


def local_imports(path: Path) -> list[LocalImport]:
    """The imports of ``routerlab.*`` inside functions of ``path``, each with its reason.

    The reason is the comment on the import's line, or the comment line above the run of
    imports it belongs to (``# imported here: ...``); "" when there is none.
    """
    lines = path.read_text().splitlines()
    found: dict[int, LocalImport] = {}
    for fn in ast.walk(ast.parse("\n".join(lines), filename=str(path))):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                modules = [node.module or ""]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            module = next((m for m in modules if m == "routerlab" or m.startswith("routerlab.")), None)
            if module is None or node.lineno in found:
                continue
            reason = lines[node.lineno - 1].partition("#")[2].strip()
            above = node.lineno - 2
            while not reason and above >= 0 and lines[above].strip().startswith(("from ", "import ", ")")):
                above -= 1  # the other imports of the same run
            if not reason and above >= 0 and lines[above].strip().startswith("#"):
                reason = lines[above].strip().lstrip("#").strip()
            found[node.lineno] = LocalImport(path, node.lineno, module, reason)
    return sorted(found.values())


def _checked_local_imports() -> list[LocalImport]:
    out = []
    for _, folder in LAYERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            out += local_imports(path)
    return out


def test_function_local_imports_of_routerlab_are_few_and_say_why() -> None:
    """An import inside a function hides an edge of the import graph: it is the exception, with its reason.

    A reason is a cost the import saves (MLflow, matplotlib or DSPy loaded only when used) or a
    loop it avoids (a package's ``__init__`` that imports the module back).
    """
    found = _checked_local_imports()
    silent = [f"{i.path.relative_to(ROOT)}:{i.line} {i.module}" for i in found if not i.reason]
    assert not silent, (
        "say why each function-local import is not at the top (a comment on it or above it):\n" + "\n".join(silent)
    )
    assert len(found) <= MAX_LOCAL_IMPORTS, (
        f"{len(found)} function-local imports of routerlab modules, at most {MAX_LOCAL_IMPORTS}: move them to the top"
    )


def test_a_local_import_without_a_reason_is_found(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import os\n\n\ndef f():\n"
        "    # imported here: MLflow costs seconds\n"
        "    from routerlab.eval.tracking import A\n"
        "    from routerlab.eval.tracking.layout import B\n\n"
        "    import json\n"
        "    from routerlab.x import y\n"
        "    return A, B, y, os, json\n"
    )
    found = local_imports(module)
    assert [(i.line, i.module, bool(i.reason)) for i in found] == [
        (6, "routerlab.eval.tracking", True),
        (7, "routerlab.eval.tracking.layout", True),
        (10, "routerlab.x", False),
    ]
