"""No server paths from requests, and router arguments checked as the CLI checks them.

A real loopback server (uvicorn on 127.0.0.1) with the scripted LM; every refusal is read as a
client reads it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import numpy as np
import pytest

from routerlab.agents.errors import ConfigError
from routerlab.agents.lm import scripted_lm
from routerlab.agents.paths import cache_writes
from routerlab.routers.dspy_router import PROGRAM_DIR
from routerlab.routers.semantic import embed_cached
from routerlab.serve import API_PREFIX, ServeSettings, create_app, serve_in_background
from routerlab.serve.files import parse_registrations

pytestmark = pytest.mark.server

ASK = f"{API_PREFIX}/ask_agent"


@pytest.fixture(scope="module")
def registered_program(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("operator") / "dspy_router_mine.json"
    shutil.copy(PROGRAM_DIR / "dspy_router_builtin.json", path)
    return path


@pytest.fixture(scope="module")
def server(sales_db, registered_program, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    settings = ServeSettings(
        lm=scripted_lm(["SELECT 1"] * 50),
        database=sales_db,
        poll_s=0.05,
        files={"program": {"mine": registered_program}},
    )
    app = create_app(settings)
    with serve_in_background(app) as url:
        yield url, app, cache


def _post(url: str, router: str, args: dict | str) -> httpx.Response:
    raw = args if isinstance(args, str) else json.dumps(args)
    # raw JSON text: NaN and Infinity are what a client can send, and json.dumps would not
    body = '{"question": "How many areas are there?", "router": ' + json.dumps(router) + ', "router_args": ' + raw + "}"
    return httpx.post(url + ASK, content=body, headers={"content-type": "application/json"}, timeout=60)


@pytest.mark.parametrize(
    ("router", "arg"),
    [("semantic", "exemplars"), ("dspy", "program"), ("hybrid", "program")],
)
def test_file_arguments_take_no_path_and_reveal_nothing(server, tmp_path, router, arg):
    url, _, _ = server
    real = tmp_path / "exists.json"
    real.write_text('{"examples": []}')
    probes = ["/etc/passwd", "/root/.ssh/id_rsa", "/etc/shadow", str(real), "../../../etc/hosts.json", "nosuch"]
    bodies = []
    for value in probes:
        r = _post(url, router, {arg: value})
        assert r.status_code == 400, (value, r.text)
        body = r.json()
        assert body["code"] == 40002 and body["data"]["field"] == f"router_args.{arg}"
        assert "takes no file path" in body["data"]["found"] and "builtin" in body["data"]["expected"]
        # the same answer for a file that exists, one that does not and one the server cannot read
        bodies.append({k: v for k, v in body["data"].items() if k != "found"} | {"message": body["message"]})
        assert "no file at" not in r.text and "malformed" not in r.text and "missing" not in r.text
    assert all(b == bodies[0] for b in bodies)


def test_an_operator_registered_file_is_named_not_pathed(server, registered_program):
    url, app, _ = server
    r = _post(url, "dspy", {"program": "mine"})
    assert r.status_code == 200, r.text
    pipeline = app.state.runtime.pipeline("dspy", {"program": "mine"})
    assert pipeline.router.program_file == registered_program
    # the committed names stay available
    assert _post(url, "dspy", {"program": "builtin"}).status_code == 200


@pytest.mark.parametrize(
    ("router", "args", "field", "expected"),
    [
        ("hybrid", '{"threshold": NaN}', "router_args.threshold", "a finite number"),
        ("hybrid", '{"threshold": Infinity}', "router_args.threshold", "a finite number"),
        ("rules", '{"fix_budget": -1}', "router_args.fix_budget", "between 0 and 20"),
        ("hybrid", '{"max_tokens": -1}', "router_args.max_tokens", "between 1 and 32768"),
        ("hybrid", '{"threshold": "abc"}', "router_args.threshold", "float"),
    ],
)
def test_router_arguments_are_checked_as_the_cli_checks_them(server, router, args, field, expected):
    url, _, _ = server
    r = _post(url, router, args)
    assert r.status_code == 400 and r.headers["content-type"] == "application/json", r.text
    data = r.json()["data"]
    assert r.json()["code"] == 40002 and data["field"] == field and expected in data["expected"], data
    assert data["found"]


def test_the_cli_refuses_the_same_values():
    from typer.testing import CliRunner

    from routerlab.cli import app

    for arg in ("hybrid.threshold=NaN", "hybrid.max_tokens=-1", "hybrid.fix_budget=-1"):
        out = CliRunner().invoke(app, ["route", "how many areas?", "--router", "hybrid", "--router-arg", arg])
        assert out.exit_code == 2, (arg, out.output)


def test_registrations_are_checked_at_start_up(tmp_path):
    good = tmp_path / "p.json"
    good.write_text("{}")
    assert parse_registrations([f"program:mine={good}"]) == {"program": {"mine": good.resolve()}}
    for bad in (f"nosuchkind:x={good}", "program:mine", f"program:builtin={good}", "program:x=/no/such/file.json"):
        with pytest.raises(ConfigError):
            parse_registrations([bad])


class _Embedder:
    """Deterministic vectors (control flow only: what matters is whether a file is written)."""

    def embed(self, texts):
        return [[float(len(t)), 1.0] for t in texts]


def test_a_server_request_writes_no_cache_file(tmp_path):
    with cache_writes(False):
        vectors = embed_cached(_Embedder(), ["a", "bb"], cache_dir=tmp_path / "semantic")
    assert np.allclose(vectors, [[1, 1], [2, 1]]) and not (tmp_path / "semantic").exists()
    embed_cached(_Embedder(), ["a", "bb"], cache_dir=tmp_path / "semantic")  # the CLI still caches
    assert len(list((tmp_path / "semantic").glob("*.npy"))) == 1
