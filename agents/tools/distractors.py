"""Distractor tools: many plausible data-platform operations that a router must not pick.

A retrieval router is only interesting when the toolset is large. This module builds
deterministic distractors (``create_dashboard``, ``export_saved_query``, ``list_users``,
``grant_dataset_access``, ``profile_column``...) by combining a verb catalogue with an object
catalogue, and turns each into a real :class:`~routerlab.agents.tools.base.Tool` through the same
function-to-schema code as the sub-agents (typed parameters, Google-style docstring).

Distractors are never run: they are not sub-agents of this assistant. A router that calls one is
either told ``unknown tool`` by the pipeline (the distractor is not among the pipeline's tools) or,
if a pipeline was built with distractors among its tools, gets a ``ToolError`` of class
``unknown_tool`` that ends the turn the same way.
"""

from __future__ import annotations

import functools
import inspect
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from routerlab.agents.errors import ConfigError, ContractError, ToolError
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.tools.base import Tool
from routerlab.agents.tools.schema import function_schema

__all__ = ["distractor_capacity", "distractor_tools", "is_distractor", "tool_registry"]

#: attribute marking a distractor's function, so a registry can tell them from real tools
_MARK = "_routerlab_distractor"


@dataclass(frozen=True)
class _Param:
    """One visible parameter of a generated tool."""

    name: str
    type: Any
    doc: str
    default: Any = inspect.Parameter.empty


@dataclass(frozen=True)
class _Object:
    """A kind of thing a data platform manages."""

    key: str
    noun: str
    gloss: str  # opens with the noun's article: "An ML model is ..."
    category: Literal["content", "data", "access"]
    readonly: bool = False
    plural: str = ""  # "": the noun and an "s"

    def __post_init__(self) -> None:
        object.__setattr__(self, "plural", self.plural or f"{self.noun}s")

    @property
    def a(self) -> str:
        return f"{self.gloss.split()[0].lower()} {self.noun}"

    @property
    def the(self) -> str:
        return f"the {self.noun}"

    @property
    def id_param(self) -> _Param:
        return _Param(f"{self.key}_id", str, f"The id of the {self.noun}.")


@dataclass(frozen=True)
class _Verb:
    """An operation; ``name`` and ``sentence`` are format strings over an :class:`_Object`."""

    name: str
    sentence: str
    categories: tuple[str, ...]
    params: Callable[[_Object], tuple[_Param, ...]]
    mutating: bool = True


_OBJECTS: tuple[_Object, ...] = (
    _Object("dashboard", "dashboard", "A dashboard is a saved page of charts a team looks at together.", "content"),
    _Object("report", "report", "A report is a formatted summary of figures sent to stakeholders.", "content"),
    _Object("chart", "chart", "A chart is one visualisation of a saved query's result.", "content"),
    _Object("notebook", "notebook", "A notebook mixes code, queries and notes for one analysis.", "content"),
    _Object(
        "saved_query",
        "saved query",
        "A saved query is a SQL statement kept in the shared query library.",
        "content",
        plural="saved queries",
    ),
    _Object("alert", "alert", "An alert notifies people when a metric crosses a threshold.", "content"),
    _Object("folder", "folder", "A folder groups dashboards, reports and notebooks.", "content"),
    _Object("comment", "comment", "A comment is a note left on a dashboard or a report.", "content"),
    _Object("dataset", "dataset", "A dataset is a table registered in the data catalog.", "data"),
    _Object("column", "column", "A column belongs to a catalog table and has a type and a description.", "data"),
    _Object("snapshot", "table snapshot", "A table snapshot is a point-in-time copy of a table's rows.", "data"),
    _Object("view", "view", "A view is a stored query exposed as a virtual table.", "data"),
    _Object("pipeline", "pipeline", "A pipeline loads data from a source system into the warehouse.", "data"),
    _Object("job", "job", "A job is a scheduled transformation run by the orchestrator.", "data"),
    _Object(
        "data_source", "data source", "A data source is a connection to an external database or file store.", "data"
    ),
    _Object("metric", "metric", "A metric is a business measure defined once in the semantic layer.", "data"),
    _Object("warehouse", "warehouse", "A warehouse is a compute cluster that runs queries.", "data"),
    _Object("partition", "partition", "A partition is a slice of a large table, usually by date.", "data"),
    _Object("ml_model", "ML model", "An ML model is a trained model kept in the model registry.", "data"),
    _Object("glossary_term", "glossary term", "A glossary term defines a business word for everyone.", "data"),
    _Object("quality_check", "quality check", "A quality check is a rule a table's data must satisfy.", "data"),
    _Object(
        "lineage_graph", "lineage graph", "A lineage graph records which tables feed which.", "data", readonly=True
    ),
    _Object("user", "user", "A user is a person with an account on the platform.", "access"),
    _Object("team", "team", "A team is a group of users that share content.", "access"),
    _Object("role", "role", "A role bundles permissions that can be given to users.", "access"),
    _Object("api_key", "API key", "An API key lets a program call the platform.", "access"),
    _Object("service_account", "service account", "A service account is a non-human identity used by jobs.", "access"),
    _Object("audit_log", "audit log", "An audit log records who did what on the platform.", "access", readonly=True),
    _Object("quota", "quota", "A quota caps how much compute or storage a team may use.", "access"),
)

