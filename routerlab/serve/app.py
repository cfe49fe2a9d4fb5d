"""``routerlab serve``: the pipeline behind a small HTTP API with live progress (SSE) and a page."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from pydantic import ValidationError
from sse_starlette import EventSourceResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from routerlab import routers
from routerlab.agents.capture import build_trace
from routerlab.agents.errors import ConfigError, DatabaseError, RunError, UnknownComponentError
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import resolve_lm
from routerlab.agents.paths import cache_writes
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.turn_history import turn_from_trace
from routerlab.app.ask import check_agent
from routerlab.app.ask_request import ROUTING_MODES, AskRequest, describe_body_error, describe_validation_errors
from routerlab.benchmarks.builtin import builtin_database_path
from routerlab.conversation_store import ConversationForbidden, ConversationStore, new_conversation_id
from routerlab.serve.body_limit import BodyLimit, BodyTooLarge
from routerlab.serve.contract import routing_mode_used
from routerlab.serve.envelope import ErrorCode, dump_json, envelope, error_envelope
from routerlab.serve.files import FileAllowList
from routerlab.serve.header_timeout import header_timeout_protocol
from routerlab.serve.runs import ConversationBusyError, Run, RunRegistry, stream_run

__all__ = ["API_PREFIX", "ServeSettings", "create_app", "serve"]

API_PREFIX = "/api/v0"

log = logging.getLogger(__name__)

#: compiled pipelines kept per app (one per router and argument set)
_MAX_PIPELINES = 32


@dataclass(frozen=True)
class ServeSettings:
    """Everything a server instance needs; one :func:`create_app` call per settings object.

    Attributes:
        host: Interface to bind.
        port: TCP port.
        router: Router of requests that name none.
        lm_spec: ``--lm`` spec resolved when the app is created (ignored when ``lm`` is given).
        lm_api_base: API base of an OpenAI-compatible server.
        lm: A ready LM object (tests pass a scripted LM here).
        database: The database every request runs against (default: the built-in one).
        config: Pipeline bounds and settings.
        conversations: SQLite file of the conversations (None: kept in memory); see
            :mod:`routerlab.conversation_store` for the bounds.
        shared_conversations: Let any ``user_id`` continue any conversation (single-user use);
            by default a conversation belongs to the user who started it.
        files: Files the operator registers for router arguments that name one: kind -> name ->
            path (see :mod:`routerlab.serve.files`); requests name files only from these and the
            committed ones.
        poll_s: How often a run waiting on a busy node checks whether its client is still there.
        ping_s: Keep-alive comment interval of event streams.
    """

    host: str = "127.0.0.1"
    port: int = 8084
    router: str = "rules"
    lm_spec: str = "local"
    lm_api_base: str | None = None
    lm: Any = None
    database: Path | None = None
    config: PipelineConfig | None = None
    conversations: Path | None = None
    shared_conversations: bool = False
    files: Mapping[str, Mapping[str, Path]] = field(default_factory=dict)
    poll_s: float = 0.25
    ping_s: float = 15.0


@dataclass
class _Runtime:
    """Per-app state: the LM, the database, cached pipelines and the run registry."""

    settings: ServeSettings
    lm: Any
    database: Path
    store: ConversationStore
    runs: RunRegistry = field(default_factory=RunRegistry)
    _pipelines: dict[str, Pipeline] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def pipeline(self, router: str, router_args: dict[str, Any]) -> Pipeline:
        """The pipeline for a router and its arguments, compiled once and shared by runs.

        Raises:
            UnknownComponentError: An unknown router name.
            ConfigError: Arguments the router does not take, or a router that needs an LM.
        """
        # a file argument takes an allow-listed name only: no path from a request is ever read
        router_args = FileAllowList(self.settings.files).resolve(router, routers.router.get(router), router_args)
        key = json.dumps([router, router_args], sort_keys=True, default=str)
        with self._lock:
            if key not in self._pipelines:
                # router_args come from clients: bound the cache (runs keep their own reference)
                while len(self._pipelines) >= _MAX_PIPELINES:
                    self._pipelines.pop(next(iter(self._pipelines)))
                # and what a request makes the server compute leaves no file behind
                with cache_writes(False):
                    built = routers.build_pipeline(
                        router, self.lm, router_args=router_args, config=self.settings.config
                    )
                self._pipelines[key] = built
            return self._pipelines[key]


def _json(payload: dict[str, Any], status: int = 200) -> Response:
    # one serialiser for every response, so the synchronous result and the streamed completed
    # event are byte-for-byte the same JSON
    return Response(dump_json(payload), status_code=status, media_type="application/json")


def _refusal(exc: RunError, field: str) -> Response:
    """A 400/409 for a request the server cannot run, with the error's what/expected/found/fix."""
    if isinstance(exc, ConversationBusyError):
        code, status = ErrorCode.CONVERSATION_BUSY, 409
    elif isinstance(exc, ConversationForbidden):
        code, status = ErrorCode.FORBIDDEN, 403
    elif isinstance(exc, UnknownComponentError):
        code, status = ErrorCode.UNKNOWN_COMPONENT, 400
    else:
        code, status = ErrorCode.BAD_COMPONENT, 400
    body = error_envelope(
        code,
        exc.what,
        field=field,
        expected=exc.expected,
        found=exc.found,
        fix=exc.fix,
        error_type=exc.error_class,
        details=exc.details,
    )
    return _json(body, status)


