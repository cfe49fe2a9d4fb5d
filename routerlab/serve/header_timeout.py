"""A bound on how long a client may take to send a request's headers (slowloris).

uvicorn's h11 protocol times out only an idle kept-alive connection, and only after a
response: a client that connects and sends half a request line, or half its headers, held the
connection (and its buffer) forever. :func:`header_timeout_protocol` returns the same protocol
with one more timer: from the connection's start, and again from the first byte of each
further request, the headers must be complete within ``seconds``, else the connection is closed.
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HEADER_TIMEOUT_S", "header_timeout_protocol"]

#: seconds a client has to send a request's headers (a browser or httpx sends them at once)
HEADER_TIMEOUT_S = 10.0


def header_timeout_protocol(seconds: float = HEADER_TIMEOUT_S) -> type[asyncio.Protocol]:
    """Uvicorn's h11 protocol that closes a connection whose request headers are not complete in time.

    Args:
        seconds: The bound (from the connection's start, or from a further request's first byte).

    Returns:
        A protocol class for ``uvicorn.Config(http=...)``.
    """

    class _HeaderTimeoutProtocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(seconds, self._headers_late)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _waiting_for_headers(self) -> bool:
            return self.conn.their_state is h11.IDLE and not self.transport.is_closing()

        def _headers_late(self) -> None:
            self._header_timer = None
            if self._waiting_for_headers() and (self.cycle is None or self.cycle.response_complete):
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._waiting_for_headers():
                self._arm()  # a request has begun (or none yet): its headers are on the clock
            else:
                self._disarm()

        def on_response_complete(self) -> None:
            self._disarm()  # between requests, uvicorn's keep-alive timeout applies
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return _HeaderTimeoutProtocol
