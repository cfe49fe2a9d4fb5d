"""A compiled DSPy program for ``generate_sql``: few-shot demos that carry no schema.

The embedded model has a 4,096-token context and ``generate_sql``'s prompt is already 931 tokens
at p50 (up to about 4,500 on spider-dev-a). A demo that carries its own database's schema (the
built-in one is about 1,400 tokens) would overflow it, so the program's demos are
question -> SQL pairs with the dialect shown and no schema: the "DAIL organisation" of Gao et al.
(2023, *Text-to-SQL Empowered by Large Language Models: A Benchmark Evaluation*), which keeps most
of the gain of full demos at a fraction of their tokens. :class:`SchemalessPredict` enforces it on
every call, whatever demos it holds, so neither a compile's teacher (whose labelled demos DSPy
copies whole from the train set) nor a hand-edited file can put a second schema in the prompt.
DSPy's ChatAdapter shows such a demo as "an example of the task, though some input or output
fields are not supplied".

The prompt keeps a per-database prefix: the instructions and the demos are the same for every
question, then the question's schema comes first in the last message, so every question on a
database shares everything up to its own question (llama.cpp reuses it from its KV cache).

Programs are saved as ``routers/programs/generate_sql_<name>.json`` with a ``.meta.json`` of
provenance next to them (``scripts/compile_generate_sql.py`` writes both); a ``ToolSettings``
``sql_program`` names one and the ``program`` framing (:mod:`routerlab.agents.tools.framing`)
runs it.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dspy

from routerlab.agents.errors import ConfigError
from routerlab.agents.tools.programs import GenerateSQL

__all__ = [
    "DEMO_FIELDS",
    "SQL_PROGRAM_DIR",
    "SQLProgram",
    "SchemalessPredict",
    "load_sql_program",
    "resolve_sql_program",
    "schemaless",
    "sql_program_digest",
    "sql_program_names",
    "sql_program_path",
    "sql_program_record",
]

#: where committed programs lie: ``routers/programs`` in the source tree and in an install alike
#: (the package maps ``routerlab.routers`` to ``routers/``); the agents layer may not import it
SQL_PROGRAM_DIR = Path(__file__).resolve().parents[2] / "routers" / "programs"

#: the fields a demo keeps (the hint only when it says something)
DEMO_FIELDS: tuple[str, ...] = ("dialect", "hint", "question", "sql")

_PREFIX = "generate_sql_"


def schemaless(demo: Mapping[str, Any] | dspy.Example) -> dict[str, Any]:
    """``demo`` as the program shows it: question, dialect, SQL (and a non-empty hint); no schema.

    Args:
        demo: A demo (a ``dspy.Example`` or a dict) with at least ``question`` and ``sql``.
    """
    items = demo.toDict() if isinstance(demo, dspy.Example) else dict(demo)
    return {k: items[k] for k in DEMO_FIELDS if items.get(k) not in (None, "")}


class SchemalessPredict(dspy.Predict):
    """``dspy.Predict`` whose demos are shown without their schema (:func:`schemaless`)."""

    def _forward_preprocess(self, **kwargs: Any) -> Any:
        """DSPy's preprocessing, then every demo cut down to its schema-less fields."""
        lm, config, signature, demos, inputs = super()._forward_preprocess(**kwargs)
        return lm, config, signature, [schemaless(d) for d in demos], inputs


class SQLProgram(dspy.Module):
    """The program a compile tunes and the ``program`` framing runs: one ``GenerateSQL`` predictor.

    The signature, the field order (schema first) and the completion budget are those of
    ``SQLPrograms.generate``, so the program differs from the ``fields`` framing only by what a
    compile adds (its demos).
    """

    def __init__(self) -> None:
        super().__init__()
        self.generate = SchemalessPredict(GenerateSQL, max_tokens=256)

    def forward(self, db_schema: str, dialect: str, question: str, hint: str = "") -> dspy.Prediction:
        """Predict the ``sql`` field."""
        return self.generate(db_schema=db_schema, dialect=dialect, hint=hint, question=question)

    def strip_demos(self) -> None:
        """Keep only the schema-less fields of every demo (what a saved program should hold)."""
        self.generate.demos = [dspy.Example(**schemaless(d)) for d in self.generate.demos]


def sql_program_path(name: str) -> Path:
    """Where the committed program ``name`` lies (``routers/programs/generate_sql_<name>.json``)."""
    return SQL_PROGRAM_DIR / f"{_PREFIX}{name}.json"


def sql_program_names() -> list[str]:
    """Names of the committed ``generate_sql`` programs."""
    files = SQL_PROGRAM_DIR.glob(f"{_PREFIX}*.json")
    return sorted(p.stem.removeprefix(_PREFIX) for p in files if not p.name.endswith(".meta.json"))


def resolve_sql_program(program: str) -> Path:
    """The file of ``program``: a committed program's name or a ``.json`` path.

    Raises:
        ConfigError: No name given, a name with no committed program (the known ones and the
            closest are named), or a ``.json`` path that does not exist.
    """
    fix_compile = "compile one: scripts/compile_generate_sql.py --out routers/programs/generate_sql_builtin.json"
    if not program:
        known = ", ".join(sql_program_names()) or "none yet"
        raise ConfigError(
            "the program framing needs a program",
            expected="pipeline.tools.sql_program: a committed program's name or a .json path",
            found="sql_program is empty",
            fix=f"set pipeline.tools.sql_program (known: {known}), or {fix_compile}",
        )
    if program.endswith(".json"):
        path = Path(program)
        if not path.is_file():
            raise ConfigError(
                f"no generate_sql program at {path}",
                expected="a program file saved by scripts/compile_generate_sql.py",
                found="missing file",
                fix=f"check the path, or {fix_compile}",
            )
        return path
    path = sql_program_path(program)
    if not path.is_file():
        names = sql_program_names()
        close = difflib.get_close_matches(program, names, n=1)
        raise ConfigError(
            f"no committed generate_sql program named {program!r}",
            expected="one of " + (", ".join(names) or "(none committed yet)") + ", or a .json path",
            found=repr(program) + (f" (did you mean {close[0]!r}?)" if close else ""),
            fix=f"set pipeline.tools.sql_program={close[0]}" if close else fix_compile,
        )
    return path


def sql_program_digest(path: Path) -> str:
    """First 12 hex digits of the program file's sha256 (a refit under the same name is a new digest)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def sql_program_record(program: str) -> dict[str, str]:
    """What a run records of the program it names: name, file and content digest (``{}``: none).

    The name alone rebuilds the run while the file is unchanged; the digest tells a refit apart.

    Raises:
        ConfigError: As :func:`resolve_sql_program` (for a non-empty ``program``).
    """
    if not program:
        return {}
    path = resolve_sql_program(program)
    return {"name": program, "file": path.name, "digest": sql_program_digest(path)}


@functools.lru_cache(maxsize=8)
def _load(path: str, digest: str) -> SQLProgram:
    """The program saved at ``path`` (cached per content: ``digest`` is part of the key)."""
    program = SQLProgram()
    program.load(path)
    return program


def load_sql_program(program: str) -> tuple[SQLProgram, Path]:
    """The saved program ``program`` (a name or a ``.json`` path) and its file.

    Loaded once per file content and shared: a call only reads it (DSPy's ``Predict`` keeps no
    state between calls), so the pipeline's threads may run it together.

    Raises:
        ConfigError: As :func:`resolve_sql_program`.
    """
    path = resolve_sql_program(program)
    return _load(str(path.resolve()), sql_program_digest(path)), path
