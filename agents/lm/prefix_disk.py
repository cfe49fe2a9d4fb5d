"""Evaluated prompt prefixes kept on disk, so each prefix is paid for once across processes.

An LM router puts the database's schema in its prompt prefix; evaluating it is the first
decision's whole cost on each database (25-32 s for the 1.5B model on 2 cores). The in-memory
:class:`~routerlab.agents.lm.onepass.PrefixStore` keeps it for the rest of a process; this store
keeps the same llama.cpp state bytes (``llama_state_get_data``) on disk, so a second run, another
router with the same prefix, or a sweep restores the prefix instead of evaluating it again.

Key: a state is only valid for the exact model weights, the engine settings that shape the KV
cache and its arithmetic (context size, batch sizes, cache types, llama-cpp-python version...) and
the exact prefix tokens. The file name is a hash of all three; the file's header repeats the
settings and tokens and a checksum of the state, and all are checked on load. A file that fails
any check (truncated, corrupt, another model, another prefix) is deleted and reported as a miss:
the prefix is evaluated again, a state is never trusted.

Bounds: the files together stay under a size budget; the least recently used (file mtime, touched
on every hit) go first. Writes go to a temporary file renamed into place, so concurrent processes
never read half a state.

Settings (read when a state is looked up, so a test or ``routerlab perf`` can redirect them):

* ``ROUTERLAB_PREFIX_CACHE``: the directory (default ``<cache root>/prefixes``, the cache root being
  ``$ROUTERLAB_CACHE`` or ``~/.cache/routerlab``); ``off`` turns the disk store off.
* ``ROUTERLAB_PREFIX_CACHE_MB``: the size budget in MB (default 2048).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routerlab.agents.errors import ConfigError
from routerlab.agents.paths import cache_root

__all__ = [
    "DEFAULT_BUDGET_MB",
    "DiskPrefixes",
    "PrefixKey",
    "configured_prefix_disk",
    "engine_settings",
    "model_identity",
]

_log = logging.getLogger(__name__)

DEFAULT_BUDGET_MB = 2048
"""Default size budget: about 40 schema prefixes of 1,500 tokens with the 1.5B model (~45 MB each)."""

_MAGIC = b"RLPREFIX"
_FORMAT = 1
_SUFFIX = ".kvstate"
_OFF = {"off", "0", "false", "no", "none"}
# a temporary file older than this was left by a writer that died; removed when the budget is enforced
_STALE_TMP_S = 3600.0


@dataclass(frozen=True)
class PrefixKey:
    """What a saved state is valid for.

    Attributes:
        model: Identity of the model weights (SHA-256 of the GGUF file).
        settings: Engine settings that shape the state (see :func:`engine_settings`).
        tokens: The prefix's token ids, exactly.
    """

    model: str
    settings: Mapping[str, Any]
    tokens: tuple[int, ...]

    def header(self) -> dict[str, Any]:
        """The JSON-able part of the key a file repeats (tokens are stored separately)."""
        return {"model": self.model, "settings": dict(sorted(self.settings.items()))}

    def digest(self) -> str:
        """A hash of the whole key: the file name."""
        h = hashlib.sha256(json.dumps(self.header(), sort_keys=True).encode())
        h.update(struct.pack(f"<{len(self.tokens)}i", *self.tokens))
        return h.hexdigest()[:40]


def _pack_header(key: PrefixKey, payload: bytes) -> bytes:
    meta = {
        "format": _FORMAT,
        **key.header(),
        "n_tokens": len(key.tokens),
        "payload_bytes": len(payload),
        "payload_sha256": hashlib.sha256(payload).hexdigest(),
    }
    head = json.dumps(meta, sort_keys=True).encode()
    return _MAGIC + struct.pack("<I", len(head)) + head + struct.pack(f"<{len(key.tokens)}i", *key.tokens)


class DiskPrefixes:
    """A directory of saved prefix states, bounded in total size, least recently used evicted.

    Args:
        root: The directory (created on first save).
        max_bytes: Size budget of all states together; a state larger than it is not kept.
    """

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = Path(root)
        self.max_bytes = int(max_bytes)
        self.hits = 0
        self.misses = 0
        self.rejected = 0  # files that failed a check and were deleted
        self._lock = threading.Lock()

    def path(self, key: PrefixKey) -> Path:
        """Where ``key``'s state lives."""
        return self.root / f"{key.digest()}{_SUFFIX}"

    def entries(self) -> list[Path]:
        """The saved states, least recently used first."""
        found = []
        for p in self.root.glob(f"*{_SUFFIX}"):
            try:
                found.append((p.stat().st_mtime_ns, p))
            except FileNotFoundError:  # evicted by another process meanwhile
                continue
        return [p for _, p in sorted(found)]

    def total_bytes(self) -> int:
        """Bytes of all saved states."""
        total = 0
        for p in self.entries():
            try:
                total += p.stat().st_size
            except FileNotFoundError:
                continue
        return total

    def load(self, key: PrefixKey) -> bytes | None:
        """The saved state for ``key``, or None (no file, or a file that failed a check and was deleted)."""
        path = self.path(key)
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except OSError:
            self.misses += 1
            return None
        payload, problem = _parse(blob, key)
        if payload is None:
            self.reject(key, problem)
            return None
        try:
            os.utime(path)  # recently used: last to be evicted
        except OSError:
            pass
        self.hits += 1
        return payload

    def reject(self, key: PrefixKey, why: str) -> None:
        """Delete ``key``'s file (it failed a check, or llama.cpp refused it) and count a miss."""
        _log.warning("prefix state %s ignored and removed: %s", self.path(key).name, why)
        self.rejected += 1
        self.misses += 1
        self.path(key).unlink(missing_ok=True)

    def save(self, key: PrefixKey, payload: bytes) -> Path | None:
        """Write ``key``'s state atomically, then evict beyond the budget; None when not kept.

        A full disk or an unwritable directory is logged and skipped: a run never fails because
        a prefix could not be cached.
        """
        blob = _pack_header(key, payload) + payload
        if len(blob) > self.max_bytes:
            return None
        path = self.path(key)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=self.root)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(blob)
                os.replace(tmp, path)
            finally:
                Path(tmp).unlink(missing_ok=True)
        except OSError as exc:
            _log.warning("prefix state not saved to %s: %s", self.root, exc)
            return None
        self.evict(keep=path)
        return path

    def evict(self, keep: Path | None = None) -> list[Path]:
        """Delete least recently used states until the total fits the budget; returns what went."""
        gone: list[Path] = []
        with self._lock:
            now = time.time()
            for tmp in self.root.glob(".*.tmp"):
                try:
                    if now - tmp.stat().st_mtime > _STALE_TMP_S:
                        tmp.unlink()
                except FileNotFoundError:
                    continue
            sized = []
            for p in self.entries():
                try:
                    sized.append((p, p.stat().st_size))
                except FileNotFoundError:
                    continue
            total = sum(s for _, s in sized)
            for p, size in sized:
                if total <= self.max_bytes:
                    break
                if p == keep:
                    continue
                p.unlink(missing_ok=True)
                gone.append(p)
                total -= size
        return gone