_ALL = ("content", "data", "access")
_FORMAT = Literal["csv", "json", "parquet", "xlsx"]
_LEVEL = Literal["read", "write", "admin"]


def _id_and(*extra: _Param) -> Callable[[_Object], tuple[_Param, ...]]:
    """The parameters of a verb that acts on one object: the object's id, then ``extra``."""
    return lambda o: (o.id_param, *extra)


_VERBS: tuple[_Verb, ...] = (
    _Verb(
        "create_{key}",
        "Create {a} in the data platform.",
        _ALL,
        lambda o: (
            _Param("name", str, f"Name of the new {o.noun}."),
            _Param("description", str, f"What the {o.noun} is for.", ""),
        ),
    ),
    _Verb(
        "delete_{key}",
        "Delete {the} permanently.",
        _ALL,
        _id_and(_Param("confirm", bool, "Must be true to really delete.", False)),
    ),
    _Verb(
        "rename_{key}",
        "Rename {the}.",
        _ALL,
        lambda o: (o.id_param, _Param("new_name", str, f"The {o.noun}'s new name.")),
    ),
    _Verb(
        "list_{plural}",
        "List the {plural} the current user can see.",
        _ALL,
        lambda o: (
            _Param("name_contains", str, "Only names containing this text (empty: all).", ""),
            _Param("limit", int, f"Maximum number of {o.plural} to return.", 50),
        ),
        mutating=False,
    ),
    _Verb("describe_{key}", "Show the settings and metadata of {the}.", _ALL, _id_and(), mutating=False),
    _Verb("archive_{key}", "Archive {the} so it is hidden but kept.", _ALL, _id_and()),
    _Verb("restore_{key}", "Restore an archived {noun}.", _ALL, _id_and()),
    _Verb(
        "export_{key}",
        "Export {the} to a file for download.",
        _ALL,
        _id_and(_Param("format", _FORMAT, "File format of the export.", "csv")),
        mutating=False,
    ),
    _Verb(
        "tag_{key}",
        "Add a tag to {the} so it is easier to find.",
        _ALL,
        _id_and(_Param("tag", str, "The tag to add.")),
    ),
    _Verb("copy_{key}", "Make a copy of {the}.", _ALL, _id_and(_Param("new_name", str, "Name of the copy."))),
    _Verb(
        "get_{key}_history",
        "Show the change history of {the}.",
        _ALL,
        _id_and(_Param("days", int, "How many days back to look.", 30)),
        mutating=False,
    ),
    _Verb(
        "share_{key}",
        "Share {the} with a user or a team.",
        ("content",),
        _id_and(
            _Param("recipient", str, "Email of the user or name of the team."),
            _Param("permission", Literal["view", "edit"], "What the recipient may do.", "view"),
        ),
    ),
    _Verb(
        "schedule_{key}",
        "Schedule {the} to be sent by email on a recurring basis.",
        ("content",),
        _id_and(
            _Param("cron", str, "When to send it, as a cron expression."),
            _Param("recipients", list[str], "Email addresses to send it to."),
        ),
    ),
    _Verb("publish_{key}", "Publish {the} to the company portal.", ("content",), _id_and()),
    _Verb("pin_{key}", "Pin {the} to the home page.", ("content",), _id_and()),
    _Verb(
        "subscribe_to_{key}",
        "Subscribe to email notifications about changes to {the}.",
        ("content",),
        _id_and(_Param("email", str, "Where to send the notifications.")),
    ),
    _Verb(
        "move_{key}",
        "Move {the} to another folder.",
        ("content",),
        _id_and(_Param("destination_folder_id", str, "The id of the folder to move it to.")),
    ),
    _Verb(
        "profile_{key}",
        "Compute statistics of {the}: null counts, distinct values, minimum and maximum.",
        ("data",),
        _id_and(),
        mutating=False,
    ),
    _Verb("validate_{key}", "Validate {the} against its declared schema and rules.", ("data",), _id_and()),
    _Verb("refresh_{key}", "Refresh {the} from its upstream source.", ("data",), _id_and()),
    _Verb("backup_{key}", "Back up {the} to cold storage.", ("data",), _id_and()),
    _Verb(
        "monitor_{key}",
        "Start monitoring {the} for freshness and volume anomalies.",
        ("data",),
        _id_and(_Param("threshold", float, "Relative change that raises an anomaly.", 0.2)),
    ),
    _Verb(
        "sample_{key}",
        "Return a random sample of records from {the}.",
        ("data",),
        _id_and(_Param("n", int, "How many records to return.", 100)),
        mutating=False,
    ),
    _Verb("document_{key}", "Generate documentation for {the} from its metadata.", ("data",), _id_and()),
    _Verb(
        "migrate_{key}",
        "Migrate {the} to another warehouse.",
        ("data",),
        _id_and(_Param("target_warehouse", str, "Name of the destination warehouse.")),
    ),
    _Verb(
        "set_{key}_owner",
        "Change the owner of {the}.",
        ("data",),
        _id_and(_Param("owner_email", str, "Email of the new owner.")),
    ),
    _Verb(
        "grant_{key}_access",
        "Grant a user or a team access to {the}.",
        ("content", "data"),
        _id_and(
            _Param("principal", str, "Email of the user or name of the team."),
            _Param("level", _LEVEL, "Access level to grant.", "read"),
        ),
    ),
    _Verb(
        "revoke_{key}_access",
        "Revoke a user's or a team's access to {the}.",
        ("content", "data"),
        _id_and(_Param("principal", str, "Email of the user or name of the team.")),
    ),
    _Verb("suspend_{key}", "Suspend {the} so it can no longer be used.", ("access",), _id_and()),
    _Verb("reactivate_{key}", "Reactivate a suspended {noun}.", ("access",), _id_and()),
    _Verb(
        "audit_{key}",
        "Show the recent actions performed by or on {the}.",
        ("access",),
        _id_and(_Param("days", int, "How many days back to look.", 7)),
        mutating=False,
    ),
    _Verb(
        "notify_{key}",
        "Send a notification message to {the}.",
        ("access",),
        _id_and(_Param("message", str, "The text of the notification.")),
    ),
)