#: query parameters of the stream that are options of the transport, not request fields
_STREAM_OPTIONS = frozenset({"named_events"})


def _wants_named_events(request: Request) -> bool:
    """Whether the client asked for ``event:`` names (query ``named_events`` or ``X-Named-Events``)."""
    value = request.query_params.get("named_events") or request.headers.get("x-named-events") or ""
    return value.strip().lower() in ("1", "true", "yes")


def _query_body(request: Request) -> dict[str, Any]:
    """A GET stream's query parameters as a request body (``router_args`` parsed as JSON).

    A ``router_args`` that is not JSON is left as the string, so validation reports it on its
    field like a bad body would.
    """
    body: dict[str, Any] = {k: v for k, v in request.query_params.items() if k not in _STREAM_OPTIONS}
    if "router_args" in body:
        try:
            body["router_args"] = json.loads(body["router_args"])
        except json.JSONDecodeError:
            pass
    return body


def _page() -> str:
    return resources.files("routerlab.serve").joinpath("page.html").read_text(encoding="utf-8")


def _runtime(settings: ServeSettings) -> _Runtime:
    """The app's runtime: its database checked, its default router known, its LM loaded."""
    database = Path(settings.database) if settings.database is not None else builtin_database_path()
    if not database.is_file():
        raise DatabaseError(
            f"database file not found: {database}",
            expected="a DuckDB or SQLite file",
            found="no such file" if not database.exists() else "not a file",
            fix="pass --db PATH to an existing database file",
        )
    routers.router.get(settings.router)  # fail at start, not on the first request
    lm = settings.lm if settings.lm is not None else resolve_lm(settings.lm_spec, api_base=settings.lm_api_base)
    store = ConversationStore(settings.conversations, shared=settings.shared_conversations)
    return _Runtime(settings=settings, lm=lm, database=database, store=store)


