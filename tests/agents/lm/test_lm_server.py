"""The provider path for real: llama-cpp-python's OpenAI-compatible server on loopback, driven
through ``dspy.LM("openai/...", api_base=...)`` exactly as a remote provider would be."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest

from routerlab.agents.lm import chat, resolve_lm
from routerlab.agents.lm.assets import model_path

pytestmark = [pytest.mark.model, pytest.mark.server]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    port = _free_port()
    # llama.cpp logs the whole model header to stderr: a file, not a pipe nobody drains
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    log = log_path.open("w")
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path("0.5b")),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "1024",
        "--n_threads",
        "2",
        "--model_alias",
        "qwen-0.5b",
    ]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 300
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not answer /v1/models within 300 s")
            time.sleep(1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_openai_compatible_server_through_dspy(server):
    lm = resolve_lm("openai/qwen-0.5b", api_base=server, cache=False, max_tokens=16)
    r = chat(lm, [{"role": "user", "content": "Reply with the single word OK."}])
    assert r.text.strip(), r
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
    assert r.usage.latency_s > 0


def test_intent_scored_from_the_servers_logprobs_matches_the_embedded_engine(server):
    from routerlab.agents.lm.scoring import score_choices
    from routerlab.agents.state import INTENTS
    from routerlab.routers.support.lm_intent import IntentPrompt

    prompt = IntentPrompt(
        "Classify the request to a text-to-SQL assistant by intent.",
        (("", "How many orders were placed last week?", "sql"), ("", "Explain: SELECT 1", "explain")),
    )
    remote = resolve_lm("openai/qwen-0.5b", api_base=server, cache=False, max_tokens=16)
    local = resolve_lm("local:0.5b", cache=False, max_tokens=16)
    for request in ("Hello there, how are you today?", "What does this query do? SELECT name FROM users"):
        args = (prompt.prefix("users, orders"), prompt.request(request), INTENTS)
        by_provider = score_choices(remote, *args)
        by_engine = score_choices(local, *args)
        assert by_provider is not None and by_engine is not None
        assert by_provider.prefix_source == "provider" and by_provider.prompt_tokens > 0
        assert sum(by_provider.probs.values()) == pytest.approx(1.0)
        # same model, same chat template: the same decision, from the same distribution
        assert by_provider.best == by_engine.best, (request, by_provider.probs, by_engine.probs)
        assert by_provider.confidence == pytest.approx(by_engine.confidence, abs=0.1)
