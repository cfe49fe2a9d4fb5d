"""Reading the seeds' fenced Python examples and running them against routerlab.

The seed documents (``<checkout>/../shared/seeds``) are not ours to copy: the examples are read
from them at test time. Each example has a :class:`Status` in the test module's table, keyed by
its position in the seed and pinned by a fingerprint of its text, so an edited seed fails with
a message to re-check that row instead of silently testing something else.

Running an example changes only its import lines (:func:`map_imports`, with the table
:data:`IMPORTS`): the seeds' packages become routerlab's modules, and their LM classes the
scripted stand-ins of :mod:`tests.seeds.lms`. A seed's examples build on each other (the
swarm seed defines ``llm`` once and uses it throughout), so an example runs in one namespace
after every earlier runnable example of its seed, as a reader following the page would.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "IMPORTS",
    "Example",
    "Status",
    "examples",
    "fingerprint",
    "map_imports",
    "names_used",
    "resolve",
    "run_session",
    "seeds_dir",
]

#: seed module -> (routerlab module, {seed name: routerlab name}) for import lines
IMPORTS: dict[str, tuple[str, dict[str, str]]] = {
    "course_graph.agent": ("routerlab.agents.swarm", {"Tool": "ToolSpec"}),
    "course_graph.llm": ("tests.seeds.lms", {}),
    "langgraph.prebuilt": ("routerlab.agents.prebuilt", {}),
    "langchain_core.tools": ("routerlab.agents.prebuilt", {}),
    "langgraph.store.base": ("routerlab.agents.prebuilt", {}),
}

_FENCE = re.compile(r"^```[ \t]*python[ \t]*\n(.*?)^```", re.M | re.S)
_FROM = re.compile(r"^(\s*)from\s+([\w.]+)\s+import\s+(.+?)\s*$")
_IMPORT = re.compile(r"^(\s*)import\s+([\w.]+)(\s+as\s+\w+)?\s*$")

Kind = Literal["run", "substituted", "names"]


@dataclass(frozen=True)
class Example:
    """One fenced Python example of a seed file.

    Attributes:
        seed: The seed's number (``"003"``).
        index: Its position among the seed's Python examples (0-based).
        code: Its text, as the seed has it.
    """

    seed: str
    index: int
    code: str


@dataclass(frozen=True)
class Status:
    """What the harness does with one example.

    Attributes:
        fp: :func:`fingerprint` of the example's text when its status was decided.
        kind: ``run`` (unchanged but for imports and LM), ``substituted`` (run with the
            documented change ``why``), ``names`` (a fragment: the names it uses are found in it
            and resolved against routerlab, and its check drives their behaviour).
        why: The substitution, in one line (docs/seeds.md repeats it).
        replace: Text replacements of a ``substituted`` example (``(seed text, run text)``).
        prelude: Code run before a ``substituted`` example, defining names the seed leaves
            undefined.
        names: For ``names``: ``{seed name: "module:attribute"}`` of routerlab's counterpart.
        check: The row's assertions, called with the namespace after the example ran (a
            fragment's: with its context, the DuckDB file and its text); a fragment's check
            says what it checks in its docstring's first line (docs/seeds.md repeats it).
    """

    fp: str
    kind: Kind
    why: str = ""
    replace: tuple[tuple[str, str], ...] = ()
    prelude: str = ""
    names: Mapping[str, str] = field(default_factory=dict)
    check: Callable[[dict[str, Any]], None] | None = None


def seeds_dir() -> Path | None:
    """The seed folder: ``$ROUTERLAB_SEEDS_DIR``, else ``shared/seeds`` beside the checkout.

    "Beside" is looked for from the checkout upwards, so a worktree (``<root>/wt/<name>``)
    finds the folder of ``<root>``; None when there is none.
    """
    env = os.environ.get("ROUTERLAB_SEEDS_DIR")
    if env:
        return Path(env) if Path(env).is_dir() else None
    repo = Path(__file__).resolve().parents[2]
    for parent in repo.parents:
        candidate = parent / "shared" / "seeds"
        if candidate.is_dir():
            return candidate
    return None


def examples(seed: str) -> list[Example]:
    """The Python examples of seed ``seed`` (``"003"``), in order.

    Raises:
        FileNotFoundError: When the seed folder or the seed's file is missing.
    """
    folder = seeds_dir()
    if folder is None:
        raise FileNotFoundError("no shared/seeds folder beside the checkout")
    files = sorted(folder.glob(f"{seed}_*.txt"))
    if not files:
        raise FileNotFoundError(f"no seed {seed}_*.txt in {folder}")
    text = files[0].read_text(encoding="utf-8")
    return [Example(seed, i, m.group(1)) for i, m in enumerate(_FENCE.finditer(text))]


def fingerprint(code: str) -> str:
    """A short hash of an example's text (whitespace at line ends ignored)."""
    norm = "\n".join(line.rstrip() for line in code.strip().splitlines())
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:10]


