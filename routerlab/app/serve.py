"""``routerlab serve``: the streaming API and its live page, on settings checked before it binds."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from routerlab.serve import ServeSettings
from routerlab.serve import serve as run_server
from routerlab.serve.files import parse_registrations

__all__ = ["serve"]


def serve(
    *,
    host: str = "127.0.0.1",
    port: int = 8084,
    router: str = "rules",
    lm: str = "local",
    lm_api_base: str | None = None,
    database: Path | None = None,
    conversations: Path | None = None,
    shared_conversations: bool = False,
    register_files: Sequence[str] = (),
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``/api/v0/ask_agent[_stream]`` and the progress page until interrupted.

    Args:
        host: Interface to bind.
        port: TCP port.
        router: The router of requests that name none.
        lm: LM spec, resolved when the server starts.
        lm_api_base: API base URL of an OpenAI-compatible server.
        database: The database every request runs against (None: the built-in one).
        conversations: SQLite file of the conversations (None: kept in memory).
        shared_conversations: Let any user continue any conversation.
        register_files: ``KIND:NAME=PATH`` items: files requests may name as router arguments.
        on_ready: Told the page's URL once the address is bound.

    Raises:
        ConfigError: A bad ``register_files`` item (before anything binds), or an address that
            cannot be bound.
    """
    settings = ServeSettings(
        host=host,
        port=port,
        router=router,
        lm_spec=lm,
        lm_api_base=lm_api_base,
        database=database,
        conversations=conversations,
        shared_conversations=shared_conversations,
        files=parse_registrations(register_files),
    )
    run_server(settings, on_ready=on_ready)