def _parse(blob: bytes, key: PrefixKey) -> tuple[bytes | None, str]:
    """The payload of a state file if every check passes, else (None, what failed)."""
    fixed = len(_MAGIC) + 4
    if len(blob) < fixed or not blob.startswith(_MAGIC):
        return None, "not a prefix state file (bad magic or too short)"
    (n_head,) = struct.unpack_from("<I", blob, len(_MAGIC))
    try:
        meta = json.loads(blob[fixed : fixed + n_head])
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None, "unreadable header"
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        return None, f"format {meta.get('format') if isinstance(meta, dict) else '?'} (expected {_FORMAT})"
    expected = key.header()
    if meta.get("model") != expected["model"]:
        return None, "saved for another model"
    if meta.get("settings") != expected["settings"]:
        return None, "saved with other engine settings"
    n_tok = meta.get("n_tokens")
    if n_tok != len(key.tokens):
        return None, f"{n_tok} prefix tokens (expected {len(key.tokens)})"
    at = fixed + n_head
    tokens_end = at + 4 * len(key.tokens)
    if len(blob) < tokens_end or struct.unpack_from(f"<{len(key.tokens)}i", blob, at) != key.tokens:
        return None, "another prefix's tokens"
    payload = blob[tokens_end:]
    if len(payload) != meta.get("payload_bytes"):
        return None, f"truncated: {len(payload)} state bytes of {meta.get('payload_bytes')}"
    if hashlib.sha256(payload).hexdigest() != meta.get("payload_sha256"):
        return None, "checksum mismatch"
    return payload, ""


