"""Schema linking: which tables of a database the SQL sub-agents are shown for a question.

Two strategies, chosen by ``ToolSettings.linking``:

* ``full``: every table. Nothing the question needs can be missing, and the schema text is the
  same for every question on a database, so the local model reuses its KV cache for that whole
  prefix (prefill of a 1,500-token schema costs seconds on a CPU; reusing it costs nothing).
* ``overlap``: the tables whose names, columns or example values share a content word with the
  question, closed over foreign keys, at most ``max_tables`` of them plus those they reference.
  Shorter prompts, but a table the question names only indirectly is lost.
* ``auto`` (default): ``full`` while the whole schema text fits ``schema_budget_chars``,
  ``overlap`` beyond it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from routerlab.agents.errors import ConfigError
from routerlab.agents.tools.text import stems

if TYPE_CHECKING:
    from routerlab.agents.db import Database

__all__ = ["LINKING_MODES", "LinkingSettings", "link_tables", "overlap_tables", "schema_for"]

LINKING_MODES: tuple[str, ...] = ("auto", "full", "overlap")


class LinkingSettings(Protocol):
    """The settings linking reads (:class:`~routerlab.agents.tools.context.ToolSettings` has them).

    A protocol rather than ``ToolSettings`` itself: the settings check their linking mode against
    :data:`LINKING_MODES`, so naming them here would tie the two modules in a cycle.
    """

    @property
    def linking(self) -> str:
        """``auto``, ``full`` or ``overlap``."""
        ...

    @property
    def max_tables(self) -> int:
        """Tables ``overlap`` keeps at most (plus those they reference)."""
        ...

    @property
    def schema_budget_chars(self) -> int:
        """Largest schema text ``auto`` shows whole."""
        ...

    @property
    def example_values(self) -> int:
        """Example values per column in the schema text."""
        ...


def overlap_tables(db: Database, question: str, max_tables: int) -> list[str]:
    """Tables sharing a content word with ``question``, plus the tables they reference.

    At most ``max_tables`` by overlap, plus up to two tables they reference by foreign key so
    joins stay possible; when nothing overlaps, the first ``max_tables`` tables.
    """
    infos = db.tables()
    names = [t.name for t in infos]
    q = stems(question)
    scored = []
    for t in infos:
        vocab = stems(t.name)
        for c in t.columns:
            vocab |= stems(c.name)
            for v in c.examples:
                vocab |= stems(str(v))
        scored.append((len(q & vocab), t.name))
    ranked = sorted(scored, key=lambda s: (-s[0], names.index(s[1])))
    keep = [n for score, n in ranked if score > 0][:max_tables] or names[:max_tables]
    by_lower = {t.name.lower(): t.name for t in infos}
    by_name = {t.name: t for t in infos}
    for n in list(keep):
        for fk in by_name[n].foreign_keys:
            ref = by_lower.get(fk[1].lower())
            if ref is not None and ref not in keep and len(keep) < max_tables + 2:
                keep.append(ref)
    return sorted(keep, key=names.index)


def link_tables(db: Database, question: str, settings: LinkingSettings) -> list[str]:
    """The tables to show for ``question`` under ``settings.linking`` (database order).

    Raises:
        ConfigError: An unknown linking mode.
    """
    mode = settings.linking
    if mode not in LINKING_MODES:
        raise ConfigError(
            f"unknown schema linking mode {mode!r}",
            expected=f"one of {', '.join(LINKING_MODES)}",
            found=repr(mode),
            fix="set pipeline.tools.linking in the run config",
        )
    everything = [t.name for t in db.tables()]
    if mode == "full":
        return everything
    if mode == "auto":
        text = db.schema_text(None, example_values=settings.example_values)
        if len(text) <= settings.schema_budget_chars:
            return everything
    return overlap_tables(db, question, settings.max_tables)


def schema_for(db: Database, question: str, settings: LinkingSettings) -> str:
    """The schema text of the tables :func:`link_tables` picks."""
    return db.schema_text(link_tables(db, question, settings), example_values=settings.example_values)