def map_imports(code: str) -> str:
    """``code`` with its import lines mapped through :data:`IMPORTS`; every other line unchanged."""
    out: list[str] = []
    for line in code.splitlines():
        m = _FROM.match(line)
        if m and m.group(2) in IMPORTS:
            target, renames = IMPORTS[m.group(2)]
            names = [n.strip() for n in m.group(3).strip("()").split(",") if n.strip()]
            parts = []
            for n in names:
                seed_name, _, alias = n.partition(" as ")
                seed_name = seed_name.strip()
                ours = renames.get(seed_name, seed_name)
                local = alias.strip() or seed_name
                parts.append(ours if ours == local else f"{ours} as {local}")
            line = f"{m.group(1)}from {target} import {', '.join(parts)}"
        out.append(line)
    return "\n".join(out) + "\n"


def names_used(code: str) -> set[str]:
    """Every identifier a fragment uses or defines (names, attributes, arguments, keywords).

    A fragment that is not valid Python (seed pseudo-code: ``{"a": 1, ...}``, a signature cut
    short) is read as words instead.
    """
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set(re.findall(r"[A-Za-z_]\w*", code))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg):
            found.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            found.add(node.value)
    return found


def resolve(target: str) -> Any:
    """The object ``"module:attr.attr"`` names.

    Raises:
        ImportError, AttributeError: When it names nothing.
    """
    module, _, attrs = target.partition(":")
    obj: Any = importlib.import_module(module)
    for attr in filter(None, attrs.split(".")):
        obj = getattr(obj, attr)
    return obj


def _runnable(status: Status) -> bool:
    return status.kind in ("run", "substituted")


def run_code(example: Example, status: Status, namespace: dict[str, Any]) -> None:
    """Run one example in ``namespace``: its prelude, then its text with imports mapped."""
    code = example.code
    for old, new in status.replace:
        if old not in code:
            raise AssertionError(f"seed {example.seed} example {example.index}: substitution {old!r} no longer applies")
        code = code.replace(old, new)
    if status.prelude:
        exec(compile(status.prelude, f"<harness prelude {example.seed}#{example.index}>", "exec"), namespace)
    exec(compile(map_imports(code), f"<seed {example.seed} example {example.index}>", "exec"), namespace)


def run_session(
    seed_examples: list[Example], table: Mapping[int, Status], upto: int, *, setup: str = ""
) -> dict[str, Any]:
    """Run every runnable example of a seed up to ``upto`` (included) in one namespace.

    Args:
        seed_examples: The seed's examples (:func:`examples`).
        table: Their statuses by index.
        upto: The last example to run.
        setup: Import lines a seed implies but never shows (run first).

    Returns:
        The namespace after the last example.
    """
    namespace: dict[str, Any] = {"__name__": f"seed_{seed_examples[0].seed}"}
    if setup:
        exec(compile(map_imports(setup), "<harness setup>", "exec"), namespace)
    for example in seed_examples[: upto + 1]:
        status = table[example.index]
        if _runnable(status):
            run_code(example, status, namespace)
    return namespace
