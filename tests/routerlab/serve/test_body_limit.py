"""Request bodies are bounded while they are read (issue 62, item 3).

The probe: a 200 MB body was read whole before the 8,000-character check (+490 MB of server
memory for one, +1.4 GB for four in parallel). Here real sockets send 200 MB bodies to a real
loopback server running in this process, whose resident memory is sampled throughout.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

from routerlab.agents.lm import scripted_lm
from routerlab.serve import API_PREFIX, MAX_BODY_BYTES, ServeSettings, create_app, serve_in_background

pytestmark = pytest.mark.server

ASK = f"{API_PREFIX}/ask_agent"
BODY_BYTES = 200 * 1024 * 1024
_CHUNK = b"x" * (1024 * 1024)  # one buffer, sent again and again: the client holds 1 MB at most


def _rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


class _PeakMemory:
    """Samples this process's resident memory every 10 ms until stopped."""

    def __init__(self) -> None:
        self.start = _rss_bytes()
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_bytes())
            time.sleep(0.01)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak - self.start


def _send_huge(url: str, *, chunked: bool) -> tuple[bytes, int]:
    """Send a 200 MB body (declared, or chunked without a length); return the reply and the bytes sent."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=60)
    reply = bytearray()

    def read() -> None:
        try:
            while data := sock.recv(65536):
                reply.extend(data)
        except OSError:
            pass

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    length = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {BODY_BYTES}"
    head = f"POST {ASK} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n{length}\r\n\r\n"
    sent = 0
    try:
        sock.sendall(head.encode())
        frame = f"{len(_CHUNK):x}\r\n".encode() + _CHUNK + b"\r\n" if chunked else _CHUNK
        while sent < BODY_BYTES and not reply:
            sock.sendall(frame)
            sent += len(_CHUNK)
    except OSError:  # the server closed the connection: it read no more
        pass
    reader.join(30)
    sock.close()
    return bytes(reply), sent


def _status_and_body(reply: bytes) -> tuple[int, dict]:
    head, _, body = reply.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body.decode()) if body else {}


@pytest.fixture(scope="module")
def url(sales_db):
    app = create_app(ServeSettings(lm=scripted_lm(["SELECT 1"] * 20), database=sales_db, poll_s=0.05))
    with serve_in_background(app) as base:
        httpx.get(base + "/health", timeout=30)  # warm: what a first request allocates is not the body's
        yield base


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_200_mb_body_gets_413_before_it_is_read(url, chunked) -> None:
    memory = _PeakMemory()
    reply, sent = _send_huge(url, chunked=chunked)
    growth = memory.stop()
    status, body = _status_and_body(reply)
    assert status == 413, reply[:500]
    assert body["code"] == 40000 and body["data"]["field"] == "body"
    assert f"{MAX_BODY_BYTES:,} bytes" in body["data"]["expected"]
    assert ("Content-Length 209,715,200" if not chunked else "without a Content-Length") in body["data"]["found"]
    assert sent < BODY_BYTES, "the client could send the whole body: the server read it"
    assert growth < 50 * 1024 * 1024, f"server memory grew {growth / 2**20:.0f} MB"
    assert httpx.get(url + "/health", timeout=10).status_code == 200


def test_four_200_mb_bodies_in_parallel_cost_under_50_mb(url) -> None:
    memory = _PeakMemory()
    results: list[tuple[bytes, int]] = []
    threads = [threading.Thread(target=lambda c=c: results.append(_send_huge(url, chunked=c))) for c in (0, 1, 0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    growth = memory.stop()
    assert [_status_and_body(reply)[0] for reply, _ in results] == [413] * 4
    assert growth < 50 * 1024 * 1024, f"server memory grew {growth / 2**20:.0f} MB"


def test_the_largest_valid_body_passes_the_bound(url) -> None:
    # 8,000 characters in each text field, each written as a 6-byte JSON escape
    text = "\u00e9" * 8000
    body = json.dumps({"question": text, "hint": text, "reply": text}, ensure_ascii=True)
    assert len(body) > 140_000 and len(body) < MAX_BODY_BYTES
    r = httpx.post(url + ASK, content=body, headers={"content-type": "application/json"}, timeout=120)
    assert r.status_code in (200, 500), r.text[:300]  # answered (or failed as a run), not refused
    assert r.json()["data"].get("field") != "body"