def _docstring(sentence: str, gloss: str, params: Sequence[_Param]) -> str:
    lines = [sentence, "", gloss, ""]
    if params:
        lines.append("Args:")
        lines += [f"    {p.name}: {p.doc}" for p in params]
    return "\n".join(lines)


def _function(name: str, doc: str, params: Sequence[_Param]) -> Callable[..., Any]:
    """A function with a real signature and docstring, so the schema code reads it like a sub-agent."""

    def distractor(**kwargs: Any) -> dict[str, Any]:
        # only reached if a pipeline was built with distractors among its tools: this assistant
        # cannot do the operation, and the turn ends as for any call to a tool it does not have
        raise ToolError(f"the tool {name!r} is not available in this assistant", error_class="unknown_tool")

    distractor.__name__ = distractor.__qualname__ = name
    distractor.__doc__ = doc
    ordered = sorted(params, key=lambda p: p.default is not inspect.Parameter.empty)
    distractor.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=p.default, annotation=p.type)
            for p in ordered
        ],
        return_annotation=dict,
    )
    distractor.__annotations__ = {**{p.name: p.type for p in ordered}, "return": dict}
    setattr(distractor, _MARK, True)
    return distractor


def _build(verb: _Verb, obj: _Object) -> Tool:
    fields = {"key": obj.key, "plural": obj.plural.lower().replace(" ", "_"), "noun": obj.noun}
    name = verb.name.format(**fields)
    sentence = verb.sentence.format(a=obj.a, the=obj.the, plural=obj.plural, noun=obj.noun)
    params = verb.params(obj)
    fn = _function(name, _docstring(sentence, obj.gloss, params), params)
    description, schema, injected = function_schema(fn)
    return Tool(name=name, description=description, parameters=schema, fn=fn, injected=injected)