def configured_prefix_disk() -> DiskPrefixes | None:
    """The disk store the environment asks for, or None when ``ROUTERLAB_PREFIX_CACHE=off``.

    Raises:
        ConfigError: ``ROUTERLAB_PREFIX_CACHE_MB`` is not a positive number, or
            ``ROUTERLAB_PREFIX_CACHE`` names something that is not a directory.
    """
    where = os.environ.get("ROUTERLAB_PREFIX_CACHE", "").strip()
    if where.lower() in _OFF:
        return None
    root = Path(where).expanduser() if where else cache_root() / "prefixes"
    if root.exists() and not root.is_dir():
        raise ConfigError(
            "ROUTERLAB_PREFIX_CACHE is not a directory",
            expected="a directory for saved prompt-prefix states, or 'off'",
            found=f"{root} (an existing file)",
            fix="point ROUTERLAB_PREFIX_CACHE at a directory, or set it to off",
        )
    raw = os.environ.get("ROUTERLAB_PREFIX_CACHE_MB", "").strip()
    try:
        mb = float(raw) if raw else float(DEFAULT_BUDGET_MB)
    except ValueError:
        mb = -1.0
    if not mb > 0:
        raise ConfigError(
            "ROUTERLAB_PREFIX_CACHE_MB is not a positive number",
            expected="the prefix cache's size budget in MB, e.g. 2048",
            found=repr(raw),
            fix="set ROUTERLAB_PREFIX_CACHE_MB to a positive number, or ROUTERLAB_PREFIX_CACHE=off",
        )
    return _store(root.resolve(), int(mb * (1 << 20)))


_stores: dict[tuple[Path, int], DiskPrefixes] = {}
_stores_lock = threading.Lock()


def _store(root: Path, max_bytes: int) -> DiskPrefixes:
    """One store object per (directory, budget) in a process, so its hit counts accumulate."""
    with _stores_lock:
        if (root, max_bytes) not in _stores:
            _stores[(root, max_bytes)] = DiskPrefixes(root, max_bytes)
        return _stores[(root, max_bytes)]


_identities: dict[tuple[str, int, int], str] = {}


def model_identity(path: str | Path, memo_dir: Path | None = None) -> str:
    """SHA-256 of a model file, computed once per file version (path, size, mtime).

    Hashing the 1.5B model takes about a second, so the digest is remembered in this process and
    in ``memo_dir/model-ids.json`` for the next one; a file replaced in place (new size or mtime)
    is hashed again.
    """
    real = os.path.realpath(path)
    st = os.stat(real)
    stamp = (real, st.st_size, st.st_mtime_ns)
    if stamp in _identities:
        return _identities[stamp]
    memo_key = f"{real}|{st.st_size}|{st.st_mtime_ns}"
    memo_file = memo_dir / "model-ids.json" if memo_dir is not None else None
    memo: dict[str, str] = {}
    if memo_file is not None:
        try:
            memo = json.loads(memo_file.read_text())
            if not isinstance(memo, dict):
                memo = {}
        except (OSError, ValueError):
            memo = {}
    digest = memo.get(memo_key)
    if not isinstance(digest, str) or len(digest) != 64:
        h = hashlib.sha256()
        with open(real, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 24), b""):
                h.update(chunk)
        digest = h.hexdigest()
        if memo_file is not None:
            memo = {k: v for k, v in memo.items() if not k.startswith(real + "|")}
            memo[memo_key] = digest
            try:
                memo_file.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=memo_file.parent)
                with os.fdopen(fd, "w") as out:
                    json.dump(memo, out, indent=1, sort_keys=True)
                os.replace(tmp, memo_file)
            except OSError as exc:  # the digest is still right; only the next process pays again
                _log.warning("model identity not remembered in %s: %s", memo_file, exc)
    _identities[stamp] = digest
    return digest


# context parameters that are pointers or callbacks, not settings
_NOT_SETTINGS = {"cb_eval", "cb_eval_user_data", "abort_callback", "abort_callback_data", "samplers", "ctx_other"}


def engine_settings(llm: Any) -> dict[str, Any]:
    """Everything about a loaded ``Llama`` besides its weights that a saved state depends on.

    Every scalar field of llama.cpp's context parameters (context size, batch sizes, KV cache
    types, attention and RoPE settings, threads), whether every token keeps logits, and the
    llama-cpp-python version (the state format and the kernels' arithmetic come with it).
    """
    import llama_cpp

    params = llm.context_params
    settings: dict[str, Any] = {"llama_cpp_python": llama_cpp.__version__}
    for name, *_ in params._fields_:
        if name in _NOT_SETTINGS:
            continue
        value = getattr(params, name)
        if isinstance(value, bool | int | float):
            settings[f"ctx.{name}"] = value
    settings["logits_all"] = bool(getattr(llm, "_logits_all", False))
    return settings


def prefix_key(llm: Any, tokens: Sequence[int], disk: DiskPrefixes) -> PrefixKey:
    """The key of ``tokens`` as a prefix of the loaded model ``llm``."""
    cached = getattr(llm, "_routerlab_identity", None)
    if cached is None:
        cached = llm._routerlab_identity = (
            model_identity(llm.model_path, memo_dir=disk.root),
            engine_settings(llm),
        )
    model, settings = cached
    return PrefixKey(model, settings, tuple(int(t) for t in tokens))