def _add_error_handlers(app: FastAPI) -> None:
    """Validation errors and HTTP errors as the API's error envelopes."""

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        problems = describe_validation_errors(exc.errors())
        first = problems[0] if problems else {"field": "", "expected": "", "found": ""}
        where = first["field"] or "request body"
        message = f"invalid request: {where}: expected {first['expected']}, found {first['found']}"
        fix = "see GET /docs for the request schema"
        return _json(error_envelope(ErrorCode.INVALID_REQUEST, message, fix=fix, errors=problems, **first), 400)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if isinstance(exc, BodyTooLarge):
            body = error_envelope(
                ErrorCode.INVALID_REQUEST,
                str(exc.detail),
                field="body",
                expected=f"a JSON body of at most {exc.limit:,} bytes",
                found=exc.found,
                fix="shorten the question, hint or reply (8,000 characters each at most)",
            )
            # the rest of the body is never read: the connection closes after this response
            return Response(
                dump_json(body), status_code=413, media_type="application/json", headers={"connection": "close"}
            )
        code = ErrorCode.NOT_FOUND if exc.status_code == 404 else ErrorCode.INVALID_REQUEST
        if exc.status_code == 400 and (problem := describe_body_error(exc.__cause__)) is not None:
            message = f"invalid request: body: expected {problem['expected']}, found {problem['found']}"
            return _json(error_envelope(code, message, **problem), 400)
        found = f"{request.method} {request.url.path}"
        return _json(error_envelope(code, str(exc.detail), found=found), exc.status_code)


def _build_refusal(router: str, exc: Exception) -> Response:
    """The 400 for a router that raised while being built from a request's arguments."""
    if isinstance(exc, RunError):
        field_name = "router" if isinstance(exc, UnknownComponentError) else "router_args"
        argument = exc.details.get("argument")
        return _refusal(exc, exc.details.get("field") or (f"router_args.{argument}" if argument else field_name))
    # a router that fails to build on a client's arguments: their fault
    log.warning("router %s could not be built from the request's arguments: %r", router, exc)
    body = error_envelope(
        ErrorCode.BAD_COMPONENT,
        f"router {router!r} cannot be built with these arguments",
        field="router_args",
        expected="arguments the router takes, with values of their documented types and ranges",
        found=type(exc).__name__,
        fix="see `routerlab routers` and the router's documented parameters",
    )
    return _json(body, 400)


@dataclass
class _Requests:
    """A request from its body to a started run: pipeline, conversation, run arguments."""

    runtime: _Runtime

    async def prepare(self, body: AskRequest) -> tuple[Pipeline, dict[str, Any]] | Response:
        """Build (or reuse) the pipeline and check the agent, before any run starts."""
        router = body.router_name(self.runtime.settings.router)
        if body.ignored_fields:
            # seed 002's rule: an existing client's extra fields never break its request
            log.warning("ignoring unknown request fields: %s", ", ".join(body.ignored_fields))
        try:
            pipeline = await run_in_threadpool(self.runtime.pipeline, router, dict(body.router_args))
        except Exception as exc:
            return _build_refusal(router, exc)
        if body.agent is not None:
            try:
                check_agent(pipeline, body.agent)
            except UnknownComponentError as exc:
                return _refusal(exc, "agent")
        replies = [body.reply] if body.reply is not None else []

        def reply(_question: str) -> str | None:
            # answer the first clarifying question only; a second one ends the turn with it
            return replies.pop() if replies else None

        kwargs = {
            "question": body.question,
            "database": str(self.runtime.database),
            "reply": reply,
            "agent": body.agent,
            "hint": body.hint,
        }
        return pipeline, kwargs

    def register(self, body: AskRequest) -> Run:
        """Claim the request's conversation (a new one without an id) for its run."""
        # server-issued ids are unguessable: an id is all a client needs to continue a conversation
        conversation_id = body.conversation_id or new_conversation_id()
        return self.runtime.runs.start(conversation_id, body.router_name(self.runtime.settings.router))

    def contract(self, body: AskRequest) -> dict[str, Any]:
        """What every event of this request reports besides the pipeline's own payload."""
        echo: dict[str, Any] = {k: v for k in ("user_id", "context_type") if (v := getattr(body, k)) is not None}
        if body.ignored_fields:
            echo["ignored_fields"] = body.ignored_fields
        mode = routing_mode_used(body.router_name(self.runtime.settings.router), body.mode == "direct")
        return {"routing_mode": mode, "echo": echo}

    async def start(self, body: AskRequest) -> Response | tuple[Any, dict[str, Any], Any]:
        """Build the pipeline, claim the conversation and load its turns, or the refusal to send."""
        prepared = await self.prepare(body)
        if isinstance(prepared, Response):
            return prepared
        pipeline, kwargs = prepared
        store = self.runtime.store
        if body.conversation_id is not None:
            # ownership first: another user's conversation is refused before anything about it
            # (that it is running, what it holds) can show
            try:
                kwargs["history"] = store.history(body.conversation_id, user_id=body.user_id)
            except ConversationForbidden as exc:
                return _refusal(exc, "conversation_id")
        try:
            run = self.register(body)
        except ConversationBusyError as exc:
            return _refusal(exc, "conversation_id")
        kwargs.setdefault("history", [])
        # the owner was checked with the history above: the store comes with the conversation
        kwargs["store"] = store.store(run.conversation_id)
        # seed 004's RunnableConfig: the request's identity travels with the run
        kwargs["tags"] = ["routerlab-serve", body.router_name(self.runtime.settings.router)]
        kwargs["metadata"] = {k: v for k in ("user_id", "context_type") if (v := getattr(body, k)) is not None}
        kwargs["run_name"] = f"ask {run.conversation_id}"

        def keep_turn(state: dict[str, Any]) -> None:
            turn = turn_from_trace(body.question, build_trace("", state, 0.0))  # type: ignore[arg-type]
            store.append(run.conversation_id, turn, user_id=body.user_id, store=state.get("store"))

        kwargs["on_end"] = keep_turn
        return pipeline, kwargs, run

    async def events(self, body: AskRequest, request: Request) -> Response | Any:
        """The run's events as they come (an async iterator), or the refusal to send instead."""
        started = await self.start(body)
        if isinstance(started, Response):
            return started
        pipeline, kwargs, run = started
        poll_s = self.runtime.settings.poll_s
        # one database engine per user (an anonymous request is a user of its conversation): no
        # statement of one user can change what another user's statements see
        scope = f"user:{body.user_id}" if body.user_id is not None else f"conversation:{run.conversation_id}"
        return stream_run(
            pipeline,
            run,
            self.runtime.runs,
            request.is_disconnected,
            poll_s=poll_s,
            scope=scope,
            **self.contract(body),
            **kwargs,
        )