@functools.lru_cache(maxsize=4)
def _catalogue(seed: int) -> tuple[Tool, ...]:
    """Every distractor, in a seeded order (pure: the cache only saves rebuilding the schemas)."""
    combos = [
        (v, o) for v in _VERBS for o in _OBJECTS if o.category in v.categories and not (o.readonly and v.mutating)
    ]
    built = sorted((_build(v, o) for v, o in combos), key=lambda t: t.name)
    random.Random(seed).shuffle(built)
    return tuple(built)


def distractor_capacity() -> int:
    """How many distinct distractors the catalogues can make."""
    return len(_catalogue(0))


def is_distractor(tool: Tool) -> bool:
    """True for a tool made by this module."""
    return bool(getattr(tool.fn, _MARK, False))


def distractor_tools(n: int, *, seed: int = 0, exclude: Sequence[str] = ()) -> tuple[Tool, ...]:
    """The first ``n`` distractors of the seeded order (a larger ``n`` extends a smaller one).

    Args:
        n: How many distractors.
        seed: Order in which the catalogue is drawn.
        exclude: Names to skip (the real tools', so no distractor shadows one).

    Raises:
        ConfigError: For a negative ``n`` or more than the catalogues can make.
    """
    skip = set(exclude)
    pool = [t for t in _catalogue(seed) if t.name not in skip]
    if not 0 <= n <= len(pool):
        raise ConfigError(
            f"cannot make {n} distractor tools",
            expected=f"0 <= n <= {len(pool)}",
            found=str(n),
            fix="ask for a smaller tool scale",
        )
    return tuple(pool[:n])


def tool_registry(size: int, *, seed: int = 0, tools: Sequence[Tool] | None = None) -> tuple[Tool, ...]:
    """A toolset of exactly ``size`` tools: the real ``tools`` plus distractors.

    With no distractor the real tools keep their order; otherwise the whole set is shuffled with
    ``seed``, so a model never finds the real tools at a fixed position.

    Args:
        size: Number of tools in the registry (8 with the default tools: the real sub-agents only).
        seed: Picks and orders the distractors.
        tools: The real tools (default: :data:`routerlab.agents.tools.DEFAULT_TOOLS`).

    Raises:
        ContractError: When ``size`` is smaller than the real toolset or tool names repeat.
        ConfigError: When ``size`` needs more distractors than the catalogues can make.
    """
    if tools is None:
        tools = DEFAULT_TOOLS
    real = list(tools)
    names = [t.name for t in real]
    if len(set(names)) != len(names):
        raise ContractError(
            "tool names repeat",
            expected="unique tool names",
            found=str(sorted({n for n in names if names.count(n) > 1})),
            fix="give every tool its own name",
        )
    if size < len(real):
        raise ContractError(
            f"a registry of {size} tools cannot hold the {len(real)} real tools",
            expected=f"size >= {len(real)}",
            found=str(size),
            fix=f"use a tool scale of at least {len(real)}",
        )
    extra = list(distractor_tools(size - len(real), seed=seed, exclude=names))
    if not extra:
        return tuple(real)
    merged = real + extra
    random.Random(seed).shuffle(merged)
    return tuple(merged)
