"""The disk store of evaluated prompt prefixes: keys, checks on load, the size bound, settings.

No model here: states are byte strings written and read through real files (the real-model
round trip is in ``test_prefix_disk_model.py``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from routerlab.agents.errors import ConfigError
from routerlab.agents.lm import prefix_disk
from routerlab.agents.lm.prefix_disk import DiskPrefixes, PrefixKey, configured_prefix_disk, model_identity

SETTINGS = {"llama_cpp_python": "0.3.36", "ctx.n_ctx": 4096, "ctx.n_batch": 512, "logits_all": False}
MODEL = "a" * 64


def _key(tokens=(1, 2, 3, 4), model=MODEL, **settings) -> PrefixKey:
    return PrefixKey(model, {**SETTINGS, **settings}, tuple(tokens))


def _payload(n: int, seed: int = 0) -> bytes:
    return bytes((i * 31 + seed) % 256 for i in range(n))


@pytest.fixture
def store(tmp_path) -> DiskPrefixes:
    return DiskPrefixes(tmp_path / "prefixes", max_bytes=1 << 20)


def test_a_saved_state_loads_back_byte_for_byte(store):
    key, data = _key(), _payload(5000)
    path = store.save(key, data)
    assert path is not None and path.parent == store.root and path.name.endswith(".kvstate")
    assert store.load(key) == data
    # another process (another store object on the same directory) reads it too
    assert DiskPrefixes(store.root, store.max_bytes).load(key) == data
    assert (store.hits, store.misses, store.rejected) == (1, 0, 0)


def test_a_missing_state_is_a_miss(store):
    assert store.load(_key()) is None
    assert (store.hits, store.misses) == (0, 1)


@pytest.mark.parametrize(
    "other",
    [
        _key(model="b" * 64),  # another model file
        _key(**{"ctx.n_ctx": 2048}),  # another context size
        _key(**{"llama_cpp_python": "0.3.37"}),  # another engine version
        _key(tokens=(1, 2, 3, 5)),  # another prefix, same length
        _key(tokens=(1, 2, 3)),  # a shorter prefix
    ],
)
def test_every_part_of_the_key_separates_states(store, other):
    store.save(_key(), _payload(100))
    assert store.path(other) != store.path(_key())
    assert store.load(other) is None
    assert store.load(_key()) == _payload(100)


@pytest.mark.parametrize(
    ("other", "why"),
    [
        (_key(model="b" * 64), "another model"),
        (_key(**{"ctx.n_batch": 256}), "other engine settings"),
        (_key(tokens=(9, 9, 9, 9)), "another prefix"),
        (_key(tokens=(1, 2, 3, 4, 5)), "prefix tokens"),
    ],
)
def test_a_file_saved_for_another_key_is_never_trusted(store, other, why, caplog):
    """A file under the wrong name (copied, or a hash collision) is checked against its header."""
    src = store.save(_key(), _payload(100))
    os.replace(src, store.path(other))
    with caplog.at_level("WARNING", logger="routerlab.agents.lm.prefix_disk"):
        assert store.load(other) is None
    assert why in caplog.text
    assert not store.path(other).exists()  # removed, so the prefix is evaluated and saved afresh
    assert store.rejected == 1


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda b: b[:-1], "truncated"),
        (lambda b: b[: len(b) // 2], "truncated"),
        (lambda b: b[:5], "too short"),
        (lambda b: b[:-10] + bytes(10), "checksum"),
        (lambda b: b"GGUF" + b[4:], "bad magic"),
        (lambda b: b[:12] + b"\xff" * 20 + b[32:], "header"),
        (lambda b: b"", "too short"),
    ],
)
def test_a_damaged_file_is_ignored_removed_and_rebuilt(store, damage, why, caplog):
    key, data = _key(), _payload(4000)
    path = store.save(key, data)
    path.write_bytes(damage(path.read_bytes()))
    with caplog.at_level("WARNING", logger="routerlab.agents.lm.prefix_disk"):
        assert store.load(key) is None
    assert why in caplog.text and not path.exists()
    # the caller evaluates the prefix again and saves it: the rebuilt file is good
    store.save(key, data)
    assert store.load(key) == data


def _age(paths: list[Path]) -> None:
    """Give ``paths`` distinct, old modification times in this order (least recent first)."""
    for i, p in enumerate(paths):
        os.utime(p, ns=(10**18 + i * 10**9, 10**18 + i * 10**9))


def test_the_total_size_stays_under_the_budget_least_recently_used_first(tmp_path):
    one = len(prefix_disk._pack_header(_key(), _payload(1000))) + 1000
    store = DiskPrefixes(tmp_path, max_bytes=3 * one + 10)  # room for three states
    keys = [_key(tokens=(i, i + 1, i + 2, i + 3)) for i in range(3)]
    paths = [store.save(k, _payload(1000, i)) for i, k in enumerate(keys)]
    _age(paths)
    assert store.total_bytes() == 3 * one
    # reading the oldest makes it the most recent: the second-oldest goes when a fourth arrives
    assert store.load(keys[0]) == _payload(1000, 0)
    fourth = _key(tokens=(7, 7, 7, 7))
    store.save(fourth, _payload(1000, 3))
    assert store.total_bytes() <= store.max_bytes
    assert store.load(keys[1]) is None
    assert [store.load(k) is not None for k in (keys[0], keys[2], fourth)] == [True, True, True]
    assert store.entries()[-1] in {store.path(k) for k in (keys[0], keys[2], fourth)}


def test_a_state_larger_than_the_budget_is_not_kept_and_evicts_nothing(tmp_path):
    store = DiskPrefixes(tmp_path, max_bytes=4000)
    small = store.save(_key(), _payload(500))
    assert store.save(_key(tokens=(5, 6)), _payload(5000)) is None
    assert small.exists() and store.entries() == [small]


def test_left_over_temporary_files_are_cleared_when_old(tmp_path):
    store = DiskPrefixes(tmp_path, max_bytes=1 << 20)
    stale, fresh = tmp_path / ".dead.tmp", tmp_path / ".writing.tmp"
    stale.write_bytes(b"x" * 100)
    fresh.write_bytes(b"x" * 100)
    os.utime(stale, (1, 1))
    store.save(_key(), _payload(10))
    assert not stale.exists() and fresh.exists()


def test_an_unwritable_directory_skips_the_save_without_failing(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    store = DiskPrefixes(blocker / "prefixes", max_bytes=1 << 20)
    with caplog.at_level("WARNING", logger="routerlab.agents.lm.prefix_disk"):
        assert store.save(_key(), _payload(10)) is None
    assert "not saved" in caplog.text
    assert store.load(_key()) is None


def test_the_environment_chooses_directory_budget_or_off(tmp_path, monkeypatch):
    monkeypatch.setenv("ROUTERLAB_CACHE", str(tmp_path / "root"))
    monkeypatch.delenv("ROUTERLAB_PREFIX_CACHE", raising=False)
    monkeypatch.delenv("ROUTERLAB_PREFIX_CACHE_MB", raising=False)
    default = configured_prefix_disk()
    assert default.root == (tmp_path / "root" / "prefixes").resolve()
    assert default.max_bytes == prefix_disk.DEFAULT_BUDGET_MB << 20
    assert configured_prefix_disk() is default  # one store per directory: its counts accumulate
    monkeypatch.setenv("ROUTERLAB_PREFIX_CACHE", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("ROUTERLAB_PREFIX_CACHE_MB", "0.5")
    moved = configured_prefix_disk()
    assert moved.root == (tmp_path / "elsewhere").resolve() and moved.max_bytes == 1 << 19
    for off in ("off", "OFF", "0", "none"):
        monkeypatch.setenv("ROUTERLAB_PREFIX_CACHE", off)
        assert configured_prefix_disk() is None


@pytest.mark.parametrize("budget", ["-5", "0", "lots", "nan"])
def test_a_bad_budget_is_a_config_error_saying_the_fix(tmp_path, monkeypatch, budget):
    monkeypatch.setenv("ROUTERLAB_PREFIX_CACHE", str(tmp_path))
    monkeypatch.setenv("ROUTERLAB_PREFIX_CACHE_MB", budget)
    with pytest.raises(ConfigError) as info:
        configured_prefix_disk()
    assert info.value.found == repr(budget)
    assert "ROUTERLAB_PREFIX_CACHE_MB" in info.value.fix and "MB" in info.value.expected


def test_a_file_as_the_directory_is_a_config_error_when_the_lm_is_resolved(tmp_path, monkeypatch):
    """Said when ``--lm local:...`` is resolved, before any run starts, not at the first save."""
    from routerlab.agents.lm import resolve_lm

    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("ROUTERLAB_PREFIX_CACHE", str(blocker))
    with pytest.raises(ConfigError) as info:
        resolve_lm(f"local:{gguf}", cache=False)
    assert "not a directory" in info.value.what and str(blocker) in info.value.found
    monkeypatch.setenv("ROUTERLAB_PREFIX_CACHE", "off")
    assert resolve_lm(f"local:{gguf}", cache=False).engine.model_path == str(gguf)


def test_the_model_identity_is_the_file_hash_remembered_per_file_version(tmp_path, monkeypatch):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + _payload(3000))
    memo = tmp_path / "memo"
    first = model_identity(model, memo_dir=memo)
    assert first == hashlib.sha256(model.read_bytes()).hexdigest()
    assert (memo / "model-ids.json").exists()
    # a new process reads the remembered digest instead of hashing the file again
    monkeypatch.setattr(prefix_disk, "_identities", {})
    monkeypatch.setattr(prefix_disk.hashlib, "sha256", _no_hashing)
    assert model_identity(model, memo_dir=memo) == first
    monkeypatch.undo()
    # the file replaced in place (new size and mtime) is another model
    model.write_bytes(b"GGUF" + _payload(3001))
    os.utime(model, ns=(10**18, 10**18))
    assert model_identity(model, memo_dir=memo) == hashlib.sha256(model.read_bytes()).hexdigest() != first


def _no_hashing(*_a, **_k):
    raise AssertionError("the model file was hashed again")