def _add_info_routes(app: FastAPI, runtime: _Runtime) -> None:
    """``/health`` and the router list."""
    settings = runtime.settings

    @app.get("/health")
    async def health() -> Response:
        """Liveness, the server's defaults and the runs in progress."""
        data = {
            "status": "ok",
            "router": settings.router,
            "lm": getattr(runtime.lm, "routerlab_spec", settings.lm_spec),
            "database": runtime.database.name,
            "active_runs": len(runtime.runs.active()),
            "conversations": len(runtime.store),
        }
        return _json(envelope(ErrorCode.OK, "ok", data))

    @app.get(f"{API_PREFIX}/routers")
    async def list_routers() -> Response:
        """Known routers (baselines marked), the default one, and the agents of direct mode."""
        items = [
            {"name": n, "label": routers.label(n), "baseline": n in routers.BASELINES} for n in routers.router.names()
        ]
        agents = [t.name for t in DEFAULT_TOOLS]
        data = {
            "routers": items,
            "default": settings.router,
            "agents": agents,
            "modes": ["auto", "direct"],
            "routing_modes": {mode: name or settings.router for mode, name in ROUTING_MODES.items()},
        }
        return _json(envelope(ErrorCode.OK, f"{len(items)} routers", data))


def _add_page(app: FastAPI) -> None:
    """The live progress page at ``/``."""

    @app.get("/", response_class=HTMLResponse)
    async def page() -> HTMLResponse:
        """The live progress page."""
        return HTMLResponse(_page())


