"""Issue 50 item 9: body parse errors name field/expected/fix; half-sent headers are cut off.

A real loopback server (uvicorn in a thread, the scripted LM): three bodies the JSON parser
cannot read used to get a 400 with empty ``field``, ``expected`` and ``fix``; a client that
sends half its request headers used to hold its connection forever.
"""

from __future__ import annotations

import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest

from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field
from routerlab.serve import API_PREFIX, ServeSettings, create_app, serve_in_background

pytestmark = pytest.mark.server

ASK = f"{API_PREFIX}/ask_agent"
HEADER_TIMEOUT_S = 1.5


@pytest.fixture(scope="module")
def url(sales_db):
    lm = scripted_lm(lambda request: answer_field(request, "SELECT 1"))
    app = create_app(ServeSettings(lm=lm, database=sales_db, router="rules"))
    with serve_in_background(app, header_timeout_s=HEADER_TIMEOUT_S) as base:
        yield base


BODIES = {
    "not_utf8": (b'{"question": "how many \xff\xfe areas?"}', "UTF-8"),
    "4300_digits": (b'{"question": "hi", "router_args": {"k": ' + b"1" * 4301 + b"}}", "4,300 digits"),
    "deep_nesting": (b'{"question": "hi", "router_args": {"k": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}", "nested"),
}


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_an_unreadable_body_is_a_400_naming_field_expected_and_fix(url, kind):
    body, expected = BODIES[kind]
    r = httpx.post(url + ASK, content=body, headers={"content-type": "application/json"}, timeout=30)
    assert r.status_code == 400, r.text[:500]
    data = r.json()["data"]
    assert data["field"] == "body"
    assert expected in data["expected"]
    assert data["found"] and data["fix"]
    assert "invalid request: body" in r.json()["message"]


@pytest.mark.parametrize("sent", [b"", b"POST /api/v1/ask_agent HTTP/1.1\r\nHost: x\r\nContent-Ty"])
def test_half_sent_headers_are_timed_out(url, sent):
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        started = time.monotonic()
        sock.sendall(sent)
        sock.settimeout(HEADER_TIMEOUT_S + 8)
        try:
            closed = sock.recv(1024) == b""
        except TimeoutError:
            closed = False
        took = time.monotonic() - started
    assert closed, f"the server kept the connection {took:.1f} s"
    assert took < HEADER_TIMEOUT_S + 3
    print(f"\nhalf-sent headers ({len(sent)} bytes): closed after {took:.1f} s")


def test_a_whole_request_after_a_pause_within_the_bound_still_works(url):
    # the timer cuts only incomplete headers: a kept-alive client's next request is served
    with httpx.Client(timeout=30) as client:
        first = client.post(url + ASK, content=b"{", headers={"content-type": "application/json"})
        time.sleep(HEADER_TIMEOUT_S / 3)
        second = client.post(url + ASK, content=b"{", headers={"content-type": "application/json"})
    assert first.status_code == second.status_code == 400
