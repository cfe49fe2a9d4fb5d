"""Prefix states on disk with the real embedded model (0.5B: the mechanics, not quality).

A warm start restores the prefix from disk instead of evaluating it, and scores exactly as the
cold start did: the same logits over the whole vocabulary, so the same decision.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from routerlab.agents.lm import resolve_lm
from routerlab.agents.lm.scoring import score_choices

pytestmark = pytest.mark.model

LABELS = ("sql", "explain", "fix", "chat", "clarify", "refuse")
SYSTEM = (
    "Route the request to one of: "
    + ", ".join(LABELS)
    + ". The database holds: singer(singer_id, name, country, age), concert(concert_id, name, theme, year), "
    "singer_in_concert(concert_id, singer_id), stadium(stadium_id, location, name, capacity, highest, lowest)."
)
PREFIX = [{"role": "system", "content": SYSTEM}]
REQUEST = [{"role": "user", "content": "How many singers are from France?"}]


@pytest.fixture
def disk(tmp_path, monkeypatch):
    root = tmp_path / "prefixes"
    monkeypatch.setenv("ROUTERLAB_PREFIX_CACHE", str(root))
    return root


@pytest.fixture(scope="module")
def lm():
    return resolve_lm("local:0.5b", cache=False, max_tokens=16)


def _logits(lm) -> np.ndarray:
    llm = lm.engine.llama()
    return np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),)).copy()


def test_a_warm_start_skips_the_prefix_and_scores_exactly_as_cold(lm, disk):
    lm.engine.forget_prefixes()
    cold = score_choices(lm, PREFIX, REQUEST, LABELS)
    cold_logits = _logits(lm)
    assert cold.prefix_source == "computed" and cold.evaluated_tokens == cold.prompt_tokens
    files = list(disk.glob("*.kvstate"))
    assert len(files) == 1 and files[0].stat().st_size > 1000 * cold.prefix_tokens  # a KV cache, not a stub

    lm.engine.forget_prefixes()  # memory empty, as in a new process
    warm = score_choices(lm, PREFIX, REQUEST, LABELS)
    assert warm.prefix_source == "disk"
    assert warm.evaluated_tokens == warm.prompt_tokens - warm.prefix_tokens
    assert warm.prefix_tokens == cold.prefix_tokens > 60
    assert warm.probs == cold.probs and warm.best == cold.best
    assert np.array_equal(_logits(lm), cold_logits)


def test_a_corrupt_state_on_disk_is_evaluated_again_and_replaced(lm, disk):
    lm.engine.forget_prefixes()
    cold = score_choices(lm, PREFIX, REQUEST, LABELS)
    (path,) = disk.glob("*.kvstate")
    blob = bytearray(path.read_bytes())
    blob[-100:] = bytes(100)  # the KV cache's last bytes zeroed: the checksum no longer holds
    path.write_bytes(bytes(blob))
    lm.engine.forget_prefixes()
    again = score_choices(lm, PREFIX, REQUEST, LABELS)
    assert again.prefix_source == "computed" and again.probs == cold.probs
    lm.engine.forget_prefixes()
    assert score_choices(lm, PREFIX, REQUEST, LABELS).prefix_source == "disk"  # the rebuilt file is good


def test_another_context_size_does_not_take_the_state(lm, disk):
    lm.engine.forget_prefixes()
    score_choices(lm, PREFIX, REQUEST, LABELS)
    other = resolve_lm("local:0.5b", cache=False, max_tokens=16, n_ctx=2048)
    first = score_choices(other, PREFIX, REQUEST, LABELS)
    assert first.prefix_source == "computed"
    assert len(list(disk.glob("*.kvstate"))) == 2


def test_off_turns_the_disk_store_off(lm, disk, monkeypatch):
    monkeypatch.setenv("ROUTERLAB_PREFIX_CACHE", "off")
    lm.engine.forget_prefixes()
    score_choices(lm, PREFIX, REQUEST, LABELS)
    lm.engine.forget_prefixes()
    assert score_choices(lm, PREFIX, REQUEST, LABELS).prefix_source == "computed"
    assert not disk.exists()


_SCRIPT = """
import json
from routerlab.agents.lm import resolve_lm
from routerlab.agents.lm.scoring import score_choices
prefix, request, labels = json.loads(input())
s = score_choices(resolve_lm("local:0.5b", cache=False, max_tokens=16), prefix, request, labels)
print(json.dumps({"source": s.prefix_source, "probs": s.probs, "evaluated": s.evaluated_tokens}))
"""


def test_a_second_process_pays_for_the_prefix_no_more(disk):
    """The case the store is for: the same prefix in the next run restores the first run's state."""
    runs = []
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-c", _SCRIPT],
            input=json.dumps([PREFIX, REQUEST, LABELS]),
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert [r["source"] for r in runs] == ["computed", "disk"]
    assert runs[1]["probs"] == runs[0]["probs"]
    assert runs[1]["evaluated"] < runs[0]["evaluated"] / 3