def _add_ask_routes(app: FastAPI, requests: _Requests) -> None:
    """``ask_agent`` (one response) and ``ask_agent_stream`` (SSE, by POST or by GET)."""
    ping_s = requests.runtime.settings.ping_s

    @app.post(f"{API_PREFIX}/ask_agent")
    async def ask_agent(body: AskRequest, request: Request) -> Response:
        """Run one request to the end and return its last event (completed or error)."""
        events = await requests.events(body, request)
        if isinstance(events, Response):
            return events
        last: dict[str, Any] | None = None
        async for item in events:
            last = item
        if last is None:  # the client left before the end; nobody reads this
            return _json(error_envelope(ErrorCode.RUN_ERROR, "the run was cancelled"), 499)
        # seed 002: a run that ended in error is code 500 (50001: an exception escaped it), sent as such
        status = 500 if last["data"]["type"] == "error" else 200
        return _json(last, status)

    async def open_stream(body: AskRequest, request: Request) -> Response:
        """Run one request and stream one SSE message per event (start, progress..., then the result).

        Messages are plain ``data:`` messages, which a browser's ``EventSource.onmessage``
        receives; ``?named_events=1`` (or the header ``X-Named-Events: 1``) adds ``event:`` with
        the event's type, for clients that listen per type.
        """
        events = await requests.events(body, request)
        if isinstance(events, Response):
            return events
        named = _wants_named_events(request)

        async def messages() -> Any:
            n = 0
            async for item in events:
                n += 1
                message = {"id": str(n), "data": dump_json(item)}
                if named:
                    message["event"] = item["data"]["type"]
                yield message

        return EventSourceResponse(messages(), ping=ping_s)

    @app.post(f"{API_PREFIX}/ask_agent_stream")
    async def ask_agent_stream(body: AskRequest, request: Request) -> Response:
        """Run one request and stream its events (Server-Sent Events, seed 002's format)."""
        return await open_stream(body, request)

    @app.get(f"{API_PREFIX}/ask_agent_stream")
    async def ask_agent_stream_get(request: Request) -> Response:
        """The same stream for a browser's ``EventSource``, which can only GET.

        The body's fields come as query parameters (``router_args`` as a JSON object).
        """
        try:
            body = AskRequest.model_validate(_query_body(request))
        except ValidationError as exc:
            raise RequestValidationError(exc.errors()) from None
        return await open_stream(body, request)


def create_app(settings: ServeSettings | None = None) -> FastAPI:
    """Build the FastAPI app (no module-level state: every call gets its own runtime).

    Args:
        settings: Server settings (default: :class:`ServeSettings` defaults).

    Returns:
        The app; its runtime is ``app.state.runtime`` (runs are in ``app.state.runtime.runs``).

    Raises:
        DatabaseError: The database file does not exist.
        UnknownComponentError: The default router is unknown.
        ConfigError / ModelAssetError: The LM spec cannot be resolved.
    """
    runtime = _runtime(settings or ServeSettings())
    app = FastAPI(title="routerlab", version="0", docs_url="/docs", redoc_url=None)
    app.state.runtime = runtime
    # bodies are bounded while they are read (docs/api.md, "Limits")
    app.add_middleware(BodyLimit)
    _add_error_handlers(app)
    _add_info_routes(app, runtime)
    _add_ask_routes(app, _Requests(runtime))
    _add_page(app)
    return app


def serve(settings: ServeSettings, *, log_level: str = "info", on_ready: Callable[[str], None] | None = None) -> None:
    """Create the app and run it with uvicorn until interrupted.

    Args:
        settings: Server settings (host and port included).
        log_level: uvicorn's log level.
        on_ready: Called with the page's URL once the address is bound (so "open ..." is never
            printed for a server that cannot start).

    Raises:
        ConfigError: The address cannot be bound (port in use, no such interface).
    """
    import socket

    import uvicorn

    app = create_app(settings)
    try:
        sock = socket.create_server((settings.host, settings.port))
    except OSError as exc:
        raise ConfigError(
            f"cannot listen on {settings.host}:{settings.port}",
            expected="a free port on an interface of this machine",
            found=f"{type(exc).__name__}: {exc.strerror or exc}",
            fix="pick another --port (or stop the process using it), or check --host",
            details={"option": "--port"},
        ) from None
    if on_ready is not None:
        on_ready(f"http://{settings.host}:{settings.port}/")
    # a client that never finishes its headers is cut off instead of holding a connection forever
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, http=header_timeout_protocol()))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
