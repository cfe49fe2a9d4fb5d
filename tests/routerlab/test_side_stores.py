"""Side-store faults exit 2 with what failed and how to recover, not a traceback.

The probe (issue 50, item 7): a damaged ``conversations.sqlite`` made every ``ask`` (and
``serve --conversations``) exit 1 with a traceback.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from routerlab import cli
from routerlab.agents.errors import ConfigError
from routerlab.conversation_store import ConversationStore


def _damaged_copy(tmp_path: Path) -> Path:
    good = tmp_path / "good.sqlite"
    store = ConversationStore(good)
    store.close()
    bad = tmp_path / "conversations.sqlite"
    data = bytearray(good.read_bytes())
    data[100:] = b"\xff" * (len(data) - 100)  # header kept, every page after it overwritten
    bad.write_bytes(bytes(data))
    return bad


@pytest.mark.parametrize("kind", ["garbage", "damaged_pages"])
def test_a_damaged_conversation_store_is_a_clear_config_error(tmp_path: Path, kind: str) -> None:
    if kind == "garbage":
        path = tmp_path / "conversations.sqlite"
        path.write_bytes(b"this is not a database" * 100)
    else:
        path = _damaged_copy(tmp_path)
    with pytest.raises(ConfigError) as caught:
        ConversationStore(path)
    text = str(caught.value)
    assert str(path) in text and "cannot be used" in text and f"mv {path} {path}.damaged" in text


def test_ask_exits_2_naming_the_store_and_the_recovery(tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("ROUTERLAB_CACHE", str(cache))
    (cache / "conversations.sqlite").write_bytes(b"not sqlite at all" * 200)
    out = CliRunner().invoke(
        cli.app, ["ask", "How many service areas are there?", "--lm", "scripted:basic"], env={"COLUMNS": "400"}
    )
    text = " ".join(out.output.split())
    assert out.exit_code == 2, (out.exit_code, text, repr(out.exception))
    assert "conversations.sqlite" in text and ".damaged" in text
    # the recovery works as printed: move it aside and ask again
    shutil.move(cache / "conversations.sqlite", cache / "conversations.sqlite.damaged")
    again = CliRunner().invoke(cli.app, ["ask", "How many service areas are there?", "--lm", "scripted:basic"])
    assert again.exit_code == 0, again.output
