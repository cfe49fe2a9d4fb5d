"""A bound on the size of a request's body, enforced while it is read.

Without it a 200 MB body was read whole before the request's 8,000-character checks ran
(+490 MB of server memory for one such request, +1.4 GB for four in parallel; issue 62). The
middleware wraps the ASGI ``receive``: a declared ``Content-Length`` over the bound is refused at
the first read, before any byte of the body is taken, and a body sent without a length
(``Transfer-Encoding: chunked``) is refused as soon as the bytes read pass the bound. Either way
the client gets a 413 in the API's error envelope and the rest of the body is never read (uvicorn
stops reading from a socket whose body is not consumed, and closes the connection after the
response).
"""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException

__all__ = ["MAX_BODY_BYTES", "BodyLimit", "BodyTooLarge"]

#: the largest body a request may send: the largest valid one (question, hint and reply of 8,000
#: characters each, every character a 6-byte JSON escape, plus router arguments) fits with room
MAX_BODY_BYTES = 256 * 1024


class BodyTooLarge(HTTPException):
    """A request body over :data:`MAX_BODY_BYTES` (HTTP 413).

    Attributes:
        limit: The bound in bytes.
        found: What was seen: the declared length, or the bytes read when the bound was passed.
    """

    def __init__(self, limit: int, found: str) -> None:
        super().__init__(413, f"request body too large: at most {limit:,} bytes are read")
        self.limit = limit
        self.found = found


class BodyLimit:
    """ASGI middleware refusing request bodies over ``max_bytes`` while they are read.

    Args:
        app: The wrapped ASGI app.
        max_bytes: The bound.
    """

    def __init__(self, app: Any, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Serve one ASGI connection, its ``receive`` bounded."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes
        declared = _content_length(scope)
        read = 0

        async def bounded_receive() -> dict[str, Any]:
            nonlocal read
            # the route reads the body first thing: a declared length over the bound is refused
            # before a single byte of it is taken from the socket
            if declared is not None and declared > limit:
                raise BodyTooLarge(limit, f"Content-Length {declared:,} bytes")
            message = await receive()
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                if read > limit:
                    raise BodyTooLarge(limit, f"more than {limit:,} bytes sent without a Content-Length")
            return message

        await self.app(scope, bounded_receive, send)


def _content_length(scope: dict[str, Any]) -> int | None:
    """The request's declared body length (None: not declared, or not a number)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() and len(text) <= 20 else None
    return None
